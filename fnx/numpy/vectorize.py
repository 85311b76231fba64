"""``fnx.numpy.vectorize``: a function of core-shaped arrays applied over broadcast loop
dimensions, by ``vmap`` (so it is traced once, not called per element)."""
from __future__ import annotations

import functools
import re

import numpy as np

from ..core.api import vmap
from ..core import lax
from ..core.pytree import tree_map
from ._core import asarray, broadcast_shapes, broadcast_to

_DIMS = r"\((?:\w+(?:,\s*\w+)*)?\)"
_SIGNATURE = re.compile(rf"^\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*->\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*$")


def _parse_signature(signature):
    """``"(m,n),(n)->(m)"`` as ``([("m", "n"), ("n",)], [("m",)])``."""
    if not _SIGNATURE.match(signature):
        raise ValueError(f"not a valid gufunc signature: {signature!r}")
    ins, outs = signature.split("->")

    def groups(s):
        return [tuple(d.strip() for d in g.split(",") if d.strip())
                for g in re.findall(r"\(([^)]*)\)", s)]
    return groups(ins), groups(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """``pyfunc`` applied elementwise (or, with a gufunc ``signature`` such as
    ``"(n),(n)->()"``, over core subarrays) across the broadcast leading dimensions of its
    arguments. Positions in ``excluded``, and keyword arguments, pass through unvectorized.

    >>> dot = vectorize(jnp.dot, signature="(n),(n)->()")
    >>> dot(jnp.ones((5, 3)), jnp.ones(3)).shape
    (5,)
    """
    in_core = _parse_signature(signature)[0] if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        vec = [i for i in range(len(args)) if i not in excluded]
        arrays = [asarray(args[i]) for i in vec]
        cores = in_core if in_core is not None else [()] * len(args)
        if len(cores) != len(args):
            raise TypeError(f"vectorize: signature {signature!r} takes {len(cores)} arguments, "
                            f"got {len(args)}")
        core_nd = [len(cores[i]) for i in vec]
        for a, k, i in zip(arrays, core_nd, vec):
            if a.ndim < k:
                raise ValueError(f"vectorize: argument {i} has {a.ndim} dimensions, fewer "
                                 f"than its core dimensions {cores[i]}")
        loop = broadcast_shapes(*[a.shape[:a.ndim - k] for a, k in zip(arrays, core_nd)],
                                op="vectorize")
        n = int(np.prod(loop, dtype=np.int64))
        flat = [lax.reshape(broadcast_to(a, loop + a.shape[a.ndim - k:]),
                            (n,) + a.shape[a.ndim - k:]) for a, k in zip(arrays, core_nd)]

        def call(*xs):
            full = list(args)
            for i, x in zip(vec, xs):
                full[i] = x
            return pyfunc(*full, **kwargs)
        if not loop:
            return call(*[lax.reshape(x, x.shape[1:]) for x in flat])
        out = vmap(call)(*flat)
        return tree_map(lambda y: lax.reshape(y, loop + tuple(y.shape[1:])), out)
    return wrapped

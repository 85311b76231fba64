"""fnx.flatten_util: a pytree of arrays as one flat vector, as ``jax.flatten_util``.

>>> flat, unravel = ravel_pytree({"w": jnp.ones((2, 2)), "b": jnp.zeros(2)})
>>> flat.shape, unravel(flat)["w"].shape
((6,), (2, 2))
"""
from __future__ import annotations

import numpy as np

from . import numpy as jnp
from .tree_util import tree_flatten, tree_unflatten


def ravel_pytree(pytree):
    """``(flat, unravel)``: the leaves of ``pytree`` raveled and concatenated into one 1-D
    array of their common dtype, and the function rebuilding the pytree (leaf shapes and dtypes
    included) from such a vector. Both are differentiable, so optimizers written for vectors
    apply to any model's parameters.

    >>> flat, unravel = fnx.flatten_util.ravel_pytree({"a": jnp.ones(2), "b": jnp.zeros(())})
    >>> flat
    Array([1., 1., 0.], dtype=float32)
    >>> unravel(flat * 2)
    {'a': Array([2., 2.], dtype=float32), 'b': Array(0., dtype=float32)}
    """
    leaves, treedef = tree_flatten(pytree)
    leaves = [jnp.asarray(x) for x in leaves]
    shapes = [x.shape for x in leaves]
    dtypes = [x.dtype for x in leaves]
    dtype = jnp.result_type(*leaves) if leaves else jnp.float32
    flat = jnp.concatenate([jnp.ravel(x).astype(dtype) for x in leaves]) if leaves \
        else jnp.zeros((0,), dtype)
    splits = np.cumsum([int(np.prod(s, dtype=np.int64)) for s in shapes])[:-1]

    def unravel(vec):
        vec = jnp.asarray(vec)
        if vec.shape != flat.shape:
            raise ValueError(f"ravel_pytree's unravel expects a vector of shape {flat.shape}, "
                             f"got {vec.shape}")
        parts = jnp.split(vec, list(splits)) if leaves else []
        return tree_unflatten(treedef, [p.reshape(s).astype(d)
                                        for p, s, d in zip(parts, shapes, dtypes)])
    return flat, unravel


__all__ = ["ravel_pytree"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

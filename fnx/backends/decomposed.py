"""Impls of primitives a backend computes by their decomposition into other primitives (a
convolution as im2col and one product): the decomposition is traced once per operand shapes,
dtypes and params, and its equations run through the backend's own impls, so every step is
one the backend already computes (and casts) as it does eagerly.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core.core import ShapedArray
from ..core.jaxpr import Literal
from ..core.partial_eval import trace_to_jaxpr


def decomposed_impl(decomposition, impls, xp=np):
    """An impl ``(*buffers, **params) -> buffer`` computing ``decomposition(*operands,
    **params)`` (a function of lax operations) with the impls of table ``impls`` on ``xp``
    arrays.

    >>> from fnx.core import lax
    >>> from fnx.backends.numpy_backend import impls
    >>> squares = decomposed_impl(lambda x, *, axes: lax.reduce_sum(lax.mul(x, x), axes), impls)
    >>> squares(np.arange(6.0).reshape(2, 3), axes=(1,))
    array([ 5., 50.])
    """
    @functools.lru_cache(maxsize=256)
    def program(avals, params):
        closed = trace_to_jaxpr(lambda *xs: [decomposition(*xs, **dict(params))],
                                [ShapedArray(s, d) for s, d in avals],
                                description="a primitive's decomposition")
        consts = [xp.asarray(np.asarray(c)) for c in closed.consts]
        # literals as the backend's own arrays (an fnx scalar is not one CuPy takes)
        literals = {id(v): xp.asarray(np.asarray(v.val, v.aval.dtype))
                    for e in closed.jaxpr.eqns for v in e.invars if isinstance(v, Literal)}
        return closed.jaxpr, consts, literals

    def impl(*bufs, **params):
        avals = tuple((tuple(b.shape), np.dtype(b.dtype)) for b in bufs)
        jaxpr, consts, literals = program(avals, tuple(sorted(params.items())))
        env = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, bufs))
        for eqn in jaxpr.eqns:
            args = [literals[id(v)] if isinstance(v, Literal) else env[v] for v in eqn.invars]
            outs = impls.get(eqn.primitive)(*args, **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
            env.update((v, _as_dtype(o, v.aval.dtype)) for v, o in zip(eqn.outvars, outs))
        (out,) = jaxpr.outvars
        return out.val if isinstance(out, Literal) else env[out]
    return impl


def _as_dtype(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


__all__ = ["decomposed_impl"]

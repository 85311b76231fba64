"""fnx.numpy.linalg: norms (more decompositions live in fnx.linalg)."""
from __future__ import annotations

from ..core import lax
from ._core import asarray, canonicalize_axes, promote_dtypes_inexact
from . import reductions, ufuncs


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (``ord`` None/2/1/inf for vectors, None/'fro' for matrices)."""
    (x,) = promote_dtypes_inexact(asarray(x))
    if axis is None and ord is None:
        return lax.sqrt(reductions.sum(lax.mul(x, x), None, keepdims=keepdims))
    axes = canonicalize_axes(axis, x.ndim, "norm") if axis is not None else tuple(range(x.ndim))
    if len(axes) == 2 and ord in (None, "fro"):
        return lax.sqrt(reductions.sum(lax.mul(x, x), axes, keepdims=keepdims))
    if len(axes) != 1:
        raise NotImplementedError(f"norm with ord={ord!r} over axes {axes}")
    ax = axes
    if ord is None or ord == 2:
        return lax.sqrt(reductions.sum(lax.mul(x, x), ax, keepdims=keepdims))
    if ord == 1:
        return reductions.sum(ufuncs.absolute(x), ax, keepdims=keepdims)
    if ord == float("inf"):
        return reductions.max(ufuncs.absolute(x), ax, keepdims=keepdims)
    if ord == -float("inf"):
        return reductions.min(ufuncs.absolute(x), ax, keepdims=keepdims)
    if ord == 0:
        return reductions.sum(lax.convert_element_type(lax.ne(x, lax.full(x.shape, 0, x.dtype)),
                                                       x.dtype), ax, keepdims=keepdims)
    p = float(ord)
    s = reductions.sum(ufuncs.power(ufuncs.absolute(x), p), ax, keepdims=keepdims)
    return ufuncs.power(s, 1.0 / p)

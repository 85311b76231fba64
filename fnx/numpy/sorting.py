"""Sorting and searching."""
from __future__ import annotations

import numpy as np

from ..core import dtypes, lax
from ._core import asarray, axis_or_flat, canonicalize_axis


def sort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (the flattened array when None)."""
    a, ax = axis_or_flat(asarray(a), axis, "sort")
    out = lax.sort(a, ax)
    return lax.rev(out, (ax,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """Indices that sort ``a`` (stable)."""
    a, ax = axis_or_flat(asarray(a), axis, "argsort")
    iota = lax.broadcasted_iota(dtypes.int32, a.shape, ax)
    if not descending:
        return lax.sort([a, iota], ax, num_keys=1)[1]
    # reverse, sort stably ascending, reverse back: descending, and ties keep their order
    # (negating the keys would break unsigned and minimum-integer keys)
    _, perm = lax.sort([lax.rev(a, (ax,)), lax.rev(iota, (ax,))], ax, num_keys=1)
    return lax.rev(perm, (ax,))


def searchsorted(a, v, side="left"):
    """Indices where ``v`` would be inserted into sorted 1-D ``a``."""
    a, v = asarray(a), asarray(v)
    from ._core import promote_dtypes
    a, v = promote_dtypes(a, v)
    n = a.shape[0]
    vb = lax.broadcast_in_dim(v, v.shape + (n,), tuple(range(v.ndim)))
    ab = lax.broadcast_in_dim(a, v.shape + (n,), (v.ndim,))
    below = lax.lt(ab, vb) if side == "left" else lax.le(ab, vb)
    return lax.reduce_sum(lax.convert_element_type(below, dtypes.int32), (v.ndim,))


def unique(a):
    """Sorted unique values; needs a concrete ``a`` (the result size depends on it)."""
    from ..core.core import concrete_or_error
    return asarray(np.unique(concrete_or_error(a, "unique's argument")))


def lexsort(keys, axis=-1):
    keys = [asarray(k) for k in keys]
    ax = canonicalize_axis(axis, keys[0].ndim, "lexsort")
    iota = lax.broadcasted_iota(dtypes.int32, keys[0].shape, ax)
    outs = lax.sort(list(reversed(keys)) + [iota], ax, num_keys=len(keys))
    return outs[-1]


def topk(a, k):
    """The ``k`` largest values along the last axis and their indices (descending)."""
    a = asarray(a)
    idx = argsort(a, -1, descending=True)
    idx = lax.slice_in_dim(idx, 0, k, 1, a.ndim - 1)
    return lax.take_along_axis(a, idx, a.ndim - 1), idx

"""Building and trimming arrays: ``block``, ``diagflat``, ``rollaxis`` and ``trim_zeros``."""
from __future__ import annotations

import numpy as np

from ..core.core import concrete_or_error
from ..core.errors import ShapeError
from ._core import asarray, canonicalize_axes, canonicalize_axis, promote_dtypes
from .shapes import concatenate, diag, moveaxis, ravel, reshape

__all__ = ["block", "diagflat", "rollaxis", "trim_zeros"]


def _depth(arrays):
    if isinstance(arrays, tuple):
        raise TypeError("block: nested tuples are not allowed, use lists")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError("block: lists must not be empty")
    depths = {_depth(a) for a in arrays}
    if len(depths) != 1:
        raise ValueError(f"block: the lists are nested to different depths {sorted(depths)}")
    return depths.pop() + 1


def _leaves(arrays):
    return [leaf for a in arrays for leaf in _leaves(a)] if isinstance(arrays, list) \
        else [asarray(arrays)]


def block(arrays):
    """An array assembled from nested lists of blocks: the innermost lists join along the
    last axis, the next along the second to last, and so on.

    >>> jnp.block([[jnp.ones((2, 2)), jnp.zeros((2, 1))]]).shape
    (2, 3)
    """
    depth = _depth(arrays)
    ndim = max([depth] + [leaf.ndim for leaf in _leaves(arrays)])

    def assemble(node, level):
        if not isinstance(node, list):
            node = asarray(node)
            return reshape(node, (1,) * (ndim - node.ndim) + node.shape)
        parts = promote_dtypes(*[assemble(child, level + 1) for child in node])
        return concatenate(parts, axis=level - depth)

    return assemble(arrays, 0)


def diagflat(v, k=0):
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal.

    >>> jnp.diagflat(jnp.array([[1, 2]]))
    Array([[1, 0],
           [0, 2]], dtype=int32)
    """
    return diag(ravel(asarray(v)), k)


def rollaxis(a, axis, start=0):
    """``a`` with ``axis`` moved to lie before position ``start`` (prefer ``moveaxis``).

    >>> jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    a = asarray(a)
    axis = canonicalize_axis(axis, a.ndim)
    if not -a.ndim <= start <= a.ndim:
        raise ValueError(f"rollaxis: start={start} is out of range for {a.ndim} dimensions")
    start = start + a.ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading (``'f'``) and/or trailing (``'b'``) zeros, along ``axis``
    (all axes when None). Needs concrete values.

    >>> jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]))
    Array([1, 2], dtype=int32)
    """
    filt = asarray(filt)
    trim = trim.lower()
    if not set(trim) <= {"f", "b"} or not trim:
        raise ValueError(f"trim_zeros: trim must be 'f', 'b' or 'fb', got {trim!r}")
    if filt.ndim == 0:
        raise ShapeError("trim_zeros: the array must have at least one dimension, got a scalar")
    values = np.asarray(concrete_or_error(filt, "trim_zeros' argument"))
    axes = range(filt.ndim) if axis is None else canonicalize_axes(axis, filt.ndim)
    index = [slice(None)] * filt.ndim
    for ax in axes:
        others = tuple(d for d in range(filt.ndim) if d != ax)
        nonzero = np.flatnonzero(np.any(values != 0, axis=others))
        if nonzero.size == 0:
            index[ax] = slice(0, 0)
            continue
        index[ax] = slice(int(nonzero[0]) if "f" in trim else 0,
                          int(nonzero[-1]) + 1 if "b" in trim else None)
    return filt[tuple(index)]

"""NumPy's in-place writers as pure functions: ``put``, ``place``, ``put_along_axis`` and
``fill_diagonal`` return an updated copy and need ``inplace=False``, as in JAX (arrays are
immutable, so a silent in-place call would lose the update)."""
from __future__ import annotations

import numpy as np

from ..core.core import concrete_or_error
from ..core.errors import ShapeError
from ._core import asarray, broadcast_to, canonicalize_axis
from .indexing import diag_indices
from .shapes import ravel

__all__ = ["put", "place", "put_along_axis", "fill_diagonal"]


def _require_copy(name, inplace):
    if inplace:
        raise ValueError(f"jnp.{name} cannot update arrays in place (they are immutable); "
                         f"pass inplace=False and use the returned array")


def _cycled(values, n):
    """``values`` flattened and repeated or cut to ``n`` elements, as NumPy cycles them."""
    values = ravel(values)
    if values.shape[0] == 0:
        raise ValueError("the values to write must not be empty")
    return values[np.arange(n) % values.shape[0]]


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with the flat positions ``ind`` set to ``v`` (cycled).

    >>> jnp.put(jnp.zeros(4), jnp.array([0, 2]), 5.0, inplace=False)
    Array([5., 0., 5., 0.], dtype=float32)
    """
    _require_copy("put", inplace)
    a = asarray(a)
    ind = ravel(asarray(ind))
    if mode == "raise":
        raise NotImplementedError("put: mode='raise' is not supported (jit cannot raise on a "
                                  "traced index); use 'fill', 'clip' or 'wrap'")
    if mode == "wrap":
        ind = ind % a.size
    elif mode == "clip":
        ind = ind.clip(0, a.size - 1)
    elif mode not in (None, "fill"):
        raise ValueError(f"put: mode must be None, 'wrap' or 'clip', got {mode!r}")
    v = _cycled(asarray(v, a.dtype), ind.shape[0])
    return ravel(a).at[ind].set(v).reshape(a.shape)


def place(arr, mask, vals, *, inplace=True):
    """``arr`` with the positions where ``mask`` holds set to ``vals`` (cycled, in order).

    >>> jnp.place(jnp.arange(4), jnp.arange(4) > 1, jnp.array([9]), inplace=False)
    Array([0, 1, 9, 9], dtype=int32)
    """
    _require_copy("place", inplace)
    arr = asarray(arr)
    mask = np.asarray(concrete_or_error(broadcast_to(asarray(mask, bool), arr.shape),
                                        "place's mask"))
    positions = np.flatnonzero(mask)
    if positions.size == 0:
        return arr
    return ravel(arr).at[positions].set(_cycled(asarray(vals, arr.dtype), positions.size)) \
        .reshape(arr.shape)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` matched along ``axis``, the inverse of
    ``take_along_axis``.

    >>> jnp.put_along_axis(jnp.zeros((2, 2)), jnp.array([[1], [0]]), 7.0, 1, inplace=False)
    Array([[0., 7.],
           [7., 0.]], dtype=float32)
    """
    _require_copy("put_along_axis", inplace)
    arr, indices = asarray(arr), asarray(indices)
    if axis is None:
        arr_flat = ravel(arr)
        return put_along_axis(arr_flat, ravel(indices), ravel(asarray(values)), 0,
                              inplace=False, mode=mode).reshape(arr.shape)
    if indices.ndim != arr.ndim:
        raise ShapeError(f"put_along_axis: indices of shape {indices.shape} need as many "
                         f"dimensions as arr of shape {arr.shape}")
    axis = canonicalize_axis(axis, arr.ndim)
    index = []
    for d in range(arr.ndim):
        if d == axis:
            index.append(indices)
        else:
            shape = [1] * arr.ndim
            shape[d] = arr.shape[d]
            index.append(np.arange(arr.shape[d]).reshape(shape))
    index = tuple(index)
    shape = np.broadcast_shapes(*(np.shape(i) for i in index))
    values = broadcast_to(asarray(values, arr.dtype), shape)
    return arr.at[index].set(values, mode=mode)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``a`` with its main diagonal set to ``val`` (cycled); the leading square block's for a
    wide or tall matrix, as in JAX (``wrap=True`` is not implemented, as there).

    >>> jnp.fill_diagonal(jnp.zeros((2, 3)), 1.0, inplace=False)
    Array([[1., 0., 0.],
           [0., 1., 0.]], dtype=float32)
    """
    _require_copy("fill_diagonal", inplace)
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented, as in JAX")
    a = asarray(a)
    if a.ndim < 2:
        raise ShapeError(f"fill_diagonal: the array must be at least 2-D, got shape {a.shape}")
    if a.ndim > 2 and any(n != a.shape[0] for n in a.shape[1:]):
        raise ShapeError(f"fill_diagonal: an array of more than 2 dimensions must have equal "
                         f"dimensions, got shape {a.shape}")
    n = min(a.shape)
    val = asarray(val, a.dtype)
    return a.at[diag_indices(n, a.ndim)].set(val if val.ndim == 0 else _cycled(val, n))

"""jax.lax's small array constructors and rearrangements: ``tile``, ``stack``, ``unstack``,
``empty``, ``broadcast_like``, ``dtype``, ``shape_as_value``.

>>> lax.stack([jnp.zeros(2), jnp.ones(2)], axis=1)
Array([[0., 1.],
       [0., 1.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core import lax
from ..core.core import get_aval


def tile(operand, reps):
    """``operand`` repeated ``reps[i]`` times along axis ``i`` (``len(reps)`` must equal the
    rank).

    >>> lax.tile(jnp.array([1, 2]), (3,))
    Array([1, 2, 1, 2, 1, 2], dtype=int32)
    """
    shape = tuple(get_aval(operand).shape)
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(shape):
        raise ValueError(f"tile: reps {reps} must have one entry per axis of {shape}")
    # broadcast a new axis before each axis, then merge each pair
    wide = lax.broadcast_in_dim(operand, sum(((r, n) for r, n in zip(reps, shape)), ()),
                                tuple(range(1, 2 * len(shape), 2)))
    return lax.reshape(wide, tuple(r * n for r, n in zip(reps, shape)))


def stack(operands, axis: int = 0):
    """``operands`` (all of one shape) stacked along a new ``axis``.

    >>> lax.stack([jnp.array([1, 2]), jnp.array([3, 4])]).shape
    (2, 2)
    """
    operands = list(operands)
    if not operands:
        raise ValueError("stack needs at least one operand")
    ndim = get_aval(operands[0]).ndim
    axis = int(axis) + (ndim + 1 if axis < 0 else 0)
    return lax.concatenate([lax.expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple.

    >>> lax.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)
    (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
    """
    aval = get_aval(x)
    axis = int(axis) % aval.ndim
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose contents must not be relied on (zeros, as JAX
    gives).

    >>> lax.empty((2,), jnp.float32).shape
    (2,)
    >>> lax.empty(3, jnp.int32).shape
    (3,)
    """
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    return lax.full(shape, 0, dtypes.canonicalize(dtype))


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (NumPy's rules) to the shape of ``like_arr``.

    >>> lax.broadcast_like(jnp.array([1, 2, 3]), jnp.zeros((2, 3)))
    Array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    """
    shape, target = tuple(get_aval(arr).shape), tuple(get_aval(like_arr).shape)
    return lax.broadcast_in_dim(arr, target, tuple(range(len(target) - len(shape), len(target))))


def dtype(x):
    """The canonical dtype of ``x`` (an array, a Python scalar or a dtype), 64-bit types
    narrowed when x64 is off, as JAX's ``lax.dtype``.

    >>> lax.dtype(1.0)
    dtype('float32')
    """
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return dtypes.canonicalize(dtypes.scalar_dtype(x))
    if hasattr(x, "dtype"):
        return dtypes.canonicalize(x.dtype)
    return dtypes.canonicalize(np.dtype(x))


def shape_as_value(shape):
    """``shape`` as a NumPy int32 vector (JAX's helper for shapes without symbolic sizes).

    >>> lax.shape_as_value((2, 3))
    array([2, 3], dtype=int32)
    """
    return np.array(tuple(shape), dtype=np.int32)

"""Selecting elements by index or mask: ``choose``, ``compress``, ``extract`` and
``mask_indices``."""
from __future__ import annotations

import numpy as np

from ..core.core import concrete_or_error
from ..core.errors import ShapeError
from ._core import asarray, broadcast_arrays, stack
from .indexing import indices, nonzero, where
from .shapes import moveaxis, ravel

__all__ = ["choose", "compress", "extract", "mask_indices"]


def choose(a, choices, out=None, mode="raise"):
    """Elements picked from ``choices`` by the index array ``a`` (all broadcast together).

    >>> jnp.choose(jnp.array([1, 0, 1]), [jnp.array([1, 2, 3]), jnp.array([10, 20, 30])])
    Array([10,  2, 30], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("choose: the out argument is not supported (arrays are "
                                  "immutable)")
    a = asarray(a)
    n = len(choices)
    if mode == "raise":
        values = np.asarray(concrete_or_error(a, "choose with mode='raise' (use 'wrap' or "
                                                 "'clip' under jit)"))
        if np.any((values < 0) | (values >= n)):
            raise ValueError(f"choose: an index in a is out of bounds for {n} choices")
    elif mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = a.clip(0, n - 1)
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    a, *choices = broadcast_arrays(a, *choices)
    return stack(choices)[(a,) + indices(a.shape, sparse=True)]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` (flattened when None) where 1-D ``condition`` holds.

    >>> jnp.compress(jnp.array([True, False, True]), jnp.arange(6).reshape(3, 2), axis=0)
    Array([[0, 1],
           [4, 5]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("compress: the out argument is not supported")
    condition = asarray(condition).astype(bool)
    if condition.ndim != 1:
        raise ShapeError(f"compress: condition must be 1-D, got shape {condition.shape}")
    a = asarray(a)
    if axis is None:
        axis, a = 0, ravel(a)
    a = moveaxis(a, axis, 0)
    extra, condition = condition[a.shape[0]:], condition[:a.shape[0]]
    a = a[:condition.shape[0]]
    # True entries past the end would select missing slices; with size= JAX ignores them
    if size is None and np.any(np.asarray(concrete_or_error(extra, "compress"))):
        raise ValueError(f"compress: condition of length {condition.shape[0] + extra.shape[0]}"
                         f" selects past axis length {a.shape[0]}")
    if size is not None and not 0 <= size <= a.shape[0]:
        raise ValueError(f"compress: size must be between 0 and the axis length {a.shape[0]}, "
                         f"got size={size}")
    if size is None:
        picked = a[np.flatnonzero(np.asarray(concrete_or_error(condition, "compress "
                                                                         "without size=")))]
    else:
        idx, = nonzero(condition, size=size, fill_value=0)
        valid = (np.arange(size) < condition.sum()).reshape((size,) + (1,) * (a.ndim - 1))
        picked = where(valid, a[idx], asarray(fill_value, a.dtype))
    return moveaxis(picked, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` where ``condition`` holds, flattened.

    >>> jnp.extract(jnp.arange(4) % 2 == 0, jnp.arange(4.0))
    Array([0., 2.], dtype=float32)
    """
    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices of the non-zero entries of ``mask_func(ones((n, n)), k)``, such as
    ``triu``'s (pass a static ``size`` under ``jit``).

    >>> jnp.mask_indices(2, jnp.triu)
    (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    from .creation import ones
    return nonzero(mask_func(ones((n, n)), k), size=size)

"""Set operations on flattened arrays: ``union1d``, ``intersect1d``, ``setdiff1d`` and
``setxor1d``. Their sizes depend on values, so under ``jit`` pass a static ``size`` (padded with
``fill_value``, by default the smallest value of the result), as in JAX."""
from __future__ import annotations

import numpy as np

from ..core.core import concrete_or_error
from ._core import asarray, promote_dtypes
from .indexing import nonzero, where
from .setops import unique
from .shapes import concatenate, ravel
from .sorting import isin, sort

__all__ = ["union1d", "intersect1d", "setdiff1d", "setxor1d"]


def _select(values, mask, size, fill_value, name):
    """``values[mask]``: concretely, or padded to ``size`` with ``fill_value``."""
    if size is None:
        mask = np.asarray(concrete_or_error(mask, f"{name} without a static size"))
        return values[np.flatnonzero(mask)]
    idx, = nonzero(mask, size=size, fill_value=0)
    picked = values[idx] if values.shape[0] else values.reshape(-1)[:0]
    if values.shape[0] == 0:
        return asarray(np.zeros(size), values.dtype) if fill_value is None \
            else asarray(np.full(size, fill_value), values.dtype)
    valid = np.arange(size) < mask.sum()
    fill = picked[0] if fill_value is None else asarray(fill_value, values.dtype)
    return where(valid, picked, fill)


def _unique_sorted(a, assume_unique):
    a = ravel(a)
    return sort(a) if assume_unique else unique(a)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values found in either array.

    >>> jnp.union1d(jnp.array([1, 2, 2]), jnp.array([3, 1]))
    Array([1, 2, 3], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    return unique(concatenate([ravel(ar1), ravel(ar2)]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` not in ``ar2``.

    >>> jnp.setdiff1d(jnp.array([1, 2, 3, 4]), jnp.array([2, 4]))
    Array([1, 3], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    a = ravel(ar1) if assume_unique else unique(ravel(ar1))
    return _select(a, ~isin(a, ar2), size, fill_value, "setdiff1d")


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values in exactly one of the two arrays.

    >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
    Array([1, 4], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    a = sort(concatenate([_unique_sorted(ar1, assume_unique), _unique_sorted(ar2, assume_unique)]))
    if a.shape[0] == 0:
        return a
    same_left = concatenate([asarray([False]), a[1:] == a[:-1]])
    same_right = concatenate([a[1:] == a[:-1], asarray([False])])
    return _select(a, ~(same_left | same_right), size, fill_value, "setxor1d")


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted unique values in both arrays; with ``return_indices`` also where each first
    occurs in the flattened inputs.

    >>> jnp.intersect1d(jnp.array([1, 2, 3]), jnp.array([3, 1, 5]))
    Array([1, 3], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    ar1, ar2 = ravel(ar1), ravel(ar2)
    if return_indices:
        u1, i1 = unique(ar1, return_index=True) if not assume_unique else (ar1, np.arange(ar1.size))
        u2, i2 = unique(ar2, return_index=True) if not assume_unique else (ar2, np.arange(ar2.size))
    else:
        u1, u2 = _unique_sorted(ar1, assume_unique), _unique_sorted(ar2, assume_unique)
    both = concatenate([u1, u2])
    order = np.argsort(np.asarray(concrete_or_error(both, "intersect1d")), kind="stable") \
        if size is None else None
    if order is None:
        from .sorting import argsort
        order = argsort(both, stable=True)
    a = both[order]
    if a.shape[0] == 0:
        return (a, a.astype(int), a.astype(int)) if return_indices else a
    mask = a[1:] == a[:-1]
    values = _select(a[:-1], mask, size, fill_value, "intersect1d")
    if not return_indices:
        return values
    first = _select(order[:-1], mask, size, 0, "intersect1d")
    second = _select(order[1:], mask, size, 0, "intersect1d") - u1.shape[0]
    return values, asarray(i1)[first], asarray(i2)[second]

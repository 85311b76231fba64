"""Unique values: ``unique`` with NumPy's optional results, and the array API's ``unique_*``."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import dtypes, lax
from ..core.core import Array, concrete_or_error
from ._core import asarray
from .indexing import nonzero
from .sorting import argsort


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique_all(a, size, fill_value, equal_nan):
    """Sorted unique values of ``a`` flattened, the index of each one's first occurrence, the
    position of each element's value among them (shaped as ``a``) and how often each occurs.
    Without ``size`` the count is read from a concrete ``a``; with it the results are padded
    (values with ``fill_value``, by default the smallest value; counts with 0) or cut, and the
    whole computation traces, so it runs under jit, as in JAX."""
    a = asarray(a)
    if size is None:
        host = concrete_or_error(a, "unique's argument (pass size= to use it under jit)").ravel()
        if dtypes.kind(host.dtype) == "f" and host.dtype not in (np.float16, np.float32,
                                                                 np.float64):
            host = host.astype(np.float32)     # NumPy's sort of ml_dtypes' floats misplaces NaN
        size = np.unique(host, equal_nan=equal_nan).size
    n = a.size
    flat = lax.reshape(a, (n,))
    perm = argsort(flat)                       # stable: each group starts at its first index
    s = lax.take(flat, perm)
    i32 = dtypes.default_int      # JAX's index dtype: int64 with x64 on
    if n == 0:
        empty = lax.full((size,), 0, i32)
        return UniqueAllResult(lax.full((size,), 0, a.dtype), empty, lax.reshape(empty[:0], a.shape),
                               empty)
    prev, rest = lax.slice_in_dim(s, 0, n - 1), lax.slice_in_dim(s, 1, n)
    new = lax.ne(rest, prev)
    if equal_nan:                              # NaN != NaN, but here they are one value
        new = lax.bitwise_and(new, lax.bitwise_or(lax.eq(rest, rest), lax.eq(prev, prev)))
    first = lax.concatenate([lax.full((1,), True, dtypes.bool_), new], 0)
    group = lax.sub(lax.cumsum(lax.convert_element_type(first, i32), 0), lax.full((), 1, i32))
    inverse = lax.scatter(lax.full((n,), 0, i32), perm, group, axis=0, mode="set")
    (pos,) = nonzero(first, size=size, fill_value=-1)
    found = lax.ge(pos, lax.full((), 0, i32))
    at = lax.max_(pos, lax.full((), 0, i32))
    fill = lax.slice_in_dim(s, 0, 1)[0] if fill_value is None else \
        lax.convert_element_type(asarray(fill_value), s.dtype)
    values = lax.select(found, lax.take(s, at), lax.broadcast_in_dim(fill, (size,), ()))
    counts = lax.scatter(lax.full((size,), 0, i32), group, lax.full((n,), 1, i32), axis=0,
                         mode="add")
    return UniqueAllResult(values, lax.take(perm, at), lax.reshape(inverse, a.shape), counts)


def _unique_along(ar, axis, size, fill_value, equal_nan):
    """``_unique_all`` for the slices of ``ar`` along ``axis``, ordered lexicographically; the
    inverse indices have one entry per slice, as in JAX."""
    from .creation import full
    from .shapes import moveaxis
    from .sorting import lexsort
    from .ufuncs import where
    a = moveaxis(asarray(ar), axis, 0)
    n = a.shape[0]
    rows = lax.reshape(a, (n, int(np.prod(a.shape[1:], dtype=int))))
    i32 = dtypes.default_int
    if n == 0 or rows.shape[1] == 0:
        # no elements to compare: every slice is the same (empty) one
        if n == 0 and size and fill_value is None:
            raise ValueError("unique: for a zero-sized input with a size, fill_value is needed")
        k = min(n, 1) if size is None else size
        values = lax.full((k,) + a.shape[1:], 0 if fill_value is None else fill_value, a.dtype)
        return UniqueAllResult(moveaxis(values, 0, axis), lax.full((k,), 0, i32),
                               lax.full((n,), 0, i32), lax.full((k,), n, i32)[:min(k, n)])
    perm = lexsort(tuple(rows[:, j] for j in reversed(range(rows.shape[1]))))
    s = rows[perm]
    prev, rest = s[:-1], s[1:]
    differs = lax.ne(rest, prev)
    if equal_nan and dtypes.issubdtype(s.dtype, np.inexact):
        differs = differs & ((rest == rest) | (prev == prev))
    first = lax.concatenate([lax.full((1,), True, dtypes.bool_), differs.any(axis=1)], 0)
    if size is None:
        size = int(concrete_or_error(first, "unique's argument (pass size= to use it under jit)")
                   .sum())
    group = lax.sub(lax.cumsum(lax.convert_element_type(first, i32), 0), lax.full((), 1, i32))
    inverse = lax.scatter(lax.full((n,), 0, i32), perm, group, axis=0, mode="set")
    (pos,) = nonzero(first, size=size, fill_value=-1)
    found = (pos >= 0)[:, None]
    at = lax.max_(pos, lax.full((), 0, i32))
    fill = s[0] if fill_value is None else full((s.shape[1],), fill_value, s.dtype)
    values = where(found, s[at], fill[None])
    counts = lax.scatter(lax.full((size,), 0, i32), group, lax.full((n,), 1, i32), axis=0,
                         mode="add")
    values = moveaxis(lax.reshape(values, (size,) + a.shape[1:]), 0, axis)
    return UniqueAllResult(values, lax.take(perm, at), inverse, counts)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique values of ``ar`` flattened, and optionally the index of each one's first
    occurrence, each element's position among them (shaped as ``ar``) and their counts.
    Without ``size`` it needs a concrete ``ar`` (the result size depends on it); with ``size``
    it works under jit: ``size`` values, padded with ``fill_value`` (by default the smallest
    value, as in JAX).

    >>> jnp.unique(jnp.array([3, 1, 3]), size=3, fill_value=0)
    Array([1, 3, 0], dtype=int32)
    >>> jnp.unique(jnp.array([[1, 2], [0, 5], [1, 2]]), axis=0)   # unique rows
    Array([[0, 5],
           [1, 2]], dtype=int32)
    """
    r = _unique_all(ar, size, fill_value, equal_nan) if axis is None else \
        _unique_along(ar, axis, size, fill_value, equal_nan)
    extra = [x for want, x in ((return_index, r.indices), (return_inverse, r.inverse_indices),
                               (return_counts, r.counts)) if want]
    return (r.values, *extra) if extra else r.values


def unique_all(x, /, *, size=None, fill_value=None) -> UniqueAllResult:
    """The array API's unique values with first indices, inverse indices and counts (NaNs are
    distinct values, as the standard asks).

    >>> jnp.unique_all(jnp.array([3, 1, 3])).counts
    Array([1, 2], dtype=int32)
    """
    return _unique_all(x, size, fill_value, equal_nan=False)


def unique_counts(x, /, *, size=None, fill_value=None) -> UniqueCountsResult:
    """The array API's unique values and their counts.

    >>> jnp.unique_counts(jnp.array([2, 2, 5])).counts
    Array([2, 1], dtype=int32)
    """
    r = _unique_all(x, size, fill_value, equal_nan=False)
    return UniqueCountsResult(r.values, r.counts)


def unique_inverse(x, /, *, size=None, fill_value=None) -> UniqueInverseResult:
    """The array API's unique values and each element's position among them.

    >>> jnp.unique_inverse(jnp.array([2, 5, 2])).inverse_indices
    Array([0, 1, 0], dtype=int32)
    """
    r = _unique_all(x, size, fill_value, equal_nan=False)
    return UniqueInverseResult(r.values, r.inverse_indices)


def unique_values(x, /, *, size=None, fill_value=None) -> Array:
    """The array API's sorted unique values.

    >>> jnp.unique_values(jnp.array([2, 5, 2]))
    Array([2, 5], dtype=int32)
    """
    return _unique_all(x, size, fill_value, equal_nan=False).values

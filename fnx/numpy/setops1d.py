"""Set operations on flattened arrays: ``union1d``, ``intersect1d``, ``setdiff1d`` and
``setxor1d``. Their sizes depend on values, so under ``jit`` pass a static ``size`` (padded with
``fill_value``, by default the smallest value of the result, or 0 for ``setdiff1d``), as in
JAX."""
from __future__ import annotations

import numpy as np

from ..core.core import concrete_or_error
from ._core import asarray, promote_dtypes
from .indexing import where
from .setops import unique
from .shapes import concatenate, ravel
from .sorting import argsort, isin, lexsort, searchsorted

__all__ = ["union1d", "intersect1d", "setdiff1d", "setxor1d"]


def _sorted_runs(a):
    """``a`` flattened and stably sorted, the sorting permutation, and where each run of equal
    values starts (its first occurrence in ``a``)."""
    a = ravel(a)
    order = argsort(a, stable=True)
    s = a[order]
    first = concatenate([asarray([True]), s[1:] != s[:-1]]) if s.shape[0] else s == s
    return s, order, first


def _compact(values, keep, size, fill_value, name, *extras, extra_fills=()):
    """``values[keep]`` in sorted order (with ``extras`` picked alike): concretely, or padded to
    the static ``size`` with ``fill_value``."""
    if size is None:
        mask = np.asarray(concrete_or_error(keep, f"{name} without size="))
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(np.asarray(values)[idx], kind="stable")]
        return (values[idx],) + tuple(e[idx] for e in extras)
    order = lexsort((values, ~keep))[:size]             # kept values first, in sorted order
    n = order.shape[0]
    picked = [values[order]] + [e[order] for e in extras]
    if n < size:
        picked = [concatenate([p, p[:1].repeat(size - n) if n else
                               asarray(np.zeros(size - n), p.dtype)]) for p in picked]
    valid = asarray(np.arange(size)) < keep.sum()
    fill = picked[0][0] if fill_value is None else asarray(fill_value, values.dtype)
    extras_out = [where(valid, p, f) for p, f in zip(picked[1:], extra_fills)]
    return (where(valid, picked[0], fill), *extras_out)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values found in either array.

    >>> jnp.union1d(jnp.array([1, 2, 2]), jnp.array([3, 1]))
    Array([1, 2, 3], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    return unique(concatenate([ravel(ar1), ravel(ar2)]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` not in ``ar2`` (padded with 0 by default, as in
    JAX).

    >>> jnp.setdiff1d(jnp.array([1, 2, 3, 4]), jnp.array([2, 4]))
    Array([1, 3], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    s, _, first = _sorted_runs(ar1)
    fill_value = 0 if fill_value is None else fill_value
    return _compact(s, first & ~isin(s, ar2), size, fill_value, "setdiff1d")[0]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values in exactly one of the two arrays.

    >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
    Array([1, 4], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    s1, _, first1 = _sorted_runs(ar1)
    s2, _, first2 = _sorted_runs(ar2)
    values = concatenate([s1, s2])
    keep = concatenate([first1 & ~isin(s1, ar2), first2 & ~isin(s2, ar1)])
    return _compact(values, keep, size, fill_value, "setxor1d")[0]


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted unique values in both arrays; with ``return_indices`` also where each first
    occurs in the flattened inputs.

    >>> jnp.intersect1d(jnp.array([1, 2, 3]), jnp.array([3, 1, 5]))
    Array([1, 3], dtype=int32)
    """
    ar1, ar2 = promote_dtypes(ar1, ar2)
    s1, order1, first1 = _sorted_runs(ar1)
    s2, order2, _ = _sorted_runs(ar2)
    keep = first1 & isin(s1, ar2)
    if not return_indices:
        return _compact(s1, keep, size, fill_value, "intersect1d")[0]
    in2 = order2[searchsorted(s2, s1, side="left").clip(0, max(s2.shape[0] - 1, 0))] \
        if s2.shape[0] else order1 * 0
    # padded indices point one past the end, as JAX's do
    return _compact(s1, keep, size, fill_value, "intersect1d", order1, in2,
                    extra_fills=(s1.shape[0], s2.shape[0]))

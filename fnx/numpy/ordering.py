"""Partial and complex orderings: ``partition``, ``argpartition`` and ``sort_complex``.

A full sort satisfies the partition contract (everything before position ``kth`` is no larger,
everything after no smaller), so the partitions are sorts; the order inside each side is
unspecified in NumPy and JAX alike."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ._core import asarray, canonicalize_axis, promote_dtypes_inexact
from .sorting import argsort, sort

__all__ = ["partition", "argpartition", "sort_complex"]


def _check_kth(name, a, kth, axis):
    if np.ndim(kth) != 0:
        raise NotImplementedError(f"{name}: kth must be a single integer, as in JAX, got {kth}")
    axis = canonicalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if not -n <= int(kth) < n:
        raise ValueError(f"{name}: kth={kth} is out of bounds for axis {axis} of length {n}")
    return axis


def partition(a, kth, axis=-1):
    """``a`` rearranged along ``axis`` so that position ``kth`` holds the value it would hold
    sorted, with no larger values before it and no smaller ones after.

    >>> jnp.partition(jnp.array([3, 1, 2]), 1)[1]
    Array(2, dtype=int32)
    """
    a = asarray(a)
    return sort(a, axis=_check_kth("partition", a, kth, axis))


def argpartition(a, kth, axis=-1):
    """The indices that would partition ``a`` along ``axis`` around position ``kth``.

    >>> jnp.argpartition(jnp.array([3, 1, 2]), 1)[1]
    Array(2, dtype=int32)
    """
    a = asarray(a)
    out = argsort(a, axis=_check_kth("argpartition", a, kth, axis))
    return out.astype(dtypes.int32)   # JAX's comes from top_k: int32 even with x64 on


def sort_complex(a):
    """``a`` sorted along its last axis (real part first, then imaginary), as a complex array.

    >>> jnp.sort_complex(jnp.array([2.0, 1.0]))
    Array([1.+0.j, 2.+0.j], dtype=complex64)
    """
    (a,) = promote_dtypes_inexact(sort(asarray(a)))   # int32 sorts into complex64, as in JAX
    narrow = (np.dtype(np.float16), np.dtype(np.float32), dtypes.bfloat16)
    target = np.complex64 if a.dtype in narrow else np.complex128
    return a.astype(a.dtype if a.dtype.kind == "c" else dtypes.canonical(target))

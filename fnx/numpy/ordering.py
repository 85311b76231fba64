"""Partial and complex orderings: ``partition``, ``argpartition`` and ``sort_complex``.

The order inside each side is unspecified in NumPy and JAX alike; fnx takes JAX's (two
``top_k`` calls: the smallest ``kth + 1`` ascending, then the rest descending), so programs
that print a partition see JAX's numbers."""
from __future__ import annotations

import numpy as np

from ..core import dtypes, lax
from ..core.lax.composed import top_k
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
    axis = _check_kth("partition", a, kth, axis)
    kth = int(kth) % a.shape[axis]
    x = lax.moveaxis(a, axis, -1)
    if x.dtype.kind == "u":     # -x would wrap around: shift so that zero stays the smallest
        bottom = -top_k(-(x + 1), kth + 1)[0] - 1
    else:
        bottom = -top_k(-x, kth + 1)[0]
    top = top_k(x, x.shape[-1] - kth - 1)[0]
    return lax.moveaxis(lax.concatenate([bottom, top], x.ndim - 1), -1, axis)


def argpartition(a, kth, axis=-1):
    """The indices that would partition ``a`` along ``axis`` around position ``kth``.

    >>> jnp.argpartition(jnp.array([3, 1, 2]), 1)[1]
    Array(2, dtype=int32)
    """
    a = asarray(a)
    axis = _check_kth("argpartition", a, kth, axis)
    kth = int(kth) % a.shape[axis]
    x = lax.moveaxis(a, axis, -1)
    bottom = top_k(-(x + 1) if x.dtype.kind == "u" else -x, kth + 1)[1]
    # the rest by a proxy (zero where taken, one elsewhere), so ties are never taken twice
    n = x.shape[-1]
    taken = lax.eq(lax.broadcast_in_dim(bottom, bottom.shape + (n,), tuple(range(bottom.ndim))),
                   lax.broadcast_in_dim(lax.iota(bottom.dtype, n), bottom.shape + (n,), (bottom.ndim,)))
    proxy = lax.sub(lax.full(x.shape, 1.0, dtypes.default_float),
                    lax.convert_element_type(lax.reduce_max(taken, (x.ndim - 1,)), dtypes.default_float))
    top = top_k(proxy, n - kth - 1)[1]
    out = lax.concatenate([bottom, top], x.ndim - 1).astype(dtypes.int32)  # int32, as JAX's
    return lax.moveaxis(out, -1, axis)


def sort_complex(a):
    """``a`` sorted along its last axis (real part first, then imaginary), as a complex array.

    >>> jnp.sort_complex(jnp.array([2.0, 1.0]))
    Array([1.+0.j, 2.+0.j], dtype=complex64)
    """
    (a,) = promote_dtypes_inexact(sort(asarray(a)))   # int32 sorts into complex64, as in JAX
    narrow = (np.dtype(np.float16), np.dtype(np.float32), dtypes.bfloat16)
    target = np.complex64 if a.dtype in narrow else np.complex128
    return a.astype(a.dtype if a.dtype.kind == "c" else dtypes.canonical(target))

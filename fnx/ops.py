"""fnx.ops: segment reductions, as ``jax.ops``.

>>> fnx.ops.segment_sum(jnp.array([1.0, 2.0, 3.0]), jnp.array([0, 0, 2]), num_segments=3)
Array([3., 0., 3.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from . import numpy as jnp
from .core import dtypes, lax
from .core.core import concrete_or_error
from .numpy.indexing import _SCATTER_MODES


def _identity(mode, dtype):
    """The value an empty segment holds: the reduction's identity, as in JAX."""
    if mode == "add":
        return 0
    if mode == "mul":
        return 1
    if dtypes.is_float(dtype):
        return -np.inf if mode == "max" else np.inf
    if dtype == dtypes.bool_:
        return mode == "min"
    info = np.iinfo(dtype)
    return info.min if mode == "max" else info.max


def _scatter_mode(name, mode):
    """'drop' or 'clip', from JAX's names or a ``GatherScatterMode``-like enum."""
    if mode is not None and not isinstance(mode, str):
        mode = {"FILL_OR_DROP": "drop", "CLIP": "clip",
                "PROMISE_IN_BOUNDS": "promise_in_bounds"}.get(getattr(mode, "name", None), mode)
    try:
        return _SCATTER_MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"{name}: unknown mode {mode!r}: expected one of "
                         f"{sorted(m for m in _SCATTER_MODES if m)}") from None


def _segment_reduce(name, mode, data, segment_ids, num_segments, bucket_size, index_mode,
                    combine):
    data = jnp.asarray(data)
    segment_ids = jnp.asarray(segment_ids)
    if not dtypes.is_int(segment_ids.dtype):
        raise TypeError(f"{name}: segment_ids must be integers, got {segment_ids.dtype}")
    if segment_ids.ndim != 1 or data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
        raise ValueError(f"{name}: segment_ids must be 1-D with one id per row of data, got "
                         f"shapes {segment_ids.shape} and {data.shape}")
    if num_segments is None:
        ids = concrete_or_error(segment_ids, f"{name}'s segment_ids (pass num_segments= under "
                                "jit)")
        num_segments = int(np.max(np.asarray(ids))) + 1
    num_segments = int(num_segments)
    if num_segments < 0:
        raise ValueError(f"{name}: num_segments must be non-negative, got {num_segments}")
    n, rows, ids = data.shape[0], data.shape[1:], segment_ids
    if _scatter_mode(name, index_mode) == "clip":
        ids = jnp.clip(ids, 0, max(num_segments - 1, 0))
    if bucket_size is None:
        # an id outside [0, num_segments) is dropped by scatter itself, as JAX drops it
        init = lax.full((num_segments,) + rows, _identity(mode, data.dtype), data.dtype)
        return lax.scatter(init, ids, data, axis=0, mode=mode)
    # JAX's buckets: each run of bucket_size rows reduced on its own, then the buckets combined
    # (the rounding JAX gets)
    buckets = -(-n // int(bucket_size))
    valid = (ids >= 0) & (ids < num_segments)
    bucket = jnp.arange(n, dtype=ids.dtype) // int(bucket_size)
    ids = jnp.where(valid, bucket * num_segments + ids, -1)
    init = lax.full((buckets * num_segments,) + rows, _identity(mode, data.dtype), data.dtype)
    out = lax.scatter(init, ids, data, axis=0, mode=mode)
    return combine(out.reshape((buckets, num_segments) + rows), axis=0).astype(data.dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Sums of the rows of ``data`` that share a segment id: ``out[i] = sum(data[ids == i])``.
    Ids outside ``[0, num_segments)`` are dropped
    (``mode='clip'`` clamps them instead); ``num_segments`` must be given under jit.
    ``bucket_size`` reduces each run of that many rows on its own, then adds the buckets, as
    JAX does; ``indices_are_sorted`` and ``unique_indices`` are hints, as in JAX. The other
    segment reductions take the same arguments.

    >>> segment_sum(jnp.arange(4.0), jnp.array([0, 1, 0, 1]), num_segments=2)
    Array([2., 4.], dtype=float32)
    """
    return _segment_reduce("segment_sum", "add", data, segment_ids, num_segments, bucket_size,
                           mode, jnp.sum)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """Products of the rows of ``data`` that share a segment id (1 for an empty segment).

    >>> segment_prod(jnp.array([2.0, 3.0, 4.0]), jnp.array([0, 0, 1]), num_segments=3)
    Array([6., 4., 1.], dtype=float32)
    """
    return _segment_reduce("segment_prod", "mul", data, segment_ids, num_segments, bucket_size,
                           mode, jnp.prod)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Maxima of the rows of ``data`` that share a segment id (-inf, or the dtype's minimum,
    for an empty segment).

    >>> segment_max(jnp.array([2.0, 3.0, 1.0]), jnp.array([0, 0, 1]), num_segments=2)
    Array([3., 1.], dtype=float32)
    """
    return _segment_reduce("segment_max", "max", data, segment_ids, num_segments, bucket_size,
                           mode, jnp.max)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Minima of the rows of ``data`` that share a segment id (inf, or the dtype's maximum,
    for an empty segment).

    >>> segment_min(jnp.array([2.0, 3.0, 1.0]), jnp.array([0, 0, 1]), num_segments=2)
    Array([2., 1.], dtype=float32)
    """
    return _segment_reduce("segment_min", "min", data, segment_ids, num_segments, bucket_size,
                           mode, jnp.min)


__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]

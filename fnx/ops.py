"""fnx.ops: segment reductions, as ``jax.ops``.

>>> fnx.ops.segment_sum(jnp.array([1.0, 2.0, 3.0]), jnp.array([0, 0, 2]), num_segments=3)
Array([3., 0., 3.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from . import numpy as jnp
from .core import dtypes, lax
from .core.core import concrete_or_error


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


def _segment_reduce(name, mode, data, segment_ids, num_segments):
    data = jnp.asarray(data)
    segment_ids = jnp.asarray(segment_ids)
    if segment_ids.ndim != 1 or data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
        raise ValueError(f"{name}: segment_ids must be 1-D with one id per row of data, got "
                         f"shapes {segment_ids.shape} and {data.shape}")
    if not dtypes.is_int(segment_ids.dtype):
        raise TypeError(f"{name}: segment_ids must be integers, got {segment_ids.dtype}")
    if num_segments is None:
        ids = concrete_or_error(segment_ids, f"{name}'s segment_ids (pass num_segments= under "
                                "jit)")
        num_segments = int(np.max(np.asarray(ids), initial=-1)) + 1
    num_segments = int(num_segments)
    # ids outside [0, num_segments) go to one extra row that is dropped afterwards, so they
    # are dropped whatever scatter itself does with out-of-range indices (as JAX drops them)
    valid = (segment_ids >= 0) & (segment_ids < num_segments)
    ids = jnp.where(valid, segment_ids, num_segments).astype(jnp.int32)
    init = lax.full((num_segments + 1,) + data.shape[1:], _identity(mode, data.dtype),
                    data.dtype)
    out = lax.scatter(init, ids, data, axis=0, mode=mode)
    return lax.slice_in_dim(out, 0, num_segments, axis=0)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Sums of the rows of ``data`` that share a segment id: ``out[i] = sum(data[ids == i])``.
    Ids outside ``[0, num_segments)`` are dropped; ``num_segments`` must be given under jit.
    ``indices_are_sorted``, ``unique_indices``, ``bucket_size`` and ``mode`` are accepted as in
    JAX (hints that do not change the result).

    >>> segment_sum(jnp.arange(4.0), jnp.array([0, 1, 0, 1]), num_segments=2)
    Array([2., 4.], dtype=float32)
    """
    return _segment_reduce("segment_sum", "add", data, segment_ids, num_segments)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """Products of the rows of ``data`` that share a segment id (1 for an empty segment).

    >>> segment_prod(jnp.array([2.0, 3.0, 4.0]), jnp.array([0, 0, 1]), num_segments=3)
    Array([6., 4., 1.], dtype=float32)
    """
    return _segment_reduce("segment_prod", "mul", data, segment_ids, num_segments)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Maxima of the rows of ``data`` that share a segment id (-inf, or the dtype's minimum,
    for an empty segment).

    >>> segment_max(jnp.array([2.0, 3.0, 1.0]), jnp.array([0, 0, 1]), num_segments=2)
    Array([3., 1.], dtype=float32)
    """
    return _segment_reduce("segment_max", "max", data, segment_ids, num_segments)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Minima of the rows of ``data`` that share a segment id (inf, or the dtype's maximum,
    for an empty segment).

    >>> segment_min(jnp.array([2.0, 3.0, 1.0]), jnp.array([0, 0, 1]), num_segments=2)
    Array([2., 1.], dtype=float32)
    """
    return _segment_reduce("segment_min", "min", data, segment_ids, num_segments)


__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""Bit-level functions: ``packbits``, ``unpackbits``, ``bitwise_count`` and ``spacing`` (the
gap to the next representable float)."""
from __future__ import annotations

import numpy as np

from ..core.errors import DTypeError
from ._core import asarray, canonicalize_axis, promote_dtypes_inexact
from .padding import pad
from .shapes import moveaxis, ravel, reshape
from .ufuncs import abs, copysign, nextafter

__all__ = ["packbits", "unpackbits", "bitwise_count", "spacing"]


def _shifts(bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = np.arange(8, dtype=np.uint8)
    return asarray(shifts[::-1].copy() if bitorder == "big" else shifts)


def packbits(a, axis=None, bitorder="big"):
    """The non-zero-ness of ``a``'s elements packed eight to a ``uint8`` along ``axis``
    (flattened when None), zero-padded to a multiple of eight.

    >>> jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 1]))
    Array([177], dtype=uint8)
    """
    a = asarray(a)
    if a.dtype.kind not in "biu":
        raise DTypeError(f"packbits: expected an integer or boolean array, got {a.dtype}")
    bits = (a != 0).astype(np.uint8)
    if axis is None:
        bits, axis = ravel(bits), 0
    axis = canonicalize_axis(axis, bits.ndim)
    bits = moveaxis(bits, axis, -1)
    remainder = bits.shape[-1] % 8
    if remainder:
        bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, 8 - remainder)])
    bits = reshape(bits, bits.shape[:-1] + (bits.shape[-1] // 8, 8))
    packed = (bits << _shifts(bitorder)).sum(axis=-1, dtype=np.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the ``uint8`` array ``a`` as 0/1 ``uint8`` values along ``axis``
    (flattened when None), the first ``count`` of them when given.

    >>> jnp.unpackbits(jnp.array([177], jnp.uint8))
    Array([1, 0, 1, 1, 0, 0, 0, 1], dtype=uint8)
    """
    a = asarray(a)
    if a.dtype != np.uint8:
        raise DTypeError(f"unpackbits: expected a uint8 array, got {a.dtype}")
    bits = (a[..., None] >> _shifts(bitorder)) & 1
    if axis is None:
        bits, axis = ravel(bits), 0
    else:
        axis = canonicalize_axis(axis, a.ndim)
        bits = moveaxis(bits, -1, axis + 1)
        bits = reshape(bits, a.shape[:axis] + (8 * a.shape[axis],) + a.shape[axis + 1:])
    if count is not None:
        bits = moveaxis(moveaxis(bits, axis, 0)[:count], 0, axis)
    return bits


def bitwise_count(x, /):
    """The number of set bits in the absolute value of each element, as ``uint8``.

    >>> jnp.bitwise_count(jnp.array([7, -3]))
    Array([3, 2], dtype=uint8)
    """
    from ..lax.extras import population_count
    x = asarray(x)
    if x.dtype.kind not in "biu":
        raise DTypeError(f"bitwise_count: expected an integer or boolean array, got {x.dtype}")
    if x.dtype.kind == "b":
        return x.astype(np.uint8)
    return population_count(abs(x)).astype(np.uint8)


def spacing(x, /):
    """The distance from each element to the next float away from zero.

    >>> jnp.spacing(jnp.array(1.0)) == jnp.finfo(jnp.float32).eps
    Array(True, dtype=bool)
    """
    x, = promote_dtypes_inexact(x)
    if x.dtype.kind == "c":
        raise DTypeError(f"spacing: complex arguments are not supported, got {x.dtype}")
    return nextafter(x, copysign(asarray(np.inf, x.dtype), x)) - x

"""jax.lax's integer bit operations composed from fnx's primitives: ``mulhi`` and
``reduce_xor``.

>>> lax.mulhi(jnp.array([2 ** 30], jnp.int32), jnp.array([8], jnp.int32))
Array([2], dtype=int32)
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.core import get_aval
from ..core.errors import DTypeError


def _unsigned(dtype):
    return np.dtype(f"uint{np.dtype(dtype).itemsize * 8}")


def _mulhi_unsigned(a, b, half, dtype):
    """High word of the double-width product of unsigned ``a`` and ``b`` by half-words; every
    partial sum fits in one word."""
    mask, shift = lax.full((), (1 << half) - 1, dtype), lax.full((), half, dtype)
    a_lo, a_hi = lax.bitwise_and(a, mask), lax.shift_right_logical(a, shift)
    b_lo, b_hi = lax.bitwise_and(b, mask), lax.shift_right_logical(b, shift)
    hi_lo = a_hi * b_lo
    cross = (lax.shift_right_logical(a_lo * b_lo, shift) + lax.bitwise_and(hi_lo, mask)
             + a_lo * b_hi)
    return (a_hi * b_hi + lax.shift_right_logical(hi_lo, shift)
            + lax.shift_right_logical(cross, shift))


def mulhi(x, y, /):
    """The high half of the double-width product of integers ``x`` and ``y`` (same dtype).

    >>> lax.mulhi(jnp.array([-1], jnp.int32), jnp.array([5], jnp.int32))
    Array([-1], dtype=int32)
    """
    dtype = np.dtype(get_aval(x).dtype)
    if dtype != get_aval(y).dtype or dtype.kind not in "iu":
        raise DTypeError(f"mulhi takes two integer arrays of one dtype, got {dtype} and "
                         f"{get_aval(y).dtype}")
    u = _unsigned(dtype)
    a = x if dtype == u else lax.bitcast_convert_type(x, u)
    b = y if dtype == u else lax.bitcast_convert_type(y, u)
    hi = _mulhi_unsigned(a, b, dtype.itemsize * 4, u)
    if dtype == u:
        return hi
    # signed: subtract the other factor for each negative one (two's complement correction)
    zero = lax.full(get_aval(hi).shape, 0, u)
    hi = hi - lax.select(lax.lt(x, lax.full((), 0, dtype)), b, zero)
    hi = hi - lax.select(lax.lt(y, lax.full((), 0, dtype)), a, zero)
    return lax.bitcast_convert_type(hi, dtype)


def reduce_xor(operand, axes):
    """Bitwise exclusive or of ``operand`` (integers or booleans) over ``axes``.

    >>> lax.reduce_xor(jnp.array([3, 5, 6]), (0,))
    Array(0, dtype=int32)
    """
    aval = get_aval(operand)
    if np.dtype(aval.dtype).kind not in "iub":
        raise DTypeError(f"reduce_xor takes integers or booleans, got {aval.dtype}")
    axes = sorted(int(a) % aval.ndim for a in axes)
    rest = [a for a in range(aval.ndim) if a not in axes]
    kept = tuple(aval.shape[a] for a in rest)
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    x = lax.reshape(lax.transpose(operand, rest + axes), kept + (n,))
    last = len(kept)
    if n == 0:
        return lax.full(kept, 0, aval.dtype)
    while n > 1:        # fold halves together: log2(n) elementwise steps
        if n % 2:
            x = lax.concatenate([x, lax.full(kept + (1,), 0, aval.dtype)], last)
            n += 1
        x = lax.bitwise_xor(lax.slice_in_dim(x, 0, n // 2, axis=last),
                            lax.slice_in_dim(x, n // 2, n, axis=last))
        n //= 2
    return lax.reshape(x, kept)

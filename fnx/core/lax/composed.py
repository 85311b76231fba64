"""Small jax.lax functions composed from the primitives (no rules of their own)."""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..core import get_aval
from ..errors import DTypeError, ShapeError
from .base import broadcast_in_dim, convert_element_type, full, reshape, transpose
from .elementwise import bitcast_convert_type as _same_width_bitcast
from .elementwise import (_const, _full_like, abs_, add, bitwise_and, bitwise_or, shift_left,
                          shift_right_logical, eq, exp, gt, integer_pow,
                          is_finite, log1p, lt, max_, min_, mul, neg, pow_, rem, select, sign,
                          stop_gradient_raw, sub)
from .shapes import broadcasted_iota, concatenate, rev, slice_in_dim, squeeze
from .reductions import _cumulative
from .indexing import take
from .products import dot_general
from .sorting import sort


def clamp(min, x, max):  # noqa: A002 - jax.lax's argument names
    """``x`` limited to ``[min, max]``; the bounds are 0-d or shaped like ``x``, of ``x``'s
    dtype (a Python number whose own dtype is that). As in JAX, the derivative reaches ``x`` only
    strictly inside the bounds, ``min`` only where it is above ``x`` (and below ``max``) and
    ``max`` only where it is below ``x``.

    >>> clamp(0.0, jnp.array([-1.0, 0.5, 2.0]), 1.0)
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    xa = get_aval(x)
    lo, hi = (_clamp_bound(b, xa, (min, x, max)) for b in (min, max))
    value = stop_gradient_raw(min_(max_(x, lo), hi))
    lo, hi = (broadcast_in_dim(b, xa.shape, ()) if get_aval(b).shape != xa.shape else b
              for b in (lo, hi))
    lo_wins = bitwise_and(gt(lo, x), lt(lo, hi))
    x_wins = bitwise_and(gt(x, lo), lt(x, hi))
    return select(lo_wins, lo, select(x_wins, x, select(lt(hi, x), hi, value)))


def _clamp_bound(b, xa, args):
    ba = get_aval(b)     # a Python number has its own dtype (float32 for 1.0 with x64 off)
    if ba.dtype != xa.dtype:
        raise DTypeError("lax.clamp requires arguments to have the same dtypes, got "
                         f"{', '.join(str(get_aval(a).dtype) for a in args)}.")
    if ba.shape not in ((), xa.shape):
        raise ShapeError(f"lax.clamp: a bound of shape {ba.shape} for an operand of shape "
                         f"{xa.shape}; bounds are scalars or of the operand's shape")
    return full((), b, ba.dtype, ba.weak_type) if not hasattr(b, "shape") else b


def round_half_even(x):
    """``x`` rounded to the nearest whole number, ties to the even one (NumPy's ``round``).

    >>> fnx.lax.round(jnp.array([0.5, 1.5, 2.5]), fnx.lax.RoundingMethod.TO_NEAREST_EVEN)
    Array([0., 2., 2.], dtype=float32)
    """
    from .elementwise import bitwise_and, eq, floor, mul, ne, rem, round_, select, sign, sub
    r = round_(x)   # half away from zero
    is_tie = eq(abs_(sub(x, floor(x))), _full_like(x, 0.5))
    odd = ne(rem(r, _full_like(x, 2)), _full_like(x, 0))
    s = sign(x)     # |r - s| * s: a tie rounded to zero keeps x's sign (-0.5 gives -0.0)
    return select(bitwise_and(is_tie, odd), mul(abs_(sub(r, s)), s), r)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``.

    >>> full_like(jnp.ones((2, 3)), 7)
    Array([[7., 7., 7.],
           [7., 7., 7.]], dtype=float32)
    """
    aval = get_aval(x)
    weak = aval.weak_type if dtype is None else False
    return full(aval.shape if shape is None else shape, fill_value,
                aval.dtype if dtype is None else dtype, weak)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The entry ``index`` (negative counts from the end) along ``axis``.

    >>> index_in_dim(jnp.arange(6).reshape(2, 3), -1, axis=1, keepdims=False)
    Array([2, 5], dtype=int32)
    """
    n = get_aval(operand).shape[axis]
    index, axis = int(index), int(axis) % get_aval(operand).ndim
    if not -n <= index < n:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} of "
                         f"size {n}")
    out = slice_in_dim(operand, index % n, index % n + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def index_take(src, idxs, axes):
    """``src[idxs[0], idxs[1], ...]`` over ``axes``: the indexed entries along a new leading
    axis, followed by ``src``'s other axes. Indices wrap around (modulo the axis size), as in
    JAX.

    >>> index_take(jnp.arange(6).reshape(2, 3), (jnp.array([1, 0]),), (0,))
    Array([[3, 4, 5],
           [0, 1, 2]], dtype=int32)
    """
    aval = get_aval(src)
    axes = tuple(int(a) % aval.ndim for a in axes)
    rest = tuple(a for a in range(aval.ndim) if a not in axes)
    sizes = [aval.shape[a] for a in axes]
    flat = None
    for i, n in zip(idxs, sizes):     # row-major position in the product of the indexed axes
        i = convert_element_type(i, dtypes.int32)
        n_ = _const(i, n)
        i = rem(add(rem(i, n_), n_), n_)
        flat = i if flat is None else add(mul(flat, n_), i)
    moved = reshape(transpose(src, axes + rest), (math.prod(sizes),) +
                    tuple(aval.shape[a] for a in rest))
    return take(moved, flat, 0)


def reciprocal(x):
    """``1 / x``.

    >>> lax.reciprocal(jnp.array([2.0, 4.0]))
    Array([0.5 , 0.25], dtype=float32)
    """
    return integer_pow(x, -1)


def cbrt(x):
    """The real cube root, negative for negative ``x``; its slope at 0 is inf, as in JAX.

    >>> lax.cbrt(jnp.array([-8.0, 1.0, 0.125]))
    Array([-2. ,  1. ,  0.5], dtype=float32)
    """
    third = _const(x, 1 / 3)
    # Two branches, not sign(x) * |x| ** (1/3): that product's slope at 0 is 0 * inf = NaN.
    # Each branch sees a harmless 1 where it is not taken, so reverse mode never multiplies
    # a zero cotangent by an infinite slope. The sign bit (1/x < 0 at -0.0) picks the
    # branch, so cbrt(-0.0) is -0.0.
    zero, one = _full_like(x, 0), _full_like(x, 1)
    negative = lt(select(eq(x, zero), integer_pow(x, -1), x), zero)
    below = neg(pow_(select(negative, neg(x), one), third))
    return select(negative, below, pow_(select(negative, one, x), third))


def exp2(x):
    """``2 ** x``.

    >>> lax.exp2(jnp.array([0.0, 3.0]))
    Array([1., 8.], dtype=float32)
    """
    return pow_(_full_like(x, 2), x)


def broadcast(operand, sizes):
    """``operand`` with new leading axes of ``sizes``.

    >>> broadcast(jnp.ones(3), (2,)).shape
    (2, 3)
    """
    shape = get_aval(operand).shape
    sizes = tuple(int(s) for s in sizes)
    return broadcast_in_dim(operand, sizes + shape,
                            tuple(range(len(sizes), len(sizes) + len(shape))))


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 axes up to ``rank`` axes.

    >>> broadcast_to_rank(jnp.ones(3), 3).shape
    (1, 1, 3)
    """
    return broadcast(x, (1,) * (int(rank) - get_aval(x).ndim))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """``operand`` with axes ``start_dimension:stop_dimension`` merged into one.

    >>> collapse(jnp.ones((2, 3, 4)), 1).shape
    (2, 12)
    """
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"collapse: stop_dimension {stop_dimension} comes before "
                         f"start_dimension {start_dimension}")
    return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def top_k(operand, k: int):
    """``(values, indices)`` of the ``k`` largest entries along the last axis, largest first;
    equal values come in index order. Differentiable in the values.

    >>> top_k(jnp.array([1.0, 3.0, 2.0]), 2)      # a list, as JAX's
    [Array([3., 2.], dtype=float32), Array([1, 2], dtype=int32)]
    """
    aval = get_aval(operand)
    n, axis = aval.shape[-1], aval.ndim - 1
    if not 0 <= int(k) <= n:
        raise ValueError(f"top_k: k={k} must be between 0 and the last axis size {n}")
    # sort ascending by (value, -index) and read from the end: largest first, ties by index,
    # and no negation of the values (which would overflow unsigned and minimum integers)
    neg_idx = neg(broadcasted_iota(dtypes.int32, aval.shape, axis))
    values, neg_idx = sort([operand, neg_idx], axis, num_keys=2)
    values = slice_in_dim(rev(values, (axis,)), 0, int(k), 1, axis)
    indices = slice_in_dim(rev(neg(neg_idx), (axis,)), 0, int(k), 1, axis)
    return [values, indices]


def _logaddexp(a, b):
    big = max_(a, b)
    gap = neg(abs_(sub(a, b)))
    # -inf - -inf (and inf - inf) is NaN: those pairs add nothing to the larger one
    gap = select(is_finite(gap), gap, _full_like(gap, -np.inf))
    return add(big, log1p(exp(gap)))


def cumlogsumexp(x, axis: int = 0, reverse: bool = False):
    """``log(cumsum(exp(x)))`` along ``axis``, without overflow.

    >>> cumlogsumexp(jnp.zeros(3))   # [0., log 2, log 3]
    Array([0.       , 0.6931472, 1.0986123], dtype=float32)
    """
    return _cumulative(_logaddexp, x, int(axis), reverse, -np.inf)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading (batch) axes: (..., m, k) @ (..., k, n); both operands
    have the same rank, at least 2.

    >>> batch_matmul(jnp.ones((5, 2, 3)), jnp.ones((5, 3, 4))).shape
    (5, 2, 4)
    """
    nl, nr = get_aval(lhs).ndim, get_aval(rhs).ndim
    if nl < 2 or nl != nr:
        raise ValueError(f"batch_matmul needs operands of one rank, at least 2; got ranks {nl} "
                         f"and {nr}")
    batch = tuple(range(nl - 2))
    return dot_general(lhs, rhs, (((nl - 1,), (nl - 2,)), (batch, batch)), precision)


def bitcast_convert_type(x, new_dtype):  # noqa: F811 - elementwise's, across widths
    """The bits of ``x`` reinterpreted as ``new_dtype`` (same width), e.g. float32 -> uint32.

    >>> lax.bitcast_convert_type(jnp.float32(1.0), jnp.int32)
    Array(1065353216, dtype=int32)

    As in JAX, a narrower ``new_dtype`` adds a last axis (the bytes in little-endian order)
    and a wider one consumes it:

    >>> lax.bitcast_convert_type(jnp.array([1, 256], jnp.int16), jnp.uint8)
    Array([[1, 0],
           [0, 1]], dtype=uint8)
    """
    new_dtype = dtypes.canonical(new_dtype)
    old_bits, new_bits = get_aval(x).dtype.itemsize * 8, np.dtype(new_dtype).itemsize * 8
    if old_bits == new_bits:
        return _same_width_bitcast(x, new_dtype)
    for dt in (get_aval(x).dtype, np.dtype(new_dtype)):
        if dt.kind in "bc":
            raise DTypeError(f"bitcast_convert_type from {get_aval(x).dtype} to "
                             f"{np.dtype(new_dtype)}: bool and complex types change width only "
                             "with equal widths")
    # composed from same-width casts, shifts and masks, so every backend and transformation
    # has it already
    u_old, u_new = np.dtype(f"uint{old_bits}"), np.dtype(f"uint{new_bits}")
    bits = _same_width_bitcast(x, u_old)
    shape = get_aval(x).shape
    if old_bits > new_bits:
        mask = np.array((1 << new_bits) - 1, u_old)
        parts = [convert_element_type(bitwise_and(
            shift_right_logical(bits, np.array(new_bits * j, u_old)), mask), u_new)
            for j in range(old_bits // new_bits)]
        stacked = concatenate([reshape(p, (*shape, 1)) for p in parts], len(shape))
        return _same_width_bitcast(stacked, new_dtype)
    ratio = new_bits // old_bits
    if not shape or shape[-1] != ratio:
        raise ShapeError(f"bitcast_convert_type from {get_aval(x).dtype}{list(shape)} to "
                         f"{np.dtype(new_dtype)}: the last axis must have size {ratio}")
    out = None
    for j in range(ratio):
        part = squeeze(slice_in_dim(bits, j, j + 1, axis=len(shape) - 1), (len(shape) - 1,))
        part = shift_left(convert_element_type(part, u_new), np.array(old_bits * j, u_new))
        out = part if out is None else bitwise_or(out, part)
    return _same_width_bitcast(out, new_dtype)

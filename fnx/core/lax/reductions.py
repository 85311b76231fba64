"""Reductions (``reduce_max``, ``reduce_min``, ``reduce_prod``, ``reduce_and``, ``reduce_or``),
``argmax``/``argmin`` and cumulative sums, products and extrema (``reduce_sum`` is in base.py).
"""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..ad_util import defjvp, deflinear, zero_jvp
from ..core import ShapedArray, get_aval
from ..errors import ShapeError
from .base import (_BOOL, _FLOAT, _INT, _shp, axes_past_batch, batch_axis_after_removing,
                   broadcast_in_dim, convert_element_type, full, primitive, reduce_sum,
                   reduction, reshape, transpose)
from .elementwise import div, eq, max_, min_, mul
from .shapes import concatenate, rev, slice_in_dim


reduce_max_p = reduction("reduce_max")
reduce_min_p = reduction("reduce_min")
reduce_prod_p = reduction("reduce_prod", _FLOAT + _INT)
reduce_and_p = reduction("reduce_and", _BOOL + _INT)
reduce_or_p = reduction("reduce_or", _BOOL + _INT)
zero_jvp(reduce_and_p)
zero_jvp(reduce_or_p)


def _keep_dims(y, in_shape, axes):
    kept = tuple(i for i in range(len(in_shape)) if i not in axes)
    return broadcast_in_dim(y, in_shape, kept)


def _reduce_chooser_jvp(prim):
    def fn(t, x, *, axes):
        out = prim.bind(x, axes=axes)
        shape = get_aval(x).shape
        location = convert_element_type(eq(x, _keep_dims(out, shape, axes)), get_aval(t).dtype)
        counts = reduce_sum(location, axes)
        return div(reduce_sum(mul(t, location), axes), counts)
    return fn


defjvp(reduce_max_p, _reduce_chooser_jvp(reduce_max_p))
defjvp(reduce_min_p, _reduce_chooser_jvp(reduce_min_p))


def _reduce_prod_jvp(t, x, *, axes):
    # d prod = sum_i t_i * prod_{j != i} x_j, with the exclusive products from prefix and suffix
    # cumulative products, so it stays exact where x has zeros.
    shape = get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = list(axes) + kept
    n = math.prod(shape[a] for a in axes)
    rest = tuple(shape[i] for i in kept)
    xs = reshape(transpose(x, perm), (n,) + rest)
    ts = reshape(transpose(t, perm), (n,) + rest)
    one = full((1,) + rest, 1, get_aval(x).dtype)
    before = cumprod(concatenate([one, slice_in_dim(xs, 0, n - 1)], 0), 0)
    after = cumprod(concatenate([slice_in_dim(xs, 1, n), one], 0), 0, reverse=True)
    return reduce_sum(mul(ts, mul(before, after)), (0,))


defjvp(reduce_prod_p, _reduce_prod_jvp)


def reduce_max(x, axes):
    """The maximum over ``axes``.

    >>> lax.reduce_max(jnp.array([[1, 5], [4, 2]]), (1,))
    Array([5, 4], dtype=int32)
    """
    return reduce_max_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_min(x, axes):
    """The minimum over ``axes``.

    >>> lax.reduce_min(jnp.array([[1, 5], [4, 2]]), (0,))
    Array([1, 2], dtype=int32)
    """
    return reduce_min_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_prod(x, axes):
    """The product over ``axes``.

    >>> lax.reduce_prod(jnp.array([[1., 2.], [3., 4.]]), (0, 1))
    Array(24., dtype=float32)
    """
    return reduce_prod_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_and(x, axes):
    """Whether every element over ``axes`` is true (bitwise and for integers).

    >>> lax.reduce_and(jnp.array([[True, False], [True, True]]), (1,))
    Array([False,  True], dtype=bool)
    """
    return reduce_and_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_or(x, axes):
    """Whether any element over ``axes`` is true (bitwise or for integers).

    >>> lax.reduce_or(jnp.array([[True, False], [False, False]]), (1,))
    Array([ True, False], dtype=bool)
    """
    return reduce_or_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def _arg_aval(name):
    def rule(x, *, axis, index_dtype):
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis} out of range for shape {_shp(x.shape)}")
        if x.shape[axis] == 0:
            raise ShapeError(f"{name} of an empty axis")
        return ShapedArray(x.shape[:axis] + x.shape[axis + 1:], index_dtype)
    return rule


def _arg_batch(p, x, d, axis, index_dtype):
    (axis,) = axes_past_batch((axis,), d)
    return p.bind(x, axis=axis, index_dtype=index_dtype), batch_axis_after_removing(d, (axis,))


argmax_p = primitive("argmax")
argmin_p = primitive("argmin")
for _p in (argmax_p, argmin_p):
    _p.abstract_eval = _arg_aval(_p.name)
    zero_jvp(_p)
    _p.batch = (lambda p: lambda vals, dims, *, axis, index_dtype: _arg_batch(
        p, vals[0], dims[0], axis, index_dtype))(_p)


def argmax(x, axis, index_dtype=dtypes.int32):
    """The index of the largest element along ``axis`` (the first one on ties).

    >>> lax.argmax(jnp.array([[1., 5., 5.], [4., 2., 0.]]), 1)
    Array([1, 0], dtype=int32)
    """
    return argmax_p.bind(x, axis=int(axis), index_dtype=np.dtype(index_dtype))


def argmin(x, axis, index_dtype=dtypes.int32):
    """The index of the smallest element along ``axis`` (the first one on ties).

    >>> lax.argmin(jnp.array([[1., 5.], [4., 0.]]), 0)
    Array([0, 1], dtype=int32)
    """
    return argmin_p.bind(x, axis=int(axis), index_dtype=np.dtype(index_dtype))


cumsum_p = primitive("cumsum")
cumsum_p.abstract_eval = lambda x, *, axis, reverse: x
deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum(ct, axis, not reverse)])
cumsum_p.batch = lambda vals, dims, *, axis, reverse: (
    cumsum_p.bind(vals[0], axis=axis + (axis >= dims[0]), reverse=reverse), dims[0])


def cumsum(x, axis: int = 0, reverse: bool = False):
    """The running sum along ``axis`` (from the end with ``reverse``).

    >>> lax.cumsum(jnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int32)
    """
    return cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))


def _cumulative(op, x, axis, reverse, identity):
    """Inclusive scan by doubling (Hillis-Steele): log2(n) steps of primitives, so it is
    differentiable and batchable with no rules of its own."""
    aval = get_aval(x)
    axis = axis % aval.ndim
    n = aval.shape[axis]
    if reverse:
        x = rev(x, (axis,))
    shift = 1
    while shift < n:
        pad_shape = list(aval.shape)
        pad_shape[axis] = shift
        filler = full(tuple(pad_shape), identity, aval.dtype)
        shifted = concatenate([filler, slice_in_dim(x, 0, n - shift, 1, axis)], axis)
        x = op(x, shifted)
        shift *= 2
    return rev(x, (axis,)) if reverse else x


def cumprod(x, axis: int = 0, reverse: bool = False):
    """The running product along ``axis`` (from the end with ``reverse``).

    >>> lax.cumprod(jnp.array([1, 2, 3]), reverse=True)
    Array([6, 6, 3], dtype=int32)
    """
    return _cumulative(mul, x, axis, reverse, 1)


def cummax(x, axis: int = 0, reverse: bool = False):
    """The running maximum along ``axis`` (from the end with ``reverse``).

    >>> lax.cummax(jnp.array([1, 3, 2]))
    Array([1, 3, 3], dtype=int32)
    """
    dt = get_aval(x).dtype
    low = -np.inf if dtypes.is_float(dt) else np.iinfo(dt).min
    return _cumulative(max_, x, axis, reverse, low)


def cummin(x, axis: int = 0, reverse: bool = False):
    """The running minimum along ``axis`` (from the end with ``reverse``).

    >>> lax.cummin(jnp.array([3, 1, 2]))
    Array([3, 1, 1], dtype=int32)
    """
    dt = get_aval(x).dtype
    high = np.inf if dtypes.is_float(dt) else np.iinfo(dt).max
    return _cumulative(min_, x, axis, reverse, high)

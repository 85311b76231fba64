"""Indexing primitives: ``take`` and ``scatter`` along one axis, ``take_along_axis``, and the
slices at traced offsets built on them (``dynamic_slice``, ``dynamic_update_slice``).
"""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..ad_util import Zero, instantiate, is_undefined, zeros_like_aval
from ..core import ShapedArray, get_aval
from ..errors import DTypeError, ShapeError
from .base import (_shp, bdim_at_front, broadcast_in_dim, convert_element_type, full, moveaxis,
                   not_mapped, primitive, reshape)
from .elementwise import add, bitwise_and, div, eq, ge, lt, max_, min_, mul, ne, select, select_n
from .shapes import broadcasted_iota, expand_dims, iota, slice, slice_in_dim, squeeze


take_p = primitive("take")


def _take_aval(x, idx, *, axis):
    if not dtypes.is_int(idx.dtype):
        raise DTypeError(f"indices must be integers, got {idx.dtype}")
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"take axis {axis} out of range for shape {_shp(x.shape)}")
    return ShapedArray(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype, x.weak_type)


def _take_transpose(ct, x, idx, *, axis):
    # take clamps its indices; the scatter back must land where the gather read
    zeros = zeros_like_aval(x.aval)
    return [scatter_p.bind(zeros, _clip_index(idx, x.aval.shape[axis]), ct, axis=axis,
                           mode="add"), None]


def _merge_batch_into_axis(x, axis, size):
    """(B, *s) -> s[:axis] + (B*s[axis],) + s[axis+1:] with B in front of ``axis``."""
    x = moveaxis(x, 0, axis)
    shape = get_aval(x).shape
    return reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])


def _offset_indices(idx, size, n):
    """Indices (B, ...) shifted by b*n so they address a B-merged axis of length B*n."""
    aval = get_aval(idx)
    offs = mul(broadcasted_iota(aval.dtype, aval.shape, 0), full(aval.shape, n, aval.dtype))
    return add(idx, offs)


def _take_batch(vals, dims, *, axis):
    (x, idx), (dx, di) = vals, dims
    if di is not_mapped:
        x = bdim_at_front(x, dx, None)
        return take_p.bind(x, idx, axis=axis + 1), 0
    if dx is not_mapped:
        return take_p.bind(x, moveaxis(idx, di, 0), axis=axis), axis
    size = get_aval(x).shape[dx]
    x = bdim_at_front(x, dx, size)
    n = get_aval(x).shape[axis + 1]
    idx = bdim_at_front(idx, di, size)
    merged = _merge_batch_into_axis(x, axis, size)
    return take_p.bind(merged, _offset_indices(_clip_index(idx, n), size, n), axis=axis), axis


def _clip_index(idx, n):
    aval = get_aval(idx)
    return max_(min_(idx, full(aval.shape, n - 1, aval.dtype)), full(aval.shape, 0, aval.dtype))


take_p.abstract_eval = _take_aval
take_p.jvp = lambda primals, tangents, *, axis: (
    take_p.bind(*primals, axis=axis),
    Zero(get_aval(take_p.bind(*primals, axis=axis))) if isinstance(tangents[0], Zero)
    else take_p.bind(tangents[0], primals[1], axis=axis))
take_p.transpose = _take_transpose
take_p.batch = _take_batch
take_p.is_linear = True


def take(x, idx, axis: int = 0):
    """``x`` indexed along ``axis`` by integer ``idx`` (indices outside [0, n) are clamped).

    >>> lax.take(jnp.array([10, 20, 30]), jnp.array([2, 0]))
    Array([30, 10], dtype=int32)
    """
    return take_p.bind(x, idx, axis=int(axis))


scatter_p = primitive("scatter")
_SCATTER_MODES = ("set", "add", "mul", "min", "max")


def _scatter_aval(x, idx, upd, *, axis, mode):
    if mode not in _SCATTER_MODES:
        raise ValueError(f"scatter mode must be one of {_SCATTER_MODES}")
    want = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if upd.shape != want:
        raise ShapeError(f"scatter updates have shape {_shp(upd.shape)}, expected "
                         f"{_shp(want)} for operand {_shp(x.shape)} and indices "
                         f"{_shp(idx.shape)}")
    if upd.dtype != x.dtype:
        raise DTypeError(f"scatter updates dtype {upd.dtype} differs from operand {x.dtype}")
    return x


def _scatter_jvp(primals, tangents, *, axis, mode):
    x, idx, upd = primals
    tx, _, tu = tangents
    out = scatter_p.bind(x, idx, upd, axis=axis, mode=mode)
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return out, Zero(get_aval(out))
    tx, tu = instantiate(tx), instantiate(tu)
    if mode in ("set", "add"):
        return out, scatter_p.bind(tx, idx, tu, axis=axis, mode=mode)
    if mode == "mul":
        t = scatter_p.bind(tx, idx, upd, axis=axis, mode="mul")
        others = _scatter_mul_others(x, idx, upd, axis)
        return out, scatter_p.bind(t, idx, mul(tu, mul(take(x, idx, axis), others)), axis=axis,
                                   mode="add")
    # min / max: the tangent of whichever value won, averaged over ties (as JAX does)
    x_aval, u_aval = get_aval(x), get_aval(upd)
    x_won = eq(x, out)
    u_won = eq(upd, take(out, idx, axis))
    kept = select(x_won, tx, zeros_like_aval(get_aval(tx)))
    t = scatter_p.bind(kept, idx, select(u_won, tu, zeros_like_aval(get_aval(tu))),
                       axis=axis, mode="add")
    ones_x, ones_u = full(x_aval.shape, 1, x_aval.dtype), full(u_aval.shape, 1, u_aval.dtype)
    count = scatter_p.bind(select(x_won, ones_x, zeros_like_aval(x_aval)), idx,
                           select(u_won, ones_u, zeros_like_aval(u_aval)), axis=axis, mode="add")
    return out, div(t, max_(count, ones_x))


def _scatter_mul_others(x, idx, upd, axis):
    """For each update, the product of the other updates that land on the same element (the
    derivative of a multiplicative scatter with repeated indices), without dividing by zero."""
    x_aval, u_aval = get_aval(x), get_aval(upd)
    zero_u, one_u = zeros_like_aval(u_aval), full(u_aval.shape, 1, u_aval.dtype)
    zero_x, one_x = zeros_like_aval(x_aval), full(x_aval.shape, 1, x_aval.dtype)
    nonzero = ne(upd, zero_u)
    safe = select(nonzero, upd, one_u)
    prod_nonzero = take(scatter_p.bind(one_x, idx, safe, axis=axis, mode="mul"), idx, axis)
    n_zeros = take(scatter_p.bind(zero_x, idx, select(nonzero, zero_u, one_u), axis=axis,
                                  mode="add"), idx, axis)
    return select(nonzero, select(eq(n_zeros, zero_u), div(prod_nonzero, safe), zero_u),
                  select(eq(n_zeros, one_u), prod_nonzero, zero_u))


def _scatter_set_winners(idx, n, upd_shape, axis):
    """Which updates of a ``set`` scatter onto an axis of length ``n`` land: the last of
    repeated indices, as in NumPy. A boolean mask of the updates' shape."""
    i_shape = get_aval(idx).shape
    size = int(np.prod(i_shape, dtype=np.int64))
    pos = iota(dtypes.int32, size)
    last = scatter_p.bind(full((n,), -1, dtypes.int32), reshape(idx, (size,)), pos, axis=0,
                          mode="max")
    won = eq(take(last, idx, 0), reshape(pos, i_shape))
    return broadcast_in_dim(won, upd_shape, tuple(range(axis, axis + len(i_shape))))


def _in_range_mask(idx, n, shape, axis):
    """Whether each index lies in [0, n), broadcast to ``shape`` (an update's: the index dims
    start at ``axis``)."""
    aval = get_aval(idx)
    ok = bitwise_and(ge(idx, full(aval.shape, 0, aval.dtype)),
                     lt(idx, full(aval.shape, n, aval.dtype)))
    return broadcast_in_dim(ok, shape, tuple(range(axis, axis + aval.ndim)))


def _scatter_transpose(ct, x, idx, upd, *, axis, mode):
    if mode == "add":
        ct_u = None
        if is_undefined(upd):      # a dropped update (index out of range) gets no cotangent
            ct_u = take(ct, idx, axis)
            ct_u = select(_in_range_mask(idx, get_aval(ct).shape[axis], get_aval(ct_u).shape,
                                         axis), ct_u, zeros_like_aval(get_aval(ct_u)))
        return [ct if is_undefined(x) else None, None, ct_u]
    if mode == "set":
        ct_x = None
        if is_undefined(x):
            zu = zeros_like_aval(upd.aval if is_undefined(upd) else get_aval(upd))
            ct_x = scatter_p.bind(ct, idx, zu, axis=axis, mode="set")
        ct_u = None
        if is_undefined(upd):
            ct_u = take(ct, idx, axis)
            won = _scatter_set_winners(idx, get_aval(ct).shape[axis], get_aval(ct_u).shape, axis)
            ct_u = select(won, ct_u, zeros_like_aval(get_aval(ct_u)))
        return [ct_x, None, ct_u]
    if mode == "mul":
        assert is_undefined(x) and not is_undefined(upd)
        return [scatter_p.bind(ct, idx, upd, axis=axis, mode="mul"), None, None]
    raise NotImplementedError(f"transpose of scatter mode {mode}")


def _scatter_batch(vals, dims, *, axis, mode):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    x, idx, upd = (bdim_at_front(v, d, size) for v, d in zip(vals, dims))
    n = get_aval(x).shape[axis + 1]
    merged = _merge_batch_into_axis(x, axis, size)
    # an index out of [0, n) stays out of the merged axis, so its update is still dropped
    i_aval = get_aval(idx)
    ok = bitwise_and(ge(idx, full(i_aval.shape, 0, i_aval.dtype)),
                     lt(idx, full(i_aval.shape, n, i_aval.dtype)))
    idx = select(ok, _offset_indices(idx, size, n), full(i_aval.shape, -1, i_aval.dtype))
    upd = _merge_batch_leading(upd, axis)
    out = scatter_p.bind(merged, idx, upd, axis=axis, mode=mode)
    shape = get_aval(out).shape
    out = reshape(out, shape[:axis] + (size, n) + shape[axis + 1:])
    return out, axis


def _merge_batch_leading(upd, axis):
    """updates (B, pre..., idx..., post...) -> pre + (B, idx...) + post."""
    return moveaxis(upd, 0, axis)


scatter_p.abstract_eval = _scatter_aval
scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
scatter_p.batch = _scatter_batch


def scatter(x, idx, updates, axis: int = 0, mode: str = "set"):
    """``x`` with ``updates`` written (``mode`` 'set') or combined ('add', 'mul', 'min',
    'max') along ``axis`` at integer ``idx``. An update whose index lies outside [0, n) is
    dropped, as XLA's scatter does (JAX's default mode)."""
    return scatter_p.bind(x, idx, updates, axis=int(axis), mode=mode)


def _is_static_int(s) -> bool:
    return isinstance(s, (int, np.integer)) or (
        isinstance(s, np.ndarray) and s.ndim == 0 and dtypes.is_int(s.dtype))


def _slice_starts(name, shape, starts, sizes, allow_negative):
    """The clamped starts: Python ints where ``starts`` are concrete, int32 scalars where
    traced."""
    if not isinstance(starts, (list, tuple)):
        aval = get_aval(starts)
        if aval.ndim != 1:
            raise ShapeError(f"{name} start indices must be a sequence or a 1-D array, got "
                             f"shape {_shp(aval.shape)}")
        starts = ([int(i) for i in starts] if isinstance(starts, np.ndarray) else
                  [reshape(slice(starts, (i,), (i + 1,)), ()) for i in range(aval.shape[0])])
    if len(starts) != len(shape) or len(sizes) != len(shape):
        raise ShapeError(f"{name} of an operand of shape {_shp(shape)} takes {len(shape)} start "
                         f"indices and sizes, got {len(starts)} start indices and sizes "
                         f"{_shp(sizes)}")
    if any(not 0 <= z <= n for z, n in zip(sizes, shape)):
        raise ShapeError(f"{name} sizes {_shp(sizes)} do not fit in an operand of shape "
                         f"{_shp(shape)}")
    negative = ([allow_negative] * len(shape) if isinstance(allow_negative, bool)
                else list(allow_negative))
    out = []
    for s, n, z, wrap in zip(starts, shape, sizes, negative):
        if _is_static_int(s):
            s = int(s)
            s = s + n if wrap and s < 0 else s
            out.append(min(max(s, 0), n - z))
            continue
        aval = get_aval(s)
        if aval.shape != () or not dtypes.is_int(aval.dtype):
            raise DTypeError(f"{name} start indices must be integer scalars, got {aval.dtype} "
                             f"of shape {_shp(aval.shape)}")
        s = convert_element_type(s, dtypes.int32)
        if wrap:
            s = select(lt(s, full((), 0, dtypes.int32)), add(s, full((), n, dtypes.int32)), s)
        out.append(max_(min_(s, full((), n - z, dtypes.int32)), full((), 0, dtypes.int32)))
    return out


def _offsets(start, shape, axis, dtype):
    """``start + i`` along ``axis`` of an array of ``shape``."""
    along = broadcasted_iota(dtype, shape, axis)
    if _is_static_int(start):
        return along if start == 0 else add(along, full(shape, start, dtype))
    return add(along, broadcast_in_dim(convert_element_type(start, dtype), shape, ()))


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The ``slice_sizes`` block of ``operand`` at ``start_indices``, which may be traced.

    >>> lax.dynamic_slice(jnp.arange(10), (jnp.array(8),), (3,))   # x[i:i + 3], i clamped to [0, 7]
    Array([7, 8, 9], dtype=int32)
    """
    shape = get_aval(operand).shape
    sizes = tuple(int(z) for z in slice_sizes)
    starts = _slice_starts("dynamic_slice", shape, start_indices, sizes,
                           allow_negative_indices)
    x = operand
    for axis, (s, z) in enumerate(zip(starts, sizes)):
        if not _is_static_int(s):
            x = take(x, _offsets(s, (z,), 0, dtypes.int32), axis)
        elif (s, z) != (0, shape[axis]):
            x = slice_in_dim(x, s, s + z, axis=axis)
    return x


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at ``start_indices``, which may be traced.

    >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (jnp.array(1),))
    Array([0., 1., 1., 0., 0.], dtype=float32)
    """
    x, u = get_aval(operand), get_aval(update)
    if u.ndim != x.ndim:
        raise ShapeError(f"dynamic_update_slice update of shape {_shp(u.shape)} has a rank "
                         f"other than its operand's {_shp(x.shape)}")
    if u.dtype != x.dtype:
        raise DTypeError(f"dynamic_update_slice update dtype {u.dtype} differs from its "
                         f"operand's {x.dtype}")
    starts = _slice_starts("dynamic_update_slice", x.shape, start_indices, u.shape,
                           allow_negative_indices)
    if x.ndim == 0:
        return update
    # the update's flat positions in the operand: unique, so a "set" scatter is exact
    index = dtypes.int32 if math.prod(x.shape) < 2 ** 31 else dtypes.int64
    positions, stride = None, 1
    for axis in reversed(range(x.ndim)):
        term = _offsets(starts[axis], u.shape, axis, index)
        if stride != 1:
            term = mul(term, full(u.shape, stride, index))
        positions = term if positions is None else add(positions, term)
        stride *= x.shape[axis]
    n = math.prod(u.shape)
    flat = scatter(reshape(operand, (math.prod(x.shape),)), reshape(positions, (n,)),
                   reshape(update, (n,)), 0, "set")
    return reshape(flat, x.shape)


def _in_dim(operand, axis, start, size):
    """Starts and sizes selecting ``size`` at ``start`` along ``axis`` and all of the rest."""
    shape = get_aval(operand).shape
    axis = int(axis) % max(len(shape), 1)
    starts, sizes = [0] * len(shape), list(shape)
    starts[axis], sizes[axis] = start, size
    return axis, starts, sizes


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
    """``dynamic_slice`` along one ``axis``: ``slice_size`` entries from ``start_index``.

    >>> lax.dynamic_slice_in_dim(jnp.arange(5), 1, 3)
    Array([1, 2, 3], dtype=int32)
    """
    _, starts, sizes = _in_dim(operand, axis, start_index, slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                         allow_negative_indices=True):
    """Entry ``index`` of ``operand`` along ``axis`` (kept as a size-1 axis with keepdims).

    >>> lax.dynamic_index_in_dim(jnp.arange(6).reshape(2, 3), 1, axis=1)
    Array([[1],
           [4]], dtype=int32)
    """
    axis, starts, sizes = _in_dim(operand, axis, index, 1)
    out = dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    """``dynamic_update_slice`` along one ``axis``, at ``start_index``.

    >>> lax.dynamic_update_slice_in_dim(jnp.zeros(4), jnp.ones(2), 1, axis=0)
    Array([0., 1., 1., 0.], dtype=float32)
    """
    _, starts, _ = _in_dim(operand, axis, start_index, 0)
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *,
                                allow_negative_indices=True):
    """``operand`` with entry ``index`` along ``axis`` replaced by ``update`` (which may lack
    that axis).

    >>> lax.dynamic_update_index_in_dim(jnp.zeros((2, 2)), jnp.ones(2), 1, axis=0)
    Array([[0., 0.],
           [1., 1.]], dtype=float32)
    """
    axis, starts, _ = _in_dim(operand, axis, index, 1)
    if get_aval(update).ndim == get_aval(operand).ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


take_along_axis_p = primitive("take_along_axis")


def _take_along_axis_aval(x, idx, *, axis):
    if not dtypes.is_int(idx.dtype):
        raise DTypeError(f"indices must be integers, got {idx.dtype}")
    if idx.ndim != x.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, idx.shape))
                                 if i != axis):
        raise ShapeError(f"take_along_axis: indices of shape {_shp(idx.shape)} do not match "
                         f"the array's shape {_shp(x.shape)} outside axis {axis}")
    return ShapedArray(idx.shape, x.dtype, x.weak_type)


def _take_along_axis_transpose(ct, x, idx, *, axis):
    shape, n = x.aval.shape, x.aval.shape[axis]
    if get_aval(idx).shape[axis] == 1:
        # one pick per line: the cotangent lands where the index points, a comparison with an
        # iota (elementwise, so it fuses with what follows instead of a scatter into zeros)
        dims = tuple(range(len(shape)))
        hit = eq(broadcasted_iota(get_aval(idx).dtype, shape, axis),
                 broadcast_in_dim(_clip_index(idx, n), shape, dims))
        spread = broadcast_in_dim(ct, shape, dims)
        return [select_n(hit, full(shape, 0, x.aval.dtype), spread), None]
    lin = _flat_line_indices(idx, axis, n)
    flat = scatter_p.bind(zeros_like_aval(ShapedArray((math.prod(shape),), x.aval.dtype)),
                          lin, moveaxis(ct, axis, -1), axis=0, mode="add")
    moved = tuple(d for i, d in enumerate(shape) if i != axis) + (n,)
    return [moveaxis(reshape(flat, moved), -1, axis), None]


def _flat_line_indices(idx, axis, n):
    """Indices into the array flattened with ``axis`` last, one line of length n per index row."""
    it = moveaxis(idx, axis, -1)
    ishape = get_aval(it).shape
    dt = get_aval(idx).dtype
    rows = math.prod(ishape[:-1])
    row_ids = reshape(broadcasted_iota(dt, (rows, ishape[-1]), 0), ishape)
    return add(mul(row_ids, full(ishape, n, dt)), _clip_index(it, n))


def _take_along_axis_batch(vals, dims, *, axis):
    (x, idx), (dx, di) = vals, dims
    size = get_aval(x).shape[dx] if dx is not not_mapped else get_aval(idx).shape[di]
    x = bdim_at_front(x, dx, size)
    idx = bdim_at_front(idx, di, size)
    return take_along_axis_p.bind(x, idx, axis=axis + 1), 0


take_along_axis_p.abstract_eval = _take_along_axis_aval
take_along_axis_p.jvp = lambda primals, tangents, *, axis: (
    take_along_axis_p.bind(*primals, axis=axis),
    Zero(take_along_axis_p.abstract_eval(get_aval(primals[0]), get_aval(primals[1]),
                                         axis=axis))
    if isinstance(tangents[0], Zero) else take_along_axis_p.bind(tangents[0], primals[1],
                                                                 axis=axis))
take_along_axis_p.transpose = _take_along_axis_transpose
take_along_axis_p.batch = _take_along_axis_batch
take_along_axis_p.is_linear = True


def take_along_axis(x, idx, axis: int):
    """``x[..., idx, ...]`` along ``axis`` with ``idx`` of the same rank as ``x`` and the same
    shape outside ``axis`` (indices are clamped into range).

    >>> lax.take_along_axis(jnp.array([[3, 1], [2, 4]]), jnp.array([[1], [0]]), axis=1)
    Array([[1],
           [2]], dtype=int32)
    """
    return take_along_axis_p.bind(x, idx, axis=axis)

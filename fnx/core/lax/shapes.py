"""Shape and data-movement primitives: ``rev``, ``slice``, ``pad``, ``concatenate``, ``iota`` and
small shape helpers (``broadcast_in_dim``, ``reshape`` and ``transpose`` live in base.py).
"""
from __future__ import annotations

from .. import dtypes
from ..ad_util import deflinear, is_undefined, zero_jvp, zeros_like_aval
from ..core import ShapedArray, get_aval
from ..errors import DTypeError, ShapeError
from .base import _shp, bdim_at_front, full, not_mapped, primitive, reduce_sum, reshape
from .elementwise import sub


rev_p = primitive("rev")
rev_p.abstract_eval = lambda x, *, dimensions: x
deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
rev_p.batch = lambda vals, dims, *, dimensions: (
    rev_p.bind(bdim_at_front(vals[0], dims[0], None),
               dimensions=tuple(d + 1 for d in dimensions)), 0)


def rev(x, dimensions):
    """``x`` reversed along each of ``dimensions``.

    >>> lax.rev(jnp.array([[1, 2], [3, 4]]), (1,))
    Array([[2, 1],
           [4, 3]], dtype=int32)
    """
    dimensions = tuple(int(d) for d in dimensions)
    return rev_p.bind(x, dimensions=dimensions) if dimensions else x


slice_p = primitive("slice")


def _slice_aval(x, *, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise ShapeError(f"slice of an array of shape {_shp(x.shape)} needs {x.ndim} indices")
    shape = []
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not 0 <= s <= l <= d or st < 1:
            raise ShapeError(f"slice [{s}:{l}:{st}] out of range for axis of size {d}")
        shape.append(max(0, -(-(l - s) // st)))
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    in_shape = x.aval.shape
    out_shape = get_aval(ct).shape
    config = []
    for s, st, n, o in zip(start_indices, strides, in_shape, out_shape):
        hi = n - (s + (o - 1) * st + 1) if o else n - s
        config.append((s, hi, st - 1 if o else 0))
    return [pad(ct, full((), 0, get_aval(ct).dtype), config)]


def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
    x = bdim_at_front(vals[0], dims[0], None)
    n = get_aval(x).shape[0]
    return slice_p.bind(x, start_indices=(0,) + tuple(start_indices),
                        limit_indices=(n,) + tuple(limit_indices),
                        strides=(1,) + tuple(strides)), 0


slice_p.abstract_eval = _slice_aval
# unit strides print as JAX keeps them, None
slice_p.pp_params = lambda params: {**params, "strides": None} \
    if all(s == 1 for s in params["strides"]) else params
deflinear(slice_p, _slice_transpose)
slice_p.batch = _slice_batch


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001 - lax's name
    """The static slice ``x[start:limit:stride]`` along every axis.

    >>> lax.slice(jnp.arange(10), (1,), (7,), (2,))
    Array([1, 3, 5], dtype=int32)
    """
    strides = tuple(strides) if strides is not None else (1,) * len(start_indices)
    return slice_p.bind(x, start_indices=tuple(map(int, start_indices)),
                        limit_indices=tuple(map(int, limit_indices)),
                        strides=tuple(map(int, strides)))


def slice_in_dim(x, start, limit, stride=1, axis=0):
    """The static slice ``start:limit:stride`` along ``axis`` alone.

    >>> lax.slice_in_dim(jnp.arange(6).reshape(2, 3), 1, 3, axis=1)
    Array([[1, 2],
           [4, 5]], dtype=int32)
    """
    shape = get_aval(x).shape
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, stride
    return slice(x, starts, limits, strides)


pad_p = primitive("pad")


def _pad_aval(x, padding_value, *, padding_config):
    if padding_value.shape != () or padding_value.dtype != x.dtype:
        raise DTypeError(f"pad value must be a scalar of dtype {x.dtype}")
    shape = []
    for (lo, hi, interior), d in zip(padding_config, x.shape):
        if lo < 0 or hi < 0 or interior < 0:
            raise ShapeError("pad supports non-negative padding only")
        shape.append(lo + hi + d + max(0, d - 1) * interior)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _pad_transpose(ct, x, padding_value, *, padding_config):
    out_shape = get_aval(ct).shape
    starts = [lo for lo, _, _ in padding_config]
    limits = [n - hi for n, (_, hi, _) in zip(out_shape, padding_config)]
    strides = [i + 1 for _, _, i in padding_config]
    ct_x = slice(ct, starts, limits, strides) if is_undefined(x) else None
    ct_v = None
    if is_undefined(padding_value):
        total = reduce_sum(ct, tuple(range(len(out_shape))))
        inner = reduce_sum(slice(ct, starts, limits, strides), tuple(range(len(out_shape))))
        ct_v = sub(total, inner)
    return [ct_x, ct_v]


def _pad_batch(vals, dims, *, padding_config):
    (x, v), (dx, dv) = vals, dims
    if dv is not not_mapped:
        raise NotImplementedError("vmap of pad with a batched padding value")
    x = bdim_at_front(x, dx, None)
    return pad_p.bind(x, v, padding_config=((0, 0, 0),) + tuple(padding_config)), 0


pad_p.abstract_eval = _pad_aval
deflinear(pad_p, _pad_transpose)
pad_p.batch = _pad_batch


def pad(x, padding_value, padding_config):
    """``x`` padded with ``padding_value``: ``(low, high, interior)`` per axis (negative
    ``low``/``high`` cut elements off).

    >>> lax.pad(jnp.array([1, 2]), 0, [(1, 2, 1)])
    Array([0, 1, 0, 2, 0, 0], dtype=int32)
    >>> lax.pad(jnp.array([1, 2, 3]), 0, [(-1, 1, 0)])
    Array([2, 3, 0], dtype=int32)
    """
    cfg = tuple((int(a), int(b), int(c)) for a, b, c in padding_config)
    if all(lo >= 0 and hi >= 0 for lo, hi, _ in cfg):
        return pad_p.bind(x, padding_value, padding_config=cfg)
    # negative edges: pad the non-negative part, then cut, so the primitive stays simple
    padded = pad_p.bind(x, padding_value,
                        padding_config=tuple((max(lo, 0), max(hi, 0), i) for lo, hi, i in cfg))
    shape = get_aval(padded).shape
    starts = [max(-lo, 0) for lo, _, _ in cfg]
    limits = [n - max(-hi, 0) for n, (_, hi, _) in zip(shape, cfg)]
    if any(stop < start for start, stop in zip(starts, limits)):
        raise ShapeError(f"pad of shape {_shp(get_aval(x).shape)} with {cfg} cuts more elements "
                         f"than there are")
    return slice(padded, starts, limits)


concatenate_p = primitive("concatenate")


def _concatenate_aval(*xs, dimension):
    x0 = xs[0]
    for x in xs[1:]:
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise ShapeError(f"concatenate along axis {dimension}: shapes "
                             f"{', '.join(_shp(x.shape) for x in xs)} do not fit")
        if x.dtype != x0.dtype:
            raise DTypeError(f"concatenate got dtypes {x0.dtype} and {x.dtype}")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), x0.dtype, all(x.weak_type for x in xs))


def _concatenate_transpose(ct, *xs, dimension):
    outs, start = [], 0
    for x in xs:
        n = x.aval.shape[dimension] if is_undefined(x) else get_aval(x).shape[dimension]
        outs.append(slice_in_dim(ct, start, start + n, 1, dimension) if is_undefined(x) else None)
        start += n
    return outs


def _concatenate_batch(vals, dims, *, dimension):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    xs = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    return concatenate_p.bind(*xs, dimension=dimension + 1), 0


concatenate_p.abstract_eval = _concatenate_aval
deflinear(concatenate_p, _concatenate_transpose)
concatenate_p.batch = _concatenate_batch


def concatenate(xs, dimension: int):
    """The arrays joined along ``dimension`` (same dtype; other axes equal).

    >>> lax.concatenate([jnp.array([1, 2]), jnp.array([3])], 0)
    Array([1, 2, 3], dtype=int32)
    """
    if len(xs) == 1:
        return xs[0]
    return concatenate_p.bind(*xs, dimension=int(dimension))


iota_p = primitive("iota")


def _iota_aval(*, dtype, shape, dimension):
    return ShapedArray(shape, dtype)


iota_p.abstract_eval = _iota_aval
zero_jvp(iota_p)


def iota(dtype, size: int):
    """``0, 1, ..., size - 1`` as a 1-d array of ``dtype``.

    >>> lax.iota(jnp.int32, 4)
    Array([0, 1, 2, 3], dtype=int32)
    """
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape, dimension):
    """An array of ``shape`` holding each element's index along ``dimension``.

    >>> lax.broadcasted_iota(jnp.int32, (2, 3), 1)
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=tuple(shape),
                       dimension=int(dimension))


def expand_dims(x, dimensions):
    """``x`` with axes of size 1 inserted at ``dimensions``.

    >>> lax.expand_dims(jnp.array([1, 2]), (0,)).shape
    (1, 2)
    """
    shape = list(get_aval(x).shape)
    ndim = len(shape) + len(dimensions)     # negative dimensions count in the result, as JAX's
    for d in sorted(int(d) % ndim if -ndim <= int(d) < ndim else int(d) for d in dimensions):
        shape.insert(d, 1)
    return reshape(x, shape)


def squeeze(x, dimensions):
    """``x`` without its axes ``dimensions`` (each of size 1).

    >>> lax.squeeze(jnp.ones((1, 3, 1)), (0, 2)).shape
    (3,)
    """
    shape = get_aval(x).shape
    return reshape(x, tuple(d for i, d in enumerate(shape) if i not in dimensions))


def zeros_like(x):
    """Zeros of ``x``'s shape and dtype.

    >>> lax.zeros_like(jnp.array([1, 2]))
    Array([0, 0], dtype=int32)
    """
    return zeros_like_aval(get_aval(x))

"""The primitives every other primitive's rules are written with: the registry of primitives,
``convert_element_type``, ``broadcast_in_dim`` (and ``full``), ``reshape``, ``transpose`` and
``reduce_sum`` with the reduction helpers, and the helpers that move batch axes. Their rules use
only each other, so every other kind of primitive (and fnx.core.batching) stands on this module.
"""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..ad_util import Zero, deflinear
from ..core import Primitive, ShapedArray, get_aval, shape_str
from ..errors import BatchingError, DTypeError, ShapeError


_all_primitives: list[Primitive] = []


def primitive(name: str, multiple_results: bool = False) -> Primitive:
    p = Primitive(name, multiple_results)
    _all_primitives.append(p)
    return p


def all_primitives() -> list[Primitive]:
    """Every primitive fnx defines (the backend-coverage test walks this list)."""
    return list(_all_primitives)


def _shp(s):
    return shape_str(s)


_FLOAT, _INT, _BOOL = "fc", "iu", "b"


convert_element_type_p = primitive("convert_element_type")


def _convert_aval(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if isinstance(t, Zero) or not dtypes.is_float(new_dtype) \
            or not dtypes.is_float(get_aval(x).dtype):
        return out, Zero(get_aval(out))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    aval = x.aval
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


convert_element_type_p.abstract_eval = _convert_aval
convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
convert_element_type_p.batch = lambda vals, dims, **p: (convert_element_type_p.bind(vals[0], **p),
                                                        dims[0])
convert_element_type_p.is_linear = True
convert_element_type_p.folds_constants = True   # a constant converted is a literal (partial_eval)


def exact_scalar(x, dtype):
    """A Python number as a NumPy scalar of ``dtype``, converted once from the exact value (not
    through the weak float32 it would otherwise become first)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        d = np.dtype(dtype)
        if isinstance(x, int) and d.kind in "iu" and not \
                np.iinfo(d).min <= x <= np.iinfo(d).max and -2**63 <= x < 2**63:
            # a weak integer converts as an int64 would: modulo 2**bits (uint8 and -3 give
            # 253), as in JAX
            return np.asarray(x, np.int64).astype(d)[()]
        with np.errstate(over="ignore"):    # float16(70000) is inf, without a warning (XLA's)
            return d.type(x)
    return x


def convert_element_type(x, dtype, weak_type: bool = False):
    """``x`` converted to ``dtype`` (floats to integers round toward zero).

    >>> lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32)
    Array([ 1, -1], dtype=int32)
    """
    dtype = dtypes.canonical(dtype)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type and not isinstance(x, (int, float, bool)):
        return x
    return convert_element_type_p.bind(exact_scalar(x, dtype), new_dtype=dtype,
                                       weak_type=weak_type)


broadcast_in_dim_p = primitive("broadcast_in_dim")


def _broadcast_in_dim_aval(x, *, shape, broadcast_dimensions):
    if any(d < 0 for d in shape):
        raise ShapeError(f"broadcast_in_dim: shape {_shp(shape)} has a negative dimension")
    if len(broadcast_dimensions) != x.ndim:
        raise ShapeError(f"broadcast_in_dim: operand of shape {_shp(x.shape)} needs "
                         f"{x.ndim} broadcast_dimensions, got {broadcast_dimensions}")
    for d, od in zip(x.shape, broadcast_dimensions):
        if od >= len(shape) or d not in (1, shape[od]):
            raise ShapeError(f"cannot broadcast shape {_shp(x.shape)} to {_shp(shape)} "
                             f"(broadcast_dimensions={broadcast_dimensions})")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    new_dims = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(od for d, od in zip(in_shape, broadcast_dimensions)
                     if d == 1 and shape[od] != 1)
    summed = reduce_sum(ct, new_dims + expanded) if new_dims + expanded else ct
    return [reshape(summed, in_shape)]


def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = bdim_at_front(x, d, None)
    size = get_aval(x).shape[0]
    return broadcast_in_dim_p.bind(
        x, shape=(size,) + tuple(shape),
        broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_aval
deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
broadcast_in_dim_p.batch = _broadcast_in_dim_batch
# printed as JAX prints it: the shape is the result's type; no dimensions, no parameter
broadcast_in_dim_p.pp_params = lambda params: (
    {"broadcast_dimensions": params["broadcast_dimensions"]}
    if params["broadcast_dimensions"] else {})


def broadcast_in_dim(x, shape, broadcast_dimensions):
    """``x`` broadcast to ``shape``; ``x``'s axis ``i`` becomes axis
    ``broadcast_dimensions[i]`` of the result.

    >>> lax.broadcast_in_dim(jnp.array([1, 2]), (3, 2), (1,))
    Array([[1, 2],
           [1, 2],
           [1, 2]], dtype=int32)
    """
    shape, bd = tuple(int(s) for s in shape), tuple(int(b) for b in broadcast_dimensions)
    aval = get_aval(x)
    if aval.shape == shape and bd == tuple(range(len(shape))) \
            and not isinstance(x, (int, float, bool, complex)):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bd)


def full(shape, value, dtype=None, weak_type: bool | None = None):
    """An array of ``shape`` filled with ``value``.

    >>> lax.full((2,), 7, jnp.int32)
    Array([7, 7], dtype=int32)
    """
    if dtype is None:
        aval = get_aval(value)
        dtype, weak = aval.dtype, aval.weak_type if weak_type is None else weak_type
    else:
        dtype, weak = dtypes.canonical(dtype), bool(weak_type)
    scalar = convert_element_type_p.bind(exact_scalar(value, dtype), new_dtype=dtype,
                                         weak_type=weak)
    if tuple(shape) == ():
        return scalar
    return broadcast_in_dim_p.bind(scalar, shape=tuple(int(s) for s in shape),
                                   broadcast_dimensions=())


reshape_p = primitive("reshape")


def _reshape_aval(x, *, new_sizes):
    if math.prod(new_sizes) != x.size:
        raise ShapeError(f"cannot reshape array of shape {_shp(x.shape)} (size {x.size}) "
                         f"into shape {_shp(new_sizes)} (size {math.prod(new_sizes)})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_batch(vals, dims, *, new_sizes):
    x = bdim_at_front(vals[0], dims[0], None)
    return reshape_p.bind(x, new_sizes=(get_aval(x).shape[0],) + tuple(new_sizes)), 0


reshape_p.abstract_eval = _reshape_aval
deflinear(reshape_p, lambda ct, x, *, new_sizes: [reshape(ct, x.aval.shape)])
reshape_p.batch = _reshape_batch


def reshape(x, new_sizes):
    """``x`` with the same elements in ``new_sizes`` (row-major order).

    >>> lax.reshape(jnp.arange(6), (2, 3))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    """
    new_sizes = tuple(int(s) for s in new_sizes)
    if get_aval(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


transpose_p = primitive("transpose")


def _transpose_aval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(f"transpose permutation {permutation} is not a permutation of the "
                         f"axes of an array of shape {_shp(x.shape)}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_transpose(ct, x, *, permutation):
    return [transpose(ct, tuple(np.argsort(permutation)))]


def _transpose_batch(vals, dims, *, permutation):
    # one transpose that also brings the batch axis to the front, not a moveaxis before it
    (x,), (d,) = vals, dims
    return transpose(x, (d,) + axes_past_batch(permutation, d)), 0


transpose_p.abstract_eval = _transpose_aval
deflinear(transpose_p, _transpose_transpose)
transpose_p.batch = _transpose_batch


def transpose(x, permutation):
    """``x``'s axes permuted: axis ``i`` of the result is axis ``permutation[i]`` of ``x``.

    >>> lax.transpose(jnp.ones((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return transpose_p.bind(x, permutation=permutation)


def moveaxis(x, src: int, dst: int):
    """``x`` with axis ``src`` moved to position ``dst``.

    >>> lax.moveaxis(jnp.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    n = get_aval(x).ndim
    src, dst = src % n, dst % n
    perm = [i for i in range(n) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def _reduce_aval(name, kinds=_FLOAT + _INT + _BOOL, out_dtype=None):
    def rule(x, *, axes):
        for a in axes:
            if not 0 <= a < x.ndim:
                raise ShapeError(f"{name}: axis {a} out of range for shape {_shp(x.shape)}")
        if dtypes.kind(x.dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {x.dtype}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, out_dtype or x.dtype, x.weak_type)
    return rule


def _reduce_batch(prim):
    # a per-example reduction reduces the non-batch axes where they are (no moveaxis first)
    def rule(vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        axes = axes_past_batch(axes, d)
        return prim.bind(x, axes=axes, **params), batch_axis_after_removing(d, axes)
    return rule


def reduction(name, kinds=_FLOAT + _INT + _BOOL, out_dtype=None):
    p = primitive(name)
    p.abstract_eval = _reduce_aval(name, kinds, out_dtype)
    p.batch = _reduce_batch(p)
    return p


reduce_sum_p = reduction("reduce_sum", _FLOAT + _INT)


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


deflinear(reduce_sum_p, _reduce_sum_transpose)
# JAX's reduce_sum also takes the sharding of its result; fnx places results where jit says
reduce_sum_p.pp_params = lambda params: {**params, "out_sharding": None}


def reduce_sum(x, axes):
    """The sum over ``axes``.

    >>> lax.reduce_sum(jnp.array([[1, 2], [3, 4]]), (0,))
    Array([4, 6], dtype=int32)
    """
    return reduce_sum_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


# ---------------------------------------------------------------------------------------------
# Batch axes: the helpers every vmap rule (and fnx.core.batching) moves them with

not_mapped = None


def move_batch_axis(axis_size, src, dst, x):
    """Move ``x``'s batch axis from ``src`` to ``dst`` (broadcasting when ``src`` is None)."""
    if dst is not_mapped:
        if src is not_mapped:
            return x
        raise BatchingError("vmap out_axes=None, but the output depends on the mapped axis")
    if src is not_mapped:
        return broadcast_batch(x, axis_size, dst)
    return moveaxis(x, src, dst) if src != dst else x


def broadcast_batch(x, size, axis):
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(i for i in range(len(shape)) if i != axis)
    return broadcast_in_dim(x, tuple(shape), dims)


def axes_past_batch(axes, bdim):
    """Per-example ``axes`` as axes of the batched value, whose batch axis is ``bdim``."""
    return tuple(int(a) + (a >= bdim) for a in axes)


def batch_axis_after_removing(bdim, axes):
    """Where batch axis ``bdim`` lands once ``axes`` (other axes) are removed."""
    return bdim - sum(a < bdim for a in axes)


def bdim_at_front(x, bdim, size):
    """``x`` with its batch axis first, materialising it when unbatched."""
    if bdim is not_mapped:
        return broadcast_batch(x, size, 0)
    return moveaxis(x, bdim, 0) if bdim != 0 else x

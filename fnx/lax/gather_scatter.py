"""jax.lax's general ``gather`` and the ``scatter_*`` family, with XLA's dimension numbers.

Each is one flat ``take`` or one flat ``scatter`` of the operand: the dimension numbers turn into
linear indices over the flattened operand, so grad, vmap and jit follow from those primitives'
rules and no new primitive is needed.

>>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
...                                 start_index_map=(0,))
>>> lax.gather(jnp.arange(6.0).reshape(3, 2), jnp.array([[2], [0]]), dn, (1, 2))
Array([[4., 5.],
       [0., 1.]], dtype=float32)
"""
from __future__ import annotations

import math

import numpy as np

from ..core import lax
from ..core.core import get_aval
from ..core.errors import ShapeError
from .types import GatherScatterMode, ScatterDimensionNumbers


def _index_dtype(shape):
    return np.int64 if math.prod(shape) >= 2 ** 31 else np.int32


def _window_index(start, offset_axis, window, out_shape, start_axes, dtype):
    """start (over ``start_axes`` of ``out_shape``) plus the window offset running along
    ``offset_axis`` (None: no window along this operand axis)."""
    idx = lax.broadcast_in_dim(start, out_shape, start_axes)
    if offset_axis is None:
        return idx
    return idx + lax.broadcast_in_dim(lax.iota(dtype, window), out_shape, (offset_axis,))


def _starts(indices, operand_shape, index_map, batching, windows, clip, dtype):
    """Per operand axis: the (clamped) window start over the index batch shape, and whether every
    window lies inside the operand (None when clamping)."""
    batch_shape = indices.shape[:-1]
    starts, inside = [], None
    for d, n in enumerate(operand_shape):
        if d in index_map:
            s = lax.convert_element_type(indices[..., index_map.index(d)], dtype)
        elif d in batching:
            axis = batching[d]
            s = lax.broadcast_in_dim(lax.iota(dtype, batch_shape[axis]), batch_shape, (axis,))
        else:
            s = lax.full(batch_shape, 0, dtype)
        hi = n - windows[d]
        if not clip:
            ok = (s >= 0) & (s <= hi)
            inside = ok if inside is None else inside & ok
        starts.append(lax.clamp(lax.full((), 0, dtype), s, lax.full((), max(hi, 0), dtype)))
    return starts, inside


def _linear(parts, shape, dtype):
    """Row-major linear index of per-axis indices over ``shape``."""
    out = None
    for idx, stride in zip(parts, np.cumprod((1,) + tuple(shape[::-1]))[-2::-1]):
        term = idx * lax.full((), int(stride), dtype)
        out = term if out is None else out + term
    return out


def _mode(mode):
    m = GatherScatterMode.from_any(mode)
    if m is GatherScatterMode.ONE_HOT:
        raise NotImplementedError("gather/scatter mode ONE_HOT is not supported by fnx")
    return m


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """XLA's gather: slices of ``slice_sizes`` from ``operand`` starting where the last axis of
    ``start_indices`` says. Out-of-bounds windows are clamped into the operand (modes 'clip' and
    'promise_in_bounds'; JAX's default) or filled with ``fill_value`` (NaN for floats; mode
    'fill').

    >>> dn = lax.GatherDimensionNumbers((), (0,), (0,))
    >>> lax.gather(jnp.array([10, 20, 30]), jnp.array([[2], [5]]), dn, (1,))
    Array([30, 30], dtype=int32)
    >>> lax.gather(jnp.array([10, 20, 30]), jnp.array([[2], [5]]), dn, (1,), mode="fill",
    ...            fill_value=-1)
    Array([30, -1], dtype=int32)
    """
    dn = dimension_numbers
    x, idx = get_aval(operand), get_aval(start_indices)
    shape, slice_sizes = tuple(x.shape), tuple(int(s) for s in slice_sizes)
    if len(slice_sizes) != len(shape) or len(dn.start_index_map) != idx.shape[-1]:
        raise ShapeError(f"gather of operand {shape} with indices {tuple(idx.shape)}: "
                         f"slice_sizes {slice_sizes} and start_index_map {dn.start_index_map} "
                         f"do not fit")
    # JAX's lax.gather promises in-bounds indices unless told otherwise: XLA clamps them
    m = _mode(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    dtype = _index_dtype(shape)
    batching = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    starts, inside = _starts(start_indices, shape, tuple(dn.start_index_map), batching,
                             slice_sizes, m is not GatherScatterMode.FILL_OR_DROP, dtype)
    nb = len(idx.shape) - 1
    full_shape = tuple(idx.shape[:-1]) + slice_sizes
    parts = [_window_index(s, nb + d, slice_sizes[d], full_shape, tuple(range(nb)), dtype)
             for d, s in enumerate(starts)]
    out = lax.take(lax.reshape(operand, (math.prod(shape),)), _linear(parts, shape, dtype))
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    kept = [nb + d for d in range(len(shape)) if d not in dropped]
    out = lax.reshape(out, tuple(idx.shape[:-1]) + tuple(full_shape[a] for a in kept))
    batch_axes = iter(range(nb))
    perm = [nb + list(dn.offset_dims).index(p) if p in dn.offset_dims else next(batch_axes)
            for p in range(nb + len(kept))]
    out = lax.transpose(out, perm)
    if inside is not None:
        if fill_value is None:
            fill_value = np.nan if np.issubdtype(x.dtype, np.inexact) else (
                np.iinfo(x.dtype).min if np.issubdtype(x.dtype, np.signedinteger) else (
                    np.iinfo(x.dtype).max if np.issubdtype(x.dtype, np.integer) else True))
        keep = lax.broadcast_in_dim(inside, out.shape, tuple(perm.index(a) for a in range(nb)))
        out = lax.select(keep, out, lax.full(out.shape, fill_value, x.dtype))
    return out


def _scatter(operand, scatter_indices, updates, dn, mode, how):
    x, idx, upd = get_aval(operand), get_aval(scatter_indices), get_aval(updates)
    shape = tuple(x.shape)
    m = _mode(mode)
    dtype = _index_dtype(shape)
    window_dims = list(dn.update_window_dims)
    scatter_axes = tuple(a for a in range(len(upd.shape)) if a not in window_dims)
    skipped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window_of = dict(zip([d for d in range(len(shape)) if d not in skipped], window_dims))
    if len(window_of) != len(window_dims) or len(scatter_axes) != len(idx.shape) - 1:
        raise ShapeError(f"scatter of operand {shape} with indices {tuple(idx.shape)} and "
                         f"updates {tuple(upd.shape)}: dimension numbers {dn} do not fit")
    windows = [upd.shape[window_of[d]] if d in window_of else 1 for d in range(len(shape))]
    batching = dict(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
    # XLA's scatter skips an out-of-bounds window, so a promise broken drops it as 'drop' does
    starts, inside = _starts(scatter_indices, shape, tuple(dn.scatter_dims_to_operand_dims),
                             batching, windows, m is GatherScatterMode.CLIP, dtype)
    parts = [_window_index(s, window_of.get(d), windows[d], tuple(upd.shape), scatter_axes,
                           dtype) for d, s in enumerate(starts)]
    flat = _linear(parts, shape, dtype)
    size = math.prod(shape)
    if inside is not None:      # an index past the end is dropped by the scatter primitive
        keep = lax.broadcast_in_dim(inside, tuple(upd.shape), scatter_axes)
        flat = lax.select(keep, flat, lax.full(flat.shape, size, dtype))
    n = math.prod(upd.shape)
    out = lax.scatter(lax.reshape(operand, (size,)), lax.reshape(flat, (n,)),
                      lax.reshape(lax.convert_element_type(updates, x.dtype), (n,)), 0, how)
    return lax.reshape(out, shape)


def _scatter_fn(how, doc):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        return _scatter(operand, scatter_indices, updates, dimension_numbers, mode, how)
    fn.__doc__ = doc
    return fn


_DN = ">>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))\n    "
scatter_add = _scatter_fn("add", f"""XLA's scatter, adding ``updates`` into ``operand``
    (repeated indices accumulate; out-of-bounds windows are dropped unless mode is 'clip').

    {_DN}>>> lax.scatter_add(jnp.zeros(3), jnp.array([[1], [1]]), jnp.ones(2), dn)
    Array([0., 2., 0.], dtype=float32)
    """)
scatter_mul = _scatter_fn("mul", f"""XLA's scatter, multiplying ``operand`` by ``updates``.

    {_DN}>>> lax.scatter_mul(jnp.ones(3), jnp.array([[0], [2]]), jnp.array([2.0, 3.0]), dn)
    Array([2., 1., 3.], dtype=float32)
    """)
scatter_min = _scatter_fn("min", f"""XLA's scatter, keeping the minimum of ``operand`` and
    ``updates``.

    {_DN}>>> lax.scatter_min(jnp.ones(3), jnp.array([[0], [2]]), jnp.array([0.0, 3.0]), dn)
    Array([0., 1., 1.], dtype=float32)
    """)
scatter_max = _scatter_fn("max", f"""XLA's scatter, keeping the maximum of ``operand`` and
    ``updates``.

    {_DN}>>> lax.scatter_max(jnp.ones(3), jnp.array([[0], [2]]), jnp.array([0.0, 3.0]), dn)
    Array([1., 1., 3.], dtype=float32)
    """)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """XLA's scatter, subtracting ``updates`` from ``operand``.

    >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    >>> lax.scatter_sub(jnp.zeros(3), jnp.array([[1]]), jnp.ones(1), dn)
    Array([ 0., -1.,  0.], dtype=float32)
    """
    return _scatter(operand, scatter_indices, lax.neg(updates), dimension_numbers, mode, "add")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """``operand`` with ``func`` applied to the elements the scatter addresses (each once);
    ``update_shape`` is the shape the scatter's updates would have.

    >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    >>> lax.scatter_apply(jnp.arange(4.0), jnp.array([[1], [3]]), lax.neg, dn, update_shape=(2,))
    Array([ 0., -1.,  2., -3.], dtype=float32)
    """
    x = get_aval(operand)
    hit = _scatter(lax.full(x.shape, 0, np.int32), scatter_indices,
                   lax.full(tuple(update_shape), 1, np.int32), dimension_numbers, mode, "max")
    return lax.select(hit > 0, func(operand), operand)


def scatter(operand, scatter_indices, updates, dimension_numbers=0, mode=None, *,
            indices_are_sorted=False, unique_indices=False):
    """XLA's scatter, overwriting ``operand`` with ``updates`` where ``dimension_numbers`` (a
    ScatterDimensionNumbers) says, as JAX's ``lax.scatter``. With an integer axis instead,
    fnx's one-axis form: ``updates`` written (``mode`` 'set') or combined ('add', 'mul', 'min',
    'max') along that axis.

    >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    >>> lax.scatter(jnp.zeros(3), jnp.array([[2], [7]]), jnp.array([5.0, 6.0]), dn)
    Array([0., 0., 5.], dtype=float32)
    >>> lax.scatter(jnp.zeros(3), jnp.array([1]), jnp.array([4.0]), 0, "add")
    Array([0., 4., 0.], dtype=float32)
    """
    if isinstance(dimension_numbers, ScatterDimensionNumbers):
        return _scatter(operand, scatter_indices, updates, dimension_numbers, mode, "set")
    return lax.scatter(operand, scatter_indices, updates, dimension_numbers,
                       "set" if mode is None else mode)

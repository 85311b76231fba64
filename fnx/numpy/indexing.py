"""NumPy indexing (``x[...]``), ``.at[...]`` updates, take and take_along_axis.

Basic indices (ints, slices, None, Ellipsis) become static slices and reshapes. Integer-array
indices (concrete or traced) gather through one ``take`` over the merged indexed axes. Updates
``x.at[idx].op(v)`` find the flat positions ``idx`` selects by indexing an iota, then scatter.

Out-of-range indices follow JAX (jit cannot raise on a traced index): ``x[idx]`` clamps each
index into its axis; ``take``, ``take_along_axis`` and ``.at[idx].get(mode='fill')`` give a
fill value (NaN, the smallest signed or largest unsigned integer, True); updates drop what falls
outside (``mode='clip'`` clamps instead). Negative indices count from the end, as in NumPy.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import numpy as np

from ..core import dtypes, lax
from ..core.core import Tracer, concrete_or_error
from ..core.errors import ArgumentTypeError, FnxError
from . import ufuncs
from .ufuncs import clip, floor_divide, negative, remainder, true_divide
from ._core import (_is_scalar, asarray, axis_or_flat, broadcast_arrays, broadcast_to, is_array,
                    promote_dtypes, stack)
from .shapes import ravel


class IndexingError(FnxError, IndexError, TypeError):
    """An index does not fit the array it indexes. JAX raises IndexError for most (too many
    indices, a traced boolean mask) and TypeError for a float index; an IndexingError is
    both."""


def _is_advanced(i) -> bool:
    return isinstance(i, (list, np.ndarray)) or is_array(i)


class _NewAxis:
    """A scalar boolean index: a new axis of length 1 (True) or 0 (False), as in NumPy."""
    __slots__ = ("keep",)

    def __init__(self, keep):
        self.keep = keep


def _is_new_axis(e):
    return e is None or isinstance(e, _NewAxis)


def _expand_index(idx, ndim):
    """A tuple of index entries with Ellipsis expanded, boolean masks made integer arrays and
    scalar booleans made ``_NewAxis`` entries."""
    if isinstance(idx, list):      # NumPy's old multidimensional reading of it is ambiguous
        raise ArgumentTypeError("Using a non-tuple sequence for multidimensional indexing is not "
                                "allowed; use `arr[array(seq)]` instead of `arr[seq]` (as in "
                                f"JAX), got the list {idx!r}")
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if isinstance(i, (bool, np.bool_)):
            out.append(_NewAxis(bool(i)))
            continue
        if isinstance(i, (list, tuple)):    # a sequence inside the index is an array index
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.dtype == np.bool_ or \
                (is_array(i) and i.dtype == dtypes.bool_):
            if isinstance(i, Tracer):
                raise IndexingError(
                    f"boolean mask indexing needs a concrete mask (the result's shape depends "
                    f"on its values); got a traced {i.aval.str_short()}. Use "
                    "fnx.numpy.where(mask, x, 0) instead")
            out.extend(np.nonzero(np.asarray(i)))
            continue
        if isinstance(i, float) or (is_array(i) and dtypes.is_float(i.dtype)):
            raise IndexingError(f"indices must be integers, slices, None or Ellipsis, got "
                                f"{type(i).__name__}")
        out.append(i)
    n_ell = sum(1 for i in out if i is Ellipsis)
    if n_ell > 1:
        raise IndexingError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in out if not _is_new_axis(i) and i is not Ellipsis)
    if used > ndim:
        raise IndexingError(f"too many indices for array: array is {ndim}-dimensional, but "
                            f"{used} were indexed")
    if n_ell:
        # found by identity: list.index would compare the arrays before it with ==
        k = next(j for j, i in enumerate(out) if i is Ellipsis)
        out[k:k + 1] = [slice(None)] * (ndim - used)
    else:
        out.extend([slice(None)] * (ndim - used))
    return out


_GATHER_MODES = {None: "clip", "clip": "clip", "promise_in_bounds": "clip", "fill": "fill",
                 "drop": "fill"}
_SCATTER_MODES = {None: "drop", "drop": "drop", "fill": "drop", "promise_in_bounds": "drop",
                  "clip": "clip"}


def _mode(mode, table, what):
    try:
        return table[mode]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {what} mode {mode!r}: expected one of "
                         f"{sorted(m for m in table if m)}") from None


def default_fill_value(dtype):
    """JAX's fill for gathers out of range: NaN for inexact dtypes, the smallest signed or the
    largest unsigned integer, True for booleans."""
    dtype = np.dtype(dtype)
    if dtypes.is_float(dtype) or dtypes.kind(dtype) == "c":
        return np.nan
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).min if dtypes.kind(dtype) == "i" else np.iinfo(dtype).max


def _filled(out, valid, dims, fill_value):
    """``out`` where ``valid`` (its dims at ``dims`` of ``out``), else the fill value."""
    if valid is None:
        return out
    fill = default_fill_value(out.dtype) if fill_value is None else fill_value
    mask = lax.broadcast_in_dim(valid, out.shape, tuple(dims))
    return lax.select(mask, out, lax.full(out.shape, fill, out.dtype))


@dataclasses.dataclass(frozen=True)
class Slice:
    """``size`` elements from ``start`` (which may be traced) every ``stride``: an index entry
    made by ``fnx.ds``."""
    start: Any
    size: int
    stride: int = 1


def ds(start, size=None, stride=1):
    """An index entry for ``size`` elements from a possibly traced ``start``, as JAX's
    ``jax.ds``: ``x[ds(i, 2)]`` is ``lax.dynamic_slice_in_dim(x, i, 2)``.

    >>> jnp.arange(10)[fnx.ds(4, 2)]
    Array([4, 5], dtype=int32)
    """
    if size is None:      # ds(n) is the first n elements
        start, size = 0, start
    return Slice(start, operator.index(size), operator.index(stride))


def _dynamic_slices(x, entries):
    """Each ``Slice`` entry applied as a dynamic slice of its axis (a start past the end is
    clamped so that the slice fits, as in ``lax.dynamic_slice``)."""
    entries = list(entries)
    for ax, e in enumerate(entries):
        if isinstance(e, Slice):
            length = 0 if e.size == 0 else (e.size - 1) * e.stride + 1
            x = lax.dynamic_slice_in_dim(x, e.start, length, axis=ax)
            entries[ax] = slice(None, None, e.stride)
    return x, entries


def getitem(x, idx, mode=None, fill_value=None):
    """``x[idx]`` with NumPy semantics. An index out of range is clamped into its axis
    (JAX's rule), or with ``mode='fill'`` gives ``fill_value``."""
    mode = _mode(mode, _GATHER_MODES, "gather")
    x = asarray(x)
    entries = _expand_index(idx, x.ndim)
    # 1. None -> insert size-1 axes, so every entry indexes exactly one axis
    if any(_is_new_axis(e) for e in entries):
        shape, k = [], 0
        for e in entries:
            if _is_new_axis(e):
                shape.append(1)
            else:
                shape.append(x.shape[k])
                k += 1
        x = lax.reshape(x, tuple(shape))
        entries = [e if not _is_new_axis(e) else slice(0, 0) if isinstance(e, _NewAxis)
                   and not e.keep else slice(None) for e in entries]
    if any(isinstance(e, Slice) for e in entries):
        x, entries = _dynamic_slices(x, entries)
    has_adv = any(_is_advanced(e) for e in entries)
    if mode == "fill" and not has_adv:
        # an int out of range gives the fill value: the gather below masks it
        has_adv = any(not isinstance(e, slice) and not -n <= int(e) < n
                      for e, n in zip(entries, x.shape))
    # 2. static slices (and, without array indices, static ints)
    starts, limits, strides, flips, squeeze = [], [], [], [], []
    for ax, (e, n) in enumerate(zip(entries, x.shape)):
        if isinstance(e, slice):
            s, l, st = e.indices(n)
            if st < 0:
                flips.append(ax)
                # x[s:l:st] == rev(x)[n-1-s : n-1-l : -st]
                s, l, st = n - 1 - s, n - 1 - l, -st
            starts.append(s)
            limits.append(max(s, l))
            strides.append(st)
        elif not has_adv and not is_array(e):
            if n == 0:
                raise IndexingError(f"index {int(e)} is out of bounds for axis {ax} with size 0")
            i = min(max(int(e) + n if int(e) < 0 else int(e), 0), n - 1)   # clamped, as JAX
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
            squeeze.append(ax)
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
    if flips:
        x = lax.rev(x, flips)
    if (starts, limits, strides) != ([0] * x.ndim, list(x.shape), [1] * x.ndim):
        x = lax.slice(x, starts, limits, strides)
    if not has_adv:
        return lax.squeeze(x, squeeze) if squeeze else x
    # 3. integer-array (and int) indices: gather over the merged indexed axes, each index
    # clamped into its own axis (so the merged index stays in its row)
    adv_axes = [ax for ax, e in enumerate(entries) if not isinstance(e, slice)]
    several = len(adv_axes) > 1
    pairs = [_index_in_range(entries[ax], x.shape[ax], clamp=several, check=mode == "fill")
             for ax in adv_axes]
    arrays = [a for a, _ in pairs]
    if len({a.dtype for a in arrays}) > 1:   # int32 and int64 indices together: int64
        arrays = [lax.convert_element_type(a, dtypes.int64) for a in arrays]
    arrays = broadcast_arrays(*arrays, op="indexing")
    idx_shape = arrays[0].shape
    valid = None
    for _, ok in pairs:
        if ok is not None:
            ok = broadcast_to(ok, idx_shape)
            valid = ok if valid is None else lax.bitwise_and(valid, ok)
    rest = [ax for ax in range(x.ndim) if ax not in adv_axes]
    xt = lax.transpose(x, adv_axes + rest)
    sizes = [x.shape[ax] for ax in adv_axes]
    merged = lax.reshape(xt, (int(np.prod(sizes, dtype=np.int64)),)
                         + tuple(x.shape[ax] for ax in rest))
    lin = arrays[-1]
    stride = 1
    for a, n in zip(reversed(arrays[:-1]), reversed(sizes[1:])):
        stride *= n
        lin = lax.add(lin, lax.mul(a, lax.full(a.shape, stride, a.dtype)))
    out = _filled(lax.take(merged, lin, 0), valid, range(len(idx_shape)), fill_value)
    contiguous = adv_axes == list(range(adv_axes[0], adv_axes[-1] + 1))
    if contiguous and adv_axes[0] > 0:
        # NumPy puts the indexed dims where the (adjacent) indexed axes were
        k, p = len(idx_shape), adv_axes[0]
        perm = list(range(k, k + p)) + list(range(k)) + list(range(k + p, out.ndim))
        out = lax.transpose(out, perm)
    return out


def _normalize_index(i, n):
    """An int32 index array with negative entries wrapped."""
    return _index_in_range(i, n)[0]


def _index_in_range(i, n, clamp=False, check=False):
    """``(index, valid)``: the int32 (or int64) index array for an axis of length ``n`` with
    negative entries wrapped (clamped into [0, n) too with ``clamp``), and with ``check`` a
    boolean mask of the entries that were in range (None where all are known to be)."""
    if not is_array(i):
        i = np.asarray(i)
        if not dtypes.is_int(i.dtype):
            raise IndexingError(f"indices must be integers, got dtype {i.dtype}")
        if n < 2**31 and i.size and -2**31 <= i.min() and i.max() < 2**31:
            i = i.astype(np.int32)   # concrete indices that fit: int32, like traced ones
        elif i.dtype != np.int64:
            i = i.astype(np.int64)
        wrapped = np.where(i < 0, i + n, i)
        inside = (wrapped >= 0) & (wrapped < n)
        out = np.clip(wrapped, 0, max(n - 1, 0)) if clamp else wrapped
        ok = None if not check or inside.all() else asarray(inside)
        return asarray(out.astype(i.dtype)), ok
    arr = i
    if not dtypes.is_int(arr.dtype):
        raise IndexingError(f"indices must be integers, got dtype {arr.dtype}")
    if arr.dtype != dtypes.int32 and arr.dtype != dtypes.int64:
        arr = lax.convert_element_type(arr, dtypes.int32)
    if not isinstance(arr, Tracer):     # concrete: only the work its values need
        v = np.asarray(arr)
        if not v.size or (v.min() >= 0 and v.max() < n):
            return arr, None
    zero, size = lax.full(arr.shape, 0, arr.dtype), lax.full(arr.shape, n, arr.dtype)
    arr = lax.select(lax.lt(arr, zero), lax.add(arr, size), arr)
    ok = lax.bitwise_and(lax.ge(arr, zero), lax.lt(arr, size)) if check else None
    if clamp:
        arr = lax.max_(lax.min_(arr, lax.full(arr.shape, max(n - 1, 0), arr.dtype)), zero)
    return arr, ok


# ---------------------------------------------------------------------------------------------
# .at[...] updates


def _flat_positions(x, idx, mode):
    """The flat positions of ``x`` that ``x[idx]`` reads, in the shape of ``x[idx]``: with
    ``mode`` 'drop', -1 where an index is out of range (a scatter drops those updates); with
    'clip', the position of the clamped index."""
    dyn = any(isinstance(i, Tracer) for i in (idx if isinstance(idx, tuple) else (idx,)))
    if not dyn:   # a NumPy array: the positions are known now
        return _static_positions(x.shape, idx, mode)
    iota = lax.reshape(lax.iota(dtypes.int32, x.size), x.shape)
    if mode == "clip":
        return getitem(iota, idx)
    return getitem(iota, idx, mode="fill", fill_value=-1)


def _static_positions(shape, idx, mode):
    """``_flat_positions`` for concrete indices, in NumPy: an iota with one more element on
    every axis, holding -1, where an out-of-range index ('drop') is sent."""
    entries = [np.asarray(e) if is_array(e) else e for e in _expand_index(idx, len(shape))]
    ext = np.full(tuple(n + 1 for n in shape), -1, np.int32)
    ext[tuple(slice(0, n) for n in shape)] = np.arange(int(np.prod(shape, dtype=np.int64)),
                                                       dtype=np.int32).reshape(shape)
    mapped, axis = [], 0
    for e in entries:
        if _is_new_axis(e):
            mapped.append(e.keep if isinstance(e, _NewAxis) else None)
            continue
        n = shape[axis]
        axis += 1
        if isinstance(e, slice):
            s, l, st = e.indices(n)
            mapped.append(slice(s, None if l < 0 else l, st))     # not past the real axis
            continue
        a = np.asarray(e)
        a = np.where(a < 0, a + n, a)
        mapped.append(np.clip(a, 0, max(n - 1, 0)) if mode == "clip"
                      else np.where((a >= 0) & (a < n), a, n))
    return np.asarray(ext[tuple(mapped)], dtype=np.int32)


def scatter_update(x, idx, values, op, mode=None):
    """``x.at[idx].<op>(values)``. An index out of range drops its update (JAX's default);
    ``mode='clip'`` clamps it into range instead."""
    mode = _mode(mode, _SCATTER_MODES, "scatter")
    x = asarray(x)
    pos = _flat_positions(x, idx, mode)
    # a Python number goes straight to x's dtype (no rounding through the default float)
    v = asarray(values, x.dtype if _is_scalar(values) else None)
    if v.dtype != x.dtype:
        v = lax.convert_element_type(v, x.dtype)
    v = lax.reshape(broadcast_to(v, pos.shape), (pos.size,))
    if isinstance(pos, np.ndarray):
        pos = pos.reshape(-1)
        if (pos < 0).any():          # out of range: dropped now
            keep = np.nonzero(pos >= 0)[0].astype(np.int32)
            pos, v = pos[keep], lax.take(v, asarray(keep), 0)
        if op == "set" and np.unique(pos).size < pos.size:
            # repeated positions: the last update lands, as in NumPy. Keep only those, so the
            # scatter's indices are unique and every backend agrees (and so do gradients)
            _, first_from_end = np.unique(pos[::-1], return_index=True)
            keep = np.sort(pos.size - 1 - first_from_end).astype(np.int32)
            pos, v = pos[keep], lax.take(v, asarray(keep), 0)
        pos = asarray(pos)
    else:
        pos = lax.reshape(pos, (pos.size,))
    out = lax.scatter(lax.reshape(x, (x.size,)), pos, v, 0, op)
    return lax.reshape(out, x.shape)


def _negatives_out_of_range(idx, shape, clip):
    """``idx`` with its negative integers no longer counted from the end (JAX's
    ``wrap_negative_indices=False``): sent past the axis, or to 0 where they are clipped."""
    entries, axis, out = _expand_index(idx, len(shape)), 0, []
    for e in entries:
        if _is_new_axis(e):
            out.append(None if e is None else e.keep)
            continue
        n = shape[axis]
        axis += 1
        if isinstance(e, slice):
            out.append(e)
        elif is_array(e):
            out.append(lax.select(lax.lt(e, lax.full_like(e, 0)),
                                  lax.full_like(e, 0 if clip else n), e))
        else:
            a = np.asarray(e)
            out.append(np.where(a < 0, 0 if clip else n, a))
    return tuple(out)


class _IndexUpdateRef:
    """``x.at[idx]``: its methods take JAX's ``mode`` ('drop', the default for updates, or
    'clip'; for ``get``, 'clip', the default, or 'fill' with ``fill_value``)."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def _index(self, wrap_negative_indices, mode, table=_SCATTER_MODES):
        if wrap_negative_indices:
            return self.index
        clip = _mode(mode, table, "index") == "clip"
        return _negatives_out_of_range(self.index, self.array.shape, clip)

    def get(self, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False,
            wrap_negative_indices=True, out_sharding=None):
        return getitem(self.array, self._index(wrap_negative_indices, mode, _GATHER_MODES),
                       mode, fill_value)

    def _update(self, values, how, mode, wrap_negative_indices, into=None):
        return scatter_update(self.array if into is None else into,
                              self._index(wrap_negative_indices, mode), values, how, mode)

    def set(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
            wrap_negative_indices=True):
        return self._update(values, "set", mode, wrap_negative_indices)

    def add(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
            wrap_negative_indices=True):
        return self._update(values, "add", mode, wrap_negative_indices)

    def subtract(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
                 wrap_negative_indices=True):
        neg = -values if _is_scalar(values) else negative(values)
        return self._update(neg, "add", mode, wrap_negative_indices)

    def multiply(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
                 wrap_negative_indices=True):
        return self._update(values, "mul", mode, wrap_negative_indices)

    mul = multiply

    def divide(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
               wrap_negative_indices=True):
        # x / (the product of the divisors that land on each element), as JAX does
        from .creation import ones_like
        divisors = self._update(values, "mul", mode, wrap_negative_indices,
                                into=ones_like(self.array))
        return true_divide(self.array, divisors)

    def power(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
              wrap_negative_indices=True):
        # x ** (the product of the exponents that land on each element), as JAX does
        from .creation import ones_like
        exponents = self._update(values, "mul", mode, wrap_negative_indices,
                                 into=ones_like(self.array))
        return ufuncs.power(self.array, exponents)

    def min(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
            wrap_negative_indices=True):
        return self._update(values, "min", mode, wrap_negative_indices)

    def max(self, values, mode=None, indices_are_sorted=False, unique_indices=False,
            wrap_negative_indices=True):
        return self._update(values, "max", mode, wrap_negative_indices)

    def apply(self, func, mode=None, indices_are_sorted=False, unique_indices=False,
            wrap_negative_indices=True):
        index = self._index(wrap_negative_indices, mode)
        ref = _IndexUpdateRef(self.array, index)
        return ref.set(func(ref.get(mode="clip" if mode == "clip" else None)), mode)


class _IndexUpdateHelper:
    """``x.at[idx].set(v)`` and friends: functional versions of ``x[idx] = v``."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)


# ---------------------------------------------------------------------------------------------
# take / take_along_axis


_TAKE_MODES = ("fill", "clip", "wrap")
_TAKE_ALONG_AXIS_MODES = ("fill", "drop", "clip", "promise_in_bounds")


def _take_mode(mode, op, modes):
    mode = "fill" if mode is None else mode
    if mode == "raise" and op == "take":
        raise NotImplementedError(f"{op}: mode='raise' is not supported (jit cannot raise on a "
                                  "traced index); use 'fill', 'clip' or 'wrap'")
    if mode not in modes:
        raise ValueError(f"{op}: invalid mode {mode!r}: expected one of {modes}")
    return "fill" if mode == "drop" else mode


def _take_index(indices, n, mode, wrap_negative_in_clip=False):
    """(index, valid mask or None) for take and take_along_axis."""
    if mode == "wrap":
        return remainder(_normalize_index(indices, n), n), None
    if mode == "fill" or wrap_negative_in_clip:
        return _index_in_range(indices, n, check=mode == "fill")
    # take's 'clip' clamps the index as given, as JAX's does: a negative one reads element 0
    idx = asarray(indices if is_array(indices) else np.asarray(indices))
    if not dtypes.is_int(idx.dtype):
        raise IndexingError(f"indices must be integers, got dtype {idx.dtype}")
    return idx, None


def take(a, indices, axis=None, mode=None, fill_value=None, unique_indices=False,
         indices_are_sorted=False):
    """Elements of ``a`` at ``indices`` along ``axis`` (the flattened array when None).
    Negative indices count from the end; out-of-range ones give ``fill_value`` (JAX's default
    mode 'fill': NaN for inexact dtypes, the smallest signed / largest unsigned integer,
    True). ``mode`` 'clip' clamps the indices as given (JAX's rule: a negative one reads
    element 0), 'wrap' wraps them.

    >>> jnp.take(jnp.array([10, 20, 30]), jnp.array([2, 0]))
    Array([30, 10], dtype=int32)
    """
    mode = _take_mode(mode, "take", _TAKE_MODES)
    a, ax = axis_or_flat(asarray(a), axis, "take")
    idx, valid = _take_index(indices, a.shape[ax], mode)
    return _filled(lax.take(a, idx, ax), valid, range(ax, ax + idx.ndim), fill_value)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
    """Pick values from ``arr`` by ``indices`` matched along ``axis`` (NumPy semantics);
    out-of-range indices as in ``take`` (modes 'fill', the default, 'clip' and
    'promise_in_bounds'). Negative indices count from the end unless
    ``wrap_negative_indices`` is False (JAX's default for 'promise_in_bounds').

    >>> jnp.take_along_axis(jnp.array([[3, 1], [2, 4]]), jnp.array([[1], [0]]), axis=1)
    Array([[1],
           [2]], dtype=int32)
    """
    mode = _take_mode(mode, "take_along_axis", _TAKE_ALONG_AXIS_MODES)
    arr, ax = axis_or_flat(asarray(arr), axis, "take_along_axis")
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    if mode == "promise_in_bounds":
        mode = "clip"      # XLA's gather clamps an index that breaks the promise
    idx, valid = _take_index(indices, arr.shape[ax], mode,
                             wrap_negative_in_clip=wrap_negative_indices)
    if idx.ndim != arr.ndim:
        raise IndexingError(f"take_along_axis: indices of rank {idx.ndim} do not match array "
                            f"of rank {arr.ndim}")
    shape = [max(a, b) if i != ax else None for i, (a, b) in enumerate(zip(arr.shape, idx.shape))]
    arr = broadcast_to(arr, tuple(arr.shape[i] if i == ax else s for i, s in enumerate(shape)))
    idx = broadcast_to(idx, tuple(idx.shape[i] if i == ax else s for i, s in enumerate(shape)))
    out = lax.take_along_axis(arr, idx, ax)
    if valid is not None:
        valid = broadcast_to(valid, idx.shape)
    return _filled(out, valid, range(out.ndim), fill_value)


def nonzero(a, size=None, fill_value=0):
    """Indices of non-zero elements, one array per axis. Without ``size`` it needs a concrete
    ``a`` (the result size depends on it); with ``size`` it works under jit: the first ``size``
    indices, padded with ``fill_value`` (a scalar, or one per axis).

    >>> jnp.nonzero(jnp.array([0, 3, 0, 5]), size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)
    """
    if size is not None:
        return _nonzero_of_size(asarray(a), int(size), fill_value)
    vals = concrete_or_error(a, "nonzero's argument (use size= or fnx.numpy.where(c, x, y))")
    return tuple(asarray(o.astype(dtypes.default_int)) for o in np.nonzero(vals))


def _nonzero_of_size(a, size, fill_value):
    """nonzero with a static result size, from a stable sort that brings the non-zero
    positions first (in order)."""
    from .reductions import sum as _sum
    flat = lax.reshape(a, (a.size,))
    mask = lax.ne(flat, lax.full(flat.shape, 0, flat.dtype))
    index = dtypes.default_int     # JAX's index dtype: int64 with x64 on
    iota = lax.iota(index, a.size)
    _, order = lax.sort([lax.convert_element_type(lax.bitwise_not(mask), dtypes.int32), iota],
                        0, num_keys=1)
    if size > a.size:
        order = lax.pad(order, lax.full((), 0, index), [(0, size - a.size, 0)])
    order = lax.slice_in_dim(order, 0, size)
    valid = lax.lt(lax.iota(index, size), lax.convert_element_type(_sum(mask), index))
    coords = unravel_index(order, a.shape) if a.ndim else (order,)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * len(coords)
    return tuple(lax.select(valid, c, lax.full((size,), f, index))
                 for c, f in zip(coords, fills))


def argwhere(a, *, size=None, fill_value=None):
    """Indices of non-zero elements as rows; ``size``/``fill_value`` as for ``nonzero``.

    >>> jnp.argwhere(jnp.array([[0, 1], [2, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    a = asarray(a)
    if a.ndim == 0:    # one row (a non-zero scalar) or none, of no columns, as in JAX
        return stack(nonzero(lax.reshape(a, (1,)), size, 0 if fill_value is None
                             else fill_value), axis=1)[:, :0]
    return stack(nonzero(a, size, 0 if fill_value is None else fill_value), axis=1)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the non-zero elements of ``a`` flattened; ``size``/``fill_value`` as for
    ``nonzero``.

    >>> jnp.flatnonzero(jnp.array([[0, 1], [2, 0]]))
    Array([1, 2], dtype=int32)
    """
    return nonzero(ravel(a), size, 0 if fill_value is None else fill_value)[0]



# ---------------------------------------------------------------------------------------------
# index arithmetic and index-array builders


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y``, broadcasting all three. The one-argument form is
    ``nonzero`` (a concrete condition, or ``size=`` under jit).

    >>> x = jnp.array([1., -2., 3.])
    >>> jnp.where(x > 0, x, 0.0)
    Array([1., 0., 3.], dtype=float32)
    >>> jnp.where(jnp.array([0, 7, 0, 9]))
    (Array([1, 3], dtype=int32),)
    """
    if x is None and y is None:
        return nonzero(condition, size, 0 if fill_value is None else fill_value)
    if x is None or y is None:
        raise TypeError("where takes either one argument or three")
    return ufuncs.where(condition, x, y)


def _dims(shape, name):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(int(d) < 0 for d in shape):
        raise ValueError(f"{name}: dimensions must be non-negative, got {shape}")
    return tuple(int(d) for d in shape)


def unravel_index(indices, shape):
    """The multi-index into ``shape`` of each flat index, as a tuple of arrays. Negative indices
    count from the end; out-of-range ones are clipped (JAX's rule, as jit cannot raise).

    >>> jnp.unravel_index(jnp.asarray([5, 1]), (2, 3))
    (Array([1, 0], dtype=int32), Array([2, 1], dtype=int32))
    """
    shape = _dims(shape, "unravel_index")
    idx = asarray(indices)
    if not dtypes.is_int(idx.dtype):
        raise TypeError(f"unravel_index: indices must be integers, got dtype {idx.dtype}")
    total = int(np.prod(shape, dtype=np.int64))
    if total == 0:
        raise ValueError(f"unravel_index: cannot unravel into an empty shape {shape}")
    idx = where(lax.lt(idx, lax.full(idx.shape, 0, idx.dtype)), idx + total, idx)
    idx = clip(idx, 0, total - 1)
    out = []
    for d in reversed(shape):
        out.append(remainder(idx, d))
        idx = floor_divide(idx, d)
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices into an array of shape ``dims`` from a tuple of index arrays. ``mode`` is
    'raise' (concrete indices only), 'wrap' or 'clip'; ``order`` 'C' or 'F'.

    >>> jnp.ravel_multi_index((jnp.asarray([1, 0]), jnp.asarray([2, 1])), (2, 3))
    Array([5, 1], dtype=int32)
    """
    dims = _dims(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dimensions {dims}")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    arrs = broadcast_arrays(*promote_dtypes(*multi_index), op="ravel_multi_index")
    for a in arrs:
        if not dtypes.is_int(a.dtype):
            raise TypeError(f"ravel_multi_index: indices must be integers, got {a.dtype}")
    if mode == "raise":
        for a, d in zip(arrs, dims):
            v = np.asarray(concrete_or_error(a, "ravel_multi_index's indices with mode='raise' "
                                                "(use mode='clip' or 'wrap' under jit)"))
            if v.size and (v.min() < 0 or v.max() >= d):
                raise ValueError(f"ravel_multi_index: invalid entry in coordinates array for "
                                 f"dimension of size {d}")
    elif mode == "wrap":
        arrs = [remainder(a, d) for a, d in zip(arrs, dims)]
    elif mode == "clip":
        arrs = [clip(a, 0, d - 1) for a, d in zip(arrs, dims)]
    else:
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', "
                         f"got {mode!r}")
    order_ = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat = None
    for k in order_:
        a = arrs[k]
        flat = a if flat is None else flat * dims[k] + a
    return flat


def _static_indices(rows, cols):
    return asarray(rows.astype(dtypes.default_int)), asarray(cols.astype(dtypes.default_int))


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an ``(n, m)`` array (on and below the
    ``k``-th diagonal).

    >>> jnp.tril_indices(2)
    (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    return _static_indices(*np.nonzero(np.tri(int(n), None if m is None else int(m), int(k),
                                              dtype=bool)))


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle (on and above the ``k``-th diagonal).

    >>> jnp.triu_indices(2)
    (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    return _static_indices(*np.nonzero(~np.tri(int(n), None if m is None else int(m), int(k) - 1,
                                               dtype=bool)))


def _check_2d(arr, name):
    shape = np.shape(arr) if not hasattr(arr, "shape") else tuple(arr.shape)
    if len(shape) != 2:
        raise ValueError(f"{name}: input array must be 2-D, got shape {shape}")
    return shape


def tril_indices_from(arr, k=0):
    """``tril_indices`` for the shape of the 2-D ``arr``.

    >>> jnp.tril_indices_from(jnp.zeros((2, 2)))
    (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    n, m = _check_2d(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    """``triu_indices`` for the shape of the 2-D ``arr``.

    >>> jnp.triu_indices_from(jnp.zeros((2, 2)))
    (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    n, m = _check_2d(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an ``ndim``-dimensional array with sides ``n``.

    >>> jnp.diag_indices(2)
    (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    if int(n) < 0 or int(ndim) < 0:
        raise ValueError(f"diag_indices: n and ndim must be non-negative, got {n}, {ndim}")
    i = asarray(np.arange(int(n), dtype=dtypes.default_int))
    return (i,) * int(ndim)


def diag_indices_from(arr):
    """``diag_indices`` for ``arr``, whose sides must all be equal.

    >>> jnp.diag_indices_from(jnp.zeros((2, 2)))
    (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    shape = tuple(asarray(arr).shape)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: input must be at least 2-D with all sides equal, "
                         f"got shape {shape}")
    return diag_indices(shape[0], len(shape))


def indices(dimensions, dtype=None, sparse=False):
    """An array (or, with ``sparse``, a tuple of broadcastable arrays) of the grid indices.

    >>> jnp.indices((2, 3))[1]
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    dims = _dims(dimensions, "indices")
    dt = dtypes.canonicalize(dtype, "indices") if dtype is not None else dtypes.default_int
    if sparse:
        return tuple(lax.reshape(lax.iota(dt, d), tuple(d if j == i else 1
                                                        for j in range(len(dims))))
                     for i, d in enumerate(dims))
    grids = [lax.expand_dims(lax.broadcasted_iota(dt, dims, i), (0,)) for i in range(len(dims))]
    return lax.concatenate(grids, 0) if grids else lax.full((0,), 0, dt)


def ix_(*args):
    """Open-mesh index arrays: the ``k``-th 1-D sequence reshaped to broadcast along axis ``k``.

    >>> jnp.ix_(jnp.asarray([0, 1]), jnp.asarray([2]))[0].shape
    (2, 1)
    """
    out = []
    n = len(args)
    for k, a in enumerate(args):
        if isinstance(a, (list, tuple)) and len(a) == 0:
            a = np.zeros(0, np.int32)
        a = asarray(a)
        if a.ndim != 1:
            raise ValueError(f"ix_: cross index must be 1-D, got shape {a.shape} for "
                             f"argument {k}")
        if a.dtype == dtypes.bool_:
            a = nonzero(a)[0]
        out.append(lax.reshape(a, (1,) * k + (a.shape[0],) + (1,) * (n - k - 1)))
    return tuple(out)

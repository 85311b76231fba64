"""``pad`` in every one of NumPy's modes (its statistics modes stand on the reductions)."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import dtypes, lax
from ..core.errors import ShapeError
from . import reductions, ufuncs
from ._core import asarray, broadcast_to
from .creation import linspace
from .functional import apply_along_axis
from .shapes import repeat, squeeze


def _pad_pairs(value, ndim, what):
    """NumPy's per-axis ``(before, after)`` pairs from a scalar, a pair, or one pair per axis."""
    v = np.asarray(value, dtype=object if what == "constant_values" else np.int64)
    if v.ndim == 0:
        v = np.asarray([[value, value]], dtype=v.dtype)
    if not ndim:
        return np.zeros((0, 2), v.dtype)
    try:
        return np.broadcast_to(v.reshape(-1, 2) if v.size != 1 else v.reshape(1, 1), (ndim, 2))
    except ValueError:
        raise ShapeError(f"pad: {what} of shape {v.shape} does not fit an array of {ndim} "
                         "dimensions (give a scalar, a (before, after) pair or one pair per "
                         "axis)") from None


# modes whose padding repeats elements of the array: NumPy's own pad of the positions
# 0..n-1 gives, for each output position, the input position it copies
_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")
_STAT_MODES = {"maximum": "max", "minimum": "min", "mean": "mean", "median": "median"}


def pad(array, pad_width, mode="constant", *, constant_values=0, stat_length=None,
        end_values=0, reflect_type="even", **kwargs):
    """``array`` padded by ``pad_width`` (NumPy's forms) in any of NumPy's modes: 'constant',
    'edge', 'reflect', 'symmetric', 'wrap', 'linear_ramp', 'maximum', 'minimum', 'mean',
    'median' ('empty' pads with zeros), or a function ``mode(row, (before, after), axis,
    kwargs)`` given each zero-padded row along each axis in turn. Differentiable: the padding is copies, ramps or
    statistics of the array's own elements.

    >>> jnp.pad(jnp.arange(4.0), (2, 1), mode="reflect")
    Array([2., 1., 0., 1., 2., 3., 2.], dtype=float32)
    """
    a = asarray(array)
    pw = _pad_pairs(pad_width, a.ndim, "pad_width")
    if (pw < 0).any():
        raise ValueError("pad widths must be non-negative")
    if callable(mode):
        a = lax.pad(a, lax.full((), 0, a.dtype), [(int(lo), int(hi), 0) for lo, hi in pw])
        for ax in range(a.ndim):
            a = apply_along_axis(mode, ax, a, tuple(int(w) for w in pw[ax]), ax, kwargs)
        return a
    if kwargs:
        raise TypeError(f"pad() got unexpected keyword arguments {sorted(kwargs)} "
                        f"(only a function mode takes them)")
    if mode == "empty":
        mode, constant_values = "constant", 0
    if mode == "constant":
        values = _pad_pairs(constant_values, a.ndim, "constant_values")
        if len({repr(v) for v in values.ravel()}) <= 1:     # one value: one pad primitive
            value = lax.convert_element_type(asarray(values.ravel()[0] if values.size
                                                     else 0), a.dtype)
            return lax.pad(a, value, [(int(lo), int(hi), 0) for lo, hi in pw])
        return _pad_blocks(a, pw, lambda b, ax, side, n: _full_block(b, ax, n, values[ax][side]))
    if mode in _INDEX_MODES:
        if reflect_type != "even":
            raise NotImplementedError("pad: reflect_type='odd' is not supported")
        for ax, (lo, hi) in enumerate(pw):
            if lo or hi:
                src = np.pad(np.arange(a.shape[ax]), (int(lo), int(hi)), mode=mode)
                a = lax.take(a, asarray(src.astype(np.int32)), ax)
        return a
    if mode in _STAT_MODES:
        lengths = None if stat_length is None else _pad_pairs(stat_length, a.ndim,
                                                              "stat_length")
        return _pad_blocks(a, pw, lambda b, ax, side, n: _stat_block(
            b, ax, side, n, _STAT_MODES[mode], None if lengths is None else lengths[ax][side]))
    if mode == "linear_ramp":
        ends = _pad_pairs(end_values, a.ndim, "constant_values")
        return _pad_blocks(a, pw, lambda b, ax, side, n: _ramp_block(b, ax, side, n,
                                                                     ends[ax][side]))
    raise NotImplementedError(f"pad mode {mode!r}")


def _pad_blocks(a, pw, block):
    """Pad one axis after another, ``block(a, axis, side, width)`` making each side's padding
    from the array padded so far (so corners are filled as NumPy fills them)."""
    for ax, (lo, hi) in enumerate(pw):
        parts = [block(a, ax, 0, int(lo))] if lo else []
        parts.append(a)
        if hi:
            parts.append(block(a, ax, 1, int(hi)))
        if len(parts) > 1:
            a = lax.concatenate(parts, ax)
    return a


def _full_block(a, ax, n, value):
    shape = a.shape[:ax] + (n,) + a.shape[ax + 1:]
    return lax.convert_element_type(broadcast_to(asarray(value), shape), a.dtype)


def _stat_block(a, ax, side, n, stat, length):
    m = a.shape[ax]
    k = m if length is None else builtins.max(1, builtins.min(int(length), m))
    part = lax.slice_in_dim(a, 0, k, 1, ax) if side == 0 else lax.slice_in_dim(a, m - k, m, 1,
                                                                              ax)
    v = getattr(reductions, stat)(part, axis=ax, keepdims=True)
    if dtypes.is_int(a.dtype) and stat in ("mean", "median"):
        v = ufuncs.round(v)                  # NumPy rounds an integer array's statistic
    return repeat(lax.convert_element_type(v, a.dtype), n, ax)


def _ramp_block(a, ax, side, n, end):
    m = a.shape[ax]
    edge = lax.slice_in_dim(a, 0, 1, 1, ax) if side == 0 else lax.slice_in_dim(a, m - 1, m, 1,
                                                                              ax)
    edge = squeeze(edge, ax)
    # NumPy's ramp: from end_value toward (not including) the edge value, in a's dtype
    ramp = linspace(broadcast_to(asarray(end, a.dtype), edge.shape), edge, n, endpoint=False,
                    dtype=a.dtype, axis=ax)
    return ramp if side == 0 else lax.rev(ramp, (ax,))

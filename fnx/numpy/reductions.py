"""Reductions with ``axis``/``keepdims``, and cumulative operations."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import dtypes, lax
from ._core import asarray, astype, axis_or_flat, canonicalize_axes, canonicalize_axis, \
    promote_dtypes_inexact


def _keepdims(out, in_shape, axes, keepdims):
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return lax.reshape(out, shape)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    if x.dtype == dtypes.bool_ or (dtypes.is_int(x.dtype) and x.dtype.itemsize < 4):
        return dtypes.default_int if x.dtype.kind != "u" else dtypes.uint32
    return x.dtype


def sum(a, axis=None, dtype=None, keepdims=False, where=None):  # noqa: A001
    """Sum over ``axis`` (all axes when None).

    >>> sum(arange(6).reshape(2, 3), axis=0)
    Array([3, 5, 7], dtype=int32)
    """
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim, "sum")
    dt = _sum_dtype(a, dtype)
    if where is not None:
        from .ufuncs import where as where_
        a = where_(where, a, 0)
    a = lax.convert_element_type(a, dt, a.weak_type) if a.dtype != dt else a
    return _keepdims(lax.reduce_sum(a, axes), a.shape, axes, keepdims)


def prod(a, axis=None, dtype=None, keepdims=False):
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim, "prod")
    dt = _sum_dtype(a, dtype)
    a = lax.convert_element_type(a, dt, a.weak_type) if a.dtype != dt else a
    return _keepdims(lax.reduce_prod(a, axes), a.shape, axes, keepdims)


def _size(shape, axes):
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def mean(a, axis=None, dtype=None, keepdims=False, where=None):
    """Arithmetic mean; integer inputs give the default float."""
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim, "mean")
    (af,) = promote_dtypes_inexact(a) if dtype is None else [astype(a, dtype)]
    if where is not None:
        from ._core import broadcast_to
        mask = broadcast_to(astype(asarray(where), bool), af.shape)
        w = astype(mask, af.dtype)
        # select, not multiply: masked-out entries may be NaN or inf (nanmean)
        kept = lax.select(mask, af, lax.full(af.shape, 0, af.dtype))
        return lax.div(sum(kept, axes, keepdims=keepdims), sum(w, axes, keepdims=keepdims))
    total = sum(af, axes, keepdims=keepdims)
    return lax.div(total, lax.full(total.shape, _size(a.shape, axes), total.dtype))


def var(a, axis=None, dtype=None, ddof: int = 0, keepdims=False):
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim, "var")
    (af,) = promote_dtypes_inexact(a) if dtype is None else [astype(a, dtype)]
    from ._core import broadcast_to
    centered = lax.sub(af, broadcast_to(mean(af, axes, keepdims=True), af.shape))
    ss = sum(lax.mul(centered, centered), axes, keepdims=keepdims)
    n = _size(a.shape, axes) - ddof
    return lax.div(ss, lax.full(ss.shape, n, ss.dtype))


def std(a, axis=None, dtype=None, ddof: int = 0, keepdims=False):
    return lax.sqrt(var(a, axis, dtype, ddof, keepdims))


def _minmax(prim_fn, name):
    def fn(a, axis=None, keepdims=False, initial=None, where=None):
        a = asarray(a)
        axes = canonicalize_axes(axis, a.ndim, name)
        if where is not None:
            if initial is None:
                raise ValueError(f"{name}: a where= mask needs an initial= value (the "
                                 "reduction has no identity)")
            from .ufuncs import where as where_
            a = lax.convert_element_type(where_(where, a, initial), a.dtype, a.weak_type)
        if builtins.any(a.shape[ax] == 0 for ax in axes) and initial is None:
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             "identity")
        out = _keepdims(prim_fn(a, axes), a.shape, axes, keepdims)
        if initial is not None:
            from .ufuncs import maximum, minimum
            out = (maximum if name == "max" else minimum)(out, initial)
        return out
    fn.__name__ = name
    fn.__doc__ = f"The {name}imum over ``axis``."
    return fn


max = amax = _minmax(lax.reduce_max, "max")  # noqa: A001
min = amin = _minmax(lax.reduce_min, "min")  # noqa: A001


def ptp(a, axis=None, keepdims=False):
    return lax.sub(max(a, axis, keepdims), min(a, axis, keepdims))


def _arg(prim_fn, name):
    def fn(a, axis=None, keepdims=False):
        a = asarray(a)
        if axis is None:
            out = prim_fn(lax.reshape(a, (a.size,)), 0)
            return lax.reshape(out, (1,) * a.ndim) if keepdims else out
        ax = canonicalize_axis(axis, a.ndim, name)
        out = prim_fn(a, ax)
        return _keepdims(out, a.shape, (ax,), keepdims)
    fn.__name__ = name
    return fn


argmax = _arg(lax.argmax, "argmax")
argmin = _arg(lax.argmin, "argmin")


def any(a, axis=None, keepdims=False):  # noqa: A001
    a = astype(asarray(a), bool)
    axes = canonicalize_axes(axis, a.ndim, "any")
    return _keepdims(lax.reduce_or(a, axes), a.shape, axes, keepdims)


def all(a, axis=None, keepdims=False):  # noqa: A001
    a = astype(asarray(a), bool)
    axes = canonicalize_axes(axis, a.ndim, "all")
    return _keepdims(lax.reduce_and(a, axes), a.shape, axes, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    return sum(astype(asarray(a), bool), axis, keepdims=keepdims)


def _cumulative(lax_fn, name, promote_small_int=True):
    def fn(a, axis=None, dtype=None):
        a, ax = axis_or_flat(asarray(a), axis, name)
        dt = _sum_dtype(a, dtype) if promote_small_int else a.dtype
        if a.dtype != dt:
            a = lax.convert_element_type(a, dt, a.weak_type)
        return lax_fn(a, ax)
    fn.__name__ = name
    fn.__doc__ = f"Cumulative {name[3:]} along ``axis`` (the flattened array when None)."
    return fn


cumsum = _cumulative(lax.cumsum, "cumsum")
cumprod = _cumulative(lax.cumprod, "cumprod")


def nansum(a, axis=None, dtype=None, keepdims=False):
    from .ufuncs import isnan, where
    a = asarray(a)
    return sum(where(isnan(a), 0, a), axis, dtype, keepdims)


def nanmean(a, axis=None, keepdims=False):
    from .ufuncs import isnan, logical_not
    a = asarray(a)
    return mean(a, axis, keepdims=keepdims, where=logical_not(isnan(a)))


def average(a, axis=None, weights=None):
    if weights is None:
        return mean(a, axis)
    from .ufuncs import multiply
    a, w = promote_dtypes_inexact(a, weights)
    from ._core import broadcast_to
    w = broadcast_to(w, a.shape) if w.ndim == a.ndim else _expand_weights(w, a, axis)
    return lax.div(sum(multiply(a, w), axis), sum(w, axis))


def _expand_weights(w, a, axis):
    ax = canonicalize_axis(axis, a.ndim, "average")
    return lax.broadcast_in_dim(w, a.shape, (ax,))


def median(a, axis=None, keepdims=False):
    """The median over ``axis`` (an int, a tuple of ints, or None for all axes)."""
    from .sorting import sort
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim, "median")
    # move the reduced axes to the end and merge them into one
    rest = [i for i in range(a.ndim) if i not in axes]
    m = lax.reshape(lax.transpose(a, tuple(rest) + axes),
                    tuple(a.shape[i] for i in rest) + (_size(a.shape, axes),))
    ax = m.ndim - 1
    s = sort(m, axis=ax)
    n = m.shape[ax]
    lo = lax.slice_in_dim(s, (n - 1) // 2, (n - 1) // 2 + 1, 1, ax)
    hi = lax.slice_in_dim(s, n // 2, n // 2 + 1, 1, ax)
    (lo, hi) = promote_dtypes_inexact(lo, hi)
    out = lax.squeeze(lax.mul(lax.add(lo, hi), lax.full(lo.shape, 0.5, lo.dtype)), (ax,))
    return _keepdims(out, a.shape, axes, keepdims)

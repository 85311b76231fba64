"""Reductions with ``axis``/``keepdims``, and cumulative operations."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import dtypes, lax
from ..core.errors import DTypeError, DTypeValueError, ShapeError
from ._core import (asarray, astype, axis_or_flat, broadcast_shapes, broadcast_to,
                    canonicalize_axes, canonicalize_axis, promote_dtypes, promote_dtypes_inexact)
from .shapes import atleast_2d, concatenate, diagonal, ravel, squeeze


def _array_like(a, name):
    """``a`` as an array; a list or tuple is refused, as in JAX (``jnp.sum([1, 2])`` would
    otherwise trace one value per element): TypeError."""
    if isinstance(a, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                        "position 0.")
    return asarray(a)


def _keepdims(out, in_shape, axes, keepdims):
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return lax.reshape(out, shape)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return dtypes.canonicalize(dtype, "sum")
    if x.dtype == dtypes.bool_ or (dtypes.is_int(x.dtype)
                                   and x.dtype.itemsize < dtypes.default_int.itemsize):
        return dtypes.default_int if x.dtype.kind != "u" else dtypes.default_uint
    return x.dtype


def _accumulates_in_float32(dtype) -> bool:
    """float16 and bfloat16 sums, means and variances accumulate in float32 and round once at
    the end, as JAX's do: a half-precision accumulator loses the small terms (10000 ones sum to
    2048 in float16, 256 in bfloat16) and a float16 partial sum overflows past 65504."""
    return np.dtype(dtype) in (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def _in_float32(fn, a, dtype, *args, **kwargs):
    """``fn`` of ``a`` computed in float32, rounded once to ``dtype``."""
    out = fn(lax.convert_element_type(a, np.float32, False), *args, **kwargs)
    return lax.convert_element_type(out, dtype, False)


def _strong(out):
    """Reductions return strongly typed arrays, as JAX's (``sum(0.5)`` is not weak)."""
    return lax.convert_element_type(out, out.dtype) if out.weak_type else out


def _additive(lax_fn, identity, name, doc):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
           promote_integers=True):
        _no_out(out, name)
        a = _array_like(a, name)
        axes = canonicalize_axes(axis, a.ndim, name)
        dt = _sum_dtype(a, dtype) if promote_integers or dtype is not None else a.dtype
        if where is not None:
            from .ufuncs import where as where_
            a = where_(where, a, identity)
        # computed in a strong type, as JAX's reductions are: a Python float's gradient then
        # comes back through this conversion, weakly typed
        a = lax.convert_element_type(a, dt, False) if a.dtype != dt or a.weak_type else a
        if _accumulates_in_float32(dt):
            out_ = _in_float32(fn, a, dt, axes, keepdims=keepdims)
        else:
            out_ = _keepdims(lax_fn(a, axes), a.shape, axes, keepdims)
        if initial is not None:   # combined in the result's dtype, as JAX does
            out_ = (lax.add if name == "sum" else lax.mul)(
                out_, lax.full(out_.shape, initial, out_.dtype))
        return _strong(out_)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


def _no_out(out, name):
    if out is not None:
        raise ValueError(f"{name}: out= is not supported, as in JAX (arrays are immutable)")


sum = _additive(  # noqa: A001
    lax.reduce_sum, 0, "sum", """Sum over ``axis`` (all axes when None).

    >>> jnp.sum(jnp.arange(6).reshape(2, 3), axis=0)
    Array([3, 5, 7], dtype=int32)
    """)
prod = _additive(lax.reduce_prod, 1, "prod", """The product of the elements along ``axis``
    (all of them when None).

    >>> jnp.prod(jnp.array([[1, 2], [3, 4]]), axis=1)
    Array([ 2, 12], dtype=int32)
    """)


def _size(shape, axes):
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None,
         upcast_f16_for_computation=True):
    """Arithmetic mean; integer inputs give the default float.

    >>> jnp.mean(jnp.array([[1.0, 2.0], [3.0, 5.0]]), axis=0)
    Array([2. , 3.5], dtype=float32)
    """
    _no_out(out, "mean")
    a = _array_like(a, "mean")
    axes = canonicalize_axes(axis, a.ndim, "mean")
    (af,) = promote_dtypes_inexact(a) if dtype is None else [astype(a, dtype)]
    af = _strong(af)
    if _accumulates_in_float32(af.dtype):
        return _in_float32(mean, af, af.dtype, axes, keepdims=keepdims, where=where)
    if where is not None:
        mask = broadcast_to(astype(asarray(where), bool), af.shape)
        w = astype(mask, af.dtype)
        # select, not multiply: masked-out entries may be NaN or inf (nanmean)
        kept = lax.select(mask, af, lax.full(af.shape, 0, af.dtype))
        return lax.div(sum(kept, axes, keepdims=keepdims), sum(w, axes, keepdims=keepdims))
    total = sum(af, axes, af.dtype, keepdims=keepdims)
    return lax.div(total, lax.full(total.shape, _size(a.shape, axes), total.dtype))


def _variance_dtype(a, dtype, name):
    if dtype is None:
        (af,) = promote_dtypes_inexact(a)
        return _strong(af)     # as JAX's: a Python float's gradient comes back weakly typed
    if not dtypes.is_float(dtypes.canonicalize(dtype)):
        raise DTypeValueError(f"dtype argument to jnp.{name} must be inexact; got {dtype}")
    return astype(a, dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """The variance along ``axis``, with ``ddof`` (or ``correction``) delta degrees of freedom;
    over the elements ``where`` selects when given.

    >>> jnp.var(jnp.array([1.0, 2.0, 3.0, 4.0]))
    Array(1.25, dtype=float32)
    """
    _no_out(out, "var")
    ddof = ddof if correction is None else correction
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim, "var")
    af = _variance_dtype(a, dtype, "var")
    if _accumulates_in_float32(af.dtype):
        return _in_float32(var, af, af.dtype, axes, ddof=ddof, keepdims=keepdims, where=where)
    if where is not None:
        return _masked_var(af, axes, ddof, keepdims, broadcast_to(asarray(where), af.shape))
    centered = lax.sub(af, broadcast_to(mean(af, axes, keepdims=True), af.shape))
    ss = sum(_abs2(centered), axes, keepdims=keepdims)
    n = _size(a.shape, axes) - ddof
    # no degrees of freedom left: NaN, as JAX gives (not a division by zero or a negative count)
    return lax.div(ss, lax.full(ss.shape, n if n > 0 else np.nan, ss.dtype))


def _abs2(c):
    """|c|**2, real for complex ``c``."""
    return lax.mul(c, c) if dtypes.kind(c.dtype) != "c" else \
        lax.real(lax.mul(c, lax.conj(c)))


def _masked_var(af, axes, ddof, keepdims, keep):
    """The variance of the entries ``keep`` selects (NaN where fewer than ``ddof + 1``)."""
    keep = broadcast_to(astype(keep, bool), af.shape)
    zero = lax.full(af.shape, 0, af.dtype)
    n = sum(astype(keep, af.dtype), axes, keepdims=True)
    mu = lax.div(sum(lax.select(keep, af, zero), axes, keepdims=True), n)
    c = lax.select(keep, lax.sub(af, broadcast_to(mu, af.shape)), zero)
    ss = sum(_abs2(c), axes, keepdims=keepdims)
    n = lax.real(n) if dtypes.kind(n.dtype) == "c" else n
    n = _keepdims(lax.reshape(n, tuple(d for i, d in enumerate(n.shape) if i not in axes)),
                  af.shape, axes, keepdims)
    dof = lax.sub(n, lax.full(n.shape, ddof, n.dtype))
    ok = lax.gt(dof, lax.full(n.shape, 0, n.dtype))
    safe = lax.select(ok, dof, lax.full(n.shape, 1, n.dtype))
    return lax.select(ok, lax.div(ss, safe), lax.full(ss.shape, np.nan, ss.dtype))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """The standard deviation along ``axis``, with ``ddof`` delta degrees of freedom.

    >>> jnp.std(jnp.array([1.0, 2.0, 3.0, 4.0]))
    Array(1.118034, dtype=float32)
    """
    _no_out(out, "std")
    a = asarray(a)
    af = _variance_dtype(a, dtype, "std")
    if _accumulates_in_float32(af.dtype):
        return _in_float32(std, af, af.dtype, axis, ddof=ddof, keepdims=keepdims, where=where,
                           correction=correction)
    return lax.sqrt(var(af, axis, None, None, ddof, keepdims, where=where,
                        correction=correction))


def _minmax_identity(name, dtype):
    if dtypes.kind(dtype) == "b":
        return name == "min"
    if dtypes.kind(dtype) in "iu":
        info = np.iinfo(dtype)
        return info.min if name == "max" else info.max
    return -np.inf if name == "max" else np.inf


def _minmax(prim_fn, name):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        _no_out(out, name)
        a = _strong(_array_like(a, name))
        axes = canonicalize_axes(axis, a.ndim, name)
        if where is not None:
            if initial is None:
                raise ValueError(f"{name}: a where= mask needs an initial= value (the "
                                 "reduction has no identity)")
            # masked out with the reduction's identity, as in JAX; initial= joins below, so a
            # tie between it and a kept element splits the slope only once
            from .ufuncs import where as where_
            a = where_(where, a, lax.full((), _minmax_identity(name, a.dtype), a.dtype,
                                          a.weak_type))
        if builtins.any(a.shape[ax] == 0 for ax in axes):
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {name} which has "
                                 "no identity")
            shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdims \
                else tuple(d for i, d in enumerate(a.shape) if i not in axes)
            return _strong(lax.full(shape, initial, a.dtype))
        out = _keepdims(prim_fn(a, axes), a.shape, axes, keepdims)
        if initial is not None:   # in the array's dtype, as JAX does: no promotion
            from .ufuncs import maximum, minimum
            initial = lax.convert_element_type(initial, a.dtype)
            out = (maximum if name == "max" else minimum)(out, initial)
        return _strong(out)
    fn.__name__ = name
    fn.__doc__ = (f"The {name}imum over ``axis``.\n\n"
                  f"    >>> jnp.{name}(jnp.array([[1, 5], [4, 2]]), axis=0)\n"
                  f"    Array([{'4, 5' if name == 'max' else '1, 2'}], dtype=int32)\n    ")
    return fn


max = amax = _minmax(lax.reduce_max, "max")  # noqa: A001
min = amin = _minmax(lax.reduce_min, "min")  # noqa: A001


def ptp(a, axis=None, keepdims=False):
    """The range (maximum minus minimum) along ``axis``.

    >>> jnp.ptp(jnp.array([[1, 5], [2, 3]]), axis=1)
    Array([4, 1], dtype=int32)
    """
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def _arg(prim_fn, name, doc):
    def fn(a, axis=None, out=None, keepdims=None):
        _no_out(out, name)
        a = asarray(a)
        if dtypes.kind(a.dtype) == "c":
            raise DTypeError(f"{name} does not accept dtype {a.dtype}: complex numbers have no "
                             "order, as in JAX")
        if axis is None:
            out = prim_fn(lax.reshape(a, (a.size,)), 0, dtypes.default_int)
            return lax.reshape(out, (1,) * a.ndim) if keepdims else out
        ax = canonicalize_axis(axis, a.ndim, name)
        out = prim_fn(a, ax, dtypes.default_int)
        return _keepdims(out, a.shape, (ax,), keepdims)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


argmax = _arg(lax.argmax, "argmax", """The index of the largest element along ``axis`` (of the
    flattened array when None); the first one on ties.

    >>> jnp.argmax(jnp.array([[1, 7, 7], [9, 2, 3]]), axis=1)
    Array([1, 0], dtype=int32)
    """)
argmin = _arg(lax.argmin, "argmin", """The index of the smallest element along ``axis`` (of the
    flattened array when None); the first one on ties.

    >>> jnp.argmin(jnp.array([[4, 1], [0, 5]]))
    Array(2, dtype=int32)
    """)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether any element along ``axis`` is true (nonzero).

    >>> jnp.any(jnp.array([[True, False], [False, False]]), axis=1)
    Array([ True, False], dtype=bool)
    """
    _no_out(out, "any")
    a = astype(asarray(a), bool)
    axes = canonicalize_axes(axis, a.ndim, "any")
    if where is not None:
        a = lax.select(broadcast_to(astype(asarray(where), bool), a.shape), a,
                       lax.full(a.shape, False, a.dtype))
    return _keepdims(lax.reduce_or(a, axes), a.shape, axes, keepdims)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether every element along ``axis`` is true (nonzero).

    >>> jnp.all(jnp.array([[True, False], [True, True]]), axis=1)
    Array([False,  True], dtype=bool)
    """
    _no_out(out, "all")
    a = astype(asarray(a), bool)
    axes = canonicalize_axes(axis, a.ndim, "all")
    if where is not None:
        a = lax.select(broadcast_to(astype(asarray(where), bool), a.shape), a,
                       lax.full(a.shape, True, a.dtype))
    return _keepdims(lax.reduce_and(a, axes), a.shape, axes, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements along ``axis``.

    >>> jnp.count_nonzero(jnp.array([[1, 0], [2, 3]]), axis=1)
    Array([1, 2], dtype=int32)
    """
    return sum(astype(asarray(a), bool), axis, keepdims=keepdims)


def _cumulative(lax_fn, name, promote_small_int=False):
    def fn(a, axis=None, dtype=None):
        a, ax = axis_or_flat(asarray(a), axis, name)
        if dtype is not None or promote_small_int:
            dt = _sum_dtype(a, dtype)
        else:   # as JAX: small integers keep their dtype, booleans count in the default int
            dt = dtypes.default_int if a.dtype == dtypes.bool_ else a.dtype
        if a.dtype != dt or a.weak_type:
            a = lax.convert_element_type(a, dt)
        if _accumulates_in_float32(dt):
            return _in_float32(lax_fn, a, dt, ax)
        return lax_fn(a, ax)
    fn.__name__ = name
    fn.__doc__ = (f"Cumulative {name[3:]} along ``axis`` (the flattened array when None).\n\n"
                  f"    >>> jnp.{name}(jnp.array([1, 2, 3]))\n"
                  f"    Array([1, {'3, 6' if name == 'cumsum' else '2, 6'}], dtype=int32)\n    ")
    return fn


cumsum = _cumulative(lax.cumsum, "cumsum")
cumprod = _cumulative(lax.cumprod, "cumprod")


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """The sum along ``axis``, counting NaNs as zero.

    >>> jnp.nansum(jnp.array([1.0, jnp.nan, 3.0]))
    Array(4., dtype=float32)
    """
    from .ufuncs import isnan, where as where_
    a = asarray(a)
    return sum(where_(isnan(a), 0, a), axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """The mean along ``axis``, ignoring NaNs.

    >>> jnp.nanmean(jnp.array([1.0, jnp.nan, 3.0]))
    Array(2., dtype=float32)
    """
    from .ufuncs import isnan, logical_and, logical_not
    a = asarray(a)
    keep = logical_not(isnan(a)) if where is None else logical_and(logical_not(isnan(a)), where)
    return mean(a, axis, dtype, out, keepdims, where=keep)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The mean along ``axis``, weighted by ``weights`` when given; with ``returned``, also
    the sum of the weights.

    >>> jnp.average(jnp.array([1.0, 2.0, 4.0]), weights=jnp.array([1.0, 1.0, 2.0]))
    Array(2.75, dtype=float32)
    """
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        n = asarray(a).size // builtins.max(avg.size, 1) if asarray(a).size else 0
        return avg, lax.full(avg.shape, n, avg.dtype)
    from .ufuncs import multiply
    a, w = promote_dtypes_inexact(a, weights)
    w = broadcast_to(w, a.shape) if w.ndim == a.ndim else _expand_weights(w, a, axis)
    total = sum(w, axis, keepdims=keepdims)
    avg = lax.div(sum(multiply(a, w), axis, keepdims=keepdims), total)
    return (avg, total) if returned else avg


def _expand_weights(w, a, axis):
    ax = canonicalize_axis(axis, a.ndim, "average")
    return lax.broadcast_in_dim(w, a.shape, (ax,))


def median(a, axis=None, keepdims=False):
    """The median over ``axis`` (an int, a tuple of ints, or None for all axes); NaN where a
    slice has NaNs, as in JAX.

    >>> jnp.median(jnp.array([3.0, 1.0, 4.0, 1.5]))
    Array(2.25, dtype=float32)
    """
    return _quantile(a, 0.5, axis, "midpoint", keepdims, False, "median")


# ---------------------------------------------------------------------------------------------
# differences, integrals and cumulative functions of the array API


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (booleans: ``!=``).

    >>> jnp.diff(jnp.asarray([1.0, 4.0, 9.0]))
    Array([3., 5.], dtype=float32)
    """
    a = asarray(a)
    n = int(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative, got {n}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = canonicalize_axis(axis, a.ndim, "diff")
    if n == 0:
        return a
    parts = [prepend, a, append]
    if prepend is not None or append is not None:
        parts = [p for p in parts if p is not None]
        parts = promote_dtypes(*parts)
        # a scalar stands for a slab of width 1 along ``axis``, as in NumPy
        edge = a.shape[:ax] + (1,) + a.shape[ax + 1:]
        a = lax.concatenate([broadcast_to(p, edge) if p.ndim == 0 else p for p in parts], ax)
    for _ in range(n):
        m = a.shape[ax]
        hi = lax.slice_in_dim(a, builtins.min(m, 1), m, 1, ax)
        lo = lax.slice_in_dim(a, 0, builtins.max(m - 1, 0), 1, ax)
        a = lax.ne(hi, lo) if a.dtype == dtypes.bool_ else lax.sub(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array, with optional ends.

    >>> jnp.ediff1d(jnp.array([1, 4, 9]))
    Array([3, 5], dtype=int32)
    """
    ary = asarray(ary)
    if ary.dtype == dtypes.bool_:
        raise DTypeError("ediff1d: subtraction does not accept dtype bool, as in JAX")
    d = diff(ravel(ary))
    parts = [ravel(asarray(to_begin, d.dtype)) if to_begin is not None else None, d,
             ravel(asarray(to_end, d.dtype)) if to_end is not None else None]
    parts = [p for p in parts if p is not None]
    return concatenate(parts) if len(parts) > 1 else d


def _cumulative_with_initial(fn, identity, name):
    def f(x, /, *, axis=None, dtype=None, include_initial=False):
        x = asarray(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError(f"{name}: axis= is required for an input of {x.ndim} "
                                 f"dimensions (shape {x.shape})")
            axis = 0
        if x.ndim == 0:
            raise ValueError(f"{name}: the input must be at least one dimensional")
        ax = canonicalize_axis(axis, x.ndim, name)
        out = fn(x, ax, dtype)
        if include_initial:
            shape = out.shape[:ax] + (1,) + out.shape[ax + 1:]
            out = lax.concatenate([lax.full(shape, identity, out.dtype), out], ax)
        return out
    f.__name__ = name
    f.__doc__ = (f"Cumulative {name[11:]} along ``axis`` (array API), optionally starting with "
                 f"the identity ``{identity}``.\n\n"
                 f"    >>> jnp.{name}(jnp.array([1, 2, 3]), include_initial=True)\n"
                 f"    Array([{identity}, 1, {'3, 6' if identity == 0 else '2, 6'}], "
                 "dtype=int32)\n    ")
    return f


_cumsum_wide = _cumulative(lax.cumsum, "cumsum", promote_small_int=True)
# cumulative_sum widens small integers as sum does; cumulative_prod keeps them (JAX)
cumulative_sum = _cumulative_with_initial(lambda x, ax, dt: _cumsum_wide(x, ax, dt), 0,
                                          "cumulative_sum")
cumulative_prod = _cumulative_with_initial(lambda x, ax, dt: cumprod(x, ax, dt), 1,
                                           "cumulative_prod")


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (samples at ``x`` or spaced
    ``dx``).

    >>> jnp.trapezoid(jnp.asarray([1.0, 2.0, 3.0]))
    Array(4., dtype=float32)
    """
    from .ufuncs import multiply
    y = asarray(y)
    ax = canonicalize_axis(axis, y.ndim, "trapezoid")
    if x is None:
        (y,) = promote_dtypes_inexact(y)
        d = asarray(dx)
        if d.ndim == 0:   # JAX's form: dx * (sum - (first + last) / 2), NaN next to an inf
            if y.shape[ax] == 0:
                raise IndexError(f"trapezoid: index is out of bounds for axis {ax} with size 0")
            ends = lax.add(lax.index_in_dim(y, 0, ax, False),
                           lax.index_in_dim(y, y.shape[ax] - 1, ax, False))
            inner = lax.sub(sum(y, ax), lax.mul(lax.full((), 0.5, y.dtype), ends))
            return multiply(dx, inner)
    else:
        y, x = promote_dtypes_inexact(y, x)
        if x.ndim == 1:
            if x.shape[0] != y.shape[ax]:
                raise ValueError(f"trapezoid: x of shape {x.shape} does not match y of shape "
                                 f"{y.shape} along axis {ax}")
            d = lax.broadcast_in_dim(diff(x), y.shape[:ax] + (x.shape[0] - 1,) + y.shape[ax + 1:],
                                     (ax,))
        else:
            d = diff(x, axis=ax)
    n = y.shape[ax]
    mid = lax.add(lax.slice_in_dim(y, builtins.min(n, 1), n, 1, ax),
                  lax.slice_in_dim(y, 0, builtins.max(n - 1, 0), 1, ax))
    shape = broadcast_shapes(mid.shape, d.shape, op="trapezoid")
    prod_ = multiply(broadcast_to(mid, shape), broadcast_to(d, shape))
    return lax.mul(sum(prod_, ax), lax.full((), 0.5, prod_.dtype))


# ---------------------------------------------------------------------------------------------
# NaN-ignoring reductions


def _nan_replaced(a, value):
    from .ufuncs import isnan
    a = _strong(asarray(a))
    if not dtypes.is_float(a.dtype):
        return a
    return lax.select(isnan(a), lax.full(a.shape, value, a.dtype), a)


def _all_nan(a, axis, keepdims):
    from .ufuncs import isnan
    return all(isnan(a), axis, keepdims=keepdims)


def _nan_minmax(reduce_fn, fill, name):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        a = asarray(a)
        kw = {} if initial is None else {"initial": initial}
        out_ = reduce_fn(_nan_replaced(a, fill), axis, keepdims=keepdims, where=where, **kw)
        if not dtypes.is_float(a.dtype) or initial is not None:
            return out_
        # a slice of only NaNs reduces to NaN, as in NumPy and JAX
        every = _all_nan(a, axis, keepdims)
        return lax.select(every, lax.full(out_.shape, np.nan, out_.dtype), out_)
    fn.__name__ = name
    fn.__doc__ = (f"The {name[3:]}imum over ``axis``, ignoring NaNs (NaN where a slice is all "
                  "NaN).\n\n    >>> " + name + "(jnp.asarray([1.0, jnp.nan, 3.0]))\n    Array(" +
                  ("3." if name == "nanmax" else "1.") + ", dtype=float32)")
    return fn


nanmax = _nan_minmax(max, -np.inf, "nanmax")
nanmin = _nan_minmax(min, np.inf, "nanmin")


def _nan_arg(arg_fn, fill, name):
    def fn(a, axis=None, out=None, keepdims=False):
        a = asarray(a)
        out_ = arg_fn(_nan_replaced(a, fill), axis, keepdims=keepdims)
        if not dtypes.is_float(a.dtype):
            return out_
        # JAX's convention for a slice of only NaNs: -1
        every = _all_nan(a, axis, keepdims)
        return lax.select(every, lax.full(out_.shape, -1, out_.dtype), out_)
    fn.__name__ = name
    fn.__doc__ = (f"Index of the {name[6:]}imum, ignoring NaNs (-1 where a slice is all NaN)."
                  f"\n\n    >>> jnp.{name}(jnp.array([1.0, jnp.nan, 3.0]))\n"
                  f"    Array({2 if name == 'nanargmax' else 0}, dtype=int32)\n    ")
    return fn


nanargmax = _nan_arg(argmax, -np.inf, "nanargmax")
nanargmin = _nan_arg(argmin, np.inf, "nanargmin")


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """The product over ``axis``, treating NaNs as one.

    >>> jnp.nanprod(jnp.array([2.0, jnp.nan, 3.0]))
    Array(6., dtype=float32)
    """
    return prod(_nan_replaced(a, 1), axis, dtype, out, keepdims, initial, where)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum, treating NaNs as zero.

    >>> jnp.nancumsum(jnp.asarray([1.0, jnp.nan, 2.0]))
    Array([1., 1., 3.], dtype=float32)
    """
    return cumsum(_nan_replaced(a, 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product, treating NaNs as one.

    >>> jnp.nancumprod(jnp.array([2.0, jnp.nan, 3.0]))
    Array([2., 2., 6.], dtype=float32)
    """
    return cumprod(_nan_replaced(a, 1), axis, dtype)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """The variance over ``axis`` of the non-NaN entries (NaN where fewer than ``ddof + 1``).

    >>> jnp.nanvar(jnp.array([1.0, jnp.nan, 3.0]))
    Array(1., dtype=float32)
    """
    from .ufuncs import isnan, logical_and, logical_not
    a = asarray(a)
    (af,) = promote_dtypes_inexact(a) if dtype is None else [astype(a, dtype)]
    af = _strong(af)
    axes = canonicalize_axes(axis, af.ndim, "nanvar")
    keep = logical_not(isnan(af))
    if where is not None:
        keep = logical_and(keep, where)
    return _masked_var(af, axes, ddof, keepdims, keep)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """The standard deviation over ``axis`` of the non-NaN entries.

    >>> jnp.nanstd(jnp.array([1.0, jnp.nan, 3.0]))
    Array(1., dtype=float32)
    """
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where))


# ---------------------------------------------------------------------------------------------
# quantiles


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _aligned_weights(a, weights, axis, method, name):
    """``a`` and ``weights`` promoted together, ``weights`` broadcast to ``a``'s shape (they may
    have the shape of the reduced axes alone), as JAX checks them."""
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
        return a, None
    weights = asarray(weights)
    if dtypes.kind(weights.dtype) == "c":
        raise ValueError(f"{name}: weights cannot be complex, got {weights.dtype}")
    if method != "inverted_cdf":
        raise NotImplementedError(f"{name}: method {method!r} does not take weights; only "
                                  "'inverted_cdf' does, as in JAX")
    a, weights = promote_dtypes_inexact(a, weights)
    if weights.shape != a.shape:
        if axis is None:
            raise ValueError(f"{name}: weights of shape {weights.shape} must have a's shape "
                             f"{a.shape} when axis is None")
        axes = canonicalize_axes(axis, a.ndim, name)
        if weights.shape != tuple(a.shape[i] for i in axes):
            raise ValueError(f"{name}: weights shape {weights.shape} must match the reduced "
                             f"axes {tuple(a.shape[i] for i in axes)} of shape {a.shape}")
        weights = lax.broadcast_in_dim(weights, a.shape, axes)
    return a, weights


def _inverted_cdf(m, w, qs, count):
    """The first sorted value whose cumulative weight reaches ``q`` times the total (NaN data
    weighs nothing; a negative or NaN weight makes the slice's result NaN), as JAX's
    method='inverted_cdf'."""
    from .ufuncs import isnan, where as where_
    w = lax.full(m.shape, 1, m.dtype) if w is None else w
    s, w = lax.sort((m, w), m.ndim - 1, num_keys=1)
    zero = lax.full(w.shape, 0, w.dtype)
    bad = lax.bitwise_or(lax.lt(w, zero), isnan(w))
    w = where_(lax.bitwise_or(bad, isnan(s)), zero, w)
    cw = lax.cumsum(w, m.ndim - 1)
    total = lax.slice_in_dim(cw, m.shape[-1] - 1, m.shape[-1], axis=m.ndim - 1)
    target = lax.mul(qs, broadcast_to(total, qs.shape))
    grid = qs.shape + (m.shape[-1],)
    below = lax.lt(broadcast_to(lax.expand_dims(cw, (m.ndim - 1,)), grid),
                   broadcast_to(lax.expand_dims(target, (m.ndim,)), grid))
    idx = sum(astype(below, dtypes.int32), -1)
    last = astype(broadcast_to(count, qs.shape), dtypes.int32) - 1
    idx = lax.max_(lax.min_(idx, last), lax.full(idx.shape, 0, idx.dtype))
    out = lax.take_along_axis(s, idx, m.ndim - 1)
    return where_(broadcast_to(any(bad, -1, keepdims=True), out.shape), np.nan, out)


def _quantile(a, q, axis, method, keepdims, ignore_nan, name, weights=None):
    """Quantiles ``q`` (in [0, 1]) of ``a`` over ``axis``: shape ``q.shape`` + the kept dims.
    All reduced axes are merged into one last axis and sorted; NaNs sort last, so a NaN-free
    prefix of ``count`` entries holds the values the quantile interpolates between."""
    from .ufuncs import isnan, where as where_
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"{name}: method must be one of {_QUANTILE_METHODS}, got {method!r}")
    # q takes a's dtype: int32 data gives float32, as in JAX
    a, weights = _aligned_weights(asarray(a), weights, axis, method, name)
    q = asarray(q)
    q = lax.convert_element_type(q, a.dtype) if q.weak_type or dtypes.kind(q.dtype) != "f" \
        else q
    if dtypes.kind(a.dtype) == "c":
        raise DTypeValueError(f"{name} does not support complex input, got {a.dtype}, as in "
                              "JAX (the operation is poorly defined)")
    axes = canonicalize_axes(axis, a.ndim, name)
    rest = [i for i in range(a.ndim) if i not in axes]
    rest_shape = tuple(a.shape[i] for i in rest)
    n = _size(a.shape, axes)
    if n == 0:
        raise ShapeError(f"{name}: cannot take a quantile of an empty reduction (shape "
                         f"{a.shape}, axis {axis})")
    def merged(x):
        return lax.reshape(lax.transpose(x, tuple(rest) + axes), rest_shape + (n,))
    m = merged(a)
    s = lax.sort(m, -1)
    nan = isnan(m)
    nq = q.size
    qs = lax.broadcast_in_dim(lax.reshape(q, (nq,)), rest_shape + (nq,), (len(rest),))
    if ignore_nan:
        count = sum(astype(lax.bitwise_not(nan), a.dtype), -1, keepdims=True)
    else:
        count = lax.full(rest_shape + (1,), n, a.dtype)
    last = lax.sub(broadcast_to(count, qs.shape), lax.full(qs.shape, 1, a.dtype))
    pos = lax.mul(qs, lax.max_(last, lax.full(qs.shape, 0, a.dtype)))
    zero = lax.full(qs.shape, 0, a.dtype)
    lo = lax.max_(lax.min_(lax.floor(pos), last), zero)
    hi = lax.max_(lax.min_(lax.ceil(pos), last), zero)
    if method == "nearest":     # a tie goes to the lower neighbour, as in JAX
        lo = hi = lax.select(lax.le(lax.sub(pos, lax.floor(pos)), lax.full(qs.shape, 0.5, a.dtype)),
                             lo, hi)
    if method == "inverted_cdf":
        return _finish_quantile(_inverted_cdf(m, None if weights is None else merged(weights),
                                              qs, count),
                                a, q, axes, rest, rest_shape, count, nan, keepdims, ignore_nan)
    take = (lambda i: lax.take_along_axis(s, lax.convert_element_type(i, dtypes.int32), m.ndim - 1))
    lo_v, hi_v = take(lo), take(hi)
    if method == "linear":   # as weights, as JAX does: an infinite end stays infinite
        w_hi = lax.sub(pos, lo)
        out = lax.add(lax.mul(lo_v, lax.sub(lax.full(qs.shape, 1, a.dtype), w_hi)),
                      lax.mul(hi_v, w_hi))
    elif method == "midpoint":
        out = lax.mul(lax.add(lo_v, hi_v), lax.full(qs.shape, 0.5, a.dtype))
    else:
        out = hi_v if method == "higher" else lo_v
    return _finish_quantile(out, a, q, axes, rest, rest_shape, count, nan, keepdims, ignore_nan)


def _finish_quantile(out, a, q, axes, rest, rest_shape, count, nan, keepdims, ignore_nan):
    """NaN where a slice has none to take a quantile of; ``q``'s axes first, then the kept."""
    from .ufuncs import where as where_
    qs_shape = out.shape
    zero = lax.full(qs_shape, 0, count.dtype)
    empty = lax.le(broadcast_to(count, qs_shape), zero) if ignore_nan else \
        broadcast_to(any(nan, -1, keepdims=True), qs_shape)
    out = where_(empty, np.nan, out)
    out = lax.transpose(out, (len(rest),) + tuple(range(len(rest))))
    kept = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdims else rest_shape
    return lax.reshape(out, q.shape + kept)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None, interpolation=None):
    """The ``q``-th quantiles (``q`` in [0, 1], any shape) over ``axis``; NaN where a slice has
    NaNs. ``method`` is one of linear (default), lower, higher, midpoint, nearest.

    >>> jnp.quantile(jnp.asarray([1.0, 2.0, 3.0, 4.0]), 0.5)
    Array(2.5, dtype=float32)
    >>> jnp.quantile(jnp.asarray([1.0, 5.0, 3.0]), 0.5, weights=jnp.asarray([1.0, 0.0, 2.0]),
    ...              method="inverted_cdf")
    Array(3., dtype=float32)
    """
    return _quantile(a, q, axis, interpolation or method, keepdims, False, "quantile", weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """``quantile`` ignoring NaNs (NaN where a slice is all NaN).

    >>> jnp.nanquantile(jnp.array([1.0, jnp.nan, 3.0]), 0.5)
    Array(2., dtype=float32)
    """
    return _quantile(a, q, axis, interpolation or method, keepdims, True, "nanquantile", weights)


def _percent(a, q):
    """``a`` as a float array and ``q / 100``; Python numbers in ``q`` take ``a``'s dtype."""
    (a,) = promote_dtypes_inexact(a)
    (q,) = promote_dtypes_inexact(q if hasattr(q, "dtype") else asarray(q, a.dtype))
    return a, lax.div(q, lax.full(q.shape, 100, q.dtype))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th percentiles (``q`` in [0, 100]) over ``axis``.

    >>> jnp.percentile(jnp.asarray([1.0, 2.0, 3.0, 4.0]), 25.0)
    Array(1.75, dtype=float32)
    """
    a, q = _percent(a, q)
    return _quantile(a, q, axis, interpolation or method, keepdims, False, "percentile", weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """``percentile`` ignoring NaNs.

    >>> jnp.nanpercentile(jnp.array([1.0, jnp.nan, 3.0]), 50)
    Array(2., dtype=float32)
    """
    a, q = _percent(a, q)
    return _quantile(a, q, axis, interpolation or method, keepdims, True, "nanpercentile", weights)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over ``axis`` ignoring NaNs.

    >>> jnp.nanmedian(jnp.asarray([1.0, jnp.nan, 3.0]))
    Array(2., dtype=float32)
    """
    return _quantile(a, 0.5, axis, "linear", keepdims, True, "nanmedian")


# ---------------------------------------------------------------------------------------------
# covariance


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """Covariance matrix of the variables in the rows of ``m`` (columns if not ``rowvar``).

    >>> jnp.cov(jnp.asarray([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    """
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError(f"cov: m has more than 2 dimensions (shape {m.shape})")
    args = [m] if y is None else [m, asarray(y)]
    xs = promote_dtypes_inexact(*args)
    if dtype is not None:
        xs = [astype(x, dtype) for x in xs]
    xs = [atleast_2d(x) for x in xs]
    if not rowvar:
        xs = [lax.transpose(x, (1, 0)) if x.shape[0] != 1 else x for x in xs]
    if len(xs) == 2 and xs[0].shape[1] != xs[1].shape[1]:
        raise ValueError(f"cov: m and y must have the same number of observations, got shapes "
                         f"{m.shape} and {asarray(y).shape}")
    x = concatenate(xs, 0) if len(xs) == 2 else xs[0]
    if ddof is None:
        ddof = 0 if bias else 1
    nobs = x.shape[1]
    w = None
    for wt, name in ((fweights, "fweights"), (aweights, "aweights")):
        if wt is not None:
            (wt,) = promote_dtypes_inexact(wt)
            wt = lax.convert_element_type(wt, x.dtype)
            if wt.shape != (nobs,):
                raise ValueError(f"cov: {name} of shape {wt.shape} do not match {nobs} "
                                 "observations")
            w = wt if w is None else lax.mul(w, wt)
    if w is None:
        avg = mean(x, 1, keepdims=True)
        fact = lax.full((), nobs - ddof, x.dtype)
    else:
        wsum = sum(w)
        avg = lax.div(sum(lax.mul(x, broadcast_to(w, x.shape)), 1, keepdims=True), wsum)
        if ddof == 0:
            fact = wsum
        elif aweights is None:
            fact = lax.sub(wsum, lax.full((), ddof, x.dtype))
        else:
            aw = lax.convert_element_type(promote_dtypes_inexact(aweights)[0], x.dtype)
            fact = lax.sub(wsum, lax.div(lax.mul(lax.full((), ddof, x.dtype),
                                                 sum(lax.mul(w, aw))), wsum))
    xc = lax.sub(x, broadcast_to(avg, x.shape))
    xw = xc if w is None else lax.mul(xc, broadcast_to(w, x.shape))
    if dtypes.kind(xw.dtype) == "c":    # Hermitian: x @ conj(x).T, as NumPy and JAX
        xw = lax.conj(xw)
    c = lax.dot_general(xc, xw, (((1,), (1,)), ((), ())))
    return squeeze(lax.div(c, broadcast_to(fact, c.shape)))


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients of the variables in ``x`` (and ``y``).

    >>> jnp.corrcoef(jnp.array([1.0, 2.0, 3.0]), jnp.array([2.0, 4.0, 6.0]))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    from .ufuncs import clip
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return lax.div(c, c)
    d = diagonal(c)
    d = lax.sqrt(lax.real(d) if dtypes.kind(d.dtype) == "c" else d)
    d = lax.convert_element_type(d, c.dtype)
    n = d.shape[0]
    c = lax.div(c, lax.broadcast_in_dim(d, (n, n), (0,)))
    c = lax.div(c, broadcast_to(d, (n, n)))
    if dtypes.kind(c.dtype) == "c":    # each part clipped, as in JAX
        return lax.complex_(clip(lax.real(c), -1, 1), clip(lax.imag(c), -1, 1))
    return clip(c, -1, 1)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum along the ``offset`` diagonal of the ``axis1``, ``axis2`` planes.

    >>> jnp.trace(jnp.array([[1, 2], [3, 4]]))
    Array(5, dtype=int32)
    """
    return sum(diagonal(a, offset, axis1, axis2), -1, dtype=dtype)

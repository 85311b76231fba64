"""Array creation: zeros, ones, full, arange, linspace, eye, ..."""
from __future__ import annotations

import operator

import numpy as np

from ..core import dtypes, lax
from ..core.core import concrete_or_error, get_aval
from ..core.errors import DTypeError, ShapeError
from ._core import _is_scalar, asarray, broadcast_to, _own_copy, promote_dtypes_inexact


def _shape(shape):
    """A shape as a tuple of ints; a float (or other non-integer) entry is a TypeError, as in
    NumPy and JAX, not truncated."""
    import operator
    entries = (shape,) if not isinstance(shape, (tuple, list)) and np.ndim(shape) == 0 \
        else tuple(shape)
    try:
        return tuple(operator.index(s) for s in entries)
    except TypeError:
        raise DTypeError(f"shapes must be sequences of integers, got {shape!r}") from None


def _sizes(*sizes, what):
    """Matrix sizes as ints: non-integers are a TypeError, negative sizes a ShapeError."""
    got = [None if n is None else _shape(n)[0] for n in sizes]
    if any(n is not None and n < 0 for n in got):
        raise ShapeError(f"{what}: negative dimensions are not allowed, got "
                         f"{', '.join(map(str, sizes))}")
    return got


def _dtype(dtype, default=None, fun_name=None):
    return dtypes.canonicalize(dtype, fun_name) if dtype is not None else (default or dtypes.default_float)


def zeros(shape, dtype=None):
    """An array of zeros (default dtype float32).

    >>> jnp.zeros((2, 3)).shape
    (2, 3)
    """
    return lax.full(_shape(shape), 0, _dtype(dtype, fun_name="zeros"))


def ones(shape, dtype=None):
    """An array of ``shape`` filled with ones (float32 by default).

    >>> jnp.ones((2,))
    Array([1., 1.], dtype=float32)
    """
    return lax.full(_shape(shape), 1, _dtype(dtype, fun_name="ones"))


def empty(shape, dtype=None):
    """An array of ``shape`` (zeros: fnx has no uninitialized memory to hand out).

    >>> jnp.empty((2,))
    Array([0., 0.], dtype=float32)
    """
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (its dtype unless ``dtype`` is
    given).

    >>> jnp.full((2,), 7)
    Array([7, 7], dtype=int32, weak_type=True)
    """
    # a Python number goes straight to ``dtype`` (no rounding through the default float)
    dt = None if dtype is None else dtypes.canonicalize(dtype, "full")
    fill = asarray(fill_value, dt if _is_scalar(fill_value) else None)
    # as JAX's: a weakly typed fill (a Python number) without a dtype stays weakly typed
    weak = dtype is None and get_aval(fill).weak_type
    dt = fill.dtype if dt is None else dt
    if fill.ndim:
        return broadcast_to(lax.convert_element_type(fill, dt), _shape(shape))
    return lax.full(_shape(shape), fill, dt, weak_type=weak)


def _like(a, dtype, shape):
    aval = get_aval(a) if not isinstance(a, (list, tuple)) else get_aval(asarray(a))
    # a weakly typed ``a`` (a Python scalar) gives a weakly typed result, as in JAX
    return (_shape(shape) if shape is not None else aval.shape,
            dtypes.canonicalize(dtype, "zeros_like") if dtype is not None else aval.dtype,
            aval.weak_type and dtype is None)


def zeros_like(a, dtype=None, shape=None):
    """Zeros shaped like ``a``, of its dtype unless ``dtype`` is given.

    >>> jnp.zeros_like(jnp.array([1.5, 2.5]))
    Array([0., 0.], dtype=float32)
    """
    s, d, weak = _like(a, dtype, shape)
    return lax.full(s, 0, d, weak)


def ones_like(a, dtype=None, shape=None):
    """Ones shaped like ``a``, of its dtype unless ``dtype`` is given.

    >>> jnp.ones_like(jnp.arange(3))
    Array([1, 1, 1], dtype=int32)
    """
    s, d, weak = _like(a, dtype, shape)
    return lax.full(s, 1, d, weak)


def empty_like(a, dtype=None, shape=None):
    """An array shaped like ``a`` (zeros, as ``empty``).

    >>> jnp.empty_like(jnp.ones((2, 2), jnp.int32))
    Array([[0, 0],
           [0, 0]], dtype=int32)
    """
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """An array shaped like ``a`` (and of its dtype, unless given) filled with
    ``fill_value``.

    >>> jnp.full_like(jnp.ones(2), 3)
    Array([3., 3.], dtype=float32)
    """
    s, d, weak = _like(a, dtype, shape)
    out = full(s, fill_value, d)
    return lax.convert_element_type(out, d, True) if weak else out


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)``; the bounds must be concrete.

    >>> jnp.arange(3)
    Array([0, 1, 2], dtype=int32)
    """
    vals = [concrete_or_error(v, "arange's bounds") if v is not None else None
            for v in (start, stop, step)]
    if vals[2] is not None and vals[2] == 0:
        raise ZeroDivisionError("arange's step is zero")       # as NumPy and JAX
    out = np.arange(*vals)      # (NumPy reads a lone start, with or without step, as stop)
    if dtype is None:
        is_int = all(v is None or np.asarray(v).dtype.kind in "iub" for v in vals)
        dt = dtypes.default_int if is_int else dtypes.default_float
    else:
        dt = dtypes.canonicalize(dtype, "arange")
    return asarray(out.astype(dt))


def _two_sum(a, b):
    s = lax.add(a, b)
    bb = lax.sub(s, a)
    return s, lax.add(lax.sub(a, lax.sub(s, bb)), lax.sub(b, bb))


def _split(x):
    c = lax.mul(x, lax.full(x.shape, 4097.0 if x.dtype.itemsize <= 4 else 134217729.0, x.dtype))
    hi = lax.sub(c, lax.sub(c, x))
    return hi, lax.sub(x, hi)


def _fma(x, y, z):
    """x * y + z rounded once (error-free transformations: Dekker's product, Knuth's sum)."""
    p = lax.mul(x, y)
    (xh, xl), (yh, yl) = _split(x), _split(y)
    e = lax.add(lax.add(lax.add(lax.sub(lax.mul(xh, yh), p), lax.mul(xh, yl)), lax.mul(xl, yh)),
                lax.mul(xl, yl))
    s, err = _two_sum(p, z)
    return lax.add(s, lax.add(err, e))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced samples from ``start`` to ``stop`` (traced bounds allowed).

    >>> jnp.linspace(0.0, 1.0, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    num = operator.index(num)
    if num < 0:
        raise ShapeError(f"linspace: number of samples, {num}, must be non-negative")
    if dtype is not None:
        dtype = dtypes.canonicalize(dtype, "linspace")
    if dtype is not None and dtypes.is_float(dtype):
        # Python bounds are taken exactly in the requested float dtype
        start, stop = (asarray(v, dtype) if _is_scalar(v) else v for v in (start, stop))
    start, stop = promote_dtypes_inexact(start, stop)
    dt = dtypes.canonicalize(dtype) if dtype is not None else start.dtype
    if start.shape != stop.shape:
        bounds = np.broadcast_shapes(start.shape, stop.shape)
        start, stop = (lax.broadcast_in_dim(v, bounds, tuple(range(len(bounds) - v.ndim,
                                                                   len(bounds))))
                       for v in (start, stop))
    div = (num - 1) if endpoint else num
    step = lax.div(lax.sub(stop, start), lax.full(stop.shape, max(div, 1), stop.dtype))
    shape = (num,) + start.shape
    rest = tuple(range(1, len(shape)))
    # start * (1 - t) + stop * t with t = i / div, rounded as XLA's CPU code rounds it: the
    # division becomes a product with the reciprocal, the stop term i * (stop / div), and the
    # sum a fused multiply-add; so both ends are exact and the samples (a histogram's edges,
    # so its counts) agree with JAX's bit for bit
    real = dtypes.finfo(start.dtype).dtype
    inv = lax.full((), 1 / np.asarray(max(div, 1), real), real)
    i = lax.iota(real, num)
    t = lax.convert_element_type(lax.mul(i, lax.broadcast_in_dim(inv, (num,), ())), start.dtype)
    one = lax.full(shape, 1, start.dtype)
    start_b = lax.broadcast_in_dim(start, shape, rest)
    one_minus_t = lax.sub(one, lax.broadcast_in_dim(t, shape, (0,)))
    stop_step = lax.broadcast_in_dim(
        lax.mul(stop, lax.convert_element_type(lax.full(stop.shape, inv, real), start.dtype)), shape, rest)
    i = lax.broadcast_in_dim(lax.convert_element_type(i, start.dtype), shape, (0,))
    if np.dtype(start.dtype).kind == "c":
        out = lax.add(lax.mul(start_b, one_minus_t), lax.mul(i, stop_step))
    else:
        out = _fma(i, stop_step, lax.mul(start_b, one_minus_t))
        if 1 < num <= 35:   # unrolled, the sample at i = 1 multiplies by one: the other product fuses
            second = _fma(start_b[1:2], one_minus_t[1:2], stop_step[1:2])
            out = lax.concatenate([out[:1], second, out[2:]], 0)
    if endpoint and num > 1:
        last = lax.broadcast_in_dim(stop, (1,) + start.shape, rest)
        out = lax.concatenate([lax.slice_in_dim(out, 0, num - 1), last], 0)
    if num == 0 or num == 1 and endpoint:
        step = lax.full((), np.nan, stop.dtype)   # no step between samples: NaN, as in JAX
    if axis != 0:
        out = lax.moveaxis(out, 0, axis)
    if dtypes.is_int(dt):
        out = lax.floor(out)   # integer samples round towards -inf (NumPy 2, JAX)
    out = lax.convert_element_type(out, dt)
    return (out, step) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None):
    """``num`` numbers spaced evenly on a log scale, ``base ** start`` to ``base ** stop``.

    >>> jnp.logspace(0.0, 2.0, 3)
    Array([  1.,  10., 100.], dtype=float32)
    """
    from .ufuncs import power
    return power(base, linspace(start, stop, num, endpoint, dtype=dtype))


def eye(N, M=None, k=0, dtype=None):
    """A 2-D array with ones on the ``k``-th diagonal.

    >>> jnp.eye(2, 3, k=1)
    Array([[0., 1., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    N, M = _sizes(N, M, what="eye")
    return asarray(np.eye(N, N if M is None else M, operator.index(k), dtype=_dtype(dtype)))


def identity(n, dtype=None):
    """The ``n`` by ``n`` identity matrix.

    >>> jnp.identity(2, jnp.int32)
    Array([[1, 0],
           [0, 1]], dtype=int32)
    """
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """The ``N`` by ``M`` matrix with ones at and below the ``k``-th diagonal.

    >>> jnp.tri(3, dtype=jnp.int32)
    Array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]], dtype=int32)
    """
    N, M = _sizes(N, M, what="tri")
    return asarray(np.tri(N, M, operator.index(k), dtype=_dtype(dtype)))


def copy(a):
    """A copy of ``a``, with its own buffer: donating it to jit leaves ``a`` intact.

    >>> jnp.copy(jnp.arange(3))
    Array([0, 1, 2], dtype=int32)
    """
    return _own_copy(asarray(a))


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-d array of ``dtype`` read from the bytes of ``buffer``.

    >>> jnp.frombuffer(bytes([1, 2, 3]), jnp.uint8)
    Array([1, 2, 3], dtype=uint8)
    """
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` numbers spaced evenly on a log scale from ``start`` to ``stop`` (same sign).

    >>> jnp.geomspace(1.0, 100.0, 3)
    Array([  1.,  10., 100.], dtype=float32)
    """
    from .ufuncs import log10, power, sign
    start, stop = promote_dtypes_inexact(start, stop)
    s = sign(start)
    exponents = linspace(log10(start / s), log10(stop / s), num, endpoint, axis=axis)
    s = lax.expand_dims(s, (axis % exponents.ndim,)) if s.ndim else s
    out = s * power(10.0, exponents).astype(exponents.dtype)
    return out if dtype is None else out.astype(dtype)

"""Elementwise functions with NumPy's names, broadcasting and JAX's dtype promotion."""
from __future__ import annotations

import numpy as np

from ..core import dtypes, lax
from ..core.core import get_aval
from ..core.custom_derivatives import custom_jvp
from ..core import errors as _errors
from ._core import (asarray, astype, broadcast_arrays, broadcast_shapes, broadcast_to, is_array,
                    promote_and_broadcast, promote_dtypes, promote_dtypes_inexact, stack)


def _weak_as_jax(fn=None, *, all_weak=False):
    """Elementwise functions composed of several primitives (with constants of the operands'
    dtype) give JAX's weak type: that of the operands' promotion (weak when every operand is a
    Python scalar, or a Python float meets integers), so ``cbrt(0.5) * f16_array`` stays
    float16. With ``all_weak``, weak only when every operand is weak (JAX's hypot, gcd, ...).
    Boolean results are left as they are."""
    import functools

    if fn is None:
        return functools.partial(_weak_as_jax, all_weak=all_weak)

    from ..core.core import get_aval

    def typed(a):
        aval = get_aval(asarray(a) if isinstance(a, (list, tuple)) else a)
        return aval.dtype, aval.weak_type

    def fix(out, w):
        if out.dtype == dtypes.bool_ or get_aval(out).weak_type == w:
            return out
        return lax.convert_element_type(out, out.dtype, w)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        ts = [typed(a) for a in args]
        # Python bools count as weak next to a weak operand (JAX's hypot(False, 0.0) is weak)
        w = all(t[1] or isinstance(a, bool) for t, a in zip(ts, args)) and \
            any(t[1] for t in ts) if all_weak else dtypes.lattice_result_type(*ts)[1]
        if isinstance(out, tuple):
            return tuple(fix(o, w) for o in out)
        return fix(out, w)
    return wrapped


def _named(fn, name, summary, args, prints):
    """``fn`` named ``name``, documented by ``summary`` and an example: ``jnp.name(args)``
    prints ``prints`` (checked by the doctests, with x64 off)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{summary}\n\n    >>> jnp.{name}({args})\n    {prints}\n    "
    return fn


def _unary_inexact(prim_fn, name, args, prints):
    def fn(x):
        (x,) = promote_dtypes_inexact(x)
        return prim_fn(x)
    return _named(fn, name, f"Elementwise {name} (integers are promoted to the default float).",
                  args, prints)


def _unary(prim_fn, name, args, prints):
    def fn(x):
        return prim_fn(asarray(x))
    return _named(fn, name, f"Elementwise {name}.", args, prints)


def _binary(prim_fn, name, args, prints, inexact=False):
    def fn(x, y):
        x, y = promote_and_broadcast(x, y, op=name, inexact=inexact, keep_scalars=True)
        return prim_fn(x, y)
    return _named(fn, name, f"Elementwise {name} with broadcasting.", args, prints)


exp = _unary_inexact(lax.exp, "exp", "jnp.array([0.0, 1.0])",
                     "Array([1.      , 2.7182...], dtype=float32)")
log = _unary_inexact(lax.log, "log", "jnp.array([1.0, 2.0])",
                     "Array([0.       , 0.6931...], dtype=float32)")
log1p = _unary_inexact(lax.log1p, "log1p", "jnp.array([0.0, 1e-8])",
                       "Array([0.e+00, 1.e-08], dtype=float32)")
expm1 = _unary_inexact(lax.expm1, "expm1", "jnp.array([0.0, 1e-8])",
                       "Array([0.e+00, 1.e-08], dtype=float32)")
sqrt = _unary_inexact(lax.sqrt, "sqrt", "jnp.array([4, 9])",
                      "Array([2., 3.], dtype=float32)")
sin = _unary_inexact(lax.sin, "sin", "jnp.array([0.0, jnp.pi / 2])",
                     "Array([0., 1.], dtype=float32)")
cos = _unary_inexact(lax.cos, "cos", "jnp.array([0.0, jnp.pi])",
                     "Array([ 1., -1.], dtype=float32)")
tan = _unary_inexact(lax.tan, "tan", "jnp.array([0.0, jnp.pi / 4])",
                     "Array([0., 1.], dtype=float32)")
arcsin = _unary_inexact(lax.asin, "arcsin", "jnp.array([0.0, 1.0])",
                        "Array([0.       , 1.5707...], dtype=float32)")
arccos = _unary_inexact(lax.acos, "arccos", "jnp.array([1.0, 0.0])",
                        "Array([0.       , 1.5707...], dtype=float32)")
arctan = _unary_inexact(lax.atan, "arctan", "jnp.array([0.0, 1.0])",
                        "Array([0.       , 0.7853...], dtype=float32)")
sinh = _unary_inexact(lax.sinh, "sinh", "jnp.array([0.0, 1.0])",
                      "Array([0.       , 1.1752...], dtype=float32)")
cosh = _unary_inexact(lax.cosh, "cosh", "jnp.array([0.0, 1.0])",
                      "Array([1.       , 1.5430...], dtype=float32)")
tanh = _unary_inexact(lax.tanh, "tanh", "jnp.array([0.0, 1.0])",
                      "Array([0.       , 0.7615...], dtype=float32)")
arcsinh = _unary_inexact(lax.asinh, "arcsinh", "jnp.array([0.0, 1.0])",
                         "Array([0.       , 0.8813...], dtype=float32)")
arccosh = _unary_inexact(lax.acosh, "arccosh", "jnp.array([1.0, 2.0])",
                         "Array([0.      , 1.3169...], dtype=float32)")
arctanh = _unary_inexact(lax.atanh, "arctanh", "jnp.array([0.0, 0.5])",
                         "Array([0.        , 0.5493...], dtype=float32)")


def _rounding(prim_fn, name, args, prints):
    def fn(x):
        x = asarray(x)
        # an integer (or boolean) is already whole: returned as it is, dtype kept (JAX's rule)
        return x if dtypes.is_int(x.dtype) or x.dtype == dtypes.bool_ else inexact(x)
    inexact = _unary_inexact(prim_fn, name, args, prints)
    return _named(fn, name, f"Elementwise {name}; integers and booleans are returned unchanged.",
                  args, prints)


floor = _rounding(lax.floor, "floor", "jnp.array([-1.5, 1.5])",
                  "Array([-2.,  1.], dtype=float32)")
ceil = _rounding(lax.ceil, "ceil", "jnp.array([-1.5, 1.5])",
                 "Array([-1.,  2.], dtype=float32)")
negative = _unary(lax.neg, "negative", "jnp.array([1, -2])",
                  "Array([-1,  2], dtype=int32)")
def _sign(x):
    if x.dtype == dtypes.bool_:
        raise _errors.DTypeError("sign does not accept dtype bool, as in JAX")
    return lax.sign(x)


sign = _unary(_sign, "sign",
              "jnp.array([-2.0, 0.0, 3.0])", "Array([-1.,  0.,  1.], dtype=float32)")
_isfinite = _unary_inexact(lax.is_finite, "isfinite", "jnp.array([1.0, jnp.inf, jnp.nan])",
                           "Array([ True, False, False], dtype=bool)")


def _isfinite_any(x):
    x = asarray(x)
    if dtypes.is_int(x.dtype) or x.dtype == dtypes.bool_:
        return lax.full(x.shape, True, dtypes.bool_)   # strong, even for a Python int (JAX)
    return _isfinite(x)


isfinite = _named(_isfinite_any, "isfinite", "Elementwise isfinite (integers are all finite).",
                  "jnp.array([1.0, jnp.inf, jnp.nan])", "Array([ True, False, False], dtype=bool)")
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def add(x, y):
    """Elementwise add with broadcasting; on booleans it is logical or, as in NumPy.

    >>> jnp.add(jnp.array([1, 2]), 3)
    Array([4, 5], dtype=int32)
    >>> jnp.add(jnp.array([True, False]), False)
    Array([ True, False], dtype=bool)
    """
    x, y = promote_and_broadcast(x, y, op="add", keep_scalars=True)
    return lax.bitwise_or(x, y) if x.dtype == dtypes.bool_ else lax.add(x, y)


subtract = _binary(lax.sub, "subtract", "jnp.array([5, 7]), 2",
                   "Array([3, 5], dtype=int32)")


def multiply(x, y):
    """Elementwise multiply with broadcasting. A boolean array times a float or complex one
    selects (XLA's rewrite, so JAX's): ``inf * False`` is 0, as a mask is meant.

    >>> jnp.multiply(jnp.array([1.5, 2.0]), 2)
    Array([3., 4.], dtype=float32)
    >>> jnp.array([jnp.inf, 1.0]) * jnp.array([False, True])
    Array([0., 1.], dtype=float32)
    """
    masks = [asarray(v) if _is_bool_array(v) else None for v in (x, y)]
    x, y = promote_and_broadcast(x, y, op="multiply", keep_scalars=True)
    if (masks[0] is None) != (masks[1] is None) and np.dtype(x.dtype) in _MASKED_BY_SELECT:
        mask, other = (masks[0], y) if masks[0] is not None else (masks[1], x)
        shape = broadcast_shapes(mask.shape, other.shape)
        zero = lax.full(shape, 0, other.dtype, get_aval(other).weak_type)
        return lax.select(broadcast_to(mask, shape), broadcast_to(other, shape), zero)
    return lax.mul(x, y)


# the dtypes XLA's rewrite applies to on the CPU (bfloat16 is computed in float32 first)
_MASKED_BY_SELECT = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.complex64,
                                           np.complex128)}


maximum = _binary(lax.max_, "maximum", "jnp.array([1, 5]), jnp.array([3, 2])",
                  "Array([3, 5], dtype=int32)")
minimum = _binary(lax.min_, "minimum", "jnp.array([1, 5]), jnp.array([3, 2])",
                  "Array([1, 2], dtype=int32)")
arctan2 = _binary(lax.atan2, "arctan2", "jnp.array([1.0, -1.0]), jnp.array([0.0, 0.0])",
                  "Array([ 1.5707..., -1.5707...], dtype=float32)", inexact=True)
atan2 = arctan2
equal = _binary(lax.eq, "equal", "jnp.array([1, 2]), 2",
                "Array([False,  True], dtype=bool)")
not_equal = _binary(lax.ne, "not_equal", "jnp.array([1, 2]), 2",
                    "Array([ True, False], dtype=bool)")
less = _binary(lax.lt, "less", "jnp.array([1, 2]), 2",
               "Array([ True, False], dtype=bool)")
less_equal = _binary(lax.le, "less_equal", "jnp.array([1, 2]), 2",
                     "Array([ True,  True], dtype=bool)")
greater = _binary(lax.gt, "greater", "jnp.array([1, 2]), 1",
                  "Array([False,  True], dtype=bool)")
greater_equal = _binary(lax.ge, "greater_equal", "jnp.array([1, 2]), 2",
                        "Array([False,  True], dtype=bool)")
bitwise_and = _binary(lax.bitwise_and, "bitwise_and", "jnp.array([12, 10]), 6",
                      "Array([4, 2], dtype=int32)")
bitwise_or = _binary(lax.bitwise_or, "bitwise_or", "jnp.array([12, 10]), 6",
                     "Array([14, 14], dtype=int32)")
bitwise_xor = _binary(lax.bitwise_xor, "bitwise_xor", "jnp.array([12, 10]), 6",
                      "Array([10, 12], dtype=int32)")
nextafter = _binary(lax.nextafter, "nextafter", "jnp.array([1.0, 1.0]), jnp.array([2.0, 0.0])",
                    "Array([1.0000... , 0.9999...], dtype=float32)", inexact=True)


def positive(x):
    """Elementwise ``+x`` (a copy).

    >>> jnp.positive(jnp.array([-1, 2]))
    Array([-1,  2], dtype=int32)
    """
    return asarray(x)


def absolute(x):
    """Elementwise absolute value (``abs`` is the same function).

    >>> jnp.abs(jnp.array([-1.5, 0.0, 2.0]))
    Array([1.5, 0. , 2. ], dtype=float32)
    """
    x = asarray(x)
    return x if x.dtype == dtypes.bool_ or x.dtype.kind == "u" else lax.abs_(x)


abs = absolute  # noqa: A001 - NumPy's name


def true_divide(x, y):
    """``x / y``; integers divide to the default float, as NumPy does.

    >>> jnp.divide(jnp.array([1, 3]), 2)
    Array([0.5, 1.5], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="divide", inexact=True, keep_scalars=True)
    return lax.div(x, y)


divide = true_divide


@_weak_as_jax
def floor_divide(x, y):
    """Elementwise ``x1 // x2``, rounding toward minus infinity, as Python does.

    >>> jnp.floor_divide(jnp.array([7, -7]), 2)
    Array([ 3, -4], dtype=int32)
    """
    x, y = promote_and_broadcast(x, y, op="floor_divide")
    if x.dtype.kind == "u":
        return lax.div(x, y)
    if dtypes.is_int(x.dtype):
        # JAX's rule, which also fixes what x // 0 gives (XLA's x / 0 is -1, so -2 unless x == 0)
        q = lax.div(x, y)
        zero = lax.full(x.shape, 0, x.dtype)
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), zero))
        return lax.select(fix, lax.sub(q, lax.full(x.shape, 1, x.dtype)), q)
    return _float_floor_divide(x, y)


def _float_floor_divide(x, y):
    # NumPy's (and CPython's) float divmod: divide x minus its remainder, so that
    # floor_divide(x, y) * y + mod(x, y) == x; floor(x / y) would round 1.0 // 0.1 up to 10
    zero, one = lax.full(x.shape, 0, x.dtype), lax.full(x.shape, 1, x.dtype)
    mod = lax.rem(x, y)
    div = lax.div(lax.sub(x, mod), y)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.lt(y, zero), lax.lt(mod, zero)))
    div = lax.select(fix, lax.sub(div, one), div)
    fl = lax.floor(div)
    fl = lax.select(lax.gt(lax.sub(div, fl), lax.full(x.shape, 0.5, x.dtype)), lax.add(fl, one),
                    fl)
    # division by zero: x / y (inf or nan), as NumPy
    return lax.select(lax.eq(y, zero), lax.div(x, y), fl)


@_weak_as_jax
def remainder(x, y):
    """NumPy's ``mod``: the result takes the sign of the divisor.

    >>> jnp.mod(jnp.array([5, -5]), 3)
    Array([2, 1], dtype=int32)
    """
    x, y = promote_and_broadcast(x, y, op="remainder")
    zero = lax.full(x.shape, 0, x.dtype)
    if dtypes.is_int(x.dtype):     # x % 0 is 0, as in JAX
        y = lax.select(lax.eq(y, zero), lax.full(x.shape, 1, x.dtype), y)
    r = lax.rem(x, y)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


@_weak_as_jax
def fmod(x, y):
    """Elementwise remainder of ``x1 / x2`` with the sign of ``x1`` (C's fmod).

    >>> jnp.fmod(jnp.array([7, -7]), 3)
    Array([ 1, -1], dtype=int32)
    """
    x, y = promote_and_broadcast(x, y, op="fmod")
    if dtypes.is_int(x.dtype):      # an integer x fmod 0 is 0, as in JAX
        y = lax.select(lax.eq(y, lax.full(y.shape, 0, y.dtype)), lax.full(y.shape, 1, y.dtype), y)
    return lax.rem(x, y)


def power(x, y):
    """``x ** y``. A known integer exponent (a Python int, or a 0-d integer array that is no
    tracer) uses repeated multiplication in ``x``'s dtype (exact gradients at 0), as in JAX.

    >>> jnp.power(jnp.array([2.0, 3.0]), 2)
    Array([4., 9.], dtype=float32)
    """
    n = _concrete_integer(y)
    if n is not None:       # JAX's rule: a known integer exponent is an integer_pow
        x = asarray(x)
        if x.dtype == dtypes.bool_:
            x = astype(x, dtypes.default_int)
        if n < 0 and not dtypes.is_float(x.dtype):
            raise TypeError(f"Integers cannot be raised to negative powers, got "
                            f"integer_pow({dtypes.short_name(x.dtype)}{list(x.shape)}, {n})")
        out = lax.integer_pow(x, n)
        return lax.convert_element_type(out, out.dtype, get_aval(x).weak_type)
    xa, ya = asarray(x), asarray(y)
    if dtypes.is_float(xa.dtype) and dtypes.is_int(ya.dtype):
        # an inexact base keeps its dtype under integer exponents (JAX: no promotion)
        shape = broadcast_shapes(xa.shape, ya.shape)
        out = lax.pow_(broadcast_to(xa, shape), broadcast_to(astype(ya, xa.dtype), shape))
        weak = get_aval(xa).weak_type and get_aval(ya).weak_type
        return lax.convert_element_type(out, out.dtype, weak)
    return _power(x, y)


@_weak_as_jax
def _power(x, y):
    x, y = promote_and_broadcast(x, y, op="power")
    if dtypes.is_int(x.dtype):
        return _int_power(x, y)
    return lax.pow_(x, y)


def _concrete_integer(y):
    """``y`` as a Python int if it is a known integer scalar (a Python int or bool, or a
    0-d integer array that is no tracer), else None."""
    from ..core.core import Tracer
    if isinstance(y, (int, np.integer)):
        return int(y)
    if isinstance(y, Tracer) or not hasattr(y, "dtype") or np.ndim(y) != 0 \
            or not dtypes.is_int(y.dtype):
        return None
    return int(np.asarray(y))


def _int_power(x, y):
    # exponentiation by squaring, elementwise, for integer exponents; a negative exponent
    # gives the truncated integer result (0 unless |x| == 1), as JAX does
    one = lax.full(x.shape, 1, x.dtype)
    zero = lax.full(x.shape, 0, x.dtype)
    base, neg = x, (lax.lt(y, zero) if y.dtype.kind == "i" else None)
    if neg is not None:
        y = lax.select(neg, lax.neg(y), y)
    acc = one
    for _ in range(8 * x.dtype.itemsize):
        odd = lax.ne(lax.bitwise_and(y, one), zero)
        acc = lax.select(odd, lax.mul(acc, x), acc)
        x = lax.mul(x, x)
        y = lax.div(y, lax.full(y.shape, 2, y.dtype))
    if neg is None:
        return acc
    # 1/1 = 1 and 1/(-1)**n = (-1)**n; every other negative power truncates to 0
    size = base if base.dtype.kind == "u" else lax.abs_(base)
    return lax.select(neg, lax.select(lax.eq(size, one), acc, zero), acc)


@_weak_as_jax
def float_power(x, y):
    """Elementwise ``x1 ** x2`` in the widest float type available (float32 unless x64 is
    on).

    >>> jnp.float_power(jnp.array([2, 3]), 2)
    Array([4., 9.], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="float_power", inexact=True)
    return lax.pow_(x, y)


@_weak_as_jax
def square(x):
    """Elementwise ``x * x``.

    >>> jnp.square(jnp.array([-2, 3]))
    Array([4, 9], dtype=int32)
    """
    x = asarray(x)
    if x.dtype == dtypes.bool_:     # booleans square as int32 (JAX's numeric promotion)
        x = lax.convert_element_type(x, dtypes.int32)
    return lax.integer_pow(x, 2)


@_weak_as_jax
def reciprocal(x):
    """Elementwise ``1 / x``.

    >>> jnp.reciprocal(jnp.array([2.0, 4.0]))
    Array([0.5 , 0.25], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.div(lax.full(x.shape, 1, x.dtype), x)


@_weak_as_jax
def cbrt(x):
    """Elementwise real cube root (negative for negative inputs).

    >>> jnp.cbrt(jnp.array([-8.0, 27.0]))
    Array([-2.       ,  3.0000002], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.cbrt(x)


@_weak_as_jax
def exp2(x):
    """Elementwise ``2 ** x``.

    >>> jnp.exp2(jnp.array([0.0, 3.0]))
    Array([1., 8.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.exp(lax.mul(x, lax.full(x.shape, np.log(2), x.dtype)))


def log2(x):
    """Elementwise base-2 logarithm.

    >>> jnp.log2(jnp.array([1.0, 8.0]))
    Array([0., 3.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.div(lax.log(x), lax.full(x.shape, np.log(2), x.dtype))


def log10(x):
    """Elementwise base-10 logarithm.

    >>> jnp.log10(jnp.array([1.0, 1000.0]))
    Array([0., 3.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.div(lax.log(x), lax.full(x.shape, np.log(10), x.dtype))


@_weak_as_jax
def logaddexp(x, y):
    """``log(exp(x) + exp(y))`` without overflow.

    >>> jnp.logaddexp(jnp.array([0.0, 100.0]), jnp.array([0.0, 100.0]))
    Array([  0.6931..., 100.6931... ], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="logaddexp", inexact=True)
    return _logaddexp(x, y)


@custom_jvp
def _logaddexp(x, y):
    amax = lax.max_(x, y)
    amax = lax.stop_gradient_raw(lax.select(lax.is_finite(amax), amax,
                                            lax.full(x.shape, 0, x.dtype, x.weak_type)))
    return lax.add(amax, lax.log(lax.add(lax.exp(lax.sub(x, amax)), lax.exp(lax.sub(y, amax)))))


def _posinf_as_zero(x):   # the constants share x's weak type, so slopes at Python numbers do
    return lax.select(lax.eq(x, lax.full(x.shape, np.inf, x.dtype, x.weak_type)),
                      lax.full(x.shape, 0, x.dtype, x.weak_type), x)


@_logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    # JAX's rule: +inf reads as 0, so the slope at x = inf is 1, not NaN
    (x, y), (tx, ty) = primals, tangents
    out = _logaddexp(x, y)
    fin = _posinf_as_zero(out)
    return out, lax.add(lax.mul(tx, lax.exp(lax.sub(_posinf_as_zero(x), fin))),
                        lax.mul(ty, lax.exp(lax.sub(_posinf_as_zero(y), fin))))


@_weak_as_jax(all_weak=True)
def hypot(x, y):
    """``sqrt(x**2 + y**2)`` without overflow or underflow in the squares (as NumPy).

    >>> jnp.hypot(jnp.array([3.0, 5.0]), jnp.array([4.0, 12.0]))
    Array([ 5., 13.], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="hypot", inexact=True)
    ax, ay = lax.abs_(x), lax.abs_(y)
    big, small = lax.max_(ax, ay), lax.min_(ax, ay)
    zero, one = lax.full(x.shape, 0, x.dtype), lax.full(x.shape, 1, x.dtype)
    tiny = lax.le(big, zero)
    ratio = lax.div(small, lax.select(tiny, one, big))
    out = lax.select(tiny, big, lax.mul(big, lax.sqrt(lax.add(one, lax.mul(ratio, ratio)))))
    inf = lax.full(x.shape, np.inf, x.dtype)
    return lax.select(lax.bitwise_or(lax.eq(ax, inf), lax.eq(ay, inf)), inf, out)


@_weak_as_jax
def round(x, decimals: int = 0):  # noqa: A001
    """Round half to even, as NumPy does.

    >>> jnp.round(jnp.array([0.5, 1.5, 2.567]), 1)
    Array([0.5, 1.5, 2.6], dtype=float32)
    """
    x = asarray(x)
    if x.dtype == dtypes.bool_:
        raise _errors.DTypeValueError("round: data type bool is not inexact (JAX refuses it)")
    if not dtypes.is_float(x.dtype):
        return x
    if _is_complex(x):      # each part on its own, as in JAX
        return lax.complex_(round(lax.real(x), decimals), round(lax.imag(x), decimals))
    if decimals:
        scale = lax.full(x.shape, 10.0 ** decimals, x.dtype)
        return lax.div(lax.round_half_even(lax.mul(x, scale)), scale)
    return lax.round_half_even(x)


around = round


def rint(x):
    """Round half to even; integers and booleans become the default float (JAX's rule).

    >>> jnp.rint(jnp.array([0.5, 1.5, -2.5]))
    Array([ 0.,  2., -2.], dtype=float32)
    """
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        return lax.convert_element_type(x, dtypes.default_float)
    return round(x)


@_weak_as_jax
def trunc(x):
    """Rounds toward zero (``fix`` is the same function); integers are returned unchanged.

    >>> jnp.trunc(jnp.array([-1.7, 1.7]))
    Array([-1.,  1.], dtype=float32)
    """
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        return x
    # ceil below zero, floor above: the sign of zero is kept (trunc(-0.5) is -0.0, as in JAX)
    return lax.select(lax.lt(x, lax.full(x.shape, 0, x.dtype)), lax.ceil(x), lax.floor(x))


fix = trunc


def isnan(x):
    """Elementwise test for NaN.

    >>> jnp.isnan(jnp.array([1.0, jnp.nan]))
    Array([False,  True], dtype=bool)
    """
    x = asarray(x)
    if x.dtype == dtypes.bool_:
        return lax.full(x.shape, False, dtypes.bool_)
    return lax.ne(x, x)     # a weakly typed input gives a weakly typed answer, as in JAX


def isinf(x):
    """Elementwise test for positive or negative infinity.

    >>> jnp.isinf(jnp.array([1.0, jnp.inf, -jnp.inf]))
    Array([False,  True,  True], dtype=bool)
    """
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        return lax.full(x.shape, False, dtypes.bool_)
    if _is_complex(x):
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.eq(lax.abs_(x), lax.full(x.shape, np.inf, x.dtype))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, infinities to ``posinf``/``neginf`` (the dtype's extremes by default);
    ``copy`` is NumPy's argument and changes nothing (fnx arrays are immutable).

    >>> jnp.nan_to_num(jnp.array([jnp.nan, 1.0, jnp.inf]), posinf=9.0)
    Array([0., 1., 9.], dtype=float32)
    """
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        return x
    if _is_complex(x):      # each part on its own, as in JAX
        return lax.complex_(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(isnan(x), lax.full(x.shape, nan, x.dtype), x)
    x = where(lax.eq(x, lax.full(x.shape, np.inf, x.dtype)), lax.full(x.shape, posinf, x.dtype), x)
    return where(lax.eq(x, lax.full(x.shape, -np.inf, x.dtype)),
                 lax.full(x.shape, neginf, x.dtype), x)


def logical_not(x):
    """Elementwise truth of ``not x``.

    >>> jnp.logical_not(jnp.array([0, 2]))
    Array([ True, False], dtype=bool)
    """
    x = asarray(x)
    return lax.bitwise_not(astype(x, bool))


def _logical(prim_fn, name, doc):
    def fn(x, y):
        x, y = promote_and_broadcast(astype(asarray(x), bool), astype(asarray(y), bool), op=name)
        return prim_fn(x, y)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


logical_and = _logical(lax.bitwise_and, "logical_and", """Elementwise ``x and y`` of the
    operands' truth values, broadcasting.

    >>> jnp.logical_and(jnp.array([1, 0, 2]), True)
    Array([ True, False,  True], dtype=bool)
    """)
logical_or = _logical(lax.bitwise_or, "logical_or", """Elementwise ``x or y`` of the
    operands' truth values, broadcasting.

    >>> jnp.logical_or(jnp.array([1, 0, 0]), jnp.array([0, 0, 3]))
    Array([ True, False,  True], dtype=bool)
    """)
logical_xor = _logical(lax.bitwise_xor, "logical_xor", """Elementwise: whether exactly one
    of the operands' truth values holds, broadcasting.

    >>> jnp.logical_xor(jnp.array([1, 0, 2]), jnp.array([1, 1, 0]))
    Array([False,  True,  True], dtype=bool)
    """)


def invert(x):
    """Bitwise ``~x`` (logical not for booleans); ``bitwise_invert`` and ``bitwise_not`` are
    the same function.

    >>> jnp.invert(jnp.array([0, 5]))
    Array([-1, -6], dtype=int32)
    """
    return lax.bitwise_not(asarray(x))


bitwise_not = invert


def where(condition, x, y):
    """``x`` where ``condition`` else ``y``, broadcasting all three (``fnx.numpy.where`` adds
    the one-argument form, ``nonzero``).

    >>> jnp.where(jnp.array([True, False, True]), jnp.array([1, 2, 3]), 0)
    Array([1, 0, 3], dtype=int32)
    """
    c = astype(asarray(condition), bool)
    x, y = promote_dtypes_both(x, y)
    shape = broadcast_shapes(c.shape, x.shape, y.shape, op="where")
    return lax.select(broadcast_to(c, shape), broadcast_to(x, shape), broadcast_to(y, shape))


def promote_dtypes_both(x, y):
    """``x`` and ``y`` as arrays of their promoted dtype (JAX's promotion).

    >>> [a.dtype for a in jnp.promote_dtypes_both(jnp.int32(1), jnp.float32(2))]
    [dtype('float32'), dtype('float32')]
    """
    return promote_dtypes(x, y)


def clip(a, a_min=None, a_max=None, *, min=None, max=None):  # noqa: A002
    """Limit values to ``[a_min, a_max]`` (either may be None).

    >>> jnp.clip(jnp.array([-2, 0, 5]), 0, 3)
    Array([0, 0, 3], dtype=int32)
    """
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    out = asarray(a)
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out


@_weak_as_jax
def fmax(x, y):
    """Elementwise maximum that ignores a NaN when the other value is not NaN.

    >>> jnp.fmax(jnp.array([1.0, jnp.nan]), jnp.array([jnp.nan, 2.0]))
    Array([1., 2.], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="fmax")
    # JAX's select, not lax.max_: a tie (and its slope) goes wholly to y
    return where(greater(x, y) | isnan(y), x, y)


@_weak_as_jax
def fmin(x, y):
    """Elementwise minimum that ignores a NaN when the other value is not NaN.

    >>> jnp.fmin(jnp.array([1.0, jnp.nan]), jnp.array([jnp.nan, 2.0]))
    Array([1., 2.], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="fmin")
    # JAX's select, not lax.min_: a tie (and its slope) goes wholly to y
    return where(less(x, y) | isnan(y), x, y)


@_weak_as_jax
def deg2rad(x):
    """Degrees to radians, elementwise (``radians`` is the same).

    >>> jnp.deg2rad(jnp.array([90.0, 180.0]))
    Array([1.5707964, 3.1415927], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.mul(x, lax.full(x.shape, np.pi / 180, x.dtype))


@_weak_as_jax
def rad2deg(x):
    """Radians to degrees (``degrees`` is the same function).

    >>> jnp.rad2deg(jnp.array([np.pi, np.pi / 2]))
    Array([180.,  90.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return lax.mul(x, lax.full(x.shape, 180 / np.pi, x.dtype))


radians, degrees = deg2rad, rad2deg


@_weak_as_jax
def sinc(x):
    """Elementwise normalized sinc, ``sin(pi x) / (pi x)``, 1 at 0.

    >>> jnp.sinc(jnp.array([0.0, 0.5]))
    Array([1.        , 0.63661975], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    pix = lax.mul(x, lax.full(x.shape, np.pi, x.dtype))
    at_zero = lax.eq(x, lax.full(x.shape, 0, x.dtype))
    safe = where(at_zero, lax.full(x.shape, 1, x.dtype), pix)
    return where(at_zero, _sinc_maclaurin(0, pix), lax.div(lax.sin(safe), safe))


def _sinc_maclaurin_value(k, x):
    """The k-th derivative of ``sin(x)/x`` at 0, shaped like ``x``; its JVP is the next one,
    so every derivative of sinc at 0 is exact (as in JAX)."""
    c = 0.0 if k % 2 else (-1) ** (k // 2) / (k + 1)
    return lax.add(lax.mul(x, lax.full(x.shape, 0, x.dtype)), lax.full(x.shape, c, x.dtype))


_sinc_maclaurin = custom_jvp(_sinc_maclaurin_value, nondiff_argnums=(0,))
_sinc_maclaurin.defjvp(lambda k, primals, tangents: (
    _sinc_maclaurin(k, primals[0]), lax.mul(_sinc_maclaurin(k + 1, primals[0]), tangents[0])))


@_weak_as_jax(all_weak=True)
def heaviside(x1, x2):
    """The Heaviside step: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``.

    >>> jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5)
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    x1, x2 = promote_and_broadcast(x1, x2, op="heaviside", inexact=True)
    zero = lax.full(x1.shape, 0, x1.dtype)
    step = where(lax.lt(x1, zero), zero, where(lax.gt(x1, zero), lax.full(x1.shape, 1, x1.dtype),
                                               x2))
    return where(lax.ne(x1, x1), x1, step)   # NaN at NaN, as in JAX


def isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|``.

    >>> jnp.isclose(jnp.array([1.0, 1.1]), 1.0)
    Array([ True, False], dtype=bool)
    """
    a, b = promote_and_broadcast(a, b, op="isclose", inexact=True)
    within = less_equal(absolute(subtract(a, b)), add(atol, multiply(rtol, absolute(b))))
    # equal infinities are close; a finite tolerance never reaches an infinity (NumPy, JAX)
    close = logical_or(equal(a, b), logical_and(isfinite(b), within))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere, as one boolean array.

    >>> jnp.allclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0 + 1e-7]))
    Array(True, dtype=bool)
    """
    return _all_true(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Whether ``a1`` and ``a2`` have the same shape and elements (NaNs equal to each other
    where ``equal_nan``).

    >>> jnp.array_equal(jnp.arange(3), jnp.array([0, 1, 2]))
    Array(True, dtype=bool)
    >>> jnp.array_equal(jnp.array([1.0, jnp.nan]), jnp.array([1.0, jnp.nan]), equal_nan=True)
    Array(True, dtype=bool)
    """
    a, b = asarray(a1), asarray(a2)
    if a.shape != b.shape:
        return asarray(False)
    eq = equal(a, b)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a), isnan(b)))
    return _all_true(eq)


def _all_true(x):
    """Whether every element of the boolean array ``x`` is true (fnx.numpy.all's reduction)."""
    return lax.reduce_and(x, tuple(range(x.ndim)))


def _is_complex(x) -> bool:
    return dtypes.kind(x.dtype) == "c"


def conjugate(x):
    """The complex conjugate; a real array is returned as it is.

    >>> jnp.conjugate(jnp.asarray([1 + 2j, 3 - 1j]))
    Array([1.-2.j, 3.+1.j], dtype=complex64)
    """
    x = asarray(x)
    return lax.conj(x) if _is_complex(x) else x


conj = conjugate


def real(x):
    """The real part (float32 for complex64); a real array is returned as it is.

    >>> jnp.real(jnp.array([1 + 2j, 3 - 1j]))
    Array([1., 3.], dtype=float32)
    """
    x = asarray(x)
    return lax.real(x) if _is_complex(x) else x


def imag(x):
    """The imaginary part (float32 for complex64); zeros of ``x``'s dtype for a real array.

    >>> jnp.imag(jnp.array([1 + 2j, 3 - 1j]))
    Array([ 2., -1.], dtype=float32)
    """
    x = asarray(x)
    return lax.imag(x) if _is_complex(x) else lax.full(x.shape, 0, x.dtype, x.weak_type)


def angle(z, deg=False):
    """The counterclockwise angle of each element from the positive real axis,
    ``arctan2(imag(z), real(z))``, in radians (degrees with ``deg``).

    >>> jnp.angle(jnp.array([1.0, 1j, -1.0]), deg=True)
    Array([  0.,  90., 180.], dtype=float32)
    """
    z = asarray(z)
    re, im = real(z), imag(z)
    if not dtypes.is_float(re.dtype) or (dtypes.kind(z.dtype) == "f" and z.ndim == 0):
        # integers (and, as in JAX, real 0-d arrays) take the default float, strongly typed
        re = lax.convert_element_type(re, dtypes.default_float)
        im = lax.convert_element_type(im, dtypes.default_float)
    out = lax.atan2(im, re)
    return rad2deg(out) if deg else out


def left_shift(x, y):
    """``x << y`` on integers (a shift past the bit width gives 0, as in JAX).

    >>> jnp.left_shift(jnp.arange(3), 2)
    Array([0, 4, 8], dtype=int32)
    """
    x, y = promote_and_broadcast(x, y, op="left_shift", keep_scalars=True)
    return lax.shift_left(x, y)


def right_shift(x, y):
    """``x >> y`` on integers: arithmetic (sign-filling) for signed ones, logical otherwise.

    >>> jnp.right_shift(jnp.array([-8, 8]), 2)
    Array([-2,  2], dtype=int32)
    """
    x, y = promote_and_broadcast(x, y, op="right_shift", keep_scalars=True)
    if x.dtype.kind == "i":
        return lax.shift_right_arithmetic(x, y)
    return lax.shift_right_logical(x, y)


bitwise_left_shift, bitwise_right_shift, bitwise_invert = left_shift, right_shift, invert


@_weak_as_jax
def copysign(x, y):
    """Elementwise ``|x1|`` with the sign of ``x2``.

    >>> jnp.copysign(jnp.array([1.0, 2.0]), jnp.array([-0.0, 3.0]))
    Array([-1.,  2.], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="copysign", inexact=True)
    neg = signbit(y)   # not y < 0: -0.0 and -nan count as negative, as in NumPy
    ax = lax.abs_(x)
    return lax.select(neg, lax.neg(ax), ax)


# ---------------------------------------------------------------------------------------------
# more elementwise functions


def fabs(x):
    """Absolute value as a float (integers are promoted, unlike ``abs``).

    >>> jnp.fabs(jnp.asarray([-1, 2]))
    Array([1., 2.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    if _is_complex(x):
        raise _errors.DTypeError(f"fabs does not support complex dtypes, got {x.dtype} "
                                 "(use abs)")
    return lax.abs_(x)


def _int_of(dtype):
    return {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[np.dtype(dtype).itemsize]


def signbit(x):
    """Whether the sign bit is set (true for -0.0 and negative NaNs).

    >>> jnp.signbit(jnp.asarray([-0.0, 0.0, -2.0]))
    Array([ True, False,  True], dtype=bool)
    """
    x = asarray(x)
    if _is_complex(x):
        raise _errors.DTypeValueError(f"signbit is not well defined for {x.dtype}, as in JAX")
    if x.dtype == dtypes.bool_ or x.dtype.kind == "u":
        return lax.full(x.shape, False, dtypes.bool_)
    if dtypes.is_int(x.dtype):
        return lax.lt(x, lax.full(x.shape, 0, x.dtype))
    bits = lax.bitcast_convert_type(x, _int_of(x.dtype))
    return lax.lt(bits, lax.full(x.shape, 0, bits.dtype))


@_weak_as_jax(all_weak=True)
def logaddexp2(x, y):
    """``log2(2**x + 2**y)`` without overflow.

    >>> jnp.logaddexp2(jnp.array([1.0, 3.0]), jnp.array([1.0, 3.0]))
    Array([2., 4.], dtype=float32)
    """
    x, y = promote_and_broadcast(x, y, op="logaddexp2", inexact=True)
    ln2 = lax.full(x.shape, np.log(2), x.dtype)
    return lax.div(logaddexp(lax.mul(x, ln2), lax.mul(y, ln2)), ln2)


@_weak_as_jax
def divmod(x, y):  # noqa: A001 - NumPy's name
    """``(floor_divide(x, y), remainder(x, y))``.

    >>> jnp.divmod(jnp.array([7, -7]), 2)
    (Array([ 3, -4], dtype=int32), Array([1, 1], dtype=int32))
    """
    return floor_divide(x, y), remainder(x, y)


@_weak_as_jax
def modf(x):
    """Fractional and integral parts, both with the sign of ``x``.

    >>> jnp.modf(jnp.asarray([-1.5, 2.25]))
    (Array([-0.5 ,  0.25], dtype=float32), Array([-1.,  2.], dtype=float32))
    """
    (x,) = promote_dtypes_inexact(x)
    whole = trunc(x)
    # x - trunc(x), as JAX computes it: the fraction of an infinity is NaN
    return lax.sub(x, whole), whole


def _float_layout(dtype):
    info = dtypes.finfo(dtype)
    return int(info.nmant), int(info.maxexp) - 1, int(info.nexp)


def _exp2_int(n, dtype):
    """``2.0 ** n`` exactly for integer ``n`` with ``2**n`` a normal number of ``dtype``, by
    writing the exponent field."""
    nmant, bias, _ = _float_layout(dtype)
    it = _int_of(dtype)
    n = lax.convert_element_type(n, it)
    field = lax.shift_left(lax.add(n, lax.full(n.shape, bias, it)), lax.full(n.shape, nmant, it))
    return lax.bitcast_convert_type(field, dtype)


def ldexp(x1, x2):
    """``x1 * 2**x2`` for integer ``x2``, exactly (barring underflow).

    >>> jnp.ldexp(jnp.asarray([1.0, 3.0]), jnp.asarray([2, -1]))
    Array([4. , 1.5], dtype=float32)
    """
    x2 = asarray(x2)
    if not dtypes.is_int(x2.dtype):
        raise TypeError(f"ldexp: the exponent must be an integer array, got dtype {x2.dtype}")
    (x1,) = promote_dtypes_inexact(x1)
    x1, x2 = broadcast_arrays(x1, x2, op="ldexp")
    _, bias, _ = _float_layout(x1.dtype)
    it = _int_of(x1.dtype)
    n = clip(lax.convert_element_type(x2, it), -3 * bias, 3 * bias)
    # three factors, each a normal power of two, reach any result from any input
    parts = []
    for k in (3, 2, 1):
        p = floor_divide(n, k)
        parts.append(p)
        n = lax.sub(n, p)
    out = x1
    for p in parts:
        out = lax.mul(out, _exp2_int(p, x1.dtype))
    return out


def frexp(x):
    """``(mantissa, exponent)`` with ``x == mantissa * 2**exponent`` and ``0.5 <= |mantissa| <
    1`` (zero, inf and NaN: ``(x, 0)``).

    >>> jnp.frexp(jnp.asarray([8.0, 0.75]))
    (Array([0.5 , 0.75], dtype=float32), Array([4, 0], dtype=int32))
    """
    (x,) = promote_dtypes_inexact(x)
    nmant, bias, nexp = _float_layout(x.dtype)
    it = _int_of(x.dtype)
    tiny = lax.full(x.shape, dtypes.finfo(x.dtype).tiny, x.dtype)
    sub = lax.lt(lax.abs_(x), tiny)
    # subnormals: scale into the normal range so the exponent field holds the exponent
    xs = where(sub, lax.mul(x, lax.full(x.shape, 2.0 ** (nmant + 1), x.dtype)), x)
    bits = lax.bitcast_convert_type(lax.stop_gradient_raw(xs), it)
    field = lax.bitwise_and(lax.shift_right_logical(bits, lax.full(x.shape, nmant, it)),
                            lax.full(x.shape, (1 << nexp) - 1, it))
    e = lax.sub(field, lax.full(x.shape, bias - 1, it))
    e = where(sub, lax.sub(e, lax.full(x.shape, nmant + 1, it)), e)
    special = logical_or(lax.eq(x, lax.full(x.shape, 0, x.dtype)), lax.bitwise_not(isfinite(x)))
    e = lax.convert_element_type(where(special, lax.full(x.shape, 0, it), e), dtypes.int32)
    # x * 2**-e is exact and keeps the mantissa differentiable in x
    return where(special, x, ldexp(x, lax.neg(e))), e


@_weak_as_jax(all_weak=True)
def gcd(x1, x2):
    """Greatest common divisor of integers (non-negative; ``gcd(0, 0) == 0``).

    >>> jnp.gcd(jnp.asarray([12, 7]), 18)
    Array([6, 1], dtype=int32)
    """
    from ..core.control_flow import while_loop
    x1, x2 = promote_and_broadcast(x1, x2, op="gcd")
    if not dtypes.is_int(x1.dtype):
        raise TypeError(f"gcd: arguments must be integers, got dtype {x1.dtype}")
    zero, one = lax.full(x1.shape, 0, x1.dtype), lax.full(x1.shape, 1, x1.dtype)

    def body(c):
        a, b = c
        nz = lax.ne(b, zero)
        return lax.select(nz, b, a), lax.select(nz, lax.rem(a, lax.select(nz, b, one)), zero)

    def cond(c):
        return lax.reduce_or(lax.ne(c[1], zero), tuple(range(x1.ndim)))

    return while_loop(cond, body, (absolute(x1), absolute(x2)))[0]


@_weak_as_jax(all_weak=True)
def lcm(x1, x2):
    """Least common multiple of integers (non-negative; 0 if either is 0).

    >>> jnp.lcm(jnp.array([4, 6]), 10)
    Array([20, 30], dtype=int32)
    """
    x1, x2 = promote_and_broadcast(x1, x2, op="lcm")
    g = gcd(x1, x2)
    zero = lax.full(g.shape, 0, g.dtype)
    nz = lax.ne(g, zero)
    safe = lax.select(nz, g, lax.full(g.shape, 1, g.dtype))
    return lax.select(nz, absolute(lax.mul(lax.div(x1, safe), x2)), zero)


def _real_only(x):
    if _is_complex(x):
        raise _errors.DTypeValueError(f"isposinf/isneginf are not well defined for complex "
                                      f"types, got {x.dtype}")
    return x


def isposinf(x):
    """Whether each element is +inf.

    >>> jnp.isposinf(jnp.array([-jnp.inf, 1.0, jnp.inf]))
    Array([False, False,  True], dtype=bool)
    """
    x = _real_only(asarray(x))
    if not dtypes.is_float(x.dtype):
        return lax.full(x.shape, False, dtypes.bool_)
    return lax.eq(x, lax.full(x.shape, np.inf, x.dtype))


def isneginf(x):
    """Whether each element is -inf.

    >>> jnp.isneginf(jnp.array([-jnp.inf, 1.0, jnp.inf]))
    Array([ True, False, False], dtype=bool)
    """
    x = _real_only(asarray(x))
    if not dtypes.is_float(x.dtype):
        return lax.full(x.shape, False, dtypes.bool_)
    return lax.eq(x, lax.full(x.shape, -np.inf, x.dtype))


def isreal(x):
    """Elementwise "has no (nonzero) imaginary part".

    >>> jnp.isreal(jnp.array([1 + 0j, 1 + 2j]))
    Array([ True, False], dtype=bool)
    """
    i = imag(x)
    return lax.eq(i, lax.full(i.shape, 0, i.dtype, get_aval(i).weak_type))


def iscomplex(x):
    """Elementwise "has a nonzero imaginary part".

    >>> jnp.iscomplex(jnp.array([1 + 0j, 1 + 2j]))
    Array([False,  True], dtype=bool)
    """
    i = imag(x)
    return lax.ne(i, lax.full(i.shape, 0, i.dtype, get_aval(i).weak_type))


def isrealobj(x):
    """Whether ``x`` has a real (not complex) dtype.

    >>> jnp.isrealobj(jnp.array([1.0])), jnp.isrealobj(jnp.array([1 + 0j]))
    (True, False)
    """
    return not iscomplexobj(x)


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype (decided by its type, not its values).

    >>> jnp.iscomplexobj(jnp.array([1 + 0j])), jnp.iscomplexobj(1.0)
    (True, False)
    """
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = asarray(x).dtype
    return np.issubdtype(dt, np.complexfloating)


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere.

    >>> jnp.array_equiv(jnp.asarray([1, 2]), jnp.asarray([[1, 2], [1, 2]]))
    Array(True, dtype=bool)
    """
    from ..core.errors import ShapeError
    a1, a2 = asarray(a1), asarray(a2)
    try:
        broadcast_shapes(a1.shape, a2.shape)
    except ShapeError:
        return asarray(False)
    return _all_true(equal(a1, a2))


def select(condlist, choicelist, default=0):
    """Per element, the choice of the first true condition (``default`` where none is).

    >>> jnp.select([jnp.asarray([True, False]), jnp.asarray([True, True])], [jnp.asarray([1, 1]), jnp.asarray([2, 2])])
    Array([1, 2], dtype=int32)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if not len(condlist):
        raise ValueError("select: condlist must not be empty")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(asarray(c).astype(dtypes.bool_), v, out)   # JAX takes any nonzero as true
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` where ``condlist[i]`` holds (later conditions win); one extra
    function covers the elements no condition holds for; elsewhere zero. Every function is
    evaluated on all of ``x``.

    >>> jnp.piecewise(jnp.asarray([-1.0, 2.0]), [jnp.asarray([True, False])], [lambda t: -t, lambda t: t])
    Array([1., 2.], dtype=float32)
    """
    x = asarray(x)
    if _is_bool_array(condlist) and condlist.ndim == 0:
        condlist = [condlist]
    # an array of conditions is read along its first axis, as JAX reads it
    conds = [astype(asarray(c), bool) for c in condlist]
    if len(funclist) == len(conds) + 1:
        conds.append(logical_not(lax.reduce_or(stack(conds), (0,))))
    elif len(funclist) != len(conds):
        raise ValueError(f"piecewise: {len(funclist)} functions for {len(conds)} conditions "
                         "(need as many, or one more)")
    out = lax.full(x.shape, 0, x.dtype)
    for c, f in zip(conds, funclist):
        val = f(x, *args, **kw) if callable(f) else f
        out = where(c, astype(asarray(val), x.dtype), out)
    return out


def _is_bool_array(c):
    return (is_array(c) and c.dtype == dtypes.bool_) or \
        (isinstance(c, np.ndarray) and c.dtype == np.bool_)

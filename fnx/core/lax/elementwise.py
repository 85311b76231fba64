"""Elementwise primitives: unary and binary arithmetic, comparisons, ``select_n``, complex parts
and the bit operations, each with its JVP (and transpose where linear).

Operands of a primitive already agree in shape and dtype (fnx.numpy broadcasts and promotes
before binding), except that 0-d operands broadcast.
"""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..ad_util import (Zero, defjvp, defjvp_with_output, deflinear, instantiate, is_undefined,
                       register_tangent_arithmetic, zero_jvp, zeros_like_aval)
from ..core import Primitive, ShapedArray, get_aval
from ..errors import DTypeError, ShapeError
from .base import (_BOOL, _FLOAT, _INT, _shp, bdim_at_front, broadcast_in_dim,
                   convert_element_type, convert_element_type_p, full, not_mapped, primitive,
                   reduce_sum)


def _check_same(name, avals):
    """Operands share one dtype and one shape, except that 0-d operands broadcast (as in JAX's
    lax, scalars need no explicit broadcast). Returns the result shape."""
    a0 = avals[0]
    shape = ()
    for a in avals:
        if a.dtype != a0.dtype:
            raise DTypeError(f"{name} got different dtypes {a0.dtype} and {a.dtype}")
        if a.shape == ():
            continue
        if shape == ():
            shape = a.shape
        elif a.shape != shape:
            raise ShapeError(f"{name} got incompatible shapes {_shp(shape)} and "
                             f"{_shp(a.shape)}")
    return shape


def _elementwise_aval(name, kinds, out_dtype=None):
    def rule(*avals, **params):
        shape = _check_same(name, avals)
        a0 = avals[0]
        if dtypes.kind(a0.dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {a0.dtype}")
        return ShapedArray(shape, out_dtype or a0.dtype, all(a.weak_type for a in avals))
    return rule


def _elementwise_batch(prim):
    def rule(vals, dims, **params):
        if len(vals) == 1:
            return prim.bind(vals[0], **params), dims[0]
        size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
        example_shapes = [_unbatched_shape(v, d) for v, d in zip(vals, dims)]
        out_shape = next((s for s in example_shapes if s), ())
        moved = []
        for v, d, s in zip(vals, dims, example_shapes):
            if d is not_mapped and s == ():
                moved.append(v)          # an unbatched scalar broadcasts by itself
                continue
            v = bdim_at_front(v, d, size)
            if s != out_shape:           # a batched scalar meets per-example arrays
                v = broadcast_in_dim(v, (size,) + out_shape, (0,))
            moved.append(v)
        return prim.bind(*moved, **params), 0
    return rule


def _unbatched_shape(v, d):
    shape = get_aval(v).shape
    return shape if d is not_mapped else shape[:d] + shape[d + 1:]


def _unbroadcast(ct, operand):
    """Sum a cotangent down to a 0-d operand that was broadcast implicitly."""
    shape = operand.aval.shape if is_undefined(operand) else get_aval(operand).shape
    ct_shape = get_aval(ct).shape
    if shape == ct_shape:
        return ct
    return reduce_sum(ct, tuple(range(len(ct_shape))))


_elementwise: list[Primitive] = []


def elementwise(name, kinds=_FLOAT + _INT, out_dtype=None):
    """An elementwise primitive taking dtypes of ``kinds`` (its shape/dtype and vmap rules);
    every backend computes it one element at a time (a NumPy ufunc, a CUDA C expression)."""
    p = primitive(name)
    p.abstract_eval = _elementwise_aval(name, kinds, out_dtype)
    p.batch = _elementwise_batch(p)
    _elementwise.append(p)
    return p


def elementwise_primitives() -> list[Primitive]:
    """Every elementwise primitive (the backend-table tests walk this list)."""
    return list(_elementwise)


def unary(name: str, jvp, doc: str, kinds=_FLOAT):
    """An elementwise primitive of one operand, its JVP and its wrapper, in one statement:
    ``jvp(t, x, out)`` is the tangent of the result ``out`` for the tangent ``t`` of ``x``.
    Returns ``(primitive, wrapper)``; ``doc`` becomes the wrapper's docstring. This is how
    ``sin`` is defined (a doctest would register a primitive, so it is not one)::

        sin_p, sin = unary("sin", lambda t, x, out: mul(t, cos(x)), "The sine.")
    """
    p = elementwise(name, kinds)
    defjvp_with_output(p, jvp)

    def wrapper(x):
        return p.bind(x)
    wrapper.__name__ = wrapper.__qualname__ = name
    # an example that runs for every such function: it keeps its operand's shape
    operand = "jnp.ones((2, 3))" if set(kinds) & set(_FLOAT) else "jnp.ones((2, 3), int)"
    wrapper.__doc__ = f"{doc}\n\n    >>> fnx.lax.{name}({operand}).shape\n    (2, 3)\n    "
    return p, wrapper


# -- unary


neg_p = elementwise("neg")
sign_p = elementwise("sign")
floor_p = elementwise("floor", _FLOAT)
ceil_p = elementwise("ceil", _FLOAT)
round_p = elementwise("round", _FLOAT)
is_finite_p = elementwise("is_finite", _FLOAT, dtypes.bool_)
abs_p = elementwise("abs")
not_p = elementwise("not", _INT + _BOOL)
integer_pow_p = elementwise("integer_pow")
stop_gradient_p = elementwise("stop_gradient", _FLOAT + _INT + _BOOL)

# -- binary
add_p = elementwise("add")
sub_p = elementwise("sub")
mul_p = elementwise("mul", _FLOAT + _INT + _BOOL)
div_p = elementwise("div")
rem_p = elementwise("rem")
pow_p = elementwise("pow", _FLOAT)
max_p = elementwise("max", _FLOAT + _INT + _BOOL)
min_p = elementwise("min", _FLOAT + _INT + _BOOL)
atan2_p = elementwise("atan2", _FLOAT)
nextafter_p = elementwise("nextafter", _FLOAT)
and_p = elementwise("and", _INT + _BOOL)
or_p = elementwise("or", _INT + _BOOL)
xor_p = elementwise("xor", _INT + _BOOL)
eq_p = elementwise("eq", _FLOAT + _INT + _BOOL, dtypes.bool_)
ne_p = elementwise("ne", _FLOAT + _INT + _BOOL, dtypes.bool_)
lt_p = elementwise("lt", _FLOAT + _INT + _BOOL, dtypes.bool_)
le_p = elementwise("le", _FLOAT + _INT + _BOOL, dtypes.bool_)
gt_p = elementwise("gt", _FLOAT + _INT + _BOOL, dtypes.bool_)
ge_p = elementwise("ge", _FLOAT + _INT + _BOOL, dtypes.bool_)


def _bind1(p):
    return lambda *args, **params: p.bind(*args, **params)


neg, sign, floor, ceil, round_, is_finite, abs_ = map(
    _bind1, (neg_p, sign_p, floor_p, ceil_p, round_p, is_finite_p, abs_p))
bitwise_not, stop_gradient_raw = map(_bind1, (not_p, stop_gradient_p))
add, sub, mul, div, rem, pow_, max_, min_, atan2, nextafter = map(
    _bind1, (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p))
bitwise_and, bitwise_or, bitwise_xor = map(_bind1, (and_p, or_p, xor_p))
eq, ne, lt, le, gt, ge = map(_bind1, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))


# the zeros and sums of tangents that ad_util (below lax) builds
# (zeros keep a weak type: a zero cotangent of a Python-number output is weak, as in JAX)
register_tangent_arithmetic(zeros=lambda aval: full(aval.shape, 0, aval.dtype, aval.weak_type),
                            add=add, convert=convert_element_type)


def integer_pow(x, y: int):
    return integer_pow_p.bind(x, y=int(y))


def _const(x, value):
    """``value`` as a 0-d array of ``x``'s dtype (elementwise ops broadcast it)."""
    return full((), value, get_aval(x).dtype)


def _full_like(x, value):
    aval = get_aval(x)
    return full(aval.shape, value, aval.dtype)


def square(x):
    return integer_pow(x, 2)


# -- unary JVPs
deflinear(neg_p, lambda ct, x: [neg(ct)])
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p):
    zero_jvp(_p)


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = abs_p.bind(x)
    if isinstance(t, Zero):
        return out, Zero(get_aval(out))
    if dtypes.kind(get_aval(x).dtype) == "c":
        # d|z| = Re(t * conj(z) / |z|), with |z| = 0 read as 1 (JAX's rule)
        mag = convert_element_type_p.bind(out, new_dtype=get_aval(x).dtype,
                                          weak_type=get_aval(out).weak_type)
        return out, real(mul(t, div(conj(x), _replace_zero(mag))))
    return out, mul(t, sign(x))


def _abs_aval(x):
    shape = _check_same("abs", [x])
    if dtypes.kind(x.dtype) not in _FLOAT + _INT:
        raise DTypeError(f"abs does not accept dtype {x.dtype}")
    return ShapedArray(shape, complex_basetype(x.dtype), x.weak_type)


abs_p.abstract_eval = _abs_aval
abs_p.jvp = _abs_jvp


# -- floating-point functions of one operand: one statement each makes the primitive, its JVP
# (from the operand ``x`` and the result ``out``) and its wrapper (see CONTRIBUTING.md)

exp_p, exp = unary("exp", lambda t, x, out: mul(t, out), "``e ** x``.")
log_p, log = unary("log", lambda t, x, out: div(t, x), "The natural logarithm.")
log1p_p, log1p = unary("log1p", lambda t, x, out: div(t, add(x, _const(x, 1))),
                       "``log(1 + x)``, accurate for small ``x``.")
expm1_p, expm1 = unary("expm1", lambda t, x, out: mul(t, add(out, _const(out, 1))),
                       "``exp(x) - 1``, accurate for small ``x``.")
sqrt_p, sqrt = unary("sqrt", lambda t, x, out: div(t, mul(out, _const(out, 2))),
                     "The square root.")
rsqrt_p, rsqrt = unary("rsqrt", lambda t, x, out: mul(t, mul(_const(x, -0.5), div(out, x))),
                       "``1 / sqrt(x)``.")
sin_p, sin = unary("sin", lambda t, x, out: mul(t, cos(x)), "The sine.")
cos_p, cos = unary("cos", lambda t, x, out: neg(mul(t, sin(x))), "The cosine.")
tan_p, tan = unary("tan", lambda t, x, out: mul(t, add(_const(x, 1), square(out))),
                   "The tangent.")
asin_p, asin = unary("asin", lambda t, x, out: mul(t, rsqrt(sub(_const(x, 1), square(x)))),
                     "The inverse sine.")
acos_p, acos = unary("acos", lambda t, x, out: neg(mul(t, rsqrt(sub(_const(x, 1), square(x))))),
                     "The inverse cosine.")
atan_p, atan = unary("atan", lambda t, x, out: div(t, add(_const(x, 1), square(x))),
                     "The inverse tangent.")
sinh_p, sinh = unary("sinh", lambda t, x, out: mul(t, cosh(x)), "The hyperbolic sine.")
cosh_p, cosh = unary("cosh", lambda t, x, out: mul(t, sinh(x)), "The hyperbolic cosine.")
tanh_p, tanh = unary("tanh", lambda t, x, out: mul(t, sub(_const(x, 1), square(out))),
                     "The hyperbolic tangent.")
asinh_p, asinh = unary("asinh", lambda t, x, out: mul(t, rsqrt(add(square(x), _const(x, 1)))),
                       "The inverse hyperbolic sine.")
acosh_p, acosh = unary(
    "acosh", lambda t, x, out: mul(t, rsqrt(mul(sub(x, _const(x, 1)), add(x, _const(x, 1))))),
    "The inverse hyperbolic cosine.")
atanh_p, atanh = unary("atanh", lambda t, x, out: div(t, sub(_const(x, 1), square(x))),
                       "The inverse hyperbolic tangent.")
logistic_p, logistic = unary(
    "logistic", lambda t, x, out: mul(t, mul(out, sub(_const(out, 1), out))),
    "The logistic sigmoid ``1 / (1 + exp(-x))``.")
erf_p, erf = unary(
    "erf", lambda t, x, out: mul(t, mul(_const(x, 2 / math.sqrt(math.pi)), exp(neg(square(x))))),
    "The error function.")


def _integer_pow_jvp(t, x, *, y):
    if y == 0:
        return Zero(get_aval(t))
    coeff = _const(x, y) if y == 1 else mul(_const(x, y), integer_pow(x, y - 1))
    return mul(t, coeff)


defjvp(integer_pow_p, _integer_pow_jvp)


def _stop_gradient_jvp(primals, tangents):
    out = stop_gradient_p.bind(*primals)
    return out, Zero(get_aval(out))


stop_gradient_p.jvp = _stop_gradient_jvp


# -- binary JVPs and transposes


def _linear_ct(ct, x):
    return _unbroadcast(ct, x) if is_undefined(x) else None


deflinear(add_p, lambda ct, x, y: [_linear_ct(ct, x), _linear_ct(ct, y)])
deflinear(sub_p, lambda ct, x, y: [_linear_ct(ct, x), _linear_ct(neg(ct), y)])


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise ValueError("mul is not linear in both operands at once")
    if is_undefined(x):
        return [_unbroadcast(mul(ct, y), x), None]
    return [None, _unbroadcast(mul(x, ct), y)]


defjvp(mul_p, lambda t, x, y: mul(t, y), lambda t, x, y: mul(x, t))
mul_p.transpose = _mul_transpose


def _div_transpose(ct, x, y):
    assert is_undefined(x) and not is_undefined(y)
    return [_unbroadcast(div(ct, y), x), None]


defjvp(div_p, lambda t, x, y: div(t, y),
       lambda t, x, y: mul(t, neg(div(x, mul(y, y)))))
div_p.transpose = _div_transpose
defjvp(rem_p, lambda t, x, y: t,
       lambda t, x, y: mul(t, neg(mul(sign(div(x, y)), floor(abs_(div(x, y)))))))


def _replace_zero(x):
    return select(eq(x, _const(x, 0)), _full_like(x, 1), x)


defjvp(pow_p,
       lambda t, x, y: mul(t, mul(y, pow_(x, sub(y, _const(y, 1))))),
       lambda t, x, y: mul(t, mul(log(_replace_zero(x)), pow_(x, y))))


def _balanced_eq(x, out, y):
    # ties share the tangent equally, as JAX does
    one, half, zero = _full_like(out, 1), _full_like(out, 0.5), _full_like(out, 0)
    return select(eq(x, out), select(eq(y, out), half, one), zero)


defjvp(max_p, lambda t, x, y: mul(t, _balanced_eq(x, max_(x, y), y)),
       lambda t, x, y: mul(t, _balanced_eq(y, max_(x, y), x)))
defjvp(min_p, lambda t, x, y: mul(t, _balanced_eq(x, min_(x, y), y)),
       lambda t, x, y: mul(t, _balanced_eq(y, min_(x, y), x)))
defjvp(atan2_p, lambda t, x, y: mul(t, div(y, add(square(x), square(y)))),
       lambda t, x, y: mul(t, neg(div(x, add(square(x), square(y))))))
for _p in (and_p, or_p, xor_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p, nextafter_p):
    zero_jvp(_p)


select_n_p = primitive("select_n")


def _select_n_aval(which, *cases):
    if not cases:
        raise ValueError("select_n needs at least one case")
    _check_same("select_n", cases)
    if which.shape not in ((), cases[0].shape):
        raise ShapeError(f"select_n predicate shape {_shp(which.shape)} does not match case "
                         f"shape {_shp(cases[0].shape)}")
    if which.dtype != dtypes.bool_ and not dtypes.is_int(which.dtype):
        raise DTypeError(f"select_n predicate must be bool or int, got {which.dtype}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise DTypeError("a bool predicate selects between at most two cases")
    return cases[0].update(weak_type=all(c.weak_type for c in cases))


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    if all(isinstance(t, Zero) for t in tangents[1:]):
        return out, Zero(get_aval(out))
    ts = [instantiate(t) for t in tangents[1:]]
    return out, select_n_p.bind(which, *ts)


def _select_n_transpose(ct, which, *cases):
    assert not is_undefined(which)
    zeros = zeros_like_aval(get_aval(ct))
    outs = [None]
    for i, c in enumerate(cases):
        if is_undefined(c):
            branches = [zeros] * len(cases)
            branches[i] = ct
            outs.append(select_n_p.bind(which, *branches))
        else:
            outs.append(None)
    return outs


def _select_n_batch(vals, dims):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    which, wd = vals[0], dims[0]
    cases = [bdim_at_front(v, d, size) for v, d in zip(vals[1:], dims[1:])]
    case_shape = get_aval(cases[0]).shape
    if wd is not_mapped and get_aval(which).shape == ():
        return select_n_p.bind(which, *cases), 0
    which = bdim_at_front(which, wd, size)
    if get_aval(which).ndim != len(case_shape):   # scalar predicate per example
        which = broadcast_in_dim(which, case_shape, (0,))
    return select_n_p.bind(which, *cases), 0


select_n_p.abstract_eval = _select_n_aval
select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose
select_n_p.batch = _select_n_batch
select_n_p.is_linear = True


def select_n(which, *cases):
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (lax.select: same shapes and dtypes)."""
    return select_n_p.bind(pred, on_false, on_true)


def complex_basetype(dtype) -> np.dtype:
    """The real dtype of a complex dtype's parts (float32 for complex64); others as they are."""
    d = np.dtype(dtype)
    return np.dtype(d.type(0).real.dtype) if d.kind == "c" else d


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype holding values of ``dtype`` (complex64 up to float32, else
    complex128)."""
    d = np.dtype(dtype)
    if d.kind == "c":
        return d
    return dtypes.complex128 if d == dtypes.float64 else dtypes.complex64


def _complex_unary_aval(name, accept, out):
    def rule(x):
        if dtypes.kind(x.dtype) not in accept:
            raise DTypeError(f"{name} does not accept dtype {x.dtype}")
        return ShapedArray(x.shape, out(x.dtype), x.weak_type)
    return rule


def _complex_aval(x, y):
    shape = _check_same("complex", [x, y])
    if dtypes.kind(x.dtype) != "f":
        raise DTypeError(f"complex takes real floating-point parts, got {x.dtype}")
    return ShapedArray(shape, complex_dtype(x.dtype), x.weak_type and y.weak_type)


real_p = primitive("real")
imag_p = primitive("imag")
conj_p = primitive("conj")
complex_p = primitive("complex")
real_p.abstract_eval = _complex_unary_aval("real", "c", complex_basetype)
imag_p.abstract_eval = _complex_unary_aval("imag", "c", complex_basetype)
conj_p.abstract_eval = _complex_unary_aval("conj", "fc", complex_dtype)
complex_p.abstract_eval = _complex_aval
for _p in (real_p, imag_p, conj_p, complex_p):
    _p.batch = _elementwise_batch(_p)


def real(x):
    """The real part of a complex array (float32 for complex64)."""
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array (float32 for complex64)."""
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate; a real ``x`` becomes complex with a zero imaginary part."""
    return conj_p.bind(x)


def complex_(x, y):
    """``x + 1j * y`` from two real arrays of one dtype (lax.complex)."""
    return complex_p.bind(x, y)


def _zeros_of(ct):
    return full((), 0, get_aval(ct).dtype)


def _conj_transpose(ct, x):
    if dtypes.kind(x.aval.dtype) == "c":
        return [conj(ct)]
    return [real(ct)]


def _complex_transpose(ct, x, y):
    return [_unbroadcast(real(ct), x) if is_undefined(x) else None,
            _unbroadcast(neg(imag(ct)), y) if is_undefined(y) else None]


deflinear(real_p, lambda ct, x: [complex_(ct, _zeros_of(ct))])
deflinear(imag_p, lambda ct, x: [complex_(_zeros_of(ct), neg(ct))])
deflinear(conj_p, _conj_transpose)
deflinear(complex_p, _complex_transpose)


shift_left_p = elementwise("shift_left", _INT)
shift_right_logical_p = elementwise("shift_right_logical", _INT)
shift_right_arithmetic_p = elementwise("shift_right_arithmetic", _INT)
for _p in (shift_left_p, shift_right_logical_p, shift_right_arithmetic_p):
    zero_jvp(_p)


def shift_left(x, y):
    """``x << y``; a shift by the bit width or more gives 0, as in XLA."""
    return shift_left_p.bind(x, y)


def shift_right_logical(x, y):
    """``x >> y`` filling with zeros (also for signed ``x``); over-wide shifts give 0."""
    return shift_right_logical_p.bind(x, y)


def shift_right_arithmetic(x, y):
    """``x >> y`` filling with the sign bit; over-wide shifts give 0 or -1."""
    return shift_right_arithmetic_p.bind(x, y)


bitcast_convert_type_p = primitive("bitcast_convert_type")


def _bitcast_aval(x, *, new_dtype):
    if np.dtype(new_dtype).itemsize != x.dtype.itemsize:
        raise DTypeError(f"bitcast_convert_type from {x.dtype} to {np.dtype(new_dtype)}: fnx "
                         "bit casts only between dtypes of the same width")
    return ShapedArray(x.shape, new_dtype)


bitcast_convert_type_p.abstract_eval = _bitcast_aval
zero_jvp(bitcast_convert_type_p)
bitcast_convert_type_p.batch = lambda vals, dims, **p: (
    bitcast_convert_type_p.bind(vals[0], **p), dims[0])


def bitcast_convert_type(x, new_dtype):
    """The bits of ``x`` reinterpreted as ``new_dtype`` (same width), e.g. float32 -> uint32."""
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.canonical(new_dtype))


erf_inv_p = elementwise("erf_inv", _FLOAT)
defjvp_with_output(erf_inv_p, lambda t, x, out: mul(
    t, mul(_const(x, math.sqrt(math.pi) / 2), exp(square(out)))))


def erf_inv(x):
    """The inverse of ``erf`` on (-1, 1)."""
    return erf_inv_p.bind(x)

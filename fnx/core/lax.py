"""The primitives, each defined once with all of its rules, and thin functions that bind them.

Operands of a primitive already agree in shape and dtype (fnx.numpy broadcasts and promotes
before binding), so rules here stay simple. Rule kinds: ``abstract_eval``, ``jvp``, ``transpose``
(linear primitives), ``batch``. Backend impl tables live in fnx/backends.
"""
from __future__ import annotations

import enum
import math
import numpy as np

from . import dtypes
from .ad import Zero, defjvp, defjvp_with_output, deflinear, \
    instantiate, is_undefined, zero_jvp, zeros_like_aval
from .batching import bdim_at_front, not_mapped
from .core import Primitive, ShapedArray, get_aval
from .errors import DTypeError, ShapeError

_all_primitives: list[Primitive] = []


def primitive(name: str, multiple_results: bool = False) -> Primitive:
    p = Primitive(name, multiple_results)
    _all_primitives.append(p)
    return p


def all_primitives() -> list[Primitive]:
    """Every primitive fnx defines (the backend-coverage test walks this list)."""
    return list(_all_primitives)


def _shp(s):
    from .core import shape_str
    return shape_str(s)


# =============================================================================================
# Elementwise primitives

_FLOAT, _INT, _BOOL = "fc", "iu", "b"


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


def elementwise(name, kinds=_FLOAT + _INT, out_dtype=None):
    p = primitive(name)
    p.abstract_eval = _elementwise_aval(name, kinds, out_dtype)
    p.batch = _elementwise_batch(p)
    return p


# -- unary


neg_p = elementwise("neg")
sign_p = elementwise("sign")
floor_p = elementwise("floor", _FLOAT)
ceil_p = elementwise("ceil", _FLOAT)
round_p = elementwise("round", _FLOAT)
is_finite_p = elementwise("is_finite", _FLOAT, dtypes.bool_)
abs_p = elementwise("abs")
exp_p = elementwise("exp", _FLOAT)
log_p = elementwise("log", _FLOAT)
log1p_p = elementwise("log1p", _FLOAT)
expm1_p = elementwise("expm1", _FLOAT)
sqrt_p = elementwise("sqrt", _FLOAT)
rsqrt_p = elementwise("rsqrt", _FLOAT)
sin_p = elementwise("sin", _FLOAT)
cos_p = elementwise("cos", _FLOAT)
tan_p = elementwise("tan", _FLOAT)
asin_p = elementwise("asin", _FLOAT)
acos_p = elementwise("acos", _FLOAT)
atan_p = elementwise("atan", _FLOAT)
sinh_p = elementwise("sinh", _FLOAT)
cosh_p = elementwise("cosh", _FLOAT)
tanh_p = elementwise("tanh", _FLOAT)
asinh_p = elementwise("asinh", _FLOAT)
acosh_p = elementwise("acosh", _FLOAT)
atanh_p = elementwise("atanh", _FLOAT)
logistic_p = elementwise("logistic", _FLOAT)
erf_p = elementwise("erf", _FLOAT)
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
exp, log, log1p, expm1, sqrt, rsqrt = map(_bind1, (exp_p, log_p, log1p_p, expm1_p, sqrt_p, rsqrt_p))
sin, cos, tan, asin, acos, atan = map(_bind1, (sin_p, cos_p, tan_p, asin_p, acos_p, atan_p))
sinh, cosh, tanh, asinh, acosh, atanh = map(
    _bind1, (sinh_p, cosh_p, tanh_p, asinh_p, acosh_p, atanh_p))
logistic, erf, bitwise_not, stop_gradient_raw = map(_bind1, (logistic_p, erf_p, not_p,
                                                             stop_gradient_p))
add, sub, mul, div, rem, pow_, max_, min_, atan2, nextafter = map(
    _bind1, (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p))
bitwise_and, bitwise_or, bitwise_xor = map(_bind1, (and_p, or_p, xor_p))
eq, ne, lt, le, gt, ge = map(_bind1, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))


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
defjvp_with_output(exp_p, lambda t, x, out: mul(t, out))
defjvp(log_p, lambda t, x: div(t, x))
defjvp(log1p_p, lambda t, x: div(t, add(x, _const(x, 1))))
defjvp_with_output(expm1_p, lambda t, x, out: mul(t, add(out, _const(out, 1))))
defjvp_with_output(sqrt_p, lambda t, x, out: div(t, mul(out, _const(out, 2))))
defjvp_with_output(rsqrt_p, lambda t, x, out: mul(t, mul(_const(x, -0.5), div(out, x))))
defjvp(sin_p, lambda t, x: mul(t, cos(x)))
defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
defjvp_with_output(tan_p, lambda t, x, out: mul(t, add(_const(x, 1), square(out))))
defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_const(x, 1), square(x)))))
defjvp(acos_p, lambda t, x: neg(mul(t, rsqrt(sub(_const(x, 1), square(x))))))
defjvp(atan_p, lambda t, x: div(t, add(_const(x, 1), square(x))))
defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
defjvp_with_output(tanh_p, lambda t, x, out: mul(t, sub(_const(x, 1), square(out))))
defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), _const(x, 1)))))
defjvp(acosh_p, lambda t, x: mul(t, rsqrt(mul(sub(x, _const(x, 1)), add(x, _const(x, 1))))))
defjvp(atanh_p, lambda t, x: div(t, sub(_const(x, 1), square(x))))
defjvp_with_output(logistic_p, lambda t, x, out: mul(t, mul(out, sub(_const(out, 1), out))))
defjvp(erf_p, lambda t, x: mul(t, mul(_const(x, 2 / math.sqrt(math.pi)), exp(neg(square(x))))))


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


# =============================================================================================
# select_n and convert_element_type

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


def exact_scalar(x, dtype):
    """A Python number as a NumPy scalar of ``dtype``, converted once from the exact value (not
    through the weak float32 it would otherwise become first)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return np.dtype(dtype).type(x)
    return x


def convert_element_type(x, dtype, weak_type: bool = False):
    dtype = dtypes.canonical(dtype)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type and not isinstance(x, (int, float, bool)):
        return x
    return convert_element_type_p.bind(exact_scalar(x, dtype), new_dtype=dtype,
                                       weak_type=weak_type)


# =============================================================================================
# Complex numbers: real, imag, conj, complex
#
# As in JAX, tangents of complex values are complex and every transpose rule is the transpose
# for the bilinear pairing <ct, t> = Re(ct * t) (no conjugation anywhere): the transpose of
# multiplying by c is multiplying by c, conj's is conj, real's makes a complex cotangent with
# a zero imaginary part and imag's one with -ct as its imaginary part. ``grad`` of a real
# function of z therefore returns the conjugate of the (real, imag) gradient: 2*conj(z) for
# |z|**2, as JAX.


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


# =============================================================================================
# Shape primitives

broadcast_in_dim_p = primitive("broadcast_in_dim")


def _broadcast_in_dim_aval(x, *, shape, broadcast_dimensions):
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
    shape, bd = tuple(int(s) for s in shape), tuple(int(b) for b in broadcast_dimensions)
    aval = get_aval(x)
    if aval.shape == shape and bd == tuple(range(len(shape))) \
            and not isinstance(x, (int, float, bool, complex)):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bd)


def full(shape, value, dtype=None, weak_type: bool | None = None):
    """An array of ``shape`` filled with ``value``."""
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
    x = bdim_at_front(vals[0], dims[0], None)
    return transpose_p.bind(x, permutation=(0,) + tuple(p + 1 for p in permutation)), 0


transpose_p.abstract_eval = _transpose_aval
deflinear(transpose_p, _transpose_transpose)
transpose_p.batch = _transpose_batch


def transpose(x, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return transpose_p.bind(x, permutation=permutation)


def moveaxis(x, src: int, dst: int):
    n = get_aval(x).ndim
    src, dst = src % n, dst % n
    perm = [i for i in range(n) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


rev_p = primitive("rev")
rev_p.abstract_eval = lambda x, *, dimensions: x
deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
rev_p.batch = lambda vals, dims, *, dimensions: (
    rev_p.bind(bdim_at_front(vals[0], dims[0], None),
               dimensions=tuple(d + 1 for d in dimensions)), 0)


def rev(x, dimensions):
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
deflinear(slice_p, _slice_transpose)
slice_p.batch = _slice_batch


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001 - lax's name
    strides = tuple(strides) if strides is not None else (1,) * len(start_indices)
    return slice_p.bind(x, start_indices=tuple(map(int, start_indices)),
                        limit_indices=tuple(map(int, limit_indices)),
                        strides=tuple(map(int, strides)))


def slice_in_dim(x, start, limit, stride=1, axis=0):
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
    cfg = tuple((int(a), int(b), int(c)) for a, b, c in padding_config)
    return pad_p.bind(x, padding_value, padding_config=cfg)


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
    if len(xs) == 1:
        return xs[0]
    return concatenate_p.bind(*xs, dimension=int(dimension))


iota_p = primitive("iota")


def _iota_aval(*, dtype, shape, dimension):
    return ShapedArray(shape, dtype)


iota_p.abstract_eval = _iota_aval
zero_jvp(iota_p)


def iota(dtype, size: int):
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape, dimension):
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=tuple(shape),
                       dimension=int(dimension))


# =============================================================================================
# Gather and scatter along one axis

take_p = primitive("take")


def _take_aval(x, idx, *, axis):
    if not dtypes.is_int(idx.dtype):
        raise DTypeError(f"indices must be integers, got {idx.dtype}")
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"take axis {axis} out of range for shape {_shp(x.shape)}")
    return ShapedArray(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype, x.weak_type)


def _take_transpose(ct, x, idx, *, axis):
    # take clamps its indices; the scatter back must land where the gather read
    zeros = zeros_like_aval(x.aval)
    return [scatter_p.bind(zeros, _clip_index(idx, x.aval.shape[axis]), ct, axis=axis,
                           mode="add"), None]


def _merge_batch_into_axis(x, axis, size):
    """(B, *s) -> s[:axis] + (B*s[axis],) + s[axis+1:] with B in front of ``axis``."""
    x = moveaxis(x, 0, axis)
    shape = get_aval(x).shape
    return reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])


def _offset_indices(idx, size, n):
    """Indices (B, ...) shifted by b*n so they address a B-merged axis of length B*n."""
    aval = get_aval(idx)
    offs = mul(broadcasted_iota(aval.dtype, aval.shape, 0), full(aval.shape, n, aval.dtype))
    return add(idx, offs)


def _take_batch(vals, dims, *, axis):
    (x, idx), (dx, di) = vals, dims
    if di is not_mapped:
        x = bdim_at_front(x, dx, None)
        return take_p.bind(x, idx, axis=axis + 1), 0
    if dx is not_mapped:
        return take_p.bind(x, moveaxis(idx, di, 0), axis=axis), axis
    size = get_aval(x).shape[dx]
    x = bdim_at_front(x, dx, size)
    n = get_aval(x).shape[axis + 1]
    idx = bdim_at_front(idx, di, size)
    merged = _merge_batch_into_axis(x, axis, size)
    return take_p.bind(merged, _offset_indices(_clip_index(idx, n), size, n), axis=axis), axis


def _clip_index(idx, n):
    aval = get_aval(idx)
    return max_(min_(idx, full(aval.shape, n - 1, aval.dtype)), full(aval.shape, 0, aval.dtype))


take_p.abstract_eval = _take_aval
take_p.jvp = lambda primals, tangents, *, axis: (
    take_p.bind(*primals, axis=axis),
    Zero(get_aval(take_p.bind(*primals, axis=axis))) if isinstance(tangents[0], Zero)
    else take_p.bind(tangents[0], primals[1], axis=axis))
take_p.transpose = _take_transpose
take_p.batch = _take_batch
take_p.is_linear = True


def take(x, idx, axis: int = 0):
    """``x`` indexed along ``axis`` by integer ``idx`` (indices outside [0, n) are clamped)."""
    return take_p.bind(x, idx, axis=int(axis))


scatter_p = primitive("scatter")
_SCATTER_MODES = ("set", "add", "mul", "min", "max")


def _scatter_aval(x, idx, upd, *, axis, mode):
    if mode not in _SCATTER_MODES:
        raise ValueError(f"scatter mode must be one of {_SCATTER_MODES}")
    want = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if upd.shape != want:
        raise ShapeError(f"scatter updates have shape {_shp(upd.shape)}, expected "
                         f"{_shp(want)} for operand {_shp(x.shape)} and indices "
                         f"{_shp(idx.shape)}")
    if upd.dtype != x.dtype:
        raise DTypeError(f"scatter updates dtype {upd.dtype} differs from operand {x.dtype}")
    return x


def _scatter_jvp(primals, tangents, *, axis, mode):
    x, idx, upd = primals
    tx, _, tu = tangents
    out = scatter_p.bind(x, idx, upd, axis=axis, mode=mode)
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return out, Zero(get_aval(out))
    tx, tu = instantiate(tx), instantiate(tu)
    if mode in ("set", "add"):
        return out, scatter_p.bind(tx, idx, tu, axis=axis, mode=mode)
    if mode == "mul":
        t = scatter_p.bind(tx, idx, upd, axis=axis, mode="mul")
        others = _scatter_mul_others(x, idx, upd, axis)
        return out, scatter_p.bind(t, idx, mul(tu, mul(take(x, idx, axis), others)), axis=axis,
                                   mode="add")
    # min / max: the tangent of whichever value won, averaged over ties (as JAX does)
    x_aval, u_aval = get_aval(x), get_aval(upd)
    x_won = eq(x, out)
    u_won = eq(upd, take(out, idx, axis))
    kept = select(x_won, tx, zeros_like_aval(get_aval(tx)))
    t = scatter_p.bind(kept, idx, select(u_won, tu, zeros_like_aval(get_aval(tu))),
                       axis=axis, mode="add")
    ones_x, ones_u = full(x_aval.shape, 1, x_aval.dtype), full(u_aval.shape, 1, u_aval.dtype)
    count = scatter_p.bind(select(x_won, ones_x, zeros_like_aval(x_aval)), idx,
                           select(u_won, ones_u, zeros_like_aval(u_aval)), axis=axis, mode="add")
    return out, div(t, max_(count, ones_x))


def _scatter_mul_others(x, idx, upd, axis):
    """For each update, the product of the other updates that land on the same element (the
    derivative of a multiplicative scatter with repeated indices), without dividing by zero."""
    x_aval, u_aval = get_aval(x), get_aval(upd)
    zero_u, one_u = zeros_like_aval(u_aval), full(u_aval.shape, 1, u_aval.dtype)
    zero_x, one_x = zeros_like_aval(x_aval), full(x_aval.shape, 1, x_aval.dtype)
    nonzero = ne(upd, zero_u)
    safe = select(nonzero, upd, one_u)
    prod_nonzero = take(scatter_p.bind(one_x, idx, safe, axis=axis, mode="mul"), idx, axis)
    n_zeros = take(scatter_p.bind(zero_x, idx, select(nonzero, zero_u, one_u), axis=axis,
                                  mode="add"), idx, axis)
    return select(nonzero, select(eq(n_zeros, zero_u), div(prod_nonzero, safe), zero_u),
                  select(eq(n_zeros, one_u), prod_nonzero, zero_u))


def _scatter_set_winners(idx, n, upd_shape, axis):
    """Which updates of a ``set`` scatter onto an axis of length ``n`` land: the last of
    repeated indices, as in NumPy. A boolean mask of the updates' shape."""
    i_shape = get_aval(idx).shape
    size = int(np.prod(i_shape, dtype=np.int64))
    pos = iota(dtypes.int32, size)
    last = scatter_p.bind(full((n,), -1, dtypes.int32), reshape(idx, (size,)), pos, axis=0,
                          mode="max")
    won = eq(take(last, idx, 0), reshape(pos, i_shape))
    return broadcast_in_dim(won, upd_shape, tuple(range(axis, axis + len(i_shape))))


def _in_range_mask(idx, n, shape, axis):
    """Whether each index lies in [0, n), broadcast to ``shape`` (an update's: the index dims
    start at ``axis``)."""
    aval = get_aval(idx)
    ok = bitwise_and(ge(idx, full(aval.shape, 0, aval.dtype)),
                     lt(idx, full(aval.shape, n, aval.dtype)))
    return broadcast_in_dim(ok, shape, tuple(range(axis, axis + aval.ndim)))


def _scatter_transpose(ct, x, idx, upd, *, axis, mode):
    if mode == "add":
        ct_u = None
        if is_undefined(upd):      # a dropped update (index out of range) gets no cotangent
            ct_u = take(ct, idx, axis)
            ct_u = select(_in_range_mask(idx, get_aval(ct).shape[axis], get_aval(ct_u).shape,
                                         axis), ct_u, zeros_like_aval(get_aval(ct_u)))
        return [ct if is_undefined(x) else None, None, ct_u]
    if mode == "set":
        ct_x = None
        if is_undefined(x):
            zu = zeros_like_aval(upd.aval if is_undefined(upd) else get_aval(upd))
            ct_x = scatter_p.bind(ct, idx, zu, axis=axis, mode="set")
        ct_u = None
        if is_undefined(upd):
            ct_u = take(ct, idx, axis)
            won = _scatter_set_winners(idx, get_aval(ct).shape[axis], get_aval(ct_u).shape, axis)
            ct_u = select(won, ct_u, zeros_like_aval(get_aval(ct_u)))
        return [ct_x, None, ct_u]
    if mode == "mul":
        assert is_undefined(x) and not is_undefined(upd)
        return [scatter_p.bind(ct, idx, upd, axis=axis, mode="mul"), None, None]
    raise NotImplementedError(f"transpose of scatter mode {mode}")


def _scatter_batch(vals, dims, *, axis, mode):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    x, idx, upd = (bdim_at_front(v, d, size) for v, d in zip(vals, dims))
    n = get_aval(x).shape[axis + 1]
    merged = _merge_batch_into_axis(x, axis, size)
    # an index out of [0, n) stays out of the merged axis, so its update is still dropped
    i_aval = get_aval(idx)
    ok = bitwise_and(ge(idx, full(i_aval.shape, 0, i_aval.dtype)),
                     lt(idx, full(i_aval.shape, n, i_aval.dtype)))
    idx = select(ok, _offset_indices(idx, size, n), full(i_aval.shape, -1, i_aval.dtype))
    upd = _merge_batch_leading(upd, axis)
    out = scatter_p.bind(merged, idx, upd, axis=axis, mode=mode)
    shape = get_aval(out).shape
    out = reshape(out, shape[:axis] + (size, n) + shape[axis + 1:])
    return out, axis


def _merge_batch_leading(upd, axis):
    """updates (B, pre..., idx..., post...) -> pre + (B, idx...) + post."""
    return moveaxis(upd, 0, axis)


scatter_p.abstract_eval = _scatter_aval
scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
scatter_p.batch = _scatter_batch


def scatter(x, idx, updates, axis: int = 0, mode: str = "set"):
    """``x`` with ``updates`` written (``mode`` 'set') or combined ('add', 'mul', 'min',
    'max') along ``axis`` at integer ``idx``. An update whose index lies outside [0, n) is
    dropped, as XLA's scatter does (JAX's default mode)."""
    return scatter_p.bind(x, idx, updates, axis=int(axis), mode=mode)


# =============================================================================================
# Slices at traced offsets: take and scatter at positions computed from the starts, so their
# derivative and batching rules serve these too. A start is read as XLA reads it: a negative
# one counts from the end (with allow_negative_indices), then it is clamped so that the whole
# slice stays inside the operand.


def _is_static_int(s) -> bool:
    return isinstance(s, (int, np.integer)) or (
        isinstance(s, np.ndarray) and s.ndim == 0 and dtypes.is_int(s.dtype))


def _slice_starts(name, shape, starts, sizes, allow_negative):
    """The clamped starts: Python ints where ``starts`` are concrete, int32 scalars where
    traced."""
    if not isinstance(starts, (list, tuple)):
        aval = get_aval(starts)
        if aval.ndim != 1:
            raise ShapeError(f"{name} start indices must be a sequence or a 1-D array, got "
                             f"shape {_shp(aval.shape)}")
        starts = ([int(i) for i in starts] if isinstance(starts, np.ndarray) else
                  [reshape(slice(starts, (i,), (i + 1,)), ()) for i in range(aval.shape[0])])
    if len(starts) != len(shape) or len(sizes) != len(shape):
        raise ShapeError(f"{name} of an operand of shape {_shp(shape)} takes {len(shape)} start "
                         f"indices and sizes, got {len(starts)} start indices and sizes "
                         f"{_shp(sizes)}")
    if any(not 0 <= z <= n for z, n in zip(sizes, shape)):
        raise ShapeError(f"{name} sizes {_shp(sizes)} do not fit in an operand of shape "
                         f"{_shp(shape)}")
    negative = ([allow_negative] * len(shape) if isinstance(allow_negative, bool)
                else list(allow_negative))
    out = []
    for s, n, z, wrap in zip(starts, shape, sizes, negative):
        if _is_static_int(s):
            s = int(s)
            s = s + n if wrap and s < 0 else s
            out.append(min(max(s, 0), n - z))
            continue
        aval = get_aval(s)
        if aval.shape != () or not dtypes.is_int(aval.dtype):
            raise DTypeError(f"{name} start indices must be integer scalars, got {aval.dtype} "
                             f"of shape {_shp(aval.shape)}")
        s = convert_element_type(s, dtypes.int32)
        if wrap:
            s = select(lt(s, full((), 0, dtypes.int32)), add(s, full((), n, dtypes.int32)), s)
        out.append(max_(min_(s, full((), n - z, dtypes.int32)), full((), 0, dtypes.int32)))
    return out


def _offsets(start, shape, axis, dtype):
    """``start + i`` along ``axis`` of an array of ``shape``."""
    along = broadcasted_iota(dtype, shape, axis)
    if _is_static_int(start):
        return along if start == 0 else add(along, full(shape, start, dtype))
    return add(along, broadcast_in_dim(convert_element_type(start, dtype), shape, ()))


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The ``slice_sizes`` block of ``operand`` at ``start_indices``, which may be traced.

    >>> lax.dynamic_slice(jnp.arange(10), (i,), (3,))   # x[i:i + 3], i clamped to [0, 7]
    """
    shape = get_aval(operand).shape
    sizes = tuple(int(z) for z in slice_sizes)
    starts = _slice_starts("dynamic_slice", shape, start_indices, sizes,
                           allow_negative_indices)
    x = operand
    for axis, (s, z) in enumerate(zip(starts, sizes)):
        if not _is_static_int(s):
            x = take(x, _offsets(s, (z,), 0, dtypes.int32), axis)
        elif (s, z) != (0, shape[axis]):
            x = slice_in_dim(x, s, s + z, axis=axis)
    return x


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at ``start_indices``, which may be traced.

    >>> lax.dynamic_update_slice(jnp.zeros(10), jnp.ones(3), (i,))
    """
    x, u = get_aval(operand), get_aval(update)
    if u.ndim != x.ndim:
        raise ShapeError(f"dynamic_update_slice update of shape {_shp(u.shape)} has a rank "
                         f"other than its operand's {_shp(x.shape)}")
    if u.dtype != x.dtype:
        raise DTypeError(f"dynamic_update_slice update dtype {u.dtype} differs from its "
                         f"operand's {x.dtype}")
    starts = _slice_starts("dynamic_update_slice", x.shape, start_indices, u.shape,
                           allow_negative_indices)
    if x.ndim == 0:
        return update
    # the update's flat positions in the operand: unique, so a "set" scatter is exact
    index = dtypes.int32 if math.prod(x.shape) < 2 ** 31 else dtypes.int64
    positions, stride = None, 1
    for axis in reversed(range(x.ndim)):
        term = _offsets(starts[axis], u.shape, axis, index)
        if stride != 1:
            term = mul(term, full(u.shape, stride, index))
        positions = term if positions is None else add(positions, term)
        stride *= x.shape[axis]
    n = math.prod(u.shape)
    flat = scatter(reshape(operand, (math.prod(x.shape),)), reshape(positions, (n,)),
                   reshape(update, (n,)), 0, "set")
    return reshape(flat, x.shape)


def _in_dim(operand, axis, start, size):
    """Starts and sizes selecting ``size`` at ``start`` along ``axis`` and all of the rest."""
    shape = get_aval(operand).shape
    axis = int(axis) % max(len(shape), 1)
    starts, sizes = [0] * len(shape), list(shape)
    starts[axis], sizes[axis] = start, size
    return axis, starts, sizes


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
    """``dynamic_slice`` along one ``axis``: ``slice_size`` entries from ``start_index``."""
    _, starts, sizes = _in_dim(operand, axis, start_index, slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                         allow_negative_indices=True):
    """Entry ``index`` of ``operand`` along ``axis`` (kept as a size-1 axis with keepdims)."""
    axis, starts, sizes = _in_dim(operand, axis, index, 1)
    out = dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    """``dynamic_update_slice`` along one ``axis``, at ``start_index``."""
    _, starts, _ = _in_dim(operand, axis, start_index, 0)
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *,
                                allow_negative_indices=True):
    """``operand`` with entry ``index`` along ``axis`` replaced by ``update`` (which may lack
    that axis)."""
    axis, starts, _ = _in_dim(operand, axis, index, 1)
    if get_aval(update).ndim == get_aval(operand).ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


# =============================================================================================
# Reductions


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
    def rule(vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        x = bdim_at_front(x, d, None)
        return prim.bind(x, axes=tuple(a + 1 for a in axes), **params), 0
    return rule


def reduction(name, kinds=_FLOAT + _INT + _BOOL, out_dtype=None):
    p = primitive(name)
    p.abstract_eval = _reduce_aval(name, kinds, out_dtype)
    p.batch = _reduce_batch(p)
    return p


reduce_sum_p = reduction("reduce_sum", _FLOAT + _INT)
reduce_max_p = reduction("reduce_max")
reduce_min_p = reduction("reduce_min")
reduce_prod_p = reduction("reduce_prod", _FLOAT + _INT)
reduce_and_p = reduction("reduce_and", _BOOL)
reduce_or_p = reduction("reduce_or", _BOOL)
zero_jvp(reduce_and_p)
zero_jvp(reduce_or_p)


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


deflinear(reduce_sum_p, _reduce_sum_transpose)


def _keep_dims(y, in_shape, axes):
    kept = tuple(i for i in range(len(in_shape)) if i not in axes)
    return broadcast_in_dim(y, in_shape, kept)


def _reduce_chooser_jvp(prim):
    def fn(t, x, *, axes):
        out = prim.bind(x, axes=axes)
        shape = get_aval(x).shape
        location = convert_element_type(eq(x, _keep_dims(out, shape, axes)), get_aval(t).dtype)
        counts = reduce_sum(location, axes)
        return div(reduce_sum(mul(t, location), axes), counts)
    return fn


defjvp(reduce_max_p, _reduce_chooser_jvp(reduce_max_p))
defjvp(reduce_min_p, _reduce_chooser_jvp(reduce_min_p))


def _reduce_prod_jvp(t, x, *, axes):
    # d prod = sum_i t_i * prod_{j != i} x_j, with the exclusive products from prefix and suffix
    # cumulative products, so it stays exact where x has zeros.
    shape = get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = list(axes) + kept
    n = math.prod(shape[a] for a in axes)
    rest = tuple(shape[i] for i in kept)
    xs = reshape(transpose(x, perm), (n,) + rest)
    ts = reshape(transpose(t, perm), (n,) + rest)
    one = full((1,) + rest, 1, get_aval(x).dtype)
    before = cumprod(concatenate([one, slice_in_dim(xs, 0, n - 1)], 0), 0)
    after = cumprod(concatenate([slice_in_dim(xs, 1, n), one], 0), 0, reverse=True)
    return reduce_sum(mul(ts, mul(before, after)), (0,))


defjvp(reduce_prod_p, _reduce_prod_jvp)


def reduce_sum(x, axes):
    return reduce_sum_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_max(x, axes):
    return reduce_max_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_min(x, axes):
    return reduce_min_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_prod(x, axes):
    return reduce_prod_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_and(x, axes):
    return reduce_and_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def reduce_or(x, axes):
    return reduce_or_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


def _arg_aval(name):
    def rule(x, *, axis, index_dtype):
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis} out of range for shape {_shp(x.shape)}")
        if x.shape[axis] == 0:
            raise ShapeError(f"{name} of an empty axis")
        return ShapedArray(x.shape[:axis] + x.shape[axis + 1:], index_dtype)
    return rule


argmax_p = primitive("argmax")
argmin_p = primitive("argmin")
for _p in (argmax_p, argmin_p):
    _p.abstract_eval = _arg_aval(_p.name)
    zero_jvp(_p)
    _p.batch = (lambda p: lambda vals, dims, *, axis, index_dtype: (
        p.bind(bdim_at_front(vals[0], dims[0], None), axis=axis + 1, index_dtype=index_dtype),
        0))(_p)


def argmax(x, axis, index_dtype=dtypes.int32):
    return argmax_p.bind(x, axis=int(axis), index_dtype=np.dtype(index_dtype))


def argmin(x, axis, index_dtype=dtypes.int32):
    return argmin_p.bind(x, axis=int(axis), index_dtype=np.dtype(index_dtype))


cumsum_p = primitive("cumsum")
cumsum_p.abstract_eval = lambda x, *, axis, reverse: x
deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum(ct, axis, not reverse)])
cumsum_p.batch = lambda vals, dims, *, axis, reverse: (
    cumsum_p.bind(bdim_at_front(vals[0], dims[0], None), axis=axis + 1, reverse=reverse), 0)


def cumsum(x, axis: int = 0, reverse: bool = False):
    return cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))


def _cumulative(op, x, axis, reverse, identity):
    """Inclusive scan by doubling (Hillis-Steele): log2(n) steps of primitives, so it is
    differentiable and batchable with no rules of its own."""
    aval = get_aval(x)
    axis = axis % aval.ndim
    n = aval.shape[axis]
    if reverse:
        x = rev(x, (axis,))
    shift = 1
    while shift < n:
        pad_shape = list(aval.shape)
        pad_shape[axis] = shift
        filler = full(tuple(pad_shape), identity, aval.dtype)
        shifted = concatenate([filler, slice_in_dim(x, 0, n - shift, 1, axis)], axis)
        x = op(x, shifted)
        shift *= 2
    return rev(x, (axis,)) if reverse else x


def cumprod(x, axis: int = 0, reverse: bool = False):
    return _cumulative(mul, x, axis, reverse, 1)


def cummax(x, axis: int = 0, reverse: bool = False):
    dt = get_aval(x).dtype
    low = -np.inf if dtypes.is_float(dt) else np.iinfo(dt).min
    return _cumulative(max_, x, axis, reverse, low)


def cummin(x, axis: int = 0, reverse: bool = False):
    dt = get_aval(x).dtype
    high = np.inf if dtypes.is_float(dt) else np.iinfo(dt).max
    return _cumulative(min_, x, axis, reverse, high)


# =============================================================================================
# dot_general


dot_general_p = primitive("dot_general")


def _dot_general_aval(lhs, rhs, *, dimension_numbers, precision=None,
                      preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"dot_general: contracting dimension {a} of lhs {_shp(lhs.shape)} "
                             f"does not match dimension {b} of rhs {_shp(rhs.shape)}")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"dot_general: batch dimension {a} of lhs {_shp(lhs.shape)} "
                             f"does not match dimension {b} of rhs {_shp(rhs.shape)}")
    if lhs.dtype != rhs.dtype:
        raise DTypeError(f"dot_general got dtypes {lhs.dtype} and {rhs.dtype}")
    batch = tuple(lhs.shape[a] for a in lb)
    lfree = tuple(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    dtype = preferred_element_type or lhs.dtype
    return ShapedArray(batch + lfree + rfree, dtype, lhs.weak_type and rhs.weak_type)


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _remaining(original, *removed_lists):
    removed = set(i for r in removed_lists for i in r)
    return [i for i in original if i not in removed]


def _dot_general_transpose_lhs(g, x_aval, y, *, dimension_numbers, precision=None,
                               preferred_element_type=None):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim = len(x_aval.shape)
    y_ndim = get_aval(y).ndim
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = [c for _, c in sorted(zip(y_contract, x_contract))]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    out = dot_general(*_alike(g, y), dims, precision=precision,
                      preferred_element_type=preferred_element_type)
    return _to_layout(out, out_axes, x_aval.dtype)


def _dot_general_transpose_rhs(g, x, y_aval, *, dimension_numbers, precision=None,
                               preferred_element_type=None):
    # x^T g with x first, not (g^T x)^T: for a dense layer's weight gradient the product comes
    # out in the weight's layout, with no transpose after it
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim = get_aval(x).ndim
    y_ndim = len(y_aval.shape)
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    ans_batch, ans_x, _ = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(x_kept), ans_x), (tuple(x_batch), ans_batch))
    y_contract_sorted_by_x = [c for _, c in sorted(zip(x_contract, y_contract))]
    out_axes = np.argsort(list(y_batch) + y_contract_sorted_by_x + y_kept)
    out = dot_general(*_alike(x, g), dims, precision=precision,
                      preferred_element_type=preferred_element_type)
    return _to_layout(out, out_axes, y_aval.dtype)


def _alike(a, b):
    """A cotangent has the product's dtype (``preferred_element_type``, bfloat16 operands
    accumulating in float32, say), the other operand its own: both go, exactly, to their
    common dtype for the transposed product."""
    da, db = get_aval(a).dtype, get_aval(b).dtype
    if da == db:
        return a, b
    common, _ = dtypes.result_type((da, False), (db, False))
    return convert_element_type(a, common), convert_element_type(b, common)


def _to_layout(out, out_axes, dtype):
    """A transposed product's axes put in the operand's order and its dtype restored."""
    out = transpose(out, tuple(int(a) for a in out_axes))
    if get_aval(out).dtype != dtype:
        out = convert_element_type(out, dtype)
    return out


def _dot_general_transpose(ct, lhs, rhs, **params):
    if is_undefined(lhs) and not is_undefined(rhs):
        return [_dot_general_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    if is_undefined(rhs) and not is_undefined(lhs):
        return [None, _dot_general_transpose_rhs(ct, lhs, rhs.aval, **params)]
    raise ValueError("dot_general is not linear in both operands at once")


def _dot_general_batch(vals, dims, *, dimension_numbers, **params):
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers

    def shift(ax, d):
        return tuple(a + (a >= d) for a in ax) if d is not not_mapped else tuple(ax)

    if ld is not not_mapped and rd is not not_mapped:
        lhs, rhs = moveaxis(lhs, ld, 0), moveaxis(rhs, rd, 0)
        dn = ((shift(lc, 0), shift(rc, 0)), ((0,) + shift(lb, 0), (0,) + shift(rb, 0)))
        return dot_general(lhs, rhs, dn, **params), 0
    if ld is not not_mapped:
        # the batch axis of lhs becomes a free lhs dimension of the output
        lhs = moveaxis(lhs, ld, 0)
        dn = ((shift(lc, 0), tuple(rc)), (shift(lb, 0), tuple(rb)))
        return dot_general(lhs, rhs, dn, **params), len(lb)
    rhs = moveaxis(rhs, rd, 0)
    dn = ((tuple(lc), shift(rc, 0)), (tuple(lb), shift(rb, 0)))
    lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    return dot_general(lhs, rhs, dn, **params), len(lb) + lhs_free


dot_general_p.abstract_eval = _dot_general_aval
defjvp(dot_general_p,
       lambda t, x, y, **p: dot_general_p.bind(t, y, **p),
       lambda t, x, y, **p: dot_general_p.bind(x, t, **p))
dot_general_p.transpose = _dot_general_transpose
dot_general_p.batch = _dot_general_batch


class Precision(enum.Enum):
    """JAX's ``lax.Precision``, accepted wherever ``precision=`` is: DEFAULT follows
    ``default_matmul_precision``, HIGH allows TF32 (as XLA's GPU products do), HIGHEST is full
    float32.

    >>> lax.dot(x, y, precision=lax.Precision.HIGHEST)
    """
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self):
        return self.name


# fnx's two product precisions, by every name JAX accepts (there is no bfloat16 product: the
# cheaper names take the cheaper of fnx's two)
_PRECISION_NAMES = {
    "highest": "highest", "float32": "highest", "tensorfloat32": "tensorfloat32",
    "high": "tensorfloat32", "bfloat16_3x": "tensorfloat32", "fastest": "tensorfloat32",
    "bfloat16": "tensorfloat32", "default": None,
}
_PRECISION_OF = {Precision.DEFAULT: None, Precision.HIGH: "tensorfloat32",
                 Precision.HIGHEST: "highest"}


def canonicalize_precision(precision):
    """``precision`` (None, a name, a ``Precision``, or a pair of these for the two operands) as
    fnx's ``None`` (the configured default), ``"highest"`` or ``"tensorfloat32"``."""
    if isinstance(precision, (tuple, list)):
        got = [canonicalize_precision(p) for p in precision]
        # the higher of the operands' precisions wins, as in XLA
        return "highest" if "highest" in got else ("tensorfloat32" if any(got) else None)
    if precision is None or isinstance(precision, Precision):
        return _PRECISION_OF.get(precision)
    name = str(precision).lower()
    if name.startswith("precision."):
        name = name[len("precision."):]
    if name not in _PRECISION_NAMES:
        raise ValueError(f"unknown precision {precision!r}; expected a lax.Precision or one of "
                         f"{sorted(_PRECISION_NAMES)}")
    return _PRECISION_NAMES[name]


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(map(int, lc)), tuple(map(int, rc))), (tuple(map(int, lb)), tuple(map(int, rb))))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=preferred_element_type)


def dot(a, b, precision=None, preferred_element_type=None):
    """Vector/matrix product of 1-D or 2-D operands (lax.dot)."""
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    return dot_general(a, b, (((na - 1,), (0 if nb == 1 else nb - 2,)), ((), ())),
                       precision, preferred_element_type)


# =============================================================================================
# Sorting


sort_p = primitive("sort", multiple_results=True)


def _sort_aval(*operands, dimension, num_keys):
    _check_shapes_only("sort", operands)
    return list(operands)


def _check_shapes_only(name, avals):
    for a in avals[1:]:
        if a.shape != avals[0].shape:
            raise ShapeError(f"{name} operands have shapes {_shp(avals[0].shape)} and "
                             f"{_shp(a.shape)}")


def _sort_jvp(primals, tangents, *, dimension, num_keys):
    shape = get_aval(primals[0]).shape
    idx = broadcasted_iota(dtypes.int32, shape, dimension)
    outs = sort_p.bind(*primals, idx, dimension=dimension, num_keys=num_keys)
    perm = outs[-1]
    tans = [Zero(get_aval(p)) if isinstance(t, Zero) else take_along_axis(t, perm, dimension)
            for p, t in zip(primals, tangents)]
    return outs[:-1], tans


def _sort_batch(vals, dims, *, dimension, num_keys):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    xs = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    return sort_p.bind(*xs, dimension=dimension + 1, num_keys=num_keys), [0] * len(xs)


sort_p.abstract_eval = _sort_aval
sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch


def sort(operands, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along ``dimension`` (stably: the sort is always stable). Several operands sort
    together by the first ``num_keys`` of them, lexicographically, and come back as a tuple.

    >>> keys, vals = lax.sort((jnp.array([3, 1, 2]), jnp.array([0., 1., 2.])), num_keys=1)
    """
    single = not isinstance(operands, (list, tuple))
    ops = [operands] if single else list(operands)
    dimension = dimension % get_aval(ops[0]).ndim
    outs = sort_p.bind(*ops, dimension=dimension, num_keys=num_keys)
    return outs[0] if single else tuple(outs)


take_along_axis_p = primitive("take_along_axis")


def _take_along_axis_aval(x, idx, *, axis):
    if not dtypes.is_int(idx.dtype):
        raise DTypeError(f"indices must be integers, got {idx.dtype}")
    if idx.ndim != x.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, idx.shape))
                                 if i != axis):
        raise ShapeError(f"take_along_axis: indices of shape {_shp(idx.shape)} do not match "
                         f"the array's shape {_shp(x.shape)} outside axis {axis}")
    return ShapedArray(idx.shape, x.dtype, x.weak_type)


def _take_along_axis_transpose(ct, x, idx, *, axis):
    shape, n = x.aval.shape, x.aval.shape[axis]
    if get_aval(idx).shape[axis] == 1:
        # one pick per line: the cotangent lands where the index points, a comparison with an
        # iota (elementwise, so it fuses with what follows instead of a scatter into zeros)
        dims = tuple(range(len(shape)))
        hit = eq(broadcasted_iota(get_aval(idx).dtype, shape, axis),
                 broadcast_in_dim(_clip_index(idx, n), shape, dims))
        spread = broadcast_in_dim(ct, shape, dims)
        return [select_n(hit, full(shape, 0, x.aval.dtype), spread), None]
    lin = _flat_line_indices(idx, axis, n)
    flat = scatter_p.bind(zeros_like_aval(ShapedArray((math.prod(shape),), x.aval.dtype)),
                          lin, moveaxis(ct, axis, -1), axis=0, mode="add")
    moved = tuple(d for i, d in enumerate(shape) if i != axis) + (n,)
    return [moveaxis(reshape(flat, moved), -1, axis), None]


def _flat_line_indices(idx, axis, n):
    """Indices into the array flattened with ``axis`` last, one line of length n per index row."""
    it = moveaxis(idx, axis, -1)
    ishape = get_aval(it).shape
    dt = get_aval(idx).dtype
    rows = math.prod(ishape[:-1])
    row_ids = reshape(broadcasted_iota(dt, (rows, ishape[-1]), 0), ishape)
    return add(mul(row_ids, full(ishape, n, dt)), _clip_index(it, n))


def _take_along_axis_batch(vals, dims, *, axis):
    (x, idx), (dx, di) = vals, dims
    size = get_aval(x).shape[dx] if dx is not not_mapped else get_aval(idx).shape[di]
    x = bdim_at_front(x, dx, size)
    idx = bdim_at_front(idx, di, size)
    return take_along_axis_p.bind(x, idx, axis=axis + 1), 0


take_along_axis_p.abstract_eval = _take_along_axis_aval
take_along_axis_p.jvp = lambda primals, tangents, *, axis: (
    take_along_axis_p.bind(*primals, axis=axis),
    Zero(take_along_axis_p.abstract_eval(get_aval(primals[0]), get_aval(primals[1]),
                                         axis=axis))
    if isinstance(tangents[0], Zero) else take_along_axis_p.bind(tangents[0], primals[1],
                                                                 axis=axis))
take_along_axis_p.transpose = _take_along_axis_transpose
take_along_axis_p.batch = _take_along_axis_batch
take_along_axis_p.is_linear = True


def take_along_axis(x, idx, axis: int):
    """``x[..., idx, ...]`` along ``axis`` with ``idx`` of the same rank as ``x`` and the same
    shape outside ``axis`` (indices are clamped into range)."""
    return take_along_axis_p.bind(x, idx, axis=axis)


# =============================================================================================
# Bits: shifts, bit casts and erf_inv (counter-based random numbers are built from these)

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


# =============================================================================================
# Shape helpers


def expand_dims(x, dimensions):
    shape = list(get_aval(x).shape)
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return reshape(x, shape)


def squeeze(x, dimensions):
    shape = get_aval(x).shape
    return reshape(x, tuple(d for i, d in enumerate(shape) if i not in dimensions))


def zeros_like(x):
    return zeros_like_aval(get_aval(x))


# =============================================================================================
# Small jax.lax functions composed from the primitives above (no rules of their own)


def clamp(min, x, max):  # noqa: A002 - jax.lax's argument names
    """``x`` limited to ``[min, max]``; the bounds are 0-d or shaped like ``x``.

    >>> clamp(0.0, jnp.array([-1.0, 0.5, 2.0]), 1.0)   # [0., 0.5, 1.]

    At a bound the derivative is split as lax.max and lax.min split it (JAX gives 0 there).
    """
    # Python-number bounds take x's dtype, as JAX's weak types do
    lo, hi = (_const(x, b) if isinstance(b, (int, float)) else b for b in (min, max))
    return min_(max_(x, lo), hi)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``.

    >>> full_like(jnp.ones((2, 3)), 7)   # f32[2,3] of 7s
    """
    aval = get_aval(x)
    weak = aval.weak_type if dtype is None else False
    return full(aval.shape if shape is None else shape, fill_value,
                aval.dtype if dtype is None else dtype, weak)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The entry ``index`` (negative counts from the end) along ``axis``.

    >>> index_in_dim(jnp.arange(6).reshape(2, 3), -1, axis=1, keepdims=False)   # [2, 5]
    """
    n = get_aval(operand).shape[axis]
    index, axis = int(index), int(axis) % get_aval(operand).ndim
    if not -n <= index < n:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} of "
                         f"size {n}")
    out = slice_in_dim(operand, index % n, index % n + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def index_take(src, idxs, axes):
    """``src[idxs[0], idxs[1], ...]`` over ``axes``: the indexed entries along a new leading
    axis, followed by ``src``'s other axes. Indices wrap around (modulo the axis size), as in
    JAX.

    >>> index_take(jnp.arange(6).reshape(2, 3), (jnp.array([1, 0]),), (0,))   # [[3,4,5],[0,1,2]]
    """
    aval = get_aval(src)
    axes = tuple(int(a) % aval.ndim for a in axes)
    rest = tuple(a for a in range(aval.ndim) if a not in axes)
    sizes = [aval.shape[a] for a in axes]
    flat = None
    for i, n in zip(idxs, sizes):     # row-major position in the product of the indexed axes
        i = convert_element_type(i, dtypes.int32)
        n_ = _const(i, n)
        i = rem(add(rem(i, n_), n_), n_)
        flat = i if flat is None else add(mul(flat, n_), i)
    moved = reshape(transpose(src, axes + rest), (math.prod(sizes),) +
                    tuple(aval.shape[a] for a in rest))
    return take(moved, flat, 0)


def reciprocal(x):
    """``1 / x``."""
    return integer_pow(x, -1)


def cbrt(x):
    """The real cube root, negative for negative ``x``. Its derivative at 0 is NaN here (JAX
    gives inf)."""
    return mul(sign(x), pow_(abs_(x), _const(x, 1 / 3)))


def exp2(x):
    """``2 ** x``."""
    return pow_(_full_like(x, 2), x)


def broadcast(operand, sizes):
    """``operand`` with new leading axes of ``sizes``.

    >>> broadcast(jnp.ones(3), (2,)).shape   # (2, 3)
    """
    shape = get_aval(operand).shape
    sizes = tuple(int(s) for s in sizes)
    return broadcast_in_dim(operand, sizes + shape,
                            tuple(range(len(sizes), len(sizes) + len(shape))))


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 axes up to ``rank`` axes.

    >>> broadcast_to_rank(jnp.ones(3), 3).shape   # (1, 1, 3)
    """
    return broadcast(x, (1,) * (int(rank) - get_aval(x).ndim))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """``operand`` with axes ``start_dimension:stop_dimension`` merged into one.

    >>> collapse(jnp.ones((2, 3, 4)), 1).shape   # (2, 12)
    """
    shape = get_aval(operand).shape
    import builtins     # this module's ``slice`` is lax.slice
    lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"collapse: stop_dimension {stop_dimension} comes before "
                         f"start_dimension {start_dimension}")
    return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def top_k(operand, k: int):
    """``(values, indices)`` of the ``k`` largest entries along the last axis, largest first;
    equal values come in index order. Differentiable in the values.

    >>> top_k(jnp.array([1.0, 3.0, 2.0]), 2)   # ([3., 2.], [1, 2])
    """
    aval = get_aval(operand)
    n, axis = aval.shape[-1], aval.ndim - 1
    if not 0 <= int(k) <= n:
        raise ValueError(f"top_k: k={k} must be between 0 and the last axis size {n}")
    # sort ascending by (value, -index) and read from the end: largest first, ties by index,
    # and no negation of the values (which would overflow unsigned and minimum integers)
    neg_idx = neg(broadcasted_iota(dtypes.int32, aval.shape, axis))
    values, neg_idx = sort([operand, neg_idx], axis, num_keys=2)
    values = slice_in_dim(rev(values, (axis,)), 0, int(k), 1, axis)
    indices = slice_in_dim(rev(neg(neg_idx), (axis,)), 0, int(k), 1, axis)
    return values, indices


def _logaddexp(a, b):
    big = max_(a, b)
    gap = neg(abs_(sub(a, b)))
    # -inf - -inf (and inf - inf) is NaN: those pairs add nothing to the larger one
    gap = select(is_finite(gap), gap, _full_like(gap, -np.inf))
    return add(big, log1p(exp(gap)))


def cumlogsumexp(x, axis: int = 0, reverse: bool = False):
    """``log(cumsum(exp(x)))`` along ``axis``, without overflow.

    >>> cumlogsumexp(jnp.zeros(3))   # [0., log 2, log 3]
    """
    return _cumulative(_logaddexp, x, int(axis), reverse, -np.inf)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading (batch) axes: (..., m, k) @ (..., k, n); both operands
    have the same rank, at least 2.

    >>> batch_matmul(jnp.ones((5, 2, 3)), jnp.ones((5, 3, 4))).shape   # (5, 2, 4)
    """
    nl, nr = get_aval(lhs).ndim, get_aval(rhs).ndim
    if nl < 2 or nl != nr:
        raise ValueError(f"batch_matmul needs operands of one rank, at least 2; got ranks {nl} "
                         f"and {nr}")
    batch = tuple(range(nl - 2))
    return dot_general(lhs, rhs, (((nl - 1,), (nl - 2,)), (batch, batch)), precision)


__all__ = [n for n in dir() if not n.startswith("_")]

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
from .base import (_BOOL, _FLOAT, _INT, _shp, broadcast_batch, broadcast_in_dim,
                   convert_element_type, convert_element_type_p, full, not_mapped, primitive,
                   moveaxis, reduce_sum)


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
        size, out_shape, axis = _common_batch_axis(vals, dims)
        return prim.bind(*(_at_batch_axis(v, d, size, out_shape, axis)
                           for v, d in zip(vals, dims)), **params), axis
    return rule


def _common_batch_axis(vals, dims):
    """``(size, example shape, axis)``: the batch axis every operand is brought to. It stays
    where the per-example arrays all have it (as JAX keeps it), else it goes first."""
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    example_shapes = [_unbatched_shape(v, d) for v, d in zip(vals, dims)]
    out_shape = next((s for s in example_shapes if s), ())
    axes = {d for v, d, s in zip(vals, dims, example_shapes)
            if d is not not_mapped and s == out_shape}
    return size, out_shape, axes.pop() if len(axes) == 1 else 0


def _at_batch_axis(v, d, size, out_shape, axis):
    """Operand ``v`` (batch axis ``d``) with its batch axis at ``axis`` of the full shape; an
    unbatched scalar stays as it is (it broadcasts by itself)."""
    if d is not_mapped:
        return v if get_aval(v).shape == () else broadcast_batch(v, size, axis)
    if get_aval(v).ndim == 1 and out_shape:     # a batched scalar meets per-example arrays
        shape = out_shape[:axis] + (size,) + out_shape[axis:]
        return broadcast_in_dim(v, shape, (axis,))
    return moveaxis(v, d, axis) if d != axis else v


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
    """Every elementwise primitive (the backend-table tests walk this list).

    >>> "sin" in [p.name for p in fnx.lax.elementwise_primitives()]
    True
    """
    return list(_elementwise)


def _define(name, nargs, jvp, doc, kinds, out_dtype, transpose, fn_name):
    """The primitive and its wrapper behind ``unary`` and ``binary``."""
    p = elementwise(name, kinds, out_dtype)
    if jvp is None and transpose is not None:
        deflinear(p, transpose)
    else:
        if jvp is None:
            zero_jvp(p)             # piecewise constant: comparisons, floor, sign, ...
        elif nargs == 1:
            defjvp_with_output(p, jvp)
        else:
            defjvp(p, *jvp)
        if transpose is not None:   # linear in one operand at a time (mul, div)
            p.transpose = transpose

    if nargs == 1:
        def wrapper(x):
            return p.bind(x)
    else:
        def wrapper(x, y):
            return p.bind(x, y)
    fn_name = fn_name or name
    wrapper.__name__ = wrapper.__qualname__ = fn_name
    if ">>>" not in doc:
        # an example that runs for every such function: it keeps its operands' shape
        operand = "jnp.ones((2, 3))" if set(kinds) & set(_FLOAT) else "jnp.ones((2, 3), int)"
        args = ", ".join([operand] * nargs)
        doc = f"{doc}\n\n    >>> fnx.lax.{fn_name}({args}).shape\n    (2, 3)\n    "
    wrapper.__doc__ = doc
    return p, wrapper


def unary(name: str, jvp, doc: str, kinds=_FLOAT, *, out_dtype=None, transpose=None,
          fn_name=None):
    """An elementwise primitive of one operand, its JVP and its wrapper, in one statement:
    ``jvp(t, x, out)`` is the tangent of the result ``out`` for the tangent ``t`` of ``x``
    (``None``: the result is piecewise constant, its tangent zero). A linear primitive passes
    its ``transpose`` rule instead of a JVP. Returns ``(primitive, wrapper)``; ``doc`` becomes
    the wrapper's docstring (given an example unless it has one) and ``fn_name`` its name (the
    primitive's by default). This is how ``sin`` is defined (a doctest would register a
    primitive, so it is not one)::

        sin_p, sin = unary("sin", lambda t, x, out: mul(t, cos(x)), "The sine.")
    """
    return _define(name, 1, jvp, doc, kinds, out_dtype, transpose, fn_name)


def binary(name: str, jvp, doc: str, kinds=_FLOAT + _INT, *, out_dtype=None, transpose=None,
           fn_name=None):
    """An elementwise primitive of two operands, its JVP and its wrapper, in one statement:
    ``jvp`` is ``(jvp_x, jvp_y)``, ``jvp_x(t, x, y)`` the tangent of the result for the tangent
    ``t`` of ``x`` (``None`` for an operand it does not depend on differentiably), or ``None``
    for a piecewise constant result. A primitive linear in both operands passes its
    ``transpose`` rule instead of a JVP; one linear in each operand separately (``mul``) passes
    both. The rest is as for ``unary``::

        atan2_p, atan2 = binary(
            "atan2", (lambda t, x, y: mul(t, div(y, add(square(x), square(y)))),
                      lambda t, x, y: mul(t, neg(div(x, add(square(x), square(y)))))),
            "The two-argument inverse tangent.", _FLOAT)
    """
    return _define(name, 2, jvp, doc, kinds, out_dtype, transpose, fn_name)


# -- arithmetic, comparisons and bit operations: one statement each makes the primitive, its
# JVP (or transpose, where linear) and its documented wrapper (see CONTRIBUTING.md)

_ANY = _FLOAT + _INT + _BOOL


def _const(x, value):
    """``value`` as a 0-d array of ``x``'s dtype and weak type (elementwise ops broadcast it),
    so derivatives at Python numbers stay weakly typed, as JAX's do."""
    aval = get_aval(x)
    return full((), value, aval.dtype, aval.weak_type)


def _full_like(x, value):
    aval = get_aval(x)
    return full(aval.shape, value, aval.dtype, aval.weak_type)


neg_p, neg = unary("neg", None, "``-x``.", _FLOAT + _INT, transpose=lambda ct, x: [neg(ct)])
sign_p, sign = unary("sign", None, "-1, 0 or 1 after the sign of ``x``.", _FLOAT + _INT)
floor_p, floor = unary("floor", None, "Rounds down to a whole number.")
ceil_p, ceil = unary("ceil", None, "Rounds up to a whole number.")
round_p, round_ = unary("round", None, "Rounds to the nearest whole number, halves away from 0.",
                        fn_name="round")
is_finite_p, is_finite = unary("is_finite", None, "True where ``x`` is neither inf nor nan.",
                               out_dtype=dtypes.bool_)
abs_p = elementwise("abs")
not_p, bitwise_not = unary("not", None, "``~x`` (``not x`` for booleans).", _INT + _BOOL,
                           fn_name="bitwise_not")
integer_pow_p = elementwise("integer_pow")
stop_gradient_p = elementwise("stop_gradient", _ANY)


def _linear_ct(ct, x):
    return _unbroadcast(ct, x) if is_undefined(x) else None


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise ValueError("mul is not linear in both operands at once")
    if is_undefined(x):
        return [_unbroadcast(mul(ct, y), x), None]
    return [None, _unbroadcast(mul(x, ct), y)]


def _div_transpose(ct, x, y):
    assert is_undefined(x) and not is_undefined(y)
    return [_unbroadcast(div(ct, y), x), None]


def _replace_zero(x):
    return select(eq(x, _const(x, 0)), _full_like(x, 1), x)


def _balanced_eq(x, out, y):
    # ties share the tangent equally, as JAX does
    one, half, zero = _full_like(out, 1), _full_like(out, 0.5), _full_like(out, 0)
    return select(eq(x, out), select(eq(y, out), half, one), zero)


add_p, add = binary("add", None, "``x + y``.",
                    transpose=lambda ct, x, y: [_linear_ct(ct, x), _linear_ct(ct, y)])
sub_p, sub = binary("sub", None, "``x - y``.",
                    transpose=lambda ct, x, y: [_linear_ct(ct, x), _linear_ct(neg(ct), y)])
mul_p, mul = binary("mul", (lambda t, x, y: mul(t, y), lambda t, x, y: mul(x, t)), "``x * y``.",
                    _ANY, transpose=_mul_transpose)
div_p, div = binary("div", (lambda t, x, y: div(t, y),
                            lambda t, x, y: mul(t, neg(div(x, mul(y, y))))),
                    "``x / y``; integers divide rounding toward zero, as in C.",
                    transpose=_div_transpose)
rem_p, rem = binary(
    "rem", (lambda t, x, y: t,
            lambda t, x, y: mul(t, neg(mul(sign(div(x, y)), floor(abs_(div(x, y))))))),
    "The remainder of ``x / y`` rounded toward zero; it takes the sign of ``x``, as C's fmod.")
def _strong(x):
    aval = get_aval(x)
    return convert_element_type(x, aval.dtype, False) if aval.weak_type else x


# JAX's derivative in the base converts it to a strong type (a gradient at a Python float is
# not weakly typed); the one in the exponent keeps the weak type
pow_p, pow_ = binary("pow", (lambda t, x, y: mul(t, mul(y, pow_(_strong(x), sub(y, _const(y, 1))))),
                             lambda t, x, y: mul(t, mul(log(_replace_zero(x)), pow_(x, y)))),
                     "``x ** y``.", _FLOAT, fn_name="pow")
max_p, max_ = binary("max", (lambda t, x, y: mul(t, _balanced_eq(x, max_(x, y), y)),
                             lambda t, x, y: mul(t, _balanced_eq(y, max_(x, y), x))),
                     "The larger of ``x`` and ``y``; ties share the gradient equally.", _ANY,
                     fn_name="max")
min_p, min_ = binary("min", (lambda t, x, y: mul(t, _balanced_eq(x, min_(x, y), y)),
                             lambda t, x, y: mul(t, _balanced_eq(y, min_(x, y), x))),
                     "The smaller of ``x`` and ``y``; ties share the gradient equally.", _ANY,
                     fn_name="min")
atan2_p, atan2 = binary("atan2", (lambda t, x, y: mul(t, div(y, add(square(x), square(y)))),
                                  lambda t, x, y: mul(t, neg(div(x, add(square(x), square(y)))))),
                        "The two-argument inverse tangent: ``atan(x / y)`` in the quadrant of "
                        "the point ``(y, x)``.", _FLOAT)
nextafter_p, nextafter = binary("nextafter", None,
                                "The next representable number after ``x`` towards ``y``.",
                                _FLOAT)
and_p, bitwise_and = binary("and", None, "``x & y``.", _INT + _BOOL, fn_name="bitwise_and")
or_p, bitwise_or = binary("or", None, "``x | y``.", _INT + _BOOL, fn_name="bitwise_or")
xor_p, bitwise_xor = binary("xor", None, "``x ^ y``.", _INT + _BOOL, fn_name="bitwise_xor")
eq_p, eq = binary("eq", None, "``x == y``.", _ANY, out_dtype=dtypes.bool_)
ne_p, ne = binary("ne", None, "``x != y``.", _ANY, out_dtype=dtypes.bool_)
lt_p, lt = binary("lt", None, "``x < y``.", _ANY, out_dtype=dtypes.bool_)
le_p, le = binary("le", None, "``x <= y``.", _ANY, out_dtype=dtypes.bool_)
gt_p, gt = binary("gt", None, "``x > y``.", _ANY, out_dtype=dtypes.bool_)
ge_p, ge = binary("ge", None, "``x >= y``.", _ANY, out_dtype=dtypes.bool_)


def stop_gradient_raw(x):
    return stop_gradient_p.bind(x)


# the zeros and sums of tangents that ad_util (below lax) builds
# (zeros keep a weak type: a zero cotangent of a Python-number output is weak, as in JAX)
register_tangent_arithmetic(zeros=lambda aval: full(aval.shape, 0, aval.dtype, aval.weak_type),
                            add=add, convert=convert_element_type)


def integer_pow(x, y: int):
    """``x ** y`` for a Python integer ``y`` (a repeated product, differentiable at 0).

    >>> fnx.lax.integer_pow(jnp.array([1., 2., 3.]), 3)
    Array([ 1.,  8., 27.], dtype=float32)
    """
    if int(y) < 0 and dtypes.kind(get_aval(x).dtype) in _INT:
        raise DTypeError(f"Integers cannot be raised to negative powers, got "
                         f"integer_pow({get_aval(x).str_short()}, {int(y)})")
    return integer_pow_p.bind(x, y=int(y))


def square(x):
    """``x * x``.

    >>> fnx.lax.square(jnp.array([-2., 3.]))
    Array([4., 9.], dtype=float32)
    """
    return integer_pow(x, 2)


def abs_(x):
    """``|x|``; the magnitude (a real array) for complex ``x``.

    >>> fnx.lax.abs(jnp.array([-1.5, 2.]))
    Array([1.5, 2. ], dtype=float32)
    """
    return abs_p.bind(x)


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
    # the slope at 0 is 1, as JAX's (x >= 0 picks t, else -t)
    return out, select_n(ge(x, _full_like(x, 0)), neg(t), t)


def _abs_aval(x):
    shape = _check_same("abs", [x])
    if dtypes.kind(x.dtype) not in _FLOAT + "i":     # unsigned refused too, as in JAX
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
erf_inv_p, erf_inv = unary(
    "erf_inv", lambda t, x, out: mul(t, mul(_const(x, math.sqrt(math.pi) / 2), exp(square(out)))),
    "The inverse of ``erf`` on (-1, 1).")


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
    size, case_shape, axis = _common_batch_axis(vals[1:], dims[1:]) \
        if any(d is not not_mapped for d in dims[1:]) else (None, None, None)
    which, wd = vals[0], dims[0]
    if size is None:                             # only the predicate is batched
        size = get_aval(which).shape[wd]
        case_shape, axis = get_aval(vals[1]).shape, (wd if get_aval(which).ndim > 1 else 0)
    # the cases are never left as unbatched scalars: they must all have the result's shape
    cases = [broadcast_batch(v, size, axis) if d is not_mapped
             else _at_batch_axis(v, d, size, case_shape, axis)
             for v, d in zip(vals[1:], dims[1:])]
    if wd is not_mapped and get_aval(which).shape == ():
        return select_n_p.bind(which, *cases), axis
    return select_n_p.bind(_at_batch_axis(which, wd, size, case_shape, axis), *cases), axis


select_n_p.abstract_eval = _select_n_aval
select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose
select_n_p.batch = _select_n_batch
select_n_p.is_linear = True


def select_n(which, *cases):
    """Per element, ``cases[which]``: a boolean ``which`` picks between two cases (False
    the first), an integer one among any number.

    >>> lax.select_n(jnp.array([0, 2, 1]), jnp.zeros(3), jnp.ones(3), jnp.full(3, 2.))
    Array([0., 2., 1.], dtype=float32)
    """
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (lax.select: same shapes and dtypes).

    >>> lax.select(jnp.array([True, False]), jnp.ones(2), jnp.zeros(2))
    Array([1., 0.], dtype=float32)
    """
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
    """The real part of a complex array (float32 for complex64).

    >>> lax.real(jnp.array([1 + 2j]))
    Array([1.], dtype=float32)
    """
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array (float32 for complex64).

    >>> lax.imag(jnp.array([1 + 2j]))
    Array([2.], dtype=float32)
    """
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate; a real ``x`` becomes complex with a zero imaginary part.

    >>> lax.conj(jnp.array([1 + 2j]))
    Array([1.-2.j], dtype=complex64)
    """
    return conj_p.bind(x)


def complex_(x, y):
    """``x + 1j * y`` from two real arrays of one dtype (lax.complex).

    >>> lax.complex(jnp.array([1.0]), jnp.array([2.0]))
    Array([1.+2.j], dtype=complex64)
    """
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


shift_left_p, shift_left = binary(
    "shift_left", None, "``x << y``; a shift by the bit width or more gives 0, as in XLA.", _INT)
shift_right_logical_p, shift_right_logical = binary(
    "shift_right_logical", None,
    "``x >> y`` filling with zeros (also for signed ``x``); over-wide shifts give 0.", _INT)
shift_right_arithmetic_p, shift_right_arithmetic = binary(
    "shift_right_arithmetic", None,
    "``x >> y`` filling with the sign bit; over-wide shifts give 0 or -1.", _INT)


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
    """The bits of ``x`` reinterpreted as ``new_dtype`` of the same width (``fnx.lax``'s
    ``bitcast_convert_type`` also changes widths).

    >>> lax.bitcast_convert_type(jnp.float32(1.0), jnp.int32)
    Array(1065353216, dtype=int32)
    """
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.canonical(new_dtype))

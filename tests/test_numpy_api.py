"""fnx.numpy against NumPy (float64 references) on fresh random inputs: creation, elementwise
math, reductions, shapes, sorting, products, indexing, ``.at`` updates and dtype promotion, with
gradient checks and vmap-vs-stacking checks for a representative subset."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fnx
import fnx.numpy as jnp
from fnx.test_util import check_grads

SETTINGS = settings(max_examples=25, deadline=None)


def _np(x):
    return np.asarray(x)


def assert_close(actual, expected, rtol=1e-12, atol=1e-12):
    actual, expected = _np(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol)


def assert_equal(actual, expected):
    actual, expected = _np(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)


def assert_vmap_matches_stack(f, *batched, in_axes=0):
    """vmap(f) over the leading axis equals stacking f on each example."""
    out = fnx.vmap(f, in_axes=in_axes)(*batched)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(batched)
    n = next(np.shape(b)[0] for b, a in zip(batched, axes) if a is not None)
    per = [f(*[b if a is None else b[i] for b, a in zip(batched, axes)]) for i in range(n)]
    assert_close(out, np.stack([_np(p) for p in per]), rtol=1e-10, atol=1e-10)


# =============================================================================================
# creation


def test_array_and_asarray(rng):
    x = rng.standard_normal((2, 3))
    a = jnp.array(x)
    assert a.dtype == jnp.float64
    assert_equal(a, x)
    with fnx.enable_x64(False):
        assert jnp.array(x).dtype == jnp.float32      # canonicalized without x64
        assert jnp.array([1.5, 2.0]).dtype == jnp.float32
        assert jnp.array([1, 2]).dtype == jnp.int32
        assert jnp.array([True, False]).dtype == jnp.bool_
        assert jnp.array([1, 2.5]).dtype == jnp.float32
    assert_equal(jnp.array([[1, 2], [3, 4]], dtype=jnp.float16),
                 np.array([[1, 2], [3, 4]], np.float16))
    assert jnp.array([[1, 2], [3, 4]], dtype=jnp.float16).dtype == jnp.float16
    assert jnp.array(3.0, ndmin=2).shape == (1, 1)
    assert_equal(jnp.array([jnp.asarray(x[0]), jnp.asarray(x[1])]), x)
    b = jnp.asarray(a)
    assert_equal(b, x)
    assert jnp.asarray(x, dtype=jnp.float32).dtype == jnp.float32
    i = rng.integers(-5, 5, size=4)
    assert_equal(jnp.asarray(i), i)


def test_zeros_ones_full(rng):
    shape = tuple(rng.integers(1, 4, size=2))
    for f, v in ((jnp.zeros, 0.0), (jnp.ones, 1.0)):
        with fnx.enable_x64(False):
            out = f(shape)
        assert out.dtype == jnp.float32
        assert_equal(out, np.full(shape, v, np.float32))
        assert f(shape, dtype=jnp.int32).dtype == jnp.int32
        assert f(3).shape == (3,)
    val = float(rng.standard_normal())
    assert_close(jnp.full(shape, val, dtype=jnp.float64), np.full(shape, val))
    with fnx.enable_x64(False):
        assert jnp.full((2,), 3).dtype == jnp.int32
        assert jnp.full((2,), 2.0).dtype == jnp.float32
        assert jnp.full((2,), True).dtype == jnp.bool_
    row = rng.standard_normal(3)
    assert_close(jnp.full((2, 3), jnp.asarray(row)), np.full((2, 3), row))


def test_like_functions(rng):
    x = rng.standard_normal((3, 2))
    a = jnp.asarray(x)
    for f, ref in ((jnp.zeros_like, np.zeros_like), (jnp.ones_like, np.ones_like)):
        out = f(a)
        assert out.dtype == jnp.float64
        assert_equal(out, ref(x))
        assert f(a, dtype=jnp.int32).dtype == jnp.int32
        assert f(a, shape=(4,)).shape == (4,)
    v = float(rng.standard_normal())
    assert_close(jnp.full_like(a, v), np.full_like(x, v))
    ia = jnp.asarray(rng.integers(0, 5, size=3))
    assert_equal(jnp.full_like(ia, 2.7), np.full_like(np.asarray(ia), 2.7))
    assert jnp.empty_like(a).shape == x.shape
    with fnx.enable_x64(False):
        assert jnp.ones_like([1, 2]).dtype == jnp.int32


def test_arange():
    assert_equal(jnp.arange(5), np.arange(5))
    assert_equal(jnp.arange(2, 11, 3), np.arange(2, 11, 3))
    assert_equal(jnp.arange(5, -4, -2), np.arange(5, -4, -2))
    assert_close(jnp.arange(0.5, 3.0, 0.5), np.arange(0.5, 3.0, 0.5))
    with fnx.enable_x64(False):
        assert jnp.arange(5).dtype == jnp.int32
        assert jnp.arange(0.5, 3.0, 0.5).dtype == jnp.float32
    assert jnp.arange(4, dtype=jnp.float64).dtype == jnp.float64
    assert jnp.arange(0).shape == (0,)
    # a lone bound is the stop, with a step too (NumPy's and JAX's reading)
    assert_equal(jnp.arange(7, step=2), np.arange(7, step=2))
    assert_close(jnp.arange(2.5, step=0.5), np.arange(2.5, step=0.5))
    with pytest.raises(ZeroDivisionError):
        jnp.arange(0, 5, 0)


def test_linspace(rng):
    lo, hi = sorted(rng.standard_normal(2))
    lo64, hi64 = np.float64(lo), np.float64(hi)
    for num in (1, 2, 7):
        for endpoint in (True, False):
            assert_close(jnp.linspace(lo64, hi64, num, endpoint=endpoint),
                         np.linspace(lo, hi, num, endpoint=endpoint), rtol=1e-12, atol=1e-14)
    out, step = jnp.linspace(lo64, hi64, 5, retstep=True)
    ref, ref_step = np.linspace(lo, hi, 5, retstep=True)
    assert_close(out, ref)
    assert_close(step, ref_step)
    with fnx.enable_x64(False):
        assert jnp.linspace(0, 1, 4).dtype == jnp.float32
    starts, stops = rng.standard_normal(2), rng.standard_normal(2)
    assert_close(jnp.linspace(jnp.asarray(starts), jnp.asarray(stops), 4, axis=1),
                 np.linspace(starts, stops, 4, axis=1), atol=1e-14)
    assert_equal(jnp.linspace(0, 10, 5, dtype=jnp.int32), np.linspace(0, 10, 5, dtype=np.int32))
    assert_equal(jnp.linspace(-10, 0, 4, dtype=jnp.int32), [-10, -7, -4, 0])   # floors


def test_eye_identity():
    for n, m, k in ((3, None, 0), (3, 5, 1), (4, 2, -1), (3, 3, 4)):
        assert_equal(jnp.eye(n, m, k), np.eye(n, m, k, dtype=np.float32))
    with fnx.enable_x64(False):
        assert jnp.eye(2).dtype == jnp.float32
    assert jnp.eye(2, dtype=jnp.int32).dtype == jnp.int32
    assert_equal(jnp.identity(4), np.identity(4))
    assert jnp.identity(3, dtype=jnp.float64).dtype == jnp.float64


# =============================================================================================
# elementwise math


def _domain(kind, rng, shape=(3, 4)):
    if kind == "real":
        return rng.standard_normal(shape) * 2
    if kind == "unit":        # (-1, 1)
        return rng.uniform(-0.95, 0.95, shape)
    if kind == "pos":
        return rng.uniform(0.1, 3.0, shape)
    if kind == "gt1":
        return rng.uniform(1.1, 4.0, shape)
    if kind == "gtm1":
        return rng.uniform(-0.9, 3.0, shape)
    if kind == "tan":
        return rng.uniform(-1.4, 1.4, shape)
    raise ValueError(kind)


UNARY = [
    # name, domain, smooth (gradient-checkable)
    ("exp", "real", True), ("log", "pos", True), ("log1p", "gtm1", True),
    ("expm1", "real", True), ("sin", "real", True), ("cos", "real", True), ("tan", "tan", True),
    ("arcsin", "unit", True), ("arccos", "unit", True), ("arctan", "real", True),
    ("sinh", "real", True), ("cosh", "real", True), ("tanh", "real", True),
    ("arcsinh", "real", True), ("arccosh", "gt1", True), ("arctanh", "unit", True),
    ("sqrt", "pos", True), ("abs", "real", True), ("sign", "real", False),
    ("floor", "real", False), ("ceil", "real", False), ("negative", "real", True),
    ("square", "real", True), ("reciprocal", "pos", True), ("log2", "pos", True),
    ("log10", "pos", True), ("exp2", "real", True), ("trunc", "real", False),
]


@pytest.mark.parametrize("name,domain,smooth", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, domain, smooth, rng):
    x = _domain(domain, rng)
    f = getattr(jnp, name)
    out = f(jnp.asarray(x))
    assert out.dtype == jnp.float64
    assert_close(out, getattr(np, name)(x), rtol=1e-12, atol=1e-14)
    out32 = f(jnp.asarray(x.astype(np.float32)))
    assert out32.dtype == jnp.float32
    assert_close(out32, getattr(np, name)(x.astype(np.float32)), rtol=2e-6, atol=1e-6)
    if smooth:
        check_grads(f, (x,), order=2)
    assert_vmap_matches_stack(f, jnp.asarray(x))


def test_unary_tiny_arguments_keep_precision():
    tiny = np.array([1e-10, -3e-12, 2e-8])
    assert_close(jnp.log1p(jnp.asarray(tiny)), np.log1p(tiny), rtol=1e-14)
    assert_close(jnp.expm1(jnp.asarray(tiny)), np.expm1(tiny), rtol=1e-14)
    assert_close(jnp.log1p(jnp.asarray(tiny.astype(np.float32))), np.log1p(tiny), rtol=1e-6)


@pytest.mark.x32
def test_integer_inputs_promote_to_default_float(rng):
    i = rng.integers(1, 9, size=5)
    for name in ("exp", "log", "sqrt", "sin"):     # floor keeps integers (as JAX)
        out = getattr(jnp, name)(jnp.asarray(i))
        assert out.dtype == jnp.float32
        assert_close(out, getattr(np, name)(i.astype(np.float32)), rtol=1e-6)


BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
          ("divide", np.divide), ("true_divide", np.true_divide), ("maximum", np.maximum),
          ("minimum", np.minimum), ("arctan2", np.arctan2), ("hypot", np.hypot),
          ("logaddexp", np.logaddexp)]


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, ref, rng):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    y = np.sign(y) * (0.5 + np.abs(y))   # away from 0, where divide's derivatives blow up
    f = getattr(jnp, name)
    assert_close(f(jnp.asarray(x), jnp.asarray(y)), ref(x, y), rtol=1e-12, atol=1e-14)
    assert_close(f(x[0, 0], jnp.asarray(y)), ref(x[0, 0], y), rtol=1e-12)
    assert_vmap_matches_stack(f, jnp.asarray(x), jnp.asarray(y), in_axes=(0, None))
    if name not in ("maximum", "minimum"):
        check_grads(f, (x, np.broadcast_to(y, x.shape) + 0.0), order=2)


def test_hypot_does_not_overflow():
    a = np.array([1e200, 0.0, 3.0, 1e-200, np.inf, -2.0])
    b = np.array([1e200, 0.0, -4.0, 1e-200, np.nan, 0.5])
    assert_close(jnp.hypot(jnp.asarray(a), jnp.asarray(b)), np.hypot(a, b), rtol=1e-15, atol=0)


def test_operators(rng):
    x, y = rng.standard_normal((2, 3)), rng.uniform(0.5, 2.0, (2, 3))
    a, b = jnp.asarray(x), jnp.asarray(y)
    assert_close(a + b, x + y)
    assert_close(a - b, x - y)
    assert_close(a * b, x * y)
    assert_close(a / b, x / y)
    assert_close(-a, -x)
    assert_close(abs(a), abs(x))
    assert_close(2.5 - a, 2.5 - x)
    assert_close(1.5 / b, 1.5 / y)
    assert_close(b ** a, y ** x)
    assert_close(3.0 ** a, 3.0 ** x)


def test_floor_divide_and_mod_with_negative_numbers(rng):
    xi = rng.integers(-20, 20, size=50)
    yi = rng.choice([-7, -3, -2, -1, 1, 2, 3, 7], size=50)
    a, b = jnp.asarray(xi), jnp.asarray(yi)
    assert_equal(jnp.floor_divide(a, b), np.floor_divide(xi, yi))
    assert_equal(a // b, xi // yi)
    assert_equal(jnp.mod(a, b), np.mod(xi, yi))
    assert_equal(jnp.remainder(a, b), np.remainder(xi, yi))
    assert_equal(a % b, xi % yi)
    assert_equal(a % 3, xi % 3)
    assert_equal(a % -3, xi % -3)
    assert_equal(7 // b, 7 // yi)
    assert_equal(-7 % b, -7 % yi)
    q, r = divmod(a, b)
    assert_equal(q, xi // yi)
    assert_equal(r, xi % yi)
    xf, yf = rng.standard_normal(50) * 10, rng.standard_normal(50) * 3
    af, bf = jnp.asarray(xf), jnp.asarray(yf)
    assert_equal(jnp.floor_divide(af, bf), np.floor_divide(xf, yf))
    assert_equal(af // bf, xf // yf)
    # floor_divide divides x minus its remainder, as NumPy: 1.0 // 0.1 == 9, not floor(10.0)
    num, den = np.array([1.0, 1.0, -1.0, 0.3, 7.0]), np.array([0.1, -0.1, 0.1, 0.1, 0.7])
    assert_equal(jnp.floor_divide(jnp.asarray(num), jnp.asarray(den)), np.floor_divide(num, den))
    assert_equal(jnp.floor_divide(jnp.asarray(num.astype(np.float32)), np.float32(0.1)),
                 np.floor_divide(num.astype(np.float32), np.float32(0.1)))
    assert_close(jnp.mod(af, bf), np.mod(xf, yf), rtol=1e-12, atol=1e-12)
    assert_close(af % -2.5, xf % -2.5, atol=1e-12)
    assert_close(jnp.fmod(af, bf), np.fmod(xf, yf), atol=1e-12)


def test_power(rng):
    x = rng.standard_normal((3, 4))
    p = rng.uniform(0.5, 2.0, (3, 4))
    a = jnp.asarray(x)
    for n in (0, 1, 2, 3, 5, -1, -2):
        assert_close(a ** n, x ** float(n), rtol=1e-12)
        assert_close(jnp.power(a, n), np.power(x, float(n)), rtol=1e-12)
    assert_close(jnp.asarray(p) ** 0.5, p ** 0.5)
    assert_close(jnp.power(jnp.asarray(p), jnp.asarray(x)), np.power(p, x))
    assert_close(jnp.asarray(np.array([-2.0])) ** 3.0, [-8.0])
    # integers stay integers
    xi = rng.integers(-4, 5, size=10).astype(np.int32)
    ni = rng.integers(0, 5, size=10).astype(np.int32)
    out = jnp.power(jnp.asarray(xi), jnp.asarray(ni))
    assert out.dtype == jnp.int32
    assert_equal(out, np.power(xi, ni))
    assert_equal(jnp.asarray(xi) ** 3, xi ** 3)
    assert_equal(2 ** jnp.asarray(ni), 2 ** ni)
    # negative integer exponents truncate (NumPy refuses them; this follows JAX)
    base = np.array([2, 1, -1, -1, 3, -2], np.int32)
    expo = np.array([-1, -3, -3, -2, -2, -1], np.int32)
    assert_equal(jnp.power(jnp.asarray(base), jnp.asarray(expo)), [0, 1, -1, 1, 0, 0])
    check_grads(lambda t: t ** 3, (x,), order=2)
    check_grads(lambda t: t ** -2, (p,), order=2)
    check_grads(lambda t, e: t ** e, (p, x), order=2)
    check_grads(lambda t: 2.0 ** t, (x,), order=2)


def test_abs_sign_maximum_minimum_clip(rng):
    x, y = rng.standard_normal(20), rng.standard_normal(20)
    a, b = jnp.asarray(x), jnp.asarray(y)
    assert_equal(jnp.abs(a), np.abs(x))
    assert_equal(jnp.sign(a), np.sign(x))
    assert_equal(jnp.sign(jnp.asarray(np.array([-3, 0, 4]))), [-1, 0, 1])
    assert_equal(jnp.maximum(a, b), np.maximum(x, y))
    assert_equal(jnp.minimum(a, b), np.minimum(x, y))
    assert_equal(jnp.clip(a, -0.5, 0.7), np.clip(x, -0.5, 0.7))
    assert_equal(jnp.clip(a, None, 0.3), np.clip(x, None, 0.3))
    assert_equal(jnp.clip(a, min=-0.1), np.clip(x, -0.1, None))
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    z = rng.standard_normal(20)
    assert_equal(jnp.clip(jnp.asarray(z), jnp.asarray(lo), jnp.asarray(hi)), np.clip(z, lo, hi))
    xi = rng.integers(-10, 10, 8).astype(np.int32)
    assert_equal(jnp.clip(jnp.asarray(xi), -3, 4), np.clip(xi, -3, 4))
    assert jnp.clip(jnp.asarray(xi), -3, 4).dtype == jnp.int32
    check_grads(lambda t: jnp.clip(t, -0.5, 0.7), (x,), order=2)
    check_grads(lambda s, t: jnp.maximum(s, t) * jnp.minimum(s, t), (x, y), order=2)
    check_grads(jnp.abs, (x,), order=2)


def test_where(rng):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    c = rng.standard_normal((3, 1)) > 0
    assert_equal(jnp.where(jnp.asarray(c), jnp.asarray(x), jnp.asarray(y)), np.where(c, x, y))
    assert_equal(jnp.where(jnp.asarray(x) > 0, jnp.asarray(x), 0.0), np.where(x > 0, x, 0.0))
    assert_equal(jnp.where(x > 0, 1, -1), np.where(x > 0, 1, -1))
    check_grads(lambda s, t: jnp.where(s > 0, s * t, t ** 2), (x, x[::-1].copy()), order=2)
    assert_vmap_matches_stack(lambda s, t: jnp.where(s > t, s, t), jnp.asarray(x),
                              jnp.asarray(y), in_axes=(0, None))


def test_floor_ceil_round_half_to_even(rng):
    x = rng.standard_normal(50) * 5
    a = jnp.asarray(x)
    assert_equal(jnp.floor(a), np.floor(x))
    assert_equal(jnp.ceil(a), np.ceil(x))
    assert_equal(jnp.round(a), np.round(x))
    halves = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 2.4, -2.6])
    assert_equal(jnp.round(jnp.asarray(halves)), np.round(halves))
    assert_equal(jnp.round(jnp.asarray(halves.astype(np.float32))),
                 np.round(halves.astype(np.float32)))
    assert_equal(jnp.rint(jnp.asarray(halves)), np.rint(halves))
    assert_equal(jnp.around(jnp.asarray(halves)), np.around(halves))
    assert_close(jnp.round(a, 2), np.round(x, 2), rtol=1e-12)
    assert_close(jnp.round(jnp.asarray(np.array([125.0, 135.0, -145.0])), -1),
                 np.round(np.array([125.0, 135.0, -145.0]), -1))
    assert_equal(jnp.round(jnp.asarray(np.array([1, 2, 3]))), [1, 2, 3])
    assert_equal(jnp.asarray(halves).round(), np.round(halves))
    # just below a half, and odd integers where x + 0.5 is not representable
    hard32 = np.array([0.49999997, -0.49999997, 8388609.0, -8388609.0, 2.5000002, 1e8],
                      np.float32)
    assert_equal(jnp.round(jnp.asarray(hard32)), np.round(hard32))
    assert_equal(jnp.floor(jnp.asarray(hard32)), np.floor(hard32))
    hard64 = np.array([0.49999999999999994, -0.49999999999999994, 2.0**52 + 1, -(2.0**52 + 1)])
    assert_equal(jnp.round(jnp.asarray(hard64)), np.round(hard64))
    assert_equal(fnx.lax.round(jnp.asarray(np.array([0.5, -0.5, 2.5, 0.49999999999999994]))),
                 [1.0, -1.0, 3.0, 0.0])   # lax.round: half away from zero


def test_comparisons(rng):
    x, y = rng.integers(-3, 3, (4, 5)).astype(np.float64), rng.integers(-3, 3, (5,))
    a, b = jnp.asarray(x), jnp.asarray(y)
    for op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        out = getattr(jnp, op)(a, b)
        assert out.dtype == jnp.bool_
        assert_equal(out, getattr(np, op)(x, y))
    assert_equal(a == b, x == y)
    assert_equal(a != b, x != y)
    assert_equal(a < b, x < y)
    assert_equal(a <= 0, x <= 0)
    assert_equal(a > b, x > y)
    assert_equal(1 >= a, 1 >= x)


def test_logical_ops(rng):
    x, y = rng.integers(-2, 3, (3, 4)), rng.standard_normal((3, 4)) > 0
    a, b = jnp.asarray(x), jnp.asarray(y)
    assert_equal(jnp.logical_and(a, b), np.logical_and(x, y))
    assert_equal(jnp.logical_or(a, b), np.logical_or(x, y))
    assert_equal(jnp.logical_xor(a, b), np.logical_xor(x, y))
    assert_equal(jnp.logical_not(a), np.logical_not(x))
    assert_equal(jnp.logical_not(b), ~y)
    assert_equal(~b, ~y)
    assert_equal(b & (a > 0), y & (x > 0))
    assert_equal(b | (a > 0), y | (x > 0))
    assert_equal(b ^ (a > 0), y ^ (x > 0))
    assert_equal(jnp.logical_or(jnp.asarray(rng.standard_normal(3)), 0.0), [True] * 3)


def test_isnan_isinf_isfinite():
    x = np.array([np.nan, np.inf, -np.inf, 0.5, -2.0])
    a = jnp.asarray(x)
    assert_equal(jnp.isnan(a), np.isnan(x))
    assert_equal(jnp.isinf(a), np.isinf(x))
    assert_equal(jnp.isfinite(a), np.isfinite(x))


# =============================================================================================
# reductions

REDUCTIONS = {
    "sum": (jnp.sum, np.sum), "mean": (jnp.mean, np.mean), "prod": (jnp.prod, np.prod),
    "max": (jnp.max, np.max), "min": (jnp.min, np.min), "var": (jnp.var, np.var),
    "std": (jnp.std, np.std), "any": (jnp.any, np.any), "all": (jnp.all, np.all),
    "median": (jnp.median, np.median),
}


@st.composite
def shape_and_axis(draw, min_dims=1, max_dims=4):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=min_dims, max_size=max_dims)))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-nd, nd - 1))
    else:
        axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        axis = tuple(a - nd if draw(st.booleans()) else a for a in axes)
    return shape, axis


@SETTINGS
@given(sa=shape_and_axis(), name=st.sampled_from(sorted(REDUCTIONS)), keepdims=st.booleans(),
       seed=st.integers(0, 2**31))
def test_reductions_hypothesis(sa, name, keepdims, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    f, ref = REDUCTIONS[name]
    if name in ("any", "all"):
        x = x > 0.3
    assert_close(f(jnp.asarray(x), axis=axis, keepdims=keepdims),
                 ref(x, axis=axis, keepdims=keepdims), rtol=1e-11, atol=1e-12)


@SETTINGS
@given(sa=shape_and_axis(), ddof=st.integers(0, 1), keepdims=st.booleans(),
       seed=st.integers(0, 2**31))
def test_var_std_ddof_hypothesis(sa, ddof, keepdims, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    n = x.size if axis is None else int(np.prod(
        [shape[a] for a in ((axis,) if isinstance(axis, int) else axis)]))
    if n <= ddof:
        return
    for f, ref in ((jnp.var, np.var), (jnp.std, np.std)):
        assert_close(f(jnp.asarray(x), axis=axis, ddof=ddof, keepdims=keepdims),
                     ref(x, axis=axis, ddof=ddof, keepdims=keepdims), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("ddof", [3, 5])
def test_var_std_without_degrees_of_freedom_are_nan_as_in_jax(rng, ddof):
    import jax.numpy as jjnp
    x = rng.standard_normal((2, 3))
    for f, jf in ((jnp.var, jjnp.var), (jnp.std, jjnp.std)):
        for axis in (None, 1):
            got = np.asarray(f(jnp.asarray(x), axis=axis, ddof=ddof))
            want = np.asarray(jf(jjnp.asarray(x), axis=axis, ddof=ddof))
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            assert np.isnan(got).all() == (ddof >= (6 if axis is None else 3))


@SETTINGS
@given(sa=shape_and_axis(), keepdims=st.booleans(), seed=st.integers(0, 2**31))
def test_argmax_argmin_hypothesis(sa, keepdims, seed):
    shape, axis = sa
    if isinstance(axis, tuple):
        axis = axis[0]
    x = np.random.default_rng(seed).standard_normal(shape)
    for f, ref in ((jnp.argmax, np.argmax), (jnp.argmin, np.argmin)):
        assert_equal(f(jnp.asarray(x), axis=axis, keepdims=keepdims),
                     ref(x, axis=axis, keepdims=keepdims))


@SETTINGS
@given(sa=shape_and_axis(), seed=st.integers(0, 2**31))
def test_cumulative_hypothesis(sa, seed):
    shape, axis = sa
    if isinstance(axis, tuple):
        axis = axis[0]
    x = np.random.default_rng(seed).standard_normal(shape)
    assert_close(jnp.cumsum(jnp.asarray(x), axis=axis), np.cumsum(x, axis=axis), atol=1e-12)
    assert_close(jnp.cumprod(jnp.asarray(x), axis=axis), np.cumprod(x, axis=axis), atol=1e-12)


def test_reduction_dtypes(rng):
    i = rng.integers(-5, 5, size=(3, 4)).astype(np.int32)
    b = rng.standard_normal(7) > 0
    with fnx.enable_x64(False):
        assert jnp.sum(jnp.asarray(i)).dtype == jnp.int32
        assert jnp.mean(jnp.asarray(i)).dtype == jnp.float32
        assert_close(jnp.mean(jnp.asarray(i), axis=0), np.mean(i, axis=0), rtol=1e-6)
        assert jnp.sum(jnp.asarray(b)).dtype == jnp.int32
    assert_equal(jnp.sum(jnp.asarray(b)), b.sum())
    assert_equal(jnp.cumsum(jnp.asarray(b)), np.cumsum(b))
    i8 = np.array([100, 100, 100], np.int8)
    assert_equal(jnp.sum(jnp.asarray(i8)), 300)
    assert_equal(jnp.max(jnp.asarray(i), initial=100), 100)
    x = rng.standard_normal((2, 3))
    assert_close(jnp.asarray(x).sum(axis=1), x.sum(axis=1))
    assert_close(jnp.asarray(x).mean(), x.mean())
    assert_close(jnp.asarray(x).std(ddof=1), x.std(ddof=1))


def test_median_even_odd(rng):
    for n in (4, 5):
        x = rng.standard_normal((3, n))
        assert_close(jnp.median(jnp.asarray(x), axis=1), np.median(x, axis=1))
        assert_close(jnp.median(jnp.asarray(x)), np.median(x))
    assert_close(jnp.median(jnp.asarray(np.array([1, 2, 3, 4]))), 2.5)


def test_reduction_grads_and_vmap(rng):
    x = rng.standard_normal((3, 4))
    fs = [lambda t: jnp.sum(t ** 2, axis=1, keepdims=True),
          lambda t: jnp.mean(t, axis=0),
          lambda t: jnp.var(t, axis=1, ddof=1),
          lambda t: jnp.std(t, axis=0),
          lambda t: jnp.prod(t, axis=1),
          lambda t: jnp.max(t, axis=1),
          lambda t: jnp.min(t, axis=0, keepdims=True),
          lambda t: jnp.cumsum(t, axis=1),
          lambda t: jnp.cumprod(t, axis=1),
          lambda t: jnp.median(t, axis=1)]
    batch = jnp.asarray(rng.standard_normal((5, 3, 4)))
    for f in fs:
        check_grads(f, (x,), order=2)
        assert_vmap_matches_stack(f, batch)
    assert_vmap_matches_stack(lambda t: jnp.argmax(t, axis=1), batch)


# =============================================================================================
# shapes


@st.composite
def shape_and_newshape(draw):
    dims = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=4))
    shape = tuple(dims)
    perm = draw(st.permutations(dims))
    # regroup the same factors into a new shape, maybe with one -1
    cuts = sorted(draw(st.sets(st.integers(1, max(len(perm) - 1, 1)), max_size=len(perm) - 1)))
    groups, start = [], 0
    for c in cuts + [len(perm)]:
        if c > start:
            groups.append(int(np.prod(perm[start:c])))
            start = c
    new = list(groups)
    if draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return shape, tuple(new)


@SETTINGS
@given(sn=shape_and_newshape(), seed=st.integers(0, 2**31))
def test_reshape_hypothesis(sn, seed):
    shape, new = sn
    x = np.random.default_rng(seed).standard_normal(shape)
    assert_equal(jnp.reshape(jnp.asarray(x), new), np.reshape(x, new))
    assert_equal(jnp.asarray(x).reshape(new), x.reshape(new))
    assert_equal(jnp.asarray(x).reshape(*new), x.reshape(*new))


@st.composite
def shape_and_perm(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))
    perm = tuple(draw(st.permutations(range(len(shape)))))
    return shape, perm


@SETTINGS
@given(sp=shape_and_perm(), seed=st.integers(0, 2**31), data=st.data())
def test_transpose_moveaxis_hypothesis(sp, seed, data):
    shape, perm = sp
    nd = len(shape)
    x = np.random.default_rng(seed).standard_normal(shape)
    a = jnp.asarray(x)
    assert_equal(jnp.transpose(a, perm), np.transpose(x, perm))
    assert_equal(jnp.transpose(a), np.transpose(x))
    assert_equal(a.T, x.T)
    assert_equal(a.transpose(perm), x.transpose(perm))
    k = data.draw(st.integers(1, nd))
    src = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=k, max_size=k,
                             unique_by=lambda v: v % nd))
    dst = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=k, max_size=k,
                             unique_by=lambda v: v % nd))
    assert_equal(jnp.moveaxis(a, src, dst), np.moveaxis(x, src, dst))
    assert_equal(jnp.moveaxis(a, src[0], dst[0]), np.moveaxis(x, src[0], dst[0]))
    i, j = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    assert_equal(jnp.swapaxes(a, i, j), np.swapaxes(x, i, j))


@st.composite
def broadcastable_shapes(draw):
    out = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    def sub():
        k = draw(st.integers(0, len(out)))
        return tuple(1 if draw(st.booleans()) else d for d in out[len(out) - k:])
    return sub(), sub()


BROADCAST_OPS = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                 ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum),
                 ("power", np.power), ("arctan2", np.arctan2), ("greater", np.greater),
                 ("floor_divide", np.floor_divide), ("mod", np.mod)]


@SETTINGS
@given(shapes=broadcastable_shapes(), op=st.sampled_from(BROADCAST_OPS),
       seed=st.integers(0, 2**31))
def test_broadcasting_binary_hypothesis(shapes, op, seed):
    name, ref = op
    rng = np.random.default_rng(seed)
    s1, s2 = shapes
    x = rng.uniform(0.5, 2.0, s1) if name == "power" else rng.standard_normal(s1)
    y = rng.standard_normal(s2)
    assert_close(getattr(jnp, name)(jnp.asarray(x), jnp.asarray(y)), ref(x, y), atol=1e-12)


def test_squeeze_expand_dims(rng):
    x = rng.standard_normal((1, 3, 1, 2))
    a = jnp.asarray(x)
    assert_equal(jnp.squeeze(a), np.squeeze(x))
    assert_equal(jnp.squeeze(a, axis=-2), np.squeeze(x, axis=-2))
    assert_equal(jnp.squeeze(a, axis=(0, 2)), np.squeeze(x, axis=(0, 2)))
    assert_equal(a.squeeze(), x.squeeze())
    with pytest.raises(Exception):
        jnp.squeeze(a, axis=1)
    for ax in (0, 2, -1, (0, -1), (1, 3)):
        assert_equal(jnp.expand_dims(a, ax), np.expand_dims(x, ax))


def test_concatenate_stack_hstack_vstack(rng):
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    a, b = jnp.asarray(x), jnp.asarray(y)
    for ax in (0, 1, -1):
        assert_equal(jnp.concatenate([a, b], axis=ax), np.concatenate([x, y], axis=ax))
    assert_equal(jnp.concatenate([a, b], axis=None), np.concatenate([x, y], axis=None))
    for ax in (0, 2, -1, 3):
        assert_equal(jnp.stack([a, b, a], axis=ax), np.stack([x, y, x], axis=ax))
    assert_equal(jnp.hstack([a, b]), np.hstack([x, y]))
    assert_equal(jnp.vstack([a, b]), np.vstack([x, y]))
    v, w = rng.standard_normal(3), rng.standard_normal(5)
    assert_equal(jnp.hstack([jnp.asarray(v), jnp.asarray(w)]), np.hstack([v, w]))
    assert_equal(jnp.vstack([jnp.asarray(v), jnp.asarray(v)]), np.vstack([v, v]))
    # mixed dtypes promote
    with fnx.enable_x64(False):
        out = jnp.concatenate([jnp.asarray(np.array([1, 2])), jnp.ones(2)])
    assert out.dtype == jnp.float32


def test_split(rng):
    x = rng.standard_normal((6, 4))
    a = jnp.asarray(x)
    for spec, ax in ((3, 0), ([1, 4], 0), (2, 1), ([1, 3], -1), ([2, 2], 0)):
        got, ref = jnp.split(a, spec, axis=ax), np.split(x, spec, axis=ax)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert_equal(g, r)
    with pytest.raises(Exception):
        jnp.split(a, 4, axis=0)


def test_tile_repeat_broadcast_to(rng):
    x = rng.standard_normal((2, 3))
    a = jnp.asarray(x)
    for reps in (2, (2, 1), (1, 3), (2, 1, 2)):
        assert_equal(jnp.tile(a, reps), np.tile(x, reps))
    for r, ax in ((2, 0), (3, 1), (2, None), (2, -1)):
        assert_equal(jnp.repeat(a, r, axis=ax), np.repeat(x, r, axis=ax))
    assert_equal(jnp.repeat(a, [1, 0, 2], axis=1), np.repeat(x, [1, 0, 2], axis=1))
    v = rng.standard_normal((3, 1))
    assert_equal(jnp.broadcast_to(jnp.asarray(v), (2, 3, 4)), np.broadcast_to(v, (2, 3, 4)))
    with pytest.raises(Exception):
        jnp.broadcast_to(a, (3, 3))


def test_pad(rng):
    x = rng.standard_normal((2, 3))
    a = jnp.asarray(x)
    for pw in (1, (1, 2), ((1, 0), (2, 3)), ((0, 0), (0, 1))):
        assert_equal(jnp.pad(a, pw), np.pad(x, pw))
        assert_equal(jnp.pad(a, pw, constant_values=-1.5), np.pad(x, pw, constant_values=-1.5))
        assert_equal(jnp.pad(a, pw, mode="edge"), np.pad(x, pw, mode="edge"))
    check_grads(lambda t: jnp.pad(t, ((1, 2), (0, 1)), mode="edge") ** 2, (x,), order=2)
    check_grads(lambda t: jnp.pad(t, 1, constant_values=0.5) ** 2, (x,), order=2)


def test_flip_roll(rng):
    x = rng.standard_normal((3, 4, 2))
    a = jnp.asarray(x)
    for ax in (None, 0, -1, (0, 2)):
        assert_equal(jnp.flip(a, ax), np.flip(x, ax))
    for shift, ax in ((1, 0), (-5, 1), (3, None), (7, -1), ((1, -2), (0, 1)), (2, (0, 2))):
        assert_equal(jnp.roll(a, shift, axis=ax), np.roll(x, shift, axis=ax))
    assert_equal(jnp.roll(a, np.int64(2), axis=np.int64(1)), np.roll(x, 2, axis=1))


def test_shape_grads_and_vmap(rng):
    x = rng.standard_normal((3, 4))
    fs = [lambda t: jnp.reshape(t, (2, -1)) * 2,
          lambda t: jnp.transpose(t) ** 2,
          lambda t: jnp.moveaxis(t[None], 0, -1) ** 2,
          lambda t: jnp.concatenate([t, t ** 2], 1),
          lambda t: jnp.stack([t, t ** 2], -1),
          lambda t: jnp.tile(t, (2, 1)) ** 2,
          lambda t: jnp.repeat(t, 2, axis=1) ** 2,
          lambda t: jnp.roll(t, 1, 1) ** 2,
          lambda t: jnp.flip(t, 1) ** 2,
          lambda t: jnp.split(t, 2, axis=1)[1] ** 2,
          lambda t: jnp.squeeze(jnp.expand_dims(t, 0)) ** 3,
          lambda t: jnp.hstack([t, t]) * jnp.vstack([t[:, :4], t[:, :4]]).sum(),
          lambda t: jnp.broadcast_to(t[:, :1], (3, 5)) ** 2]
    batch = jnp.asarray(rng.standard_normal((4, 3, 4)))
    for f in fs:
        check_grads(f, (x,), order=2)
        assert_vmap_matches_stack(f, batch)


# =============================================================================================
# take, sorting


def test_take(rng):
    x = rng.standard_normal((3, 5, 2))
    a = jnp.asarray(x)
    idx = rng.integers(-5, 5, size=(2, 3))
    assert_equal(jnp.take(a, jnp.asarray(idx), axis=1), np.take(x, idx, axis=1))
    assert_equal(jnp.take(a, idx, axis=1), np.take(x, idx, axis=1))
    flat = rng.integers(-x.size, x.size, size=7)
    assert_equal(jnp.take(a, jnp.asarray(flat)), np.take(x, flat))
    assert_equal(jnp.take(a, 2, axis=0), np.take(x, 2, axis=0))
    check_grads(lambda t: jnp.take(t, jnp.asarray([0, 2, 2, -1]), axis=1) ** 2, (x,), order=2)
    assert_vmap_matches_stack(lambda t: jnp.take(t, jnp.asarray([1, 1, 0]), axis=0),
                              jnp.asarray(rng.standard_normal((4, 3, 2))))
    # batched indices too
    ib = rng.integers(0, 5, size=(3, 4))
    assert_vmap_matches_stack(lambda t, i: jnp.take(t, i, axis=0),
                              jnp.asarray(rng.standard_normal((3, 5))), jnp.asarray(ib))


def test_take_along_axis(rng):
    x = rng.standard_normal((3, 4, 5))
    a = jnp.asarray(x)
    for ax, ishape in ((1, (3, 2, 5)), (0, (6, 4, 5)), (-1, (3, 4, 3)), (2, (1, 4, 2))):
        idx = rng.integers(0, x.shape[ax], size=ishape)
        assert_equal(jnp.take_along_axis(a, jnp.asarray(idx), axis=ax),
                     np.take_along_axis(x, idx, axis=ax))
    order = np.argsort(x, axis=1)
    assert_equal(jnp.take_along_axis(a, jnp.argsort(a, axis=1), axis=1),
                 np.take_along_axis(x, order, axis=1))
    idx = rng.integers(0, 4, size=(3, 2))
    check_grads(lambda t: jnp.take_along_axis(t, jnp.asarray(idx), axis=1) ** 2, (x[:, :, 0],),
                order=2)


def test_sort_argsort(rng):
    x = rng.standard_normal((4, 5, 3))
    a = jnp.asarray(x)
    for ax in (0, 1, -1, None):
        assert_equal(jnp.sort(a, axis=ax), np.sort(x, axis=ax))
        assert_equal(jnp.argsort(a, axis=ax), np.argsort(x, axis=ax, kind="stable"))
    ties = rng.integers(0, 3, size=12)
    assert_equal(jnp.argsort(jnp.asarray(ties)), np.argsort(ties, kind="stable"))
    # descending: ties keep their order, and unsigned keys work
    assert_equal(jnp.argsort(jnp.asarray(ties), descending=True),
                 np.argsort(-ties, kind="stable"))
    u = np.array([3, 0, 200, 3, 255], np.uint8)
    assert_equal(jnp.argsort(jnp.asarray(u), descending=True), [4, 2, 0, 3, 1])
    assert_equal(jnp.sort(jnp.asarray(u), descending=True), np.sort(u)[::-1])
    assert_equal(a.sort(axis=0), np.sort(x, axis=0))
    assert_equal(a.argsort(axis=1), np.argsort(x, axis=1, kind="stable"))
    check_grads(lambda t: jnp.sort(t, axis=0), (x,), order=2)
    assert_vmap_matches_stack(lambda t: jnp.sort(t, axis=0), a)
    assert_vmap_matches_stack(lambda t: jnp.argsort(t, axis=-1), a)


# =============================================================================================
# products


def test_dot(rng):
    a, b, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(4)
    c, d = rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 3, 4))
    J = jnp.asarray
    assert_close(jnp.dot(J(a), J(b)), a @ b)
    assert_close(jnp.dot(J(v), J(v)), v @ v)
    assert_close(jnp.dot(J(a), J(v)), a @ v)
    assert_close(jnp.dot(J(a), J(c)), np.dot(a, c))
    assert_close(jnp.dot(J(d), J(c)), np.dot(d, c))
    assert_close(jnp.dot(2.0, J(a)), 2.0 * a)
    assert_close(J(a).dot(J(b)), a.dot(b))
    check_grads(jnp.dot, (a, b), order=2)
    check_grads(jnp.dot, (d, c), order=2)


def test_matmul(rng):
    J = jnp.asarray
    cases = [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((6, 1, 3, 4), (2, 4, 5)),
             ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (4,)), ((3, 4), (2, 4, 5)),
             ((1, 3, 4), (5, 4, 2))]
    for sa, sb in cases:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        assert_close(jnp.matmul(J(a), J(b)), np.matmul(a, b), rtol=1e-12)
        assert_close(J(a) @ J(b), a @ b, rtol=1e-12)
        assert_close(a @ J(b), a @ b, rtol=1e-12)
    check_grads(jnp.matmul, (rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 2))),
                order=2)
    check_grads(jnp.matmul, (rng.standard_normal(4), rng.standard_normal((2, 4, 3))), order=2)
    assert_vmap_matches_stack(jnp.matmul, J(rng.standard_normal((5, 3, 4))),
                              J(rng.standard_normal((4, 2))), in_axes=(0, None))
    assert_vmap_matches_stack(jnp.matmul, J(rng.standard_normal((5, 3, 4))),
                              J(rng.standard_normal((5, 4))))
    with pytest.raises(Exception):
        jnp.matmul(J(rng.standard_normal((3, 4))), J(rng.standard_normal((3, 4))))
    with fnx.enable_x64(False):
        i = jnp.array([[1, 2], [3, 4]])
    assert (i @ i).dtype == jnp.int32
    assert_equal(i @ i, np.array([[7, 10], [15, 22]]))


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("ba", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(6, 1, 3, 4), (2, 4, 5)]),
    ("...ij,jk", [(2, 3, 4), (4, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("...i->...", [(2, 3, 4)]),
    ("ijk->", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("i,ij,j->", [(3,), (3, 4), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bi,bi->b", [(3, 4), (3, 4)]),
    ("bij,jk->bk", [(2, 3, 4), (4, 5)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUMS, ids=[e[0] + str(i) for i, e in enumerate(EINSUMS)])
def test_einsum(spec, shapes, rng):
    ops = [rng.standard_normal(s) for s in shapes]
    assert_close(jnp.einsum(spec, *[jnp.asarray(o) for o in ops]), np.einsum(spec, *ops),
                 rtol=1e-11, atol=1e-12)


def test_einsum_grads_and_vmap(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    check_grads(lambda s, t: jnp.einsum("ij,jk->ik", s, t), (a, b), order=2)
    check_grads(lambda s: jnp.einsum("ii", s), (a[:, :3],), order=2)
    check_grads(lambda s, t: jnp.einsum("...ij,...jk->...ik", s, t),
                (rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((3, 4, 2))), order=2)
    assert_vmap_matches_stack(lambda s, t: jnp.einsum("ij,jk->ik", s, t),
                              jnp.asarray(rng.standard_normal((5, 3, 4))), jnp.asarray(b),
                              in_axes=(0, None))


def test_outer_tensordot_trace(rng):
    J = jnp.asarray
    v, w = rng.standard_normal(3), rng.standard_normal((2, 2))
    assert_close(jnp.outer(J(v), J(w)), np.outer(v, w))
    d, c = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    assert_close(jnp.tensordot(J(d), J(c), axes=([0, 2], [0, 1])),
                 np.tensordot(d, c, axes=([0, 2], [0, 1])))
    h = rng.standard_normal((3, 4, 2))
    assert_close(jnp.tensordot(J(d), J(h), axes=2), np.tensordot(d, h, axes=2))
    assert_close(jnp.tensordot(J(v), J(w), axes=0), np.tensordot(v, w, axes=0))
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    assert_close(jnp.tensordot(J(a), J(b), axes=1), a @ b)
    assert_close(jnp.tensordot(J(a), J(b), axes=(1, 0)), a @ b)
    for k in (0, 1, -2, 5):
        assert_close(jnp.trace(J(a), k), np.trace(a, k))
    assert_close(jnp.trace(J(d), axis1=1, axis2=2), np.trace(d, axis1=1, axis2=2))
    assert_close(jnp.trace(J(d), 1, axis1=0, axis2=2), np.trace(d, 1, axis1=0, axis2=2))
    assert_close(J(a).trace(), a.trace())
    check_grads(jnp.outer, (v, w[0]), order=2)
    check_grads(lambda s, t: jnp.tensordot(s, t, 2), (d, rng.standard_normal((3, 4))), order=2)
    check_grads(jnp.trace, (a,), order=2)


def test_diag_tril_triu(rng):
    J = jnp.asarray
    v, a = rng.standard_normal(4), rng.standard_normal((3, 5))
    d = rng.standard_normal((2, 4, 3))
    for k in (0, 1, 3, -1, -2, -5):
        assert_equal(jnp.diag(J(v), k), np.diag(v, k))
        assert_equal(jnp.diag(J(a), k), np.diag(a, k))
        assert_equal(jnp.tril(J(a), k), np.tril(a, k))
        assert_equal(jnp.triu(J(a), k), np.triu(a, k))
        assert_equal(jnp.tril(J(d), k), np.tril(d, k))
        assert_equal(jnp.triu(J(d), k), np.triu(d, k))
    check_grads(lambda t: jnp.diag(t, -1), (v,), order=2)
    check_grads(lambda t: jnp.diag(t, 1), (a,), order=2)
    check_grads(lambda t: jnp.tril(t, 1) ** 2, (a,), order=2)
    assert_vmap_matches_stack(lambda t: jnp.diag(t, -2), J(rng.standard_normal((3, 4))))
    assert_vmap_matches_stack(lambda t: jnp.triu(t, 1), J(d))


# =============================================================================================
# indexing

def _index_cases(x):
    return [
        1, -1, (1, -2), (-1, 2, -3), slice(None, None, -1), (slice(3, 0, -2), Ellipsis),
        (Ellipsis, slice(-1, None, -3)), (slice(None, None, -2), slice(1, None, 2)),
        (None, 1), (Ellipsis, None), (1, None, slice(1, 3), None), Ellipsis, (Ellipsis, 2),
        (slice(-100, 100),), (slice(2, 1),),
        np.array([0, -1, 2]), (np.array([0, 1]), np.array([2, -1])),
        (np.array([0, 1]), slice(None), np.array([2, -1])),
        (slice(None), np.array([[0, 1], [2, 3]]), np.array([1, 0])),
        (1, slice(None), np.array([0, 5])), (np.array([1, 2]), 3),
        (Ellipsis, np.array([1, -2])), ([0, 2], [1, 3]),
        (np.array([[1], [2]]), slice(None), np.array([0, 3])),
        (np.array([1, 2]), None, np.array([0, 1])),
        x[:, 0, 0] > 0, x > 0, (slice(None), x[0] > 0), (x[:, 0, 0] > 0, 2),
        (Ellipsis, x[0, 0] > 0), np.int64(2), (np.int32(1), np.int64(-1)),
    ]


def _to_fnx_index(idx):
    conv = (lambda e: jnp.asarray(e) if isinstance(e, np.ndarray) else e)
    return tuple(conv(e) for e in idx) if isinstance(idx, tuple) else conv(idx)


def test_indexing(rng):
    x = rng.standard_normal((4, 5, 6))
    a = jnp.asarray(x)
    for idx in _index_cases(x):
        expected = x[idx]
        assert_equal(a[idx], expected)
        assert_equal(a[_to_fnx_index(idx)], expected)


def test_indexing_errors(rng):
    a = jnp.asarray(rng.standard_normal((2, 3)))
    # an int out of range is clamped, as in JAX (not NumPy's IndexError)
    assert_equal(a[2], np.asarray(a)[1])
    assert_equal(a[-3, 5], np.asarray(a)[0, 2])
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a[..., ...]


def test_indexing_grads_and_vmap(rng):
    x = rng.standard_normal((4, 5))
    check_grads(lambda t: t[np.array([0, 2, 0]), ::-1] ** 2, (x,), order=2)
    check_grads(lambda t: t[x > 0] ** 2, (x,), order=2)
    check_grads(lambda t: t[1:, None, -2] ** 3, (x,), order=2)
    check_grads(lambda t: t[np.array([[0, 1], [3, 3]]), np.array([4, 0])] ** 2, (x,), order=2)
    batch = jnp.asarray(rng.standard_normal((3, 4, 5)))
    assert_vmap_matches_stack(lambda t: t[np.array([0, 2, 0]), ::-2], batch)
    assert_vmap_matches_stack(lambda t: t[..., 1], batch)
    assert_vmap_matches_stack(lambda t, i: t[i], batch, jnp.asarray(np.array([0, 3, 1])))
    assert_vmap_matches_stack(lambda t, i: t[i, 1:3], batch,
                              jnp.asarray(np.array([[0, 3], [1, 1], [2, 0]])))


def test_traced_boolean_mask_is_refused(rng):
    x = jnp.asarray(rng.standard_normal(4))
    with pytest.raises(IndexError, match="where"):
        fnx.grad(lambda t: jnp.sum(t[t > 0]))(x)


# =============================================================================================
# .at[...] updates


def _ref_at(x, op, idx, v):
    out = x.copy()
    if op == "set":
        out[idx] = v
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum,
         "max": np.maximum}[op].at(out, idx, v)
    return out


def test_at_updates(rng):
    x = rng.standard_normal((5, 4))
    a = jnp.asarray(x)
    dup = np.array([0, 2, 0, 4, 2, 2])
    cases = [((1, 2), rng.standard_normal()),
             ((slice(1, None), slice(None, None, 2)), rng.standard_normal((4, 2))),
             ((slice(None), 1), rng.standard_normal(5)),
             (dup, rng.standard_normal((6, 4))),
             ((dup, 1), rng.standard_normal(6)),
             ((dup, slice(1, 3)), rng.standard_normal((6, 2))),
             ((-1, -2), rng.standard_normal()),
             (np.array([3, 1]), rng.standard_normal(4))]
    for idx, v in cases:
        for op in ("set", "add", "multiply", "min", "max"):
            # with repeated indices, set keeps the last update (as NumPy), on every backend
            got = getattr(a.at[idx], op)(v)
            assert_close(got, _ref_at(x, op, idx, v))
            got2 = getattr(a.at[_to_fnx_index(idx)], op)(jnp.asarray(np.asarray(v)))
            assert_close(got2, _ref_at(x, op, idx, v))
        assert_equal(a.at[idx].get(), x[idx])
    # duplicate indices add up
    out = jnp.zeros(3).at[jnp.asarray([0, 0, 2, 0])].add(1.0)
    assert_equal(out, [3.0, 0.0, 1.0])
    # a mask
    assert_equal(a.at[x > 0].set(0.0), np.where(x > 0, 0.0, x))
    assert_equal(a.at[a > 0].set(0.0), np.where(x > 0, 0.0, x))
    # the array is unchanged, and the dtype kept
    assert_equal(a, x)
    assert a.at[0].set(1).dtype == jnp.float64
    assert_equal(jnp.arange(3).at[1].add(5), [0, 6, 2])


def test_at_grads_and_vmap(rng):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    J = jnp.asarray
    dup = np.array([0, 2, 0])
    check_grads(lambda s, t: J(s).at[dup].add(t) ** 2, (x, y), order=2)
    check_grads(lambda s, t: J(s).at[J(dup)].add(t) ** 2, (x, y), order=2)
    check_grads(lambda s, t: J(s).at[np.array([0, 2])].set(t[:2]) ** 2, (x, y), order=2)
    # repeated indices: the last update lands (as NumPy) and only it gets a gradient
    check_grads(lambda s, t: J(s).at[dup].set(t) ** 2, (x, y), order=2)
    check_grads(lambda s, t: J(s).at[dup].multiply(t), (x, y), order=2)
    check_grads(lambda s, t: J(s).at[dup].min(t), (x, y), order=2)
    check_grads(lambda s, t: J(s).at[dup].max(t), (x, y), order=2)
    check_grads(lambda s, t: J(s).at[1, 1:3].max(t[0, :2]), (x, y), order=2)
    check_grads(lambda s: J(s).at[dup].get() ** 2, (x,), order=2)
    g = fnx.grad(lambda u: jnp.sum(jnp.zeros(3).at[jnp.asarray([0, 0, 1])].set(u) * 2.0))(
        jnp.asarray(np.array([5.0, 6.0, 7.0])))
    assert_equal(g, [0.0, 2.0, 2.0])
    # a zero among repeated multiplicative updates
    yz = y.copy()
    yz[0, 1] = 0.0
    check_grads(lambda t: J(x).at[dup].multiply(t), (yz,), order=1)
    batch = J(rng.standard_normal((5, 3, 4)))
    idx = J(rng.integers(0, 3, size=(5, 2)))
    assert_vmap_matches_stack(lambda s, i: s.at[i].add(1.0), batch, idx)
    assert_vmap_matches_stack(lambda s, i: s.at[i, 0].set(-1.0), batch, idx)
    assert_vmap_matches_stack(lambda s: s.at[dup].multiply(2.0), batch)


# =============================================================================================
# dtype promotion


@pytest.mark.x32
def test_dtype_promotion():
    i32 = jnp.asarray(np.array([1, 2], np.int32))
    f16 = jnp.asarray(np.array([1, 2], np.float16))
    f32 = jnp.ones(2)
    f64 = jnp.asarray(np.array([1.0, 2.0]))
    i8 = jnp.asarray(np.array([1, -2], np.int8))
    u8 = jnp.asarray(np.array([1, 200], np.uint8))
    b = jnp.asarray(np.array([True, False]))
    assert (i32 + 1.5).dtype == jnp.float32
    assert (i32 * 2).dtype == jnp.int32
    assert (f16 * 2.0).dtype == jnp.float16
    assert (f16 * 2).dtype == jnp.float16
    assert (2.0 * f16).dtype == jnp.float16
    assert (i8 + u8).dtype == jnp.int16
    assert_equal(i8 + u8, np.array([2, 198], np.int16))
    assert (u8 + 1).dtype == jnp.uint8
    assert (i8 * 3).dtype == jnp.int8
    assert f64.dtype == jnp.float32        # without x64, float64 values become float32
    with fnx.enable_x64():
        f64 = jnp.asarray(np.array([1.0, 2.0]))
        assert (f64 + 1.0).dtype == jnp.float64
        assert (f64 * f32).dtype == jnp.float64
        assert jnp.exp(f64).dtype == jnp.float64
        assert jnp.sum(f64).dtype == jnp.float64
        assert (f64 @ f64).dtype == jnp.float64
        # a float64 array times a Python float keeps the float exact
        assert_equal(f64 * 0.1, np.array([1.0, 2.0]) * 0.1)
    assert (f32 * f16).dtype == jnp.float32
    assert (i32 + f16).dtype == jnp.float16
    assert (i32 / i32).dtype == jnp.float32
    assert (b + b).dtype == jnp.bool_
    assert_equal(b + b, [True, False])
    assert_equal(b + jnp.asarray(np.array([False, True])), [True, True])
    assert_equal(b * b, [True, False])
    assert (b + 1).dtype == jnp.int32
    assert (b + 1.0).dtype == jnp.float32
    assert jnp.result_type(i32, 1.0) == jnp.float32
    assert jnp.result_type(i8, u8) == jnp.int16
    # weak types: a Python scalar alone is weak and yields to any array
    s = jnp.asarray(2.0)
    assert (s * f16).dtype == jnp.float16
    assert (jnp.asarray(3) + i8).dtype == jnp.int8


@pytest.mark.x32
def test_more_promotion_entries():
    """Entries of JAX's promotion table beyond the headline cases."""
    def arr(dt):
        return jnp.asarray(np.array([1, 2], dtype=dt))
    table = [("bool", "int8", jnp.int8), ("uint8", "int8", jnp.int16),
             ("uint16", "int8", jnp.int32), ("uint32", "int8", jnp.int64),
             ("uint64", "int8", jnp.float64), ("int32", "float16", jnp.float16),
             ("uint8", "float16", jnp.float16), ("int64", "float16", jnp.float16),
             ("uint32", "int32", jnp.int64), ("float16", "float32", jnp.float32),
             ("float64", "complex64", jnp.complex128)]
    with fnx.enable_x64():
        for a, b, want in table:
            assert (arr(a) * arr(b)).dtype == want, (a, b)
            assert (arr(b) * arr(a)).dtype == want, (b, a)
    # without x64, 64-bit inputs are 32-bit and uint32 with int32 stays int32
    table32 = [("uint32", "int8", jnp.int32), ("uint64", "int8", jnp.int32),
               ("uint32", "int32", jnp.int32), ("float64", "complex64", jnp.complex64)]
    for a, b, want in table32:
        assert (arr(a) * arr(b)).dtype == want, (a, b)
        assert (arr(b) * arr(a)).dtype == want, (b, a)
    assert (arr("int8") + 1.5).dtype == jnp.float32
    assert (arr("float32") + 1j).dtype == jnp.complex64
    assert jnp.result_type(1, 2.0) == jnp.float32
    assert jnp.result_type(True, 1) == jnp.int32


# =============================================================================================
# more of the namespace


def test_masked_and_nan_reductions(rng):
    x = rng.standard_normal((3, 4))
    x[0, 1] = np.nan
    x[2, 3] = np.nan
    a = jnp.asarray(x)
    assert_close(jnp.nansum(a, axis=1), np.nansum(x, axis=1))
    assert_close(jnp.nanmean(a, axis=1), np.nanmean(x, axis=1))
    assert_close(jnp.nanmean(a), np.nanmean(x))
    y = rng.standard_normal((3, 4))
    m = y > 0
    m[:, 0] = True
    b = jnp.asarray(y)
    assert_close(jnp.mean(b, axis=0, where=jnp.asarray(m)), np.mean(y, axis=0, where=m))
    assert_close(jnp.sum(b, axis=1, where=m), np.sum(y, axis=1, where=m))
    assert_close(jnp.max(b, axis=1, where=m, initial=-10.0),
                 np.max(y, axis=1, where=m, initial=-10.0))
    assert_close(jnp.min(b, axis=0, where=m, initial=10.0),
                 np.min(y, axis=0, where=m, initial=10.0))
    with pytest.raises(ValueError):
        jnp.max(b, where=m)


def test_misc_functions(rng):
    J = jnp.asarray
    x, w = rng.standard_normal((3, 4)), rng.uniform(0.5, 2, (3, 4))
    a = J(x)
    assert_close(jnp.average(a, axis=1, weights=J(w)), np.average(x, axis=1, weights=w))
    assert_close(jnp.average(a, axis=0, weights=J(w[:, 0])),
                 np.average(x, axis=0, weights=w[:, 0]))
    assert_close(jnp.ptp(a, axis=1), np.ptp(x, axis=1))
    assert_equal(jnp.count_nonzero(J(x > 0), axis=0), np.count_nonzero(x > 0, axis=0))
    s, v = np.sort(rng.standard_normal(6)), rng.standard_normal(5)
    assert_equal(jnp.searchsorted(J(s), J(v)), np.searchsorted(s, v))
    t = np.array([1.0, 2.0, 2.0, 3.0])
    for side in ("left", "right"):
        assert_equal(jnp.searchsorted(J(t), J(np.array([2.0, 0.0, 5.0])), side=side),
                     np.searchsorted(t, [2.0, 0.0, 5.0], side=side))
    k1, k2 = rng.integers(0, 3, 8), rng.integers(0, 3, 8)
    assert_equal(jnp.lexsort((J(k1), J(k2))), np.lexsort((k1, k2)))
    assert_equal(jnp.unique(J(np.array([3, 1, 3, 2]))), [1, 2, 3])
    for sec in (3, [2, 5]):
        got, ref = jnp.array_split(J(np.arange(7.0)), sec), np.array_split(np.arange(7.0), sec)
        for g, r in zip(got, ref):
            assert_equal(g, r)
    for idx in ([-2], [4, 2], [-5, -1], [10]):
        got, ref = jnp.split(J(np.arange(6.0)), idx), np.split(np.arange(6.0), idx)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert_equal(g, r)
    assert_equal(jnp.column_stack([J(v), J(v)]), np.column_stack([v, v]))
    for indexing in ("xy", "ij"):
        for g, r in zip(jnp.meshgrid(J(v), J(s), J(v[:2]), indexing=indexing),
                        np.meshgrid(v, s, v[:2], indexing=indexing)):
            assert_equal(g, r)
    assert_equal(jnp.atleast_2d(J(v)), np.atleast_2d(v))
    assert_close(jnp.kron(a, J(w[:2, :2])), np.kron(x, w[:2, :2]))
    assert_close(jnp.inner(a, J(w)), np.inner(x, w))
    assert_close(jnp.vdot(a, J(w)), np.vdot(x, w))
    assert_equal(jnp.isclose(a, a + 1e-9), np.isclose(x, x + 1e-9))
    assert bool(jnp.allclose(a, a + 1e-9)) and not bool(jnp.allclose(a, a + 1e-3))
    assert_close(jnp.cbrt(a), np.cbrt(x))
    assert_close(jnp.copysign(a, J(w - 1)), np.copysign(x, w - 1))
    assert_close(jnp.sinc(J(np.array([0.0, 0.5, 1.3]))), np.sinc([0.0, 0.5, 1.3]))
    assert_close(jnp.heaviside(J(np.array([-1.0, 0.0, 2.0])), 0.5),
                 np.heaviside([-1.0, 0.0, 2.0], 0.5))
    assert_close(jnp.logspace(0.0, 2.0, 5), np.logspace(0, 2, 5), rtol=1e-6)
    assert_equal(jnp.tri(3, 4, 1), np.tri(3, 4, 1))
    assert_equal(jnp.argwhere(J(x > 0)), np.argwhere(x > 0))
    assert_equal(jnp.flatnonzero(J(x > 0)), np.flatnonzero(x > 0))
    for g, r in zip(jnp.nonzero(J(x > 0)), np.nonzero(x > 0)):
        assert_equal(g, r)
    z = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert_equal(jnp.nan_to_num(J(z)), np.nan_to_num(z))
    assert_equal(jnp.diagonal(a, -1), np.diagonal(x, -1))
    assert_equal(a.diagonal(1), x.diagonal(1))
    assert_equal(a.ravel(), x.ravel())
    assert_equal(a.flatten(), x.flatten())
    assert_equal(jnp.fliplr(a), np.fliplr(x))
    assert_equal(jnp.flipud(a), np.flipud(x))
    assert_equal(jnp.matrix_transpose(a), x.T)
    assert_equal([np.asarray(r) for r in a][1], x[1])
    assert len(a) == 3 and float(a[0, 0]) == x[0, 0] and int(J(3)) == 3
    assert round(J(2.5)) == 2.0


def test_at_subtract_divide_and_python_scalars(rng):
    x = rng.standard_normal(5)
    a = jnp.asarray(x)
    idx = np.array([1, 1, 3])
    ref = x.copy()
    np.subtract.at(ref, idx, 0.1)
    assert_close(a.at[idx].subtract(0.1), ref, rtol=1e-15, atol=1e-15)
    ref = x.copy()
    np.divide.at(ref, idx, 3.0)
    assert_close(a.at[idx].divide(3.0), ref, rtol=1e-15)
    # Python numbers land in a float64 array unrounded
    assert float(a.at[0].set(0.1)[0]) == 0.1
    assert float(a.at[0].add(0.1)[0]) == x[0] + 0.1


def test_dynamic_indices_under_vmap(rng):
    """Traced integer indices (from vmap) mixed with static ones, into batched and unbatched
    arrays, for reads and .at updates."""
    J = jnp.asarray
    x = rng.standard_normal((4, 5))
    a = J(x)
    i = J(np.array([0, 3, -1], np.int32))
    assert_equal(fnx.vmap(lambda k: a[k, 2])(i), x[[0, 3, -1], 2])
    assert_equal(fnx.vmap(lambda k: a[k, 1:])(i), x[[0, 3, -1], 1:])
    assert_equal(fnx.vmap(lambda k: a[:, k])(i), x[:, [0, 3, -1]].T)
    out = fnx.vmap(lambda k: a.at[k, 2].add(1.0))(i)
    ref = np.stack([x.copy() for _ in range(3)])
    for b, k in enumerate([0, 3, -1]):
        ref[b, k, 2] += 1.0
    assert_equal(out, ref)
    j = J(np.array([4, 0, 2], np.int32))
    assert_equal(fnx.vmap(lambda k, m: a[k, m])(i, j), x[[0, 3, -1], [4, 0, 2]])
    batch = J(rng.standard_normal((3, 4, 5)))
    assert_vmap_matches_stack(lambda t, k: t.at[k, 0].min(-5.0), batch,
                              J(np.array([[0, 0], [3, 1], [2, 2]], np.int32)))
    assert_vmap_matches_stack(lambda t, k: t[k, 1], batch, i)
    # a concrete int64 NumPy index next to a traced int32 one
    assert_equal(fnx.vmap(lambda k: a[k, np.int64(1)])(i), x[[0, 3, -1], 1])
    assert_equal(fnx.vmap(lambda k: a[k, np.array([1, 2])])(i), x[[0, 3, -1]][:, [1, 2]])


# =============================================================================================
# differences, index helpers, binning, nan-reductions, quantiles, statistics


@SETTINGS
@given(sa=shape_and_axis(), n=st.integers(0, 3), seed=st.integers(0, 2**31))
def test_diff_hypothesis(sa, n, seed):
    shape, axis = sa
    if isinstance(axis, tuple):
        axis = axis[0]
    axis = -1 if axis is None else axis
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    assert_close(jnp.diff(jnp.asarray(x), n, axis), np.diff(x, n, axis), atol=1e-12)
    edge = list(shape)
    edge[axis] = 2
    pre, app = rng.standard_normal(edge), float(rng.standard_normal())
    assert_close(jnp.diff(jnp.asarray(x), n, axis, prepend=jnp.asarray(pre), append=app),
                 np.diff(x, n, axis, prepend=pre, append=app), atol=1e-12)


def test_diff_ediff1d_trapezoid(rng):
    J = jnp.asarray
    x = rng.standard_normal((3, 5))
    b = x > 0
    assert_equal(jnp.diff(J(b), axis=0), np.diff(b, axis=0))
    i = rng.integers(-9, 9, (4,))
    assert_equal(jnp.diff(J(i), 2), np.diff(i, 2))
    assert_close(jnp.ediff1d(J(x)), np.ediff1d(x))
    assert_close(jnp.ediff1d(J(x), to_end=J(x[0, :2]), to_begin=3.5),
                 np.ediff1d(x, to_end=x[0, :2], to_begin=3.5))
    t = np.sort(rng.standard_normal(5))
    for axis in (0, 1, -1):
        assert_close(jnp.trapezoid(J(x), axis=axis), np.trapezoid(x, axis=axis))
        assert_close(jnp.trapezoid(J(x), dx=0.3, axis=axis), np.trapezoid(x, dx=0.3, axis=axis))
    assert_close(jnp.trapezoid(J(x), J(t)), np.trapezoid(x, t))
    xs = rng.standard_normal((3, 5))
    assert_close(jnp.trapezoid(J(x), J(xs), axis=1), np.trapezoid(x, xs, axis=1))
    with pytest.raises(ValueError, match=r"\(5,\).*\(3, 5\)"):
        jnp.trapezoid(J(x), J(t), axis=0)
    with pytest.raises(jnp.AxisError):
        jnp.diff(J(x), axis=2)
    with pytest.raises(ValueError):
        jnp.diff(J(x), -1)
    for axis in (0, 1):
        for f, ref in ((jnp.cumulative_sum, np.cumsum), (jnp.cumulative_prod, np.cumprod)):
            assert_close(f(J(x), axis=axis), ref(x, axis=axis))
            got = f(J(x), axis=axis, include_initial=True)
            init = np.full(x.shape[:axis] + (1,) + x.shape[axis + 1:],
                           0.0 if f is jnp.cumulative_sum else 1.0)
            assert_close(got, np.concatenate([init, ref(x, axis=axis)], axis))
    assert_close(jnp.cumulative_sum(J(x[0])), np.cumsum(x[0]))
    with pytest.raises(ValueError, match=r"\(3, 5\)"):
        jnp.cumulative_sum(J(x))


def test_cross(rng):
    J = jnp.asarray
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    assert_close(jnp.cross(J(a), J(b)), np.cross(a, b))
    assert_close(jnp.cross(J(a), J(b[0])), np.cross(a, b[0]))
    assert_close(jnp.cross(J(a.T), J(b.T), axisa=0, axisb=0, axisc=0),
                 np.cross(a.T, b.T, axisa=0, axisb=0, axisc=0))
    assert_close(jnp.cross(J(a.T), J(b.T), axis=0), np.cross(a.T, b.T, axis=0))
    a2, b2 = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    # 2-vectors have a zero third component (NumPy 2 no longer takes them: pad by hand)
    pad3 = (lambda t: np.concatenate([t, np.zeros(t.shape[:-1] + (1,))], -1))
    assert_close(jnp.cross(J(a2), J(b2)), np.cross(pad3(a2), pad3(b2))[:, 2])
    assert_close(jnp.cross(J(a2), J(b)), np.cross(pad3(a2), b))
    assert_close(jnp.cross(J(a), J(b2)), np.cross(a, pad3(b2)))
    with pytest.raises(fnx.core.errors.ShapeError, match=r"\(4, 4\)"):
        jnp.cross(J(rng.standard_normal((4, 4))), J(b))


def test_isin_digitize_searchsorted_based(rng):
    J = jnp.asarray
    e = rng.integers(0, 10, (3, 4))
    t = rng.integers(0, 10, (5,))
    assert_equal(jnp.isin(J(e), J(t)), np.isin(e, t))
    assert_equal(jnp.isin(J(e), J(t), invert=True), np.isin(e, t, invert=True))
    assert_equal(fnx.jit(jnp.isin)(J(e), J(t)), np.isin(e, t))
    x = rng.standard_normal((2, 6)) * 2
    bins = np.sort(rng.standard_normal(5))
    ties = np.concatenate([x.ravel(), bins])
    for right in (False, True):
        assert_equal(jnp.digitize(J(x), J(bins), right), np.digitize(x, bins, right))
        assert_equal(jnp.digitize(J(ties), J(bins[::-1].copy()), right),
                     np.digitize(ties, bins[::-1], right))
        assert_equal(fnx.jit(lambda u, v: jnp.digitize(u, v, right))(J(ties), J(bins)),
                     np.digitize(ties, bins, right))
    with pytest.raises(ValueError, match=r"\(2, 6\)"):
        jnp.digitize(J(bins), J(x))


def test_interp(rng):
    J = jnp.asarray
    xp = np.sort(rng.uniform(-2, 2, 7))
    fp = rng.standard_normal(7)
    x = rng.uniform(-3, 3, (3, 5))
    x[0, :3] = xp[:3]   # exactly on the knots
    assert_close(jnp.interp(J(x), J(xp), J(fp)), np.interp(x, xp, fp))
    assert_close(jnp.interp(J(x), J(xp), J(fp), left=-7.0, right=9.0),
                 np.interp(x, xp, fp, left=-7.0, right=9.0))
    xpp = rng.uniform(0, 360, 6)
    xq = rng.uniform(-400, 400, 9)
    assert_close(jnp.interp(J(xq), J(xpp), J(fp[:6]), period=360),
                 np.interp(xq, xpp, fp[:6], period=360), atol=1e-10)
    xr = np.array([-1.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    xpr, fpr = np.array([0.0, 1.0, 1.0, 2.0]), np.array([0.0, 1.0, 3.0, 4.0])
    assert_close(jnp.interp(J(xr), J(xpr), J(fpr)), np.interp(xr, xpr, fpr))
    assert_close(jnp.interp(J(xr), J(xpr[1:2]), J(fpr[1:2]), left=-2.0),
                 np.interp(xr, xpr[1:2], fpr[1:2], left=-2.0))
    i64 = rng.integers(0, 5, 6)
    assert_close(jnp.interp(J(i64), J(xpr), J(fpr)), np.interp(i64, xpr, fpr))
    inside = rng.uniform(xp[0] + 0.01, xp[-1] - 0.01, 6)
    # away from the knots: differentiable in x, xp and fp
    check_grads(lambda u, a, b: jnp.interp(u, a, b), (inside, xp, fp), order=1)
    assert_vmap_matches_stack(lambda b: jnp.interp(J(inside), J(xp), b),
                              J(rng.standard_normal((3, 7))))
    with pytest.raises(ValueError, match=r"\(7,\).*\(6,\)"):
        jnp.interp(J(x), J(xp), J(fp[:6]))


def test_bincount_histogram(rng):
    J = jnp.asarray
    x = rng.integers(0, 6, 20)
    w = rng.standard_normal(20)
    assert_equal(jnp.bincount(J(x)), np.bincount(x))
    assert_close(jnp.bincount(J(x), J(w)), np.bincount(x, w))
    assert_equal(jnp.bincount(J(x), minlength=9), np.bincount(x, minlength=9))
    got = fnx.jit(lambda v: jnp.bincount(v, length=4))(J(x))
    assert_equal(got, np.bincount(x[x < 4], minlength=4))   # values past length are dropped
    check_grads(lambda t: jnp.bincount(J(x), t, length=6), (w,), order=1)
    a = rng.standard_normal(50)
    for bins, rg in ((5, None), (7, (-1.0, 1.5)), (np.sort(rng.standard_normal(6)), None)):
        h, e = jnp.histogram(J(a), J(bins) if isinstance(bins, np.ndarray) else bins, rg)
        rh, re = np.histogram(a, bins, rg)
        assert_equal(h, rh)
        assert_close(e, re, atol=1e-14)
        h, _ = jnp.histogram(J(a), bins if isinstance(bins, int) else J(bins), rg,
                             weights=J(w[:10].repeat(5)), density=True)
        assert_close(h, np.histogram(a, bins, rg, weights=w[:10].repeat(5), density=True)[0],
                     atol=1e-12)
    assert_close(jnp.histogram_bin_edges(J(a), 4), np.histogram_bin_edges(a, 4), atol=1e-14)
    h, e = jnp.histogram(J(np.full(4, 2.0)), 2)
    rh, re = np.histogram(np.full(4, 2.0), 2)
    assert_equal(h, rh)
    assert_close(e, re)
    h = fnx.jit(lambda v: jnp.histogram(v, 6)[0])(J(a))
    assert_equal(h, np.histogram(a, 6)[0])
    with pytest.raises(ValueError, match=r"\(19,\).*\(20,\)"):
        jnp.bincount(J(x), J(w[:19]))


def test_index_helpers(rng):
    J = jnp.asarray
    shape = (3, 4, 5)
    flat = rng.integers(0, 60, (2, 3))
    for g, r in zip(jnp.unravel_index(J(flat), shape), np.unravel_index(flat, shape)):
        assert_equal(g, r)
    for g, r in zip(jnp.unravel_index(J(np.array([-1, -60])), shape),
                    np.unravel_index(np.array([59, 0]), shape)):
        assert_equal(g, r)
    multi = tuple(rng.integers(0, d, (2, 3)) for d in shape)
    for order in ("C", "F"):
        assert_equal(jnp.ravel_multi_index(tuple(J(m) for m in multi), shape, order=order),
                     np.ravel_multi_index(multi, shape, order=order))
    wild = (np.array([-1, 3]), np.array([7, 2]))
    for mode in ("wrap", "clip"):
        assert_equal(jnp.ravel_multi_index(tuple(J(m) for m in wild), (3, 4), mode=mode),
                     np.ravel_multi_index(wild, (3, 4), mode=mode))
        got = fnx.jit(lambda a, b: jnp.ravel_multi_index((a, b), (3, 4), mode=mode))(
            *[J(m) for m in wild])
        assert_equal(got, np.ravel_multi_index(wild, (3, 4), mode=mode))
    with pytest.raises(ValueError):
        jnp.ravel_multi_index(tuple(J(m) for m in wild), (3, 4))
    with pytest.raises(ValueError, match="3 index arrays for 2"):
        jnp.ravel_multi_index(tuple(J(m) for m in multi), (3, 4))
    for n, k, m in ((4, 0, None), (4, 1, 6), (5, -2, 3)):
        for f, ref in ((jnp.tril_indices, np.tril_indices), (jnp.triu_indices, np.triu_indices)):
            for g, r in zip(f(n, k, m), ref(n, k, m)):
                assert_equal(g, r)
    x = rng.standard_normal((3, 5))
    for f, ref in ((jnp.tril_indices_from, np.tril_indices_from),
                   (jnp.triu_indices_from, np.triu_indices_from)):
        for g, r in zip(f(J(x), 1), ref(x, 1)):
            assert_equal(g, r)
        with pytest.raises(ValueError, match=r"\(5,\)"):
            f(J(x[0]))
    assert_close(J(x)[jnp.triu_indices_from(J(x))], x[np.triu_indices_from(x)])
    for g, r in zip(jnp.diag_indices(4, 3), np.diag_indices(4, 3)):
        assert_equal(g, r)
    sq = rng.standard_normal((3, 3, 3))
    for g, r in zip(jnp.diag_indices_from(J(sq)), np.diag_indices_from(sq)):
        assert_equal(g, r)
    with pytest.raises(ValueError, match=r"\(3, 5\)"):
        jnp.diag_indices_from(J(x))
    assert_equal(jnp.indices((2, 3, 4)), np.indices((2, 3, 4)))
    for g, r in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        assert_equal(g, r)
    assert jnp.indices((2, 3), dtype=jnp.int64).dtype == jnp.int64
    rows, cols = np.array([2, 0]), np.array([True, False, True, True, False])
    for g, r in zip(jnp.ix_(J(rows), J(cols)), np.ix_(rows, cols)):
        assert_equal(g, r)
    assert_close(J(x)[jnp.ix_(J(rows), J(np.array([4, 1])))], x[np.ix_(rows, [4, 1])])
    with pytest.raises(ValueError, match=r"\(3, 5\)"):
        jnp.ix_(J(x))


NAN_REDUCTIONS = {
    "nanmax": (jnp.nanmax, np.nanmax), "nanmin": (jnp.nanmin, np.nanmin),
    "nanprod": (jnp.nanprod, np.nanprod), "nanvar": (jnp.nanvar, np.nanvar),
    "nanstd": (jnp.nanstd, np.nanstd), "nanmedian": (jnp.nanmedian, np.nanmedian),
    "nansum": (jnp.nansum, np.nansum), "nanmean": (jnp.nanmean, np.nanmean),
}


def _with_nans(rng, shape, frac=0.3):
    x = rng.standard_normal(shape)
    x[rng.uniform(size=shape) < frac] = np.nan
    x.flat[0] = 0.5 + abs(x.flat[0]) if x.size else 0   # at least one number
    return x


@SETTINGS
@given(sa=shape_and_axis(), name=st.sampled_from(sorted(NAN_REDUCTIONS)), keepdims=st.booleans(),
       seed=st.integers(0, 2**31))
def test_nan_reductions_hypothesis(sa, name, keepdims, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = _with_nans(rng, shape)
    f, ref = NAN_REDUCTIONS[name]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # all-NaN slices
        expected = ref(x, axis=axis, keepdims=keepdims)
    assert_close(f(jnp.asarray(x), axis=axis, keepdims=keepdims), expected, rtol=1e-11,
                 atol=1e-12)


def test_nan_reductions_more(rng):
    J = jnp.asarray
    x = _with_nans(rng, (4, 5))
    x[2] = np.nan   # an all-NaN row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # all-NaN slices
        for f, ref in ((jnp.nanmax, np.nanmax), (jnp.nanmin, np.nanmin)):
            assert_close(f(J(x), axis=1), ref(x, axis=1))
        assert_close(jnp.nanvar(J(x), axis=1, ddof=1), np.nanvar(x, axis=1, ddof=1))
        assert_close(jnp.nanstd(J(x), axis=0, ddof=1, keepdims=True),
                     np.nanstd(x, axis=0, ddof=1, keepdims=True))
    for f, ref in ((jnp.nanargmax, np.nanargmax), (jnp.nanargmin, np.nanargmin)):
        assert_equal(f(J(x), axis=0), ref(x, axis=0))
        assert_equal(f(J(x)), ref(x))
        assert_equal(f(J(x), axis=1), [ref(r) if not np.isnan(r).all() else -1 for r in x])
        assert_equal(f(J(x), axis=0, keepdims=True), ref(x, axis=0, keepdims=True))
    for axis in (None, 0, 1):
        assert_close(jnp.nancumsum(J(x), axis), np.nancumsum(x, axis))
        assert_close(jnp.nancumprod(J(x), axis), np.nancumprod(x, axis))
    i = rng.integers(-5, 5, (3, 4))
    assert_equal(jnp.nanmax(J(i), axis=0), np.nanmax(i, axis=0))
    assert_equal(jnp.nanargmin(J(i), axis=1), np.nanargmin(i, axis=1))
    y = rng.standard_normal((3, 4))
    y[0, 1] = y[2, 2] = np.nan
    fs = [lambda t: jnp.nanmax(t, axis=1), lambda t: jnp.nanvar(t, axis=0),
          lambda t: jnp.nanstd(t), lambda t: jnp.nanprod(t, axis=1),
          lambda t: jnp.nancumsum(t, axis=1), lambda t: jnp.nanmedian(t, axis=1)]
    batch = J(np.stack([_with_nans(rng, (3, 4)) for _ in range(4)]))
    for f in fs:
        # gradients where the NaNs are: zero; elsewhere as for the plain reduction
        assert np.isfinite(_np(fnx.grad(lambda t: jnp.sum(f(t)))(J(y)))).all()
        check_grads(f, (np.nan_to_num(y, nan=0.7),), order=1)
        assert_vmap_matches_stack(f, batch)
        assert_close(fnx.jit(f)(J(y)), f(J(y)))


QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@SETTINGS
@given(sa=shape_and_axis(), method=st.sampled_from(QUANTILE_METHODS), keepdims=st.booleans(),
       nan=st.booleans(), seed=st.integers(0, 2**31))
def test_quantile_hypothesis(sa, method, keepdims, nan, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = _with_nans(rng, shape) if nan else rng.standard_normal(shape)
    q = rng.uniform(0, 1, (2,))
    q[0] = rng.choice([0.0, 0.5, 1.0, q[0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # all-NaN slices
        for f, ref, scale in ((jnp.quantile, np.quantile, 1), (jnp.percentile, np.percentile, 100),
                              (jnp.nanquantile, np.nanquantile, 1),
                              (jnp.nanpercentile, np.nanpercentile, 100)):
            expected = ref(x, q * scale, axis=axis, method=method, keepdims=keepdims)
            got = f(jnp.asarray(x), jnp.asarray(q * scale), axis=axis, method=method,
                    keepdims=keepdims)
            assert_close(got, expected, rtol=1e-11, atol=1e-12)
            got0 = f(jnp.asarray(x), float(q[1] * scale), axis=axis, method=method)
            assert_close(got0, ref(x, q[1] * scale, axis=axis, method=method), rtol=1e-11,
                         atol=1e-12)


@pytest.mark.x32
def test_quantile_grads_vmap_jit_and_errors(rng):
    J = jnp.asarray
    x = rng.standard_normal((4, 5))
    fs = [lambda t: jnp.quantile(t, 0.3, axis=1), lambda t: jnp.percentile(t, 85.0, axis=0),
          lambda t: jnp.nanquantile(t, J(np.array([0.2, 0.9])))]
    batch = J(rng.standard_normal((3, 4, 5)))
    for f in fs:
        check_grads(f, (x,), order=2)
        assert_vmap_matches_stack(f, batch)
        assert_close(fnx.jit(f)(J(x)), f(J(x)))
    # the quantile is differentiable in q too (linear interpolation between order statistics)
    check_grads(lambda q: jnp.quantile(J(x), q), (np.array([0.13, 0.77]),), order=1)
    assert_vmap_matches_stack(lambda q: jnp.quantile(J(x), q, axis=0), J(np.array([0.1, 0.6])))
    assert jnp.quantile(J(x.astype(np.float32)), 0.5).dtype == jnp.float32
    assert jnp.quantile(J(np.arange(5)), 0.5).dtype == jnp.float32
    with pytest.raises(ValueError, match="method"):
        jnp.quantile(J(x), 0.5, method="bogus")
    with pytest.raises(jnp.AxisError):
        jnp.percentile(J(x), 50.0, axis=2)


def test_cov_corrcoef(rng):
    J = jnp.asarray
    m = rng.standard_normal((3, 8))
    y = rng.standard_normal((2, 8))
    fw = rng.integers(1, 4, 8)
    aw = rng.uniform(0.5, 2.0, 8)
    assert_close(jnp.cov(J(m)), np.cov(m))
    assert_close(jnp.cov(J(m), J(y)), np.cov(m, y))
    assert_close(jnp.cov(J(m.T), rowvar=False), np.cov(m.T, rowvar=False))
    assert_close(jnp.cov(J(m), bias=True), np.cov(m, bias=True))
    assert_close(jnp.cov(J(m), ddof=2), np.cov(m, ddof=2))
    assert_close(jnp.cov(J(m[0])), np.cov(m[0]))
    for kw in ({"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw},
               {"fweights": fw, "aweights": aw, "ddof": 0}):
        assert_close(jnp.cov(J(m), **{k: J(v) if k != "ddof" else v for k, v in kw.items()}),
                     np.cov(m, **kw))
    assert_close(jnp.corrcoef(J(m)), np.corrcoef(m))
    assert_close(jnp.corrcoef(J(m), J(y)), np.corrcoef(m, y))
    assert_close(jnp.corrcoef(J(m.T), rowvar=False), np.corrcoef(m.T, rowvar=False))
    assert_close(jnp.corrcoef(J(m[0])), np.corrcoef(m[0]))
    check_grads(jnp.cov, (m,), order=2)
    check_grads(jnp.corrcoef, (m,), order=1)
    batch = J(rng.standard_normal((4, 3, 8)))
    assert_vmap_matches_stack(jnp.cov, batch)
    assert_vmap_matches_stack(jnp.corrcoef, batch)
    assert_close(fnx.jit(jnp.corrcoef)(J(m)), np.corrcoef(m))
    with pytest.raises(ValueError, match=r"\(3, 8\).*\(2, 7\)"):
        jnp.cov(J(m), J(y[:, :7]))


# =============================================================================================
# more shape functions and elementwise functions


def test_append_insert_delete(rng):
    J = jnp.asarray
    x = rng.standard_normal((3, 4))
    v = rng.standard_normal((3, 2))
    assert_close(jnp.append(J(x), J(v)), np.append(x, v))
    assert_close(jnp.append(J(x), J(v), axis=1), np.append(x, v, axis=1))
    for obj, vals, axis in ((1, 9.5, None), (-1, J(v[:, 0]), 1), (2, J(x[:1] * 2), 0),
                            ([0, 2, 2], 7.0, 1), ([3, 0], J(v), 1), (slice(0, 4, 2), -1.0, 1),
                            (np.array([4]), J(v[:, 1:2]), 1), (4, J(v.T), 1), (0, J(x[1]), 0)):
        vnp = _np(vals) if hasattr(vals, "shape") else vals
        assert_close(jnp.insert(J(x), obj, vals, axis), np.insert(x, obj, vnp, axis))
    for obj, axis in ((1, None), ([0, 2], 1), (-1, 0), (slice(1, None, 2), 1),
                      (np.array([True, False, True]), 0)):
        assert_close(jnp.delete(J(x), obj, axis), np.delete(x, obj, axis))
    f = lambda t: jnp.insert(jnp.delete(t, [0, 2], axis=1), 1, jnp.sum(t, axis=1), axis=1)
    check_grads(f, (x,), order=1)
    assert_vmap_matches_stack(f, J(rng.standard_normal((2, 3, 4))))
    assert_vmap_matches_stack(lambda t: jnp.append(t, t[:1], axis=0),
                              J(rng.standard_normal((2, 3, 4))))
    with pytest.raises(IndexError, match="size 4"):
        jnp.insert(J(x), 6, 1.0, axis=1)
    with pytest.raises(IndexError, match="size 3"):
        jnp.delete(J(x), [3], axis=0)


def test_rot90_atleast_3d_dstack_splits_unstack_resize(rng):
    J = jnp.asarray
    x = rng.standard_normal((2, 3, 4))
    for k in (-1, 0, 1, 2, 3, 5):
        for axes in ((0, 1), (1, 2), (2, 0), (-1, -2)):
            assert_equal(jnp.rot90(J(x), k, axes), np.rot90(x, k, axes))
    with pytest.raises(ValueError, match="axes"):
        jnp.rot90(J(x), 1, (1, 1))
    with pytest.raises(ValueError, match=r"\(4,\)"):
        jnp.rot90(J(x[0, 0]))
    for a in (J(1.5), J(x[0, 0]), J(x[0]), J(x)):
        assert_equal(jnp.atleast_3d(a), np.atleast_3d(_np(a)))
    assert [r.shape for r in jnp.atleast_3d(J(1.0), J(x[0]))] == [(1, 1, 1), (3, 4, 1)]
    assert_equal(jnp.dstack([J(x[0]), J(x[1])]), np.dstack([x[0], x[1]]))
    assert_equal(jnp.dstack([J(x[0, 0]), J(x[1, 0])]), np.dstack([x[0, 0], x[1, 0]]))
    for f, ref, a, sec in ((jnp.hsplit, np.hsplit, x, 3), (jnp.hsplit, np.hsplit, x[0, 0], [1]),
                           (jnp.vsplit, np.vsplit, x, 2), (jnp.dsplit, np.dsplit, x, [1, 3])):
        got, exp = f(J(a), sec), ref(a, sec)
        assert len(got) == len(exp)
        for g, r in zip(got, exp):
            assert_equal(g, r)
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        jnp.dsplit(J(x[0]), 2)
    # JAX's vsplit (unlike NumPy's) splits a 1-D array along its only axis
    assert [g.tolist() for g in jnp.vsplit(J(x[0, 0]), 2)] == \
        [a.tolist() for a in np.split(x[0, 0], 2)]
    for axis in (0, 1, -1):
        got = jnp.unstack(J(x), axis=axis)
        assert isinstance(got, tuple) and len(got) == x.shape[axis]
        for i, g in enumerate(got):
            assert_equal(g, np.take(x, i, axis))
    for shape in ((5,), (3, 7), (2, 2), 4, (0,)):
        assert_equal(jnp.resize(J(x[0]), shape), np.resize(x[0], shape))
    check_grads(lambda t: jnp.rot90(t, 1, (1, 2)) * jnp.resize(t, (2, 4, 3)), (x,), order=1)
    assert_vmap_matches_stack(lambda t: jnp.rot90(t, 3), J(rng.standard_normal((2, 3, 4))))


def test_new_elementwise(rng):
    J = jnp.asarray
    x, y = rng.standard_normal((3, 4)) * 3, rng.standard_normal(4) * 3
    i = rng.integers(-5, 5, (3, 4))
    assert_close(jnp.fabs(J(x)), np.fabs(x))
    assert_close(jnp.fabs(J(i)), np.fabs(i))
    with fnx.enable_x64(False):
        assert jnp.fabs(J(i.astype(np.int32))).dtype == jnp.float32
    s = np.array([-0.0, 0.0, -np.inf, np.inf, -np.nan, np.nan, -1e-310, 2.0])
    for a in (s, s.astype(np.float32), s.astype(np.float16)):
        assert_equal(jnp.signbit(J(a)), np.signbit(a))
    assert_equal(jnp.signbit(J(i)), np.signbit(i))
    assert_close(jnp.logaddexp2(J(x), J(y)), np.logaddexp2(x, y))
    assert_close(jnp.logaddexp2(J(x * 400), 1000.0), np.logaddexp2(x * 400, 1000.0))
    for a, b in ((x, y), (i, rng.integers(1, 4, 4) * rng.choice([-1, 1], 4))):
        q, r = jnp.divmod(J(a), J(b))
        rq, rr = np.divmod(a, b)
        assert_close(q, rq)
        assert_close(r, rr, atol=1e-12)
    for g, r in zip(jnp.modf(J(x)), np.modf(x)):
        assert_equal(g, r)
    # at infinities and whole negatives fnx computes x - trunc(x) as JAX does (NaN, +0.0),
    # where NumPy gives 0.0 and -0.0 (test_jax_differences compares these with JAX)
    special = np.array([-2.5, -0.0, 0.75, np.inf, -np.inf, 3.0, -3.0])
    frac, whole = jnp.modf(J(special))
    with np.errstate(invalid="ignore"):     # inf - inf
        want = special - np.trunc(special)
    assert_equal(whole, np.trunc(special))
    assert_equal(jnp.signbit(whole), np.signbit(np.trunc(special)))
    assert_equal(frac, want)
    assert_equal(jnp.signbit(frac), np.signbit(want))
    tiny = np.array([5e-324, -3e-310, 2.2250738585072014e-308, 1e300, -0.0, np.nan, np.inf,
                     0.1, -7.0])
    with np.errstate(over="ignore"):
        tiny32 = tiny.astype(np.float32)
    for a in (x, tiny, x.astype(np.float32), tiny32, x.astype(np.float16)):
        (m, e), (rm, re) = jnp.frexp(J(a)), np.frexp(a)
        assert_equal(m, rm)
        assert_equal(e, re)
        assert _np(e).dtype == np.int32
        assert_equal(jnp.ldexp(m, e), a)
    n = rng.integers(-60, 60, (3, 4))
    assert_equal(jnp.ldexp(J(x), J(n)), np.ldexp(x, n))
    assert_equal(jnp.ldexp(J(np.array([1e-300, 1e300, 5e-324])), J(np.array([1900, -1900, 1070]))),
                 np.ldexp([1e-300, 1e300, 5e-324], [1900, -1900, 1070]))
    with pytest.raises(TypeError, match="integer"):
        jnp.ldexp(J(x), J(x))
    check_grads(lambda t: jnp.ldexp(t, J(n)), (x,), order=2)
    check_grads(lambda t: jnp.frexp(t)[0], (x,), order=1)
    check_grads(lambda t: jnp.logaddexp2(t, J(y)), (x,), order=2)
    check_grads(lambda t: jnp.modf(t)[0] + jnp.fabs(t), (x,), order=1)
    a, b = rng.integers(-40, 40, (3, 5)), rng.integers(-40, 40, 5)
    a[0, 0] = b[0] = 0
    assert_equal(jnp.gcd(J(a), J(b)), np.gcd(a, b))
    assert_equal(jnp.lcm(J(a), J(b)), np.lcm(a, b))
    assert_equal(fnx.jit(jnp.gcd)(J(a), J(b)), np.gcd(a, b))
    assert_vmap_matches_stack(jnp.lcm, J(a), J(rng.integers(1, 30, (3, 5))))
    with pytest.raises(TypeError, match="integer"):
        jnp.gcd(J(x), J(y))
    z = np.array([np.inf, -np.inf, np.nan, 1.0, -0.0])
    for f, ref in ((jnp.isposinf, np.isposinf), (jnp.isneginf, np.isneginf),
                   (jnp.isreal, np.isreal), (jnp.iscomplex, np.iscomplex)):
        assert_equal(f(J(z)), ref(z))
        assert_equal(f(J(i)), ref(i))
    assert jnp.isrealobj(J(z)) and not jnp.iscomplexobj(J(z))
    assert bool(jnp.array_equiv(J(y), J(np.stack([y, y])))) is True
    assert bool(jnp.array_equiv(J(y), J(np.stack([y, y + 1])))) is False
    assert bool(jnp.array_equiv(J(y), J(x))) is False   # equal shapes would be needed
    assert bool(jnp.array_equiv(J(y), J(y[:3]))) is False   # not broadcastable


def test_select_piecewise(rng):
    J = jnp.asarray
    x = rng.standard_normal((3, 4))
    conds = [x < -0.5, x > 0.5, x > 0.0]
    choices = [x * 2, x ** 2, -x]
    assert_close(jnp.select([J(c) for c in conds], [J(c) for c in choices], 9.0),
                 np.select(conds, choices, 9.0))
    assert_close(jnp.select([J(c) for c in conds], [1.0, 2.0, 3.0]),
                 np.select(conds, [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="same length"):
        jnp.select([J(conds[0])], [1.0, 2.0])
    funcs = [lambda t: t * 2, lambda t: jnp.sin(t), 4.0]
    for fl, cl in ((funcs, conds), (funcs + [lambda t: -t], conds), ([funcs[1], 1.5], [conds[0]])):
        ref_cl = cl if isinstance(cl, list) else [cl]
        ref = np.piecewise(x, ref_cl, [np.sin if f is funcs[1] else
                                       (lambda t: t * 2) if f is funcs[0] else
                                       (lambda t: -t) if callable(f) else f for f in fl])
        got = jnp.piecewise(J(x), [J(c) for c in cl] if isinstance(cl, list) else J(cl), fl)
        assert_close(got, ref)
    f = lambda t: jnp.piecewise(t, [t < 0], [lambda u: u ** 2, lambda u: jnp.exp(u)])
    check_grads(f, (x,), order=2)
    assert_vmap_matches_stack(f, J(rng.standard_normal((2, 3, 4))))
    g = lambda t: jnp.select([t < 0, t > 1], [t ** 3, jnp.sin(t)], t)
    check_grads(g, (x,), order=2)
    assert_close(fnx.jit(g)(J(x)), g(J(x)))
    with pytest.raises(ValueError, match="3 functions for 1"):
        jnp.piecewise(J(x), [J(conds[0])], funcs)


def test_convolve_correlate(rng):
    J = jnp.asarray
    for n, m in ((7, 3), (3, 7), (5, 5), (6, 1), (1, 4), (6, 4)):
        a, v = rng.standard_normal(n), rng.standard_normal(m)
        for mode in ("full", "same", "valid"):
            assert_close(jnp.convolve(J(a), J(v), mode), np.convolve(a, v, mode))
            assert_close(jnp.correlate(J(a), J(v), mode), np.correlate(a, v, mode))
    a, v = rng.standard_normal(6), rng.standard_normal(3)
    assert_close(jnp.correlate(J(a), J(v)), np.correlate(a, v))   # valid by default
    i, k = rng.integers(-5, 5, 6), rng.integers(-5, 5, 3)
    assert_equal(jnp.convolve(J(i), J(k)), np.convolve(i, k))
    check_grads(lambda p, q: jnp.convolve(p, q, "same"), (a, v), order=2)
    check_grads(lambda p, q: jnp.correlate(p, q, "full"), (a, v), order=1)
    assert_vmap_matches_stack(lambda p, q: jnp.convolve(p, q), J(rng.standard_normal((3, 6))),
                              J(rng.standard_normal((3, 3))))
    assert_close(fnx.jit(jnp.correlate)(J(a), J(v)), np.correlate(a, v))
    with pytest.raises(fnx.core.errors.ShapeError, match=r"\(2, 3\)"):
        jnp.convolve(J(a), J(rng.standard_normal((2, 3))))
    with pytest.raises(ValueError, match="mode"):
        jnp.convolve(J(a), J(v), "bogus")


def test_einsum_interleaved_sublists(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3, 5))
    assert_close(jnp.einsum(a, [0, 1], b, [2, 1, 3], [0, 2, 3]),
                 np.einsum(a, [0, 1], b, [2, 1, 3], [0, 2, 3]))
    assert_close(jnp.einsum(a, [0, 1], b, [2, 1, 3]), np.einsum(a, [0, 1], b, [2, 1, 3]))
    assert_close(jnp.einsum(b, [Ellipsis, 3], [Ellipsis]), np.einsum(b, [Ellipsis, 3], [Ellipsis]))


def test_size_along_axes_as_jax():
    x = jnp.ones((2, 3, 4))
    assert (jnp.size(x), jnp.size(x, 1), jnp.size(x, -1), jnp.size(x, (0, 2))) == (24, 3, 4, 8)
    assert jnp.size(3.0) == 1
    with pytest.raises(jnp.AxisError):
        jnp.size(x, 3)


def test_polyval_vander(rng):
    J = jnp.asarray
    p, x = rng.standard_normal(4), rng.standard_normal((2, 5))
    assert_close(jnp.polyval(J(p), J(x)), np.polyval(p, x))
    assert_close(jnp.polyval(J(p), 1.5), np.polyval(p, 1.5))
    pi, xi = rng.integers(-3, 3, 3), rng.integers(-3, 3, 4)
    assert_equal(jnp.polyval(J(pi), J(xi)), np.polyval(pi, xi))
    check_grads(jnp.polyval, (p, x), order=2)
    # coefficients along the first axis, the others broadcast with x (ODE solvers' dense output)
    pm = rng.standard_normal((5, 2, 1))
    assert_close(jnp.polyval(J(pm), J(x)), np.polyval(pm, x))
    with pytest.raises(fnx.core.errors.ShapeError, match="leading axis"):
        jnp.polyval(J(1.0), J(x))
    assert_vmap_matches_stack(jnp.polyval, J(rng.standard_normal((3, 4))),
                              J(rng.standard_normal((3, 5))))
    v = rng.standard_normal(4)
    for N in (None, 1, 3, 6):
        for inc in (False, True):
            assert_close(jnp.vander(J(v), N, inc), np.vander(v, N, inc))
    assert_equal(jnp.vander(J(xi)), np.vander(xi))
    assert jnp.vander(J(v), 0).shape == (4, 0)
    check_grads(lambda t: jnp.vander(t, 5), (v,), order=2)
    assert_vmap_matches_stack(lambda t: jnp.vander(t, 3), J(rng.standard_normal((2, 4))))
    with pytest.raises(fnx.core.errors.ShapeError, match=r"\(2, 5\)"):
        jnp.vander(J(x))


def test_vecdot_matvec_vecmat(rng):
    J = jnp.asarray
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4))
    assert_close(jnp.vecdot(J(a), J(b)), np.vecdot(a, b))
    assert_close(jnp.vecdot(J(a), J(a), axis=1), np.vecdot(a, a, axis=1))
    c = rng.standard_normal((3, 1))
    assert_close(jnp.vecdot(J(a), J(c), axis=-2), np.vecdot(a, c, axis=-2))
    m, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 1, 4))
    assert_close(jnp.matvec(J(m), J(v)), np.matvec(m, v))
    w = rng.standard_normal((3,))
    assert_close(jnp.vecmat(J(w), J(m)), np.vecmat(w, m))
    u = rng.standard_normal((5, 1, 3))
    assert_close(jnp.vecmat(J(u), J(m)), np.vecmat(u, m))
    check_grads(jnp.vecdot, (a, b), order=2)
    check_grads(jnp.matvec, (m, v), order=1)
    check_grads(jnp.vecmat, (u, m), order=1)
    assert_vmap_matches_stack(jnp.matvec, J(m), J(rng.standard_normal((2, 4))))
    with pytest.raises(fnx.core.errors.ShapeError, match=r"\(2, 3, 4\).*\(3, 5\)"):
        jnp.vecdot(J(a), J(rng.standard_normal((3, 5))))
    with pytest.raises(fnx.core.errors.ShapeError):
        jnp.matvec(J(m), J(rng.standard_normal(3)))


# ---------------------------------------------------------------------------------------------
# What JAX programs do with arrays: shifts, formatting, NumPy functions on fnx arrays, and the
# static-size forms of nonzero/where/argwhere/flatnonzero/unique under jit (against JAX)


def test_shift_operators_match_jax(rng):
    jax = pytest.importorskip("jax")
    for dtype in (np.int8, np.int32, np.uint8, np.uint32):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=20, dtype=dtype, endpoint=True)
        s = rng.integers(0, 8 * np.dtype(dtype).itemsize + 2, size=20).astype(dtype)
        xf, xj = jnp.asarray(x), jax.numpy.asarray(x)
        assert_close(xf << s, xj << s)
        assert_close(xf >> s, xj >> s)
        assert_close(xf << 3, xj << 3)
        assert_close(2 >> jnp.asarray(s[:3] % 2), 2 >> (s[:3] % 2))
        assert_close(fnx.jit(lambda a, b: a >> b)(x, s), xj >> s)


def test_format_of_a_zero_d_array():
    loss = jnp.mean(jnp.asarray([0.25, 0.5]))
    assert f"{loss:.4f}" == "0.3750" and f"{jnp.int32(7) * jnp.ones((), jnp.int32):03d}" == "007"
    assert f"{jnp.arange(2)}" == str(np.arange(2))


@pytest.mark.parametrize("name", ["mean", "sum", "std", "var", "prod", "max", "min", "argmax",
                                  "argmin", "any", "all", "cumsum", "cumprod", "round",
                                  "amax", "amin"])
def test_numpy_functions_on_fnx_arrays(rng, name):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    got = getattr(np, name)(jnp.asarray(x))
    assert_close(got, getattr(np, name)(x), rtol=1e-5, atol=1e-6)
    if name != "round":
        got = getattr(np, name)(jnp.asarray(x), axis=1)
        assert_close(got, getattr(np, name)(x, axis=1), rtol=1e-5, atol=1e-6)


def test_static_size_nonzero_forms_match_jax(rng):
    jax = pytest.importorskip("jax")
    jn = jax.numpy
    x = (rng.standard_normal((4, 5)) > 0.3).astype(np.float32) * rng.standard_normal((4, 5))
    for size, fill in [(3, 0), (12, -1), (25, (-1, -2))]:
        got = fnx.jit(lambda a: jnp.nonzero(a, size=size, fill_value=fill))(x)
        for g, w in zip(got, jn.nonzero(x, size=size, fill_value=fill)):
            assert_close(g, w)
    f = -1
    assert_close(fnx.jit(lambda a: jnp.where(a > 0, size=6, fill_value=f)[1])(x),
                 jn.where(x > 0, size=6, fill_value=f)[1])
    assert_close(fnx.jit(lambda a: jnp.argwhere(a, size=7, fill_value=f))(x),
                 jn.argwhere(x, size=7, fill_value=f))
    assert_close(fnx.jit(lambda a: jnp.flatnonzero(a, size=30))(x), jn.flatnonzero(x, size=30))
    v = rng.integers(0, 5, size=9).astype(np.float32)
    v[2] = np.nan
    for size, fill in [(3, None), (8, None), (8, 7.0)]:
        assert_close(fnx.jit(lambda a: jnp.unique(a, size=size, fill_value=fill))(v),
                     jn.unique(v, size=size, fill_value=fill))


PAD_CASES = [("constant", {}), ("constant", dict(constant_values=((1, 2), (3, 4)))),
             ("edge", {}), ("reflect", {}), ("symmetric", {}), ("wrap", {}),
             ("linear_ramp", dict(end_values=(1, -2))), ("maximum", {}), ("minimum", {}),
             ("mean", {}), ("median", {}), ("mean", dict(stat_length=2)),
             ("maximum", dict(stat_length=((1, 2), (3, 1))))]


@pytest.mark.parametrize("mode, kwargs", PAD_CASES, ids=[f"{m}{i}" for i, (m, _) in
                                                        enumerate(PAD_CASES)])
def test_pad_every_mode_matches_jax(rng, mode, kwargs):
    jax = pytest.importorskip("jax")
    x = rng.standard_normal((3, 4)).astype(np.float32)
    xi = rng.integers(-9, 9, size=(3, 4)).astype(np.int32)
    for a in (x, xi):
        for pw in [((2, 5), (1, 3)), 2, ((7, 0), (0, 9))]:
            got = jnp.pad(a, pw, mode=mode, **kwargs)
            want = jax.numpy.pad(a, pw, mode=mode, **kwargs)
            assert got.dtype == want.dtype
            assert_close(got, want, rtol=1e-6, atol=1e-6)
    f = lambda v: jnp.sum(jnp.pad(v, 2, mode=mode, **kwargs) ** 2)              # noqa: E731
    f_ref = lambda v: jax.numpy.sum(jax.numpy.pad(v, 2, mode=mode, **kwargs) ** 2)  # noqa
    assert_close(fnx.jit(fnx.grad(f))(x), jax.grad(f_ref)(x), rtol=1e-5, atol=1e-5)


def test_vectorize_matches_jax(rng):
    jax = pytest.importorskip("jax")
    jn = jax.numpy
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    m = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    assert_close(fnx.jit(jnp.vectorize(jnp.dot, signature="(n),(n)->()"))(a, b),
                 jn.vectorize(jn.dot, signature="(n),(n)->()")(a, b), rtol=1e-5)
    assert_close(jnp.vectorize(lambda x, y: jnp.where(x > y, x, 2 * y))(a, b[None]),
                 jn.vectorize(lambda x, y: jn.where(x > y, x, 2 * y))(a, b[None]))
    assert_close(jnp.vectorize(lambda x, p: x ** p, excluded={1})(a, 3),
                 jn.vectorize(lambda x, p: x ** p, excluded={1})(a, 3), rtol=1e-6)
    sig = "(n,n)->(n,n),()"
    got = jnp.vectorize(lambda x: (x @ x, jnp.trace(x)), signature=sig)(m)
    want = jn.vectorize(lambda x: (x @ x, jn.trace(x)), signature=sig)(m)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-5, atol=1e-5)
    g = fnx.grad(lambda x: jnp.sum(jnp.vectorize(jnp.sin)(x)))(a)
    assert_close(g, np.cos(a), rtol=1e-6)


@pytest.mark.parametrize("sa,sb", [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)),
    ((6, 1, 2, 3), (5, 3, 4)), ((1, 1, 2, 3), (1, 3, 4)), ((7, 5, 2, 3), (3,)),
    ((4, 1, 2, 3), (4, 5, 3, 4))])
def test_matmul_broadcasts_as_numpy_with_its_gradients(sa, sb, rng):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    np.testing.assert_allclose(np.asarray(jnp.matmul(a, b)), np.matmul(a, b), rtol=1e-12)
    ga, gb = fnx.grad(lambda a, b: jnp.sum(jnp.matmul(a, b) ** 2), argnums=(0, 1))(a, b)
    c = 2 * np.matmul(a, b)
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    c2 = c.reshape(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1]))
    ref_a = np.matmul(c2, np.swapaxes(b2, -1, -2))
    ref_b = np.matmul(np.swapaxes(a2, -1, -2), c2)
    ref_a = ref_a.reshape((-1,) + a2.shape).sum(0) if ref_a.ndim > a2.ndim else ref_a
    for axis, size in enumerate(a2.shape[:-2]):
        if size == 1:
            ref_a = ref_a.sum(axis, keepdims=True)
    ref_b = ref_b.sum(tuple(range(ref_b.ndim - b2.ndim))) if ref_b.ndim > b2.ndim else ref_b
    for axis, size in enumerate(b2.shape[:-2]):
        if size == 1:
            ref_b = ref_b.sum(axis, keepdims=True)
    np.testing.assert_allclose(np.asarray(ga), ref_a.reshape(sa), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gb), ref_b.reshape(sb), rtol=1e-10)


def test_matmul_of_a_batch_by_a_matrix_is_one_product_and_so_is_its_weight_gradient():
    x, w = np.ones((8, 16, 32), np.float32), np.ones((32, 4), np.float32)
    text = str(fnx.make_jaxpr(fnx.grad(lambda x, w: jnp.sum(jnp.matmul(x, w)), argnums=1))(x, w))
    assert "dimension_numbers=(([0, 1], [0, 1]), ([], []))" in text, text
    assert "broadcast_in_dim b" not in text and text.count("dot_general") == 2

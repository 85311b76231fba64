"""Programs whose results once differed from JAX's without an error, each run by fnx and by
JAX on the CPU with fresh random inputs: values, dtypes, shapes and weak types must agree, and
where JAX raises, fnx raises an error of the same builtin class."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def assert_like_jax(got, want, rtol=1e-6, atol=1e-6):
    """fnx's result ``got`` has JAX's ``want``'s structure, dtypes, shapes, weak types and
    values (NaN where JAX has NaN)."""
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (g.dtype, g.shape, w.dtype, w.shape)
        assert bool(getattr(g, "weak_type", False)) == bool(w.weak_type), (g, w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def both(name, *args, **kwargs):
    """``name`` (a dotted path under fnx and jax) applied to ``args`` by both."""
    f, j = fnx, jax
    for part in name.split("."):
        f, j = getattr(f, part), getattr(j, part)
    return f(*args, **kwargs), j(*args, **kwargs)


@pytest.fixture(autouse=True)
def _jax_as_fnx(jax_x64_as_fnx):
    """JAX runs with x64 set as fnx's (on in the suite)."""


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """fnx and JAX both with x64 off, then both with it on."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    with fnx.enable_x64(request.param):
        yield request.param
    jax.config.update("jax_enable_x64", old)


# ---------------------------------------------------------------------------------------------
# index dtypes: JAX's indices are int64 with x64 on


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin", "argsort",
                                  "argwhere", "flatnonzero", "nonzero"])
def test_index_results_have_jax_s_dtype(x64, rng, name):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[x < -1] = 0
    assert_like_jax(*both(f"numpy.{name}", x))
    if name in ("argmax", "argmin", "argsort"):
        assert_like_jax(*both(f"numpy.{name}", x, axis=0))
    if name == "nonzero":
        assert_like_jax(*both("numpy.nonzero", x, size=14, fill_value=-1))


def test_other_index_producers_have_jax_s_dtype(x64, rng):
    x = rng.integers(0, 5, 7).astype(np.int32)
    assert_like_jax(*both("numpy.lexsort", (x, x[::-1])))
    assert_like_jax(*both("numpy.bincount", x))
    assert_like_jax(*both("numpy.unique", x, return_index=True, return_inverse=True,
                          return_counts=True))
    assert_like_jax(*both("numpy.tril_indices", 4, 1))
    assert_like_jax(*both("numpy.diag_indices", 3))
    assert jnp.argpartition(x, 3).dtype == jjnp.argpartition(x, 3).dtype   # top_k's int32


# ---------------------------------------------------------------------------------------------
# quantiles, linspace, histograms


def test_median_is_nan_where_a_slice_has_nan_and_refuses_complex(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 0], x[1, 2] = np.nan, np.inf
    for axis in (None, 0, 1, (0, 1)):
        assert_like_jax(*both("numpy.median", x, axis=axis))
        assert_like_jax(*both("numpy.median", x, axis=axis, keepdims=True))
    assert_like_jax(*both("numpy.median", rng.integers(-9, 9, (5, 2)).astype(np.int32), axis=0))
    with pytest.raises(ValueError):
        jjnp.median(x.astype(np.complex64))
    with pytest.raises(ValueError):
        jnp.median(x.astype(np.complex64))


def test_nanquantile_keeps_an_infinite_end(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 0], x[1, 0], x[2, 1] = np.nan, -np.inf, np.inf
    for name in ("nanmedian", "median"):
        assert_like_jax(*both(f"numpy.{name}", x, axis=0))
    assert_like_jax(*both("numpy.nanquantile", x, np.float32(0.3), axis=0))
    assert_like_jax(*both("numpy.quantile", x, np.array([0.1, 0.7], np.float32), axis=1))


def test_linspace_rounds_as_jax_so_histogram_bins_agree(rng):
    for lo, hi in [(-5, 5), (-3.3, 7.1), (0.0, 1.0)]:
        for num in (0, 1, 2, 7, 11):
            for endpoint in (True, False):
                got, want = both("numpy.linspace", lo, hi, num, endpoint=endpoint,
                                 retstep=True)
                assert_like_jax(got, want, rtol=1e-6, atol=1e-6)
    ints = rng.integers(-5, 6, (3, 4)).astype(np.int32)
    ints[0, :2] = -5, 5
    assert_like_jax(*both("numpy.histogram", ints), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# reductions' keywords, in JAX's positional order


def test_reductions_take_where_initial_and_out_positions_as_jax(x64, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 1] = np.nan
    where = rng.random((3, 4)) > 0.4
    where[:, 0] = True
    for name in ("sum", "prod", "nansum", "nanprod"):
        assert_like_jax(*both(f"numpy.{name}", x, 1, None, None, True, 2.0, where), rtol=1e-5)
        assert_like_jax(*both(f"numpy.{name}", np.zeros((0, 3), np.float32), initial=3))
    for name in ("var", "std", "nanvar", "nanstd", "mean", "nanmean"):
        assert_like_jax(*both(f"numpy.{name}", x, 0, where=where), rtol=1e-5)
    assert_like_jax(*both("numpy.var", x, 1, None, None, 1, True), rtol=1e-5)
    assert_like_jax(*both("numpy.std", x, correction=1), rtol=1e-5)
    for name in ("any", "all"):
        assert_like_jax(*both(f"numpy.{name}", x > 0, 0, None, True, where=where))
    assert_like_jax(*both("numpy.max", np.zeros((0, 3), np.float32), 0, initial=2.0))
    assert_like_jax(*both("numpy.argmax", x[1:], 1, None, True))
    assert_like_jax(*both("numpy.average", x[1:], 1, None, True, True), rtol=1e-5)
    assert_like_jax(*both("numpy.average", x[1:], 1, x[2], True, True), rtol=1e-5)
    assert_like_jax(*both("numpy.mean", x[1:], 0, np.int32))


def test_complex_variances_are_real_and_covariances_hermitian(x64, rng):
    z = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(np.complex64)
    for name in ("nanvar", "nanstd", "var", "std"):
        assert_like_jax(*both(f"numpy.{name}", z, 1), rtol=1e-5)
    assert_like_jax(*both("numpy.cov", z), rtol=1e-5, atol=1e-6)
    assert_like_jax(*both("numpy.corrcoef", z), rtol=1e-5, atol=1e-6)
    assert_like_jax(*both("numpy.cov", z.real, dtype=np.float32), rtol=1e-5, atol=1e-6)


def test_stacking_takes_dtype(x64, rng):
    parts = [rng.standard_normal(3).astype(np.float32) for _ in range(2)]
    for name in ("stack", "hstack", "vstack", "dstack", "concatenate"):
        assert_like_jax(*both(f"numpy.{name}", parts, dtype=np.float16), rtol=1e-3)


# ---------------------------------------------------------------------------------------------
# elementwise edges: the sign of zero, NaN, infinities, dtypes


def test_sign_of_zero_and_nan_as_jax():
    x = np.array([-0.0, 0.0, -0.5, 0.5, -2.5, 2.5, 1.5, -1.5, np.nan, np.inf, -3.0], np.float32)
    for name in ("sign", "rint", "round", "trunc", "modf"):
        for got, want in zip(_leaves(getattr(jnp, name)(x)), _leaves(getattr(jjnp, name)(x))):
            np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        got = fnx.jit(getattr(jnp, name))(x)
        np.testing.assert_array_equal(np.signbit(np.asarray(_leaves(got)[0])),
                                      np.signbit(_leaves(getattr(jjnp, name)(x))[0]))
    assert_like_jax(*both("numpy.heaviside", x, np.float32(0.5)))


def test_cumulative_prod_keeps_small_integers_and_sort_complex_takes_the_narrow_complex(x64):
    for dt in (np.int8, np.uint8, np.int32, np.bool_):
        a = np.arange(1, 5).astype(dt)
        assert_like_jax(*both("numpy.cumulative_prod", a))
        assert_like_jax(*both("numpy.cumulative_sum", a, include_initial=True))
    assert_like_jax(*both("numpy.sort_complex", np.array([3, 1, 2], np.int32)))


def test_like_functions_keep_a_python_scalar_s_weak_type(x64):
    for v in (3, 2.5, 1 + 2j):
        for name in ("zeros_like", "ones_like", "empty_like"):
            assert_like_jax(*both(f"numpy.{name}", v))
        assert_like_jax(*both("numpy.full_like", v, 7))
    assert_like_jax(*both("numpy.full_like", np.ones(2, np.float32), 7))
    assert_like_jax(*both("numpy.angle", 3))


@pytest.mark.parametrize("call", [
    lambda m, x: m.argmax(x.astype(np.complex64)),
    lambda m, x: m.fabs(x.astype(np.complex64)),
    lambda m, x: m.isposinf(x.astype(np.complex64)),
    lambda m, x: m.signbit(x.astype(np.complex64)),
    lambda m, x: m.sign(x > 0),
    lambda m, x: m.round(x > 0),
    lambda m, x: m.ediff1d(x > 0),
    lambda m, x: m.std(x, dtype=np.int32),
])
def test_errors_where_jax_raises(rng, call):
    x = rng.standard_normal(5).astype(np.float32)
    with pytest.raises(Exception) as jax_error:
        call(jjnp, x)
    builtin = next(c for c in type(jax_error.value).__mro__ if c.__module__ == "builtins")
    with pytest.raises(builtin) as fnx_error:
        call(jnp, x)
    assert isinstance(fnx_error.value, fnx.errors.FnxError)


def test_trapezoid_is_nan_next_to_an_infinity_as_jax(x64, rng):
    y = rng.standard_normal((3, 4)).astype(np.float32)
    y[0, 1], y[1, 0] = np.inf, -np.inf
    for axis in (0, -1):
        assert_like_jax(*both("numpy.trapezoid", y, axis=axis), rtol=1e-5)
        assert_like_jax(*both("numpy.trapezoid", y, dx=0.5, axis=axis), rtol=1e-5)
    assert_like_jax(*both("numpy.trapezoid", np.arange(5, dtype=np.int32)))


def test_python_ints_wrap_into_unsigned_and_go_straight_to_the_float(x64, rng):
    u = rng.integers(0, 250, 6).astype(np.uint8)
    for name in ("add", "subtract", "multiply", "maximum", "minimum", "remainder"):
        assert_like_jax(*both(f"numpy.{name}", u, -3))
    for name in ("divide", "true_divide", "arctan2", "logaddexp"):
        assert_like_jax(*both(f"numpy.{name}", u, -3), rtol=1e-6)
        assert_like_jax(*both(f"numpy.{name}", -3, u), rtol=1e-6)

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

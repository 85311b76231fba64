"""Values at the edges where fnx once differed from JAX, checked against JAX on the CPU:
abs's slope at 0, softmax over the elements ``where`` selects, lax.round's tie-breaking."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.nn as nn
import fnx.numpy as jnp

pytestmark = pytest.mark.x32


def test_abs_slope_at_zero_infinities_and_nan_is_jax_s():
    x = np.array([-1.0, 0.0, -0.0, 2.0, np.inf, -np.inf, np.nan], np.float32)
    got = fnx.grad(lambda v: jnp.abs(v).sum())(jnp.asarray(x))
    want = jax.grad(lambda v: jjnp.abs(v).sum())(jjnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert fnx.grad(jnp.abs)(0.0) == 1.0


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_where_selects_elements_as_in_jax(rng, name):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    where = rng.random((3, 5)) > 0.3
    where[:, 0] = True
    for axis in (-1, 0):
        got = getattr(nn, name)(jnp.asarray(x), axis=axis, where=jnp.asarray(where))
        want = getattr(jax.nn, name)(jjnp.asarray(x), axis=axis, where=jjnp.asarray(where))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    g = fnx.grad(lambda v: getattr(nn, name)(v, where=jnp.asarray(where))[where].sum())(
        jnp.asarray(x))
    w = jax.grad(lambda v: getattr(jax.nn, name)(v, where=jjnp.asarray(where))[where].sum())(
        jjnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", [0, 1])
def test_lax_round_breaks_ties_as_asked(method):
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4, -3.7], np.float32)
    got = lax.round(jnp.asarray(x), lax.RoundingMethod(method))
    want = jax.lax.round(jjnp.asarray(x), jax.lax.RoundingMethod(method))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(fnx.jit(lambda v: lax.round(v, method))(x)),
                                  np.asarray(want))


def test_arange_with_a_lone_stop_and_a_step_and_var_without_freedom(rng):
    np.testing.assert_array_equal(np.asarray(jnp.arange(9, step=4)),
                                  np.asarray(jjnp.arange(9, step=4)))
    x = rng.standard_normal(4)
    assert np.isnan(float(jnp.var(jnp.asarray(x), ddof=4))) and \
        np.isnan(float(jjnp.var(jjnp.asarray(x), ddof=4)))

"""fnx.experimental.jet against JAX's jet on the CPU: polynomial, exp, sin, tanh and log
programs (elementwise primitives, products, reductions) to order 3 with fresh random inputs
and series; two arguments, pytree outputs, jit, and integer outputs."""
import numpy as np
import pytest

import fnx
import fnx.numpy as fjnp
from fnx.experimental.jet import jet

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax.experimental.jet import jet as jax_jet  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

PROGRAMS = {
    "polynomial": lambda np_, w: lambda x: 3 * x ** 3 - 2 * x * x + x / 4 - 1,
    "exp": lambda np_, w: lambda x: np_.exp(x) * np_.exp(-2 * x),
    "sin": lambda np_, w: lambda x: np_.sin(x) + np_.cos(2 * x),
    "tanh": lambda np_, w: lambda x: np_.sum(np_.tanh(np_.dot(x, w)) ** 2, axis=0),
    "log": lambda np_, w: lambda x: np_.log(x) / x + np_.log1p(x).max(),
    "reductions": lambda np_, w: lambda x: np_.mean(x * x) - np_.max(x) + np_.cumsum(x),
    "matmul": lambda np_, w: lambda x: (x[:, None] * w) @ (w.T @ x),
}


def _compare(got, want, rtol=1e-9):
    (p, s), (wp, ws) = got, want
    np.testing.assert_allclose(p, wp, rtol=rtol)
    assert len(s) == len(ws)
    for a, b in zip(s, ws):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("order", [1, 2, 3])
def test_matches_jax(name, order, rng):
    x, w = rng.uniform(0.5, 1.5, 4), rng.standard_normal((4, 3))
    terms = [rng.standard_normal(4) for _ in range(order)]
    _compare(jet(PROGRAMS[name](fjnp, w), (x,), (terms,)),
             jax_jet(PROGRAMS[name](jjnp, w), (x,), (terms,)))


def test_two_arguments_and_jit(rng):
    x, y = rng.uniform(0.5, 1.5, 3), rng.uniform(0.5, 1.5, 3)
    sx, sy = [rng.standard_normal(3) for _ in range(3)], [rng.standard_normal(3) for _ in range(3)]

    def f(np_):
        return lambda x, y: {"a": np_.sin(x) * y, "b": np_.exp(x - y) / y}
    got = fnx.jit(lambda x, y, sx, sy: jet(f(fjnp), (x, y), (sx, sy)))(x, y, sx, sy)
    want = jax_jet(f(jjnp), (x, y), (sx, sy))
    for key in ("a", "b"):
        _compare((got[0][key], got[1][key]), (want[0][key], want[1][key]))


def test_products_over_axes_match_repeated_derivatives(rng):
    # JAX's jet has no rule for reduce_prod; along x(t) = x + t v the derivatives of prod(x)
    # are sums over index subsets, checked here to order 2
    x, v = rng.uniform(0.5, 1.5, 4), rng.standard_normal(4)
    _, (d1, d2) = jet(fjnp.prod, (x,), ((v, np.zeros(4)),))
    p = np.prod(x)
    np.testing.assert_allclose(d1, p * np.sum(v / x), rtol=1e-12)
    np.testing.assert_allclose(d2, p * (np.sum(v / x) ** 2 - np.sum((v / x) ** 2)), rtol=1e-12)


def test_series_of_a_taylor_curve_match_derivatives(rng):
    # along x(t) = x + t, the series are the derivatives: of sin, (cos, -sin, -cos)
    x = rng.uniform(-2, 2, 5)
    y, (d1, d2, d3) = jet(fjnp.sin, (x,), ((np.ones(5), np.zeros(5), np.zeros(5)),))
    np.testing.assert_allclose(d1, np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(d2, -np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(d3, -np.cos(x), rtol=1e-12)


def test_integer_outputs_have_zero_series_and_bad_series_are_refused(rng):
    x = rng.standard_normal(3)
    _, series = jet(lambda x: (fjnp.argmax(x), fjnp.sum(x)), (x,), ((x, x),))
    np.testing.assert_array_equal(series[0][0], 0)
    np.testing.assert_allclose(series[1][1], x.sum())
    with pytest.raises(ValueError, match="same length"):
        jet(fjnp.sin, (x, x), ((x,), (x, x)))
    with pytest.raises(ValueError, match="shape"):
        jet(fjnp.sin, (x,), ((x[:2],),))

"""fnx.lax's composed special functions (Bessel, zeta, polygamma, incomplete gamma and beta)
against JAX on CPU (SciPy where JAX takes seconds to compile) with fresh random inputs: values
and gradients."""
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx.test_util import assert_close

jax = pytest.importorskip("jax")
scipy_special = pytest.importorskip("scipy.special")
jl = jax.lax


pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _close_to_jax(ours, theirs, args, rtol):
    got = np.asarray(ours(*map(jnp.asarray, args)))
    want = np.asarray(theirs(*args))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300)


def test_bessel_i0e_i1e_match_jax(rng):
    x = np.concatenate([rng.uniform(-40, 40, 40), [0.0, 29.99, 30.0, 30.01, -500.0]])
    for name in ("bessel_i0e", "bessel_i1e"):
        _close_to_jax(getattr(lax, name), getattr(jl, name), (x,), 1e-13)
        g = fnx.grad(lambda v: getattr(lax, name)(v).sum())(jnp.asarray(x))
        assert_close(g, np.asarray(jax.grad(lambda v: getattr(jl, name)(v).sum())(x)),
                     rtol=1e-12, atol=1e-14)


def test_zeta_polygamma_match_jax(rng):
    x, q = rng.uniform(1.1, 8, 30), rng.uniform(0.05, 6, 30)
    _close_to_jax(lax.zeta, jl.zeta, (x, q), 1e-13)
    # JAX has no derivative rule for zeta; d/dq zeta(x, q) = -x zeta(x + 1, q)
    g = fnx.grad(lambda v: lax.zeta(jnp.asarray(x), v).sum())(jnp.asarray(q))
    assert_close(g, -x * np.asarray(jl.zeta(x + 1, q)), rtol=1e-12)
    m = rng.integers(0, 5, 30).astype(float)
    _close_to_jax(lax.polygamma, jl.polygamma, (m, q), 1e-10)
    g = fnx.grad(lambda v: lax.polygamma(jnp.asarray(m), v).sum())(jnp.asarray(q))
    assert_close(g, np.asarray(jax.grad(lambda v: jl.polygamma(m, v).sum())(q)), rtol=1e-11)
    assert np.isnan(np.asarray(lax.zeta(0.5, 1.0))) and np.isinf(np.asarray(lax.zeta(1.0, 1.0)))


def test_incomplete_gamma_family_matches_jax(rng):
    a, x = rng.uniform(0.1, 20, 30), rng.uniform(0.01, 40, 30)
    for name in ("igamma", "igamma_grad_a"):
        _close_to_jax(getattr(lax, name), getattr(jl, name), (a, x), 1e-11)
    # JAX takes seconds to compile igammac and random_gamma_grad: SciPy's gammaincc, and the
    # implicit derivative -(dP/da) / (dP/dx) from JAX's pieces, are the oracles here
    assert_close(lax.igammac(jnp.asarray(a), jnp.asarray(x)), scipy_special.gammaincc(a, x),
                 rtol=1e-11, atol=1e-300)
    # gradients against JAX's own derivative pieces (jax.grad of igamma compiles for seconds)
    da = np.asarray(jl.igamma_grad_a(a, x))
    dx = np.exp((a - 1) * np.log(x) - x - scipy_special.gammaln(a))
    for name, sign in (("igamma", 1.0), ("igammac", -1.0)):
        g = fnx.grad(lambda p, y: getattr(lax, name)(p, y).sum(), (0, 1))(
            jnp.asarray(a), jnp.asarray(x))
        assert_close(g[0], sign * da, rtol=1e-10, atol=1e-14)
        assert_close(g[1], sign * dx, rtol=1e-10, atol=1e-14)
    assert_close(lax.random_gamma_grad(jnp.asarray(a), jnp.asarray(x)), -da / dx, rtol=1e-10)
    assert np.asarray(lax.igamma(2.0, 0.0)) == 0 and np.isnan(np.asarray(lax.igamma(-1.0, 1.0)))


def test_betainc_matches_jax(rng):
    a, b, x = rng.uniform(0.1, 10, 30), rng.uniform(0.1, 10, 30), rng.uniform(0, 1, 30)
    _close_to_jax(lax.betainc, jl.betainc, (a, b, x), 1e-11)
    g = fnx.grad(lambda v: lax.betainc(jnp.asarray(a), jnp.asarray(b), v).sum())(jnp.asarray(x))
    assert_close(g, np.asarray(jax.grad(lambda v: jl.betainc(a, b, v).sum())(x)), rtol=1e-10)
    assert np.asarray(lax.betainc(2.0, 3.0, jnp.array([0.0, 1.0]))).tolist() == [0.0, 1.0]


@pytest.mark.x32
def test_special_functions_float32_match_jax(rng):
    a, x = rng.uniform(0.5, 10, 20).astype(np.float32), rng.uniform(0.1, 20, 20).astype(np.float32)
    for name in ("igamma", "bessel_i0e"):
        args = (a, x) if name != "bessel_i0e" else (x,)
        out = getattr(lax, name)(*map(jnp.asarray, args))
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), np.asarray(getattr(jl, name)(*args)),
                                   rtol=2e-5, atol=1e-6)


def test_zeta_polygamma_edges_match_jax(rng):
    """One implementation serves lax and scipy.special, with XLA's values where q <= 0 (whole
    x only, poles at whole q), x <= 1 and non-integer orders."""
    import jax.scipy.special as jsp
    from fnx.scipy import special
    x = np.concatenate([[-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0], rng.uniform(1, 6, 4)])
    q = np.concatenate([[-7.0, -3.0, -2.5, -1.0, 0.0, 1e-3, 1.0], rng.uniform(-8, 4, 5)])
    x, q = (a.ravel() for a in np.meshgrid(x, q))
    for ours, theirs in ((lax.zeta, jl.zeta), (special.zeta, jsp.zeta)):
        np.testing.assert_allclose(np.asarray(ours(jnp.asarray(x), jnp.asarray(q))),
                                   np.asarray(theirs(x, q)), rtol=1e-11, equal_nan=True)
    m = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0])
    y = np.concatenate([[-2.0, -1.5, 0.0], rng.uniform(-4, 5, 5)])
    m, y = (a.ravel() for a in np.meshgrid(m, y))
    np.testing.assert_allclose(np.asarray(lax.polygamma(jnp.asarray(m), jnp.asarray(y))),
                               np.asarray(jl.polygamma(m, y)), rtol=1e-10, equal_nan=True)
    whole = m >= 0
    n = np.floor(m[whole]).astype(np.int64)
    np.testing.assert_allclose(np.asarray(special.polygamma(n, y[whole])),
                               np.asarray(jsp.polygamma(n, y[whole])), rtol=1e-10,
                               equal_nan=True)
    with pytest.raises(fnx.errors.DTypeValueError, match="integer dtype"):
        special.polygamma(1.0, 2.0)
    with pytest.raises(ValueError):    # what JAX raises
        jsp.polygamma(1.0, 2.0)

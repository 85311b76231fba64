"""fnx.scipy.linalg.schur and sqrtm against SciPy (float64 and complex128) and JAX (defaults)."""
import numpy as np
import pytest
import scipy.linalg

import fnx
import fnx.numpy as jnp
import fnx.scipy.linalg as sla
from fnx.core.errors import ShapeError


def _inputs(rng, n=6):
    real = rng.standard_normal((n, n))                   # complex eigenvalues in general
    spd = real @ real.T + n * np.eye(n)                  # a real square root exists
    cplx = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return {"real": real, "spd": spd, "complex": cplx}


@pytest.mark.parametrize("kind", ["real", "spd", "complex"])
def test_sqrtm_matches_scipy(rng, kind):
    a = _inputs(rng)[kind]
    x = sla.sqrtm(jnp.asarray(a))
    assert x.dtype == np.complex128                      # complex, as JAX's sqrtm
    np.testing.assert_allclose(np.asarray(x), scipy.linalg.sqrtm(a), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(x @ x), a, rtol=1e-9, atol=1e-10)


def test_sqrtm_under_jit_and_triangular(rng):
    a = _inputs(rng, 5)["real"]
    f = fnx.jit(sla.sqrtm)
    np.testing.assert_allclose(np.asarray(f(a)), np.asarray(sla.sqrtm(a)), rtol=1e-12,
                               atol=1e-13)
    b = a + 1.0                                          # a second call, a fresh input
    np.testing.assert_allclose(np.asarray(f(b)), scipy.linalg.sqrtm(b), rtol=1e-9, atol=1e-10)
    upper = np.triu(np.abs(rng.standard_normal((4, 4)))) + np.eye(4)
    np.testing.assert_allclose(np.asarray(sla.sqrtm(upper)), scipy.linalg.sqrtm(upper),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.x32
def test_sqrtm_float32_matches_jax(rng):
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((5, 5)).astype(np.float32)
    x = sla.sqrtm(a)
    want = jax.scipy.linalg.sqrtm(a)
    assert x.dtype == want.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(x), np.asarray(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_reconstructs_and_batches(rng, output):
    a = rng.standard_normal((3, 5, 5))
    t, z = fnx.vmap(lambda m: sla.schur(m, output=output))(a)
    assert t.dtype == (np.float64 if output == "real" else np.complex128)
    for k in range(3):
        tk, zk = np.asarray(t[k]), np.asarray(z[k])
        np.testing.assert_allclose(zk @ tk @ zk.conj().T, a[k], rtol=1e-10, atol=1e-10)
        assert np.allclose(np.tril(tk, -2 if output == "real" else -1), 0)


def test_sqrtm_errors(rng):
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        sla.sqrtm(jnp.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="blocksize"):
        sla.sqrtm(jnp.eye(3), blocksize=2)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):   # as JAX's
        fnx.grad(lambda m: jnp.real(jnp.sum(sla.sqrtm(m))))(jnp.eye(3) * 2.0)

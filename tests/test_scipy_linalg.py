"""fnx.scipy.linalg: SciPy's conventions (upper Cholesky, full QR, p/l/u, lu_factor pivots,
...) against scipy.linalg in float64, derivatives by check_grads, and float32 values and
gradients against jax.scipy.linalg on the CPU."""
import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as sl

import fnx
import fnx.numpy as jnp
import fnx.scipy.linalg as L
from fnx.test_util import assert_close, check_grads

jax.config.update("jax_platforms", "cpu")


def close(actual, expected, tol=1e-10):
    assert_close(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def _spd(rng, n, batch=()):
    x = rng.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def test_scipy_linalg_is_its_own_module_and_numpy_linalg_keeps_numpy_conventions(rng):
    a = _spd(rng, 4)
    close(fnx.scipy.linalg.cholesky(a), sl.cholesky(a))               # upper
    close(jnp.linalg.cholesky(a), np.linalg.cholesky(a))               # lower
    assert jnp.linalg.qr(a[:, :3])[0].shape == (4, 3)                  # reduced
    assert L.qr(a[:, :3])[0].shape == (4, 4)                           # full


def test_cholesky_and_cho_factor(rng):
    a = _spd(rng, 5)
    b = rng.standard_normal((5, 2))
    for lower in (False, True):
        close(L.cholesky(a, lower=lower), sl.cholesky(a, lower=lower))
        c = L.cho_factor(a, lower=lower)
        assert c[1] is lower
        close(L.cho_solve(c, b), sl.cho_solve(sl.cho_factor(a, lower=lower), b))
        close(L.cho_solve(c, b[:, 0]), sl.cho_solve(sl.cho_factor(a, lower=lower), b[:, 0]))
    # only one triangle is read, as SciPy and JAX
    junk = a + np.tril(rng.standard_normal((5, 5)), -1)
    close(L.cholesky(junk), sl.cholesky(a))
    batch = _spd(rng, 3, (2,))
    close(L.cholesky(batch), np.stack([sl.cholesky(x) for x in batch]))
    check_grads(lambda a: L.cholesky(a + a.T), (a,), order=2)


def test_lu_lu_factor_lu_solve(rng):
    for shape in ((4, 4), (5, 3), (3, 5)):
        a = rng.standard_normal(shape)
        for x, y in zip(L.lu(a), sl.lu(a)):
            close(x, y)
        for x, y in zip(L.lu(a, permute_l=True), sl.lu(a, permute_l=True)):
            close(x, y)
    a = rng.standard_normal((5, 5))
    b = rng.standard_normal((5, 3))
    lu, piv = L.lu_factor(a)
    ref = sl.lu_factor(a)
    close(lu, ref[0])
    np.testing.assert_array_equal(np.asarray(piv), ref[1])
    for trans in (0, 1, 2, "N", "T"):
        t = {"N": 0, "T": 1}.get(trans, trans)
        close(L.lu_solve((lu, piv), b, trans=trans), sl.lu_solve(ref, b, trans=t))
        close(L.lu_solve((lu, piv), b[:, 0], trans=trans), sl.lu_solve(ref, b[:, 0], trans=t))
    # batched, under jit, and differentiable
    ab = rng.standard_normal((2, 4, 4))
    bb = rng.standard_normal((2, 4, 2))
    x = fnx.jit(lambda a, b: L.lu_solve(L.lu_factor(a), b))(ab, bb)
    close(x, np.linalg.solve(ab, bb))
    p, l, u = L.lu(ab)
    close(p @ l @ u, ab)
    check_grads(lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=1), (a, b), order=1)
    check_grads(lambda a: L.lu(a)[2], (a,), order=1)


def test_qr_modes_and_pivoting(rng):
    a = rng.standard_normal((5, 3))
    for mode in ("full", "economic", "r"):
        out, ref = L.qr(a, mode=mode), sl.qr(a, mode=mode)
        assert isinstance(out, tuple) and len(out) == len(ref)
        for x, y in zip(out, ref):
            close(x, y)
        out, ref = L.qr(a, mode=mode, pivoting=True), sl.qr(a, mode=mode, pivoting=True)
        for x, y in zip(out, ref):
            close(x, y)
    with pytest.raises(ValueError, match="raw"):
        L.qr(a, mode="raw")
    q, r = L.qr(rng.standard_normal((2, 4, 3)), mode="economic")
    assert q.shape == (2, 4, 3) and r.shape == (2, 3, 3)
    check_grads(lambda a: L.qr(a, mode="economic")[1], (a,), order=1)


def test_solve_triangular(rng):
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    for trans in (0, 1, 2, "N", "T", "C"):
        for lower in (False, True):
            for unit in (False, True):
                kw = dict(trans=trans, lower=lower, unit_diagonal=unit)
                close(L.solve_triangular(a, b, **kw), sl.solve_triangular(a, b, **kw))
                close(L.solve_triangular(a, b[:, 0], **kw),
                      sl.solve_triangular(a, b[:, 0], **kw))
    # a batch of vectors: b has one dimension fewer than a, as in JAX
    ab = np.stack([a, a.T])
    close(L.solve_triangular(ab, b.T, lower=True),
          np.stack([sl.solve_triangular(x, y, lower=True) for x, y in zip(ab, b.T)]))
    check_grads(lambda a, b: L.solve_triangular(a, b, trans=1), (a, b), order=2)


def test_solve_assume_a(rng):
    a = rng.standard_normal((4, 4))
    s = _spd(rng, 4)
    b = rng.standard_normal((4, 2))
    close(L.solve(a, b), sl.solve(a, b))
    close(L.solve(a, b, transposed=True), sl.solve(a, b, transposed=True))
    for assume_a in ("sym", "her", "pos"):
        for lower in (False, True):
            close(L.solve(s, b, assume_a=assume_a, lower=lower),
                  sl.solve(s, b, assume_a=assume_a, lower=lower), 1e-9)
    # "pos" reads one triangle; its derivative is the linear solve's with all of a, as JAX's
    junk = s + np.triu(rng.standard_normal((4, 4)), 1)
    close(L.solve(junk, b[:, 0], assume_a="pos", lower=True), np.linalg.solve(s, b[:, 0]))
    s32, b32 = s.astype(np.float32), b.astype(np.float32)
    f = lambda lib, m: lambda a, b: lib.numpy.sum(m.solve(a, b, assume_a="pos") ** 2)  # noqa
    for x, y in zip(fnx.grad(f(fnx, L), argnums=(0, 1))(s32, b32),
                    jax.grad(f(jax, jsl), argnums=(0, 1))(s32, b32)):
        close(x, y, 1e-4)
    # (symmetric perturbations: for others the derivative is the full solve's, as in JAX)
    check_grads(lambda a, b: L.solve(a + a.T, b, assume_a="pos"), (s / 2, b), order=1)
    with pytest.raises(ValueError, match="assume_a"):
        L.solve(a, b, assume_a="banded")


def test_eigh_standard_and_generalized(rng):
    a = rng.standard_normal((4, 4))
    a = a + a.T
    b = _spd(rng, 4)
    w, v = L.eigh(a)
    close(w, sl.eigh(a)[0])
    close(a @ v, v * w)
    close(L.eigh(a, eigvals_only=True, lower=False), sl.eigvalsh(a))
    w, v = L.eigh(a, b)
    close(w, sl.eigh(a, b, eigvals_only=True))
    close(a @ v, b @ v * w)
    close(v.T @ b @ v, np.eye(4))
    close(L.eigh(a, b, eigvals_only=True), sl.eigh(a, b, eigvals_only=True))
    a32 = a.astype(np.float32)
    close(fnx.grad(lambda a: jnp.sum(L.eigh(a)[0] ** 3))(a32),
          jax.grad(lambda a: jax.numpy.sum(jsl.eigh(a)[0] ** 3))(a32), 1e-3)
    check_grads(lambda a, b: L.eigh(a, b, eigvals_only=True), (a, b), order=1)


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 3.0, 20.0])
def test_expm_against_scipy_and_jax(rng, scale):
    a = scale * rng.standard_normal((5, 5))
    close(L.expm(a), sl.expm(a), 1e-10 * max(1.0, np.abs(sl.expm(a)).max()))
    a32 = a.astype(np.float32)
    ref = np.asarray(jsl.expm(a32))
    close(L.expm(a32), ref, 2e-5 * max(1.0, np.abs(ref).max()))


def test_expm_batched_triangular_jit_and_gradients(rng):
    a = rng.standard_normal((3, 4, 4))
    close(L.expm(a), np.stack([sl.expm(x) for x in a]))
    close(fnx.vmap(L.expm)(a), np.stack([sl.expm(x) for x in a]))
    close(fnx.jit(L.expm)(a[0]), sl.expm(a[0]))
    u = np.triu(a[0])
    close(L.expm(u, upper_triangular=True), sl.expm(u))
    e = rng.standard_normal((4, 4))
    for x, y in zip(L.expm_frechet(a[0], e), sl.expm_frechet(a[0], e)):
        close(x, y, 1e-9)
    close(L.expm_frechet(a[0], e, compute_expm=False), sl.expm_frechet(a[0], e)[1], 1e-9)
    a32 = a[0].astype(np.float32)
    close(fnx.grad(lambda a: jnp.sum(jnp.sin(L.expm(a))))(a32),
          jax.grad(lambda a: jax.numpy.sum(jax.numpy.sin(jsl.expm(a))))(a32), 1e-4)
    assert np.isnan(np.asarray(L.expm(1e30 * np.ones((2, 2))))).all()


def test_svd_polar_block_diag_toeplitz_hilbert(rng):
    a = rng.standard_normal((5, 3))
    u, s, vh = L.svd(a, full_matrices=False)
    close(s, sl.svd(a, compute_uv=False))
    close((u * s) @ vh, a)
    assert L.svd(a)[0].shape == (5, 5)
    for side in ("right", "left"):
        for x, y in zip(L.polar(a, side), sl.polar(a, side)):
            close(x, y)
    parts = (np.ones((2, 2)), 3.0, np.arange(3.0), np.zeros((1, 0)))
    close(L.block_diag(*parts), sl.block_diag(*parts))
    close(L.block_diag(), sl.block_diag())
    assert L.block_diag(np.ones((1, 1), np.int32), np.ones((1, 1), np.int32)).dtype == np.int32
    c, r = rng.standard_normal(4), rng.standard_normal(3)
    close(L.toeplitz(c), sl.toeplitz(c))
    close(L.toeplitz(c, r), sl.toeplitz(c, r))
    close(L.toeplitz(np.stack([c, 2 * c]), r), np.stack([sl.toeplitz(c, r),
                                                           sl.toeplitz(2 * c, r)]))
    close(L.hilbert(4), sl.hilbert(4), 1e-6)
    check_grads(lambda c, r: L.toeplitz(c, r), (c, r), order=1)


def test_det_inv(rng):
    a = rng.standard_normal((2, 4, 4))
    close(L.det(a), np.linalg.det(a))
    close(L.inv(a), np.linalg.inv(a))

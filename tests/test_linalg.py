"""fnx.linalg / fnx.numpy.linalg: values against numpy.linalg in float64, derivatives to second
order by check_grads, batching (native leading dims and vmap), and the NumPy fallbacks used
when SciPy is missing."""
import itertools

import numpy as np
import pytest

import fnx
import fnx.linalg as linalg
import fnx.numpy as jnp
from fnx.backends import numpy_linalg
from fnx.core.errors import ShapeError
from fnx.core.jaxpr import typecheck_jaxpr
from fnx.test_util import check_grads

rng = np.random.default_rng(0)


def _np(x):
    return np.asarray(x)


def _spd(n, batch=()):
    x = rng.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _well_conditioned(n, batch=()):
    return rng.standard_normal(batch + (n, n)) + 2 * n ** 0.5 * np.eye(n)


def _tri(n, lower, batch=(), unit=False):
    a = rng.standard_normal(batch + (n, n))
    a = a + (0 if unit else 3) * np.eye(n)
    return np.tril(a) if lower else np.triu(a)


# ---------------------------------------------------------------------------------------------
# Values


def test_cholesky_values():
    a = _spd(5)
    L = _np(linalg.cholesky(a))
    np.testing.assert_allclose(L, np.linalg.cholesky(a), rtol=1e-12)
    np.testing.assert_allclose(_np(jnp.linalg.cholesky(a, upper=True)), L.T, rtol=1e-12)
    b = _spd(4, (2, 3))
    np.testing.assert_allclose(_np(linalg.cholesky(b)), np.linalg.cholesky(b), rtol=1e-12)
    assert linalg.cholesky(a.astype(np.float32)).dtype == np.float32


def test_cholesky_not_positive_definite_gives_nan():
    bad = np.stack([_spd(3), -np.eye(3)])
    out = _np(linalg.cholesky(bad))
    # as in JAX: NaN where the factor would be, zeros above the diagonal
    assert np.isfinite(out[0]).all() and np.isnan(np.tril(out[1])[np.tril_indices(3)]).all()
    assert (np.triu(out[1], 1) == 0).all()


@pytest.mark.parametrize("left_side, lower, transpose_a, unit_diagonal",
                         list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_values(left_side, lower, transpose_a, unit_diagonal):
    a = _tri(4, lower, unit=unit_diagonal)
    # the unused triangle holds junk that must be ignored
    junk = a + (np.triu(rng.standard_normal((4, 4)), 1) if lower
                else np.tril(rng.standard_normal((4, 4)), -1))
    if unit_diagonal:
        junk = junk - np.diag(np.diag(junk)) + np.diag(rng.standard_normal(4))
        a = a - np.diag(np.diag(a)) + np.eye(4)
    b = rng.standard_normal((4, 3) if left_side else (3, 4))
    op = a.T if transpose_a else a
    expected = np.linalg.solve(op, b) if left_side else b @ np.linalg.inv(op)
    out = linalg.triangular_solve(junk, b, left_side=left_side, lower=lower,
                                  transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-12)


def test_solve_triangular_and_cho_solve():
    a = _tri(5, lower=False)
    b = rng.standard_normal(5)
    np.testing.assert_allclose(_np(linalg.solve_triangular(a, b)), np.linalg.solve(a, b),
                               rtol=1e-10)
    np.testing.assert_allclose(_np(linalg.solve_triangular(a.T, b, lower=True, trans="T")),
                               np.linalg.solve(a, b), rtol=1e-10)
    s = _spd(5)
    bm = rng.standard_normal((5, 2))
    for lower in (True, False):
        c = linalg.cho_factor(s, lower=lower)
        np.testing.assert_allclose(_np(linalg.cho_solve(c, bm)), np.linalg.solve(s, bm),
                                   rtol=1e-10)
        np.testing.assert_allclose(_np(linalg.cho_solve(c, b)), np.linalg.solve(s, b),
                                   rtol=1e-10)


def test_lu_factors():
    for shape in [(5, 5), (2, 4, 4), (5, 3), (3, 5)]:
        a = rng.standard_normal(shape)
        lu, pivots, perm = (_np(v) for v in linalg.lu(a))
        m, n = shape[-2:]
        k = min(m, n)
        L = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
        U = np.triu(lu[..., :k, :])
        permuted = np.take_along_axis(a, perm[..., :, None], -2)
        np.testing.assert_allclose(L @ U, permuted, rtol=1e-10, atol=1e-12)
        assert pivots.dtype == np.int32 and pivots.shape == shape[:-2] + (k,)
        assert np.abs(L).max() <= 1 + 1e-12          # partial pivoting


def test_solve_inv_det_slogdet_values():
    a = rng.standard_normal((5, 5))
    b = rng.standard_normal(5)
    bm = rng.standard_normal((5, 3))
    np.testing.assert_allclose(_np(linalg.solve(a, b)), np.linalg.solve(a, b), rtol=1e-10)
    np.testing.assert_allclose(_np(linalg.solve(a, bm)), np.linalg.solve(a, bm), rtol=1e-10)
    np.testing.assert_allclose(_np(linalg.inv(a)), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(float(linalg.det(a)), np.linalg.det(a), rtol=1e-12)
    sign, logdet = linalg.slogdet(a)
    ref_sign, ref_logdet = np.linalg.slogdet(a)
    assert float(sign) == ref_sign
    np.testing.assert_allclose(float(logdet), ref_logdet, rtol=1e-12)
    big = np.diag(np.full(200, 100.0))
    with np.errstate(over="ignore"):
        assert np.isinf(float(jnp.linalg.det(big)))
    np.testing.assert_allclose(float(jnp.linalg.slogdet(big).logabsdet), 200 * np.log(100.0))
    np.testing.assert_allclose(float(jnp.linalg.det(np.eye(3)[[1, 0, 2]])), -1.0)


def test_batched_and_broadcast_solve():
    a = rng.standard_normal((2, 3, 4, 4))
    b = rng.standard_normal((3, 4, 2))
    np.testing.assert_allclose(_np(linalg.solve(a, b)), np.linalg.solve(a, b), rtol=1e-9)
    np.testing.assert_allclose(_np(linalg.inv(a)), np.linalg.inv(a), rtol=1e-9)
    np.testing.assert_allclose(_np(linalg.det(a)), np.linalg.det(a), rtol=1e-10)
    v = rng.standard_normal(4)
    expected = np.linalg.solve(a, np.broadcast_to(v[:, None], (2, 3, 4, 1)))[..., 0]
    np.testing.assert_allclose(_np(linalg.solve(a, v)), expected, rtol=1e-9)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 6, 3)])
def test_qr_values(shape):
    a = rng.standard_normal(shape)
    q, r = (_np(v) for v in linalg.qr(a))
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    k = min(shape[-2:])
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k),
                               shape[:-2] + (k, k)), atol=1e-12)
    np.testing.assert_allclose(r, np.triu(r), atol=0)
    qc, rc = (_np(v) for v in jnp.linalg.qr(a, mode="complete"))
    assert qc.shape[-1] == shape[-2]
    np.testing.assert_allclose(qc @ rc, a, atol=1e-12)
    np.testing.assert_allclose(_np(jnp.linalg.qr(a, mode="r")), r, atol=1e-12)


def test_norm():
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(float(linalg.norm(x)), np.linalg.norm(x), rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.norm(x, axis=1)), np.linalg.norm(x, axis=1),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.norm(x, ord=1, axis=0)),
                               np.linalg.norm(x, ord=1, axis=0), rtol=1e-12)


def test_shape_errors():
    with pytest.raises(ShapeError, match="square"):
        linalg.inv(np.ones((2, 3)))
    with pytest.raises(ShapeError):
        linalg.solve(np.eye(3), np.ones(4))
    with pytest.raises(ShapeError):
        linalg.cholesky(np.ones(3))


# ---------------------------------------------------------------------------------------------
# Conjugate gradient


def test_cg():
    a = _spd(8)
    b = rng.standard_normal(8)
    x, info = linalg.cg(a, b, tol=1e-12)
    assert info is None
    np.testing.assert_allclose(_np(x), np.linalg.solve(a, b), rtol=1e-8)
    x, _ = linalg.cg(lambda v: jnp.matmul(a, v), b, x0=np.ones(8), tol=1e-12)
    np.testing.assert_allclose(_np(x), np.linalg.solve(a, b), rtol=1e-8)
    jacobi = 1 / np.diag(a)
    x, _ = linalg.cg(a, b, tol=1e-12, M=lambda r: r * jacobi)
    np.testing.assert_allclose(_np(x), np.linalg.solve(a, b), rtol=1e-8)
    few, _ = linalg.cg(a, b, maxiter=2)
    assert np.linalg.norm(a @ _np(few) - b) > 1e-6


def test_cg_vmap_and_grad():
    a = np.stack([_spd(6), _spd(6)])
    b = rng.standard_normal((2, 6))
    x = fnx.vmap(lambda a, b: linalg.cg(a, b, tol=1e-12, maxiter=40)[0])(a, b)
    np.testing.assert_allclose(_np(x), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-8)
    g = fnx.grad(lambda b: jnp.sum(linalg.cg(a[0], b, tol=1e-13)[0] ** 2))(b[0])
    sol = np.linalg.solve(a[0], b[0])
    np.testing.assert_allclose(_np(g), 2 * np.linalg.solve(a[0].T, sol), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Derivatives


def _sym(x):
    return x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(x.shape[-1])


def test_cholesky_grads():
    check_grads(lambda x: linalg.cholesky(_sym(x)), (rng.standard_normal((4, 4)),), order=2)
    # the symmetrised input makes the derivative exact in any direction
    check_grads(linalg.cholesky, (_spd(3),), order=2)


@pytest.mark.parametrize("left_side, lower, transpose_a, unit_diagonal",
                         [(True, True, False, False), (True, False, True, False),
                          (False, True, True, False), (False, False, False, True),
                          (True, True, True, True)])
def test_triangular_solve_grads(left_side, lower, transpose_a, unit_diagonal):
    a = _tri(3, lower)
    b = rng.standard_normal((3, 2) if left_side else (2, 3))

    def f(a, b):
        return linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    check_grads(f, (a, b), order=2)


def test_solve_inv_det_slogdet_grads():
    a = _well_conditioned(4)
    check_grads(linalg.solve, (a, rng.standard_normal(4)), order=2)
    check_grads(linalg.solve, (a, rng.standard_normal((4, 2))), order=2)
    check_grads(linalg.inv, (a,), order=2)
    check_grads(linalg.det, (a,), order=2)
    check_grads(lambda a: linalg.slogdet(a).logabsdet, (a,), order=2)
    check_grads(lambda c, b: linalg.cho_solve((linalg.cholesky(_sym(c)), True), b),
                (rng.standard_normal((3, 3)), rng.standard_normal(3)), order=2)


def test_det_grad_is_cofactor():
    a = _well_conditioned(4)
    g = _np(fnx.grad(linalg.det)(a))
    np.testing.assert_allclose(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)


def test_qr_and_lu_grads():
    check_grads(lambda a: linalg.qr(a), (rng.standard_normal((5, 3)),), order=2)
    check_grads(lambda a: linalg.qr(a), (rng.standard_normal((3, 3)),), order=2)
    check_grads(lambda a: linalg.lu(a)[0], (_well_conditioned(4),), order=2)
    check_grads(lambda a: linalg.lu(a)[0], (rng.standard_normal((4, 3)),), order=1)
    check_grads(lambda a: linalg.lu(a)[0], (rng.standard_normal((3, 4)),), order=1)


def test_grad_jaxprs_typecheck():
    a = _well_conditioned(3)
    for f in (lambda a: linalg.det(a), lambda a: jnp.sum(linalg.inv(a)),
              lambda a: jnp.sum(linalg.cholesky(_sym(a))), lambda a: jnp.sum(linalg.qr(a)[1])):
        typecheck_jaxpr(fnx.make_jaxpr(fnx.grad(f))(a).jaxpr)
        typecheck_jaxpr(fnx.make_jaxpr(fnx.vmap(fnx.grad(f)))(np.stack([a, a])).jaxpr)


# ---------------------------------------------------------------------------------------------
# Batching


@pytest.mark.parametrize("name, f, make", [
    ("cholesky", linalg.cholesky, lambda: (_spd(4, (3,)),)),
    ("solve", linalg.solve, lambda: (_well_conditioned(4, (3,)), rng.standard_normal((3, 4)))),
    ("inv", linalg.inv, lambda: (_well_conditioned(4, (3,)),)),
    ("det", linalg.det, lambda: (_well_conditioned(4, (3,)),)),
    ("slogdet", lambda a: linalg.slogdet(a).logabsdet, lambda: (_well_conditioned(4, (3,)),)),
    ("qr", lambda a: linalg.qr(a)[0], lambda: (rng.standard_normal((3, 5, 3)),)),
    ("triangular_solve", lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
     lambda: (_tri(4, True, (3,)), rng.standard_normal((3, 4, 2)))),
])
def test_vmap_matches_a_loop(name, f, make):
    args = make()
    out = _np(fnx.vmap(f)(*args))
    expected = np.stack([_np(f(*[a[i] for a in args])) for i in range(3)])
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_vmap_with_an_unbatched_matrix_and_grad_of_vmap():
    a = _well_conditioned(4)
    bs = rng.standard_normal((5, 4))
    out = _np(fnx.vmap(linalg.solve, in_axes=(None, 0))(a, bs))
    np.testing.assert_allclose(out, np.linalg.solve(a, bs.T).T, rtol=1e-10)
    L = linalg.cholesky(_spd(4))
    out = _np(fnx.vmap(lambda b: linalg.triangular_solve(L, b[:, None], left_side=True,
                                                         lower=True))(bs))
    np.testing.assert_allclose(out[..., 0], np.linalg.solve(_np(L), bs.T).T, rtol=1e-10)
    g = fnx.grad(lambda a: jnp.sum(fnx.vmap(linalg.det)(a)))(np.stack([a, a + np.eye(4)]))
    np.testing.assert_allclose(_np(g)[0], np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# NumPy fallbacks (no SciPy)


def test_numpy_fallbacks_match(monkeypatch):
    a = rng.standard_normal((4, 4))
    t = _tri(4, lower=True)
    b = rng.standard_normal((4, 2))
    with_scipy = (_np(linalg.lu(a)[0]), _np(linalg.triangular_solve(t, b, left_side=True,
                                                                    lower=True)))
    monkeypatch.setattr(numpy_linalg, "_scipy_linalg", lambda: None)
    without = (_np(linalg.lu(a)[0]), _np(linalg.triangular_solve(t, b, left_side=True,
                                                                 lower=True)))
    for x, y in zip(with_scipy, without):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(linalg.det(a)), np.linalg.det(a), rtol=1e-12)
    unit = linalg.triangular_solve(t, b, left_side=True, lower=True, unit_diagonal=True)
    np.testing.assert_allclose(_np(unit), np.linalg.solve(np.tril(t, -1) + np.eye(4), b),
                               rtol=1e-10)

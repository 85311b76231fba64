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


def _orthogonal(n, batch=()):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, 0, -2, -1))[..., None, :]


def _separated(k, batch=(), low=-3.0):
    """``k`` values per matrix, ascending, at least 0.5 apart (a well-conditioned spectrum)."""
    steps = rng.uniform(0.5, 1.5, batch + (k,))
    return low + np.cumsum(steps, -1)


def _sym_separated(n, batch=()):
    """A symmetric matrix with well-separated eigenvalues, and those eigenvalues."""
    w = _separated(n, batch)
    q = _orthogonal(n, batch)
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2), w


def _separated_singular(m, n, batch=()):
    """An m x n matrix with well-separated singular values (descending, all >= 0.5)."""
    k = min(m, n)
    s = _separated(k, batch, low=0.0)[..., ::-1]
    u, v = _orthogonal(m, batch)[..., :k], _orthogonal(n, batch)[..., :k]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


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


@pytest.mark.parametrize("batch", [(), (2, 3)])
def test_eigh_values(batch):
    a, w_exact = _sym_separated(4, batch)
    w, v = (_np(x) for x in linalg.eigh(a))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, w_exact, rtol=1e-10)
    # eigenvector signs are arbitrary: check V diag(w) V^T = A and V^T V = I instead
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v,
                               np.broadcast_to(np.eye(4), batch + (4, 4)), atol=1e-12)


def test_eigh_reads_one_triangle_without_symmetrize_input():
    a, _ = _sym_separated(4)
    junk = rng.standard_normal((4, 4))
    lower_only, upper_only = np.tril(a) + np.triu(junk, 1), np.triu(a) + np.tril(junk, -1)
    expected = np.linalg.eigvalsh(a)
    for m, uplo in ((lower_only, "L"), (upper_only, "U")):
        w = jnp.linalg.eigh(m, UPLO=uplo, symmetrize_input=False).eigenvalues
        np.testing.assert_allclose(_np(w), expected, rtol=1e-12, atol=1e-12)
    # symmetrize_input averages the triangles, so the junk counts
    assert not np.allclose(_np(jnp.linalg.eigh(lower_only).eigenvalues), expected)
    with pytest.raises(ValueError, match="UPLO"):
        jnp.linalg.eigh(a, UPLO="X")


def test_eigh_result_types_and_lax_order():
    a, _ = _sym_separated(3)
    result = linalg.eigh(a)
    assert isinstance(result, linalg.EighResult)
    v, w = fnx.lax.linalg.eigh(a)          # eigenvectors first, as in JAX's lax
    np.testing.assert_allclose(_np(w), _np(result.eigenvalues), rtol=1e-14)
    np.testing.assert_allclose(_np(v), _np(result.eigenvectors), rtol=1e-14)
    out32 = linalg.eigh(a.astype(np.float32))
    assert out32.eigenvalues.dtype == np.float32 and out32.eigenvectors.dtype == np.float32
    np.testing.assert_allclose(_np(out32.eigenvalues), np.linalg.eigvalsh(a), rtol=1e-5)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 5, 2)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_values(shape, full_matrices):
    a = rng.standard_normal(shape)
    m, n = shape[-2:]
    k = min(m, n)
    u, s, vh = (_np(x) for x in linalg.svd(a, full_matrices=full_matrices))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    assert u.shape == shape[:-2] + (m, m if full_matrices else k)
    assert vh.shape == shape[:-2] + (n if full_matrices else k, n)
    recon = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(recon, a, atol=1e-12)
    for q in (np.swapaxes(u, -1, -2) @ u, vh @ np.swapaxes(vh, -1, -2)):
        np.testing.assert_allclose(q, np.broadcast_to(np.eye(q.shape[-1]), q.shape), atol=1e-12)
    s_only = _np(jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=False))
    np.testing.assert_allclose(s_only, s, rtol=1e-12)


def test_svd_result_types_and_lax():
    a = rng.standard_normal((4, 3))
    result = linalg.svd(a)
    assert isinstance(result, linalg.SVDResult)
    u, s, vh = fnx.lax.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(_np(s), _np(result.S), rtol=1e-14)
    np.testing.assert_allclose(_np(u), _np(result.U)[:, :3], rtol=1e-14)
    np.testing.assert_allclose(_np(fnx.lax.linalg.svd(a, compute_uv=False)), _np(s), rtol=1e-14)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_svd_hermitian(batch):
    a, w = _sym_separated(4, batch)        # indefinite: some eigenvalues are negative
    u, s, vh = (_np(x) for x in linalg.svd(a, hermitian=True))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=1e-12)
    np.testing.assert_allclose(_np(linalg.svd(a, compute_uv=False, hermitian=True)), s,
                               rtol=1e-12)


def test_eigh_and_svd_give_nan_for_a_nan_matrix():
    a = np.stack([_sym_separated(3)[0], np.eye(3)])
    a[1, 2, 0] = np.nan
    w, v = (_np(x) for x in linalg.eigh(a))
    u, s, vh = (_np(x) for x in linalg.svd(a))     # LAPACK's SVD refuses NaN: no error here
    for x in (w, v, u, s, vh):
        assert np.isfinite(x[0]).all() and np.isnan(x[1]).all()
    np.testing.assert_allclose(w[0], np.linalg.eigvalsh(a[0]), rtol=1e-12)


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
    with pytest.raises(ShapeError, match=r"eigh needs square .*\(2, 3\)"):
        linalg.eigh(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"eigh needs square .*\(3,\)"):
        jnp.linalg.eigh(np.ones(3))
    with pytest.raises(ShapeError, match=r"svd needs a matrix .*\(3,\)"):
        linalg.svd(np.ones(3))
    with pytest.raises(ShapeError, match=r"\(2, 4, 3\)"):
        linalg.svd(np.ones((2, 4, 3)), hermitian=True)


# ---------------------------------------------------------------------------------------------
# Composed functions (pinv, lstsq, norms, ...)


def _low_rank(m, n, r, batch=()):
    return rng.standard_normal(batch + (m, r)) @ rng.standard_normal(batch + (r, n))


def test_eigvalsh_and_svdvals():
    a, w = _sym_separated(4, (2, 3))
    np.testing.assert_allclose(_np(linalg.eigvalsh(a)), np.linalg.eigvalsh(a), rtol=1e-12,
                               atol=1e-12)
    upper = np.triu(a) + np.tril(rng.standard_normal((4, 4)), -1)
    np.testing.assert_allclose(_np(jnp.linalg.eigvalsh(upper, "U", symmetrize_input=False)),
                               np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    x = rng.standard_normal((3, 5, 2))
    np.testing.assert_allclose(_np(linalg.svdvals(x)), np.linalg.svdvals(x), rtol=1e-12)
    check_grads(linalg.eigvalsh, (_sym_separated(3)[0],), order=2)
    check_grads(linalg.svdvals, (_separated_singular(4, 3),), order=2)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 4, 2)])
def test_pinv_values(shape):
    a = rng.standard_normal(shape)
    np.testing.assert_allclose(_np(linalg.pinv(a)), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)


def test_pinv_rank_deficient_rtol_and_hermitian():
    a = _low_rank(5, 4, 2, (3,))
    p = _np(linalg.pinv(a))
    np.testing.assert_allclose(p, np.linalg.pinv(a), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a @ p @ a, a, atol=1e-10)      # a Penrose condition
    # a per-matrix rtol that drops the smallest singular value of the first matrix only
    s = np.linalg.svd(a, compute_uv=False)
    rtol = np.array([s[0, 1] / s[0, 0] * 1.01, 1e-12, 1e-12])
    out = _np(linalg.pinv(a, rtol=rtol))
    np.testing.assert_allclose(out, np.linalg.pinv(a, rtol=rtol), rtol=1e-8, atol=1e-10)
    assert np.linalg.matrix_rank(out[0]) == 1 and np.linalg.matrix_rank(out[1]) == 2
    h, _ = _sym_separated(4, (2,))
    np.testing.assert_allclose(_np(linalg.pinv(h, hermitian=True)), np.linalg.inv(h),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 3, 2)])
def test_pinv_grads(shape):
    a = rng.standard_normal(shape) + 2 * np.eye(*shape[-2:])
    check_grads(linalg.pinv, (a,), order=2)


def test_pinv_grad_with_repeated_singular_values():
    # pinv(2 Q) = inv(2 Q): its derivative exists although every singular value is 2
    a = 2 * _orthogonal(3)
    g = _np(fnx.grad(lambda a: jnp.sum(linalg.pinv(a) ** 2))(a))
    g_inv = _np(fnx.grad(lambda a: jnp.sum(linalg.inv(a) ** 2))(a))
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, g_inv, rtol=1e-10, atol=1e-12)
    # hermitian reads a symmetrised a, so only symmetric perturbations are meaningful
    check_grads(lambda x: linalg.pinv(x + x.T, hermitian=True), (_spd(3),), order=2)


@pytest.mark.parametrize("m, n, k", [(6, 3, None), (6, 3, 2), (3, 5, None), (4, 4, 3)])
def test_lstsq_values(m, n, k):
    a = rng.standard_normal((m, n))
    b = rng.standard_normal((m,) if k is None else (m, k))
    x, res, rank, s = linalg.lstsq(a, b)
    ref_x, ref_res, ref_rank, ref_s = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(_np(x), ref_x, rtol=1e-10, atol=1e-12)
    assert int(rank) == ref_rank
    assert _np(rank).dtype == (np.int64 if fnx.config.enable_x64 else np.int32)  # default int
    np.testing.assert_allclose(_np(s), ref_s, rtol=1e-12)
    expected_res = np.sum((b - a @ ref_x) ** 2, axis=0).reshape(-1 if k else 1)
    np.testing.assert_allclose(_np(res), expected_res, rtol=1e-8, atol=1e-12)
    if m > n:
        np.testing.assert_allclose(_np(res), ref_res, rtol=1e-8)
    else:       # NumPy's residuals are empty here, and so are ours when asked for
        assert ref_res.size == 0 and _np(linalg.lstsq(a, b, numpy_resid=True)[1]).size == 0


def test_lstsq_rank_deficient_and_rcond():
    a = _low_rank(6, 4, 2)
    b = rng.standard_normal(6)
    x, _, rank, _ = linalg.lstsq(a, b)
    ref_x, _, ref_rank, _ = np.linalg.lstsq(a, b, rcond=None)
    assert int(rank) == ref_rank == 2
    np.testing.assert_allclose(_np(x), ref_x, rtol=1e-8, atol=1e-10)   # the minimum-norm one
    full = rng.standard_normal((6, 3))
    s = np.linalg.svd(full, compute_uv=False)
    rcond = s[2] / s[0] * 1.01
    x, _, rank, _ = linalg.lstsq(full, b, rcond=rcond)
    assert int(rank) == np.linalg.lstsq(full, b, rcond=rcond)[2] == 2
    np.testing.assert_allclose(_np(x), np.linalg.lstsq(full, b, rcond=rcond)[0], rtol=1e-10)
    with pytest.raises(ShapeError, match=r"\(6, 3\) and \(5,\)"):
        linalg.lstsq(full, np.ones(5))
    with pytest.raises(ShapeError, match=r"\(2, 6, 3\)"):
        linalg.lstsq(np.ones((2, 6, 3)), np.ones(6))


def test_lstsq_grads():
    a = rng.standard_normal((6, 3))
    check_grads(lambda a, b: linalg.lstsq(a, b)[0], (a, rng.standard_normal(6)), order=2)
    check_grads(lambda a, b: linalg.lstsq(a, b)[1], (a, rng.standard_normal((6, 2))), order=1)
    # the normal equations' solution, differentiated through lu instead of svd
    b = rng.standard_normal(6)
    g = _np(fnx.grad(lambda a: jnp.sum(linalg.lstsq(a, b)[0]))(a))
    g_ref = _np(fnx.grad(lambda a: jnp.sum(linalg.solve(a.T @ a, a.T @ b)))(a))
    np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-10)


def test_matrix_rank():
    a = np.stack([_low_rank(5, 4, r) for r in (1, 2, 4)])
    np.testing.assert_array_equal(_np(linalg.matrix_rank(a)), [1, 2, 4])
    np.testing.assert_array_equal(_np(linalg.matrix_rank(a)), np.linalg.matrix_rank(a))
    s = np.linalg.svd(a[2], compute_uv=False)
    between = (s[1] + s[2]) / 2
    assert int(linalg.matrix_rank(a[2], tol=between)) == np.linalg.matrix_rank(a[2], tol=between)
    assert int(linalg.matrix_rank(a[2], rtol=between / s[0])) == 2
    assert int(linalg.matrix_rank(a[2], rtol=between / s[0])) == \
        np.linalg.matrix_rank(a[2], rtol=between / s[0])
    assert int(linalg.matrix_rank(np.zeros(3))) == 0 and int(linalg.matrix_rank(np.ones(3))) == 1
    with pytest.raises(ValueError, match="not both"):
        linalg.matrix_rank(a, rtol=0.1, tol=0.1)


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 6, 7])
def test_matrix_power_values(n):
    a = _well_conditioned(3, (2,)) / 3
    np.testing.assert_allclose(_np(linalg.matrix_power(a, n)), np.linalg.matrix_power(a, n),
                               rtol=1e-10, atol=1e-12)


def test_matrix_power_grads_and_errors():
    a = _well_conditioned(3) / 3
    for n in (3, 4, -2):
        check_grads(lambda a: linalg.matrix_power(a, n), (a,), order=2)
    with pytest.raises(ShapeError, match=r"matrix_power needs square .*\(2, 3\)"):
        linalg.matrix_power(np.ones((2, 3)), 2)
    with pytest.raises(TypeError, match="integer"):
        linalg.matrix_power(a, 1.5)


def test_multi_dot():
    a, b, c, d = (rng.standard_normal(s) for s in ((10, 30), (30, 5), (5, 60), (60, 2)))
    np.testing.assert_allclose(_np(linalg.multi_dot([a, b, c, d])), np.linalg.multi_dot(
        [a, b, c, d]), rtol=1e-10)
    v, w = rng.standard_normal(10), rng.standard_normal(2)
    out = _np(linalg.multi_dot([v, a, b, c, d, w]))
    assert out.shape == ()
    np.testing.assert_allclose(out, np.linalg.multi_dot([v, a, b, c, d, w]), rtol=1e-10)
    np.testing.assert_allclose(_np(linalg.multi_dot([a, b])), a @ b, rtol=1e-12)
    # ((a b) c) costs 10*30*5 + 10*5*60 = 4500, (a (b c)) 30*5*60 + 10*30*60 = 27000
    from fnx.numpy.linalg import _chain_order
    assert _chain_order([10, 30, 5, 60])[0, 2] == 1
    assert _chain_order([60, 5, 30, 10])[0, 2] == 0
    check_grads(lambda a, b, c: linalg.multi_dot([a, b, c]),
                (a[:3, :4], b[:4, :2], c[:2, :3]), order=2)
    with pytest.raises(ShapeError, match=r"\(10, 30\), \(5, 60\)"):
        linalg.multi_dot([a, c])


MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norms(ord):
    x = rng.standard_normal((2, 4, 3))
    expected = np.linalg.norm(x, ord=ord, axis=(-2, -1))
    np.testing.assert_allclose(_np(linalg.matrix_norm(x, ord=ord)), expected, rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.matrix_norm(x, ord=ord, keepdims=True)),
                               np.linalg.matrix_norm(x, ord=ord, keepdims=True), rtol=1e-12)
    for axis in ((0, 2), (2, 0), (1, 0)):
        for keepdims in (False, True):
            np.testing.assert_allclose(
                _np(linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)),
                np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(float(linalg.norm(x[0], ord=ord)), np.linalg.norm(x[0], ord=ord),
                               rtol=1e-12)


@pytest.mark.parametrize("ord", [None, 2, 1, 3, 0.5, 0, np.inf, -np.inf, -1])
def test_vector_norms(ord):
    x = rng.standard_normal((3, 4, 2))
    x[0, 0, 0] = 0.0                         # counted by ord=0
    kw = {} if ord is None else {"ord": ord}
    for axis, keepdims in itertools.product((None, 1, -1, (0, 2), (2, 1, 0)), (False, True)):
        with np.errstate(divide="ignore"):      # NumPy's negative orders meet the zero
            expected = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, **kw)
        np.testing.assert_allclose(_np(linalg.vector_norm(x, axis=axis, keepdims=keepdims, **kw)),
                                   expected, rtol=1e-12)
    with np.errstate(divide="ignore"):
        expected = np.linalg.norm(x, ord=ord, axis=1)
    np.testing.assert_allclose(_np(linalg.norm(x, ord=ord, axis=1)), expected, rtol=1e-12)


def test_norm_bad_ord_and_axes():
    with pytest.raises(ValueError, match=r"order 3 for a matrix norm .*\(4, 3\)"):
        linalg.norm(np.ones((4, 3)), ord=3)
    with pytest.raises(ValueError, match=r"order 'nuc ' for a matrix norm .*\(2, 4, 3\)"):
        linalg.matrix_norm(np.ones((2, 4, 3)), ord="nuc ")
    with pytest.raises(ValueError, match=r"order 'fro' for a vector norm .*\(5,\)"):
        linalg.norm(np.ones(5), ord="fro")
    with pytest.raises(ValueError, match=r"order 'nuc' for a vector norm"):
        linalg.vector_norm(np.ones((2, 2)), ord="nuc")
    with pytest.raises(ValueError, match=r"axes \(0, 1, 2\) .*\(2, 3, 4\)"):
        linalg.norm(np.ones((2, 3, 4)), ord=2)
    with pytest.raises(ShapeError, match=r"matrix_norm needs matrices .*\(3,\)"):
        linalg.matrix_norm(np.ones(3))


def test_norm_grads_away_from_kinks():
    x = _separated_singular(4, 3)
    for ord in ("fro", "nuc", 2, -2, 1, np.inf):
        check_grads(lambda x: linalg.matrix_norm(x, ord=ord), (x,), order=2)
    v = rng.uniform(0.5, 2.0, (2, 5)) * np.array([1, -1, 1, -1, 1])
    v[:, 2] *= 1.5                               # a unique largest entry for inf
    for ord in (2, 1, 3, 0.5, np.inf):
        check_grads(lambda v: linalg.vector_norm(v, ord=ord, axis=-1), (v,), order=2)
    check_grads(lambda v: linalg.norm(v, ord=3, axis=0), (v,), order=2)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond(p):
    a = rng.standard_normal((3, 4, 4))
    np.testing.assert_allclose(_np(linalg.cond(a, p)), np.linalg.cond(a, p), rtol=1e-10)
    singular = _low_rank(4, 4, 2)
    with np.errstate(all="ignore"):
        out = float(linalg.cond(singular, p))
    assert out < 1e-14 if p == -2 else (np.isinf(out) or out > 1e14)
    assert np.isnan(_np(linalg.cond(np.full((4, 4), np.nan), p)))


def test_cond_grads_and_errors():
    a = _separated_singular(4, 3)
    check_grads(linalg.cond, (a,), order=2)
    check_grads(lambda a: linalg.cond(a, "fro"), (_well_conditioned(3),), order=2)
    # JAX's 2-norm condition number of a zero matrix is 0/0 = NaN (NumPy's is inf)
    assert np.isnan(float(linalg.cond(np.zeros((3, 3)))))
    assert np.isinf(float(linalg.cond(np.zeros((3, 3)), 1)))
    x = rng.standard_normal((5, 3))
    np.testing.assert_allclose(float(linalg.cond(x)), np.linalg.cond(x), rtol=1e-12)
    with pytest.raises(ShapeError, match=r"cond with p=1 needs square .*\(5, 3\)"):
        linalg.cond(x, 1)
    with pytest.raises(ShapeError, match=r"\(3,\)"):
        linalg.cond(np.ones(3))


def test_array_api_functions():
    x = rng.standard_normal((2, 3, 4))
    y = rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(_np(linalg.trace(x, offset=1)), np.linalg.trace(x, offset=1),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.diagonal(x, offset=-1)),
                               np.linalg.diagonal(x, offset=-1), rtol=0)
    np.testing.assert_allclose(_np(linalg.matrix_transpose(x)), np.linalg.matrix_transpose(x))
    np.testing.assert_allclose(_np(linalg.matmul(x, y)), np.linalg.matmul(x, y), rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.tensordot(x, y[0], axes=1)),
                               np.linalg.tensordot(x, y[0], axes=1), rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.tensordot(x, x, axes=([1, 2], [1, 2]))),
                               np.linalg.tensordot(x, x, axes=([1, 2], [1, 2])), rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.vecdot(x, x[0, 0], axis=-1)),
                               np.linalg.vecdot(x, x[0, 0], axis=-1), rtol=1e-12)
    u, v = rng.standard_normal(3), rng.standard_normal(4)
    np.testing.assert_allclose(_np(linalg.outer(u, v)), np.linalg.outer(u, v), rtol=0)
    c1, c2 = rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(_np(linalg.cross(c1, c2.T)), np.linalg.cross(c1, c2.T),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(linalg.cross(c1.T, c2, axis=0)),
                               np.linalg.cross(c1.T, c2, axis=0), rtol=1e-12)
    check_grads(lambda a, b: linalg.cross(a, b), (c1, c2.T), order=2)
    check_grads(lambda x: linalg.trace(x), (x,), order=1)
    with pytest.raises(ShapeError, match=r"outer needs two vectors.*\(3, 4\)"):
        linalg.outer(np.ones((3, 4)), v)
    with pytest.raises(ShapeError, match=r"cross needs 3-vectors.*\(2,\)"):
        linalg.cross(np.ones(2), np.ones(2))
    with pytest.raises(ShapeError, match=r"matrix_transpose needs matrices.*\(3,\)"):
        linalg.matrix_transpose(u)
    with pytest.raises(ShapeError, match=r"trace needs matrices.*\(3,\)"):
        linalg.trace(u)


def test_tensorinv_and_tensorsolve():
    a = _well_conditioned(6).reshape(6, 2, 3)
    np.testing.assert_allclose(_np(linalg.tensorinv(a, ind=1)), np.linalg.tensorinv(a, ind=1),
                               rtol=1e-10)
    b4 = _well_conditioned(6).reshape(2, 3, 3, 2)
    np.testing.assert_allclose(_np(linalg.tensorinv(b4)), np.linalg.tensorinv(b4), rtol=1e-10)
    a3 = _well_conditioned(6).reshape(2, 3, 6)
    b = rng.standard_normal((2, 3))
    np.testing.assert_allclose(_np(linalg.tensorsolve(a3, b)), np.linalg.tensorsolve(a3, b),
                               rtol=1e-10)
    a_moved = np.moveaxis(b4, 0, -1)
    np.testing.assert_allclose(_np(linalg.tensorsolve(a_moved, b.reshape(3, 2), axes=(0,))),
                               np.linalg.tensorsolve(a_moved, b.reshape(3, 2), axes=(0,)),
                               rtol=1e-10)
    check_grads(lambda a, b: linalg.tensorsolve(a, b), (a3, b), order=1)
    with pytest.raises(ShapeError, match=r"\(2, 3, 4\)"):
        linalg.tensorinv(np.ones((2, 3, 4)), ind=1)
    with pytest.raises(ShapeError, match=r"\(2, 3, 6\).*\(3, 2\)"):
        linalg.tensorsolve(a3, b.T)


def test_fnx_linalg_reexports_the_numpy_linalg_functions():
    for name in ("eigvalsh", "svdvals", "pinv", "lstsq", "matrix_rank", "matrix_power",
                 "multi_dot", "matrix_norm", "vector_norm", "cond", "trace", "diagonal", "outer",
                 "tensordot", "matmul", "matrix_transpose", "vecdot", "cross", "tensorinv",
                 "tensorsolve"):
        assert getattr(linalg, name) is getattr(jnp.linalg, name), name
        assert name in linalg.__all__, name


def test_composed_functions_under_jit_and_grad_of_vmap():
    a = rng.standard_normal((3, 5, 3)) + np.eye(5, 3)
    b = rng.standard_normal((3, 5))
    np.testing.assert_allclose(_np(fnx.jit(linalg.pinv)(a)), np.linalg.pinv(a), rtol=1e-10)
    x, res, rank, s = fnx.jit(linalg.lstsq)(a[0], b[0])
    ref = np.linalg.lstsq(a[0], b[0], rcond=None)
    np.testing.assert_allclose(_np(x), ref[0], rtol=1e-10)
    np.testing.assert_allclose(_np(res), ref[1], rtol=1e-8)
    assert int(rank) == 3
    np.testing.assert_allclose(_np(fnx.jit(lambda a: linalg.matrix_power(a, 5))(a[:, :3])),
                               np.linalg.matrix_power(a[:, :3], 5), rtol=1e-10)
    np.testing.assert_array_equal(_np(fnx.jit(linalg.matrix_rank)(a)), [3, 3, 3])
    np.testing.assert_allclose(_np(fnx.jit(lambda a: linalg.matrix_norm(a, ord="nuc"))(a)),
                               np.linalg.matrix_norm(a, ord="nuc"), rtol=1e-12)

    def loss(a, b):
        return jnp.sum(linalg.pinv(a) ** 2) + jnp.sum(linalg.lstsq(a, b)[0] ** 2)
    per = np.stack([_np(fnx.grad(loss)(a[i], b[i])) for i in range(3)])
    for g in (fnx.vmap(fnx.grad(loss)), fnx.jit(fnx.vmap(fnx.grad(loss)))):
        np.testing.assert_allclose(_np(g(a, b)), per, rtol=1e-10, atol=1e-12)
    with pytest.raises(Exception, match="(?i)concrete|tracer"):
        fnx.jit(lambda a, b: linalg.lstsq(a, b, numpy_resid=True)[1])(a[0], b[0])
    typecheck_jaxpr(fnx.make_jaxpr(fnx.grad(lambda a: jnp.sum(linalg.pinv(a))))(a[0]).jaxpr)


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


def _eigh_loss(c, d, **kw):
    """Weighted eigenvalues plus weighted squared eigenvector entries: independent of the
    eigenvectors' arbitrary signs, so finite differences can check it."""
    def f(a):
        w, v = linalg.eigh(a, **kw)
        return w @ c + jnp.sum((v * v) @ d)
    return f


@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigh_grads(batch):
    a, _ = _sym_separated(4, batch)
    c, d = rng.standard_normal(4), rng.standard_normal(4)
    check_grads(_eigh_loss(c, d), (a,), order=2)
    check_grads(_eigh_loss(c, d, UPLO="U"), (a,), order=1)
    check_grads(lambda a: linalg.eigh(a).eigenvalues, (a,), order=2)


def test_eigh_grad_of_an_eigenvalue_is_its_projector():
    # d w_k / dA = v_k v_k^T (symmetric, thanks to symmetrize_input)
    a, _ = _sym_separated(5)
    _, v = np.linalg.eigh(a)
    for k in (0, 4):
        g = _np(fnx.grad(lambda a: linalg.eigh(a).eigenvalues[k])(a))
        np.testing.assert_allclose(g, np.outer(v[:, k], v[:, k]), atol=1e-12)
    g = _np(fnx.grad(lambda a: jnp.sum(linalg.eigh(a).eigenvalues))(a))
    np.testing.assert_allclose(g, np.eye(5), atol=1e-12)       # the trace's gradient


def _svd_loss(c, d, e, **kw):
    """Weighted singular values plus weighted squared entries of U and Vh (sign-free)."""
    def f(a):
        u, s, vh = linalg.svd(a, **kw)
        return s @ c + jnp.sum((u * u) @ d) + jnp.sum(e @ (vh * vh))
    return f


@pytest.mark.parametrize("shape, full_matrices", [((5, 3), False), ((3, 5), False),
                                                  ((4, 4), False), ((4, 4), True),
                                                  ((2, 4, 3), False)])
def test_svd_grads(shape, full_matrices):
    m, n = shape[-2:]
    k = min(m, n)
    a = _separated_singular(m, n, shape[:-2])
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    loss = _svd_loss(rng.standard_normal(k), rng.standard_normal(u_cols),
                     rng.standard_normal(vh_rows), full_matrices=full_matrices)
    check_grads(loss, (a,), order=2)
    check_grads(lambda a: linalg.svd(a, compute_uv=False), (a,), order=2)
    check_grads(lambda a: jnp.sum(linalg.svd(a, full_matrices=True, compute_uv=False)), (a,),
                order=1)


def test_svd_grad_of_the_singular_values_is_u_vt():
    a = _separated_singular(4, 3)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    g = _np(fnx.grad(lambda a: jnp.sum(linalg.svd(a, compute_uv=False)))(a))
    np.testing.assert_allclose(g, u @ vh, atol=1e-12)      # gradient of the nuclear norm


def test_svd_hermitian_grads():
    a, _ = _sym_separated(4)
    check_grads(lambda a: linalg.svd(a, hermitian=True, compute_uv=False), (a,), order=2)
    loss = _svd_loss(rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(4),
                     hermitian=True)
    check_grads(loss, (a,), order=1)


def test_svd_full_matrices_grad_of_a_non_square_matrix_is_not_implemented():
    a = rng.standard_normal((4, 3))
    u, s, vh = linalg.svd(a)        # the forward value works
    assert u.shape == (4, 4)

    def f(a):
        return jnp.sum(linalg.svd(a, full_matrices=True)[0] ** 2)
    with pytest.raises(NotImplementedError, match=r"full_matrices.*\(4, 3\)"):
        fnx.grad(f)(a)
    with pytest.raises(NotImplementedError, match="full_matrices"):
        fnx.jvp(f, (a,), (np.ones_like(a),))


def test_grad_jaxprs_typecheck():
    a = _well_conditioned(3)
    for f in (lambda a: linalg.det(a), lambda a: jnp.sum(linalg.inv(a)),
              lambda a: jnp.sum(linalg.cholesky(_sym(a))), lambda a: jnp.sum(linalg.qr(a)[1]),
              _eigh_loss(np.ones(3), np.arange(3.0)),
              _svd_loss(np.ones(3), np.arange(3.0), np.arange(3.0), full_matrices=False)):
        typecheck_jaxpr(fnx.make_jaxpr(fnx.grad(f))(a).jaxpr)
        typecheck_jaxpr(fnx.make_jaxpr(fnx.vmap(fnx.grad(f)))(np.stack([a, a])).jaxpr)


# ---------------------------------------------------------------------------------------------
# Batching


def _sign_free(*factors):
    """Factors flattened, vectors squared: what their arbitrary signs leave alone."""
    return jnp.concatenate([jnp.ravel(x if x.ndim == 1 else x * x) for x in factors])


@pytest.mark.parametrize("name, f, make", [
    ("cholesky", linalg.cholesky, lambda: (_spd(4, (3,)),)),
    ("solve", linalg.solve, lambda: (_well_conditioned(4, (3,)), rng.standard_normal((3, 4)))),
    ("inv", linalg.inv, lambda: (_well_conditioned(4, (3,)),)),
    ("det", linalg.det, lambda: (_well_conditioned(4, (3,)),)),
    ("slogdet", lambda a: linalg.slogdet(a).logabsdet, lambda: (_well_conditioned(4, (3,)),)),
    ("qr", lambda a: linalg.qr(a)[0], lambda: (rng.standard_normal((3, 5, 3)),)),
    ("triangular_solve", lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
     lambda: (_tri(4, True, (3,)), rng.standard_normal((3, 4, 2)))),
    ("eigh", lambda a: _sign_free(*linalg.eigh(a)), lambda: (_sym_separated(4, (3,))[0],)),
    ("svd", lambda a: _sign_free(*linalg.svd(a)), lambda: (rng.standard_normal((3, 5, 3)),)),
    ("svd_values", lambda a: linalg.svd(a, compute_uv=False),
     lambda: (rng.standard_normal((3, 2, 4)),)),
    ("eigvalsh", linalg.eigvalsh, lambda: (_sym_separated(4, (3,))[0],)),
    ("pinv", linalg.pinv, lambda: (rng.standard_normal((3, 5, 3)),)),
    ("pinv_rtol", linalg.pinv, lambda: (_low_rank(4, 4, 2, (3,)), np.array([1e-8, 0.3, 0.9]))),
    ("lstsq", lambda a, b: jnp.concatenate([jnp.ravel(v) for v in linalg.lstsq(a, b)]),
     lambda: (rng.standard_normal((3, 5, 3)), rng.standard_normal((3, 5, 2)))),
    ("matrix_rank", linalg.matrix_rank,
     lambda: (np.stack([_low_rank(4, 3, r) for r in (1, 2, 3)]),)),
    ("matrix_power", lambda a: linalg.matrix_power(a, -3), lambda: (_well_conditioned(3, (3,)),)),
    ("cond", lambda a: linalg.cond(a, 1), lambda: (_well_conditioned(3, (3,)),)),
    ("matrix_norm", lambda a: linalg.matrix_norm(a, ord=2),
     lambda: (rng.standard_normal((3, 4, 2)),)),
    ("multi_dot", lambda a, b: linalg.multi_dot([a, b, a.T]),
     lambda: (rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 4, 4)))),
])
def test_vmap_matches_a_loop(name, f, make):
    args = make()
    out = _np(fnx.vmap(f)(*args))
    expected = np.stack([_np(f(*[a[i] for a in args])) for i in range(3)])
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_eigh_and_svd_under_jit_vmap_and_grad():
    a, _ = _sym_separated(4, (3,))
    x = _separated_singular(5, 3, (3,))
    eigh_loss = _eigh_loss(rng.standard_normal(4), rng.standard_normal(4))
    svd_loss = _svd_loss(rng.standard_normal(3), rng.standard_normal(3),
                         rng.standard_normal(3), full_matrices=False)
    for loss, batch in ((eigh_loss, a), (svd_loss, x)):
        per_matrix = np.stack([_np(fnx.grad(loss)(m)) for m in batch])
        for g in (fnx.vmap(fnx.grad(loss)), fnx.jit(fnx.vmap(fnx.grad(loss))),
                  fnx.vmap(fnx.jit(fnx.grad(loss))), fnx.vmap(fnx.grad(fnx.jit(loss)))):
            np.testing.assert_allclose(_np(g(batch)), per_matrix, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(fnx.jit(fnx.vmap(loss))(batch)),
                                   [float(loss(m)) for m in batch], rtol=1e-12)
    w, v = fnx.jit(linalg.eigh)(a)
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose((_np(v) * _np(w)[..., None, :]) @ np.swapaxes(_np(v), -1, -2), a,
                               atol=1e-12)
    u, s, vh = fnx.jit(lambda x: linalg.svd(x, full_matrices=False))(x)
    np.testing.assert_allclose((_np(u) * _np(s)[..., None, :]) @ _np(vh), x, atol=1e-12)
    s_only = fnx.vmap(fnx.jit(lambda x: linalg.svd(x, compute_uv=False)))(x)
    np.testing.assert_allclose(_np(s_only), np.linalg.svd(x, compute_uv=False), rtol=1e-12)


@pytest.mark.cuda
def test_eigh_and_svd_on_gpu_match_the_cpu(gpu, cpu):
    a, _ = _sym_separated(4, (2,))
    x = _separated_singular(5, 3, (2,))
    eigh_loss = _eigh_loss(rng.standard_normal(4), rng.standard_normal(4))
    svd_loss = _svd_loss(rng.standard_normal(3), rng.standard_normal(3),
                         rng.standard_normal(3), full_matrices=False)
    for loss, batch in ((eigh_loss, a), (svd_loss, x)):
        for f in (fnx.vmap(loss), fnx.vmap(fnx.grad(loss)), fnx.jit(fnx.vmap(fnx.grad(loss)))):
            expected = _np(f(fnx.device_put(batch, cpu)))
            for _ in range(3):      # eager warm-up, capture, replay under jit
                out = f(fnx.device_put(batch, gpu))
                assert out._backend is gpu
                np.testing.assert_allclose(_np(out), expected, rtol=1e-8, atol=1e-10)


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


# ---------------------------------------------------------------------------------------------
# Complex matrices: JAX's results and JAX's gradient convention


def _complex_cases(n=3):
    """Functions of a complex (n, n) matrix whose outputs do not depend on the arbitrary
    phases of eigenvectors and singular vectors; m is jnp or jax.numpy, sl its scipy.linalg."""
    def herm(m, a):
        return a @ m.conj(a).T + n * m.eye(n)

    def eig_mix(m, sl, a, b):
        w, v = m.linalg.eigh(herm(m, a))
        return w, (v * m.sqrt(w)) @ m.conj(v).T

    def svd_mix(m, sl, a, b):
        u, s, vh = m.linalg.svd(a, full_matrices=False)
        return s, (u * m.log(s)) @ vh

    return {
        "cholesky": lambda m, sl, a, b: m.linalg.cholesky(herm(m, a)),
        "solve": lambda m, sl, a, b: m.linalg.solve(a, b),
        "inv": lambda m, sl, a, b: m.linalg.inv(a),
        "det": lambda m, sl, a, b: m.linalg.det(a),
        "slogdet": lambda m, sl, a, b: tuple(m.linalg.slogdet(a)),
        "qr": lambda m, sl, a, b: tuple(m.linalg.qr(a)),
        "qr_tall": lambda m, sl, a, b: tuple(m.linalg.qr(m.concatenate([a, b.T]))),
        "eigh": eig_mix,
        "svd": svd_mix,
        "svd_wide": lambda m, sl, a, b: svd_mix(m, sl, m.concatenate([a, b], axis=1), b),
        "svdvals": lambda m, sl, a, b: m.linalg.svd(a, compute_uv=False),
        "triangular_solve": lambda m, sl, a, b: sl.solve_triangular(m.tril(a) + 3 * m.eye(n),
                                                                     b, lower=True),
        "triangular_solve_upper_h": lambda m, sl, a, b: sl.solve_triangular(
            m.triu(a) + 3 * m.eye(n), b, lower=False, trans="C"),
        "lstsq": lambda m, sl, a, b: m.linalg.lstsq(m.concatenate([a, b.T]),
                                                    m.concatenate([b, b[:2]]))[0],
        "pinv": lambda m, sl, a, b: m.linalg.pinv(a),
        "cho_solve": lambda m, sl, a, b: sl.cho_solve(sl.cho_factor(herm(m, a)), b),
    }


@pytest.mark.parametrize("name", list(_complex_cases()))
def test_complex_linalg_values_and_gradients_as_jax(name):
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    import jax.scipy.linalg as jsl
    rng = np.random.default_rng()
    n = 3
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)) + 2 * np.eye(n)
    b = rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2))
    f = _complex_cases(n)[name]

    def loss(m, sl, weights):
        # a real function of every output: the gradient is JAX's conjugate convention
        def value(a, b):
            outs = f(m, sl, a, b)
            outs = outs if isinstance(outs, tuple) else (outs,)
            return sum(m.sum(m.real(o * w)) for o, w in zip(outs, weights))
        return value

    with jax.enable_x64(True):
        want = f(jax.numpy, jsl, a, b)
        want = want if isinstance(want, tuple) else (want,)
        weights = [rng.standard_normal(np.shape(o)) + 1j * rng.standard_normal(np.shape(o))
                   for o in want]
        want_grads = jax.grad(loss(jax.numpy, jsl, weights), argnums=(0, 1))(a, b)
    got = f(jnp, fnx.scipy.linalg, a, b)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        assert g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9)
    got_grads = fnx.grad(loss(jnp, fnx.scipy.linalg, weights), argnums=(0, 1))(a, b)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-7, atol=1e-9)


def test_eig_of_general_matrices_matches_jax(rng):
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((3, 4, 4))
    w, v = jnp.linalg.eig(jnp.asarray(a))
    assert (w.dtype, v.dtype, w.shape, v.shape) == (np.complex128, np.complex128, (3, 4), (3, 4, 4))
    np.testing.assert_allclose(np.asarray(a) @ np.asarray(v),
                               np.asarray(v) * np.asarray(w)[:, None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(v), axis=-2), 1.0, rtol=1e-12)
    want = np.asarray(jax.numpy.linalg.eigvals(a))      # in float32 unless JAX has x64 on
    np.testing.assert_allclose(np.sort_complex(np.asarray(jnp.linalg.eigvals(a))),
                               np.sort_complex(want), atol=1e-4)
    np.testing.assert_allclose(fnx.jit(jnp.linalg.eigvals)(a), jnp.linalg.eigvals(a))
    np.testing.assert_allclose(fnx.vmap(jnp.linalg.eigvals)(a), jnp.linalg.eigvals(a))
    assert jnp.linalg.eigvals(a.astype(np.float32)).dtype == np.complex64
    with pytest.raises(fnx.ShapeError, match=r"square.*\(3, 4\)"):
        jnp.linalg.eig(jnp.ones((3, 4)))

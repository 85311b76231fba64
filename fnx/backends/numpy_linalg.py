"""CPU impls of the linear-algebra primitives (fnx/core/linalg_prims.py).

They take any leading batch dimensions. Each works on the array module its operand came from
(NumPy here; CuPy when the GPU backend reuses this table), so nothing here imports CuPy. SciPy's
LAPACK wrappers are used when SciPy is installed, with NumPy fallbacks otherwise.
"""
from __future__ import annotations

import importlib

import numpy as np

from ..core import linalg_prims as P


def array_module(*xs):
    """The array module of the operands: numpy, or the GPU backend's (cupy) if any operand is
    one of its arrays (the GPU backend passes scalars as NumPy scalars)."""
    for x in xs:
        if not isinstance(x, (np.ndarray, np.generic)):
            return importlib.import_module(type(x).__module__.split(".")[0])
    return np


_xp = array_module


def _scipy_linalg():
    try:
        import scipy.linalg
        return scipy.linalg
    except ImportError:
        return None


def _swap(x):
    return x.swapaxes(-1, -2)


def _unit_lower_or_upper(xp, a, lower, unit_diagonal):
    tri = xp.tril(a) if lower else xp.triu(a)
    if unit_diagonal:
        eye = xp.tril(xp.triu(xp.ones_like(a)))
        tri = (xp.tril(a, -1) if lower else xp.triu(a, 1)) + eye
    return tri


def _substitute(m, b, lower):
    """``m^-1 b`` for triangular ``m`` by plain forward or back substitution, in IEEE
    arithmetic: a zero pivot gives inf or NaN."""
    n = m.shape[0]
    x = np.zeros(b.shape, np.result_type(m, b))
    with np.errstate(all="ignore"):
        for i in (range(n) if lower else reversed(range(n))):
            done = slice(0, i) if lower else slice(i + 1, n)
            x[i] = (b[i] - m[i, done] @ x[done]) / m[i, i]
    return x


def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if not left_side:   # x op(a) = b  <=>  op(a)^T x^T = b^T
        return _swap(triangular_solve(a, _swap(b), left_side=True, lower=lower,
                                      transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                      unit_diagonal=unit_diagonal))
    if conjugate_a:
        a = a.conj()
    xp = _xp(a)
    sl = _scipy_linalg() if xp is np else None
    if sl is not None:
        out = np.empty(b.shape, np.result_type(a, b))
        for idx in np.ndindex(*a.shape[:-2]):
            try:
                out[idx] = sl.solve_triangular(a[idx], b[idx], trans=1 if transpose_a else 0,
                                               lower=lower, unit_diagonal=unit_diagonal,
                                               check_finite=False)
            except np.linalg.LinAlgError:
                # a zero on the diagonal: IEEE results (inf, NaN), as XLA's solve gives,
                # instead of an exception that jit and vmap could not report per matrix
                tri = _unit_lower_or_upper(np, a[idx], lower, unit_diagonal)
                out[idx] = _substitute(tri.T if transpose_a else tri, b[idx],
                                       lower != transpose_a)
        return out
    tri = _unit_lower_or_upper(xp, a, lower, unit_diagonal)
    return xp.linalg.solve(_swap(tri) if transpose_a else tri, b)


def cholesky(x):
    xp = _xp(x)
    try:
        with np.errstate(invalid="ignore"):
            out = xp.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        out = None
    if out is None or not bool(xp.isfinite(out).all()):
        # not positive definite somewhere: NaN matrices there, as in JAX
        out = xp.empty_like(x)
        for idx in np.ndindex(*x.shape[:-2]):
            try:
                out[idx] = xp.linalg.cholesky(x[idx])
            except np.linalg.LinAlgError:
                out[idx] = np.nan
        out = xp.where(xp.isfinite(out).all(axis=(-1, -2), keepdims=True), out, np.nan)
    return xp.tril(out)


def lu(x):
    xp = _xp(x)
    sl = _scipy_linalg() if xp is np else None
    if sl is not None and x.ndim == 2 and x.size:
        import warnings
        with warnings.catch_warnings():     # a singular matrix is no warning (as in JAX)
            warnings.simplefilter("ignore", sl.LinAlgWarning)
            lu_, piv = sl.lu_factor(x, check_finite=False)
        pivots = piv.astype(np.int32)
        return lu_, pivots, _permutation(np, pivots[None], x.shape[0])[0]
    return _lu_unblocked(xp, x)


def _lu_unblocked(xp, x):
    """Partial pivoting as in LAPACK's getf2, vectorised over the batch."""
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = min(m, n)
    a = x.reshape((-1, m, n)).copy()
    nb = a.shape[0]
    rows = xp.arange(nb)
    pivots = xp.zeros((nb, k), dtype=np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(k):
            p = xp.argmax(xp.abs(a[:, j:, j]), axis=1) + j
            pivots[:, j] = p
            row_j = a[:, j, :].copy()
            a[:, j, :] = a[rows, p, :]
            a[rows, p, :] = row_j
            if j + 1 < m:
                a[:, j + 1:, j] /= a[:, j, j][:, None]
                if j + 1 < n:
                    column, row = a[:, j + 1:, j], a[:, j, j + 1:]
                    a[:, j + 1:, j + 1:] -= column[:, :, None] * row[:, None, :]
    perm = _permutation(xp, pivots, m)
    return (a.reshape(x.shape), pivots.reshape(batch + (k,)), perm.reshape(batch + (m,)))


def _permutation(xp, pivots, m):
    """Row permutation from LAPACK's sequence of row swaps (pivots: (batch, k))."""
    nb, k = pivots.shape
    perm = xp.broadcast_to(xp.arange(m, dtype=np.int32), (nb, m)).copy()
    rows = xp.arange(nb)
    for j in range(k):
        p = pivots[:, j]
        tmp = perm[:, j].copy()
        perm[:, j] = perm[rows, p]
        perm[rows, p] = tmp
    return perm


def qr(x, *, full_matrices):
    xp = _xp(x)
    mode = "complete" if full_matrices else "reduced"
    if x.ndim == 2:
        return list(xp.linalg.qr(x, mode=mode))
    m, n = x.shape[-2:]
    flat = x.reshape((-1, m, n))
    parts = [xp.linalg.qr(flat[i], mode=mode) for i in range(flat.shape[0])]
    q = xp.stack([p[0] for p in parts]) if parts else None
    r = xp.stack([p[1] for p in parts]) if parts else None
    k = m if full_matrices else min(m, n)
    if q is None:
        q, r = xp.zeros((0, m, k), x.dtype), xp.zeros((0, k, n), x.dtype)
    return [q.reshape(x.shape[:-2] + (m, k)), r.reshape(x.shape[:-2] + (k, n))]


def _nan_where_not_finite(decompose, x, read):
    """``decompose(x)`` with NaN factors for the matrices whose ``read`` part holds a NaN or
    inf, as in JAX: LAPACK refuses some of them (SVD) and returns partial garbage for others
    (eigh). The batch's other matrices keep their factors, and nothing waits on the device."""
    xp = _xp(x)
    finite = xp.isfinite(read).all(axis=(-1, -2), keepdims=True)
    outs = decompose(xp.where(finite, x, 0))
    return [xp.where(finite if o.ndim == x.ndim else finite[..., 0], o, np.nan) for o in outs]


def eigh(x, *, lower):
    xp = _xp(x)

    def decompose(x):
        w, v = xp.linalg.eigh(x, UPLO="L" if lower else "U")
        return [v, w]
    return _nan_where_not_finite(decompose, x, xp.tril(x) if lower else xp.triu(x))


def svd(x, *, full_matrices, compute_uv):
    xp = _xp(x)

    def decompose(x):
        if not compute_uv:
            return [xp.linalg.svd(x, compute_uv=False)]
        u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
        return [s, u, vh]
    return _nan_where_not_finite(decompose, x, x)


impls = {
    P.triangular_solve_p: triangular_solve,
    P.cholesky_p: cholesky,
    P.lu_p: lambda x: list(lu(x)),
    P.qr_p: qr,
    P.eigh_p: eigh,
    P.svd_p: svd,
}

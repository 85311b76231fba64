"""fnx.scipy.linalg: jax.scipy.linalg, with SciPy's conventions where they differ from NumPy's.

SciPy's defaults are not NumPy's: ``cholesky`` gives the *upper* factor, ``qr`` the full
("complete") factors, ``lu`` a permutation *matrix* ``p`` with ``a = p @ l @ u``, ``eigh``
``(w, v)`` and ``solve_triangular`` the upper triangle. Everything is built on the
decomposition primitives (fnx/core/linalg_prims.py), so it differentiates and batches over
leading dimensions as jax.scipy.linalg does; ``fnx.numpy.linalg`` keeps NumPy's conventions.

>>> import fnx.scipy.linalg as sla
>>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
>>> c, lower = sla.cho_factor(a)          # upper by default, as in SciPy
>>> sla.cho_solve((c, lower), b)
Array([0.5, 0. ], dtype=float32)
>>> p, l, u = sla.lu(a)                   # a == p @ l @ u
>>> bool(jnp.allclose(p @ l @ u, a))
True
"""
from __future__ import annotations

import functools

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core import linalg_prims as _lp
from ..core.control_flow import cond, fori_loop, scan, switch
from ..core.custom_derivatives import custom_jvp
from ..core.errors import DTypeValueError, ShapeError
from ..numpy import linalg as _np_linalg
from ..numpy._core import promote_dtypes_inexact
from .. import linalg as _fnx_linalg
from ..lax.linalg import lu_pivots_to_permutation
from ..lax.qdwh import qdwh as _qdwh

# the same functions under SciPy's names and defaults
det = _np_linalg.det
inv = _np_linalg.inv
cho_solve = _fnx_linalg.cho_solve


def _inexact(*xs):
    return promote_dtypes_inexact(*(jnp.asarray(x) for x in xs))


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name} needs square matrices (..., n, n), got shape {a.shape}")


def _broadcast_batch(a, b):
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:]))


def _solve_vectors(a, b, solve_matrices):
    """``solve_matrices(a, B)`` for ``b`` either matrices (..., n, k) or, when it has one
    dimension fewer than ``a`` (jax.scipy's rule), vectors (..., n)."""
    vector = b.ndim == a.ndim - 1
    if vector:
        b = b[..., None]
    a, b = _broadcast_batch(a, b)
    x = solve_matrices(a, b)
    return x[..., 0] if vector else x


# ---------------------------------------------------------------------------------------------
# Cholesky


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of symmetric positive-definite ``a``: *upper* ``U`` with
    ``a = U.T @ U`` unless ``lower`` (SciPy's default, the opposite of NumPy's), reading only
    that triangle of ``a``. NaNs where ``a`` is not positive definite, as in JAX.

    >>> U = cholesky(jnp.array([[4.0, 2.0], [2.0, 3.0]]))   # U.T @ U == a
    """
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    _square("cholesky", a)
    # only the asked-for triangle is read (not symmetrized, as jax.scipy.linalg.cholesky)
    L = _lp.cholesky(a if lower else _lp.adjoint(a), symmetrize_input=False)
    return L if lower else _lp.adjoint(L)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve``: the Cholesky factor of ``a`` (upper unless
    ``lower``). Unlike SciPy's, the other triangle of ``c`` holds zeros, not leftovers.

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> cho_solve(cho_factor(a), b)
    Array([0.5, 0. ], dtype=float32)
    """
    return cholesky(a, lower=lower), lower


# ---------------------------------------------------------------------------------------------
# LU


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """``(c @ Q, R)`` (``mode='right'``) or ``(Q @ c, R)`` (``'left'``) for ``a = Q R`` with ``Q``
    its first ``min(m, n)`` columns, conjugated with ``conjugate``; with ``pivoting`` also the
    column pivots, as SciPy's and JAX's.

    >>> a = jnp.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0], [1.0, 4.0]])
    >>> qtb, r = qr_multiply(a, jnp.array([2.0, 4.0, 5.0, 4.0]))
    >>> solve_triangular(r, qtb).round(4)
    Array([2. , 0.7], dtype=float32)
    """
    del overwrite_a, overwrite_c
    a, c = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(c))
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    one_dimensional = c.ndim == 1
    if one_dimensional:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"qr_multiply: Q @ c needs c with {k} rows (a has shape {a.shape}), "
                         f"got c of shape {c.shape}")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"qr_multiply: c @ Q needs c with {m} columns (a has shape "
                         f"{a.shape}), got c of shape {c.shape}")
    q, r, *pivots = qr(a, mode="economic", pivoting=pivoting)
    q = jnp.conj(q) if conjugate else q
    cq = jnp.matmul(q, c) if mode == "left" else jnp.matmul(c, q)
    if one_dimensional:
        cq = cq.ravel()
    return (cq, r, *pivots)


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: L (unit lower, below the diagonal) and U packed in one matrix, and
    LAPACK's 0-based row pivots, for ``lu_solve``.

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> lu_and_piv = lu_factor(a)
    >>> lu_solve(lu_and_piv, b)
    Array([0.5, 0. ], dtype=float32)
    """
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    lu_, pivots, _ = _lp.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a @ x = b`` (``trans`` 0) or ``a.T @ x = b`` (1 or 2) from ``lu_factor(a)``;
    ``b`` is (..., n) when it has one dimension fewer than ``lu``, else (..., n, k).

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> lu_solve(lu_factor(a), b, trans=1)   # a.T @ x == b
    Array([0.5, 0. ], dtype=float32)
    """
    del overwrite_b, check_finite
    lu_, pivots = lu_and_piv
    lu_, b = _inexact(lu_, b)
    _square("lu_solve", lu_)
    transpose = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}[trans]
    perm = lu_pivots_to_permutation(pivots, lu_.shape[-1])

    def solve(lu_, b):
        perm_b = jnp.broadcast_to(perm, lu_.shape[:-2] + perm.shape[-1:])[..., None]
        if not transpose:    # P a = L U: x = U^-1 L^-1 P b
            y = _lp.triangular_solve(lu_, jnp.take_along_axis(b, perm_b, axis=-2),
                                     left_side=True, lower=True, unit_diagonal=True)
            return _lp.triangular_solve(lu_, y, left_side=True, lower=False)
        # a.T = U.T L.T P: x = P^-1 L^-T U^-T b, P^-1 gathering with the inverse permutation
        y = _lp.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True)
        z = _lp.triangular_solve(lu_, y, left_side=True, lower=True, transpose_a=True,
                                 unit_diagonal=True)
        return jnp.take_along_axis(z, jnp.argsort(perm_b, axis=-2), axis=-2)
    return _solve_vectors(lu_, b, solve)


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """LU decomposition with partial pivoting: ``(p, l, u)`` with ``a == p @ l @ u``, ``p`` a
    permutation matrix, ``l`` unit lower (m, k) and ``u`` upper (k, n), k = min(m, n); with
    ``permute_l``, ``(p @ l, u)``.

    >>> p, l, u = lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    """
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    if a.ndim < 2:
        raise ShapeError(f"lu needs matrices (..., m, n), got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    lu_, _, perm = _lp.lu(a)
    l = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    u = jnp.triu(lu_[..., :k, :])
    # a[perm] = l @ u, so a = p @ l @ u with p[perm[i], i] = 1
    p = (perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None]).astype(a.dtype)
    if permute_l:
        return jnp.take_along_axis(l, jnp.argsort(perm, axis=-1)[..., None], axis=-2), u
    return p, l, u


# ---------------------------------------------------------------------------------------------
# QR


def _qr_pivots(a):
    """Column pivots of LAPACK's geqp3 (on the host: no primitive computes them)."""
    import scipy.linalg
    a = np.asarray(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    piv = [scipy.linalg.qr(x, mode="r", pivoting=True)[1] for x in flat]
    return np.asarray(piv, np.int32).reshape(a.shape[:-2] + (a.shape[-1],))


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR decomposition ``a = q @ r``: ``mode`` "full" (q: (m, m), SciPy's default),
    "economic" (q: (m, k), r: (k, n)) or "r" (``(r,)``, a 1-tuple holding the full r, as in
    SciPy). With ``pivoting``, also column pivots ``p`` with ``a[:, p] == q @ r`` (LAPACK's
    choice, found on the host; the factors still differentiate, for the pivots found).

    >>> a = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> q, r = qr(a, mode="economic")
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    >>> q, r, p = qr(a, pivoting=True)
    >>> p
    Array([1, 0], dtype=int32)
    """
    del overwrite_a, lwork, check_finite
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}"
                         + (" ('raw' is not supported, as in JAX)" if mode == "raw" else ""))
    (a,) = _inexact(a)
    if a.ndim < 2:
        raise ShapeError(f"qr needs matrices (..., m, n), got shape {a.shape}")
    p = None
    if pivoting:
        from ..core.callbacks import pure_callback
        from ..core.api import ShapeDtypeStruct, stop_gradient
        p = pure_callback(_qr_pivots, ShapeDtypeStruct(a.shape[:-2] + a.shape[-1:], np.int32),
                          stop_gradient(a), vmap_method="expand_dims")
        a = jnp.take_along_axis(a, p[..., None, :], axis=-1)
    q, r = _lp.qr(a, full_matrices=mode != "economic")   # "r" is full R, (m, n)
    if mode == "r":
        return (r,) if p is None else (r, p)
    return (q, r) if p is None else (q, r, p)


# ---------------------------------------------------------------------------------------------
# Solvers


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solve ``a @ x = b`` (``trans`` 0 or "N") or ``a.T @ x = b`` (1, "T", 2, "C") for
    triangular ``a``, reading its upper triangle unless ``lower``; ``b`` is (..., n) when it
    has one dimension fewer than ``a``, else (..., n, k).

    >>> U = jnp.array([[2.0, 1.0], [0.0, 1.0]])
    >>> solve_triangular(U, jnp.array([3.0, 1.0]))   # upper by default, as in SciPy
    Array([1., 1.], dtype=float32)
    """
    del overwrite_b, debug, check_finite
    transpose = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}[trans]
    a, b = _inexact(a, b)
    _square("solve_triangular", a)
    return _solve_vectors(a, b, lambda a, b: _lp.triangular_solve(
        a, b, left_side=True, lower=lower, transpose_a=transpose, conjugate_a=trans in (2, "C"),
        unit_diagonal=unit_diagonal))


def _symmetric_from(a, lower):
    """The symmetric matrix that ``a``'s lower (or upper) triangle describes."""
    t = jnp.tril(a) if lower else jnp.triu(a)
    return t + _lp.swap_last(t) - _lp.eye_like(a) * a


def _pos_solve_value(a, b, lower):
    L = _lp.cholesky(_symmetric_from(a, lower), symmetrize_input=False)
    return cho_solve((L, True), b)


_pos_solve = custom_jvp(_pos_solve_value, nondiff_argnums=(2,))


@_pos_solve.defjvp
def _pos_solve_jvp(lower, primals, tangents):
    # the derivative of a linear solve with all of a, as JAX's (a custom_linear_solve whose
    # matvec is a @ x): dx = a^-1 (db - da x), with the same Cholesky factor
    (a, b), (da, db) = primals, tangents
    x = _pos_solve(a, b, lower)
    return x, _pos_solve(a, db - _lp.matmul(*_broadcast_batch(da, x)), lower)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          check_finite: bool = True, assume_a: str = "gen", transposed: bool = False):
    """Solve ``a @ x = b`` for square ``a``: ``assume_a`` "gen", "sym" or "her" (LU with
    partial pivoting of all of ``a``, as in JAX) or "pos" (positive definite: the Cholesky
    factor of its ``lower`` or upper triangle). ``b`` is (n,) or (..., n, k).

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> solve(a, b, assume_a="pos")
    Array([0.5, 0. ], dtype=float32)
    """
    del overwrite_a, overwrite_b, check_finite
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: assume_a must be 'gen', 'sym', 'her' or 'pos', got "
                         f"{assume_a!r}")
    a, b = _inexact(a, b)
    _square("solve", a)
    if transposed:
        a = _lp.swap_last(a)
    if assume_a != "pos":
        return _np_linalg.solve(a, b)
    if b.ndim == 1:
        return _pos_solve(a, b[:, None], bool(lower))[..., 0]
    return _pos_solve(*_broadcast_batch(a, b), bool(lower))


# ---------------------------------------------------------------------------------------------
# Eigenvalues, SVD, polar decomposition


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
    """Eigenvalues ``w`` (ascending) and eigenvectors ``v`` (columns) of symmetric ``a``:
    ``(w, v)``, or ``w`` with ``eigvals_only``. As in JAX, ``a`` is symmetrized
    (``(a + a.T) / 2``, which makes the derivative the symmetric one), so ``lower`` changes
    nothing for symmetric input. With ``b`` (symmetric positive definite), the generalized
    problem ``a v = w b v`` (``type=1``), ``v`` normalized so that ``v.T @ b @ v == I``, as in
    SciPy (JAX has no ``b``).

    >>> w, v = eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
    """
    del overwrite_a, overwrite_b, turbo, check_finite
    if eigvals is not None:
        raise NotImplementedError("eigh: eigvals (a subset of the eigenvalues) is not "
                                  "supported, as in JAX")
    (a,) = _inexact(a)
    _square("eigh", a)
    if b is None:
        v, w = _lp.eigh(a, lower=lower)
        return w if eigvals_only else (w, v)
    if type != 1:
        raise NotImplementedError(f"eigh: only type=1 (a v = w b v) is supported, got {type}")
    a, b = _inexact(a, b)
    a, b = _broadcast_batch(a, b)
    # b = L L^T turns a v = w b v into (L^-1 a L^-T) y = w y with v = L^-T y
    L = _lp.cholesky(b)
    c = _lp.triangular_solve(L, a, left_side=True, lower=True)
    c = _lp.triangular_solve(L, c, left_side=False, lower=True, transpose_a=True)
    y, w = _lp.eigh(c)
    if eigvals_only:
        return w
    return w, _lp.triangular_solve(L, y, left_side=True, lower=True, transpose_a=True)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """Singular value decomposition ``a = u @ diag(s) @ vh``, ``s`` descending: ``(u, s, vh)``,
    or ``s`` alone without ``compute_uv``.

    >>> u, s, vh = svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), full_matrices=False)
    >>> s
    Array([4., 3.], dtype=float32)
    """
    del overwrite_a, check_finite, lapack_driver
    out = _np_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """Polar decomposition: ``(u, p)`` with ``a = u @ p`` (``side`` "right") or ``a = p @ u``
    ("left"), ``u`` with orthonormal columns (rows if n > m) and ``p`` positive semidefinite,
    over any leading batch dimensions. ``method="qdwh"`` iterates ``lax.linalg.qdwh`` (``eps``
    and ``max_iterations`` are its tolerance and step limit); ``"svd"`` forms
    ``u = U @ Vh`` from the SVD. The shapes QDWH does not reach (a wide matrix with side
    "right", a tall one with "left"; JAX raises NotImplementedError) are computed by the SVD.

    >>> u, p = polar(jnp.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> p.round(4)
    Array([[4., 2.],
           [2., 3.]], dtype=float32)
    """
    a = jnp.asarray(a)
    if a.ndim < 2:
        raise ValueError(f"polar: the input must be at least a 2-D array, got shape {a.shape}")
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: unknown polar decomposition method {method!r}: 'qdwh' or "
                         f"'svd'")
    if not dtypes.is_float(a.dtype):
        raise DTypeValueError(f"polar needs a floating-point or complex matrix, got {a.dtype}")
    m, n = a.shape[-2:]
    if method == "qdwh" and side == "right" and m >= n:
        def one(x):
            u, p, _, _ = _qdwh(x, eps=eps, max_iterations=max_iterations)
            return u, p
    elif method == "qdwh" and side == "left" and m <= n:
        def one(x):     # a^H = u' h' gives a = h' u'^H
            u, p, _, _ = _qdwh(_lp.swap_last(jnp.conj(x)), eps=eps,
                               max_iterations=max_iterations)
            return _lp.swap_last(jnp.conj(u)), p
    else:
        one = functools.partial(_polar_by_svd, side=side)
    out_p = "(n,n)" if side == "right" else "(m,m)"
    return jnp.vectorize(one, signature=f"(m,n)->(m,n),{out_p}")(a)


def _polar_by_svd(a, side):
    u_svd, s, vh = _np_linalg.svd(a, full_matrices=False)
    s = s.astype(u_svd.dtype)
    if side == "right":     # a = U S Vh = (U Vh)(V S Vh)
        p = (jnp.conj(_lp.swap_last(vh)) * s[None, :]) @ vh
    else:                   # a = (U S U^H)(U Vh)
        p = (u_svd * s[None, :]) @ jnp.conj(_lp.swap_last(u_svd))
    return u_svd @ vh, p


# ---------------------------------------------------------------------------------------------
# Matrix exponential: Pade approximants with scaling and squaring (Higham, 2005), as JAX


_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _pade(order):
    """``(U, V)``, the odd and even parts of the degree-``order`` Pade approximant's
    numerator, so that exp(A) ~ (V - U)^-1 (V + U)."""
    b = _PADE[order]

    def uv(A):
        ident = jnp.eye(A.shape[-1], dtype=A.dtype)
        powers = [ident, A @ A]             # I, A^2, A^4, ...
        for _ in range(min(order, 7) // 2 - 1):
            powers.append(powers[-1] @ powers[1])
        if order == 13:     # A^6 (b13 A^6 + b11 A^4 + b9 A^2) saves the higher powers
            A2, A4, A6 = powers[1:4]
            U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4
                     + b[3] * A2 + b[1] * ident)
            V = (A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4
                 + b[2] * A2 + b[0] * ident)
            return U, V
        U = A @ sum(b[2 * i + 1] * p for i, p in enumerate(powers))
        V = sum(b[2 * i] * p for i, p in enumerate(powers))
        return U, V
    return uv


# the largest 1-norms for which each approximant is accurate (Higham's theta_m); a larger norm
# is scaled down by powers of two to the last one
_THETAS = {np.dtype(np.float64): ((3, 5, 7, 9, 13), (1.495585217958292e-002,
                                                     2.539398330063230e-001,
                                                     9.504178996162932e-001,
                                                     2.097847961257068e+000),
                                  5.371920351148152),
           np.dtype(np.float32): ((3, 5, 7), (4.258730016922831e-001, 1.880152677804762e+000),
                                  3.925724783138660)}


def _expm_2d(A, upper_triangular, max_squarings):
    orders, conds, maxnorm = _THETAS[np.dtype(np.float64 if A.dtype == np.float64
                                              else np.float32)]
    norm1 = jnp.max(jnp.sum(jnp.abs(A), axis=0))
    n_squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm1 / maxnorm)))
    A = A / jnp.power(2.0, n_squarings).astype(A.dtype)
    index = jnp.digitize(norm1, jnp.asarray(conds, norm1.dtype))
    U, V = switch(index, [_pade(m) for m in orders], A)
    P, Q = U + V, V - U
    if upper_triangular:
        R = _lp.triangular_solve(Q, P, left_side=True, lower=False)
    else:
        R = _np_linalg.solve(Q, P)

    def square(R, i):
        return cond(i < n_squarings, lambda x: x @ x, lambda x: x, R), None

    def squared(R):
        return scan(square, R, jnp.arange(max_squarings, dtype=n_squarings.dtype))[0]
    # a norm needing more squarings than allowed has overflowed: NaNs, as JAX gives
    return cond(n_squarings > max_squarings, lambda R: jnp.full_like(R, jnp.nan), squared, R)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential of square ``A`` (..., n, n), by Pade approximation with scaling
    and squaring (Higham, 2005), JAX's algorithm: the approximant's degree (3 to 13 in
    float64, 3 to 7 in float32) and the number of squarings follow ``A``'s 1-norm.
    ``upper_triangular`` uses a triangular solve for upper-triangular ``A``. Differentiable.

    >>> expm(jnp.zeros((2, 2)))
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    (A,) = _inexact(A)
    _square("expm", A)
    one = lambda A: _expm_2d(A, upper_triangular, max_squarings)  # noqa: E731
    if A.ndim == 2:
        return one(A)
    return jnp.vectorize(one, signature="(n,n)->(n,n)")(A)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """The Frechet derivative of ``expm`` at ``A`` in the direction ``E``: ``(expm(A),
    L(A, E))``, or ``L(A, E)`` alone without ``compute_expm`` (a forward-mode derivative).

    >>> A, E = jnp.zeros((2, 2)), jnp.eye(2)
    >>> expA, dexpA = expm_frechet(A, E)
    >>> dexpA
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    del method
    from ..core.api import jvp
    A, E = _inexact(A, E)
    if A.shape != E.shape:
        raise ShapeError(f"expm_frechet: A {A.shape} and E {E.shape} differ in shape")
    expA, dexpA = jvp(expm, (A,), (E.astype(A.dtype),))
    return (expA, dexpA) if compute_expm else dexpA


# ---------------------------------------------------------------------------------------------
# Special matrices


def block_diag(*arrs):
    """The block-diagonal matrix of ``arrs`` (scalars, vectors as rows, and matrices).

    >>> block_diag(jnp.ones((2, 2)), 3.0)
    Array([[1., 1., 0.],
           [1., 1., 0.],
           [0., 0., 3.]], dtype=float32)
    """
    if not arrs:
        arrs = (jnp.zeros((1, 0)),)
    arrs = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    bad = [i for i, a in enumerate(arrs) if a.ndim > 2]
    if bad:
        raise ValueError(f"block_diag: arguments must have at most 2 dimensions, got shape "
                         f"{arrs[bad[0]].shape} at argument {bad[0]}")
    dtype = jnp.result_type(*arrs)
    total = sum(a.shape[1] for a in arrs)
    rows, col = [], 0
    for a in arrs:
        rows.append(jnp.pad(a.astype(dtype), ((0, 0), (col, total - col - a.shape[1]))))
        col += a.shape[1]
    return jnp.concatenate(rows, axis=0)


from .schur import funm, rsf2csf, schur, sqrtm  # noqa: E402
from ._special_matrices import (  # noqa: E402
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard, hankel,
    helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz)
from .reductions_to_form import eigh_tridiagonal, hessenberg  # noqa: E402
from .sylvester import solve_sylvester  # noqa: E402

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
           "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm",
           "expm_frechet", "fiedler", "fiedler_companion", "funm", "hadamard", "hankel",
           "helmert", "hessenberg", "hilbert", "inv", "invhilbert", "invpascal",
           "leslie", "lu", "lu_factor", "lu_pivots_to_permutation", "lu_solve",
           "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve",
           "solve_sylvester", "solve_triangular", "sqrtm", "svd", "toeplitz"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

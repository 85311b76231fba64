"""fnx.linalg: factorisations and solvers in one place (the functions of jax.numpy.linalg,
jax.scipy.linalg and jax.scipy.sparse.linalg that fnx has).

``cholesky``, ``triangular_solve``, ``lu``, ``qr``, ``eigh`` and ``svd`` are primitives;
``solve``, ``inv``, ``det`` and ``slogdet`` are built on ``lu`` (partial pivoting, any square
matrix); ``cho_solve`` on ``triangular_solve``; ``pinv``, ``lstsq``, ``matrix_rank``, ``cond``
and the spectral norms on ``svd``; ``cg`` iterates matrix-vector products. All
differentiate to any order (``eigh`` and ``svd`` where the eigenvalues or singular values are
distinct) and batch over leading dimensions (or with ``vmap``).

>>> import fnx.linalg as linalg
>>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
>>> L = linalg.cholesky(a)
>>> linalg.cho_solve((L, True), b)
Array([0.5, 0. ], dtype=float32)
"""
from __future__ import annotations

from typing import Callable

from . import numpy as jnp
from .core import dtypes, lax
from .core import linalg_prims as _lp
from .core.control_flow import while_loop
from .core.errors import ConcretizationTypeError, ShapeError
from .numpy._core import promote_dtypes_inexact
from .numpy.linalg import EighResult, QRResult, SlogdetResult, SVDResult, cholesky, cond, cross, \
    det, diagonal, eigh, eigvalsh, inv, lstsq, matmul, matrix_norm, matrix_power, matrix_rank, \
    matrix_transpose, multi_dot, norm, outer, pinv, qr, slogdet, solve, svd, svdvals, \
    tensordot, tensorinv, tensorsolve, trace, vecdot, vector_norm

lu = _lp.lu


def triangular_solve(a, b, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) @ x = b`` (``left_side=True``) or ``x @ op(a) = b`` with ``op(a)`` = ``a``
    or ``a.T`` (``transpose_a``), reading only the ``lower`` or upper triangle of ``a``
    (jax.lax.linalg.triangular_solve, including its defaults).

    >>> L, b = jnp.array([[2.0, 0.0], [1.0, 1.0]]), jnp.array([[2.0], [3.0]])
    >>> triangular_solve(L, b, left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float32)
    """
    a, b = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(b))
    return _lp.triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal)


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False):
    """SciPy's form: solve ``a @ x = b`` (``trans=0``/"N") or ``a.T @ x = b`` (1/"T") for
    triangular ``a``; ``b`` is a vector (n,) or matrices (..., n, k).

    >>> U = jnp.array([[2.0, 1.0], [0.0, 1.0]])
    >>> solve_triangular(U, jnp.array([3.0, 1.0]))   # upper by default, as in SciPy
    Array([1., 1.], dtype=float32)
    """
    transpose = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}[trans]
    a, b = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(b))
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    a, b = _broadcast_batch(a, b)
    x = _lp.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose,
                             unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


def _broadcast_batch(a, b):
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:]))


def cho_factor(a, lower: bool = False):
    """``(c, lower)`` for ``cho_solve``: the Cholesky factor (upper unless ``lower``).

    >>> c, lower = fnx.linalg.cho_factor(jnp.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> jnp.triu(c), lower
    (Array([[2., 1.],
           [0., 2.]], dtype=float32), False)
    """
    return cholesky(a, upper=not lower), lower


def cho_solve(c_and_lower, b):
    """Solve ``a @ x = b`` given ``(c, lower)``, the Cholesky factor of ``a`` (lower, or upper
    ``c = L.T``), as ``jax.scipy.linalg.cho_solve``.

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> cho_solve((cholesky(a), True), b)
    Array([0.5, 0. ], dtype=float32)
    """
    c, lower = c_and_lower
    c, b = promote_dtypes_inexact(jnp.asarray(c), jnp.asarray(b))
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    if b.shape[-2] != c.shape[-1]:
        raise ShapeError(f"cho_solve: factor of shape {c.shape} does not fit b of shape "
                         f"{b.shape}")
    c, b = _broadcast_batch(c, b)
    # a = L L^H: solve L y = b, then L^H x = y (with L = c^H when c is upper)
    y = _lp.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                             conjugate_a=not lower)
    x = _lp.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                             conjugate_a=lower)
    return x[..., 0] if vector else x


# ---------------------------------------------------------------------------------------------
# Conjugate gradient


def _vdot(a, b):
    return jnp.sum(a * b)


def cg(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       M: Callable | None = None):
    """Conjugate gradient for symmetric positive-definite ``A`` (a matrix or a function
    ``v -> A @ v``), stopping when ``|r| <= max(tol * |b|, atol)`` or after ``maxiter``
    (default ``10 * b.size``) steps. ``M`` is an optional preconditioner (a function
    approximating ``A^-1``). Returns ``(x, None)``, as ``jax.scipy.sparse.linalg.cg``.

    With concrete inputs it stops as soon as it converges; inside ``vmap``/``jit`` it runs a
    ``lax.while_loop``.

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> x, _ = cg(lambda v: a @ v, b, tol=1e-8)
    >>> bool(jnp.allclose(a @ x, b, atol=1e-5))
    True
    """
    b = jnp.asarray(b)
    if dtypes.kind(b.dtype) != "f":
        b = b.astype(jnp.float32)
    matvec = A if callable(A) else (lambda v, A=jnp.asarray(A): jnp.matmul(A, v))
    precond = M if M is not None else (lambda v: v)
    maxiter = 10 * b.size if maxiter is None else int(maxiter)
    x = jnp.zeros_like(b) if x0 is None else jnp.asarray(x0, b.dtype)
    atol2 = jnp.maximum(tol ** 2 * _vdot(b, b), atol ** 2)
    r = b - matvec(x)
    z = precond(r)
    state = (x, r, _vdot(r, z), z)

    def converged(state):
        _, r, gamma, _ = state
        rs = gamma if M is None else _vdot(r, r)
        return rs <= atol2

    def step(state):
        x, r, gamma, p = state
        Ap = matvec(p)
        alpha = gamma / _vdot(p, Ap)
        x, r = x + alpha * p, r - alpha * Ap
        z = precond(r)
        gamma_new = _vdot(r, z)
        return x, r, gamma_new, z + (gamma_new / gamma) * p

    for k in range(maxiter):
        try:
            done = bool(converged(state))
        except ConcretizationTypeError:
            return _cg_traced(state, step, converged, maxiter - k)[0], None
        if done:
            break
        state = step(state)
    return state[0], None


def _cg_traced(state, step, converged, steps_left):
    def cond(carry):
        k, s = carry
        return jnp.logical_and(k < steps_left, jnp.logical_not(converged(s)))

    def body(carry):
        k, s = carry
        return k + 1, step(s)
    return while_loop(cond, body, (jnp.asarray(0, jnp.int32), state))[1]


__all__ = ["cholesky", "cho_factor", "cho_solve", "triangular_solve", "solve_triangular", "lu",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "solve", "inv", "pinv", "lstsq", "det",
           "slogdet", "matrix_rank", "matrix_power", "multi_dot", "norm", "matrix_norm",
           "vector_norm", "cond", "trace", "diagonal", "outer", "tensordot", "matmul",
           "matrix_transpose", "vecdot", "cross", "tensorinv", "tensorsolve", "cg",
           "EighResult", "QRResult", "SlogdetResult", "SVDResult"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

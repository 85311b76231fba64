"""fnx.scipy.sparse.linalg: Krylov solvers for ``A x = b`` with ``A`` a matrix or a function
``v -> A @ v`` (jax.scipy.sparse.linalg): ``cg`` (symmetric positive definite), ``gmres`` and
``bicgstab`` (any nonsingular ``A``). ``b`` may be a pytree of arrays, as in JAX: the solvers
iterate on its flattened vector. Each returns ``(x, info)``.

>>> from fnx.scipy.sparse.linalg import gmres
>>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
>>> x, info = gmres(lambda v: a @ v, b, tol=1e-6)
>>> bool(jnp.allclose(a @ x, b, atol=1e-5)), int(info)
(True, 0)
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ... import linalg as _fnx_linalg
from ... import numpy as jnp
from ...core.control_flow import fori_loop, while_loop
from ...flatten_util import ravel_pytree


def _flat_problem(A, b, x0, M):
    """The problem on flat vectors: ``(matvec, b, x0, precond, unravel)``."""
    b_flat, unravel = ravel_pytree(b)
    if np.dtype(b_flat.dtype).kind not in "fc":
        b_flat = b_flat.astype(jnp.float32)
    dtype = b_flat.dtype
    if x0 is None:
        x0_flat = jnp.zeros_like(b_flat)
    else:
        x0_flat, _ = ravel_pytree(x0)
        if x0_flat.shape != b_flat.shape:
            raise ValueError(f"x0 and b must have matching shapes: {x0_flat.shape} (flattened) "
                             f"vs {b_flat.shape}")
        x0_flat = x0_flat.astype(dtype)

    def lift(f):
        if f is None:
            return None
        if not callable(f):
            mat = jnp.asarray(f)
            return lambda v: jnp.matmul(mat, v).astype(dtype)
        return lambda v: ravel_pytree(f(unravel(v)))[0].astype(dtype)
    return lift(A), b_flat, x0_flat, lift(M), unravel


def _identity(v):
    return v


def cg(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       M: Callable | None = None):
    """Conjugate gradient for symmetric positive-definite ``A``, stopping when
    ``|r| <= max(tol * |b|, atol)`` or after ``maxiter`` (default ``10 * size``) steps; ``M``
    approximates ``A^-1``. Returns ``(x, None)``, as JAX.

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> x, _ = cg(lambda v: a @ v, b, tol=1e-8)
    >>> bool(jnp.allclose(a @ x, b, atol=1e-5))
    True
    """
    matvec, b_flat, x0_flat, precond, unravel = _flat_problem(A, b, x0, M)
    x, _ = _fnx_linalg.cg(matvec, b_flat, x0_flat, tol=tol, atol=atol, maxiter=maxiter,
                          M=precond)
    return unravel(x), None


def bicgstab(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Callable | None = None):
    """BiCGSTAB (van der Vorst, 1992) for nonsingular ``A``, with JAX's stopping rule
    (``|r| <= max(tol * |b|, atol)``, ``maxiter`` steps, default ``10 * size``, or a
    breakdown) and right preconditioner ``M``. Returns ``(x, None)``, as JAX.

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> x, _ = bicgstab(a, b)
    >>> bool(jnp.allclose(a @ x, b, atol=1e-5))
    True
    """
    matvec, b, x0, precond, unravel = _flat_problem(A, b, x0, M)
    precond = precond or _identity
    maxiter = 10 * b.size if maxiter is None else int(maxiter)
    atol2 = jnp.maximum(tol ** 2 * jnp.vdot(b, b), atol ** 2)
    one = jnp.ones((), b.dtype)

    def cond(s):
        _, r, *_, k = s
        return (jnp.vdot(r, r) > atol2) & (k < maxiter) & (k >= 0)   # k < 0: breakdown

    def body(s):
        x, r, rhat, alpha, omega, rho, p, q, k = s
        rho_ = jnp.vdot(rhat, r)
        beta = rho_ / rho * alpha / omega
        p_ = r + beta * (p - omega * q)
        phat = precond(p_)
        q_ = matvec(phat)
        alpha_ = rho_ / jnp.vdot(rhat, q_)
        s_ = r - alpha_ * q_
        early = jnp.vdot(s_, s_) < atol2     # s is small enough: the half step is enough
        shat = precond(s_)
        t = matvec(shat)
        omega_ = jnp.vdot(t, s_) / jnp.vdot(t, t)
        x_ = jnp.where(early, x + alpha_ * phat, x + alpha_ * phat + omega_ * shat)
        r_ = jnp.where(early, s_, s_ - omega_ * t)
        k_ = jnp.where((omega_ == 0) | (alpha_ == 0), -11, k + 1)
        k_ = jnp.where(rho_ == 0, -10, k_)
        return x_, r_, rhat, alpha_, omega_, rho_, p_, q_, k_

    r0 = b - matvec(x0)
    state = (x0, r0, r0, one, one, one, r0, r0, jnp.zeros((), jnp.int32))
    return unravel(while_loop(cond, body, state)[0]), None


def _safe_normalize(v, thresh):
    """``(v / |v|, |v|)``, or zeros and 0 where ``|v| <= thresh``."""
    norm = jnp.linalg.norm(v)
    big = norm > thresh
    return jnp.where(big, v / jnp.where(big, norm, 1), 0), jnp.where(big, norm, 0)


def _gmres_cycle(matvec, precond, b, x, unit_residual, residual_norm, restart):
    """One restart: build the ``restart``-dimensional Krylov space of ``M A`` by Arnoldi
    (classical Gram-Schmidt, twice), then take the step that minimizes the residual in it
    (the small least-squares problem through its normal equations, as JAX's "batched")."""
    n = b.shape[0]
    eps = float(jnp.finfo(b.dtype).eps)
    V = jnp.zeros((restart + 1, n), b.dtype).at[0].set(unit_residual)
    H = jnp.eye(restart, restart + 1, dtype=b.dtype)   # H[k] is column k of Hessenberg

    def arnoldi(k, carry):
        V, H, breakdown = carry
        w = precond(matvec(V[k]))
        w_norm = jnp.linalg.norm(w)
        h = V @ w
        w = w - V.T @ h
        h2 = V @ w            # "twice is enough" (Giraud et al., 2005)
        w, h = w - V.T @ h2, h + h2
        unit, norm = _safe_normalize(w, eps * w_norm)
        done = breakdown      # once the space is exhausted, the later columns stay as set
        V = jnp.where(done, V, V.at[k + 1].set(unit))
        H = jnp.where(done, H, H.at[k].set(h.at[k + 1].set(norm)))
        return V, H, breakdown | (norm == 0)

    V, H, _ = fori_loop(0, restart, arnoldi, (V, H, jnp.asarray(False)))
    beta = jnp.zeros((restart + 1,), b.dtype).at[0].set(residual_norm)
    # min |beta e1 - H.T y|, through the normal equations
    y = jnp.linalg.solve(H @ H.T, H @ beta)
    x = x + V[:-1].T @ y
    return (x,) + _safe_normalize(precond(b - matvec(x)), eps)


def gmres(A, b, x0=None, *, tol: float = 1e-5, atol: float = 0.0, restart: int = 20,
          maxiter: int | None = None, M: Callable | None = None,
          solve_method: str = "batched"):
    """Restarted GMRES for nonsingular ``A``: up to ``maxiter`` (default ``10 * size``)
    cycles, each minimizing the residual over a Krylov space of dimension ``restart``, until
    ``|A x - b| <= max(tol * |b|, atol)``; ``M`` is a left preconditioner. Returns
    ``(x, info)``, ``info`` -1 where ``x`` holds NaNs, else 0 (as JAX; its "incremental"
    ``solve_method`` computes the same solution here).

    >>> a, b = jnp.array([[4.0, 2.0], [2.0, 3.0]]), jnp.array([2.0, 1.0])
    >>> x, info = gmres(lambda v: a @ v, b, restart=10)
    >>> bool(jnp.allclose(a @ x, b, atol=1e-5)), int(info)
    (True, 0)
    """
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' "
                         f"or 'batched'")
    matvec, b, x0, precond, unravel = _flat_problem(A, b, x0, M)
    precond = precond or _identity
    maxiter = 10 * b.size if maxiter is None else int(maxiter)
    restart = min(restart, b.size)
    atol = jnp.maximum(tol * jnp.linalg.norm(b), atol)
    eps = float(jnp.finfo(b.dtype).eps)
    unit, norm = _safe_normalize(precond(b - matvec(x0)), eps)

    def cond(s):
        _, k, _, residual_norm = s
        return (k < maxiter) & (residual_norm > atol)

    def body(s):
        x, k, unit, norm = s
        x, unit, norm = _gmres_cycle(matvec, precond, b, x, unit, norm, restart)
        return x, k + 1, unit, norm

    x = while_loop(cond, body, (x0, jnp.zeros((), jnp.int32), unit, norm))[0]
    info = jnp.where(jnp.isnan(jnp.linalg.norm(x)), -1, 0)
    return unravel(x), info


__all__ = ["cg", "gmres", "bicgstab"]

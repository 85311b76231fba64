"""The polar decomposition ``x = u @ h`` by the QR-based dynamically weighted Halley iteration
(QDWH; Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010), as
``jax.lax.linalg.qdwh``.

Each step maps the iterate ``u`` to ``u (a I + b u^H u)(I + c u^H u)^-1``, a rational function
that pushes every singular value towards 1. The weights ``(a, b, c)`` depend only on a lower
bound ``l`` of the smallest singular value of the scaled matrix, and that bound evolves
deterministically from ``eps``, so the whole schedule is computed here in Python. Early steps
(``c`` large, the system ill conditioned) are taken through a QR decomposition of a stacked
matrix, later ones through a Cholesky factorisation; once the schedule is exhausted, plain
Halley steps (``a, b, c = 3, 1, 3``) run until the iterate stops moving.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.control_flow import fori_loop, while_loop
from ..core.core import concrete_or_error
from ..core.errors import DTypeValueError, ShapeError
from ..core.linalg_prims import cholesky, qr, triangular_solve

__all__ = ["qdwh"]

# a step whose c exceeds this takes the QR form: I + c u^H u is too ill conditioned to factor
_QR_ABOVE_C = 100


def _weights(l):
    """The step's ``(a, b, c)`` for the lower bound ``l``, and the bound after it."""
    l2 = l * l
    d = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    root = (1 + d) ** 0.5
    a = root + (2 - d + 2 * (2 - l2) / (l2 * root)) ** 0.5
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    return (a, b, c), l * (a + b * l2) / (1 + c * l2)


def _schedule(eps, max_iterations):
    """The weights of the QR steps and of the Cholesky steps, in the forms those steps use."""
    qr_steps, cholesky_steps = [], []
    l, tol_l = eps, 5 * eps
    while l + tol_l < 1 and len(qr_steps) + len(cholesky_steps) < max_iterations:
        (a, b, c), l = _weights(l)
        if c > _QR_ABOVE_C:
            qr_steps.append(_qr_form(a, b, c))
        else:
            cholesky_steps.append(_cholesky_form(a, b, c))
    return qr_steps, cholesky_steps


def _qr_form(a, b, c):
    e = b / c
    return (a - e) / c ** 0.5, c ** 0.5, e


def _cholesky_form(a, b, c):
    e = b / c
    return a - e, c, e


def _masked(x, rows, cols, fill=None):
    """``x`` with the entries outside its leading ``rows x cols`` block replaced by ``fill``
    (zeros by default); ``None`` bounds mask nothing."""
    keep = None
    for axis, bound in enumerate((rows, cols)):
        if bound is not None:
            inside = lax.broadcasted_iota(np.int32, x.shape, axis) < bound
            keep = inside if keep is None else keep & inside
    if keep is None:
        return x
    return jnp.where(keep, x, jnp.zeros_like(x) if fill is None else fill)


def _qr_step(u, rows, cols, weights):
    # [sqrt(c) u; I] = [q1; q2] r gives u (I + c u^H u)^-1 = q1 q2^H / sqrt(c)
    a_minus_e_over_root_c, root_c, e = weights
    m_pad, n_pad = u.shape
    eye = jnp.eye(n_pad, dtype=u.dtype)
    if rows is None:
        stacked = jnp.concatenate([root_c * u, eye])
    else:   # the identity starts right after the true rows
        stacked = lax.dynamic_update_slice_in_dim(
            jnp.concatenate([root_c * u, jnp.zeros_like(eye)]), eye, rows, 0)
    q, _ = qr(stacked, full_matrices=False)
    q1 = _masked(q[:m_pad], rows, cols)
    q2 = _masked(lax.dynamic_slice_in_dim(q, m_pad if rows is None else rows, n_pad, 0),
                 cols, cols)
    return e * u + a_minus_e_over_root_c * (q1 @ jnp.conj(q2.T))


def _cholesky_step(u, rows, cols, weights):
    # u (I + c u^H u)^-1 through the Cholesky factor L of I + c u^H u: z^H = L^-H L^-1 u^H
    a_minus_e, c, e = weights
    n_pad = u.shape[1]
    eye = jnp.eye(n_pad, dtype=u.dtype)
    gram = c * (jnp.conj(u.T) @ u) + eye
    gram = _masked(gram, cols, cols, eye)      # the padding's corner stays positive definite
    factor = cholesky(gram, symmetrize_input=False)
    w = triangular_solve(factor, jnp.conj(u.T), left_side=True, lower=True)
    z_h = triangular_solve(factor, w, left_side=True, lower=True, transpose_a=True,
                           conjugate_a=True)
    return e * u + a_minus_e * jnp.conj(z_h.T)


def _iterate(x, rows, cols, max_iterations, eps):
    one_norm = jnp.linalg.norm(x, ord=1)
    inf_norm = jnp.linalg.norm(x, ord=np.inf)
    # 1 / sqrt(|x|_1 |x|_inf) bounds 1 / |x|_2 from below: the scaled x has norm at most 1
    scale = jnp.where(one_norm == 0, 1, lax.rsqrt(one_norm) * lax.rsqrt(inf_norm))
    u = x * scale.astype(x.dtype)
    qr_steps, cholesky_steps = _schedule(eps, max_iterations)
    tolerance = float(np.cbrt(5 * eps))

    def moved(u, u_prev):
        return jnp.linalg.norm(u - u_prev) > tolerance

    def scheduled(u, steps, step):
        table = jnp.asarray(np.array(steps)).astype(x.dtype)

        def body(k, carry):
            u, _ = carry
            new = step(u, rows, cols, lax.dynamic_index_in_dim(table, k, keepdims=False))
            return new, moved(new, u)
        return fori_loop(0, len(steps), body, (u, jnp.asarray(True)))

    if qr_steps:
        u, _ = scheduled(u, qr_steps, _qr_step)
    not_converged = jnp.asarray(True)
    if cholesky_steps:
        u, not_converged = scheduled(u, cholesky_steps, _cholesky_step)

    def halley(state):
        k, u, _ = state
        new = _cholesky_step(u, rows, cols, _cholesky_form(3, 1, 3))
        return k + 1, new, moved(new, u)

    def going(state):
        k, _, not_converged = state
        return not_converged & (k < max_iterations)

    num_iters, u, not_converged = while_loop(
        going, halley, (len(qr_steps) + len(cholesky_steps), u, not_converged))
    # one Newton-Schulz step polishes the orthogonality
    u = 1.5 * u - 0.5 * u @ (jnp.conj(u.T) @ u)
    h = jnp.conj(u.T) @ x
    h = (h + jnp.conj(h.T)) / 2
    return u, h, num_iters, jnp.logical_not(not_converged)


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None):
    """The polar decomposition ``x = u @ h`` of a full-rank ``x`` (M, N) with M >= N by the
    QR-based dynamically weighted Halley iteration: ``(u, h, num_iters, is_converged)``, ``u``
    with orthonormal columns, ``h`` Hermitian positive semidefinite, the number of steps
    taken, and whether the iterate settled within ``max_iterations`` (10 by default) steps.
    ``eps`` (``x``'s machine epsilon by default) sets the tolerance; ``dynamic_shape`` gives
    the true ``(m, n)`` of an ``x`` padded with zeros; ``is_hermitian`` is unused, as in JAX.
    Forward-mode derivatives follow the iteration; reverse mode meets its ``while_loop`` and
    raises, as JAX's does.

    >>> x = jnp.array([[3.0, 1.0], [4.0, 5.0]])
    >>> u, h, num_iters, is_converged = fnx.lax.linalg.qdwh(x)
    >>> (u @ h).round(4), bool(is_converged)
    (Array([[3., 1.],
           [4., 5.]], dtype=float32), True)
    """
    bool(concrete_or_error(is_hermitian, "qdwh's is_hermitian, which must be static"))
    max_iterations = 10 if max_iterations is None else \
        int(concrete_or_error(max_iterations, "qdwh's max_iterations, which must be static"))
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ShapeError(f"qdwh needs a matrix (M, N), got shape {x.shape}")
    if not dtypes.is_float(x.dtype):
        raise DTypeValueError(f"qdwh needs a floating-point or complex matrix, got {x.dtype}")
    m_pad, n_pad = x.shape
    if m_pad < n_pad:
        raise ValueError(f"qdwh: the input matrix of shape M x N must have M >= N, got "
                         f"{x.shape}")
    rows = cols = None
    if dynamic_shape is not None:
        rows, cols = dynamic_shape
        x = _masked(x, rows, cols)
    eps = float(dtypes.finfo(x.dtype).eps) if eps is None else float(eps)
    return _iterate(x, rows, cols, max_iterations, eps)

"""Reductions to a condensed form and their eigenproblems: ``hessenberg`` (Householder
reflections with LAPACK's sign convention, so the result is LAPACK's, as JAX gives it) and
``eigh_tridiagonal``.
"""
from __future__ import annotations

from .. import numpy as jnp
from ..core.control_flow import fori_loop
from ..numpy._core import promote_dtypes_inexact


def _reflector(x, below):
    """LAPACK's elementary reflector for the entries of ``x`` where ``below`` (the first of them
    is alpha): ``(v, tau, beta)`` with ``(I - tau v v^H)^H x = beta e_1`` on those entries."""
    first = jnp.argmax(below)
    alpha = x[first]
    rest = jnp.where(below & (jnp.arange(x.shape[0]) != first), x, 0)
    xnorm = jnp.sqrt(jnp.sum(jnp.abs(rest) ** 2))
    trivial = (xnorm == 0) & (jnp.imag(alpha) == 0)
    beta = -jnp.where(jnp.real(alpha) >= 0, 1.0, -1.0) * jnp.sqrt(jnp.abs(alpha) ** 2 + xnorm ** 2)
    safe_beta = jnp.where(trivial, 1.0, beta)
    tau = jnp.where(trivial, 0.0, (safe_beta - alpha) / safe_beta)
    scale = jnp.where(trivial, 1.0, alpha - safe_beta)
    v = jnp.where(jnp.arange(x.shape[0]) == first, 1.0, rest / scale).astype(x.dtype)
    return v, tau.astype(x.dtype), jnp.where(trivial, alpha, beta)


def _hessenberg_2d(a):
    n = a.shape[0]
    rows = jnp.arange(n)

    def step(k, carry):
        h, q = carry
        v, tau, _ = _reflector(h[:, k], rows > k)
        # h <- P^H h P and q <- q P, with P = I - tau v v^H
        h = h - jnp.conj(tau) * jnp.outer(v, jnp.conj(v) @ h)
        h = h - tau * jnp.outer(h @ v, jnp.conj(v))
        q = q - tau * jnp.outer(q @ v, jnp.conj(v))
        return h, q
    # n - 1 reflectors, as LAPACK: the last makes a complex subdiagonal entry real
    h, q = fori_loop(0, max(n - 1, 0), step, (a, jnp.eye(n, dtype=a.dtype)))
    return jnp.triu(h, -1), q


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The upper Hessenberg form ``h = q^H a q`` of a square ``a`` (zeros below the first
    subdiagonal), and ``q`` with ``calc_q``; leading dimensions batch.

    >>> h = hessenberg(jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]))
    >>> bool(h[2, 0] == 0)
    True
    """
    del overwrite_a, check_finite
    (a,) = promote_dtypes_inexact(jnp.asarray(a))
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"hessenberg: expected a square matrix (..., n, n), got shape {a.shape}")
    h, q = jnp.vectorize(_hessenberg_2d, signature="(n,n)->(n,n),(n,n)")(a)
    return (h, q) if calc_q else h


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (ascending), and eigenvectors unless ``eigvals_only``, of the Hermitian
    tridiagonal matrix with diagonal ``d`` and off-diagonal ``e``. ``select`` is 'a' (all) or
    'i' (indices ``select_range = (lo, hi)``, inclusive); 'v' is not supported, as in JAX.

    >>> eigh_tridiagonal(jnp.array([2.0, 2.0]), jnp.array([1.0]), eigvals_only=True)
    Array([1., 3.], dtype=float32)
    """
    del tol, key
    d, e = jnp.asarray(d), jnp.asarray(e)
    if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
        raise ValueError(f"eigh_tridiagonal: d must be a vector of length n and e of length "
                         f"n - 1; got shapes {d.shape} and {e.shape}")
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    if select not in ("a", "i"):
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'v' or 'i'; got {select!r}")
    d, e = promote_dtypes_inexact(d, e)
    t = jnp.diag(d.astype(e.dtype)) + jnp.diag(e, 1) + jnp.diag(jnp.conj(e), -1)
    lo, hi = (0, d.shape[0] - 1) if select == "a" else (int(select_range[0]),
                                                       int(select_range[1]))
    if eigvals_only:
        return jnp.linalg.eigvalsh(t)[lo:hi + 1]
    w, v = jnp.linalg.eigh(t)
    return w[lo:hi + 1], v[:, lo:hi + 1]


__all__ = ["eigh_tridiagonal", "hessenberg"]

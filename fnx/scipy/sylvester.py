"""The Sylvester equation ``A X + X B = C`` (jax.scipy.linalg.solve_sylvester).

The Schur method is Bartels-Stewart: with ``A = U R U^H`` and ``B^H = V S V^H`` (complex
Schur forms) the equation becomes ``R Y + Y S^H = U^H C V``, whose columns, taken last to first,
are triangular solves. Where an eigenvalue of A and one of B (nearly) cancel there is no unique
solution and the result is NaN, as in JAX.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ..core import linalg_prims
from ..core.control_flow import fori_loop
from ..numpy._core import promote_dtypes_inexact
from ..numpy.linalg import inv, solve
from .schur import schur


def _triangular_sylvester(r, l, f):
    """``Y`` with ``r @ Y + Y @ l == f``, ``r`` upper and ``l`` lower triangular."""
    m, n = f.shape
    rows = np.arange(n)

    def column(i, y):
        j = n - 1 - i
        later = jnp.where(rows > j, l[:, j], 0)      # columns after j are already solved
        rhs = f[:, j] - y @ later
        shifted = r + l[j, j] * jnp.eye(m, dtype=r.dtype)
        y_j = linalg_prims.triangular_solve(shifted, rhs[:, None], left_side=True, lower=False)
        return y.at[:, j].set(y_j[:, 0])
    return fori_loop(0, n, column, jnp.zeros_like(f))


def _sylvester_2d(a, b, c, method, tol):
    if method == "schur":
        r, u = schur(a, output="complex")
        s, v = schur(b.conj().T, output="complex")
        l = s.conj().T
        x = u @ _triangular_sylvester(r, l, u.conj().T @ c.astype(r.dtype) @ v) @ v.conj().T
        eig_a, eig_b = jnp.diagonal(r), jnp.diagonal(l)
    elif method == "eigen":
        eig_a, ua = jnp.linalg.eig(a)
        eig_b, ub = jnp.linalg.eig(b)
        y = solve(ua, c.astype(eig_a.dtype) @ ub) / (eig_a[:, None] + eig_b[None, :])
        x = ua @ y @ inv(ub)
    else:
        raise ValueError(f"solve_sylvester: method must be 'schur' or 'eigen'; got {method!r}")
    if not jnp.iscomplexobj(c):
        x = x.real
    singular = jnp.any(jnp.abs(eig_a[:, None] + eig_b[None, :]) < tol)
    return jnp.where(singular, np.nan, x).astype(x.dtype)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """``X`` with ``A @ X + X @ B == C`` (A is m x m, B n x n, C m x n; leading dimensions
    batch); ``method`` is 'schur' (Bartels-Stewart) or 'eigen' (diagonalizing A and B).

    >>> a, b = jnp.array([[2.0, 0.0], [0.0, 3.0]]), jnp.array([[1.0]])
    >>> solve_sylvester(a, b, jnp.array([[3.0], [8.0]]))
    Array([[1.],
           [2.]], dtype=float32)
    """
    A, B, C = promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
    m, n = C.shape[-2:]
    if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise ValueError(f"solve_sylvester: incompatible shapes A {A.shape}, B {B.shape}, "
                         f"C {C.shape} (A must be m x m, B n x n, C m x n)")
    return jnp.vectorize(lambda a, b, c: _sylvester_2d(a, b, c, method, tol),
                         signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)

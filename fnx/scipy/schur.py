"""The Schur decomposition and the matrix functions built on it (jax.scipy.linalg's
``schur``, ``rsf2csf``, ``sqrtm`` and ``funm``).

No primitive computes a Schur form: LAPACK's gees runs on the host through ``pure_callback``
(as JAX's schur runs only on the CPU), so both work under jit and vmap but have no derivative,
as in JAX. The triangular square root and Parlett's recurrence are fnx code: ``fori_loop``s
over superdiagonals.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.api import ShapeDtypeStruct
from ..core.callbacks import pure_callback
from ..core.control_flow import fori_loop
from ..core.errors import ShapeError
from ..numpy._core import promote_dtypes_inexact


def _complex_of(dtype):
    return np.dtype(np.complex64 if np.dtype(dtype) in (np.float32, np.complex64,
                                                        dtypes.bfloat16, np.float16)
                    else np.complex128)


def _host_schur(a, output):
    import scipy.linalg
    flat = a.reshape((-1,) + a.shape[-2:])
    if output == "complex" and not np.iscomplexobj(a):
        # the real form made complex (as SciPy's sqrtm does) keeps real eigenvalues exactly
        # real: LAPACK's complex form may give one a tiny imaginary part of either sign, which
        # moves its square root across the branch cut
        pairs = [scipy.linalg.rsf2csf(*scipy.linalg.schur(m, output="real")) for m in flat]
    else:
        pairs = [scipy.linalg.schur(m, output=output) for m in flat]
    t = np.stack([p[0] for p in pairs]).reshape(a.shape)
    z = np.stack([p[1] for p in pairs]).reshape(a.shape)
    return t, z


def schur(a, output: str = "real"):
    """The Schur decomposition ``a = z @ t @ z^H`` (``z`` unitary, ``t`` upper triangular, or
    quasi-triangular with 2x2 blocks for ``output='real'`` on real input), over the last two
    axes. Computed on the host by SciPy; no derivative, as in JAX.

    >>> t, z = schur(jnp.array([[1.0, 2.0], [0.5, 3.0]]), output="complex")
    """
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    (a,) = promote_dtypes_inexact(jnp.asarray(a))
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"schur needs square matrices (..., n, n), got shape {a.shape}")
    dtype = _complex_of(a.dtype) if output == "complex" else a.dtype
    like = ShapeDtypeStruct(a.shape, dtype)

    def host(m):
        t, z = _host_schur(np.asarray(m), output)
        return t.astype(dtype), z.astype(dtype)
    return tuple(pure_callback(host, (like, like), a, vmap_method="broadcast_all"))


def _sqrtm_triu(t):
    """The upper-triangular square root ``u`` of upper-triangular ``t`` (Björck and Hammarling,
    1983): ``u[i, j] = (t[i, j] - sum_k u[i, k] u[k, j]) / (u[i, i] + u[j, j])``, one
    superdiagonal ``d = j - i`` at a time, each needing only the ones before it."""
    n = t.shape[-1]
    d = jnp.diagonal(t)
    # LAPACK may leave a negative real eigenvalue as -x - 0j, whose square root (across the
    # branch cut) is -i sqrt(x): a +0 imaginary part gives the principal root, as SciPy's
    d = jnp.where(jnp.imag(d) == 0, jnp.real(d).astype(d.dtype), d)
    diag = jnp.sqrt(d)
    rows = lax.broadcasted_iota(dtypes.int32, (n, n), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (n, n), 1)
    denom = diag[:, None] + diag[None, :]

    def superdiagonal(d, u):
        # s[i] = sum_k u[i, k] * u[k, i + d]: row i of u against column i + d (clipped; those
        # rows fall outside the superdiagonal and are masked off)
        col = jnp.minimum(jnp.arange(n) + d, n - 1)
        s = jnp.sum(u * jnp.take(u, col, axis=1).T, axis=1)
        value = jnp.where(t == s[:, None], 0, (t - s[:, None]) / denom)
        return jnp.where(cols - rows == d, value, u)
    return fori_loop(1, n, superdiagonal, jnp.diag(diag).astype(t.dtype))


def sqrtm(A, blocksize: int = 1):
    """The principal matrix square root ``X`` with ``X @ X == A``, by the Schur method (as
    SciPy and JAX). The result is complex, as JAX's is (SciPy returns a real one when it can);
    for a real ``A`` with negative eigenvalues it is SciPy's principal root (JAX's complex
    Schur form can put such an eigenvalue's root on the other side of the branch cut).
    Works under jit (the Schur form comes from the host); no derivative, as in JAX.

    >>> x = sqrtm(jnp.array([[4.0, 1.0], [0.0, 9.0]]))     # [[2, 0.2], [0, 3]] (complex)
    """
    if blocksize > 1:
        raise NotImplementedError("sqrtm: the blocked algorithm (blocksize > 1) is not "
                                  "implemented, as in JAX; use blocksize=1")
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ShapeError(f"sqrtm needs a square matrix (n, n), got shape {A.shape}")
    t, z = schur(A, output="complex")
    u = _sqrtm_triu(t)
    return jnp.matmul(jnp.matmul(z, u, precision="highest"), jnp.conj(z.T),
                      precision="highest")


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form ``(t, z)`` of a real one (``schur(a)``'s output): the same
    ``a = z @ t @ z^H`` with ``t`` upper triangular. On the host by SciPy, as ``schur``.

    >>> t, z = rsf2csf(*schur(jnp.array([[0.0, -1.0], [1.0, 0.0]])))
    >>> jnp.round(jnp.diag(t), 6)
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    (T, Z) = promote_dtypes_inexact(jnp.asarray(T), jnp.asarray(Z))
    if T.ndim != 2 or T.shape[0] != T.shape[1] or Z.shape != T.shape:
        raise ShapeError(f"rsf2csf needs square T and Z of one shape, got {T.shape} and {Z.shape}")
    dtype = _complex_of(T.dtype)
    like = ShapeDtypeStruct(T.shape, dtype)

    def host(t, z):
        import scipy.linalg
        t, z = scipy.linalg.rsf2csf(np.asarray(t), np.asarray(z), check_finite=False)
        return t.astype(dtype), z.astype(dtype)
    return tuple(pure_callback(host, (like, like), T, Z))


def funm(A, func, disp: bool = True):
    """The matrix function ``func(A)`` for a scalar function ``func`` applied elementwise
    (``jnp.exp``, ``jnp.sin``): Parlett's recurrence on the complex Schur form, as JAX's. The
    result is complex; with ``disp=False``, also an estimate of its relative error.

    >>> a = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    >>> bool(jnp.allclose(funm(a, jnp.exp), fnx.scipy.linalg.expm(a), rtol=1e-4))
    True
    """
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"funm: expected a square matrix, got shape {A.shape}")
    T, Z = schur(A, output="complex")
    F = jnp.diag(func(jnp.diag(T))).astype(T.dtype)
    F, minden = _parlett(F, T)
    F = Z @ F @ Z.conj().T
    if disp:
        return F
    tol = dtypes.finfo(np.float32 if F.dtype == np.complex64 else np.float64).eps
    minden = jnp.where(minden == 0.0, tol, minden)
    off = jnp.linalg.norm(jnp.triu(T, 1), 1)
    err = jnp.where(jnp.any(jnp.isinf(F)), np.inf,
                    jnp.minimum(1, jnp.maximum(tol, (tol / minden) * off)))
    return F, err


def _parlett(F, T):
    """The strictly upper part of ``F = f(T)`` from its diagonal, superdiagonal by
    superdiagonal (Golub and Van Loan, algorithm 11.1.1), and the smallest eigenvalue gap."""
    n = T.shape[0]
    minden = jnp.abs(T[0, 0])
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = T[i, j] * (F[j, j] - F[i, i])
            s = s + T[i, i + 1:j] @ F[i + 1:j, j] - F[i, i + 1:j] @ T[i + 1:j, j]
            den = T[j, j] - T[i, i]
            F = F.at[i, j].set(jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s))
            minden = jnp.minimum(minden, jnp.abs(den))
    return F, minden

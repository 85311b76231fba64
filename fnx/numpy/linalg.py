"""fnx.numpy.linalg: norms, decompositions and solvers (NumPy's names).

``solve``, ``inv``, ``det`` and ``slogdet`` are built on the ``lu`` primitive (partial pivoting,
so they need no symmetry) and ``triangular_solve``; ``cholesky``, ``qr``, ``eigh`` and ``svd`` are
primitives of their own (fnx/core/linalg_prims.py); the rest (``pinv``, ``lstsq``,
``matrix_rank``, ``cond``, the spectral norms, ...) are compositions of these. All are
differentiable to any order (``eigh`` and ``svd`` where the eigenvalues or singular values are
distinct) and batch over leading dimensions.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from ..core import dtypes, lax
from ..core.api import ShapeDtypeStruct
from ..core.callbacks import pure_callback
from ..core import linalg_prims as _lp
from ..core.custom_derivatives import custom_jvp
from ..core.errors import ShapeError
from ._core import asarray, broadcast_shapes, broadcast_to, canonicalize_axes, \
    promote_dtypes_inexact
from . import products, reductions, shapes, ufuncs


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norm over one axis (``ord`` None/2, 1, inf, -inf, 0 or any p) or matrix norm over
    two (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf); ``axis=None`` means all axes of a vector
    or matrix, or the flattened array when ``ord`` is None too, as NumPy.

    >>> jnp.linalg.norm(jnp.array([[1.0, -2.0], [3.0, 4.0]]), ord=1)   # the largest column sum
    Array(6., dtype=float32)
    """
    (x,) = promote_dtypes_inexact(asarray(x))
    if axis is None and ord is None:
        return lax.sqrt(reductions.sum(_abs2(x), None, keepdims=keepdims))
    axes = canonicalize_axes(axis, x.ndim, "norm")
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"norm: needs one axis (vector) or two (matrix), got axes {axes} of an "
                     f"array of shape {x.shape}")


def _abs2(x):
    return lax.mul(x, x) if dtypes.kind(x.dtype) != "c" else lax.real(lax.mul(x, lax.conj(x)))


def _vector_norm(x, ord, axes, keepdims):
    if ord is None or ord == 2:
        return lax.sqrt(reductions.sum(_abs2(x), axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid order {ord!r} for a vector norm of an array of shape "
                         f"{x.shape}")
    ax = ufuncs.absolute(x)
    if ord == 1:
        return reductions.sum(ax, axes, keepdims=keepdims)
    if ord == float("inf"):
        return reductions.max(ax, axes, keepdims=keepdims)
    if ord == -float("inf"):
        return reductions.min(ax, axes, keepdims=keepdims)
    if ord == 0:
        nonzero = lax.ne(x, lax.full(x.shape, 0, x.dtype))
        return reductions.sum(lax.convert_element_type(nonzero, ax.dtype), axes,
                              keepdims=keepdims)
    p = float(ord)
    s = reductions.sum(ufuncs.power(ax, p), axes, keepdims=keepdims)
    return ufuncs.power(s, 1.0 / p)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord is None or (isinstance(ord, str) and ord in ("fro", "f")):
        return lax.sqrt(reductions.sum(_abs2(x), axes, keepdims=keepdims))
    inf = float("inf")
    if not isinstance(ord, str) and ord in (1, -1, inf, -inf):
        # 1: extreme column sum (sum over rows); inf: extreme row sum. Keeping the summed axis
        # lets one reduction over both axes finish the job wherever they are.
        sums = reductions.sum(ufuncs.absolute(x), row if ord in (1, -1) else col, keepdims=True)
        out = (reductions.max if ord > 0 else reductions.min)(sums, axes, keepdims=True)
        return out if keepdims else lax.squeeze(out, tuple(sorted(axes)))
    if (isinstance(ord, str) and ord == "nuc") or (not isinstance(ord, str) and ord in (2, -2)):
        s = svdvals(_move_last_two(x, axes))
        out = (reductions.sum if ord == "nuc" else
               reductions.max if ord == 2 else reductions.min)(s, -1)
        return lax.expand_dims(out, tuple(sorted(axes))) if keepdims else out
    raise ValueError(f"norm: invalid order {ord!r} for a matrix norm of an array of shape "
                     f"{x.shape}; use 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")


def _move_last_two(x, axes):
    rest = [i for i in range(x.ndim) if i not in axes]
    return lax.transpose(x, tuple(rest) + tuple(axes))


class SlogdetResult(NamedTuple):
    """The result of ``slogdet``: the ``sign`` of the determinant and the log of its absolute
    value.

    >>> jnp.linalg.slogdet(jnp.diag(jnp.array([-1.0, 1.0])))
    SlogdetResult(sign=Array(-1., dtype=float32), logabsdet=Array(0., dtype=float32))
    """
    sign: object
    logabsdet: object


class QRResult(NamedTuple):
    """The result of ``qr``: ``Q`` and ``R``, with ``Q @ R`` the input.

    >>> Q, R = jnp.linalg.qr(jnp.eye(2) * 3.0)
    >>> jnp.abs(R)
    Array([[3., 0.],
           [0., 3.]], dtype=float32)
    """
    Q: object
    R: object


class EighResult(NamedTuple):
    """The result of ``eigh``: ``eigenvalues`` (ascending) and ``eigenvectors`` (columns).

    >>> jnp.linalg.eigh(jnp.diag(jnp.array([2.0, 1.0]))).eigenvalues
    Array([1., 2.], dtype=float32)
    """
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    """The result of ``svd``: ``U``, the singular values ``S`` (descending) and ``Vh``.

    >>> jnp.linalg.svd(jnp.diag(jnp.array([1.0, 3.0]))).S
    Array([3., 1.], dtype=float32)
    """
    U: object
    S: object
    Vh: object


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name} needs square matrices (..., n, n), got shape {a.shape}")


def _matrices(name, a):
    if a.ndim < 2:
        raise ShapeError(f"{name} needs matrices (..., m, n), got shape {a.shape}")


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of symmetric positive-definite ``a``: lower ``L`` with
    ``a = L @ L.T`` (or upper ``U = L.T`` with ``upper=True``); NaNs if ``a`` is not positive
    definite.

    >>> L = jnp.linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 3.0]]))
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("cholesky", a)
    L = _lp.cholesky(a, symmetrize_input=symmetrize_input)
    return _lp.adjoint(L) if upper else L


def _lu_solve(lu, perm, b):
    """Solve with an LU factorisation; ``b`` is (..., n, k) with ``lu``'s batch dims."""
    nd = b.ndim
    perm_b = lax.broadcast_in_dim(perm, b.shape, tuple(range(nd - 1)))
    pb = lax.take_along_axis(b, perm_b, nd - 2)
    y = _lp.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return _lp.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a, b):
    """The solution ``x`` of ``a @ x = b``; ``b`` is a vector (n,) or matrices (..., n, k).

    >>> jnp.linalg.solve(jnp.array([[2.0, 0.0], [0.0, 4.0]]), jnp.array([2.0, 2.0]))
    Array([1. , 0.5], dtype=float32)
    """
    a, b = promote_dtypes_inexact(asarray(a), asarray(b))
    _square("solve", a)
    n = a.shape[-1]
    vector = b.ndim == 1
    if vector:
        b = lax.reshape(b, (b.shape[0], 1))
    if b.ndim < 2 or b.shape[-2] != n:
        raise ShapeError(f"solve: a of shape {a.shape} does not fit b of shape "
                         f"{b.shape if not vector else (b.shape[0],)}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], op="solve")
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    lu, _, perm = _lp.lu(a)
    x = _lu_solve(lu, perm, b)
    return lax.reshape(x, x.shape[:-1]) if vector else x


def inv(a):
    """The inverse of square ``a`` (via its LU factorisation).

    >>> jnp.linalg.inv(jnp.array([[2.0, 0.0], [0.0, 4.0]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("inv", a)
    return solve(a, _lp.eye_like(a))


def _lu_sign_and_diag(a):
    lu, pivots, _ = _lp.lu(a)
    n = a.shape[-1]
    diag = _diag(lu)
    swaps = reductions.sum(lax.convert_element_type(
        lax.ne(pivots, lax.broadcasted_iota(dtypes.int32, pivots.shape, pivots.ndim - 1)),
        dtypes.int32), -1)
    odd = lax.eq(lax.rem(swaps, lax.full(swaps.shape, 2, swaps.dtype)),
                 lax.full(swaps.shape, 1, swaps.dtype))
    sign = lax.select(odd, lax.full(swaps.shape, -1, a.dtype), lax.full(swaps.shape, 1, a.dtype))
    return sign, diag, n


def _diag(x):
    n = x.shape[-1]
    flat = lax.reshape(x, x.shape[:-2] + (n * n,))
    idx = lax.mul(lax.iota(dtypes.int32, n), lax.full((n,), n + 1, dtypes.int32))
    return lax.take(flat, idx, x.ndim - 2)


def det(a):
    """The determinant of square ``a`` (product of the LU diagonal, signed by the pivots).

    >>> jnp.linalg.det(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    Array(-1.9999999, dtype=float32)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("det", a)
    sign, diag, _ = _lu_sign_and_diag(a)
    return lax.mul(sign, reductions.prod(diag, -1))


def slogdet(a):
    """``(sign, log|det a|)``, which stays finite where ``det`` would overflow.

    >>> sign, logabsdet = jnp.linalg.slogdet(jnp.eye(3) * 10.0)   # (1., 6.9077554)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("slogdet", a)
    return SlogdetResult(*_slogdet(a))


@custom_jvp
def _slogdet(a):
    sign, diag, _ = _lu_sign_and_diag(a)
    sign = lax.mul(sign, reductions.prod(lax.sign(diag), -1))
    return sign, reductions.sum(lax.log(lax.abs_(diag)), -1)


@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
    # d log det a = tr(a^-1 da): its real part is d log|det a|, its imaginary part turns the
    # sign (lax.sign itself has a zero derivative, as in JAX)
    (a,), (da,) = primals, tangents
    sign, logabsdet = _slogdet(a)
    d = reductions.trace(solve(a, da), axis1=-2, axis2=-1)
    if dtypes.kind(sign.dtype) != "c":
        return (sign, logabsdet), (lax.full(sign.shape, 0, sign.dtype), d)
    d_abs = lax.real(d)
    return (sign, logabsdet), (lax.mul(lax.sub(d, lax.convert_element_type(d_abs, d.dtype)),
                                       sign), d_abs)


def qr(a, mode: str = "reduced"):
    """QR decomposition: ``mode`` "reduced" (Q: (..., m, k)), "complete" (Q: (..., m, m)) or
    "r" (R only), as in NumPy.

    >>> q, r = jnp.linalg.qr(jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    q, r = _lp.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric ``a``, reading its lower
    (``UPLO`` None or "L") or upper ("U") triangle; ``symmetrize_input`` uses ``(a + a.T) / 2``,
    which makes the derivative the symmetric one.

    >>> w, v = jnp.linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
    """
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be None, 'L' or 'U', got {UPLO!r}")
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("eigh", a)
    v, w = _lp.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition ``a = U @ diag(S) @ Vh``, ``S`` descending, or ``S`` alone
    without ``compute_uv``. With ``hermitian`` (symmetric ``a``) it comes from ``eigh``. Its
    derivative needs ``full_matrices=False`` unless ``a`` is square, as in JAX.

    >>> u, s, vh = jnp.linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), full_matrices=False)
    >>> s
    Array([4., 3.], dtype=float32)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    if hermitian:
        return _svd_of_symmetric(a, compute_uv)
    return (SVDResult(*_lp.svd(a, full_matrices=full_matrices)) if compute_uv
            else _lp.svd(a, compute_uv=False))


def _svd_of_symmetric(a, compute_uv):
    # a = V diag(w) V^T = V diag(|w|) (V diag(sign(w)))^T, reordered by descending |w|
    _square("svd (hermitian=True)", a)
    w, v = eigh(a)
    last = a.ndim - 2
    s = lax.abs_(w)
    if not compute_uv:
        return lax.rev(lax.sort(s, dimension=last), (last,))
    order = lax.broadcasted_iota(dtypes.int32, s.shape, last)
    s, order, sign = (lax.rev(x, (last,)) for x in
                      lax.sort([s, order, lax.sign(w)], dimension=last, num_keys=1))
    columns = tuple(range(last)) + (last + 1,)    # a vector per matrix, one entry per column
    u = lax.take_along_axis(v, lax.broadcast_in_dim(order, v.shape, columns), last + 1)
    sign = lax.convert_element_type(lax.broadcast_in_dim(sign, u.shape, columns), u.dtype)
    vh = _lp.adjoint(lax.mul(u, sign))
    return SVDResult(u, s, vh)


# ---------------------------------------------------------------------------------------------
# Composed from the factorisations above: their derivatives come from those of svd, eigh and lu
# (pinv's excepted), so they hold where the singular values or eigenvalues are distinct.


def _eig_on_host(a, with_vectors: bool):
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"eig: a must be a stack of square matrices, got shape {a.shape}")
    out = dtypes.complex128 if a.dtype in (dtypes.float64, dtypes.complex128) \
        else dtypes.complex64

    def host(x):
        w, v = np.linalg.eig(np.asarray(x))
        return (w.astype(out), v.astype(out)) if with_vectors else w.astype(out)
    shapes_out = ShapeDtypeStruct(a.shape[:-1], out)
    if with_vectors:
        shapes_out = (shapes_out, ShapeDtypeStruct(a.shape, out))
    return pure_callback(host, shapes_out, a, vmap_method="expand_dims")


def eig(a):
    """``(eigenvalues, eigenvectors)`` of a general square ``a`` (..., n, n), complex, the
    eigenvectors as unit-norm columns (a complex one's phase may differ from JAX's). As in JAX
    (which has them on the CPU only) they are computed on the host, by LAPACK through NumPy,
    and have no derivative.

    >>> w, v = jnp.linalg.eig(jnp.array([[2.0, 1.0], [0.0, 3.0]]))
    >>> w
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    return _eig_on_host(a, True)


def eigvals(a):
    """The eigenvalues of a general square ``a``, as ``eig(a)[0]``.

    >>> jnp.linalg.eigvals(jnp.array([[0.0, -1.0], [1.0, 0.0]]))
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    return _eig_on_host(a, False)


def eigvalsh(a, UPLO: str | None = None, *, symmetrize_input: bool = True):
    """The eigenvalues (ascending) of symmetric ``a``, as ``eigh(a).eigenvalues``.

    >>> jnp.linalg.eigvalsh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
    Array([1., 3.], dtype=float32)
    """
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svdvals(x, /):
    """The singular values of ``x`` (..., m, n), descending, as ``svd(x, compute_uv=False)``.

    >>> jnp.linalg.svdvals(jnp.array([[3.0, 0.0], [0.0, -4.0]]))
    Array([4., 3.], dtype=float32)
    """
    return svd(x, full_matrices=False, compute_uv=False)


def _eps(dtype):
    return float(dtypes.finfo(dtype).eps)


def pinv(a, rtol=None, hermitian: bool = False):
    """The Moore-Penrose pseudo-inverse (..., n, m) of ``a`` (..., m, n), from its SVD with
    singular values at or below ``rtol * max(s)`` taken as zero (``rtol`` defaults to
    ``10 * max(m, n) * eps``, and may be an array, one per matrix); ``hermitian`` takes the SVD
    from ``eigh``. Its derivative is the analytic one (Golub and Pereyra), valid where the rank
    does not change, as JAX's.

    >>> jnp.linalg.pinv(jnp.array([[1.0], [1.0]]))
    Array([[0.5, 0.5]], dtype=float32)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _matrices("pinv", a)
    if rtol is None:
        rtol = 10.0 * max(a.shape[-2:]) * _eps(a.dtype)
    return _pinv(a, rtol, hermitian)


def _pinv_value(a, rtol, hermitian):
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = asarray(rtol, s.dtype)
    cutoff = rtol[..., None] * s[..., :1]
    # 1 / inf = 0 drops the negligible singular values
    s = ufuncs.where(s > cutoff, s, float("inf"))
    return _lp.adjoint(vh) @ (_lp.adjoint(u) / s[..., None].astype(u.dtype))


_pinv = custom_jvp(_pinv_value, nondiff_argnums=(1, 2))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    # d pinv = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, for P = pinv(A) of
    # locally constant rank (Golub & Pereyra 1973); written without the identities
    (a,), (da,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    t = _lp.adjoint
    da_t = t(da)
    dp = -(p @ da @ p) + (p @ t(p)) @ (da_t - (da_t @ a) @ p) \
        + (da_t - p @ (a @ da_t)) @ (t(p) @ p)
    return p, dp


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """The least-squares solution ``x`` of ``a @ x = b`` for ``a`` (m, n) and ``b`` (m,) or
    (m, k), as a tuple ``(x, residuals, rank, s)``: the squared residual norms per column,
    ``a``'s rank and its singular values. Singular values below ``rcond * max(s)`` (default
    ``max(m, n) * eps``) count as zero. Residuals are always computed, unless
    ``numpy_resid`` asks for NumPy's empty ones where the rank is short or ``m <= n`` (which
    needs a concrete ``a``), as in JAX.

    >>> x, res, rank, s = jnp.linalg.lstsq(jnp.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]),
    ...                         jnp.array([1.0, 2.0, 2.0]))   # a line through three points
    """
    a, b = promote_dtypes_inexact(asarray(a), asarray(b))
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ShapeError(f"lstsq needs a of shape (m, n) and b of shape (m,) or (m, k), got "
                         f"shapes {a.shape} and {b.shape}")
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    m, n = a.shape
    if rcond is None:
        rcond = max(m, n) * _eps(a.dtype)
    else:
        rcond = ufuncs.where(asarray(rcond) < 0, _eps(a.dtype), rcond)
    u, s, vh = svd(a, full_matrices=False)
    keep = (s > 0) & (s >= asarray(rcond, s.dtype) * s[:1])   # a zero matrix has rank 0
    rank = reductions.sum(keep, None)
    s_inv = ufuncs.where(keep, 1 / ufuncs.where(keep, s, 1.0), 0.0)
    x = _lp.adjoint(vh) @ (s_inv[:, None].astype(u.dtype) * (_lp.adjoint(u) @ b))
    if numpy_resid and (int(rank) < n or m <= n):
        residuals = lax.full((0,), 0, a.dtype)
    else:
        residuals = reductions.sum(_abs2(b - a @ x), 0)
    return (x[:, 0] if vector else x), residuals, rank, s


def matrix_rank(M, rtol=None, *, tol=None):
    """The number of singular values of ``M`` (..., m, n) above ``rtol * max(s)`` (``rtol``
    defaults to ``max(m, n) * eps``), or above the absolute ``tol``; for a vector or scalar,
    1 unless it is all zeros.

    >>> jnp.linalg.matrix_rank(jnp.array([[1.0, 2.0], [2.0, 4.0]]))
    Array(1, dtype=int32)
    """
    (M,) = promote_dtypes_inexact(asarray(M))
    if rtol is not None and tol is not None:
        raise ValueError("matrix_rank takes rtol (relative) or tol (absolute), not both")
    if M.ndim < 2:
        return lax.convert_element_type(reductions.any(M != 0), dtypes.int32)
    s = svdvals(M)
    if tol is not None:
        threshold = asarray(tol, s.dtype)[..., None]
    else:
        if rtol is None:
            rtol = max(M.shape[-2:]) * _eps(s.dtype)
        threshold = asarray(rtol, s.dtype)[..., None] * s[..., :1]
    return reductions.sum(s > threshold, -1)


def matrix_power(a, n):
    """``a`` (..., k, k) raised to the integer power ``n`` by repeated squaring; ``n = 0`` gives
    identities and negative ``n`` powers of ``inv(a)``.

    >>> jnp.linalg.matrix_power(jnp.array([[1.0, 1.0], [0.0, 1.0]]), 3)
    Array([[1., 3.],
           [0., 1.]], dtype=float32)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("matrix_power", a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}") from None
    if n == 0:
        return broadcast_to(_lp.eye_like(a), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result, square = None, a
    while True:
        n, bit = divmod(n, 2)
        if bit:
            result = square if result is None else result @ square
        if not n:
            return result
        square = square @ square


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices in the cheapest order; the first may be a row vector
    (n,) and the last a column vector (n,), whose dimensions are dropped from the result.

    >>> a, b, c = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((4, 1))
    >>> jnp.linalg.multi_dot([a, b, c])   # == a @ b @ c, multiplied as (a @ b) @ c or a @ (b @ c)
    Array([[12.],
           [12.]], dtype=float32)
    """
    mats = [asarray(x) for x in arrays]
    if len(mats) < 2:
        raise ValueError(f"multi_dot needs at least two arrays, got {len(mats)}")
    shapes_in = [m.shape for m in mats]
    first_vec, last_vec = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_vec:
        mats[0] = mats[0][None, :]
    if last_vec:
        mats[-1] = mats[-1][:, None]
    if any(m.ndim != 2 for m in mats) or any(x.shape[1] != y.shape[0]
                                             for x, y in zip(mats, mats[1:])):
        raise ShapeError(f"multi_dot needs a chain of matrices (the ends may be vectors), got "
                         f"shapes {shapes_in}")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i, j]
        return products.matmul(product(i, k), product(k + 1, j), precision)
    out = product(0, len(mats) - 1)
    if first_vec:
        out = out[0]
    if last_vec:
        out = out[..., 0]
    return out


def _chain_order(dims):
    """Where to split each sub-chain i..j of matrices ``dims[i] x dims[i + 1]`` for the fewest
    multiplications (the textbook dynamic programme)."""
    n = len(dims) - 1
    cost = {(i, i): 0 for i in range(n)}
    split = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j], split[i, j] = min(
                (cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The norm of each matrix (..., m, n): ``ord`` 'fro', 'nuc', 1, -1, 2, -2, inf or -inf.

    >>> jnp.linalg.matrix_norm(jnp.array([[3.0, 0.0], [0.0, 4.0]]), ord=2)
    Array(4., dtype=float32)
    """
    (x,) = promote_dtypes_inexact(asarray(x))
    _matrices("matrix_norm", x)
    return _matrix_norm(x, ord, (x.ndim - 2, x.ndim - 1), keepdims)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector ``ord``-norm over ``axis``: one axis, several (taken as one flattened vector,
    as the Array API says) or, by default, all.

    >>> jnp.linalg.vector_norm(jnp.array([3.0, -4.0]), ord=1)
    Array(7., dtype=float32)
    """
    (x,) = promote_dtypes_inexact(asarray(x))
    return _vector_norm(x, ord, canonicalize_axes(axis, x.ndim, "vector_norm"), keepdims)


def cond(x, p=None):
    """The condition number of each matrix in the norm ``p``: None or 2 (largest over smallest
    singular value), -2 (its inverse), or 'fro', 'nuc', 1, -1, inf, -inf (``norm(x, p) *
    norm(inv(x), p)``, square matrices only). Singular matrices give inf, as NumPy, except
    that a zero matrix in the 2-norm gives 0/0 = NaN, as JAX.

    >>> jnp.linalg.cond(jnp.array([[1.0, 0.0], [0.0, 4.0]]))
    Array(4., dtype=float32)
    """
    (x,) = promote_dtypes_inexact(asarray(x))
    _matrices("cond", x)
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        if p != -2:
            return big / small      # JAX returns this as it is (NaN for a zero matrix)
        r = small / big
    else:
        _square(f"cond with p={p!r}", x)
        axes = (x.ndim - 2, x.ndim - 1)
        r = _matrix_norm(x, p, axes, False) * _matrix_norm(inv(x), p, axes, False)
    # 0/0 or inf*0 from a singular matrix means an infinite condition number; NaN input stays
    nan_input = reductions.any(ufuncs.isnan(x), (-2, -1))
    return ufuncs.where(ufuncs.isnan(r) & ~nan_input, float("inf"), r)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of each matrix's diagonal (or of the diagonal ``offset`` above it).

    >>> jnp.linalg.trace(jnp.eye(3))
    Array(3., dtype=float32)
    """
    x = asarray(x)
    _matrices("trace", x)
    return reductions.trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset: int = 0):
    """The diagonal of each matrix (..., m, n) (or the one ``offset`` above it).

    >>> jnp.linalg.diagonal(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    Array([1., 4.], dtype=float32)
    """
    x = asarray(x)
    _matrices("diagonal", x)
    return shapes.diagonal(x, offset, -2, -1)


def outer(x1, x2, /):
    """The outer product of two vectors.

    >>> jnp.linalg.outer(jnp.array([1.0, 2.0]), jnp.array([1.0, 10.0]))
    Array([[ 1., 10.],
           [ 2., 20.]], dtype=float32)
    """
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"outer needs two vectors, got shapes {x1.shape} and {x2.shape}")
    return products.outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """``fnx.numpy.tensordot``: contract the last ``axes`` of ``x1`` with the first of ``x2``,
    or the axes listed in a pair of sequences.

    >>> a, b = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.eye(2)
    >>> jnp.linalg.tensordot(a, b, axes=1)   # == a @ b for matrices
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    out = products.tensordot(x1, x2, axes, precision)
    if preferred_element_type is not None:
        out = lax.convert_element_type(out, dtypes.canonicalize(preferred_element_type, "matmul"))
    return out


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """``x1 @ x2`` (``fnx.numpy.matmul``).

    >>> jnp.linalg.matmul(jnp.eye(2), jnp.array([1.0, 2.0]))
    Array([1., 2.], dtype=float32)
    """
    return products.matmul(x1, x2, precision, preferred_element_type)


def matrix_transpose(x, /):
    """Each matrix transposed: (..., m, n) -> (..., n, m).

    >>> jnp.linalg.matrix_transpose(jnp.ones((4, 2, 3))).shape
    (4, 3, 2)
    """
    x = asarray(x)
    _matrices("matrix_transpose", x)
    return _lp.swap_last(x)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Dot products of the vectors along ``axis`` (``fnx.numpy.vecdot``).

    >>> jnp.linalg.vecdot(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([1.0, 1.0]))
    Array([3., 7.], dtype=float32)
    """
    return products.vecdot(x1, x2, axis=axis, precision=precision,
                           preferred_element_type=preferred_element_type)


def cross(x1, x2, /, *, axis: int = -1):
    """Cross products of the 3-vectors along ``axis`` (``fnx.numpy.cross`` without its
    2-vectors), broadcasting the other dimensions.

    >>> jnp.linalg.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))
    Array([0., 0., 1.], dtype=float32)
    """
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ShapeError(f"cross needs 3-vectors along axis {axis}, got shapes {x1.shape} and "
                         f"{x2.shape}")
    return products.cross(x1, x2, axis=axis)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` as a map from its first ``ind`` axes to the rest:
    ``tensordot(tensorinv(a, ind), a, ind)`` is the identity, as NumPy.

    >>> jnp.linalg.tensorinv(jnp.eye(6).reshape(6, 2, 3), ind=1).shape
    (2, 3, 6)
    """
    a = asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    out_shape, in_shape = a.shape[:ind], a.shape[ind:]
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise ShapeError(f"tensorinv: the first {ind} axes of shape {a.shape} must hold as many "
                         f"elements as the rest ({rows} != {cols})")
    return lax.reshape(inv(lax.reshape(a, (rows, cols))), in_shape + out_shape)


def tensorsolve(a, b, axes=None):
    """The ``x`` with ``tensordot(a, x, x.ndim) == b``, ``x`` taking the trailing axes of ``a``
    (after moving ``axes`` to the end), as NumPy.

    >>> a, b = jnp.eye(6).reshape(2, 3, 6), jnp.ones((2, 3))
    >>> jnp.linalg.tensorsolve(a, b).shape
    (6,)
    """
    a, b = asarray(a), asarray(b)
    if axes is not None:
        axes = canonicalize_axes(axes, a.ndim, "tensorsolve")
        a = shapes.moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    out_shape = a.shape[b.ndim:]
    size = math.prod(out_shape)
    if a.shape[:b.ndim] != b.shape or math.prod(b.shape) != size:
        raise ShapeError(f"tensorsolve: a of shape {a.shape} must start with b's shape {b.shape}"
                         f" and the rest must hold as many elements")
    x = solve(lax.reshape(a, (size, size)), lax.reshape(b, (size,)))
    return lax.reshape(x, out_shape)

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""fnx.numpy.linalg: norms, decompositions and solvers (NumPy's names).

``solve``, ``inv``, ``det`` and ``slogdet`` are built on the ``lu`` primitive (partial pivoting,
so they need no symmetry) and ``triangular_solve``; ``cholesky``, ``qr``, ``eigh`` and ``svd`` are
primitives of their own (fnx/core/linalg_prims.py). All are differentiable to any order (``eigh``
and ``svd`` where the eigenvalues or singular values are distinct) and batch over leading
dimensions.
"""
from __future__ import annotations

from typing import NamedTuple

from ..core import dtypes, lax
from ..core import linalg_prims as _lp
from ..core.errors import ShapeError
from ._core import asarray, broadcast_shapes, broadcast_to, canonicalize_axes, \
    promote_dtypes_inexact
from . import reductions, ufuncs


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (``ord`` None/2/1/inf for vectors, None/'fro' for matrices)."""
    (x,) = promote_dtypes_inexact(asarray(x))
    if axis is None and ord is None:
        return lax.sqrt(reductions.sum(lax.mul(x, x), None, keepdims=keepdims))
    axes = canonicalize_axes(axis, x.ndim, "norm") if axis is not None else tuple(range(x.ndim))
    if len(axes) == 2 and ord in (None, "fro"):
        return lax.sqrt(reductions.sum(lax.mul(x, x), axes, keepdims=keepdims))
    if len(axes) != 1:
        raise NotImplementedError(f"norm with ord={ord!r} over axes {axes}")
    ax = axes
    if ord is None or ord == 2:
        return lax.sqrt(reductions.sum(lax.mul(x, x), ax, keepdims=keepdims))
    if ord == 1:
        return reductions.sum(ufuncs.absolute(x), ax, keepdims=keepdims)
    if ord == float("inf"):
        return reductions.max(ufuncs.absolute(x), ax, keepdims=keepdims)
    if ord == -float("inf"):
        return reductions.min(ufuncs.absolute(x), ax, keepdims=keepdims)
    if ord == 0:
        return reductions.sum(lax.convert_element_type(lax.ne(x, lax.full(x.shape, 0, x.dtype)),
                                                       x.dtype), ax, keepdims=keepdims)
    p = float(ord)
    s = reductions.sum(ufuncs.power(ufuncs.absolute(x), p), ax, keepdims=keepdims)
    return ufuncs.power(s, 1.0 / p)


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class QRResult(NamedTuple):
    Q: object
    R: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name} needs square matrices (..., n, n), got shape {a.shape}")


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of symmetric positive-definite ``a``: lower ``L`` with
    ``a = L @ L.T`` (or upper ``U = L.T`` with ``upper=True``); NaNs if ``a`` is not positive
    definite.

    >>> L = cholesky(jnp.array([[4.0, 2.0], [2.0, 3.0]]))
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("cholesky", a)
    L = _lp.cholesky(a, symmetrize_input=symmetrize_input)
    return _lp.swap_last(L) if upper else L


def _lu_solve(lu, perm, b):
    """Solve with an LU factorisation; ``b`` is (..., n, k) with ``lu``'s batch dims."""
    nd = b.ndim
    perm_b = lax.broadcast_in_dim(perm, b.shape, tuple(range(nd - 1)))
    pb = lax.take_along_axis(b, perm_b, nd - 2)
    y = _lp.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return _lp.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a, b):
    """The solution ``x`` of ``a @ x = b``; ``b`` is a vector (n,) or matrices (..., n, k).

    >>> solve(jnp.array([[2.0, 0.0], [0.0, 4.0]]), jnp.array([2.0, 2.0]))
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

    >>> inv(jnp.array([[2.0, 0.0], [0.0, 4.0]]))
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
    odd = lax.eq(lax.rem(swaps, lax.full(swaps.shape, 2, dtypes.int32)),
                 lax.full(swaps.shape, 1, dtypes.int32))
    sign = lax.select(odd, lax.full(swaps.shape, -1, a.dtype), lax.full(swaps.shape, 1, a.dtype))
    return sign, diag, n


def _diag(x):
    n = x.shape[-1]
    flat = lax.reshape(x, x.shape[:-2] + (n * n,))
    idx = lax.mul(lax.iota(dtypes.int32, n), lax.full((n,), n + 1, dtypes.int32))
    return lax.take(flat, idx, x.ndim - 2)


def det(a):
    """The determinant of square ``a`` (product of the LU diagonal, signed by the pivots).

    >>> det(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    Array(-1.9999999, dtype=float32)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("det", a)
    sign, diag, _ = _lu_sign_and_diag(a)
    return lax.mul(sign, reductions.prod(diag, -1))


def slogdet(a):
    """``(sign, log|det a|)``, which stays finite where ``det`` would overflow.

    >>> sign, logabsdet = slogdet(jnp.eye(3) * 10.0)   # (1., 6.9077554)
    """
    (a,) = promote_dtypes_inexact(asarray(a))
    _square("slogdet", a)
    sign, diag, _ = _lu_sign_and_diag(a)
    sign = lax.mul(sign, reductions.prod(lax.sign(diag), -1))
    return SlogdetResult(sign, reductions.sum(lax.log(lax.abs_(diag)), -1))


def qr(a, mode: str = "reduced"):
    """QR decomposition: ``mode`` "reduced" (Q: (..., m, k)), "complete" (Q: (..., m, m)) or
    "r" (R only), as in NumPy.

    >>> q, r = qr(a)
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

    >>> w, v = eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))   # w == [1., 3.]
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

    >>> u, s, vh = svd(a, full_matrices=False)
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
    vh = _lp.swap_last(lax.mul(u, lax.broadcast_in_dim(sign, u.shape, columns)))
    return SVDResult(u, s, vh)

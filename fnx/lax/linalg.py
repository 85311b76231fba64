"""fnx.lax.linalg: the linear-algebra primitives' functions, with JAX's signatures.

>>> import fnx.lax.linalg as lax_linalg
>>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
>>> L = lax_linalg.cholesky(a)
>>> v, w = lax_linalg.eigh(a)   # eigenvectors first, as in JAX
>>> w
Array([1.4384472, 5.561553 ], dtype=float32)
"""
import enum

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.api import ShapeDtypeStruct
from ..core.callbacks import pure_callback
from ..core.control_flow import cond, fori_loop, scan
from ..core.errors import ShapeError
from ..numpy._core import promote_dtypes_inexact
from ..core import linalg_prims
# the primitives whose parameters are JAX's (eigh_p, qr_p and svd_p take fewer)
from ..core.linalg_prims import (cholesky, cholesky_p, lu, lu_p, qr,  # noqa: F401
                                 triangular_solve, triangular_solve_p)
from .qdwh import qdwh  # noqa: F401

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky",
           "cholesky_update", "eig", "eigh", "hessenberg", "householder_product", "lu",
           "lu_pivots_to_permutation", "ormqr", "qdwh", "qr", "schur", "svd", "symmetric_product",
           "triangular_solve", "tridiagonal", "tridiagonal_solve"]


class SvdAlgorithm(enum.Enum):
    """The SVD algorithm ``svd(algorithm=)`` asks for; on the CPU every one gives LAPACK's
    result, as in JAX.

    >>> fnx.lax.linalg.SvdAlgorithm.QR.value
    'QR'
    """
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


class EighImplementation(enum.Enum):
    """The eigensolver ``eigh(implementation=)`` asks for; on the CPU every one gives
    LAPACK's result, as in JAX.

    >>> fnx.lax.linalg.EighImplementation.QDWH.value
    'qdwh'
    """
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class EigImplementation(enum.Enum):
    """The eigensolver ``eig(implementation=)`` asks for (LAPACK on the CPU, as in JAX).

    >>> fnx.lax.linalg.EigImplementation.LAPACK.value
    'lapack'
    """
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm: SvdAlgorithm | None = None):
    """Singular value decomposition ``x = u @ diag(s) @ vh``, ``s`` descending: ``(u, s, vh)``,
    or ``s`` alone without ``compute_uv``; ``subset_by_index=(start, end)`` keeps singular
    values ``start`` to ``end - 1`` (with ``full_matrices=False``). ``algorithm`` is accepted
    and every one computes the same decomposition, as on JAX's CPU.

    >>> fnx.lax.linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.], dtype=float32)
    """
    del algorithm
    if subset_by_index is not None and full_matrices:
        raise ValueError("full_matrices and subset_by_index cannot both be set")
    out = linalg_prims.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)
    if subset_by_index is None:
        return out
    start, end = subset_by_index
    if not compute_uv:
        return out[..., start:end]
    u, s, vh = out
    return u[..., start:end], s[..., start:end], vh[..., start:end, :]


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None,
         implementation: EighImplementation | None = None):
    """Eigendecomposition of symmetric (Hermitian) ``x``: ``(v, w)`` with ``x @ v == v * w``,
    eigenvalues ascending; ``subset_by_index=(start, end)`` keeps eigenvalues ``start`` to
    ``end - 1`` of that order and their vectors. ``implementation`` is accepted and every one
    computes the same decomposition, as on JAX's CPU.

    >>> v, w = fnx.lax.linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]), subset_by_index=(1, 2))
    >>> w
    Array([3.], dtype=float32)
    """
    del implementation
    v, w = linalg_prims.eigh(x, lower=lower, symmetrize_input=symmetrize_input,
                             sort_eigenvalues=sort_eigenvalues)
    if subset_by_index is None:
        return v, w
    start, end = subset_by_index
    return v[..., start:end], w[..., start:end]


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """``X`` solving ``A X = b`` for the tridiagonal ``A`` with lower, main and upper
    diagonals ``dl``, ``d``, ``du`` (each ``[..., m]``; ``dl[0]`` and ``du[-1]`` unused) and
    ``b`` of shape ``[..., m, n]``, by the Thomas algorithm (elimination without pivoting: the
    systems of splines and implicit PDE steps, diagonally dominant, need none).

    >>> ones = jnp.ones(3)
    >>> fnx.lax.linalg.tridiagonal_solve(ones.at[0].set(0), 4 * ones, ones.at[2].set(0),
    ...                                  jnp.array([[5.0], [6.0], [5.0]]))
    Array([[1.],
           [1.],
           [1.]], dtype=float32)
    """
    dl, d, du, b = promote_dtypes_inexact(dl, d, du, b)
    if not (dl.shape == d.shape == du.shape) or b.ndim < 2 or \
            b.shape[:-1] != d.shape:
        raise ShapeError(f"tridiagonal_solve: dl, d and du must share a shape [..., m] and b "
                         f"be [..., m, n], got {dl.shape}, {d.shape}, {du.shape} and {b.shape}")
    del perturb_singular     # no pivots to perturb: a singular system gives inf/NaN, as in JAX
    rows = [jnp.moveaxis(x, -1, 0) for x in (dl, d, du)] + [jnp.moveaxis(b, -2, 0)]

    def eliminate(carry, row):
        upper_prev, rhs_prev = carry
        lower, diag, upper, rhs = row
        pivot = diag - lower * upper_prev
        upper = upper / pivot
        rhs = (rhs - lower[..., None] * rhs_prev) / pivot[..., None]
        return (upper, rhs), (upper, rhs)

    start = (jnp.zeros_like(rows[1][0]), jnp.zeros_like(rows[3][0]))
    _, (uppers, rhss) = scan(eliminate, start, tuple(rows))

    def substitute(x_next, row):
        upper, rhs = row
        x = rhs - upper[..., None] * x_next
        return x, x

    _, x = scan(substitute, jnp.zeros_like(rhss[0]), (uppers, rhss), reverse=True)
    return jnp.moveaxis(x, 0, -2)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """LAPACK's pivots (row ``i`` was swapped with row ``pivots[i]``, in order) as the
    permutation ``perm`` with ``a[perm] == l @ u``.

    >>> fnx.lax.linalg.lu_pivots_to_permutation(jnp.array([2, 2, 2]), 3)
    Array([2, 0, 1], dtype=int32)
    """
    pivots = jnp.asarray(pivots, jnp.int32)
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    iota = jnp.broadcast_to(jnp.arange(permutation_size, dtype=jnp.int32),
                            batch + (permutation_size,))

    def swap(i, perm):
        j = lax.dynamic_index_in_dim(pivots, i, pivots.ndim - 1, keepdims=True)
        at_i = lax.dynamic_index_in_dim(perm, i, perm.ndim - 1, keepdims=True)
        at_j = jnp.take_along_axis(perm, j, axis=-1)
        return jnp.where(iota == i, at_j, jnp.where(iota == j, at_i, perm))
    return fori_loop(0, k, swap, iota)


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1., beta: float = 0.,
                      symmetrize_output: bool = False):
    """``alpha * A @ A.T + beta * C`` for ``A`` ``[..., m, n]`` and symmetric ``C``
    ``[..., m, m]``; ``symmetrize_output`` mirrors the lower triangle into the upper one.

    >>> fnx.lax.linalg.symmetric_product(jnp.array([[1.0, 2.0]]), jnp.ones((1, 1)), beta=2.0)
    Array([[7.]], dtype=float32)
    """
    a, c = jnp.asarray(a_matrix), jnp.asarray(c_matrix)
    result = alpha * jnp.matmul(a, jnp.swapaxes(a, -1, -2), precision="highest") + beta * c
    if symmetrize_output:
        result = jnp.tril(result) + jnp.swapaxes(jnp.tril(result, -1), -1, -2)
    return result


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of ``R.T @ R + w w.T`` from the upper factor ``R``, by one
    Givens rotation per row (O(n^2)), as JAX's.

    >>> r = fnx.lax.linalg.cholesky_update(jnp.eye(2), jnp.array([0.0, 1.0]))
    >>> jnp.abs(r).round(4)
    Array([[1.    , 0.    ],
           [0.    , 1.4142]], dtype=float32)
    """
    r, w = promote_dtypes_inexact(r_matrix, w_vector)
    n = r.shape[-1]
    if r.ndim != 2 or r.shape[0] != n or w.shape != (n,):
        raise ShapeError(f"cholesky_update needs R (n, n) and w (n,), got {r.shape} and "
                         f"{w.shape}")

    def rotation(x, y):       # Givens coefficients, scaled against overflow
        def nonzero(x, y):
            scale = jnp.maximum(jnp.abs(x), jnp.abs(y))
            x, y = x / scale, y / scale
            norm = lax.rsqrt(x * x + y * y)
            return x * norm, -y * norm
        one, zero = np.array(1, x.dtype), np.array(0, x.dtype)
        return cond(y == 0, lambda x, y: (one, zero), nonzero, x, y)

    def row(k, carry):
        r, w = carry
        c, s = rotation(r[k, k], w[k])
        r_k = r[k]
        return r.at[k].set(c * r_k - s * w), c * w + s * r_k
    return fori_loop(0, n, row, (r, w))[0]


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """``[w, vl, vr]`` of general square matrices (the left and right eigenvectors as asked),
    complex, from LAPACK's geev on the host as JAX's CPU path; no derivative.

    >>> w, vl, vr = fnx.lax.linalg.eig(jnp.array([[2.0, 1.0], [0.0, 3.0]]))
    >>> w
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    del enable_eigvec_derivs, implementation, use_magma
    x = jnp.asarray(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"eig needs square matrices (..., n, n), got shape {x.shape}")
    out = np.dtype(np.complex128 if x.dtype in (np.float64, np.complex128) else np.complex64)
    wanted = (True, compute_left_eigenvectors, compute_right_eigenvectors)
    shapes = [ShapeDtypeStruct(x.shape[:-1], out)] + \
        [ShapeDtypeStruct(x.shape, out)] * (sum(wanted) - 1)

    def host(m):
        import scipy.linalg
        m = np.asarray(m)
        parts = [scipy.linalg.eig(a, left=True, right=True) for a in m.reshape(-1, *m.shape[-2:])]
        return [np.stack([p[i] for p in parts]).reshape(m.shape[:-1] if i == 0 else m.shape)
                .astype(out) for i, want in enumerate(wanted) if want]
    return list(pure_callback(host, shapes, x, vmap_method="broadcast_all"))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """``[T, Q]`` with ``x = Q T Q^H`` (``T`` quasi-triangular for real ``x``), or ``[T]``
    without ``compute_schur_vectors``; LAPACK's gees on the host, as JAX's CPU path.

    >>> t, q = fnx.lax.linalg.schur(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
    """
    del sort_eig_vals, select_callable        # unused, as in JAX
    x, = promote_dtypes_inexact(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"schur needs square matrices (..., m, m), got shape {x.shape}")
    like = ShapeDtypeStruct(x.shape, x.dtype)

    def host(m):
        import scipy.linalg
        m = np.asarray(m)
        pairs = [scipy.linalg.schur(a) for a in m.reshape(-1, *m.shape[-2:])]
        return tuple(np.stack([p[i] for p in pairs]).reshape(m.shape).astype(x.dtype)
                     for i in range(1 + compute_schur_vectors))
    return list(pure_callback(host, (like,) * (1 + compute_schur_vectors), x,
                              vmap_method="broadcast_all"))


def householder_product(a, taus):
    """The first ``n`` columns of the product of the Householder reflectors
    ``H_i = I - taus[i] v_i v_i^H`` stored below the diagonal of ``a`` ``[..., m, n]``, in
    order (LAPACK's orgqr), composed of products (so it has a derivative).

    >>> a = jnp.array([[1.0], [1.0]])
    >>> fnx.lax.linalg.householder_product(a, jnp.array([1.0]))
    Array([[ 0.],
           [-1.]], dtype=float32)
    """
    a, taus = promote_dtypes_inexact(a, taus)
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    if a.ndim < 2 or m < n or k > n or taus.shape[:-1] != a.shape[:-2]:
        raise ShapeError(f"householder_product needs a (..., m, n) with m >= n and taus "
                         f"(..., k) with k <= n, got {a.shape} and {taus.shape}")
    rows = jnp.arange(m)
    q = jnp.broadcast_to(jnp.eye(m, n, dtype=a.dtype), a.shape)

    def reflect(step, q):
        v, tau = _reflector(a, taus, k - 1 - step, rows)     # H_1 (H_2 (... (H_k I)))
        vq = jnp.einsum("...m,...mn->...n", jnp.conj(v), q)
        return q - (tau * v)[..., :, None] * vq[..., None, :]
    return fori_loop(0, k, reflect, q)


def _reflector(a, taus, i, rows):
    """The Householder vector ``v_i`` (unit at row ``i``, ``a``'s column ``i`` below it) and
    its ``tau_i`` with a trailing axis of one, for ``H_i = I - tau_i v_i v_i^H``."""
    column = lax.dynamic_index_in_dim(a, i, a.ndim - 1, keepdims=False)
    v = jnp.where(rows == i, 1, jnp.where(rows > i, column, 0)).astype(a.dtype)
    return v, lax.dynamic_index_in_dim(taus, i, taus.ndim - 1, keepdims=True)


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q @ c`` (``c @ Q`` with ``left=False``; ``Q^H`` in place of ``Q`` with
    ``transpose``) for the ``Q`` whose Householder reflectors ``taus`` (``[..., k]``) and
    ``a`` (``[..., m, n]``, below its diagonal) hold, as a geqrf leaves them, without forming
    ``Q`` (LAPACK's ormqr): one reflector at a time, composed of products, so it has a
    derivative. ``c`` is ``[..., m, cols]`` (``[..., rows, m]`` with ``left=False``).

    >>> a = jnp.array([[1.0], [1.0]])          # H = I - v v^T with v = [1, 1]
    >>> fnx.lax.linalg.ormqr(a, jnp.array([1.0]), jnp.array([[2.0], [3.0]]))
    Array([[-3.],
           [-2.]], dtype=float32)
    """
    a, taus, c = promote_dtypes_inexact(a, taus, c)
    if a.ndim < 2 or c.ndim != a.ndim or taus.ndim != a.ndim - 1 or \
            taus.shape[:-1] != a.shape[:-2] or c.shape[:-2] != a.shape[:-2]:
        raise ShapeError(f"ormqr needs a (..., m, n), taus (..., k) and c (..., rows, cols) "
                         f"with the same batch dimensions, got {a.shape}, {taus.shape} and "
                         f"{c.shape}")
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    if k > n:
        raise ShapeError(f"ormqr: a of shape {a.shape} holds {n} reflectors, taus {k}")
    side, extent = ("rows", c.shape[-2]) if left else ("columns", c.shape[-1])
    if extent != m:
        raise ShapeError(f"ormqr with left={left} needs c with as many {side} as a has rows "
                         f"({m}), got a of shape {a.shape} and c of shape {c.shape}")
    if transpose:              # Q^H = H_k^H ... H_1^H, and H_i^H takes conj(tau_i)
        taus = jnp.conj(taus)
    backwards = left != transpose     # Q c = H_1 (... (H_k c)); c Q^H = (c H_k^H) ... H_1^H
    rows = jnp.arange(m)

    def reflect(step, c):
        v, tau = _reflector(a, taus, k - 1 - step if backwards else step, rows)
        if left:               # H c = c - tau v (v^H c)
            vc = jnp.einsum("...m,...mj->...j", jnp.conj(v), c)
            return c - (tau * v)[..., :, None] * vc[..., None, :]
        cv = jnp.einsum("...im,...m->...i", c, v)     # c H = c - tau (c v) v^H
        return c - (tau[..., None] * cv[..., :, None]) * jnp.conj(v)[..., None, :]
    return fori_loop(0, k, reflect, c)


def _lapack_on_host(name, x, outs, host_call):
    """``host_call(lapack_function, matrix)`` over each matrix of ``x``, giving ``outs``."""
    def host(m):
        import scipy.linalg.lapack
        m = np.asarray(m)
        f, = scipy.linalg.lapack.get_lapack_funcs((name,), (m,))
        parts = [host_call(f, a) for a in m.reshape(-1, *m.shape[-2:])]
        return tuple(np.stack([p[i] for p in parts]).reshape(m.shape[:-2] + like.shape[x.ndim - 2:])
                     .astype(like.dtype) for i, like in enumerate(outs))
    return list(pure_callback(host, outs, x, vmap_method="broadcast_all"))


def hessenberg(a):
    """``[a, taus]``: the upper Hessenberg form of square ``a`` in its upper triangle and first
    subdiagonal, the Householder reflectors below it (LAPACK's gehrd, on the host as JAX's CPU
    path).

    >>> h, taus = fnx.lax.linalg.hessenberg(jnp.eye(3))
    >>> taus
    Array([0., 0.], dtype=float32)
    """
    a, = promote_dtypes_inexact(a)
    n = a.shape[-1]
    if a.ndim < 2 or a.shape[-2] != n:
        raise ShapeError(f"hessenberg needs square matrices (..., n, n), got shape {a.shape}")
    outs = (ShapeDtypeStruct(a.shape, a.dtype),
            ShapeDtypeStruct(a.shape[:-2] + (max(n - 1, 0),), a.dtype))
    return _lapack_on_host("gehrd", a, outs,
                           lambda f, m: f(m, lo=0, hi=max(n - 1, 0))[:2] if n else (m, m[0, :0]))


def tridiagonal(a, *, lower: bool = True):
    """``[a, d, e, taus]``: the tridiagonal form of Hermitian ``a`` (diagonal ``d``, first
    sub- or superdiagonal ``e``) with the Householder reflectors beyond it (LAPACK's
    sytrd/hetrd, on the host as JAX's CPU path).

    >>> _, d, e, taus = fnx.lax.linalg.tridiagonal(jnp.eye(3))
    >>> d
    Array([1., 1., 1.], dtype=float32)
    """
    a, = promote_dtypes_inexact(a)
    n = a.shape[-1]
    if a.ndim < 2 or a.shape[-2] != n:
        raise ShapeError(f"tridiagonal needs square matrices (..., n, n), got shape {a.shape}")
    real = np.dtype(np.finfo(a.dtype).dtype)
    batch = a.shape[:-2]
    outs = (ShapeDtypeStruct(a.shape, a.dtype), ShapeDtypeStruct(batch + (n,), real),
            ShapeDtypeStruct(batch + (max(n - 1, 0),), real),
            ShapeDtypeStruct(batch + (max(n - 1, 0),), a.dtype))
    name = "hetrd" if dtypes.issubdtype(a.dtype, np.complexfloating) else "sytrd"
    return _lapack_on_host(name, a, outs, lambda f, m: f(m, lower=int(lower))[:4])


from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

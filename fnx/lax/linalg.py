"""fnx.lax.linalg: the linear-algebra primitives' functions, with JAX's signatures.

>>> import fnx.lax.linalg as lax_linalg
>>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
>>> L = lax_linalg.cholesky(a)
>>> v, w = lax_linalg.eigh(a)   # eigenvectors first, as in JAX
>>> w
Array([1.4384472, 5.561553 ], dtype=float32)
"""
from .. import numpy as jnp
from ..core import lax
from ..core.control_flow import fori_loop, scan
from ..core.errors import ShapeError
from ..numpy._core import promote_dtypes_inexact
from ..core.linalg_prims import cholesky, eigh, lu, qr, svd, triangular_solve  # noqa: F401

__all__ = ["cholesky", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd",
           "triangular_solve", "tridiagonal_solve"]


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


from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

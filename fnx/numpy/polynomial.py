"""NumPy's classic polynomial functions on coefficient arrays, highest power first:
``poly``, ``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint``,
``polyfit`` (``polyval`` lives with the products)."""
from __future__ import annotations

import numpy as np

from ..core.core import concrete_or_error
from ..core.custom_derivatives import custom_jvp
from ..core.errors import ShapeError
from ._core import asarray, promote_dtypes, promote_dtypes_inexact
from .creation import arange, ones, zeros
from .indexing import where
from .products import convolve, polyval, vander
from .shapes import concatenate
from .ufuncs import sqrt

__all__ = ["poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit",
           "roots"]


def _check_1d(name, **arrays):
    for arg, a in arrays.items():
        if a.ndim != 1:
            raise ShapeError(f"{name}: {arg} must be 1-D coefficients, got shape {a.shape}")


def _trim_leading(a, tol=0.0):
    values = np.asarray(concrete_or_error(a, "trim_leading_zeros needs concrete values"))
    nonzero = np.flatnonzero(np.abs(values) > tol)
    return a[int(nonzero[0]):] if nonzero.size else a[:0]


def polyadd(a1, a2):
    """The sum of two polynomials.

    >>> jnp.polyadd(jnp.array([1, 2]), jnp.array([3, 4, 5]))
    Array([3, 5, 7], dtype=int32)
    """
    a1, a2 = promote_dtypes(a1, a2)
    # the shorter adds into the longer's trailing rows (broadcast there), as in JAX
    if a2.shape[0] <= a1.shape[0]:
        return a1.at[a1.shape[0] - a2.shape[0]:].add(a2)
    return a2.at[a2.shape[0] - a1.shape[0]:].add(a1)


def polysub(a1, a2):
    """The difference of two polynomials.

    >>> jnp.polysub(jnp.array([3, 4, 5]), jnp.array([1, 2]))
    Array([3, 3, 3], dtype=int32)
    """
    a1, a2 = promote_dtypes(a1, a2)
    return polyadd(a1, -a2)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials.

    >>> jnp.polymul(jnp.array([1.0, 1.0]), jnp.array([1.0, -1.0]))
    Array([ 1.,  0., -1.], dtype=float32)
    """
    a1, a2 = promote_dtypes_inexact(a1, a2)
    if trim_leading_zeros:
        a1, a2 = _trim_leading(a1), _trim_leading(a2)
    if a1.shape[0] == 0:
        a1 = zeros(1, a1.dtype)
    if a2.shape[0] == 0:
        a2 = zeros(1, a2.dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """The quotient and remainder of polynomial ``u`` divided by ``v``.

    >>> q, r = jnp.polydiv(jnp.array([1.0, 0.0, -1.0]), jnp.array([1.0, 1.0]))
    >>> q
    Array([ 1., -1.], dtype=float32)
    """
    u, v = promote_dtypes_inexact(u, v)
    _check_1d("polydiv", u=u, v=v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    q = zeros(max(m - n + 1, 1), u.dtype)
    r = u
    for k in range(m - n + 1):     # long division, one leading term at a time
        d = scale * r[k]
        q = q.at[k].set(d)
        r = r.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        r = _trim_leading(r, tol=float(np.sqrt(np.finfo(r.dtype).eps)))
    return q, r


def polyder(p, m=1):
    """The ``m``-th derivative of a polynomial.

    >>> jnp.polyder(jnp.array([1.0, 2.0, 3.0]))
    Array([2., 2.], dtype=float32)
    """
    p, = promote_dtypes_inexact(p)
    _check_1d("polyder", p=p)
    if m < 0:
        raise ValueError(f"polyder: the order must be non-negative, got m={m}")
    for _ in range(m):
        n = max(p.shape[0] - 1, 0)
        p = p[:-1] * arange(n, 0, -1, dtype=p.dtype)
    return p


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``.

    >>> jnp.polyint(jnp.array([3.0, 2.0, 1.0]), k=5.0)
    Array([1., 1., 1., 5.], dtype=float32)
    """
    p, = promote_dtypes_inexact(p)
    _check_1d("polyint", p=p)
    if m < 0:
        raise ValueError(f"polyint: the order must be non-negative, got m={m}")
    if m == 0:
        return p
    k = zeros(m, p.dtype) if k is None else asarray(k, p.dtype)
    k = k.reshape(-1)
    if k.shape[0] == 1:
        k = k * ones(m, p.dtype)
    if k.shape[0] != m:
        raise ValueError(f"polyint: k must have one constant, or m={m}, got {k.shape[0]}")
    for i in range(m):
        n = p.shape[0]
        p = concatenate([p / arange(n, 0, -1, dtype=p.dtype), k[i:i + 1]])
    return p


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a scalar, a vector, or
    a square matrix, whose characteristic polynomial it is).

    >>> jnp.poly(jnp.array([1.0, 2.0]))
    Array([ 1., -3.,  2.], dtype=float32)
    """
    z, = promote_dtypes_inexact(seq_of_zeros)
    if z.ndim == 0:
        z = z.reshape(1)
    if z.ndim == 2 and z.shape[0] == z.shape[1] != 0:
        from .linalg import eigvals
        z = eigvals(z)
    if z.ndim != 1:
        raise ValueError(f"poly: roots must be 1-D or a non-empty square matrix, got shape "
                         f"{z.shape}")
    if z.shape[0] == 0:
        return ones((), z.dtype)
    a = ones(1, z.dtype)
    for i in range(z.shape[0]):
        a = convolve(a, concatenate([ones(1, z.dtype), -z[i:i + 1]]), mode="full")
    return a


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through points ``(x, y)``.

    >>> jnp.polyfit(jnp.array([0.0, 1.0, 2.0]), jnp.array([1.0, 3.0, 5.0]), 1).round(4)
    Array([2., 1.], dtype=float32)
    """
    from .linalg import inv, lstsq
    x, y = promote_dtypes_inexact(x, y)
    deg = int(deg)
    if deg < 0:
        raise ValueError(f"polyfit: the degree must be non-negative, got {deg}")
    if x.ndim != 1 or y.ndim not in (1, 2) or x.shape[0] != y.shape[0]:
        raise ShapeError(f"polyfit: x must be 1-D and y 1-D or 2-D of the same length, got "
                         f"shapes {x.shape} and {y.shape}")
    order = deg + 1
    rcond = x.shape[0] * float(np.finfo(x.dtype).eps) if rcond is None else rcond
    lhs, rhs = vander(x, order), y
    if w is not None:
        w, = promote_dtypes_inexact(w)
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    scale = sqrt((lhs * lhs).sum(axis=0))      # column scaling improves the conditioning
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        base = inv(lhs.T @ lhs) / (scale[:, None] * scale[None, :])
        if cov == "unscaled":
            factor = 1.0
        else:
            dof = x.shape[0] - order
            if dof <= 0:
                raise ValueError("polyfit: the data must have more points than the degree "
                                 "plus one to scale the covariance")
            factor = resids / dof
        if y.ndim == 1:
            return c, base * factor
        return c, base[:, :, None] * factor
    return c


def roots(p, *, strip_zeros=True):
    """The complex roots of the polynomial with coefficients ``p`` (highest power first): the
    eigenvalues of its companion matrix, in LAPACK's order, as JAX's. ``strip_zeros`` drops
    leading zeros (it needs concrete coefficients); with ``strip_zeros=False`` (the form ``jit``
    traces) the result has ``len(p) - 1`` entries, the roots at zero after the others and NaN
    for each leading zero, as in JAX. Simple roots have derivatives.

    >>> jnp.roots(jnp.array([1.0, -3.0, 2.0]))
    Array([2.+0.j, 1.+0.j], dtype=complex64)
    >>> jnp.roots(jnp.array([0.0, 1.0, 2.0]), strip_zeros=False)
    Array([-2. +0.j, nan+nanj], dtype=complex64)
    """
    from .reductions import all as all_, argmin
    from .shapes import roll
    from .sorting import argsort
    p, = promote_dtypes_inexact(p)
    _check_1d("roots", p=p)
    if p.shape[0] < 2:
        return zeros(0, _complex_dtype(p.dtype))
    zero = p == 0
    n_leading = where(all_(zero), p.shape[0], argmin(zero))
    if strip_zeros:
        n_leading = int(concrete_or_error(
            n_leading, "roots with strip_zeros=True needs concrete coefficients; under jit "
            "pass strip_zeros=False (leading zeros then give NaN roots)"))
        return _companion_roots(p[n_leading:])
    # leading zeros roll to the end, where they are roots at zero, moved last and made NaN
    p = where(n_leading == p.shape[0], 1.0, p).astype(p.dtype)
    found = _companion_roots(roll(p, -n_leading))
    found = found[argsort(found == 0, stable=True)]
    degree = p.shape[0] - 1
    return where(arange(degree) < degree - n_leading, found, complex(np.nan, np.nan))


def _complex_dtype(dtype):
    return np.dtype(np.complex128) if dtype in (np.float64, np.complex128) else \
        np.dtype(np.complex64)


def _companion_roots(p):
    """The eigenvalues of the companion matrix of ``p`` (leading coefficient nonzero)."""
    if p.shape[0] < 2:
        return zeros(0, _complex_dtype(p.dtype))
    return _eigvals_of_companion(p)


@custom_jvp
def _eigvals_of_companion(p):
    from .linalg import eigvals
    from .shapes import diag
    companion = diag(ones(p.shape[0] - 2, p.dtype), -1).at[0, :].set(-p[1:] / p[0])
    return eigvals(companion)


@_eigvals_of_companion.defjvp
def _eigvals_of_companion_jvp(primals, tangents):
    # a simple root r moves by -dp(r) / p'(r) (implicit differentiation of p(r) = 0)
    (p,), (dp,) = primals, tangents
    r = _eigvals_of_companion(p)
    dtype = r.dtype
    return r, -polyval(dp.astype(dtype), r) / polyval(polyder(p).astype(dtype), r)


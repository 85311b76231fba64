"""SciPy's named matrices (scipy.linalg.hankel, circulant, pascal, ...), as jax.scipy.linalg has them.

Functions of a vector batch over leading dimensions; functions of a size ``n`` take it as a
Python int. The binomial-coefficient matrices are computed in floating point, as in JAX.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import numpy as jnp
from ..core import dtypes


def _vector(name, a):
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError(f"{name}: expected an array of at least 1 dimension, got a scalar")
    return a


def _float(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(dtypes.default_float)
    return x


def _diagonals(vals, index):
    """Gather a matrix from a batch of vectors: entry (i, j) is vals[..., index[i, j]]."""
    return vals[..., index]


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``r[0]`` ignored;
    ``r`` defaults to ``c``): entry (i, j) is ``c[i - j]`` for i >= j, else ``r[j - i]``.
    Leading dimensions of ``c`` and ``r`` give a batch of matrices, as in JAX.

    >>> toeplitz(jnp.array([1, 2, 3]))
    Array([[1, 2, 3],
           [2, 1, 2],
           [3, 2, 1]], dtype=int32)
    """
    c = jnp.atleast_1d(jnp.asarray(c))
    r = jnp.conjugate(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    batch = jnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    n, m = c.shape[-1], r.shape[-1]
    dtype = jnp.result_type(c, r)
    # every diagonal, r reversed then c: entry (i, j) is vals[m - 1 + i - j]
    vals = jnp.concatenate([jnp.broadcast_to(r[..., :0:-1], batch + (m - 1,)).astype(dtype),
                            jnp.broadcast_to(c, batch + (n,)).astype(dtype)], axis=-1)
    index = (m - 1) + np.arange(n)[:, None] - np.arange(m)[None, :]
    return vals[..., index]


def hilbert(n: int):
    """The n x n Hilbert matrix, ``1 / (i + j + 1)``.

    >>> hilbert(2)
    Array([[1.        , 0.5       ],
           [0.5       , 0.33333334]], dtype=float32)
    """
    i = jnp.arange(n, dtype=jnp.float32)
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (``r[0]`` ignored; ``r``
    defaults to zeros): entry (i, j) is ``c[i + j]``, continued by ``r``.

    >>> hankel(jnp.array([1, 2, 3]), jnp.array([3, 4, 5]))
    Array([[1, 2, 3],
           [2, 3, 4],
           [3, 4, 5]], dtype=int32)
    """
    c = _vector("hankel", c)
    r = jnp.zeros_like(c) if r is None else _vector("hankel", r)
    batch = jnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    n, m = c.shape[-1], r.shape[-1]
    dtype = jnp.result_type(c, r)
    vals = jnp.concatenate([jnp.broadcast_to(c, batch + (n,)).astype(dtype),
                            jnp.broadcast_to(r[..., 1:], batch + (m - 1,)).astype(dtype)],
                           axis=-1) if m else jnp.zeros(batch + (n,), dtype)
    return _diagonals(vals, np.arange(n)[:, None] + np.arange(m)[None, :])


def circulant(c):
    """The circulant matrix with first column ``c``: entry (i, j) is ``c[(i - j) % n]``.

    >>> circulant(jnp.array([1, 2, 3]))
    Array([[1, 3, 2],
           [2, 1, 3],
           [3, 2, 1]], dtype=int32)
    """
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    return _diagonals(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def leslie(f, s):
    """The Leslie matrix: fecundities ``f`` (length N >= 2) as its first row, survivals ``s``
    (length N - 1) on its first subdiagonal.

    >>> leslie(jnp.array([0.1, 2.0]), jnp.array([0.5]))
    Array([[0.1, 2. ],
           [0.5, 0. ]], dtype=float32)
    """
    f, s = _vector("leslie", f), _vector("leslie", s)
    n = f.shape[-1]
    if n < 2:
        raise ValueError(f"leslie: the length of f along the last axis must be at least 2; "
                         f"got shape {f.shape}")
    if s.shape[-1] != n - 1:
        raise ValueError(f"leslie: s must be one shorter than f along the last axis; got f shape "
                         f"{f.shape} and s shape {s.shape}")
    dtype = jnp.result_type(f, s)
    batch = jnp.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    below = jnp.broadcast_to(s, batch + (n - 1,)).astype(dtype)
    # rows 1.. are s[i - 1] on the subdiagonal, zeros elsewhere
    rest = below[..., :, None] * jnp.eye(n - 1, n, k=0, dtype=dtype)
    return jnp.concatenate([jnp.broadcast_to(f, batch + (n,)).astype(dtype)[..., None, :], rest],
                           axis=-2)


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (highest power first):
    first row ``-a[1:] / a[0]``, ones on the subdiagonal.

    >>> companion(jnp.array([1., -10., 31., -30.]))
    Array([[ 10., -31.,  30.],
           [  1.,   0.,   0.],
           [  0.,   1.,   0.]], dtype=float32)
    """
    a = _float(_vector("companion", a))
    if a.shape[-1] < 2:
        raise ValueError(f"companion: the length of a along the last axis must be at least 2; "
                         f"got shape {a.shape}")
    m = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    ones = jnp.broadcast_to(jnp.eye(m, m, k=-1, dtype=a.dtype)[1:], a.shape[:-1] + (m - 1, m))
    return jnp.concatenate([first[..., None, :], ones], axis=-2)


def fiedler(a):
    """The symmetric Fiedler matrix ``|a[i] - a[j]|``.

    >>> fiedler(jnp.array([1, 4, 2]))
    Array([[0, 3, 1],
           [3, 0, 2],
           [1, 2, 0]], dtype=int32)
    """
    a = _vector("fiedler", a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The pentadiagonal Fiedler companion matrix of the polynomial with coefficients ``a``
    (highest power first); its eigenvalues are the polynomial's roots.

    >>> fiedler_companion(jnp.array([1., -6., 11., -6.]))
    Array([[  6., -11.,   1.],
           [  1.,   0.,   0.],
           [  0.,   6.,   0.]], dtype=float32)
    """
    a = _float(_vector("fiedler_companion", a))
    if a.shape[-1] == 0:
        raise ValueError(f"fiedler_companion: the last axis of a must be non-empty; got shape "
                         f"{a.shape}")
    n = a.shape[-1] - 1
    if n == 0:
        return jnp.zeros(a.shape[:-1] + (0, 0), a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    # where each (i, j) takes -a[k] from, and where it is one (SciPy's construction)
    from_a = np.full((n, n), -1)
    from_a[(i == 0) & (j == 0)] = 1
    np.putmask(from_a, (j == i + 1) & even, np.broadcast_to(i + 2, (n, n)))
    np.putmask(from_a, (j == i - 1) & even & (i >= 2), np.broadcast_to(i + 1, (n, n)))
    ones = ((i == 1) & (j == 0)) | ((j == i + 2) & even) | ((j == i - 2) & odd & (i >= 3))
    vals = -a[..., np.maximum(from_a, 0)]
    return jnp.where(from_a >= 0, vals, jnp.where(ones, 1.0, 0.0).astype(a.dtype))


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix ``A`` with ``A @ v == jnp.convolve(a, v, mode)`` for ``v`` of length n.

    >>> convolution_matrix(jnp.array([1, 2]), 3)
    Array([[1, 0, 0],
           [2, 1, 0],
           [0, 2, 1],
           [0, 0, 2]], dtype=int32)
    """
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"convolution_matrix: n must be a positive integer; got {n}")
    a = jnp.asarray(a)
    if a.ndim == 0 or a.shape[-1] < 1:
        raise ValueError(f"convolution_matrix: a must have a non-empty last axis; got shape "
                         f"{a.shape}")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'valid' or 'same'; got {mode!r}")
    m = a.shape[-1]
    pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    column, row = jnp.pad(a, pad), jnp.pad(jnp.flip(a, axis=-1), pad)
    length = m + n - 1
    if mode == "full":
        start, stop = 0, 0
    elif mode == "valid":
        start = stop = min(n, m) - 1
    else:
        trim = min(n, m) - 1
        start, stop = trim // 2, trim - trim // 2
    return toeplitz(column[..., start:length - stop], row[..., length - n - start:length - start])


def _binomials(n, upper):
    """binom(i + j, j) for i, j < n when ``upper`` else binom(i, j), exactly in float64 (the sizes
    are static, so NumPy builds them once; JAX's gammaln route is off in the last digits)."""
    return np.array([[float(math.comb(i + j if upper else i, j)) for j in range(n)]
                     for i in range(n)]).reshape(n, n)


def _pascal_kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"pascal: kind must be 'symmetric', 'lower' or 'upper'; got {kind!r}")
    return kind


def _of_kind(lower, kind, symmetric):
    return {"lower": lower, "upper": lower.T, "symmetric": symmetric}[kind]


def pascal(n: int, kind: str | None = None):
    """The n x n Pascal matrix of binomial coefficients (``kind``: 'symmetric', 'lower' or
    'upper'), in float32 as in JAX.

    >>> pascal(3, kind="lower")
    Array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 2., 1.]], dtype=float32)
    """
    kind = _pascal_kind(kind)
    lower = _binomials(n, upper=False)
    return jnp.asarray(_of_kind(lower, kind, _binomials(n, upper=True)), dtype=jnp.float32)


def invpascal(n: int, kind: str | None = None):
    """The inverse of ``pascal(n, kind)``: ``(-1)**(i - j) * binom(i, j)`` for the lower kind.

    >>> invpascal(3, kind="lower")
    Array([[ 1., -0.,  0.],
           [-1.,  1., -0.],
           [ 1., -2.,  1.]], dtype=float32)
    """
    kind = _pascal_kind(kind)
    i = np.arange(n)
    lower = (-1.0) ** (i[:, None] - i[None, :]) * _binomials(n, upper=False)
    return jnp.asarray(_of_kind(lower, kind, lower.T @ lower), dtype=dtypes.default_float)


def invhilbert(n: int):
    """The inverse of the n x n Hilbert matrix, from its closed form.

    >>> invhilbert(2)
    Array([[ 4., -6.],
           [-6., 12.]], dtype=float32)
    """
    def entry(i, j):
        # products of exact integers can pass 2**53; the float64 product is what SciPy gives
        return ((-1.0) ** (i + j) * (i + j + 1) * float(math.comb(n + i, n - j - 1))
                * float(math.comb(n + j, n - i - 1)) * float(math.comb(i + j, i)) ** 2)
    table = np.array([[entry(i, j) for j in range(n)] for i in range(n)]).reshape(n, n)
    return jnp.asarray(table, dtype=dtypes.default_float)


def helmert(n: int, full: bool = False):
    """The Helmert matrix of orthonormal contrasts, (n - 1, n), or (n, n) with ``full``.

    >>> helmert(2)
    Array([[ 0.70710677, -0.70710677]], dtype=float32)
    """
    if n < 1:
        raise ValueError(f"helmert: n must be a positive integer; got {n}")
    i, j = np.arange(n - 1)[:, None], np.arange(n)[None, :]
    k = jnp.asarray(i + 1, dtype=dtypes.default_float)
    norm = jnp.sqrt(k * (k + 1.0))
    h = jnp.where(j <= i, 1.0 / norm, jnp.where(j == i + 1, -k / norm, 0.0))
    if full:
        h = jnp.concatenate([jnp.full((1, n), 1.0 / np.sqrt(n), h.dtype), h], axis=0)
    return h


def hadamard(n: int, dtype=int):
    """The n x n Sylvester Hadamard matrix (n a power of 2).

    >>> hadamard(2)
    Array([[ 1,  1],
           [ 1, -1]], dtype=int32)
    """
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2; got {n}")
    h = jnp.ones((1, 1), dtype=dtype)
    while h.shape[0] < n:
        h = jnp.block([[h, h], [h, -h]])
    return h


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The n x n discrete Fourier transform matrix ``exp(-2j pi i j / n)``, unscaled or scaled by
    ``1/sqrt(n)`` ('sqrtn') or ``1/n`` ('n').

    >>> dft(2).real
    Array([[ 1.,  1.],
           [ 1., -1.]], dtype=float32)
    """
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n'; got {scale!r}")
    dtype = dtypes.default_complex if dtype is None else np.dtype(dtype)
    if not np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"dft: dtype must be a complex floating type; got {dtype}")
    a = jnp.arange(n, dtype=dtype)
    w = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    return w / {None: 1, "sqrtn": np.sqrt(n), "n": n}[scale]

"""fnx.scipy.fft: SciPy's discrete cosine transforms (JAX's jax.scipy.fft), types 1 to 4.

Each transform of length N is one FFT of length 2N (2(N-1) for type 1) of the zero-padded input
with twiddle factors before and after, on the ``fft`` primitive, so every one is
differentiable, batchable and jittable. JAX implements type 2 only; types 1, 3 and 4 follow
SciPy. ``norm`` is SciPy's: ``None``/"backward" (``dct`` unscaled, ``idct`` its inverse),
"ortho" (orthonormal both ways) or "forward" (the 1/(2N) on ``dct``).

>>> from fnx.scipy import fft
>>> fft.idct(fft.dct(jnp.array([1.0, 2.0, 3.0])))
Array([1., 2., 3.], dtype=float32)
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from ..core import dtypes, lax
from ..core.fft import FftType, fft as _lax_fft
from ..numpy import asarray
from ..numpy._core import canonicalize_axes, canonicalize_axis, promote_dtypes_inexact
from ..numpy.shapes import moveaxis

__all__ = ["dct", "dctn", "idct", "idctn"]

_NORMS = (None, "backward", "ortho", "forward")
_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _const(values, like):
    return lax.convert_element_type(np.asarray(values), like.dtype)


def _scaled(x, factor):
    return x if factor == 1.0 else x * _const(factor, x)


def _last_axis_fft(v, m: int):
    """The length-``m`` FFT of ``v`` zero-padded along its last axis, first N bins kept."""
    n = v.shape[-1]
    config = [(0, 0, 0)] * (v.ndim - 1) + [(0, m - n, 0)]
    v = lax.pad(v, lax.full((), 0, v.dtype), config)
    if v.dtype.kind != "c":
        v = lax.convert_element_type(v, dtypes.complex128 if v.dtype == np.float64
                                     else dtypes.complex64)
    return lax.slice_in_dim(_lax_fft(v, FftType.FFT, (m,)), 0, n, axis=v.ndim - 1)


def _twiddle(angles, like):
    """``exp(-1j * angles)`` in the complex dtype matching the real array ``like``."""
    w = np.exp(-1j * np.asarray(angles))
    return lax.convert_element_type(w, dtypes.complex128 if like.dtype == np.float64
                                    else dtypes.complex64)


def _dct_last(x, type: int):
    """The unnormalized DCT of real ``x`` along its last axis (SciPy's definitions)."""
    n = x.shape[-1]
    k = np.arange(n)
    if type == 1:
        if n < 2:
            raise ValueError(f"dct type 1 needs a length of at least 2, got {n}")
        z = lax.real(_last_axis_fft(x, 2 * (n - 1)))
        ends = (lax.slice_in_dim(x, 0, 1, axis=x.ndim - 1)
                + lax.slice_in_dim(x, n - 1, n, axis=x.ndim - 1) * _const((-1.0) ** k, x))
        return 2 * z - ends
    if type == 2:
        return 2 * lax.real(_last_axis_fft(x, 2 * n) * _twiddle(np.pi * k / (2 * n), x))
    if type == 3:
        y = 2 * lax.real(_last_axis_fft(x * _twiddle(np.pi * k / (2 * n), x), 2 * n))
        return y - lax.slice_in_dim(x, 0, 1, axis=x.ndim - 1)
    y = _last_axis_fft(x * _twiddle(np.pi * k / (2 * n), x), 2 * n)
    return 2 * lax.real(y * _twiddle(np.pi * (k + 0.5) / (2 * n), x))


def _ends(n: int, first: float, last: float, like):
    """A length-n vector of ones with ``first`` and ``last`` at its ends."""
    v = np.ones(n)
    v[0], v[-1] = first, last
    return _const(v, like)


def _ortho_dct_last(x, type: int):
    n = x.shape[-1]
    r2 = np.sqrt(2.0)
    if type == 1:
        x = x * _ends(n, r2, r2, x)
        return _dct_last(x, 1) * _ends(n, 1 / r2, 1 / r2, x) * _const(np.sqrt(0.5 / (n - 1)), x)
    if type == 3:
        x = x * _ends(n, r2, 1.0, x)
    y = _scaled(_dct_last(x, type), np.sqrt(0.5 / n))
    return y * _ends(n, 1 / r2, 1.0, x) if type == 2 else y


def _period(n: int, type: int) -> int:
    return 2 * (n - 1) if type == 1 else 2 * n


def _transform_last(x, type: int, norm, inverse: bool):
    if inverse:
        type = _INVERSE_TYPE[type]
    if norm == "ortho":
        return _ortho_dct_last(x, type)
    y = _dct_last(x, type)
    scaled = (norm == "forward") != inverse
    return _scaled(y, 1.0 / _period(x.shape[-1], type)) if scaled else y


def _check(name, type, norm):
    if type not in (1, 2, 3, 4):
        raise ValueError(f"jax.scipy.fft.{name}: type must be 1, 2, 3 or 4, got {type!r}")
    if norm not in _NORMS:
        raise ValueError(f"jax.scipy.fft.{name}: {norm=!r} is not implemented; use None, "
                         f"'backward', 'ortho' or 'forward'")


def _resize(x, axis: int, n: int):
    if n <= 0:
        raise ValueError(f"invalid number of data points ({n}) specified")
    if n <= x.shape[axis]:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (0, n - x.shape[axis], 0)
    return lax.pad(x, lax.full((), 0, x.dtype), config)


def _transform(name, x, type, sizes, axes, norm, inverse):
    """The DCT (or its inverse) of ``x`` along each of ``axes`` (sizes: their lengths or None)."""
    _check(name, type, norm)
    x = asarray(x)
    if x.dtype.kind == "c":
        parts = (lax.real(x), lax.imag(x))
        re, im = (_transform(name, p, type, sizes, axes, norm, inverse) for p in parts)
        return lax.complex_(re, im)
    x, = promote_dtypes_inexact(x)
    for axis, size in zip(axes, sizes):
        if size is not None:
            x = _resize(x, axis, operator.index(size))
        x = moveaxis(_transform_last(moveaxis(x, axis, -1), type, norm, inverse), -1, axis)
    return x


def _nd_axes(x, s, axes):
    x = asarray(x)
    if s is not None:
        s = [operator.index(s)] if not isinstance(s, Sequence) else list(s)
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = canonicalize_axes(axes, x.ndim)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"s and axes must have the same length, got {len(s)} and {len(axes)}")
    return axes, s if s is not None else [None] * len(axes)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The discrete cosine transform of ``x`` along ``axis`` (SciPy's ``scipy.fft.dct``),
    zero-padded or truncated to length ``n`` first.

    >>> jnp.round(dct(jnp.array([1.0, 2.0, 3.0, 4.0])), 3)
    Array([20.   , -6.309,  0.   , -0.448], dtype=float32)
    """
    axis = canonicalize_axis(axis, asarray(x).ndim)
    return _transform("dct", x, type, [n], [axis], norm, inverse=False)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`dct` of the same ``type`` and ``norm`` along ``axis``.

    >>> idct(jnp.array([20.0, 0.0, 0.0, 0.0]))
    Array([2.5, 2.5, 2.5, 2.5], dtype=float32)
    """
    axis = canonicalize_axis(axis, asarray(x).ndim)
    return _transform("idct", x, type, [n], [axis], norm, inverse=True)


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """The DCT over several ``axes`` (all, or the last ``len(s)``, by default), each padded or
    truncated to its length in ``s``.

    >>> dctn(jnp.ones((2, 2)))
    Array([[16.,  0.],
           [ 0.,  0.]], dtype=float32)
    """
    axes, sizes = _nd_axes(x, s, axes)
    return _transform("dctn", x, type, sizes, axes, norm, inverse=False)


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """The inverse of :func:`dctn`.

    >>> idctn(dctn(jnp.array([[1.0, 2.0], [3.0, 4.0]])))
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    axes, sizes = _nd_axes(x, s, axes)
    return _transform("idctn", x, type, sizes, axes, norm, inverse=True)

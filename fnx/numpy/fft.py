"""fnx.numpy.fft: NumPy's discrete Fourier transforms (JAX's jax.numpy.fft), on the ``fft``
primitive (fnx/core/fft.py), so every one is differentiable, batchable and jittable.

Each transform takes NumPy's ``n`` / ``s`` (pad with zeros or truncate the input first),
``axis`` / ``axes`` and ``norm`` ("backward", the default, scales the inverse by 1/N; "ortho"
both ways by 1/sqrt(N); "forward" the forward one by 1/N). Single-precision inputs give complex64
(and float32) results, as in JAX.

>>> import fnx.numpy as jnp
>>> jnp.fft.irfft(jnp.fft.rfft(jnp.arange(4.0)))
Array([0., 1., 2., 3.], dtype=float32)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..core import dtypes, lax
from ..core.fft import FftType, fft as _lax_fft, negate_indices
from ._core import asarray, canonicalize_axis
from .shapes import moveaxis, roll

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_factor(func_name: str, s, norm) -> float:
    """The scale a transform of lengths ``s`` gets under ``norm`` (inverse names start with
    'i')."""
    if norm is None or norm == "backward":
        return 1.0
    n = float(math.prod(s))
    if norm == "ortho":
        return math.sqrt(n) if func_name.startswith("i") else 1 / math.sqrt(n)
    if norm == "forward":
        return n if func_name.startswith("i") else 1 / n
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _scale(x, factor: float):
    if factor == 1.0:
        return x
    return lax.mul(x, lax.full((), factor, x.dtype))


def _resize(x, axis: int, n: int):
    """``x`` truncated or zero-padded to length ``n`` along ``axis``."""
    m = x.shape[axis]
    if n < m:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    if n > m:
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (0, n - m, 0)
        return lax.pad(x, lax.full((), 0, x.dtype), config)
    return x


def _fft_core(func_name, fft_type, a, s, axes, norm):
    full_name = f"jax.numpy.fft.{func_name}"
    arr = asarray(a)
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(d <= 0 for d in s):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    orig_axes = axes
    if axes is None:
        axes = range(arr.ndim) if s is None else range(arr.ndim - len(s), arr.ndim)
    axes = tuple(axes)
    if len({canonicalize_axis(ax, arr.ndim) for ax in axes}) != len(axes):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        moved = tuple(range(arr.ndim - len(axes), arr.ndim))
        arr = moveaxis(arr, axes, moved)
        axes = moved
    if s is not None:
        for ax, d in zip(axes, s):
            if fft_type == FftType.IRFFT and ax == axes[-1]:
                d = d // 2 + 1
            arr = _resize(arr, ax, d)
    elif fft_type == FftType.IRFFT:
        s = [arr.shape[ax] for ax in axes[:-1]]
        if axes:
            s.append(max(0, 2 * (arr.shape[axes[-1]] - 1)))
    else:
        s = [arr.shape[ax] for ax in axes]
    out = _lax_fft(arr, fft_type, tuple(s))
    out = _scale(out, _norm_factor(func_name, s, norm))
    if orig_axes is not None:
        out = moveaxis(out, axes, orig_axes)
    return out


def _axis_check_1d(func_name, axis):
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"jax.numpy.fft.{func_name} does not support multiple axes. Please "
                         f"use jax.numpy.fft.{func_name}n. Got axis = {axis!r}.")


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
    _axis_check_1d(func_name, axis)
    axes = None if axis is None else [axis]
    s = None if n is None else [n]
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft(a, n=None, axis: int = -1, norm=None):
    """The one-dimensional discrete Fourier transform along ``axis``.

    >>> jnp.fft.fft(jnp.array([1.0, 0.0, 0.0, 0.0]))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
    """The inverse of ``fft``: ``ifft(fft(x))`` is ``x`` (as complex).

    >>> jnp.fft.ifft(jnp.ones(4))
    Array([1.+0.j, 0.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)
    """
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
    """The transform of real input: the ``n // 2 + 1`` non-negative frequencies.

    >>> jnp.fft.rfft(jnp.array([1.0, 2.0, 3.0, 4.0]))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
    """The inverse of ``rfft``: real output of length ``n`` (``2 * (m - 1)`` by default).

    >>> jnp.fft.irfft(jnp.fft.rfft(jnp.array([1.0, 2.0, 3.0])), n=3)
    Array([1., 2., 3.], dtype=float32)
    """
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis: int = -1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real output.

    >>> jnp.fft.hfft(jnp.array([1.0, 2.0, 3.0]))
    Array([ 8., -2.,  0., -2.], dtype=float32)
    """
    _axis_check_1d("hfft", axis)
    a = asarray(a)
    nn = (a.shape[axis] - 1) * 2 if n is None else n
    # irfft(conj(a)) is irfft(a) read at negated indices
    out = _fft_core_1d("hfft", FftType.IRFFT, a, n, axis, norm)
    out = negate_indices(out, (canonicalize_axis(axis, out.ndim),))
    return _scale(out, float(nn))


def ihfft(a, n=None, axis: int = -1, norm=None):
    """The inverse of ``hfft``: the half spectrum of a real signal's Hermitian transform.

    >>> jnp.fft.ihfft(jnp.array([8.0, -2.0, 0.0, -2.0]))
    Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    _axis_check_1d("ihfft", axis)
    a = asarray(a)
    ax = canonicalize_axis(axis, a.ndim)
    nn = a.shape[ax] if n is None else n
    if n is not None:
        a = _resize(a, ax, operator.index(n))
    # conj(rfft(x)) is rfft of x read at negated indices
    out = _fft_core_1d("ihfft", FftType.RFFT, negate_indices(a, (ax,)), None, axis, norm)
    return _scale(out, 1 / nn)


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform over ``axes`` (all of them by default).

    >>> jnp.fft.fftn(jnp.ones((2, 2)))
    Array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]], dtype=complex64)
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The inverse of ``fftn``.

    >>> jnp.fft.ifftn(jnp.fft.fftn(jnp.ones((2, 2)))).shape
    (2, 2)
    """
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """``fftn`` of real input, the last axis halved as in ``rfft``.

    >>> jnp.fft.rfftn(jnp.ones((2, 4))).shape
    (2, 3)
    """
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of ``rfftn``.

    >>> jnp.fft.irfftn(jnp.fft.rfftn(jnp.ones((2, 4)))).shape
    (2, 4)
    """
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """``fftn`` over two axes (the last two by default).

    >>> jnp.fft.fft2(jnp.ones((3, 2, 2)))[0, 0, 0]
    Array(4.+0.j, dtype=complex64)
    """
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """``ifftn`` over two axes (the last two by default).

    >>> jnp.fft.ifft2(jnp.ones((2, 2)))[0, 0]
    Array(1.+0.j, dtype=complex64)
    """
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """``rfftn`` over two axes (the last two by default).

    >>> jnp.fft.rfft2(jnp.ones((2, 4))).shape
    (2, 3)
    """
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """``irfftn`` over two axes (the last two by default).

    >>> jnp.fft.irfft2(jnp.fft.rfft2(jnp.ones((2, 4)))).shape
    (2, 4)
    """
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def _check_freq_args(name, n, d):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``.

    >>> jnp.fft.fftfreq(4)
    Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
    """
    _check_freq_args("fftfreq", n, d)
    from .creation import arange
    out_dtype = dtypes.canonicalize(dtype or dtypes.default_float)
    dt = out_dtype if dtypes.is_float(out_dtype) and out_dtype.kind != "c" \
        else dtypes.default_float
    i = arange(n, dtype=dt)
    k = (i + n // 2) % n - n // 2
    return (k / asarray(d * n, dtype=dt)).astype(out_dtype)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point ``rfft``: ``n // 2 + 1`` of them.

    >>> jnp.fft.rfftfreq(4)
    Array([0.  , 0.25, 0.5 ], dtype=float32)
    """
    _check_freq_args("rfftfreq", n, d)
    from .creation import arange
    dt = dtypes.canonicalize(dtype or dtypes.default_float)
    k = arange(0, n // 2 + 1, dtype=dt)
    return k / asarray(d * n, dtype=dt)


def _shifts(x, axes, sign):
    if axes is None:
        axes = tuple(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        return sign * (x.shape[axes] // 2), axes
    return [sign * (x.shape[ax] // 2) for ax in axes], tuple(axes)


def fftshift(x, axes=None):
    """``x`` rolled so that frequency zero is at the centre of ``axes`` (all by default).

    >>> jnp.fft.fftshift(jnp.fft.fftfreq(4))
    Array([-0.5 , -0.25,  0.  ,  0.25], dtype=float32)
    """
    x = asarray(x)
    shift, axes = _shifts(x, axes, 1)
    return roll(x, shift, axes)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift``.

    >>> jnp.fft.ifftshift(jnp.fft.fftshift(jnp.fft.fftfreq(5)))
    Array([ 0. ,  0.2,  0.4, -0.4, -0.2], dtype=float32)
    """
    x = asarray(x)
    shift, axes = _shifts(x, axes, -1)
    return roll(x, shift, axes)

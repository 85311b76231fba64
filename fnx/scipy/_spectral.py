"""Spectral estimates with SciPy's conventions: ``detrend``, the short-time Fourier transform
(``stft``, ``istft``) and Welch's averaged periodograms (``csd``, ``welch``).

Segment lengths, overlaps and windows are static; the signal flows through gathers, FFTs and
elementwise ops, so ``grad``, ``vmap`` and ``jit`` go through every function here.

>>> f, pxx = fnx.scipy.signal.welch(jnp.array([1.0, -1.0] * 8), nperseg=8)
>>> f.shape, int(jnp.argmax(pxx))
((5,), 4)
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..core.core import concrete_or_error
from ..numpy import fft as _fft
from ..numpy._core import canonicalize_axis, promote_dtypes_inexact
from ._windows import get_window


def _complex_of(dtype) -> np.dtype:
    """The complex dtype a spectrum of ``dtype`` data has (complex64 below 64-bit floats)."""
    d = dtypes.to_inexact(dtype)
    return np.dtype(np.complex128 if d in (np.float64, np.complex128) else np.complex64)


def _static_int(x, what: str) -> int:
    return int(concrete_or_error(x, what))


def detrend(data, axis: int = -1, type: str = "linear", bp=0,  # noqa: A002 - SciPy's name
            overwrite_data=None):
    """``data`` less its least-squares line (``type='linear'``, piecewise between the
    breakpoints ``bp``) or its mean (``type='constant'``) along ``axis``.

    >>> fnx.scipy.signal.detrend(jnp.array([1.0, 2.0, 3.0]))
    Array([0., 0., 0.], dtype=float32)
    """
    if overwrite_data is not None:
        raise NotImplementedError("detrend: overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    data, = promote_dtypes_inexact(jnp.asarray(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    axis = canonicalize_axis(axis, data.ndim)
    n = data.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError(f"detrend: breakpoints {bp} must be non-negative and at most the "
                         f"length {n} of the data along axis {axis}")
    # each piece's fit is a fixed linear map of the data: its projection onto span(1, t),
    # built once on the host in float64
    trend = np.zeros((n, n))
    for lo, hi in zip(bps[:-1], bps[1:]):
        a = np.stack([np.ones(hi - lo), np.arange(1, hi - lo + 1) / (hi - lo)], axis=1)
        trend[lo:hi, lo:hi] = a @ np.linalg.pinv(a)
    x = jnp.moveaxis(data, axis, -1)
    x = x - jnp.matmul(x, jnp.asarray(trend.T, np.finfo(x.dtype).dtype), precision="highest")
    return jnp.moveaxis(x, -1, axis)


def _window(window, nperseg, input_length: int, dtype):
    """The window as an array of ``dtype`` and the segment length (SciPy's _triage_segments)."""
    if isinstance(window, (str, tuple)):
        nperseg = input_length if nperseg is None else int(nperseg)
        if nperseg > input_length:
            warnings.warn(f"nperseg={nperseg} is greater than input_length={input_length}, "
                          f"using nperseg={input_length}")
            nperseg = input_length
        return jnp.asarray(get_window(window, nperseg), dtype=dtype), nperseg
    win = jnp.asarray(window, dtype=dtype)
    if win.ndim != 1:
        raise ValueError(f"window must be 1-D, got shape {win.shape}")
    if input_length < win.size:
        raise ValueError(f"window of length {win.size} is longer than the input signal "
                         f"({input_length})")
    if nperseg is not None and int(nperseg) != win.size:
        raise ValueError(f"value specified for nperseg ({nperseg}) is different from the "
                         f"length of window ({win.size})")
    return win, win.size


def _segments(x, nperseg: int, nstep: int):
    """``x[..., n]`` as overlapping segments ``[..., nseg, nperseg]`` (one static gather)."""
    starts = np.arange(0, x.shape[-1] - nperseg + 1, nstep)
    return x[..., starts[:, None] + np.arange(nperseg)]


def _detrend_func(detrend_type):
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, axis=-1, type=detrend_type)
    if callable(detrend_type):
        return detrend_type
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _windowed_fft(x, win, detrend_func, nperseg, nstep, nfft, twosided):
    segs = detrend_func(_segments(x, nperseg, nstep))
    segs = win * segs
    return _fft.fft(segs, n=nfft) if twosided else _fft.rfft(segs.real, n=nfft)


def _pad_last(x, n: int, mode: str):
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode)


def _odd_ext(x, n: int):
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -(n + 1):-1], -1)
    return jnp.concatenate((left, x, right), axis=-1)


_BOUNDARIES = {
    "even": lambda x, n: _pad_last(x, n, "reflect"),
    "odd": _odd_ext,
    "constant": lambda x, n: _pad_last(x, n, "edge"),
    "zeros": lambda x, n: _pad_last(x, n, "constant"),
    None: lambda x, n: x,
}


def _zero_pad_end(x, n: int):
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n)]) if n else x


def _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
                     scaling, axis, mode, boundary=None, padded=False):
    """SciPy's ``_spectral_helper``: ``(freqs, times, result)``; ``y=None`` is the
    auto-spectrum of ``x``."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    x = jnp.asarray(x)
    axis = canonicalize_axis(operator.index(axis), x.ndim)
    if y is None:
        x, = promote_dtypes_inexact(x)
        outershape = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, y = promote_dtypes_inexact(x, jnp.asarray(y))
        if x.ndim != y.ndim:
            raise ValueError(f"x and y must have the same rank, got shapes {x.shape} and "
                             f"{y.shape}")
        try:
            outershape = jnp.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                              y.shape[:axis] + y.shape[axis + 1:])
        except ValueError as err:
            raise ValueError(f"x and y cannot be broadcast together, got shapes {x.shape} and "
                             f"{y.shape}") from err
    result_dtype = _complex_of(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
        if nperseg < 1:
            raise ValueError(f"nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _window(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")

    if x.size == 0 or (y is not None and y.size == 0):
        n = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
        shape = outershape[:axis] + (n,) + outershape[axis:]
        return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
                jnp.zeros(shape, result_dtype))

    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y = jnp.moveaxis(y, axis, -1)
        longest = max(x.shape[-1], y.shape[-1])
        x, y = _zero_pad_end(x, longest - x.shape[-1]), _zero_pad_end(y, longest - y.shape[-1])
    if nfft < nperseg:
        raise ValueError(f"nfft ({nfft}) must be greater than or equal to nperseg ({nperseg}).")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap ({noverlap}) must be less than nperseg ({nperseg}).")
    nstep = nperseg - noverlap

    signals = [x] if y is None else [x, y]
    signals = [_BOUNDARIES[boundary](s, nperseg // 2) for s in signals]
    if padded:
        # pad to a whole number of segments
        nadd = (-(signals[0].shape[-1] - nperseg) % nstep) % nperseg
        signals = [_zero_pad_end(s, nadd) for s in signals]

    detrend_func = _detrend_func(detrend_type)
    if callable(detrend_type) and not isinstance(detrend_type, str) and axis != x.ndim - 1:
        # the user's function sees segments laid out as its data was
        detrend_func = (lambda d: jnp.moveaxis(detrend_type(jnp.moveaxis(d, -1, axis)),
                                               axis, -1))

    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)

    twosided = not return_onesided
    if return_onesided and any(s.dtype.kind == "c" for s in signals):
        twosided = True
        warnings.warn("Input data is complex, switching to return_onesided=False")
    freqs = (_fft.fftfreq(nfft, 1 / fs, dtype=freq_dtype) if twosided
             else _fft.rfftfreq(nfft, 1 / fs, dtype=freq_dtype))

    spectra = [_windowed_fft(s, win, detrend_func, nperseg, nstep, nfft, twosided)
               for s in signals]
    if y is not None:
        result = jnp.conjugate(spectra[0]) * spectra[1]
    elif mode == "psd":
        result = jnp.conjugate(spectra[0]) * spectra[0]
    else:
        result = spectra[0]
    result = result * scale
    if not twosided and mode == "psd":
        end = None if nfft % 2 else -1
        result = result.at[..., 1:end].multiply(2)

    n = signals[0].shape[-1]
    time = jnp.asarray(np.arange(nperseg / 2, n - nperseg / 2 + 1, nstep), freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs

    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap=None, nfft=None, detrend=False,
         return_onesided: bool = True, boundary="zeros", padded: bool = True, axis: int = -1):
    """The short-time Fourier transform of ``x`` along ``axis``: ``(f, t, Zxx)``, as
    ``scipy.signal.stft``.

    >>> f, t, z = fnx.scipy.signal.stft(jnp.ones(16), nperseg=8)
    >>> z.shape, z.dtype
    ((5, 5), dtype('complex64'))
    """
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, "spectrum", axis, "stft", boundary, padded)


def _median_bias(n: int) -> float:
    ii = np.arange(2.0, n, 2)
    return 1 + float(np.sum(1.0 / (ii + 1) - 1.0 / ii))


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean"):
    """The cross power spectral density of ``x`` and ``y`` by Welch's method: ``(f, Pxy)``
    (``y=None``: the power spectral density of ``x``).

    >>> f, pxy = fnx.scipy.signal.csd(jnp.ones(8), jnp.ones(8), nperseg=4)
    >>> pxy.dtype
    dtype('complex64')
    """
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy + 0j     # complex even when x and y are real
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1])
                if pxy.dtype.kind == "c":
                    pxy = (jnp.median(pxy.real, axis=-1)
                           + 1j * jnp.median(pxy.imag, axis=-1)).astype(pxy.dtype)
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / jnp.asarray(bias, pxy.dtype)
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = pxy.reshape(pxy.shape[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean"):
    """The power spectral density of ``x`` by Welch's method: ``(f, Pxx)``.

    >>> f, pxx = fnx.scipy.signal.welch(jnp.ones(16), nperseg=8, detrend=False)
    >>> float(pxx[0])
    5.333...
    """
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, pxx.real


def _overlap_and_add(frames, step: int):
    """Sum ``frames[..., nframes, length]`` laid ``step`` apart: ``[..., output_size]``."""
    *batch, nframes, length = frames.shape
    out = jnp.zeros((*batch, step * (nframes - 1) + length), frames.dtype)
    idx = (np.arange(nframes)[:, None] * step + np.arange(length)).ravel()
    return out.at[..., idx].add(frames.reshape(*batch, nframes * length))


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
    """The inverse short-time Fourier transform: ``(t, x)`` with ``x`` the signal whose
    ``stft`` is ``Zxx``.

    >>> x = jnp.array([1.0, 2.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0])
    >>> _, _, z = fnx.scipy.signal.stft(x, nperseg=4)
    >>> bool(jnp.allclose(fnx.scipy.signal.istft(z)[1], x, atol=1e-6))
    True
    """
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"istft: input stft must be at least 2d, got shape {Zxx.shape}")
    freq_axis = canonicalize_axis(freq_axis, Zxx.ndim)
    time_axis = canonicalize_axis(time_axis, Zxx.ndim)
    if freq_axis == time_axis:
        raise ValueError("istft: must specify differing time and frequency axes")
    Zxx = Zxx.astype(_complex_of(Zxx.dtype))
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg = _static_int(nperseg or n_default, "nperseg: segment length of STFT")
    if nperseg < 1:
        raise ValueError(f"nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    else:
        nfft = _static_int(nfft, "nfft of STFT")
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = _static_int(noverlap or nperseg // 2, "noverlap of STFT")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap ({noverlap}) must be less than nperseg ({nperseg}).")
    nstep = nperseg - noverlap

    outer = tuple(i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis))
    Zxx = jnp.transpose(Zxx, outer + (time_axis, freq_axis))
    inverse = _fft.irfft if input_onesided else _fft.ifft
    xsubs = inverse(Zxx, n=nfft, axis=-1)[..., :nperseg]    # [..., frames, nperseg]

    real_dtype = np.finfo(Zxx.dtype).dtype
    if isinstance(window, (str, tuple)):
        win = jnp.asarray(get_window(window, nperseg), dtype=xsubs.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1 or win.shape[0] != nperseg:
            raise ValueError(f"window must be 1-D of length {nperseg}, got shape {win.shape}")
        win = win.astype(xsubs.dtype)
    xsubs = xsubs * win.sum()      # undoes stft's 'spectrum' scaling
    x = _overlap_and_add(xsubs * win, nstep)
    norm = _overlap_and_add(jnp.broadcast_to(win * win, (xsubs.shape[-2], nperseg)), nstep)
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)

    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = jnp.arange(x.shape[0], dtype=real_dtype) / fs
    return time, x

"""fnx.scipy.signal: N-d convolution and correlation with SciPy's modes (``full``, ``same``,
``valid``), computed as one ``lax.conv_general_dilated`` (or FFTs, ``fftconvolve``), and the
spectral estimates of ``_spectral`` (``stft``, ``istft``, ``csd``, ``welch``, ``detrend``).

>>> from fnx.scipy import signal
>>> signal.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""
from __future__ import annotations

from ..core import lax
from ..core.convolution import conv_general_dilated
from ..numpy import asarray, flip
from ..numpy import fft as _fft
from ..numpy._core import canonicalize_axes, promote_dtypes_inexact
from ._spectral import csd, detrend, istft, stft, welch  # noqa: F401
from ._windows import get_window  # noqa: F401

_MODES = ("full", "same", "valid")


def _convolve_nd(in1, in2, mode, precision, name):
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")
    in1, in2 = promote_dtypes_inexact(asarray(in1), asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                         f"shapes {in1.shape} and {in2.shape}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {in1.shape} and "
                         f"{in2.shape}")
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError(f"{name}: one input must be smaller than the other in every "
                         f"dimension, got shapes {in1.shape} and {in2.shape}")
    out_shape = in2.shape       # 'same' centres the result on in1's shape
    if swap and not no_swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = flip(in2)
    if mode == "valid":
        padding = [(0, 0)] * len(shape)
    elif mode == "same":
        padding = [(s - 1 - (o - 1) // 2, s - o + (o - 1) // 2) for s, o in zip(shape, out_shape)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    lhs = lax.reshape(in1, (1, 1) + in1.shape)
    rhs = lax.reshape(in2, (1, 1) + in2.shape)
    out = conv_general_dilated(lhs, rhs, (1,) * len(shape), padding, precision=precision)
    return lax.reshape(out, out.shape[2:])


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` (``method`` is accepted for SciPy's sake: one
    direct convolution computes every one).

    >>> convolve(jnp.ones((3, 3)), jnp.ones((2, 2)), mode="valid")
    Array([[4., 4.],
           [4., 4.]], dtype=float32)
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode)
    if method not in ("auto", "direct"):
        raise ValueError(f"convolve: method must be 'auto', 'direct' or 'fft', got {method!r}")
    return _convolve_nd(in1, in2, mode, precision, "convolve")


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-d cross-correlation of ``in1`` and ``in2``: ``convolve`` with ``in2`` flipped and
    conjugated.

    >>> fnx.scipy.signal.correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0]))
    Array([1., 2., 3., 0.], dtype=float32)
    """
    in2 = asarray(in2)
    in2 = lax.conj(in2) if in2.dtype.kind == "c" else in2
    return convolve(in1, flip(in2), mode, method, precision)


def fftconvolve(in1, in2, mode="full", axes=None):
    """The N-d convolution of ``in1`` and ``in2`` through FFTs, over ``axes`` (default all;
    the other axes must match and are mapped over).

    >>> fnx.scipy.signal.fftconvolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0]))
    Array([1., 3., 5., 3.], dtype=float32)
    """
    in1, in2 = promote_dtypes_inexact(asarray(in1), asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError(f"fftconvolve: in1 and in2 should have the same dimensionality, got "
                         f"shapes {in1.shape} and {in2.shape}")
    if mode not in _MODES:
        raise ValueError(f"fftconvolve: mode must be one of {_MODES}, got {mode!r}")
    axes = tuple(range(in1.ndim)) if axes is None else canonicalize_axes(axes, in1.ndim)
    mapped = [i for i in range(in1.ndim) if i not in axes]
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"fftconvolve: mapped axes must have same shape; got in1.shape="
                         f"{in1.shape} in2.shape={in2.shape} axes={axes}")
    s1, s2 = [in1.shape[a] for a in axes], [in2.shape[a] for a in axes]
    if mode == "valid":
        if not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
            raise ValueError(f"fftconvolve: for 'valid' mode one input must be at least as "
                             f"large as the other in every dimension, got shapes {in1.shape} "
                             f"and {in2.shape}")
        if all(a <= b for a, b in zip(s1, s2)):
            in1, in2, s1, s2 = in2, in1, s2, s1
    full = [a + b - 1 for a, b in zip(s1, s2)]
    if all(a == 1 or b == 1 for a, b in zip(s1, s2)):
        conv = in1 * in2
    else:
        fft, ifft = ((_fft.fftn, _fft.ifftn) if in1.dtype.kind == "c"
                     else (_fft.rfftn, _fft.irfftn))
        conv = ifft(fft(in1, full, axes) * fft(in2, full, axes), full, axes)
    out = {"full": full, "same": s1, "valid": [a - b + 1 for a, b in zip(s1, s2)]}[mode]
    start, limit = [0] * conv.ndim, list(conv.shape)
    for ax, f, o in zip(axes, full, out):
        start[ax] = (f - o) // 2
        limit[ax] = start[ax] + o
    return lax.slice(conv, tuple(start), tuple(limit))


def _check_2d(in1, in2, boundary, fillvalue, name):
    in1, in2 = asarray(in1), asarray(in2)
    if in1.ndim != 2 or in2.ndim != 2:
        raise ValueError(f"{name} only supports 2-dimensional inputs, got shapes {in1.shape} "
                         f"and {in2.shape}")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name} supports only boundary='fill' with fillvalue=0")
    return in1, in2


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d convolution of ``in1`` and ``in2`` (zero-filled boundary).

    >>> fnx.scipy.signal.convolve2d(jnp.ones((2, 2)), jnp.ones((2, 2)))
    Array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]], dtype=float32)
    """
    in1, in2 = _check_2d(in1, in2, boundary, fillvalue, "convolve2d")
    return _convolve_nd(in1, in2, mode, precision, "convolve2d")


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d cross-correlation of ``in1`` and ``in2`` (zero-filled boundary).

    >>> fnx.scipy.signal.correlate2d(jnp.eye(2), jnp.array([[1.0, 2.0]]), mode="valid")
    Array([[1.],
           [2.]], dtype=float32)
    """
    in1, in2 = _check_2d(in1, in2, boundary, fillvalue, "correlate2d")
    in2 = lax.conj(in2) if in2.dtype.kind == "c" else in2
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    # SciPy's correlate2d centres its 'same' result, and orders a swapped pair, unlike its
    # correlate: flip the larger input instead of the kernel
    if mode == "valid" and swap and not same_shape or mode == "full" and swap:
        out = _convolve_nd(flip(in2), in1, mode, precision, "correlate2d")
        return lax.conj(out) if out.dtype.kind == "c" and mode == "full" else out
    return flip(_convolve_nd(flip(in1), in2, mode, precision, "correlate2d"))

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

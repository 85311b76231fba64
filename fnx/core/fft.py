"""The ``fft`` primitive (JAX's ``lax.fft``): a fast Fourier transform over an array's trailing
``len(fft_lengths)`` axes, of one of four kinds (``FftType``).

- ``FFT`` / ``IFFT``: complex to complex, forward and inverse (the inverse scaled by 1/N).
- ``RFFT``: real to complex, keeping the ``n // 2 + 1`` non-negative frequencies of the last axis.
- ``IRFFT``: the inverse of RFFT, complex (half spectrum) to real of shape ``fft_lengths``.

Every kind is linear, so the JVP applies the primitive to the tangent. Transposes follow JAX's
(jax/_src/lax/fft.py), the non-conjugating transpose of a real-linear map, written with the FFT
itself, slices and reversals, so that no complex conjugate is needed:

- FFT and IFFT are symmetric matrices: each is its own transpose.
- RFFT is ``x -> FFT(x)[..., :m]``; its transpose is ``Re(FFT(pad(ct)))``, which equals
  ``N * IRFFT(ct / mask)`` read at negated indices (``k -> -k mod n`` on every transformed axis),
  ``mask`` being 1 at the frequencies the half spectrum holds once (zero, and n/2 for even n)
  and 2 at those it stands for twice.
- IRFFT's transpose is ``conj(RFFT(ct)) * mask / N``, which for a real ``ct`` is
  ``mask * IFFT(ct)[..., :m]``.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from . import dtypes, lax
from .ad import Zero, deflinear
from .batching import bdim_at_front
from .core import ShapedArray, get_aval, shape_str
from .errors import DTypeError, ShapeError
from .lax import primitive


class FftType(enum.IntEnum):
    """Which transform ``fft`` computes (JAX's ``lax.FftType``).

    >>> lax.FftType.FFT, lax.FftType.IRFFT
    (<FftType.FFT: 0>, <FftType.IRFFT: 3>)
    """
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
          "irfft": FftType.IRFFT}


def fft_type_of(fft_type) -> FftType:
    """``fft_type`` as an ``FftType`` (its name, in either case, is accepted too)."""
    if isinstance(fft_type, str):
        try:
            return _NAMES[fft_type.lower()]
        except KeyError:
            raise ValueError(f"Unknown FFT type '{fft_type}'") from None
    if isinstance(fft_type, (FftType, int)) and not isinstance(fft_type, bool):
        return FftType(fft_type)
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype an FFT of ``dtype`` computes in: complex128 for float64, complex64
    for the other floats, the default complex dtype for integers and booleans."""
    d = np.dtype(dtype)
    if d.kind == "c":
        return d
    if not dtypes.is_float(d):
        return dtypes.default_complex
    return dtypes.complex128 if d == dtypes.float64 else dtypes.complex64


def real_dtype(dtype) -> np.dtype:
    """The real dtype matching :func:`complex_dtype` (complex128 -> float64, else float32)."""
    return dtypes.float64 if complex_dtype(dtype) == dtypes.complex128 else dtypes.float32


# ---------------------------------------------------------------------------------------------
# the primitive


fft_p = primitive("fft")


def _shp(s):
    return shape_str(s)


def _fft_aval(x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    if k == 0 or k > x.ndim:
        raise ShapeError(f"fft over {k} axes of an array of shape {_shp(x.shape)}")
    lead, minor = x.shape[:-k], tuple(x.shape[-k:])
    if fft_type == FftType.RFFT:
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise DTypeError(f"RFFT input must be float32 or float64, got {x.dtype}")
        if minor != fft_lengths:
            raise ShapeError(f"RFFT input shape {_shp(x.shape)} minor dimensions must be "
                             f"equal to fft_lengths {fft_lengths}")
        return ShapedArray(lead + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,),
                           complex_dtype(x.dtype))
    if x.dtype.kind != "c":
        raise DTypeError(f"{fft_type.name} input must be complex64 or complex128, got "
                         f"{x.dtype}")
    if fft_type == FftType.IRFFT:
        if minor[:-1] != fft_lengths[:-1] or minor[-1] != fft_lengths[-1] // 2 + 1:
            raise ShapeError(f"IRFFT input shape {_shp(x.shape)} does not hold the half "
                             f"spectrum of fft_lengths {fft_lengths}")
        return ShapedArray(lead + fft_lengths, real_dtype(x.dtype))
    if minor != fft_lengths:
        raise ShapeError(f"{fft_type.name} input shape {_shp(x.shape)} minor dimensions must "
                         f"be equal to fft_lengths {fft_lengths}")
    return ShapedArray(x.shape, x.dtype)


def _half_spectrum_mask(n: int, dtype):
    """Over a half spectrum of length ``n // 2 + 1``: 1 at frequency 0 (and n/2 for even n),
    which the full spectrum holds once, 2 at the others, which it holds twice."""
    m = n // 2 + 1
    mask = np.full(m, 2.0)
    mask[0] = 1.0
    if n % 2 == 0:
        mask[-1] = 1.0
    return mask.astype(dtype)


def _times_mask(x, n: int, divide: bool):
    aval = get_aval(x)
    mask = _half_spectrum_mask(n, aval.dtype)
    mask = 1 / mask if divide else mask
    mask = lax.broadcast_in_dim(lax.convert_element_type(np.asarray(mask, aval.dtype),
                                                         aval.dtype),
                                aval.shape, (aval.ndim - 1,))
    return lax.mul(x, mask)


def negate_indices(x, axes):
    """``y[k] = x[-k mod n]`` along each of ``axes``."""
    for a in axes:
        n = get_aval(x).shape[a]
        if n > 1:
            x = lax.concatenate([lax.slice_in_dim(x, 0, 1, axis=a),
                                 lax.rev(lax.slice_in_dim(x, 1, n, axis=a), (a,))], a)
    return x


def _rfft_transpose(ct, fft_lengths):
    nd = get_aval(ct).ndim
    y = fft_p.bind(_times_mask(ct, fft_lengths[-1], divide=True), fft_type=FftType.IRFFT,
                   fft_lengths=fft_lengths)
    y = negate_indices(y, range(nd - len(fft_lengths), nd))
    return lax.mul(y, lax.full((), float(math.prod(fft_lengths)), get_aval(y).dtype))


def _irfft_transpose(ct, fft_lengths):
    aval = get_aval(ct)
    z = fft_p.bind(lax.convert_element_type(ct, complex_dtype(aval.dtype)),
                   fft_type=FftType.IFFT, fft_lengths=fft_lengths)
    z = lax.slice_in_dim(z, 0, fft_lengths[-1] // 2 + 1, axis=aval.ndim - 1)
    return _times_mask(z, fft_lengths[-1], divide=False)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if isinstance(ct, Zero):
        return [None]
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _fft_batch(vals, dims, **params):
    (x,), (d,) = vals, dims
    return fft_p.bind(bdim_at_front(x, d, get_aval(x).shape[d]), **params), 0


fft_p.abstract_eval = _fft_aval
fft_p.batch = _fft_batch
deflinear(fft_p, _fft_transpose)


def fft(x, fft_type, fft_lengths):
    """A fast Fourier transform over the trailing ``len(fft_lengths)`` axes of ``x``
    (``lax.fft``). ``x`` is converted to the complex dtype (or, for RFFT, the real one) the
    transform takes.

    >>> y = fft(jnp.arange(4.0), FftType.RFFT, (4,))     # Array([6.+0.j, -2.+2.j, -2.+0.j])
    """
    typ = fft_type_of(fft_type)
    dtype = get_aval(x).dtype
    if typ == FftType.RFFT:
        if dtype.kind == "c":
            raise ValueError("only real valued inputs supported for rfft")
        x = lax.convert_element_type(x, real_dtype(dtype))
    else:
        x = lax.convert_element_type(x, complex_dtype(dtype))
    fft_lengths = tuple(int(n) for n in fft_lengths)
    if not fft_lengths:
        return x
    return fft_p.bind(x, fft_type=typ, fft_lengths=fft_lengths)


__all__ = ["FftType", "fft", "fft_p", "negate_indices"]

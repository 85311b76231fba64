"""Window functions (``jnp.hamming``, ``jnp.kaiser``, ...) and the Bessel function ``i0`` that
the Kaiser window needs: float arrays of length ``M`` in the default float dtype, as JAX's."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ._core import asarray, promote_dtypes_inexact
from .creation import arange, ones
from .indexing import where
from .ufuncs import abs, cos, exp, sqrt

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "i0"]

# Cephes' Chebyshev coefficients for exp(-x) I0(x) on [0, 8] and sqrt(x) exp(-x) I0(x) on (8, inf)
_I0_SMALL = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
    -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11,
    9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
    1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
    -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
    0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764, 0.17162090152220877,
    -0.3046826723431984, 0.6767952744094761)
_I0_LARGE = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15,
    3.8116806693526224e-15, -9.554846698828307e-15, -4.150569347287222e-14,
    1.54008621752141e-14, 3.8527783827421426e-13, 7.180124451383666e-13,
    -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09,
    2.266668990498178e-08, 2.0489185894690638e-07, 2.8913705208347567e-06,
    6.889758346916825e-05, 0.0033691164782556943, 0.8044904110141088)


def _chebyshev(x, coefficients):
    b0, b1, b2 = x * 0, x * 0, x * 0
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def i0(x):
    """The modified Bessel function of the first kind, order zero, elementwise.

    >>> jnp.i0(jnp.array([0.0, 1.0])).round(4)
    Array([1.    , 1.2661], dtype=float32)
    """
    x, = promote_dtypes_inexact(x)
    if np.dtype(x.dtype).kind == "c":
        raise NotImplementedError("i0 does not accept complex arguments, as in JAX")
    ax = abs(x)
    small = ax <= 8.0
    safe_large = where(small, 8.0, ax)      # keeps 32 / x finite on the branch not taken
    inside = _chebyshev(ax / 2.0 - 2.0, _I0_SMALL)
    outside = _chebyshev(32.0 / safe_large - 2.0, _I0_LARGE) / sqrt(safe_large)
    return exp(ax) * where(small, inside, outside)


def _float():
    return dtypes.canonical(np.float64)


def _points(M):
    """The symmetric sample points ``1 - M, 3 - M, ..., M - 1`` over ``M - 1``."""
    M = int(M)
    return arange(1 - M, M, 2, dtype=_float()) / (M - 1)


def _window(M, formula):
    M = int(M)
    if M < 1:
        return asarray(np.zeros(0), _float())
    if M == 1:
        return ones(1, _float())
    return formula(_points(M))


def hamming(M):
    """The Hamming window of ``M`` points.

    >>> jnp.hamming(4).round(2)
    Array([0.08, 0.77, 0.77, 0.08], dtype=float32)
    """
    return _window(M, lambda t: 0.54 + 0.46 * cos(np.pi * t))


def hanning(M):
    """The Hann window of ``M`` points.

    >>> jnp.hanning(3)
    Array([0., 1., 0.], dtype=float32)
    """
    return _window(M, lambda t: 0.5 + 0.5 * cos(np.pi * t))


def blackman(M):
    """The Blackman window of ``M`` points.

    >>> jnp.blackman(3).round(3)
    Array([-0.,  1., -0.], dtype=float32)
    """
    return _window(M, lambda t: 0.42 + 0.5 * cos(np.pi * t) + 0.08 * cos(2 * np.pi * t))


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points.

    >>> jnp.bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    return _window(M, lambda t: 1 - abs(t))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points with shape parameter ``beta``.

    >>> jnp.kaiser(3, 0.0)
    Array([1., 1., 1.], dtype=float32)
    """
    beta, = promote_dtypes_inexact(beta)
    return _window(M, lambda t: i0(beta * sqrt(1 - t * t)) / i0(beta))

"""The Faddeeva function ``wofz`` and the Fresnel integrals, which are its values on a diagonal
of the complex plane.

``wofz`` is Weideman's rational approximation (SIAM J. Numer. Anal. 31, 1994): in the upper half
plane ``w(z) = 2 p(Z) / (L - iz)**2 + 1 / (sqrt(pi) (L - iz))`` with ``Z = (L + iz) / (L - iz)``
and ``p`` a polynomial whose coefficients come from a discrete Fourier transform, computed here
once; the lower half plane follows from ``w(-z) = 2 exp(-z**2) - w(z)``.
"""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as jnp
from ..core.custom_derivatives import custom_jvp

_TERMS = 36     # relative error about 1e-15 in the upper half plane


def _weideman_coefficients(n: int):
    m = 2 * n
    half = np.sqrt(n / np.sqrt(2.0))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = half * np.tan(theta / 2)
    f = np.concatenate([[0.0], np.exp(-t * t) * (half * half + t * t)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return half, a[1:n + 1][::-1]


_L, _COEFFICIENTS = _weideman_coefficients(_TERMS)
_L = float(_L)


def _complex(z):
    z = jnp.asarray(z)
    if jnp.issubdtype(z.dtype, jnp.complexfloating):
        return z
    return z.astype(jnp.result_type(z.dtype, jnp.complex64))


def _wofz_upper(z):
    """w(z) for Im z >= 0."""
    iz = 1j * z
    denominator = _L - iz
    big_z = (_L + iz) / denominator
    p = jnp.polyval(jnp.asarray(_COEFFICIENTS, big_z.real.dtype), big_z)
    return 2.0 * p / (denominator * denominator) + (1 / math.sqrt(math.pi)) / denominator


@custom_jvp
def _wofz(z):
    upper = z.imag >= 0
    reflected = jnp.where(upper, z, -z)
    w = _wofz_upper(reflected)
    return jnp.where(upper, w, 2.0 * jnp.exp(-z * z) - w)


@_wofz.defjvp
def _(primals, tangents):
    (z,), (z_dot,) = primals, tangents
    w = _wofz(z)
    return w, (2j / math.sqrt(math.pi) - 2.0 * z * w) * z_dot


def wofz(z):
    """The Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)``, complex (real ``z`` too).

    >>> from fnx.scipy.special import wofz
    >>> wofz(1.0)
    Array(0.367879...+0.607157...j, dtype=complex64)
    """
    return _wofz(_complex(z))


# ---- Fresnel integrals ----------------------------------------------------------------------

_SERIES_LIMIT = 1.5     # below it the power series (terms up to 3.5**k / k!) is exact
_SERIES_TERMS = 32


def _fresnel_series(x):
    """(S, C) as sums of ``x (pi x**2 / 2)**k / (k! (2k + 1))``: odd k for S, even k for C."""
    t = 0.5 * math.pi * x * x
    term = x
    s = c = jnp.zeros_like(x)
    for k in range(_SERIES_TERMS):
        if k:
            term = term * t / k
        signed = term / (2 * k + 1) * (-1.0) ** (k // 2)
        if k % 2:
            s = s + signed
        else:
            c = c + signed
    return s, c


def _fresnel_far(x):
    """(S, C) for x >= _SERIES_LIMIT: ``C + iS = (1 + i)/2 erf(zeta)`` with
    ``zeta = sqrt(pi)/2 (1 - i) x``, and ``erfc(zeta) = exp(-zeta**2) w(i zeta)``."""
    zeta_i = (0.5 * math.sqrt(math.pi)) * (1.0 + 1.0j) * _complex(x)
    phase = 0.5 * math.pi * x * x          # exp(-zeta**2) = exp(i phase)
    rotation = jnp.cos(phase) + 1j * jnp.sin(phase)
    value = (0.5 + 0.5j) * (1.0 - rotation * _wofz_upper(zeta_i))
    return value.imag, value.real


@custom_jvp
def _fresnel(x):
    ax = jnp.abs(x)
    near = ax < _SERIES_LIMIT
    s_near, c_near = _fresnel_series(jnp.where(near, ax, 0.0))
    s_far, c_far = _fresnel_far(jnp.where(near | jnp.isinf(ax), _SERIES_LIMIT, ax))
    s = jnp.where(near, s_near, jnp.where(jnp.isinf(ax), 0.5, s_far))
    c = jnp.where(near, c_near, jnp.where(jnp.isinf(ax), 0.5, c_far))
    sign = jnp.sign(x)
    return sign * s, sign * c


@_fresnel.defjvp
def _(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    phase = 0.5 * math.pi * x * x
    return _fresnel(x), (jnp.sin(phase) * x_dot, jnp.cos(phase) * x_dot)


def fresnel(x):
    """The Fresnel integrals ``(S(x), C(x))``: the integrals from 0 to x of
    ``sin(pi t**2 / 2)`` and ``cos(pi t**2 / 2)`` (real ``x``).

    >>> from fnx.scipy.special import fresnel
    >>> fresnel(1.0)
    (Array(0.43825..., dtype=float32), Array(0.77989..., dtype=float32))
    """
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise NotImplementedError("fresnel: complex arguments are not supported, as in JAX")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return _fresnel(x)


__all__ = ["wofz", "fresnel"]

"""Spherical harmonics, from orthonormalized associated Legendre functions by the recurrence in
the degree."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as jnp
from ..lax.special import lgamma
from ._common import floats


def _legendre(n, m, x, n_max: int):
    """The orthonormalized associated Legendre function (Condon-Shortley phase) of degree n and
    order m >= 0 at x = cos(theta), for n <= n_max: from
    ``P_m^m = (-1)^m sqrt((2m+1)/(4 pi) Gamma(m+1/2) / (sqrt(pi) m!)) sin(theta)^m`` up by
    ``P_l^m = a_l (x P_{l-1}^m - P_{l-2}^m / a_{l-1})``, ``a_l = sqrt((4l^2-1) / (l^2-m^2))``."""
    sine = jnp.sqrt(jnp.maximum(1.0 - x * x, 0.0))
    log_norm = 0.5 * (jnp.log((2.0 * m + 1.0) / (4 * math.pi)) + lgamma(m + 0.5)
                      - 0.5 * math.log(math.pi) - lgamma(m + 1.0))
    sign = jnp.where(jnp.remainder(m, 2.0) == 1, -1.0, 1.0)
    current = sign * jnp.exp(log_norm) * jnp.where(m == 0, 1.0, sine ** m)
    previous = jnp.zeros_like(current)
    degree = m
    for _ in range(n_max):
        up = degree < n
        next_degree = degree + 1.0
        a_next = jnp.sqrt((4.0 * next_degree ** 2 - 1.0)
                          / jnp.where(up, next_degree ** 2 - m * m, 1.0))
        inverse_a = jnp.sqrt((degree ** 2 - m * m) / (4.0 * degree ** 2 - 1.0))
        stepped = a_next * (x * current - inverse_a * previous)
        previous = jnp.where(up, current, previous)
        current = jnp.where(up, stepped, current)
        degree = jnp.where(up, next_degree, degree)
    return current


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """The spherical harmonic ``Y_n^m(theta, phi)`` (scipy's ``sph_harm_y``): degree ``n``,
    order ``m`` (``|m| <= n``), polar angle ``theta`` in [0, pi] and azimuth ``phi``;
    orthonormal on the sphere, with the Condon-Shortley phase. ``n_max`` (default
    ``max(n)``, which must then be concrete) bounds the degree: larger ``n`` are clipped to
    it, as in JAX (and ``|m| > n`` gives 0, as in SciPy). ``diff_n`` is not supported, as in
    JAX. The arguments broadcast together (JAX takes one-dimensional ``n``, and ``theta`` of
    its length or a scalar).

    >>> from fnx.scipy.special import sph_harm_y
    >>> sph_harm_y(jnp.array([1]), jnp.array([0]), jnp.array([0.0]), jnp.array([0.0]))
    Array([0.48860...+0.j], dtype=complex64)
    """
    if diff_n is not None:
        raise NotImplementedError("sph_harm_y: diff_n is not supported, as in JAX")
    if n_max is None:
        n_max = int(np.max(np.asarray(n)))
    n_max = int(n_max)
    theta, phi = floats(theta, phi)
    n, m, theta, phi = jnp.broadcast_arrays(jnp.asarray(n), jnp.asarray(m), theta, phi)
    order = jnp.abs(m).astype(theta.dtype)
    degree = jnp.minimum(n, n_max).astype(theta.dtype)
    legendre = jnp.where(order > degree, 0.0, _legendre(degree, order, jnp.cos(theta), n_max))
    angle = order * phi
    harmonic = legendre * jnp.cos(angle) + 1j * (legendre * jnp.sin(angle))
    # Y_n^{-m} = (-1)^m conj(Y_n^m)
    negative_sign = jnp.where(jnp.remainder(order, 2.0) == 1, -1.0, 1.0)
    return jnp.where(m < 0, negative_sign * jnp.conj(harmonic), harmonic)


__all__ = ["sph_harm_y"]

"""Exponentially scaled modified Bessel functions of orders 0 and 1: the power series below
``|x| = 30`` (positive terms, no cancellation), Hankel's asymptotic series above. Composed of
elementwise operations, so derivatives follow.

>>> lax.bessel_i0e(jnp.array([0.0, 1.0]))
Array([1.       , 0.4657596], dtype=float32)
"""
from __future__ import annotations

import math

from .. import numpy as jnp
from .special import _floating

_SWITCH = 30.0
_SERIES_TERMS = 80       # (15 ** 2k) / (k!)**2 is below 1e-22 of the sum from k = 80
_ASYMPTOTIC_TERMS = 20


def _series(x, order):
    """sum_k (x/2)**(2k + order) / (k! (k + order)!) times exp(-|x|), for |x| <= 30 (odd
    order in the signed x, so the derivative at 0 is right)."""
    quarter = x * x / 4
    term = (x / 2) ** order / math.factorial(order)
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * quarter / (k * (k + order))
        total = total + term
    # |x| as x * sign(x): its slope at 0 is 0, as JAX's derivative there (abs's is 1)
    return total * jnp.exp(-x * jnp.sign(x))


def _asymptotic(y, order):
    """exp(-y) I_order(y) for y >= 30: Hankel's series in 1 / (8 y)."""
    mu = 4.0 * order * order
    term, total = 1.0, 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * y)
        total = total + term
    return total / jnp.sqrt(2 * math.pi * y)


def _scaled(x, order):
    x = _floating(x)
    y = jnp.abs(x)
    far = y >= _SWITCH
    near_x, far_y = jnp.where(far, 0.0, x), jnp.where(far, y, _SWITCH)
    asymptotic = _asymptotic(far_y, order)
    if order == 1:
        asymptotic = jnp.where(x < 0, -asymptotic, asymptotic)
    return jnp.where(far, asymptotic, _series(near_x, order))


def bessel_i0e(x):
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0.

    >>> lax.bessel_i0e(jnp.array([-2.0, 50.0]))
    Array([0.3085083 , 0.05656163], dtype=float32)
    """
    return _scaled(x, 0)


def bessel_i1e(x):
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1.

    >>> lax.bessel_i1e(jnp.array([-2.0, 1.0]))
    Array([-0.21526928,  0.20791039], dtype=float32)
    """
    return _scaled(x, 1)

"""Hurwitz's zeta function and the polygamma functions, by Euler-Maclaurin summation: ten
terms summed directly, then twelve Bernoulli corrections, accurate to about 1e-15 for
``x > 1, q > 0``. Composed of elementwise operations, so derivatives in both arguments follow.
The one implementation behind ``fnx.lax`` and ``fnx.scipy.special``; edge values follow XLA's
(what JAX gives): see ``zeta``.

>>> lax.zeta(2.0, 1.0)     # pi**2 / 6
Array(1.644934, dtype=float32, weak_type=True)
"""
from __future__ import annotations

import math

from .. import numpy as jnp
from .special import _floating, digamma, lgamma

_TERMS = 10
# B_2j / (2j)! for j = 1..12
_BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730]
_COEFFS = [b / math.factorial(2 * j + 2) for j, b in enumerate(_BERNOULLI)]


def _euler_maclaurin(s, a):
    """sum_k (a + k) ** -s for s > 1 and a + _TERMS > 0 (a may be negative where s is whole)."""
    total = sum((a + k) ** -s for k in range(_TERMS))
    w = a + _TERMS
    total = total + w ** (1 - s) / (s - 1) + 0.5 * w ** -s
    rising, power = s, w ** (-s - 1)     # s (s+1) ... (s+2j-2) and w ** (-s-2j+1)
    for j, c in enumerate(_COEFFS):
        total = total + c * rising * power
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
        power = power / (w * w)
    return total


def zeta(x, q):
    """Hurwitz's zeta function ``sum_k (q + k) ** -x``, with JAX's (XLA's) edge values: NaN
    for ``x < 1``, inf at ``x == 1``; for ``q <= 0`` only whole ``x`` is defined (NaN
    otherwise), with poles at whole ``q <= 0`` (inf for even ``x``, NaN for odd). For
    ``q <= -10`` the sum is not accurate. Unlike ``jax.lax.zeta``, which has no derivative
    rule, this one differentiates in both arguments.

    >>> lax.zeta(jnp.array([2.0, 4.0]), jnp.array([2.0, 1.0]))   # pi**2/6 - 1, pi**4/90
    Array([0.64493406, 1.0823233 ], dtype=float32)
    """
    x, q = jnp.broadcast_arrays(_floating(x), _floating(q))
    whole_x = x == jnp.floor(x)
    non_positive_q = q <= 0
    pole = non_positive_q & (q == jnp.floor(q))
    ok = (x > 1) & (whole_x | ~non_positive_q) & ~pole
    s, a = jnp.where(ok, x, 2.0), jnp.where(ok, q, 1.0)     # finite branches for the gradient
    value = jnp.where(ok, _euler_maclaurin(s, a), jnp.nan)
    odd_x = jnp.remainder(x, 2.0) != 0
    value = jnp.where(pole, jnp.where(odd_x, jnp.nan, jnp.inf), value)
    return jnp.where(x == 1, jnp.inf, value)


def polygamma(m, x):
    """The ``m``-th derivative of ``digamma`` at ``x``: ``(-1)**(m+1) m! zeta(m+1, x)`` for
    whole ``m >= 1``, ``digamma(x)`` for ``m == 0`` and NaN for other ``m``, as in JAX.

    >>> lax.polygamma(jnp.array([0.0, 1.0]), jnp.array([1.0, 1.0]))   # -gamma, pi**2/6
    Array([-0.5772159,  1.644934 ], dtype=float32)
    """
    m, x = jnp.broadcast_arrays(_floating(m), _floating(x))
    valid = (m == jnp.floor(m)) & (m >= 0)
    higher_order = valid & (m >= 1)
    order = jnp.where(higher_order, m, 1.0)
    sign = jnp.where(jnp.remainder(order, 2.0) == 1, 1.0, -1.0)
    higher = sign * jnp.exp(lgamma(order + 1)) * zeta(order + 1, x)
    return jnp.where(valid, jnp.where(higher_order, higher, digamma(x)), jnp.nan)

"""Gauss's hypergeometric function 2F1, by its power series on ``0 <= z <= 0.9`` after
Pfaff's transformation of negative arguments, and by the ``1 - x`` connection formula above
0.9. Composed of elementwise operations and one loop, so every derivative follows."""
from __future__ import annotations

from .. import numpy as jnp
from ..core.control_flow import fori_loop
from ._common import floats, gamma

_TERMS = 400          # 0.9 ** 400 ~ 5e-19
_NEAR_ONE = 0.9


def _series(a, b, c, z):
    """sum_k (a)_k (b)_k / ((c)_k k!) z^k, the first _TERMS terms."""
    def step(k, carry):
        total, term = carry
        term = term * (a + k) * (b + k) / ((c + k) * (k + 1.0)) * z
        return total + term, term

    one = jnp.ones_like(z)
    return fori_loop(0, _TERMS, step, (one, one))[0]


def _unit_interval(a, b, c, x):
    """2F1(a, b; c; x) for 0 <= x < 1: the series up to 0.9; above, where c - a - b is not
    whole, ``Gamma(c) Gamma(d) / (Gamma(c-a) Gamma(c-b)) F(a, b; 1-d; 1-x) + (1-x)^d
    Gamma(c) Gamma(-d) / (Gamma(a) Gamma(b)) F(c-a, c-b; 1+d; 1-x)`` (Abramowitz & Stegun
    15.3.6), with d = c - a - b. Whole d keeps the series (less accurate close to 1)."""
    d = c - a - b
    whole_d = d == jnp.round(d)
    near_one = (x > _NEAR_ONE) & ~whole_d
    s = jnp.where(near_one, 1.0 - x, 0.5)
    d_safe = jnp.where(near_one, d, 0.5)
    # the three series at once, stacked on a leading axis
    sums = _series(jnp.stack([a, a, c - a]), jnp.stack([b, b, c - b]),
                   jnp.stack([c, 1.0 - d_safe, 1.0 + d_safe]),
                   jnp.stack([jnp.where(near_one, 0.0, x), s, s]))
    connected = (gamma(c) * gamma(d_safe) / (gamma(c - a) * gamma(c - b)) * sums[1]
                 + s ** d_safe * gamma(c) * gamma(-d_safe) / (gamma(a) * gamma(b))
                 * sums[2])
    return jnp.where(near_one, connected, sums[0])


def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1 for real arguments and ``x <= 1``:
    ``sum_k (a)_k (b)_k / (c)_k x^k / k!``. As in JAX: 1 at ``x == 0`` or ``a == 0`` or
    ``b == 0``; inf where ``c`` is 0 or a negative integer, for ``x > 1``, and at ``x == 1``
    unless ``c - a - b > 0`` (then Gauss's formula). Close to ``x == 1`` with whole
    ``c - a - b`` the series is less accurate, as JAX's.

    >>> from fnx.scipy.special import hyp2f1
    >>> hyp2f1(1.0, 1.0, 2.0, 0.5)      # -log(1 - x) / x
    Array(1.38629..., dtype=float32)
    """
    a, b, c, x = jnp.broadcast_arrays(*floats(a, b, c, x))
    negative = x < 0
    inside = x < 1
    # Pfaff: F(a, b; c; x) = (1 - x)^-a F(a, c - b; c; x / (x - 1)) takes x < 0 into (0, 1)
    x_safe = jnp.where(inside, x, 0.0)
    z = jnp.where(negative, x_safe / (x_safe - 1.0), x_safe)
    b_used = jnp.where(negative, c - b, b)
    value = _unit_interval(a, b_used, c, z) * jnp.where(negative, (1.0 - x_safe) ** -a, 1.0)
    value = jnp.where((b == c) & inside, (1.0 - x_safe) ** -a, value)
    value = jnp.where((a == c) & inside, (1.0 - x_safe) ** -b, value)
    d = c - a - b
    d_safe = jnp.where(d > 0, d, 1.0)
    gauss = gamma(c) * gamma(d_safe) / (gamma(c - a) * gamma(c - b))
    value = jnp.where(x == 1, jnp.where(d > 0, gauss, jnp.inf), value)
    value = jnp.where(x > 1, jnp.inf, value)
    value = jnp.where((c <= 0) & (c == jnp.floor(c)), jnp.inf, value)
    return jnp.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 1.0, value)


__all__ = ["hyp2f1"]

"""Special functions of fnx.lax: ``lgamma``, ``digamma`` and ``erfc``, composed of elementwise
operations (so grad, vmap, jit and both backends follow).

Positive arguments below 7 are shifted up by six with the recurrence, then the asymptotic
(Stirling) series is summed; arguments below 1/2 go through the reflection formula. Both
branches are computed on arguments where they are finite, so a ``where`` never passes a NaN
derivative from the branch it discards.

>>> import fnx.lax as lax
>>> lax.lgamma(4.0)     # log(3!)
"""
from __future__ import annotations

import math

from .. import numpy as jnp
from ..core import dtypes
from ..core.lax import erf

_SHIFT = 6      # arguments below 7 are raised by six: the series is then accurate to ~1e-13


def _floating(x):
    x = jnp.asarray(x)
    # an integer becomes the float JAX's scipy.special promotes it to (float64 for int64)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(dtypes.to_inexact(x.dtype))


def _shifted(x):
    """``x`` raised above 6 where it is smaller, and how far: (y, small)."""
    small = x < _SHIFT + 1
    return jnp.where(small, x + _SHIFT, x), small


def _positive_lgamma(x):
    """log Gamma(x) for x >= 1/2."""
    y, small = _shifted(x)
    shift = sum(jnp.log(x + i) for i in range(_SHIFT))
    r = 1.0 / y
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 * (
        1 / 1188 - r2 * (691 / 360360))))))
    return ((y - 0.5) * jnp.log(y) - y + 0.5 * math.log(2 * math.pi) + series
            - jnp.where(small, shift, 0.0))


def _positive_digamma(x):
    """psi(x) for x >= 1/2."""
    y, small = _shifted(x)
    shift = sum(1.0 / (x + i) for i in range(_SHIFT))
    r = 1.0 / y
    r2 = r * r
    series = r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 * (
        1 / 132 - r2 * (691 / 32760))))))
    return jnp.log(y) - 0.5 * r - series - jnp.where(small, shift, 0.0)


def _reflected(x, positive, reflection, at_poles):
    """``positive(x)`` for x >= 1/2, else ``reflection(x, positive(1 - x))``, each branch fed
    arguments where it is finite; ``at_poles`` at zero and the negative integers (where the
    reflection's sine is only nearly zero)."""
    x = _floating(x)
    low = x < 0.5
    direct = positive(jnp.where(low, 1.0 - x, x))
    # |sin(pi x)| and tan(pi x) have period 1: x minus its nearest integer is exact, while
    # pi * x would lose the distance to the pole that the result depends on
    near = jnp.where(low, x, 0.25)
    value = jnp.where(low, reflection(near - jnp.round(near), direct), direct)
    return jnp.where((x <= 0) & (x == jnp.floor(x)), at_poles, value)


def lgamma(x):
    """``log |Gamma(x)|`` elementwise (inf at zero and the negative integers, as in JAX).

    >>> lgamma(jnp.array([0.5, 1.0, 10.0]))   # log(sqrt(pi)), 0, log(9!)
    Array([5.7236433e-01, 4.7683716e-07, 1.2801828e+01], dtype=float32)
    """
    # Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    out = _reflected(x, _positive_lgamma, lambda x, other: (
        math.log(math.pi) - jnp.log(jnp.abs(jnp.sin(math.pi * x))) - other), jnp.inf)
    return jnp.where(jnp.isinf(x), jnp.inf, out)     # at +-inf, as JAX


def digamma(x):
    """The logarithmic derivative of Gamma, psi(x) = d/dx log Gamma(x), elementwise (NaN at
    zero and the negative integers, as in JAX).

    >>> digamma(1.0)     # minus the Euler-Mascheroni constant
    Array(-0.5772159, dtype=float32, weak_type=True)
    """
    # psi(1 - x) - psi(x) = pi / tan(pi x)
    return _reflected(x, _positive_digamma, lambda x, other: (
        other - math.pi / jnp.tan(math.pi * x)), jnp.nan)


# erfc from here up by its continued fraction, where 1 - erf would cancel: 60 terms of it are
# exact in float64 from 2 up, and within float32's precision from 1 up
_TAIL_TERMS = 60
_TAIL = {"float64": 2.0}
_TAIL_NARROW = 1.0


def erfc_tail(x):
    """``t`` with ``erfc(x) = exp(-x**2) / (sqrt(pi) t)`` for large ``x``: Laplace's continued
    fraction ``t = x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))``, summed from the bottom."""
    t = x
    for n in range(_TAIL_TERMS, 0, -1):
        t = x + (n / 2) / t
    return t


def erfc(x):
    """``1 - erf(x)``, accurate in the upper tail (where ``1 - erf`` would be 0).

    >>> erfc(10.0)   # 2.088e-45, to float32's nearest subnormal
    Array(3.e-45, dtype=float32, weak_type=True)
    """
    x = _floating(x)
    start = _TAIL.get(x.dtype.name, _TAIL_NARROW)
    tail = x >= start
    y = jnp.where(tail, x, start)
    return jnp.where(tail, jnp.exp(-y * y) / (math.sqrt(math.pi) * erfc_tail(y)), 1.0 - erf(x))


__all__ = ["lgamma", "digamma", "erfc", "erfc_tail"]

"""Regularized incomplete gamma and beta functions: the power series where it converges fast
(``x < a + 1``; for beta below the mean), the continued fraction (modified Lentz) elsewhere,
each run for a fixed number of steps in a ``fori_loop`` so grad, vmap and jit follow. Each
branch is fed arguments where it is finite, so ``where`` passes no NaN derivative.

>>> lax.igamma(1.0, jnp.array([1.0, 2.0]))     # 1 - exp(-x)
Array([0.63212043, 0.8646647 ], dtype=float32)
"""
from __future__ import annotations

from .. import numpy as jnp
from ..core.api import jvp
from ..core.control_flow import fori_loop
from .special import _floating, lgamma

_STEPS = 400         # series and fraction both converge for a, b, x up to a few hundred
_TINY = 1e-30


def _lower_series(a, x):
    """P(a, x) by its series, for x < a + 1."""
    def step(n, carry):
        term, total = carry
        term = term * x / (a + n)
        return term, total + term
    _, total = fori_loop(1, _STEPS, step, (jnp.ones_like(x), jnp.ones_like(x)))
    return total * jnp.exp(a * jnp.log(x) - x - lgamma(a + 1))


def _lentz(first, coefficients, dtype_like):
    """The continued fraction ``1 / (b1 + a2 / (b2 + ...))`` by modified Lentz steps:
    ``first`` is b1 and ``coefficients(i)`` gives (a_{i+1}, b_{i+1}) for i >= 1."""
    tiny = jnp.full_like(dtype_like, _TINY)

    def guard(v):
        return jnp.where(jnp.abs(v) < _TINY, tiny, v)

    def step(i, carry):
        c, d, h = carry
        an, bn = coefficients(i)
        d = 1.0 / guard(bn + an * d)
        c = guard(bn + an / c)
        return c, d, h * c * d
    d = 1.0 / guard(first)
    _, _, h = fori_loop(1, _STEPS, step, (jnp.full_like(dtype_like, 1 / _TINY), d, d))
    return h


def _upper_fraction(a, x):
    """Q(a, x) by Legendre's continued fraction, for x >= a + 1."""
    h = _lentz(x + 1.0 - a, lambda i: (-i * (i - a), x + 1.0 - a + 2.0 * i), x)
    return h * jnp.exp(a * jnp.log(x) - x - lgamma(a))


def _gamma_parts(a, x):
    a, x = jnp.broadcast_arrays(_floating(a), _floating(x))
    series = x < a + 1
    ok = (a > 0) & (x > 0)
    lower = _lower_series(jnp.where(ok & series, a, 1.0), jnp.where(ok & series, x, 0.5))
    upper = _upper_fraction(jnp.where(ok & ~series, a, 1.0), jnp.where(ok & ~series, x, 3.0))
    return a, x, series, ok, lower, upper


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x), for ``a > 0``, ``x >= 0``
    (NaN elsewhere, 0 at ``x == 0``).

    >>> lax.igamma(jnp.array([0.5, 3.0]), jnp.array([2.0, 3.0]))
    Array([0.9544995 , 0.57680935], dtype=float32)
    """
    a, x, series, ok, lower, upper = _gamma_parts(a, x)
    value = jnp.where(series, lower, 1.0 - upper)
    return jnp.where(ok & (x < jnp.inf), value, _edges(a, x, 0.0, 1.0))


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), accurate where it
    is small.

    >>> lax.igammac(jnp.array([0.5, 3.0]), jnp.array([2.0, 3.0]))
    Array([0.04550049, 0.42319065], dtype=float32)
    """
    a, x, series, ok, lower, upper = _gamma_parts(a, x)
    value = jnp.where(series, 1.0 - lower, upper)
    return jnp.where(ok & (x < jnp.inf), value, _edges(a, x, 1.0, 0.0))


def _edges(a, x, at_zero, at_end):
    """P (or Q) where the series do not reach, as JAX gives it: ``at_zero`` at x == 0 < a,
    ``at_end`` at x == inf > a and at a == 0 < x, NaN elsewhere."""
    end = ((x == jnp.inf) & (a > 0)) | ((a == 0) & (x > 0))
    return jnp.where((x == 0) & (a > 0), at_zero, jnp.where(end, at_end, jnp.nan))


def igamma_grad_a(a, x):
    """The derivative of ``igamma(a, x)`` in ``a``.

    >>> lax.igamma_grad_a(jnp.array([2.0]), jnp.array([1.0]))
    Array([-0.27619588], dtype=float32)
    """
    a, x = jnp.broadcast_arrays(_floating(a), _floating(x))
    return jvp(lambda a: igamma(a, x), (a,), (jnp.ones_like(a),))[1]


def random_gamma_grad(a, x):
    """The derivative in ``a`` of a Gamma(a, 1) sample ``x`` drawn by inverting its CDF:
    ``-(dP/da) / (dP/dx)`` at ``(a, x)``.

    >>> lax.random_gamma_grad(jnp.array([2.0]), jnp.array([1.0]))
    Array([0.7507783], dtype=float32)
    """
    a, x = jnp.broadcast_arrays(_floating(a), _floating(x))
    density = jnp.exp((a - 1) * jnp.log(x) - x - lgamma(a))
    return -igamma_grad_a(a, x) / density


def _beta_fraction(a, b, x):
    """I_x(a, b) by its continued fraction 1 / (1 + d1 / (1 + d2 / ...)), for x below
    (a + 1) / (a + b + 2)."""
    def coefficients(j):
        m = jnp.floor(j / 2.0)                  # d_2m and d_2m+1
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        return jnp.where(j % 2 == 0, even, odd), jnp.ones_like(x)
    h = _lentz(jnp.ones_like(x), coefficients, x)
    front = jnp.exp(a * jnp.log(x) + b * jnp.log1p(-x) - lgamma(a) - lgamma(b)
                    + lgamma(a + b)) / a
    return front * h


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), for ``a, b > 0`` and
    ``0 <= x <= 1``.

    >>> lax.betainc(jnp.array([2.0]), jnp.array([3.0]), jnp.array([0.4]))
    Array([0.52480024], dtype=float32)
    """
    a, b, x = jnp.broadcast_arrays(_floating(a), _floating(b), _floating(x))
    ok = (a > 0) & (b > 0) & (x > 0) & (x < 1)
    direct = x < (a + 1) / (a + b + 2)
    # the fraction converges below the mean; above it, I_x(a, b) = 1 - I_{1-x}(b, a)
    low = _beta_fraction(jnp.where(ok & direct, a, 1.0), jnp.where(ok & direct, b, 1.0),
                         jnp.where(ok & direct, x, 0.25))
    high = _beta_fraction(jnp.where(ok & ~direct, b, 1.0), jnp.where(ok & ~direct, a, 1.0),
                          jnp.where(ok & ~direct, 1.0 - x, 0.25))
    value = jnp.where(direct, low, 1.0 - high)
    edge = jnp.where(x == 0, 0.0, jnp.where(x == 1, 1.0, jnp.nan))
    return jnp.where(ok, value, jnp.where((a > 0) & (b > 0), edge, jnp.nan))

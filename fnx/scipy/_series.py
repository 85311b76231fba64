"""The special functions of fnx.scipy.special that are sums or continued fractions: incomplete
gamma and beta, exponential integrals, modified Bessel functions, Dawson's
integral, dilogarithm and Kummer's function. Each runs a fixed number of terms (a fori_loop),
so it traces, batches and differentiates like any other fnx program."""
from __future__ import annotations

import math

from .. import numpy as jnp
from ..core.control_flow import fori_loop
from ._common import floats
from ..lax.bessel import bessel_i0e, bessel_i1e
from ..lax.incomplete import betainc as _lax_betainc, igamma, igammac
from ..lax.special import lgamma, digamma

_EULER = 0.5772156649015329
_TINY = 1e-300


def _floats(*args):
    return jnp.broadcast_arrays(*floats(*args))


def _lentz(a_of, b_of, b0, terms):
    """``b0 + a1 / (b1 + a2 / (b2 + ...))`` by the modified Lentz method; ``a_of(n)`` and
    ``b_of(n)`` give the n-th partial numerator and denominator (n >= 1)."""
    tiny = jnp.asarray(_TINY if b0.dtype == jnp.float64 else 1e-30, b0.dtype)
    f = jnp.where(b0 == 0, tiny, b0)

    def step(n, carry):
        f, c, d = carry
        a, b = a_of(n), b_of(n)
        d = b + a * d
        d = jnp.where(d == 0, tiny, d)
        c = b + a / c
        c = jnp.where(c == 0, tiny, c)
        d = 1.0 / d
        return f * c * d, c, d

    return fori_loop(1, terms + 1, step, (f, f, jnp.zeros_like(f)))[0]


def _series(term_ratio, first, start, terms):
    """``sum_k t_k`` with ``t_0 = first`` and ``t_k = t_{k-1} * term_ratio(k)``, k from
    ``start``."""
    def step(k, carry):
        total, term = carry
        term = term * term_ratio(k)
        return total + term, term

    return fori_loop(start, start + terms, step, (first, first))[0]


# ---- incomplete gamma -----------------------------------------------------------------------

def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (``fnx.lax.igamma``).

    >>> gammainc(2.0, 1.0)
    Array(0.264241..., dtype=float32)
    """
    return igamma(*_floats(a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
    (``fnx.lax.igammac``).

    >>> gammaincc(2.0, 1.0)
    Array(0.73575..., dtype=float32)
    """
    return igammac(*_floats(a, x))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (``fnx.lax.betainc``).

    >>> betainc(2.0, 3.0, 0.5)
    Array(0.6875..., dtype=float32)
    """
    return _lax_betainc(*_floats(a, b, x))


# ---- exponential integrals ------------------------------------------------------------------

def _expn_positive(n, x):
    """E_n(x) for x > 0 and whole n >= 1: a power series below 1, a continued fraction above."""
    small = x <= 1.0
    xs = jnp.where(small, x, 0.5)
    xl = jnp.where(small, 2.0, x)
    fraction = _lentz(lambda k: -k * (n - 1.0 + k), lambda k: xl + n + 2.0 * k,
                      xl + n, 200)
    large = jnp.exp(-xl) / fraction

    # sum over k != n - 1 of -(-x)^k / ((k - n + 1) k!), plus the k = n - 1 log term
    def step(k, carry):
        total, power = carry           # power = (-x)^k / k!
        power = power * (-xs) / k
        skip = k == n - 1.0
        return total - jnp.where(skip, 0.0, power / jnp.where(skip, 1.0, k - n + 1.0)), power

    first = jnp.where(n == 1.0, 0.0, 1.0 / (n - 1.0 + jnp.where(n == 1.0, 1.0, 0.0)))
    total = fori_loop(1, 60, step, (first, jnp.ones_like(xs)))[0]
    log_term = (jnp.exp((n - 1.0) * jnp.log(xs) - lgamma(n)) * jnp.where(
        jnp.fmod(n - 1.0, 2.0) == 0, 1.0, -1.0) * (-jnp.log(xs) + digamma(n)))
    return jnp.where(small, total + log_term, large)


def expn(n, x):
    """The generalized exponential integral E_n(x) = int_1^inf exp(-x t) / t^n dt.

    >>> expn(2, 1.0)
    Array(0.148495..., dtype=float32)
    """
    n, x = _floats(n, x)
    whole = (n >= 0) & (n == jnp.floor(n)) & (x >= 0)
    safe_n = jnp.where(whole & (n >= 1), n, 1.0)
    safe_x = jnp.where(x > 0, x, 1.0)
    value = jnp.where(n == 0, jnp.exp(-safe_x) / safe_x, _expn_positive(safe_n, safe_x))
    at_zero = jnp.where(n > 1, 1.0 / jnp.where(n > 1, n - 1.0, 1.0), jnp.inf)
    return jnp.where(whole, jnp.where(x == 0, at_zero, value), jnp.nan)


def exp1(x):
    """The exponential integral E_1(x) = int_x^inf exp(-t) / t dt (x > 0).

    >>> exp1(1.0)
    Array(0.219384..., dtype=float32)
    """
    (x,) = _floats(x)
    return expn(jnp.ones_like(x), x)


def expi(x):
    """The exponential integral Ei(x); ``-exp1(-x)`` for negative x.

    >>> expi(1.0)
    Array(1.895117..., dtype=float32)
    """
    (x,) = _floats(x)
    positive = x > 0
    xp = jnp.where(positive, x, 1.0)
    near = xp <= 50.0
    xs = jnp.where(near, xp, 1.0)
    series = _EULER + jnp.log(xs) + _series_ei(xs)
    xl = jnp.where(near, 60.0, xp)
    asymptotic = jnp.exp(xl) / xl * _series(lambda k: k / xl, jnp.ones_like(xl), 1, 40)
    negative = -exp1(jnp.where(positive, 1.0, -x))
    value = jnp.where(positive, jnp.where(near, series, asymptotic), negative)
    return jnp.where(x == 0, -jnp.inf, value)


def _series_ei(x):
    """sum_{k>=1} x^k / (k k!)."""
    def step(k, carry):
        total, power = carry
        power = power * x / k
        return total + power / k, power

    return fori_loop(1, 250, step, (jnp.zeros_like(x), jnp.ones_like(x)))[0]


# ---- modified Bessel functions of orders 0 and 1 --------------------------------------------

def i0e(x):
    """The exponentially scaled modified Bessel function ``exp(-|x|) I0(x)``.

    >>> i0e(1.0)
    Array(0.4657596, dtype=float32)
    """
    (x,) = _floats(x)
    return bessel_i0e(x)


def i0(x):
    """The modified Bessel function of the first kind of order 0.

    >>> i0(1.0)
    Array(1.266066, dtype=float32)
    """
    (x,) = _floats(x)
    return jnp.exp(jnp.abs(x)) * bessel_i0e(x)


def i1e(x):
    """The exponentially scaled modified Bessel function ``exp(-|x|) I1(x)``.

    >>> i1e(1.0)
    Array(0.207910..., dtype=float32)
    """
    (x,) = _floats(x)
    return bessel_i1e(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1.

    >>> i1(1.0)
    Array(0.5651591, dtype=float32)
    """
    (x,) = _floats(x)
    return jnp.exp(jnp.abs(x)) * bessel_i1e(x)


# ---- Dawson's integral, the dilogarithm, Kummer's function ----------------------------------

def dawsn(x):
    """Dawson's integral ``exp(-x**2) int_0^x exp(t**2) dt``.

    >>> dawsn(1.0)
    Array(0.5380795, dtype=float32)
    """
    (x,) = _floats(x)
    ax = jnp.abs(x)
    near = ax <= 6.0
    xs = jnp.where(near, ax, 1.0)
    sq = xs * xs

    def step(k, carry):              # sum of x^(2k+1) / (k! (2k+1)), all terms positive
        total, power = carry
        power = power * sq / k
        return total + power / (2.0 * k + 1.0), power

    series = jnp.exp(-sq) * xs * fori_loop(1, 160, step, (jnp.ones_like(xs), jnp.ones_like(xs)))[0]
    xl = jnp.where(near, 7.0, ax)
    asymptotic = _series(lambda k: (2.0 * k - 1.0) / (2.0 * xl * xl), jnp.ones_like(xl),
                         1, 30) / (2.0 * xl)
    return jnp.sign(x) * jnp.where(near, series, asymptotic)


def _li2_small(y):
    """sum y^k / k^2 for |y| <= 1/2."""
    def step(k, carry):
        total, power = carry
        power = power * y
        return total + power / (k * k), power

    return fori_loop(1, 60, step, (jnp.zeros_like(y), jnp.ones_like(y)))[0]


def _li2_unit(y):
    """Li2(y) for -1 <= y <= 1, moving y into |y| <= 1/2 by Euler's and Landen's identities."""
    high = y > 0.5
    low = y < -0.5
    yh = jnp.where(high, y, 0.75)
    yl = jnp.where(low, y, -0.75)
    ym = jnp.where(high | low, 0.25, y)
    from_high = (math.pi ** 2 / 6 - jnp.log(yh) * jnp.log1p(-yh)
                 - _li2_small(1.0 - yh))
    from_high = jnp.where(yh == 1.0, math.pi ** 2 / 6, from_high)
    from_low = -_li2_small(yl / (yl - 1.0)) - 0.5 * jnp.log1p(-yl) ** 2
    return jnp.where(high, from_high, jnp.where(low, from_low, _li2_small(ym)))


def spence(x):
    """Spence's function ``int_1^x log(t) / (1 - t) dt`` = Li2(1 - x), for x >= 0.

    >>> spence(0.0)        # pi**2 / 6
    Array(1.644934, dtype=float32)
    """
    (x,) = _floats(x)
    y = 1.0 - x
    beyond = y < -1.0
    yb = jnp.where(beyond, y, -2.0)
    inverted = -math.pi ** 2 / 6 - 0.5 * jnp.log(-yb) ** 2 - _li2_unit(1.0 / yb)
    value = jnp.where(beyond, inverted, _li2_unit(jnp.where(beyond, 0.0, y)))
    return jnp.where(x < 0, jnp.nan, value)


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function 1F1(a; b; x), as its power series (by
    Kummer's transformation for negative x).

    >>> hyp1f1(1.0, 2.0, 1.0)    # (e - 1)
    Array(1.71828..., dtype=float32)
    """
    a, b, x = _floats(a, b, x)
    negative = x < 0
    a2 = jnp.where(negative, b - a, a)
    x2 = jnp.abs(x)
    total = _series(lambda k: (a2 + k - 1.0) / (b + k - 1.0) * x2 / k, jnp.ones_like(x2),
                    1, 500)
    return jnp.where(negative, jnp.exp(x) * total, total)


__all__ = ["gammainc", "gammaincc", "betainc", "expn", "exp1", "expi", "i0e", "i0", "i1e",
           "i1", "dawsn", "spence", "hyp1f1"]

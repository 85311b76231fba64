"""The counting distributions of fnx.scipy.stats beyond poisson and bernoulli: binom, nbinom,
geom, betabinom and multinomial, as in jax.scipy.stats (``k`` shifted by ``loc``; off their
support the log-probability is -inf)."""
from __future__ import annotations

from types import SimpleNamespace

from .. import numpy as jnp
from . import special


def _with_pmf(logpmf):
    return SimpleNamespace(logpmf=logpmf,
                           pmf=lambda *args, **kwargs: jnp.exp(logpmf(*args, **kwargs)))


def _binom_logpmf(k, n, p, loc=0):
    """``log C(n, k) + k log p + (n - k) log(1 - p)`` for 0 <= k - loc <= n.

    >>> binom.logpmf(2, 5, 0.5)      # log(10 / 32)
    Array(-1.16315..., dtype=float32)
    """
    k, n, p, loc = jnp.broadcast_arrays(*special._floats(k, n, p, loc))
    y = k - loc
    log_comb = special.gammaln(n + 1.0) - special.gammaln(y + 1.0) - special.gammaln(n - y + 1.0)
    value = log_comb + special.xlogy(y, p) + special.xlog1py(n - y, -p)
    return jnp.where((y < 0) | (y > n), -jnp.inf, value)


def _nbinom_logpmf(k, n, p, loc=0):
    """The number of failures ``k`` before the ``n``-th success of trials of probability ``p``.

    >>> nbinom.logpmf(0, 1, 0.5)
    Array(-0.69314..., dtype=float32)
    """
    k, n, p, loc = jnp.broadcast_arrays(*special._floats(k, n, p, loc))
    y = k - loc
    log_comb = special.gammaln(y + n) - special.gammaln(n) - special.gammaln(y + 1.0)
    value = log_comb + special.xlogy(n, p) + special.xlog1py(y, -p)
    return jnp.where(y < 0, -jnp.inf, value)


def _geom_logpmf(k, p, loc=0):
    """The number of trials up to and including the first success.

    >>> geom.logpmf(2, 0.5)          # log(1 / 4)
    Array(-1.3862944, dtype=float32)
    """
    k, p, loc = jnp.broadcast_arrays(*special._floats(k, p, loc))
    y = k - loc
    value = special.xlog1py(y - 1.0, -p) + jnp.log(p)
    return jnp.where(y < 1, -jnp.inf, value)


def _betabinom_logpmf(k, n, a, b, loc=0):
    """The binomial distribution with a Beta(a, b) probability of success.

    >>> betabinom.logpmf(1, 2, 1.0, 1.0)     # uniform on 0, 1, 2
    Array(-1.09861..., dtype=float32)
    """
    k, n, a, b, loc = jnp.broadcast_arrays(*special._floats(k, n, a, b, loc))
    # as JAX has it: k rounds down, and the support's lower end is k >= 0 whatever loc is
    y = jnp.floor(k) - loc
    log_comb = special.gammaln(n + 1.0) - special.gammaln(y + 1.0) - special.gammaln(n - y + 1.0)
    value = log_comb + special.betaln(y + a, n - y + b) - special.betaln(a, b)
    value = jnp.where((y == 0) & (n == 0), 0.0, value)
    value = jnp.where((y < -loc) | (y > n) | (y + a <= 0), -jnp.inf, value)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), jnp.nan, value)


def _multinomial_logpmf(x, n, p):
    """The counts ``x`` (last axis) of ``n`` draws with probabilities ``p``; -inf where the
    counts do not add up to ``n``.

    >>> multinomial.logpmf(jnp.array([1, 1]), 2, jnp.array([0.5, 0.5]))   # log(1 / 2)
    Array(-0.69314..., dtype=float32)
    """
    x, n, p = special._floats(x, n, p)
    value = (special.gammaln(n + 1.0)
             + jnp.sum(special.xlogy(x, p) - special.gammaln(x + 1.0), axis=-1))
    return jnp.where(jnp.sum(x, axis=-1) == n, value, -jnp.inf)


binom = _with_pmf(_binom_logpmf)
nbinom = _with_pmf(_nbinom_logpmf)
geom = _with_pmf(_geom_logpmf)
betabinom = _with_pmf(_betabinom_logpmf)
multinomial = _with_pmf(_multinomial_logpmf)

__all__ = ["binom", "nbinom", "geom", "betabinom", "multinomial"]

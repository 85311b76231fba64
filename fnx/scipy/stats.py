"""fnx.scipy.stats: jax.scipy.stats's densities and distribution functions, one namespace per
distribution, with scipy's ``loc`` and ``scale`` (and shape) arguments.

>>> from fnx.scipy import stats
>>> stats.norm.logpdf(0.3, loc=0.0, scale=2.0)
Array(-1.6233357, dtype=float32)
"""
from __future__ import annotations

import math
from types import SimpleNamespace

from .. import numpy as jnp
from ..core.linalg_prims import cholesky, triangular_solve
from . import special

_LOG_2PI = math.log(2 * math.pi)


def _standardized(x, loc, scale):
    x, loc, scale = jnp.broadcast_arrays(*special._floats(x, loc, scale))
    return (x - loc) / scale, scale


def _location_scale(logpdf, cdf, logcdf, sf, logsf, ppf=None):
    """A namespace of functions of ``x`` for the distribution of ``loc + scale * z``, given
    those of the standard one of ``z``."""
    def logpdf_(x, loc=0.0, scale=1.0):
        z, scale = _standardized(x, loc, scale)
        return logpdf(z) - jnp.log(scale)

    def of_z(f):
        return lambda x, loc=0.0, scale=1.0: f(_standardized(x, loc, scale)[0])

    space = SimpleNamespace(
        logpdf=logpdf_, pdf=lambda x, loc=0.0, scale=1.0: jnp.exp(logpdf_(x, loc, scale)),
        cdf=of_z(cdf), logcdf=of_z(logcdf), sf=of_z(sf), logsf=of_z(logsf))
    if ppf is not None:
        space.ppf = lambda q, loc=0.0, scale=1.0: (lambda q, loc, scale: loc + scale * ppf(q))(
            *special._floats(q, loc, scale))
        space.isf = lambda q, loc=0.0, scale=1.0: space.ppf(1.0 - special._float(q), loc, scale)
    return space


def _symmetric(logpdf, cdf, logcdf, ppf=None):
    """A location-scale family whose standard density is even: sf(z) = cdf(-z)."""
    return _location_scale(logpdf, cdf, logcdf, lambda z: cdf(-z), lambda z: logcdf(-z), ppf)


norm = _symmetric(lambda z: -0.5 * z * z - 0.5 * _LOG_2PI, special.ndtr, special.log_ndtr,
                  special.ndtri)

logistic = _symmetric(lambda z: -z - 2.0 * jnp.logaddexp(0.0, -z), special.expit,
                      lambda z: -jnp.logaddexp(0.0, -z), special.logit)

laplace = _symmetric(
    lambda z: -jnp.abs(z) - math.log(2.0),
    lambda z: jnp.where(z < 0, 0.5 * jnp.exp(jnp.minimum(z, 0.0)),
                        1.0 - 0.5 * jnp.exp(-jnp.maximum(z, 0.0))),
    lambda z: jnp.where(z < 0, jnp.minimum(z, 0.0) - math.log(2.0),
                        jnp.log1p(-0.5 * jnp.exp(-jnp.maximum(z, 0.0)))),
    lambda q: jnp.where(q < 0.5, jnp.log(2.0 * q), -jnp.log(2.0 - 2.0 * q)))

cauchy = _symmetric(lambda z: -math.log(math.pi) - jnp.log1p(z * z),
                    lambda z: 0.5 + jnp.arctan(z) / math.pi,
                    lambda z: jnp.log(0.5 + jnp.arctan(z) / math.pi),
                    lambda q: jnp.tan(math.pi * (q - 0.5)))

# supported on [0, inf) (expon) and [0, 1] (uniform) of the standardized variable
expon = _location_scale(
    lambda z: jnp.where(z < 0, -jnp.inf, -z),
    lambda z: -jnp.expm1(-jnp.maximum(z, 0.0)),
    lambda z: jnp.log(-jnp.expm1(-jnp.maximum(z, 0.0))),
    lambda z: jnp.exp(-jnp.maximum(z, 0.0)),
    lambda z: -jnp.maximum(z, 0.0),
    lambda q: -jnp.log1p(-q))

uniform = _location_scale(
    lambda z: jnp.where((z < 0) | (z > 1), -jnp.inf, 0.0),
    lambda z: jnp.clip(z, 0.0, 1.0), lambda z: jnp.log(jnp.clip(z, 0.0, 1.0)),
    lambda z: 1.0 - jnp.clip(z, 0.0, 1.0), lambda z: jnp.log1p(-jnp.clip(z, 0.0, 1.0)),
    lambda q: q)


def _shaped(logpdf_z):
    """A namespace with ``logpdf(x, *shape_args, loc=0, scale=1)`` and ``pdf`` for a
    distribution with shape parameters, given the standard density's log."""
    def logpdf(x, *args, loc=0.0, scale=1.0):
        z, scale = _standardized(x, loc, scale)
        return logpdf_z(z, *special._floats(*args, z)[:-1]) - jnp.log(scale)

    return SimpleNamespace(logpdf=logpdf, pdf=lambda x, *args, loc=0.0, scale=1.0: jnp.exp(
        logpdf(x, *args, loc=loc, scale=scale)))


def _gamma_logpdf(z, a):
    return jnp.where(z < 0, -jnp.inf, special.xlogy(a - 1.0, jnp.maximum(z, 0.0)) - z
                     - special.gammaln(a))


def _beta_logpdf(z, a, b):
    inside = (z >= 0) & (z <= 1)
    zc = jnp.clip(z, 0.0, 1.0)
    return jnp.where(inside, special.xlogy(a - 1.0, zc) + special.xlog1py(b - 1.0, -zc)
                     - special.betaln(a, b), -jnp.inf)


def _t_logpdf(z, df):
    return (special.gammaln((df + 1.0) / 2) - special.gammaln(df / 2)
            - 0.5 * jnp.log(df * math.pi) - (df + 1.0) / 2 * jnp.log1p(z * z / df))


gamma = _shaped(_gamma_logpdf)
beta = _shaped(_beta_logpdf)
t = _shaped(_t_logpdf)
chi2 = _shaped(lambda z, df: _gamma_logpdf(z / 2.0, df / 2.0) - math.log(2.0))


def _poisson_logpmf(k, mu, loc=0.0):
    k, mu, loc = special._floats(k, mu, loc)
    k = k - loc
    whole = (k >= 0) & (k == jnp.floor(k))
    return jnp.where(whole, special.xlogy(k, mu) - mu - special.gammaln(k + 1.0), -jnp.inf)


def _bernoulli_logpmf(k, p, loc=0.0):
    k, p, loc = special._floats(k, p, loc)
    k = k - loc
    return jnp.where((k == 0) | (k == 1), special.xlogy(k, p) + special.xlog1py(1.0 - k, -p),
                     -jnp.inf)


poisson = SimpleNamespace(logpmf=_poisson_logpmf,
                          pmf=lambda k, mu, loc=0.0: jnp.exp(_poisson_logpmf(k, mu, loc)))
bernoulli = SimpleNamespace(logpmf=_bernoulli_logpmf,
                            pmf=lambda k, p, loc=0.0: jnp.exp(_bernoulli_logpmf(k, p, loc)))


def _mvn_logpdf(x, mean, cov, allow_singular=None):
    """log N(x; mean, cov) over the last axis, by a Cholesky factor of ``cov``."""
    x, mean, cov = special._floats(x, mean, cov)
    if cov.ndim == 0:
        return norm.logpdf(x, mean, jnp.sqrt(cov))
    factor = cholesky(cov)
    diff = x - mean
    batch = jnp.broadcast_shapes(diff.shape[:-1], factor.shape[:-2])
    diff = jnp.broadcast_to(diff, batch + diff.shape[-1:])
    factor = jnp.broadcast_to(factor, batch + factor.shape[-2:])
    solved = triangular_solve(factor, diff[..., None], left_side=True, lower=True)[..., 0]
    log_det = jnp.sum(jnp.log(jnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
    n = diff.shape[-1]
    return -0.5 * jnp.sum(solved * solved, axis=-1) - log_det - 0.5 * n * _LOG_2PI


multivariate_normal = SimpleNamespace(
    logpdf=_mvn_logpdf,
    pdf=lambda x, mean, cov, allow_singular=None: jnp.exp(_mvn_logpdf(x, mean, cov)))


def _dirichlet_logpdf(x, alpha):
    x, alpha = special._floats(x, alpha)
    normalizer = jnp.sum(special.gammaln(alpha), axis=-1) - special.gammaln(
        jnp.sum(alpha, axis=-1))
    return jnp.sum(special.xlogy(alpha - 1.0, x), axis=-1) - normalizer


dirichlet = SimpleNamespace(logpdf=_dirichlet_logpdf,
                            pdf=lambda x, alpha: jnp.exp(_dirichlet_logpdf(x, alpha)))

__all__ = ["norm", "logistic", "laplace", "cauchy", "expon", "uniform", "gamma", "beta", "t",
           "chi2", "poisson", "bernoulli", "multivariate_normal", "dirichlet"]

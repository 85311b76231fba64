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


def _log1mexp(t):
    """``log(1 - exp(t))`` for t <= 0, accurate at both ends."""
    near_zero = t > -math.log(2.0)
    return jnp.where(near_zero, jnp.log(-jnp.expm1(jnp.where(near_zero, t, -1.0))),
                     jnp.log1p(-jnp.exp(jnp.where(near_zero, -1.0, t))))


def _gumbel(sign):
    """Gumbel's extreme-value family: sign = 1 for the maxima (gumbel_r), -1 for the minima
    (gumbel_l), as the standard variable's reflection."""
    def log_upper(z):          # log of the CDF of the right-skewed variable at z
        return -jnp.exp(-z)

    if sign > 0:
        space = _location_scale(lambda z: -z - jnp.exp(-z), lambda z: jnp.exp(log_upper(z)),
                                log_upper, lambda z: -jnp.expm1(log_upper(z)),
                                lambda z: _log1mexp(log_upper(z)),
                                lambda q: -jnp.log(-jnp.log(q)))
    else:
        space = _location_scale(lambda z: z - jnp.exp(z),
                                lambda z: -jnp.expm1(log_upper(-z)),
                                lambda z: _log1mexp(log_upper(-z)),
                                lambda z: jnp.exp(log_upper(-z)), lambda z: log_upper(-z),
                                lambda q: jnp.log(-jnp.log1p(-q)))
    del space.isf
    return space


gumbel_r = _gumbel(1)
gumbel_l = _gumbel(-1)


def _pareto_parts(x, b, loc, scale):
    x, b, loc, scale = jnp.broadcast_arrays(*special._floats(x, b, loc, scale))
    z = (x - loc) / scale
    inside = z >= 1
    # off the support, a stand-in z = 2 keeps the unused branches' gradients finite
    return jnp.log(jnp.where(inside, z, 2.0)), b, scale, inside


def _pareto_logpdf(x, b, loc=0.0, scale=1.0):
    """The Pareto density ``b / z**(b + 1)`` on z = (x - loc) / scale >= 1.

    >>> pareto.logpdf(2.0, 1.0)      # log(1 / 4)
    Array(-1.3862944, dtype=float32)
    """
    log_z, b, scale, inside = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, jnp.log(b) - (b + 1.0) * log_z - jnp.log(scale), -jnp.inf)


def _pareto_logsf(x, b, loc=0.0, scale=1.0):
    log_z, b, _, inside = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, -b * log_z, 0.0)


def _pareto_logcdf(x, b, loc=0.0, scale=1.0):
    log_z, b, _, inside = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, jnp.log(-jnp.expm1(-b * log_z)), -jnp.inf)


def _pareto_ppf(q, b, loc=0.0, scale=1.0):
    q, b, loc, scale = special._floats(q, b, loc, scale)
    return loc + scale * jnp.exp(-jnp.log1p(-q) / b)


pareto = SimpleNamespace(
    logpdf=_pareto_logpdf, pdf=lambda x, b, loc=0.0, scale=1.0: jnp.exp(
        _pareto_logpdf(x, b, loc, scale)),
    logcdf=_pareto_logcdf, cdf=lambda x, b, loc=0.0, scale=1.0: jnp.exp(
        _pareto_logcdf(x, b, loc, scale)),
    logsf=_pareto_logsf, sf=lambda x, b, loc=0.0, scale=1.0: jnp.exp(
        _pareto_logsf(x, b, loc, scale)),
    ppf=_pareto_ppf)


def _gennorm_logpdf(x, beta):
    """The generalized normal density ``beta / (2 Gamma(1 / beta)) exp(-|x|**beta)``.

    >>> gennorm.logpdf(0.0, 2.0)     # the normal of variance 1/2 at its mode
    Array(-0.57236..., dtype=float32)
    """
    x, beta = jnp.broadcast_arrays(*special._floats(x, beta))
    return (jnp.log(0.5 * beta) - special.gammaln(1.0 / beta)
            - jnp.power(jnp.abs(x), beta))


def _gennorm_cdf(x, beta):
    x, beta = jnp.broadcast_arrays(*special._floats(x, beta))
    return 0.5 * (1.0 + jnp.sign(x) * special.gammainc(1.0 / beta,
                                                      jnp.power(jnp.abs(x), beta)))


gennorm = SimpleNamespace(logpdf=_gennorm_logpdf, cdf=_gennorm_cdf,
                          pdf=lambda x, beta: jnp.exp(_gennorm_logpdf(x, beta)))


def _log_or_minus_inf(p):
    """``log(p)``, with a zero gradient (not NaN) where p is 0."""
    zero = p <= 0
    return jnp.where(zero, -jnp.inf, jnp.log(jnp.where(zero, 1.0, p)))


def _truncnorm_parts(x, a, b, loc, scale):
    """The standardized x, a, b, scale and ``log(ndtr(b) - ndtr(a))``; intervals in the upper
    tail are reflected into the lower one, where ndtr keeps its relative precision."""
    x, a, b, loc, scale = jnp.broadcast_arrays(*special._floats(x, a, b, loc, scale))
    z = (x - loc) / scale
    upper = a > 0
    lo, hi = jnp.where(upper, -b, a), jnp.where(upper, -a, b)
    log_mass = jnp.log(special.ndtr(hi) - special.ndtr(lo))
    return z, a, b, scale, upper, log_mass


def _truncnorm_logpdf(x, a, b, loc=0.0, scale=1.0):
    """The normal density restricted to standardized [a, b].

    >>> truncnorm.logpdf(0.0, -1.0, 1.0)
    Array(-0.5372233, dtype=float32)
    """
    z, a, b, scale, _, log_mass = _truncnorm_parts(x, a, b, loc, scale)
    value = -0.5 * z * z - 0.5 * _LOG_2PI - log_mass - jnp.log(scale)
    return jnp.where((z < a) | (z > b), -jnp.inf, value)


def _truncnorm_cdf(x, a, b, loc=0.0, scale=1.0):
    z, a, b, _, upper, log_mass = _truncnorm_parts(x, a, b, loc, scale)
    zc = jnp.clip(z, a, b)
    # P(a <= Z <= z), reflected for intervals in the upper tail
    below = jnp.where(upper, special.ndtr(-a) - special.ndtr(-zc),
                      special.ndtr(zc) - special.ndtr(a))
    return jnp.clip(below / jnp.exp(log_mass), 0.0, 1.0)


def _truncnorm_sf(x, a, b, loc=0.0, scale=1.0):
    z, a, b, _, upper, log_mass = _truncnorm_parts(x, a, b, loc, scale)
    zc = jnp.clip(z, a, b)
    above = jnp.where(upper, special.ndtr(-zc) - special.ndtr(-b),
                      special.ndtr(b) - special.ndtr(zc))
    return jnp.clip(above / jnp.exp(log_mass), 0.0, 1.0)


truncnorm = SimpleNamespace(
    logpdf=_truncnorm_logpdf,
    pdf=lambda x, a, b, loc=0.0, scale=1.0: jnp.exp(_truncnorm_logpdf(x, a, b, loc, scale)),
    cdf=_truncnorm_cdf, sf=_truncnorm_sf,
    logcdf=lambda x, a, b, loc=0.0, scale=1.0: _log_or_minus_inf(
        _truncnorm_cdf(x, a, b, loc, scale)),
    logsf=lambda x, a, b, loc=0.0, scale=1.0: _log_or_minus_inf(
        _truncnorm_sf(x, a, b, loc, scale)))


def _vonmises_logpdf(x, kappa):
    """The von Mises density ``exp(kappa cos x) / (2 pi I0(kappa))``, through ``i0e`` so large
    kappa does not overflow.

    >>> vonmises.logpdf(0.0, 1.0)
    Array(-1.0737914, dtype=float32)
    """
    x, kappa = jnp.broadcast_arrays(*special._floats(x, kappa))
    return kappa * (jnp.cos(x) - 1.0) - _LOG_2PI - jnp.log(special.i0e(kappa))


def _wrapcauchy_logpdf(x, c):
    """The wrapped Cauchy density on [0, 2 pi] with concentration 0 < c < 1.

    >>> wrapcauchy.logpdf(0.0, 0.5)
    Array(-0.7392647, dtype=float32)
    """
    x, c = jnp.broadcast_arrays(*special._floats(x, c))
    value = jnp.log1p(-c * c) - _LOG_2PI - jnp.log1p(c * c - 2.0 * c * jnp.cos(x))
    return jnp.where((x < 0) | (x > 2.0 * math.pi), -jnp.inf, value)


vonmises = SimpleNamespace(logpdf=_vonmises_logpdf,
                           pdf=lambda x, kappa: jnp.exp(_vonmises_logpdf(x, kappa)))
wrapcauchy = SimpleNamespace(logpdf=_wrapcauchy_logpdf,
                             pdf=lambda x, c: jnp.exp(_wrapcauchy_logpdf(x, c)))

from ._discrete import betabinom, binom, geom, multinomial, nbinom  # noqa: E402
from ._summaries import ModeResult, mode, rankdata, sem  # noqa: E402,F401
from ._kde import gaussian_kde  # noqa: E402,F401

__all__ = ["norm", "logistic", "laplace", "cauchy", "expon", "uniform", "gamma", "beta", "t",
           "chi2", "poisson", "bernoulli", "multivariate_normal", "dirichlet", "gumbel_r",
           "gumbel_l", "pareto", "gennorm", "truncnorm", "vonmises", "wrapcauchy", "binom",
           "nbinom", "geom", "betabinom", "multinomial", "mode", "rankdata", "sem", "gaussian_kde"]


def _register_distribution_modules():
    """Each distribution is also a module, as in JAX, so ``import fnx.scipy.stats.norm as norm``
    works: Python finds a submodule already in ``sys.modules`` without a package path."""
    import sys
    from types import ModuleType
    for name, space in list(globals().items()):
        if isinstance(space, SimpleNamespace):
            module = ModuleType(f"{__name__}.{name}", f"The {name} distribution's functions.")
            module.__dict__.update(vars(space))
            sys.modules[module.__name__] = module
            globals()[name] = module


_register_distribution_modules()

"""fnx.scipy: jax.scipy's special functions and distributions, composed of fnx operations.

>>> from fnx.scipy import special, stats
>>> special.gammaln(5.0), stats.norm.logpdf(0.3)
"""
from . import special, stats  # noqa: F401
from .. import linalg  # noqa: F401  (fnx.scipy.linalg, as jax.scipy.linalg)

__all__ = ["special", "stats", "linalg"]

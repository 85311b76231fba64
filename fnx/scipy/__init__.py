"""fnx.scipy: jax.scipy's special functions, distributions, linear algebra (SciPy's
conventions), optimizer and sparse iterative solvers, composed of fnx operations.

>>> from fnx.scipy import special, stats, linalg
>>> special.gammaln(5.0), stats.norm.logpdf(0.3)
>>> U = linalg.cholesky(a)   # upper, as scipy.linalg.cholesky
"""
from . import (cluster, fft, integrate, interpolate, linalg, ndimage, optimize,  # noqa: F401
               signal, sparse, spatial, special, stats)

__all__ = ["special", "stats", "linalg", "optimize", "signal", "sparse", "integrate", "ndimage",
           "fft", "interpolate", "spatial", "cluster"]

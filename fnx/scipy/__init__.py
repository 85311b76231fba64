"""fnx.scipy: jax.scipy's special functions, distributions, linear algebra (SciPy's
conventions), optimizer and sparse iterative solvers, composed of fnx operations.

>>> from fnx.scipy import special, stats, linalg
>>> special.gammaln(5.0), stats.norm.logpdf(0.3)
>>> U = linalg.cholesky(a)   # upper, as scipy.linalg.cholesky
"""
from . import fft, integrate, linalg, ndimage, optimize, signal, sparse, special, stats  # noqa: F401

__all__ = ["fft", "special", "stats", "linalg", "optimize", "signal", "sparse", "integrate", "ndimage"]

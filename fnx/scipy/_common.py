"""What fnx.scipy.special's modules share: argument promotion and the gamma function."""
from __future__ import annotations

from .. import numpy as jnp
from ..core import dtypes
from ..lax.special import lgamma


def floats(*args):
    """``args`` as arrays of their common floating dtype; Python numbers take the dtype of the
    arrays beside them (as in JAX), so 0.3 next to float64 data is not rounded to float32."""
    dtype = jnp.result_type(*args)
    if jnp.issubdtype(dtype, jnp.integer) or dtype == jnp.bool_:
        dtype = dtypes.to_inexact(dtype)    # int64 -> float64 with x64 on, as in JAX
    elif not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.float32
    return [jnp.asarray(a, dtype) for a in args]


def one_float(x):
    return floats(x)[0]


def gamma_sign(x):
    """The sign of Gamma(x) for a float ``x``, as JAX's ``gammasgn``: NaN at the poles
    (negative integers, -inf) and at NaN, -1 on (-1, 0), (-3, -2), ... and at -0.0, else 1."""
    floor_x = jnp.floor(x)
    negative = x < 0
    pole = (negative & (x == floor_x)) | jnp.isnan(x)
    minus = (negative & (jnp.fmod(floor_x, 2.0) != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.where(pole, jnp.nan, jnp.where(minus, -1.0, 1.0)).astype(x.dtype)


def gamma(x):
    """Gamma(x), with its sign for negative arguments: ``sign * exp(gammaln(x))``; NaN at
    the poles -1, -2, ..., as in JAX.

    >>> gamma(5.0)
    Array(24., dtype=float32)
    """
    x = one_float(x)
    return gamma_sign(x) * jnp.exp(lgamma(x))

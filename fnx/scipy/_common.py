"""What fnx.scipy.special's modules share: argument promotion and the gamma function."""
from __future__ import annotations

from .. import numpy as jnp
from ..lax.special import lgamma


def floats(*args):
    """``args`` as arrays of their common floating dtype; Python numbers take the dtype of the
    arrays beside them (as in JAX), so 0.3 next to float64 data is not rounded to float32."""
    dtype = jnp.result_type(*args)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.float32
    return [jnp.asarray(a, dtype) for a in args]


def one_float(x):
    return floats(x)[0]


def gamma(x):
    """Gamma(x), with its sign for negative arguments: ``sign * exp(gammaln(x))``.

    >>> gamma(5.0)
    Array(24., dtype=float32)
    """
    x = one_float(x)
    # Gamma is negative on (-1, 0), (-3, -2), ...: where ceil(-x) is odd
    negative = (x < 0) & (jnp.fmod(jnp.ceil(-x), 2.0) == 1.0)
    return jnp.where(negative, -1.0, 1.0) * jnp.exp(lgamma(x))

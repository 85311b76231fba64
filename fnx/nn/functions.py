"""Activations, softmax and friends, written with fnx.numpy so every transformation applies.

Numerically delicate functions (logsumexp, softplus, log_softmax) shift by a stop-gradient
maximum so they neither overflow nor produce NaN gradients."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as jnp
from ..core import lax
from ..core.api import stop_gradient
from ..numpy._core import promote_dtypes_inexact


def relu(x):
    """``max(x, 0)``; its derivative at 0 is 0, as in JAX."""
    (x,) = promote_dtypes_inexact(x) if not jnp.issubdtype(jnp.asarray(x).dtype, np.integer) \
        else (jnp.asarray(x),)
    return jnp.where(x > 0, x, 0)


def relu6(x):
    """``min(max(x, 0), 6)``; its derivative at 0 and at 6 is 0, as in JAX."""
    x = jnp.asarray(x)
    return jnp.where(x < 6, relu(x), 6.0)


def leaky_relu(x, negative_slope: float = 1e-2):
    (x,) = promote_dtypes_inexact(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def elu(x, alpha: float = 1.0):
    (x,) = promote_dtypes_inexact(x)
    safe = jnp.where(x > 0, jnp.zeros_like(x), x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe))


def celu(x, alpha: float = 1.0):
    (x,) = promote_dtypes_inexact(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(x, alpha)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    (x,) = promote_dtypes_inexact(x)
    return lax.logistic(x)


def log_sigmoid(x):
    return -softplus(-jnp.asarray(x))


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    (x,) = promote_dtypes_inexact(x)
    return x * sigmoid(x)


swish = silu


def softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    (x,) = promote_dtypes_inexact(x)
    return jnp.logaddexp(x, 0.0)


def soft_sign(x):
    (x,) = promote_dtypes_inexact(x)
    return x / (jnp.abs(x) + 1)


def hard_tanh(x):
    return jnp.clip(x, -1.0, 1.0)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit; ``approximate=True`` uses the tanh form (JAX's default)."""
    (x,) = promote_dtypes_inexact(x)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + jnp.tanh(c * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + lax.erf(x / jnp.asarray(math.sqrt(2), x.dtype)))


def glu(x, axis: int = -1):
    a, b = jnp.split(x, 2, axis)
    return a * sigmoid(b)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """``log(sum(b * exp(a)))`` over ``axis``, stable for large inputs and with stable
    gradients (a softmax)."""
    (a,) = promote_dtypes_inexact(a)
    axes = tuple(range(a.ndim)) if axis is None else \
        ((axis,) if isinstance(axis, int) else tuple(axis))
    amax = jnp.max(a, axis=axes, keepdims=True)
    amax = stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
    e = jnp.exp(a - amax)
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axes, keepdims=True)
    sign = jnp.sign(s)
    out = jnp.log(jnp.abs(s)) + amax
    if not keepdims:
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    return (out, sign) if return_sign else out


def log_softmax(x, axis=-1):
    """``x - logsumexp(x, axis)``, computed stably."""
    (x,) = promote_dtypes_inexact(x)
    shifted = x - stop_gradient(jnp.max(x, axis=axis, keepdims=True))
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, computed stably."""
    (x,) = promote_dtypes_inexact(x)
    unnormalized = jnp.exp(x - stop_gradient(jnp.max(x, axis=axis, keepdims=True)))
    return unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True)


def standardize(x, axis=-1, mean=None, variance=None, epsilon: float = 1e-5):
    (x,) = promote_dtypes_inexact(x)
    mean = jnp.mean(x, axis, keepdims=True) if mean is None else mean
    variance = jnp.var(x, axis, keepdims=True) if variance is None else variance
    return (x - mean) * lax.rsqrt(variance + epsilon)


normalize = standardize


def one_hot(x, num_classes: int, dtype=jnp.float32, axis=-1):
    """One-hot encoding of integer labels; out-of-range labels give all-zero rows.

    >>> one_hot(jnp.array([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    x = jnp.asarray(x)
    classes = lax.broadcasted_iota(x.dtype, x.shape + (num_classes,), x.ndim)
    hot = jnp.expand_dims(x, -1) == classes
    out = hot.astype(dtype)
    return jnp.moveaxis(out, -1, axis) if axis != -1 else out

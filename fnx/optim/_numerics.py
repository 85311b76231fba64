"""Numerically safe norms and counters (optax's ``numerics``)."""
from __future__ import annotations

from .. import numpy as jnp
from ..core.api import stop_gradient
from ..core.custom_derivatives import custom_vjp
from ..core.pytree import tree_map


def safe_norm(x, min_norm, ord=None, axis=None, keepdims=False):  # noqa: A002
    """``max(norm(x), min_norm)``, with a gradient that is finite (zero) where the norm is
    below ``min_norm``.

    >>> fnx.grad(lambda x: fnx.optim.safe_norm(x, 1e-6))(jnp.zeros(2))
    Array([0., 0.], dtype=float32)
    """
    norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    x = jnp.where(norm <= min_norm, jnp.ones_like(x), x)
    norm = jnp.squeeze(norm, axis=axis) if not keepdims else norm
    masked = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return jnp.where(norm <= min_norm, min_norm, masked)


def safe_root_mean_squares(x, min_rms):
    """``max(sqrt(mean(x ** 2)), min_rms)`` with a finite gradient.

    >>> fnx.optim.safe_root_mean_squares(jnp.array([3.0, 4.0]), 1e-6)
    Array(3.535534, dtype=float32)
    """
    rms = jnp.sqrt(jnp.mean(jnp.square(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(jnp.square(x))))


def safe_increment(count):
    """``count + 1``, saturating at the largest value of its dtype (no wrap-around).

    >>> fnx.optim.safe_increment(jnp.array(2147483647, jnp.int32))
    Array(2147483647, dtype=int32)
    """
    count = jnp.asarray(count)
    if jnp.issubdtype(count.dtype, jnp.integer):
        top = jnp.iinfo(count.dtype).max
    else:
        top = jnp.finfo(count.dtype).max
    one = jnp.array(1, count.dtype)
    return jnp.where(count < top, count + one, jnp.array(top, count.dtype))


safe_int32_increment = safe_increment


def _make_scale_gradient():
    @custom_vjp
    def scaled(inputs, scale):
        return inputs

    def fwd(inputs, scale):
        return inputs, scale

    def bwd(scale, g):
        return tree_map(lambda t: t * scale, g), None
    scaled.defvjp(fwd, bwd)
    return scaled


_scale_gradient = _make_scale_gradient()


def scale_gradient(inputs, scale):
    """``inputs`` unchanged, with their gradient multiplied by ``scale`` on the way back.

    >>> fnx.grad(lambda x: fnx.optim.scale_gradient(x, 0.5) ** 2)(3.0)
    Array(3., dtype=float32, weak_type=True)
    """
    if isinstance(scale, (int, float)) and scale == 1.0:
        return inputs
    if isinstance(scale, (int, float)) and scale == 0.0:
        return stop_gradient(inputs)
    return _scale_gradient(inputs, scale)

"""fnx.scipy.integrate: ``trapezoid``, as ``jax.scipy.integrate``.

>>> import fnx.numpy as jnp
>>> trapezoid(jnp.array([0.0, 1.0, 4.0]), dx=0.5)
Array(1.5, dtype=float32)
"""
from ..numpy import trapezoid

__all__ = ["trapezoid"]

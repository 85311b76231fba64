"""fnx.scipy.cluster: JAX's ``jax.scipy.cluster`` (the ``vq`` module).

>>> from fnx.scipy.cluster.vq import vq
>>> vq(jnp.array([0.1, 2.9]), jnp.array([0.0, 3.0]))[0]
Array([0, 1], dtype=int32)
"""
from . import vq  # noqa: F401

__all__ = ["vq"]

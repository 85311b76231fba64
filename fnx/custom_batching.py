"""fnx.custom_batching: functions with their own batching rule under ``vmap`` (JAX's
``jax.custom_batching``).

>>> from fnx.custom_batching import sequential_vmap
>>> fnx.vmap(sequential_vmap(jnp.sum))(jnp.ones((2, 3)))
Array([3., 3.], dtype=float32)
"""
from .core.custom_batching import custom_vmap, sequential_vmap

__all__ = ["custom_vmap", "sequential_vmap"]

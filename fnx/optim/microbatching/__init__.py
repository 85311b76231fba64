"""fnx.optim.microbatching: a batched computation run microbatch by microbatch in a
``fori_loop`` and its results accumulated (optax.microbatching), to bound the memory a large
batch needs.

>>> loss = lambda w, x: jnp.sum((x @ w) ** 2)
>>> grads = micro_grad(loss, microbatch_size=2)
>>> g, aux = grads(jnp.ones(3), jnp.ones((6, 3)))
>>> g
Array([36., 36., 36.], dtype=float32)
"""
from ._microbatching import (AccumulationType, Accumulator, micro_grad,  # noqa: F401
                             micro_vmap, microbatch, reshape_batch_axis)

__all__ = ["AccumulationType", "Accumulator", "micro_grad", "micro_vmap", "microbatch",
           "reshape_batch_axis"]

"""``jax.extend.random``: the Threefry-2x32 block cipher fnx's keys use.

>>> [int(w) for w in threefry_2x32(jnp.uint32(0), jnp.uint32(0), jnp.zeros(1, jnp.uint32),
...                                jnp.zeros(1, jnp.uint32))[0]]
[1797259609]
"""
from __future__ import annotations

from ..prng_impls import threefry_2x32 as _threefry_2x32
from ..prng_impls import threefry_flat as _threefry_flat


def threefry_2x32(keypair, count=None, *rest):
    """Threefry-2x32 of the counters under the key: ``threefry_2x32((k1, k2), count)`` as
    JAX's (a uint32 array, hashed in two halves), or ``threefry_2x32(k1, k2, x1, x2)``.

    >>> threefry_2x32(jnp.zeros(2, jnp.uint32), jnp.arange(3, dtype=jnp.uint32)).shape
    (3,)
    """
    if rest:
        return _threefry_2x32(keypair, count, *rest)
    from .. import numpy as jnp
    k1, k2 = keypair
    key = jnp.stack([jnp.asarray(k1, jnp.uint32), jnp.asarray(k2, jnp.uint32)])
    return jnp.reshape(_threefry_flat(key, jnp.ravel(count)), jnp.shape(count))

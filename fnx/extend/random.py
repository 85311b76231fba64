"""``jax.extend.random``: the Threefry-2x32 block cipher fnx's keys use.

>>> [int(w) for w in threefry_2x32(jnp.uint32(0), jnp.uint32(0), jnp.zeros(1, jnp.uint32),
...                                jnp.zeros(1, jnp.uint32))[0]]
[1797259609]
"""
from __future__ import annotations

from ..random import threefry_2x32 as _threefry_2x32


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
    flat = jnp.ravel(count)
    odd = flat.size % 2
    if odd:
        flat = jnp.concatenate([flat, jnp.zeros(1, flat.dtype)])
    x1, x2 = jnp.split(flat, 2)
    y1, y2 = _threefry_2x32(k1, k2, x1, x2)
    out = jnp.concatenate([y1, y2])
    return jnp.reshape(out[:-1] if odd else out, jnp.shape(count))

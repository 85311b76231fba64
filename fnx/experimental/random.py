"""A stateful random generator, as ``jax.experimental.random.stateful_rng``: NumPy's
``default_rng`` style on top of fnx's keys. Each draw folds a counter, kept in a ``Ref``, into the
base key and increments it, so repeated calls (eager or jitted) give JAX's draws.

>>> from fnx.experimental.random import stateful_rng
>>> rng = stateful_rng(42)
>>> rng.uniform()
Array(0.5302608, dtype=float32)
>>> rng.uniform()
Array(0.72766423, dtype=float32)
"""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from .. import numpy as jnp
from .. import random
from ..ref import Ref, new_ref
from ..tree_util import register_dataclass


def _size(size, *args) -> tuple[int, ...]:
    if size is None:
        return np.broadcast_shapes(*(np.shape(arg) for arg in args))
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(map(operator.index, size))


@register_dataclass
@dataclasses.dataclass(frozen=True)
class StatefulPRNG:
    """A generator made by ``stateful_rng``: a typed base key and a draw counter in a ``Ref``."""
    _base_key: object
    _counter: Ref

    def key(self, shape=()):
        """A fresh key (or ``shape`` of them); the generator moves on."""
        if self._base_key.shape:
            raise ValueError("cannot draw from a split stateful generator outside vmap")
        key = random.fold_in(self._base_key, self._counter[...])
        self._counter[...] = self._counter[...] + 1
        shape = _size(shape)
        return random.split(key, shape) if shape else key

    def random(self, size=None, dtype=float):
        """Floats in [0, 1)."""
        return random.uniform(self.key(), _size(size), dtype)

    def uniform(self, low=0, high=1, size=None, *, dtype=float):
        """Floats uniform in [low, high)."""
        return random.uniform(self.key(), _size(size, low, high), dtype, minval=low, maxval=high)

    def normal(self, loc=0, scale=1, size=None, *, dtype=float):
        """Normal draws with mean ``loc`` and standard deviation ``scale``."""
        norm = random.normal(self.key(), _size(size, loc, scale), dtype)
        return (jnp.asarray(loc) + jnp.asarray(scale) * norm).astype(dtype)

    def integers(self, low, high=None, size=None, *, dtype=int):
        """Integers in [low, high) (``integers(high)``: in [0, high))."""
        if high is None:
            low, high = 0, low
        return random.randint(self.key(), _size(size, low, high), low, high, dtype)

    def split(self, num) -> StatefulPRNG:
        """One generator holding ``num`` independent ones, to pass to ``vmap``."""
        return StatefulPRNG(self.key(num), new_ref(jnp.zeros(num, dtype=int)))

    def spawn(self, n_children: int) -> list[StatefulPRNG]:
        """A list of ``n_children`` independent generators."""
        return [StatefulPRNG(key, new_ref(0)) for key in self.key(n_children)]


def stateful_rng(seed=None, *, impl=None) -> StatefulPRNG:
    """A ``StatefulPRNG`` seeded with ``seed`` (NumPy's entropy when None).

    >>> rng = stateful_rng(1701)
    >>> rng.random((2,)).shape
    (2,)
    """
    if seed is None:
        seed = np.random.SeedSequence().generate_state(1)[0]
    return StatefulPRNG(random.key(seed, impl=impl), new_ref(0))

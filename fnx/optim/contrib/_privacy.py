"""Differentially private SGD (Abadi et al., 2016): per-example clipping plus Gaussian
noise."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import random
from ...core.pytree import tree_flatten, tree_unflatten
from .._base import GradientTransformation, chain, identity
from .._clipping import per_example_global_norm_clip
from .._transforms import scale_by_learning_rate, trace


class DifferentiallyPrivateAggregateState(NamedTuple):
    """``differentially_private_aggregate``'s state: the PRNG key of the next noise.

    >>> DifferentiallyPrivateAggregateState._fields
    ('rng_key',)
    """
    rng_key: Any


def differentially_private_aggregate(l2_norm_clip, noise_multiplier, key=None, *,
                                     seed=None) -> GradientTransformation:
    """Per-example gradients (a leading batch axis on every leaf) clipped to a global norm of
    ``l2_norm_clip``, summed, noised with ``N(0, (l2_norm_clip * noise_multiplier)^2)`` and
    divided by the batch size; ``key`` a PRNG key or an int seed.

    >>> tx = differentially_private_aggregate(1.0, 0.0, key=0)
    >>> tx.update(jnp.array([[3.0, 4.0], [0.3, 0.4]]), tx.init(None))[0].round(4)
    Array([0.45, 0.6 ], dtype=float32)
    """
    if seed is not None:
        if key is not None:
            raise ValueError("differentially_private_aggregate: pass key or seed, not both")
        key = seed
    key = 0 if key is None else key
    key = random.key(key) if isinstance(key, int) else key
    noise_std = l2_norm_clip * noise_multiplier

    def init(params):
        return DifferentiallyPrivateAggregateState(key)

    def update(updates, state, params=None):
        leaves, treedef = tree_flatten(updates)
        batch = leaves[0].shape[0]
        clipped, _ = per_example_global_norm_clip(leaves, l2_norm_clip)
        new_key, *keys = random.split(state.rng_key, len(leaves) + 1)
        noised = [(g + noise_std * random.normal(k, g.shape, g.dtype)) / batch
                  for g, k in zip(clipped, keys)]
        return tree_unflatten(treedef, noised), DifferentiallyPrivateAggregateState(new_key)
    return GradientTransformation(init, update)


def dpsgd(learning_rate, l2_norm_clip, noise_multiplier, seed: int, momentum=None,
          nesterov: bool = False) -> GradientTransformation:
    """DP-SGD: ``differentially_private_aggregate``, optional momentum, a learning rate.

    >>> opt = dpsgd(0.1, l2_norm_clip=1.0, noise_multiplier=1.1, seed=0)
    >>> state = opt.init(jnp.zeros(2))
    """
    return chain(differentially_private_aggregate(l2_norm_clip, noise_multiplier, seed=seed),
                 identity() if momentum is None else trace(momentum, nesterov),
                 scale_by_learning_rate(learning_rate))

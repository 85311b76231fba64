"""COCOB-Backprop (Orabona and Tommasi, 2017): learning-rate-free coin betting."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformation, chain
from .._constrain import add_decayed_weights
from .._transforms import scale_by_learning_rate


class COCOBState(NamedTuple):
    """``scale_by_cocob``'s state.

    >>> COCOBState._fields
    ('init_particles', 'cumulative_gradients', 'scale', 'subgradients', 'reward')
    """
    init_particles: Any
    cumulative_gradients: Any
    scale: Any
    subgradients: Any
    reward: Any


def scale_by_cocob(alpha: float = 100.0, eps: float = 1e-8) -> GradientTransformation:
    """COCOB's step: the parameters bet a fraction of their winnings on the gradients' sign.

    >>> opt = scale_by_cocob()
    """
    def init(params):
        zeros = tree_map(jnp.zeros_like, params)
        return COCOBState(params, zeros, tree_map(lambda p: eps * jnp.ones_like(p), params),
                          zeros, zeros)

    def update(updates, state, params):
        p0, cum, scale, sub, reward = state
        scale = tree_map(lambda s, g: jnp.maximum(s, jnp.abs(g)), scale, updates)
        sub = tree_map(lambda s, g: s + jnp.abs(g), sub, updates)
        reward = tree_map(lambda r, g, p, q: jnp.maximum(r - g * (p - q), 0), reward, updates,
                          params, p0)
        cum = tree_map(lambda c, g: c - g, cum, updates)
        new = tree_map(lambda p, q, c, s, gs, r: -p + (q + c / (s * jnp.maximum(gs + s, alpha * s))
                                                       * (s + r)),
                       params, p0, cum, scale, sub, reward)
        return new, COCOBState(p0, cum, scale, sub, reward)
    return GradientTransformation(init, update)


def cocob(learning_rate=1.0, alpha: float = 100.0, eps: float = 1e-8,
          weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """COCOB-Backprop with optional weight decay; ``learning_rate`` multiplies the gradients.

    >>> opt = cocob()
    """
    return chain(add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate, flip_sign=False),
                 scale_by_cocob(alpha, eps))

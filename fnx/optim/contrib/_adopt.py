"""ADOPT (Taniguchi et al., 2024): Adam that normalizes each gradient by the second moment of
the gradients before it, so any ``b2`` converges."""
from __future__ import annotations

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformation, chain
from .._numerics import safe_increment
from .._transforms import ScaleByAdamState, scale_by_learning_rate
from ..tree_utils import (tree_cast, tree_update_moment, tree_update_moment_per_elem_norm,
                          tree_zeros_like)


def scale_by_adopt(b1=0.9, b2=0.9999, eps=1e-6, mu_dtype=None, *, nesterov: bool = False,
                   use_clipping: bool = True,
                   clip_value_fn=lambda step: step ** 0.25) -> GradientTransformation:
    """ADOPT's step: the gradient over the root of the previous second moment (clipped to
    ``clip_value_fn(step)``), then averaged into the first moment.

    >>> tx = scale_by_adopt()
    >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0]
    Array([0.], dtype=float32)
    """
    def init(params):
        return ScaleByAdamState(jnp.zeros([], jnp.int32), tree_zeros_like(params, mu_dtype),
                                tree_zeros_like(params))

    def update(updates, state, params=None):
        # the first step only records the second moment
        first = state.count == 0
        nu = tree_update_moment_per_elem_norm(updates, state.nu, jnp.where(first, 0, b2), 2)
        b1_ = jnp.where(first, 1, b1)

        def normalized(g, v):
            g = g / jnp.maximum(jnp.sqrt(v), eps)
            if not use_clipping:
                return g
            bound = clip_value_fn(state.count)
            return jnp.clip(g, -bound, bound)
        step = tree_map(normalized, updates, state.nu)
        mu = tree_update_moment(step, state.mu, b1_, 1)
        out = tree_update_moment(step, mu, b1_, 1) if nesterov else mu
        return out, ScaleByAdamState(safe_increment(state.count), tree_cast(mu, mu_dtype), nu)
    return GradientTransformation(init, update)


def adopt(learning_rate, b1=0.9, b2=0.9999, eps=1e-6, mu_dtype=None, *, nesterov: bool = False,
          use_clipping: bool = True,
          clip_value_fn=lambda step: step ** 0.25) -> GradientTransformation:
    """ADOPT with a learning rate (a float or a schedule).

    >>> opt = adopt(0.003)
    >>> state = opt.init(jnp.array([1.0, 2.0]))
    """
    return chain(scale_by_adopt(b1, b2, eps, mu_dtype, nesterov=nesterov,
                                use_clipping=use_clipping, clip_value_fn=clip_value_fn),
                 scale_by_learning_rate(learning_rate))

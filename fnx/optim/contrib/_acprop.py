"""AdaBelief's centred second moment with ADOPT's order (Zhuang et al., 2021, "Momentum
Centering and Asynchronous Update for Adaptive Gradient Methods"): the step divides the
gradient by the root of the moment of the steps before it."""
from __future__ import annotations

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformation, chain
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from .._transforms import ScaleByBeliefState, scale_by_learning_rate
from ..tree_utils import (tree_bias_correction, tree_update_moment,
                          tree_update_moment_per_elem_norm, tree_zeros_like)


def scale_by_acprop(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16) -> GradientTransformation:
    """ACProp's step: the gradient over the root of the debiased centred second moment of
    the earlier steps (1 on the first step).

    >>> tx = scale_by_acprop()
    >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0]
    Array([2.], dtype=float32)
    """
    def init(params):
        return ScaleByBeliefState(jnp.zeros([], jnp.int32), tree_zeros_like(params),
                                  tree_zeros_like(params))

    def update(updates, state, params=None):
        mu = tree_update_moment(updates, state.mu, b1, 1)
        surprise = tree_map(lambda g, m: g - m, updates, state.mu)
        nu = tree_map(lambda v: v + eps_root,
                      tree_update_moment_per_elem_norm(surprise, state.nu, b2, 2))
        count = safe_increment(state.count)
        first = state.count == 0
        nu_hat = tree_bias_correction(state.nu, b2, jnp.where(first, count, state.count))
        nu_hat = tree_map(lambda v: jnp.where(first, 1, v), nu_hat)
        out = tree_map(lambda g, v: g / (jnp.sqrt(v) + eps), updates, nu_hat)
        return out, ScaleByBeliefState(count, mu, nu)
    return GradientTransformation(init, update)


def acprop(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, weight_decay=0.0,
           mask=None) -> GradientTransformation:
    """ACProp with decoupled weight decay and a learning rate (a float or a schedule).

    >>> opt = acprop(1e-3, weight_decay=1e-4)
    >>> state = opt.init({"w": jnp.zeros(2)})
    """
    return chain(scale_by_acprop(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))

"""Mechanic (Cutkosky et al., 2023): a learning-rate tuner wrapped around any optimizer."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformationExtraArgs, with_extra_args_support
from .._numerics import safe_increment
from ..tree_utils import tree_dtype, tree_norm, tree_vdot, tree_where


class MechanicState(NamedTuple):
    """``mechanize``'s state.

    >>> MechanicState._fields
    ('base_optimizer_state', 'count', 'r', 'm', 'v', 's', 'x0')
    """
    base_optimizer_state: Any
    count: Any
    r: Any
    m: Any
    v: Any
    s: Any
    x0: Any


def mechanize(base_optimizer, weight_decay: float = 1e-2, eps: float = 1e-8,
              s_init: float = 1e-6, num_betas: int = 6) -> GradientTransformationExtraArgs:
    """Scale ``base_optimizer``'s steps from the initial parameters by a learned factor.

    >>> opt = mechanize(fnx.optim.adam(1e-3))
    """
    base_optimizer = with_extra_args_support(base_optimizer)

    def init(params):
        dtype = tree_dtype(params, "lowest")
        zeros = jnp.zeros(num_betas, dtype)
        return MechanicState(base_optimizer.init(params), jnp.zeros((), jnp.int32), zeros, zeros,
                             zeros, jnp.full(num_betas, s_init, dtype), params)

    def update(updates, state, params=None, **extra_args):
        if params is None:
            raise ValueError("mechanize needs params: call update(updates, state, params)")
        neg_updates, base_state = base_optimizer.update(updates, state.base_optimizer_state,
                                                        params, **extra_args)
        x0 = tree_where(state.count == 0, params, state.x0)
        s_sum = jnp.sum(state.s)
        decay = weight_decay * s_sum * tree_norm(updates) / (tree_norm(params) + eps)
        updates = tree_map(lambda g, p: g + decay * p, updates, params)
        delta_prev = tree_map(lambda x, x0i: (x0i - x) / (s_sum + eps), params, x0)
        delta = tree_map(lambda d, u: d - u, delta_prev, neg_updates)
        h = tree_vdot(updates, delta_prev)
        clipped_h = jnp.clip(h, -state.m, state.m)
        betas = jnp.array([1.0 - 0.1 ** k for k in range(1, num_betas + 1)], dtype=state.s.dtype)
        m = jnp.maximum(betas * state.m, jnp.abs(h) + eps)
        v = betas ** 2 * state.v + h ** 2
        r = betas * state.r + clipped_h * state.s
        wealth = s_init / num_betas * m + jnp.maximum(0.0, r)
        s = wealth / (jnp.sqrt(v) + eps)
        new_params = tree_map(lambda x0i, d: x0i - jnp.sum(s) * d, x0, delta)
        out = tree_map(lambda new, p: new - p, new_params, params)
        return out, MechanicState(base_state, safe_increment(state.count), r, m, v, s, x0)
    return GradientTransformationExtraArgs(init, update)

"""AdEMAMix (Pagliardini et al., 2024): Adam with a second, slow momentum mixed in."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformation, chain
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from .._transforms import scale_by_learning_rate
from ..tree_utils import (tree_bias_correction, tree_update_moment,
                          tree_update_moment_per_elem_norm, tree_zeros_like)


class ScaleByAdemamixState(NamedTuple):
    """``scale_by_ademamix``' state.

    >>> ScaleByAdemamixState._fields
    ('count', 'count_m2', 'm1', 'm2', 'nu')
    """
    count: Any
    count_m2: Any
    m1: Any
    m2: Any
    nu: Any


def scale_by_ademamix(b1: float = 0.9, b2: float = 0.999, b3=0.9999, alpha=6.0,
                      eps: float = 1e-8, eps_root: float = 0.0,
                      mu_dtype=None) -> GradientTransformation:
    """AdEMAMix' rescaling: ``(m1_hat + alpha * m2) / (sqrt(nu_hat) + eps)``, where ``m2`` is
    a slow (``b3``) momentum; ``b3`` and ``alpha`` may be schedules.

    >>> opt = scale_by_ademamix()
    """
    def init(params):
        zeros = tree_zeros_like(params, dtype=mu_dtype)
        count = jnp.zeros((), jnp.int32)
        return ScaleByAdemamixState(count, count, zeros, zeros, zeros)

    def update(updates, state, params=None):
        c_b3 = b3(state.count_m2) if callable(b3) else b3
        c_alpha = alpha(state.count_m2) if callable(alpha) else alpha
        m1 = tree_update_moment(updates, state.m1, b1, 1)
        m2 = tree_update_moment(updates, state.m2, c_b3, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count, count_m2 = safe_increment(state.count), safe_increment(state.count_m2)
        m1_hat = tree_bias_correction(m1, b1, count)
        nu_hat = tree_bias_correction(nu, b2, count)
        out = tree_map(lambda a, b, v: (a + c_alpha * b) / (jnp.sqrt(v + eps_root) + eps),
                       m1_hat, m2, nu_hat)
        return out, ScaleByAdemamixState(count, count_m2, m1, m2, nu)
    return GradientTransformation(init, update)


def ademamix(learning_rate, b1: float = 0.9, b2: float = 0.999, b3=0.9999, alpha=5.0,
             eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None,
             weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """AdEMAMix with decoupled weight decay.

    >>> opt = ademamix(1e-3)
    """
    return chain(scale_by_ademamix(b1, b2, b3, alpha, eps, eps_root, mu_dtype),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


class ScaleBySimplifiedAdEMAMixState(NamedTuple):
    """``scale_by_simplified_ademamix``' state.

    >>> ScaleBySimplifiedAdEMAMixState._fields
    ('t', 'm', 'n')
    """
    t: Any
    m: Any
    n: Any


def scale_by_simplified_ademamix(b1: float = 0.99, b2: float = 0.95, alpha=0.0,
                                 eps: float = 1e-8,
                                 eps_root: float = 0.0) -> GradientTransformation:
    """Simplified AdEMAMix: one accumulated (undamped) momentum plus ``alpha`` times the
    gradient, over Adam's bias-corrected root second moment.

    >>> opt = scale_by_simplified_ademamix()
    """
    def init(params):
        zeros = tree_zeros_like(params)
        return ScaleBySimplifiedAdEMAMixState(jnp.zeros((), jnp.int32), zeros, zeros)

    def update(updates, state, params=None):
        c_alpha = alpha(state.t) if callable(alpha) else alpha
        m = tree_map(lambda g, mi: g + b1 * mi, updates, state.m)
        n = tree_map(lambda g, ni: g * g + b2 * (ni - g * g), updates, state.n)
        t = safe_increment(state.t)
        n_hat = tree_bias_correction(n, b2, t)
        out = tree_map(lambda mi, g, nh: (mi + c_alpha * g) / (jnp.sqrt(nh + eps_root) + eps),
                       m, updates, n_hat)
        return out, ScaleBySimplifiedAdEMAMixState(t, m, n)
    return GradientTransformation(init, update)


def simplified_ademamix(learning_rate, b1: float = 0.99, b2: float = 0.95, alpha=0.0,
                        eps: float = 1e-8, eps_root: float = 0.0, weight_decay: float = 0.0,
                        mask=None) -> GradientTransformation:
    """Simplified AdEMAMix with decoupled weight decay.

    >>> opt = simplified_ademamix(1e-3)
    """
    return chain(scale_by_simplified_ademamix(b1, b2, alpha, eps, eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))

"""MoMo (Schaipp et al., 2023): momentum methods whose step is a Polyak step size on a model
of the loss, needing the loss ``value=`` at each ``update``."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformationExtraArgs
from .._numerics import safe_increment
from ..tree_utils import tree_dtype, tree_norm, tree_vdot

_EPS = np.finfo(float).eps


def _check(params, value):
    if params is None:
        raise ValueError("momo needs params: call update(updates, state, params, value=loss)")
    if value is None:
        raise ValueError("momo needs the loss: call update(updates, state, params, value=loss)")


class MomoState(NamedTuple):
    """``momo``'s state.

    >>> MomoState._fields
    ('exp_avg', 'barf', 'gamma', 'lb', 'count')
    """
    exp_avg: Any
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def momo(learning_rate=1.0, beta: float = 0.9, lower_bound: float = 0.0,
         weight_decay: float = 0.0,
         adapt_lower_bound: bool = False) -> GradientTransformationExtraArgs:
    """MoMo on SGD with momentum ``beta``; ``lower_bound`` bounds the loss from below.

    >>> opt = momo()
    >>> params = jnp.ones(2)
    >>> updates, state = opt.update(params, opt.init(params), params, value=jnp.asarray(1.0))
    """
    def init(params):
        dtype = tree_dtype(params, "lowest")
        zero = jnp.zeros((), dtype)
        return MomoState(tree_map(jnp.zeros_like, params), zero, zero,
                         jnp.asarray(lower_bound, dtype), jnp.zeros((), jnp.int32))

    def update(updates, state, params, *, value, **extra_args):
        _check(params, value)
        bt = jnp.where(state.count == 0, 0.0, beta)
        barf = bt * state.barf + (1 - bt) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = tree_map(lambda m, g: bt * m + (1 - bt) * g, state.exp_avg, updates)
        gamma = bt * state.gamma + (1 - bt) * tree_vdot(updates, params)
        norm = tree_norm(exp_avg, squared=True)
        iprod = tree_vdot(exp_avg, params)
        alpha = learning_rate(state.count) if callable(learning_rate) else learning_rate
        wd = 1 + alpha * weight_decay
        lb = state.lb
        if adapt_lower_bound:
            cap = wd * (barf - gamma) + iprod
            lb = jnp.where(cap < wd * state.lb, jnp.maximum(cap / (2 * wd), lower_bound),
                           state.lb)
        t1 = jnp.maximum(wd * (barf - lb - gamma) + iprod, 0.0) / norm
        tau = jnp.minimum(alpha, jnp.where(norm <= _EPS, 0.0, t1))
        out = tree_map(lambda m, p: -(alpha * weight_decay) / wd * p - tau * m, exp_avg, params)
        if adapt_lower_bound:
            new_lb = jnp.maximum(barf + iprod - gamma - tau * norm / 2, lower_bound)
        else:
            new_lb = state.lb
        return out, MomoState(exp_avg, barf, gamma, jnp.asarray(new_lb, state.lb.dtype),
                              safe_increment(state.count))
    return GradientTransformationExtraArgs(init, update)


class MomoAdamState(NamedTuple):
    """``momo_adam``'s state.

    >>> MomoAdamState._fields
    ('exp_avg', 'exp_avg_sq', 'barf', 'gamma', 'lb', 'count')
    """
    exp_avg: Any
    exp_avg_sq: Any
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def momo_adam(learning_rate=1e-2, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
              lower_bound: float = 0.0, weight_decay: float = 0.0,
              adapt_lower_bound: bool = False) -> GradientTransformationExtraArgs:
    """MoMo on Adam.

    >>> opt = momo_adam()
    """
    def init(params):
        dtype = tree_dtype(params, "lowest")
        zero = jnp.zeros((), dtype)
        zeros = tree_map(jnp.zeros_like, params)
        return MomoAdamState(zeros, zeros, zero, zero, jnp.asarray(lower_bound, dtype),
                             jnp.zeros((), jnp.int32))

    def update(updates, state, params, *, value, **extra_args):
        _check(params, value)
        count = safe_increment(state.count)
        barf = b1 * state.barf + (1 - b1) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.exp_avg, updates)
        exp_avg_sq = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state.exp_avg_sq, updates)
        bc2 = jnp.asarray(1 - b2 ** count, dtype=barf.dtype)
        precond = tree_map(lambda v: eps + jnp.sqrt(v / bc2), exp_avg_sq)
        norm = tree_vdot(exp_avg, tree_map(lambda m, q: m / q, exp_avg, precond))
        gamma = b1 * state.gamma + (1 - b1) * tree_vdot(updates, params)
        iprod = tree_vdot(exp_avg, params)
        alpha = learning_rate(state.count) if callable(learning_rate) else learning_rate
        bc1 = jnp.asarray(1 - b1 ** count, dtype=barf.dtype)
        wd = 1 + alpha * weight_decay
        lb = state.lb
        if adapt_lower_bound:
            cap = wd * (barf - gamma) + iprod
            lb = jnp.where(cap < wd * bc1 * state.lb,
                           jnp.maximum(cap / (2 * bc1 * wd), lower_bound), state.lb)
        t1 = jnp.maximum(wd * (barf - bc1 * lb - gamma) + iprod, 0.0) / norm
        tau = jnp.minimum(alpha / bc1, jnp.where(norm <= _EPS, 0.0, t1))
        out = tree_map(lambda m, q, p: -(alpha * weight_decay) / wd * p - tau * m / q, exp_avg,
                       precond, params)
        if adapt_lower_bound:
            new_lb = jnp.maximum((barf + iprod - gamma - tau * norm / 2) / bc1, lower_bound)
        else:
            new_lb = state.lb
        return out, MomoAdamState(exp_avg, exp_avg_sq, barf, gamma,
                                  jnp.asarray(new_lb, state.lb.dtype), count)
    return GradientTransformationExtraArgs(init, update)

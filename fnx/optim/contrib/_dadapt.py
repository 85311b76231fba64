"""D-Adaptation (Defazio and Mishchenko, 2023) and Prodigy (Mishchenko and Defazio, 2023):
Adam whose step size is an estimate of the distance to the solution, grown as it goes."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformationExtraArgs
from .._numerics import safe_increment
from ..tree_utils import tree_dtype, tree_sum, tree_vdot


def _need_params(params, who):
    if params is None:
        raise ValueError(f"{who} needs params: call update(updates, state, params)")


class DAdaptAdamWState(NamedTuple):
    """``dadapt_adamw``'s state.

    >>> DAdaptAdamWState._fields
    ('exp_avg', 'exp_avg_sq', 'grad_sum', 'estim_lr', 'numerator_weighted', 'count')
    """
    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any
    estim_lr: Any
    numerator_weighted: Any
    count: Any


def dadapt_adamw(learning_rate=1.0, betas=(0.9, 0.999), eps: float = 1e-8,
                 estim_lr0: float = 1e-6,
                 weight_decay: float = 0.0) -> GradientTransformationExtraArgs:
    """AdamW with D-Adaptation's step size estimate (``learning_rate`` multiplies it).

    >>> opt = dadapt_adamw()
    """
    def init(params):
        dtype = tree_dtype(params, "lowest")
        zeros = tree_map(jnp.zeros_like, params)
        return DAdaptAdamWState(zeros, zeros, zeros, jnp.asarray(estim_lr0, dtype),
                                jnp.zeros((), dtype), jnp.zeros((), jnp.int32))

    def update(updates, state, params=None, **extra_args):
        _need_params(params, "dadapt_adamw")
        beta1, beta2 = betas
        sb2 = beta2 ** 0.5
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        count = safe_increment(state.count)
        bc = (1 - beta2 ** count) ** 0.5 / (1 - beta1 ** count)
        dlr = (state.estim_lr * sched * bc).astype(state.numerator_weighted.dtype)
        s_weighted = tree_map(lambda s, v: s / (jnp.sqrt(v) + eps), state.grad_sum,
                              state.exp_avg_sq)
        numerator_acum = tree_vdot(updates, s_weighted)
        exp_avg = tree_map(lambda m, g: beta1 * m + (1 - beta1) * dlr * g, state.exp_avg,
                           updates)
        exp_avg_sq = tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, state.exp_avg_sq,
                              updates)
        grad_sum = tree_map(lambda s, g: sb2 * s + (1 - sb2) * dlr * g, state.grad_sum, updates)
        grad_sum_l1 = tree_sum(tree_map(jnp.abs, grad_sum))
        numerator = sb2 * state.numerator_weighted + (1 - sb2) * dlr * numerator_acum
        estim_lr = jnp.maximum(state.estim_lr, numerator / ((1 - sb2) * grad_sum_l1))
        out = tree_map(lambda m, v, p: -weight_decay * dlr * p - m / (jnp.sqrt(v) + eps),
                       exp_avg, exp_avg_sq, params)
        return out, DAdaptAdamWState(exp_avg, exp_avg_sq, grad_sum, estim_lr, numerator, count)
    return GradientTransformationExtraArgs(init, update)


class ProdigyState(NamedTuple):
    """``prodigy``'s state.

    >>> ProdigyState._fields
    ('exp_avg', 'exp_avg_sq', 'grad_sum', 'params0', 'estim_lr', 'numerator_weighted', 'count')
    """
    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any
    params0: Any
    estim_lr: Any
    numerator_weighted: Any
    count: Any


def prodigy(learning_rate=1.0, betas=(0.9, 0.999), beta3: float | None = None,
            eps: float = 1e-8, estim_lr0: float = 1e-6, estim_lr_coef: float = 1.0,
            weight_decay: float = 0.0, safeguard_warmup: bool = False,
            weight_decay_mask=None) -> GradientTransformationExtraArgs:
    """Prodigy: Adam with a learning rate estimated from the distance travelled.

    >>> opt = prodigy()
    """
    beta1, beta2 = betas
    beta3 = beta2 ** 0.5 if beta3 is None else beta3

    def init(params):
        dtype = tree_dtype(params, "lowest")
        zeros = tree_map(jnp.zeros_like, params)
        return ProdigyState(zeros, zeros, zeros, params, jnp.asarray(estim_lr0, dtype),
                            jnp.zeros((), dtype), jnp.zeros((), jnp.int32))

    def update(updates, state, params=None, **extra_args):
        _need_params(params, "prodigy")
        count = safe_increment(state.count)
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        estim_lr = state.estim_lr
        bc = (1 - beta2 ** count) ** 0.5 / (1 - beta1 ** count)
        dlr = jnp.asarray(estim_lr * sched * bc, dtype=estim_lr.dtype)
        dg = tree_map(lambda g: estim_lr * g, updates)
        numerator_acum = tree_vdot(updates, tree_map(lambda q, p: q - p, state.params0, params))
        exp_avg = tree_map(lambda m, d: beta1 * m + (1 - beta1) * d, state.exp_avg, dg)
        exp_avg_sq = tree_map(lambda v, d: beta2 * v + (1 - beta2) * d * d, state.exp_avg_sq, dg)
        step = estim_lr if safeguard_warmup else dlr
        grad_sum = tree_map(lambda s, d: beta3 * s + step * d / estim_lr0, state.grad_sum, dg)
        numerator = (beta3 * state.numerator_weighted
                     + estim_lr / estim_lr0 * dlr * numerator_acum)
        denominator = tree_sum(tree_map(jnp.abs, grad_sum))
        new_estim = jnp.maximum(estim_lr, estim_lr_coef * numerator / denominator)
        out = tree_map(lambda m, v: -dlr * m / (jnp.sqrt(v) + new_estim * eps), exp_avg,
                       exp_avg_sq)
        if weight_decay_mask is not None:
            mask = weight_decay_mask(params) if callable(weight_decay_mask) else weight_decay_mask
            out = tree_map(lambda u, p, m: jnp.where(m, u - weight_decay * dlr * p, u), out,
                           params, mask)
        else:
            out = tree_map(lambda u, p: u - weight_decay * dlr * p, out, params)
        return out, ProdigyState(exp_avg, exp_avg_sq, grad_sum, state.params0, new_estim,
                                 numerator, count)
    return GradientTransformationExtraArgs(init, update)

"""Schedule-free optimization (Defazio et al., 2024): an interpolation between an averaged
iterate and the base optimizer's iterate replaces the learning-rate schedule."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformationExtraArgs, chain, with_extra_args_support
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from .._optimizers import sgd
from .._schedules import warmup_constant_schedule
from .._transforms import scale_by_learning_rate, scale_by_rms
from ..tree_utils import tree_cast, tree_dtype


class ScheduleFreeState(NamedTuple):
    """``schedule_free``'s state.

    >>> ScheduleFreeState._fields
    ('b1', 'weight_sum', 'step_count', 'max_lr', 'base_optimizer_state', 'z')
    """
    b1: Any
    weight_sum: Any
    step_count: Any
    max_lr: Any
    base_optimizer_state: Any
    z: Any


def schedule_free_eval_params(state, params):
    """The averaged parameters ``x`` to evaluate a schedule-free model at (the optimizer's
    ``params`` are the interpolated ``y``).

    >>> opt = schedule_free_sgd(0.1)
    >>> params = jnp.ones(2)
    >>> schedule_free_eval_params(opt.init(params), params)
    Array([1., 1.], dtype=float32)
    """
    b1, z = getattr(state, "b1", None), getattr(state, "z", None)
    if b1 is None or z is None:
        raise ValueError("schedule_free_eval_params takes a ScheduleFreeState, got "
                         f"{type(state).__name__}")
    return tree_map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, z)


def schedule_free(base_optimizer, learning_rate, b1: float = 0.9, weight_lr_power: float = 2.0,
                  state_dtype=None) -> GradientTransformationExtraArgs:
    """Make ``base_optimizer`` (which already applies ``learning_rate``) schedule-free.

    >>> opt = schedule_free(fnx.optim.sgd(0.1), learning_rate=0.1)
    """
    base_optimizer = with_extra_args_support(base_optimizer)

    def init(params):
        dtype = tree_dtype(params, "lowest")
        z = tree_map(lambda t: jnp.array(t, copy=True), tree_cast(params, state_dtype))
        return ScheduleFreeState(jnp.asarray(b1, dtype), jnp.zeros((), dtype),
                                 jnp.ones((), jnp.int32), jnp.zeros((), dtype),
                                 base_optimizer.init(params), z)

    def update(grads, state, params=None, **extra_args):
        lr = learning_rate
        if callable(learning_rate):
            lr = jnp.asarray(learning_rate(state.step_count), dtype=state.max_lr.dtype)
        max_lr = jnp.maximum(state.max_lr, lr)
        weight = max_lr ** weight_lr_power
        total = state.weight_sum + weight
        ck = jnp.where(jnp.isnan(weight) | jnp.isnan(total), jnp.nan,
                       jnp.nan_to_num(weight / total, nan=0.0, posinf=jnp.inf))
        base_updates, base_state = base_optimizer.update(grads, state.base_optimizer_state,
                                                         params, **extra_args)
        z = tree_map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), state.z,
                     base_updates)
        prev_x = tree_map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, state.z)
        x = tree_map(lambda xi, zi: (1.0 - ck) * xi + ck * zi, prev_x, z)
        new_params = tree_map(lambda xi, zi: b1 * xi + (1.0 - b1) * zi, x, z)
        updates = tree_map(lambda new, p: new - p, new_params, params)
        return updates, ScheduleFreeState(state.b1, total, safe_increment(state.step_count),
                                          max_lr, base_state, z)
    return GradientTransformationExtraArgs(init, update)


def schedule_free_sgd(learning_rate: float = 1.0, warmup_steps: int | None = None,
                      b1: float = 0.9, weight_decay: float | None = None,
                      weight_lr_power: float = 2.0,
                      state_dtype=None) -> GradientTransformationExtraArgs:
    """Schedule-free SGD (with an optional linear warmup and weight decay).

    >>> opt = schedule_free_sgd(0.1, warmup_steps=10)
    """
    if warmup_steps is not None:
        learning_rate = warmup_constant_schedule(0, learning_rate, warmup_steps)
    optimizer = sgd(learning_rate)
    if weight_decay is not None:
        optimizer = chain(add_decayed_weights(weight_decay), optimizer)
    return schedule_free(optimizer, learning_rate, b1, weight_lr_power, state_dtype)


def schedule_free_adamw(learning_rate: float = 0.0025, warmup_steps: int | None = None,
                        b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                        weight_decay: float = 0.0, weight_lr_power: float = 2.0,
                        state_dtype=None) -> GradientTransformationExtraArgs:
    """Schedule-free AdamW.

    >>> opt = schedule_free_adamw(1e-3, warmup_steps=100, weight_decay=1e-4)
    """
    if warmup_steps is not None:
        learning_rate = warmup_constant_schedule(0, learning_rate, warmup_steps)
    optimizer = chain(scale_by_rms(b2, eps, eps_in_sqrt=False, bias_correction=True),
                      add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))
    return schedule_free(optimizer, learning_rate, b1, weight_lr_power, state_dtype)

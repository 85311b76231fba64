"""Reduce the learning rate when the loss stops improving (Keras' ReduceLROnPlateau)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.control_flow import cond
from .._base import GradientTransformationExtraArgs, _tree_map
from .._numerics import safe_increment
from ..tree_utils import tree_dtype


class ReduceLROnPlateauState(NamedTuple):
    """``reduce_on_plateau``'s state.

    >>> ReduceLROnPlateauState._fields
    ('scale', 'best_value', 'plateau_count', 'cooldown_count', 'count', 'avg_value')
    """
    scale: Any
    best_value: Any
    plateau_count: Any
    cooldown_count: Any
    count: Any
    avg_value: Any


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, rtol: float = 1e-4,
                      atol: float = 0.0, cooldown: int = 0, accumulation_size: int = 1,
                      min_scale: float = 0.0) -> GradientTransformationExtraArgs:
    """Multiply the updates by a ``scale`` that drops by ``factor`` once the loss (the
    ``value=`` passed to ``update``, averaged over ``accumulation_size`` calls) has not
    improved by ``rtol``/``atol`` for ``patience`` averages; then waits ``cooldown``.

    >>> opt = fnx.optim.chain(fnx.optim.adam(1e-2), reduce_on_plateau(patience=2))
    >>> state = opt.init(jnp.zeros(2))
    >>> updates, state = opt.update(jnp.ones(2), state, value=jnp.asarray(1.0))
    """
    if not 0.0 < factor < 1.0:
        raise ValueError(f"reduce_on_plateau: factor must be in (0, 1), got {factor}")
    if rtol < 0.0 or atol < 0.0 or rtol > 1.0 or (rtol == 0.0 and atol == 0.0):
        raise ValueError("reduce_on_plateau: need 0 <= rtol <= 1, atol >= 0 and one of them "
                         f"positive; got rtol={rtol}, atol={atol}")

    def init(params):
        high, low = tree_dtype(params, "highest"), tree_dtype(params, "lowest")
        zero = jnp.zeros((), jnp.int32)
        return ReduceLROnPlateauState(jnp.asarray(1.0, low), jnp.asarray(jnp.inf, high), zero,
                                      zero, zero, jnp.asarray(0.0, high))

    def new_scale(s):
        improved = s.avg_value < (1 - rtol) * s.best_value - atol
        best = jnp.where(improved, s.avg_value, s.best_value).astype(s.best_value.dtype)
        plateau = jnp.where(improved, 0, safe_increment(s.plateau_count))
        hit = plateau == patience
        in_cooldown = s.cooldown_count > 0
        plateau = jnp.where(in_cooldown | hit, 0, plateau).astype(jnp.int32)
        scale = jnp.where(in_cooldown, s.scale,
                          jnp.maximum(jnp.where(hit, s.scale * factor, s.scale), min_scale))
        cool = jnp.where(in_cooldown, s.cooldown_count - 1, jnp.where(hit, cooldown, 0))
        return ReduceLROnPlateauState(scale.astype(s.scale.dtype), best, plateau,
                                      cool.astype(jnp.int32), jnp.zeros((), jnp.int32),
                                      jnp.zeros((), s.avg_value.dtype))

    def update(updates, state, params=None, *, value, **extra_args):
        count = safe_increment(state.count)
        avg = ((state.count * state.avg_value + jnp.asarray(value).astype(state.avg_value.dtype))
               / count).astype(state.avg_value.dtype)
        state = state._replace(avg_value=avg, count=count)
        state = cond(count == accumulation_size, new_scale, lambda s: s, state)
        return _tree_map(lambda g: (state.scale * g).astype(g.dtype), updates), state
    return GradientTransformationExtraArgs(init, update)

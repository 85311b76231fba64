"""Sharpness-aware minimization (Foret et al., 2021): steps taken at an adversarially
perturbed copy of the parameters."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import EmptyState, GradientTransformation, GradientTransformationExtraArgs
from .._base import apply_updates
from ..tree_utils import tree_norm

NormalizeState = EmptyState


def normalize() -> GradientTransformation:
    """Divide the updates by their global norm (SAM's usual adversarial direction).

    >>> tx = normalize()
    >>> tx.update(jnp.array([3.0, 4.0]), tx.init(None))[0]
    Array([0.6, 0.8], dtype=float32)
    """
    def update(updates, state, params=None):
        norm = tree_norm(updates)
        return tree_map(lambda g: g / norm, updates), state
    return GradientTransformation(lambda params: NormalizeState(), update)


class SAMState(NamedTuple):
    """``sam``'s state.

    >>> SAMState._fields
    ('steps_since_sync', 'opt_state', 'adv_state', 'cache')
    """
    steps_since_sync: Any
    opt_state: Any
    adv_state: Any
    cache: Any


def sam(optimizer: GradientTransformation, adv_optimizer: GradientTransformation,
        sync_period: int = 2, reset_state: bool = True, opaque_mode: bool = False,
        batch_axis_name: str | None = None) -> GradientTransformationExtraArgs:
    """SAM: ``sync_period - 1`` adversarial ascent steps by ``adv_optimizer`` (whose updates
    are negated), then one step of ``optimizer`` from the cached parameters with the last
    gradient. In the default (transparent) mode each call is one of those steps; with
    ``opaque_mode`` one call does them all, taking gradients from ``grad_fn(params, i)``.

    >>> opt = sam(fnx.optim.sgd(0.1), fnx.optim.chain(normalize(), fnx.optim.sgd(0.05)))
    """
    if sync_period < 1:
        raise ValueError(f"sam's sync_period must be >= 1, got {sync_period}")

    def init(params):
        return SAMState(jnp.zeros((), jnp.int32), optimizer.init(params),
                        adv_optimizer.init(params), None if opaque_mode else params)

    def pick(flag, if_true, if_false):
        return tree_map(lambda t, f: flag * t + (1 - flag) * f, if_true, if_false)

    def transparent(updates, state, params, *, grad_fn: Callable | None = None):
        first = state.steps_since_sync == 0
        last = state.steps_since_sync == sync_period - 1
        adv_updates, adv_state = adv_optimizer.update(updates, state.adv_state, params)
        adv_updates = tree_map(lambda x: -x, adv_updates)
        opt_updates, opt_state = optimizer.update(updates, state.opt_state, state.cache)
        opt_updates = tree_map(lambda c, p, u: c - p + u, state.cache, params, opt_updates)
        cache = pick(first, params, state.cache)
        updates = pick(last, opt_updates, adv_updates)
        kept = adv_optimizer.init(params) if reset_state else state.adv_state
        adv_state = pick(last, kept, adv_state)
        opt_state = pick(last, opt_state, state.opt_state)
        return updates, SAMState((state.steps_since_sync + 1) % sync_period, opt_state,
                                 adv_state, cache)

    def opaque(updates, state, params, *, grad_fn: Callable | None = None):
        if grad_fn is None:
            raise ValueError("sam(opaque_mode=True).update needs grad_fn=")
        adv_params, adv_updates, adv_state = params, updates, state.adv_state
        for i in range(sync_period - 1):
            adv_updates, adv_state = adv_optimizer.update(adv_updates, adv_state, adv_params)
            adv_params = apply_updates(adv_params, tree_map(lambda x: -x, adv_updates))
            adv_updates = grad_fn(adv_params, i)
            if batch_axis_name is not None:
                from ...core.collectives import pmean
                adv_updates = pmean(adv_updates, axis_name=batch_axis_name)
        if reset_state:
            adv_state = adv_optimizer.init(params)
        updates, opt_state = optimizer.update(adv_updates, state.opt_state, params)
        return updates, SAMState(jnp.zeros((), jnp.int32), opt_state, adv_state, None)
    return GradientTransformationExtraArgs(init, opaque if opaque_mode else transparent)

"""Lookahead: a fast optimizer's steps, pulled back towards slow parameters every few steps."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core.pytree import tree_map
from ._base import GradientTransformation


class LookaheadState(NamedTuple):
    """``lookahead``'s state: the fast optimizer's state and the steps since the last sync.

    >>> LookaheadState._fields
    ('fast_state', 'steps_since_sync')
    """
    fast_state: Any
    steps_since_sync: Any


class LookaheadParams(NamedTuple):
    """The ``fast`` parameters (take gradients there) and the ``slow`` ones (evaluate there).

    >>> LookaheadParams.init_synced(jnp.ones(2)).slow
    Array([1., 1.], dtype=float32)
    """
    fast: Any
    slow: Any

    @classmethod
    def init_synced(cls, params) -> "LookaheadParams":
        return cls(fast=params, slow=params)


def lookahead(fast_optimizer: GradientTransformation, sync_period: int, slow_step_size: float,
              reset_state: bool = False) -> GradientTransformation:
    """Every ``sync_period`` fast steps, the slow parameters move ``slow_step_size`` of the way
    to the fast ones and the fast ones jump there (Zhang et al., 2019). ``params`` are
    :class:`LookaheadParams`; gradients are taken at ``params.fast``.

    >>> opt = lookahead(fnx.optim.sgd(1e-2), sync_period=5, slow_step_size=0.5)
    >>> params = LookaheadParams.init_synced(jnp.ones(2))
    >>> state = opt.init(params)
    >>> updates, state = opt.update(2 * params.fast, state, params)
    >>> fnx.optim.apply_updates(params, updates).fast
    Array([0.98, 0.98], dtype=float32)
    """
    if sync_period < 1:
        raise ValueError(f"lookahead's sync_period must be >= 1, got {sync_period}")

    def init(params):
        fast = getattr(params, "fast", params)
        return LookaheadState(fast_optimizer.init(fast), jnp.zeros((), jnp.int32))

    def update(updates, state, params):
        updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync = state.steps_since_sync == sync_period - 1
        diff = tree_map(lambda f, u, s: f + u - s, params.fast, updates, params.slow)
        slow_updates = tree_map(lambda d: slow_step_size * sync * d, diff)
        fast_updates = tree_map(lambda u, d: u - sync * (1 - slow_step_size) * d, updates, diff)
        if reset_state:
            fresh = fast_optimizer.init(params.fast)
            fast_state = tree_map(lambda cur, new: jnp.where(sync, new, cur), fast_state, fresh)
        steps = (state.steps_since_sync + 1) % sync_period
        return LookaheadParams(fast_updates, slow_updates), LookaheadState(fast_state, steps)
    return GradientTransformation(init, update)

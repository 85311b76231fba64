"""Transformations that add weight decay or constrain the updates and parameters."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core.pytree import tree_map
from ._base import EmptyState, GradientTransformation, _const, _count0, _increment, _tree_map
from ._wrappers import masked


class WeightDecaySchedule(NamedTuple):
    """``add_decayed_weights``' state when the weight decay is a schedule: the step count.

    >>> fnx.optim.add_decayed_weights(lambda step: 0.1).init(jnp.zeros(2))
    WeightDecaySchedule(count=Array(0, dtype=int32))
    """
    count: Any


def add_decayed_weights(weight_decay=0.0, mask=None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay); ``weight_decay``
    may be a schedule. ``mask`` (a pytree of bools like params or a prefix of it, or a
    function of params giving one) limits it to some parameters.

    >>> tx = fnx.optim.add_decayed_weights(0.1)
    >>> params = {"w": jnp.array([1.0, -2.0])}
    >>> tx.update({"w": jnp.zeros(2)}, tx.init(params), params)[0]
    {'w': Array([ 0.1, -0.2], dtype=float32)}
    """
    def init(params):
        return WeightDecaySchedule(_count0()) if callable(weight_decay) else EmptyState()

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights needs params: call update(grads, state, "
                             "params)")
        if callable(weight_decay):
            rate, new_state = weight_decay(state.count), WeightDecaySchedule(
                _increment(state.count))
        else:
            rate, new_state = weight_decay, state
        if isinstance(rate, (int, float)) and rate == 0.0:
            return updates, new_state
        return _tree_map(lambda g, p: g + _const(rate, p) * p, updates, params), new_state
    tx = GradientTransformation(init, update)
    return tx if mask is None else masked(tx, mask)


def centralize() -> GradientTransformation:
    """Updates of two or more dimensions less their mean over all but the first axis.

    >>> tx = fnx.optim.centralize()
    >>> tx.update(jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), tx.init(None))[0]
    Array([[-1.,  0.,  1.],
           [-1.,  0.,  1.]], dtype=float32)
    """
    def centred(g):
        return g - g.mean(tuple(range(1, g.ndim)), keepdims=True) if g.ndim > 1 else g
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None:
                                  (tree_map(centred, updates), state))


class ZeroNansState(NamedTuple):
    """Whether the last updates held a NaN, per leaf.

    >>> fnx.optim.zero_nans().init(jnp.zeros(2)).found_nan
    Array(False, dtype=bool)
    """
    found_nan: object


def zero_nans() -> GradientTransformation:
    """NaN updates replaced by zeros; the state records, per leaf, whether one was found.

    >>> tx = fnx.optim.zero_nans()
    >>> tx.update(jnp.array([1.0, jnp.nan]), tx.init(jnp.zeros(2)))[0]
    Array([1., 0.], dtype=float32)
    """
    def init(params):
        return ZeroNansState(tree_map(lambda p: jnp.array(False), params))

    def update(updates, state, params=None):
        found = tree_map(lambda u: jnp.any(jnp.isnan(u)), updates)
        return (tree_map(lambda u: jnp.where(jnp.isnan(u), jnp.zeros_like(u), u), updates),
                ZeroNansState(found))
    return GradientTransformation(init, update)


def keep_params_nonnegative() -> GradientTransformation:
    """Updates that would make a parameter negative set it to zero instead.

    >>> tx = fnx.optim.keep_params_nonnegative()
    >>> tx.update(jnp.array([-2.0, 1.0]), tx.init(None), jnp.array([1.0, 1.0]))[0]
    Array([-1.,  1.], dtype=float32)
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("keep_params_nonnegative needs params: call update(grads, state, "
                             "params)")
        return tree_map(lambda p, u: jnp.where((p + u) < 0.0, -p, u), params, updates), state
    return GradientTransformation(lambda params: EmptyState(), update)

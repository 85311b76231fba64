"""Transformations that record measurements of the updates in the state, passing the updates
through (find them with ``tree_utils.tree_get(state, name)``)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ._base import (GradientTransformation, GradientTransformationExtraArgs, chain, stateless,
                    with_extra_args_support)
from ._transforms import ema


class SnapshotState(NamedTuple):
    """``snapshot``'s state.

    >>> SnapshotState._fields
    ('measurement',)
    """
    measurement: dict


def snapshot(measure_name: str, measure: Callable) -> GradientTransformation:
    """Store ``measure(updates)`` in the state under ``measure_name``.

    >>> opt = chain(sgd(0.1), snapshot("norm", fnx.optim.global_norm))
    >>> state = opt.init(jnp.ones(2))
    >>> _, state = opt.update(jnp.array([3.0, 4.0]), state)
    >>> fnx.optim.tree_utils.tree_get(state, "norm")
    Array(0.5, dtype=float32)
    """
    return GradientTransformation(
        lambda params: SnapshotState({measure_name: measure(params)}),
        lambda updates, state, params=None: (updates, SnapshotState(
            {measure_name: measure(updates)})))


class MonitorState(NamedTuple):
    """``monitor``'s state.

    >>> MonitorState._fields
    ('measurements', 'measure_states')
    """
    measurements: dict
    measure_states: tuple


def monitor(measures: dict) -> GradientTransformationExtraArgs:
    """Store several measurements of the updates; each is a function of the updates or a
    transformation whose output is the measurement (``measure_with_ema``).

    >>> opt = monitor({"norm": fnx.optim.global_norm})
    >>> state = opt.init(jnp.ones(2))
    >>> _, state = opt.update(jnp.array([3.0, 4.0]), state)
    >>> state.measurements["norm"]
    Array(5., dtype=float32)
    """
    measures = {name: with_extra_args_support(
        m if isinstance(m, GradientTransformation) else stateless(lambda u, _, m=m: m(u)))
        for name, m in measures.items()}

    def init(params):
        return MonitorState({}, tuple(m.init(params) for m in measures.values()))

    def update(updates, state, params=None, **extra_args):
        measurements, states = {}, []
        for (name, m), s in zip(measures.items(), state.measure_states):
            measurements[name], s = m.update(updates, s, params, **extra_args)
            states.append(s)
        return updates, MonitorState(measurements, tuple(states))
    return GradientTransformationExtraArgs(init, update)


def measure_with_ema(measure: Callable, decay: float, debias: bool = True,
                     accumulator_dtype: Any = None) -> GradientTransformationExtraArgs:
    """The exponential moving average of ``measure(updates)``, as a transformation whose output
    is the average (for :func:`monitor`).

    >>> opt = monitor({"norm_ema": measure_with_ema(fnx.optim.global_norm, 0.9)})
    """
    average = ema(decay, debias, accumulator_dtype)
    average = average._replace(init=lambda params: ema(decay, debias, accumulator_dtype)
                               .init(measure(params)))
    return chain(stateless(lambda updates, _: measure(updates)), average)

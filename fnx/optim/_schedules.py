"""Schedules: functions of the step count (a Python int or an int array, also traced)."""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ._base import Schedule


def constant_schedule(value: float) -> Schedule:
    """``value`` at every step.

    >>> fnx.optim.constant_schedule(0.1)(100)
    Array(0.1, dtype=float32)
    """
    return lambda count: jnp.asarray(value, jnp.float32)


def polynomial_schedule(init_value: float, end_value: float, power: float,
                        transition_steps: int, transition_begin: int = 0) -> Schedule:
    """From ``init_value`` to ``end_value`` along ``(1 - t)**power`` over
    ``transition_steps`` steps, starting at ``transition_begin``.

    >>> schedule = fnx.optim.polynomial_schedule(1.0, 0.0, power=2, transition_steps=10)
    >>> schedule(0), schedule(5), schedule(20)
    (Array(1., dtype=float32), Array(0.25, dtype=float32), Array(0., dtype=float32))
    """
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        c = jnp.clip(jnp.asarray(count) - transition_begin, 0, transition_steps)
        frac = 1 - c.astype(jnp.float32) / transition_steps
        return (init_value - end_value) * frac ** power + end_value
    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """Linear interpolation from ``init_value`` to ``end_value`` over ``transition_steps``.

    >>> warmup = linear_schedule(0.0, 1e-3, 100)
    """
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)``
    (floored exponent with ``staircase``), bounded by ``end_value`` if given.

    >>> lr = exponential_decay(1e-2, 1000, 0.5)
    """
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        steps = (jnp.asarray(count) - transition_begin).astype(jnp.float32)
        p = steps / transition_steps
        if staircase:
            p = jnp.floor(p)
        value = jnp.where(steps <= 0, jnp.asarray(init_value, jnp.float32),
                          init_value * jnp.power(jnp.asarray(decay_rate, jnp.float32), p))
        if end_value is not None:
            value = jnp.maximum(value, end_value) if decay_rate < 1 else \
                jnp.minimum(value, end_value)
        return value
    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """Half a cosine from ``init_value`` down to ``alpha * init_value`` over ``decay_steps``.

    >>> lr = cosine_decay_schedule(1e-3, 10_000)
    """
    if decay_steps <= 0:
        raise ValueError("cosine_decay_schedule needs decay_steps > 0")

    def schedule(count):
        c = jnp.minimum(jnp.asarray(count).astype(jnp.float32), decay_steps)
        cosine = 0.5 * (1 + jnp.cos(np.pi * c / decay_steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)
    return schedule


def join_schedules(schedules, boundaries) -> Schedule:
    """``schedules[i]`` from ``boundaries[i - 1]`` on, each counting from its boundary.

    >>> warm, rest = fnx.optim.constant_schedule(1.0), fnx.optim.constant_schedule(0.1)
    >>> schedule = fnx.optim.join_schedules([warm, rest], boundaries=[10])
    >>> schedule(5), schedule(15)
    (Array(1., dtype=float32), Array(0.1, dtype=float32))
    """
    def schedule(count):
        count = jnp.asarray(count)
        out = schedules[0](count)
        for boundary, s in zip(boundaries, schedules[1:]):
            out = jnp.where(count < boundary, out, s(count - boundary))
        return out
    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value``, then cosine decay to
    ``end_value``; ``decay_steps`` counts the warmup too, as in optax.

    >>> lr = warmup_cosine_decay_schedule(0.0, 1e-3, 100, 10_000)
    """
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha,
                                                 exponent)],
                          [warmup_steps])


def piecewise_interpolate_schedule(interpolate_type: str, init_value: float,
                                   boundaries_and_scales: dict | None = None) -> Schedule:
    """From ``init_value``, each ``{boundary: scale}`` pair multiplies the value by ``scale``
    at step ``boundary``, reached by ``interpolate_type`` ("linear" or "cosine")
    interpolation from the previous boundary.

    >>> lr = piecewise_interpolate_schedule("cosine", 1e-3, {100: 10.0, 1000: 0.01})
    """
    if interpolate_type not in ("linear", "cosine"):
        raise ValueError("`interpolate_type` must be either 'cosine' or 'linear'")
    pairs = sorted((boundaries_and_scales or {}).items())
    if any(scale < 0 for _, scale in pairs):
        raise ValueError("`piecewise_interpolate_schedule` expects non-negative scale factors")
    bounds = [0] + [b for b, _ in pairs]
    values = list(np.cumprod([init_value] + [s for _, s in pairs]))

    def schedule(count):
        count = jnp.asarray(count)
        out = jnp.asarray(values[-1], jnp.float32)
        # from the last interval back, so that the first one containing count wins
        for lo, hi, start, end in reversed(list(zip(bounds, bounds[1:], values, values[1:]))):
            pct = (count - lo).astype(jnp.float32) / max(hi - lo, 1)
            if interpolate_type == "linear":
                value = start + pct * (end - start)
            else:
                value = end + (start - end) / 2.0 * (jnp.cos(np.pi * pct) + 1)
            out = jnp.where((lo <= count) & (count < hi), value, out)
        return out
    return schedule


def linear_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3,
                             pct_final: float = 0.85, div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Schedule:
    """One cycle (Smith, 2017), linearly: up from ``peak_value / div_factor`` to
    ``peak_value`` over ``pct_start`` of ``transition_steps``, back down by ``pct_final``,
    then on down to ``peak_value / div_factor / final_div_factor``, as optax.

    >>> lr = linear_onecycle_schedule(10_000, 1e-2)
    """
    if transition_steps <= 0:
        raise ValueError("A linear onecycle schedule was set with a non-positive "
                         "`transition_steps`")
    return piecewise_interpolate_schedule("linear", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(pct_final * transition_steps): 1.0 / div_factor,
        transition_steps: 1.0 / final_div_factor})


def cosine_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3,
                             div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Schedule:
    """One cycle (Smith, 2017) with cosine phases: up from ``peak_value / div_factor`` to
    ``peak_value`` over ``pct_start`` of ``transition_steps``, then down to
    ``peak_value / div_factor / final_div_factor``, as optax.

    >>> lr = cosine_onecycle_schedule(10_000, 1e-2)
    """
    if transition_steps <= 0:
        raise ValueError("A cosine onecycle schedule was set with a non-positive "
                         "`transition_steps`")
    return piecewise_interpolate_schedule("cosine", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(transition_steps): 1.0 / (div_factor * final_div_factor)})


def piecewise_constant_schedule(init_value: float,
                                boundaries_and_scales: dict | None = None) -> Schedule:
    """``init_value``, multiplied by ``scale`` from each step ``boundary`` on, for the
    ``{boundary: scale}`` pairs.

    >>> lr = piecewise_constant_schedule(0.1, {1000: 0.1, 2000: 0.1})
    """
    pairs = sorted((boundaries_and_scales or {}).items())

    def schedule(count):
        count = jnp.asarray(count)
        value = jnp.asarray(init_value, jnp.float32)
        for boundary, factor in pairs:
            value = jnp.where(count >= boundary, value * factor, value)
        return value
    return schedule


def sgdr_schedule(cosine_kwargs):
    """Warm restarts (Loshchilov & Hutter, 2017): one warmup-cosine schedule after another,
    each given by a dict of ``warmup_cosine_decay_schedule``'s arguments.

    >>> s = fnx.optim.sgdr_schedule([dict(init_value=0.0, peak_value=1.0, warmup_steps=2,
    ...                                   decay_steps=4)] * 2)
    >>> [round(float(s(i)), 3) for i in (0, 2, 4, 6)]
    [0.0, 1.0, 0.0, 1.0]
    """
    boundaries, schedules, step = [], [], 0
    for kwargs in cosine_kwargs:
        schedules.append(warmup_cosine_decay_schedule(**kwargs))
        step += kwargs["decay_steps"]
        boundaries.append(step)
    return join_schedules(schedules, boundaries[:-1])


def warmup_constant_schedule(init_value: float, peak_value: float, warmup_steps: int):
    """A linear warmup to ``peak_value``, then constant.

    >>> s = fnx.optim.warmup_constant_schedule(0.0, 1.0, 4)
    >>> [float(s(i)) for i in (0, 2, 8)]
    [0.0, 0.5, 1.0]
    """
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           constant_schedule(peak_value)], [warmup_steps])


def warmup_exponential_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                      transition_steps: int, decay_rate: float,
                                      transition_begin: int = 0, staircase: bool = False,
                                      end_value: float | None = None):
    """A linear warmup to ``peak_value``, then ``exponential_decay`` from it.

    >>> s = fnx.optim.warmup_exponential_decay_schedule(0.0, 1.0, 2, 1, 0.5)
    >>> [float(s(i)) for i in (0, 1, 2, 3, 4)]
    [0.0, 0.5, 1.0, 0.5, 0.25]
    """
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           exponential_decay(peak_value, transition_steps, decay_rate,
                                             transition_begin, staircase, end_value)],
                          [warmup_steps])

"""The building blocks: transformations that rescale the updates (moments, signs, trust
ratios, moving averages)."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core import lax
from ..core.pytree import tree_flatten, tree_map, tree_unflatten
from ._base import (EmptyState, GradientTransformation, GradientTransformationExtraArgs,
                    Schedule, _bias_correction, _const, _count0, _increment, _moment,
                    _tree_map, _zeros_like, global_norm)
from ._factorized import _abs_sq
from ._numerics import safe_norm
from .tree_utils import tree_norm, tree_random_like


class ScaleByScheduleState(NamedTuple):
    count: Any


def scale(step_size: float) -> GradientTransformation:
    """Multiply updates by a constant.

    >>> tx = fnx.optim.scale(0.5)
    >>> tx.update({"w": jnp.array([2.0, -4.0])}, tx.init(None))[0]
    {'w': Array([ 1., -2.], dtype=float32)}
    """
    def update(updates, state, params=None):
        return _tree_map(lambda g: g * _const(step_size, g), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply updates by ``step_size_fn(count)``, count = 0, 1, 2, ...

    >>> tx = fnx.optim.scale_by_schedule(lambda count: 0.5 ** count)
    >>> state = tx.init({"w": jnp.zeros(1)})
    >>> for _ in range(2):
    ...     updates, state = tx.update({"w": jnp.ones(1)}, state)
    ...     print(updates["w"])
    [1.]
    [0.5]
    """
    def update(updates, state, params=None):
        step = step_size_fn(state.count)
        updates = _tree_map(lambda g: g * jnp.asarray(step).astype(g.dtype), updates)
        return updates, ScaleByScheduleState(_increment(state.count))
    return GradientTransformation(lambda params: ScaleByScheduleState(_count0()), update)


def scale_by_learning_rate(learning_rate, flip_sign: bool = True) -> GradientTransformation:
    """Scale by ``-learning_rate`` (a float or a schedule) so that updates descend.

    >>> tx = fnx.optim.scale_by_learning_rate(0.1)
    >>> tx.update({"w": jnp.array([1.0, -2.0])}, tx.init(None))[0]
    {'w': Array([-0.1,  0.2], dtype=float32)}
    """
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


class TraceState(NamedTuple):
    trace: Any


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t`` (or ``g + decay * t`` with
    Nesterov).

    >>> tx = fnx.optim.trace(decay=0.9)
    >>> state = tx.init({"w": jnp.zeros(1)})
    >>> for _ in range(2):
    ...     updates, state = tx.update({"w": jnp.ones(1)}, state)
    ...     print(updates["w"])
    [1.]
    [1.9]
    """
    def init(params):
        return TraceState(_zeros_like(params))

    def update(updates, state, params=None):
        new = _tree_map(lambda g, t: g + _const(decay, t) * t, updates, state.trace)
        out = _tree_map(lambda g, t: g + _const(decay, t) * t, updates, new) if nesterov else new
        return out, TraceState(new)
    return GradientTransformation(init, update)


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                  eps_root: float = 0.0, mu_dtype=None, *,
                  nesterov: bool = False) -> GradientTransformation:
    """Adam's rescaling: bias-corrected first moment over the root of the second; with
    ``nesterov``, Nadam's look-ahead first moment (Dozat, 2016), as optax computes it.

    >>> tx = fnx.optim.scale_by_adam()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 1., -1.], dtype=float32)
    """
    # the first moment kept in ``mu_dtype`` where given, as optax does
    as_mu = (lambda t: t) if mu_dtype is None else \
        (lambda t: _tree_map(lambda m: m.astype(mu_dtype), t))

    def init(params):
        return ScaleByAdamState(_count0(), as_mu(_zeros_like(params)), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, b1), updates, state.mu)
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, b2), updates, state.nu)
        count = _increment(state.count)

        def step(g, m, v):
            m_hat = m / _bias_correction(b1, count, m)
            if nesterov:
                m_hat = (_const(b1, m) * m / _bias_correction(b1, _increment(count), m)
                         + _const(1 - b1, g) * g / _bias_correction(b1, count, g))
            v_hat = v / _bias_correction(b2, count, v)
            return m_hat / (jnp.sqrt(v_hat + _const(eps_root, v)) + _const(eps, v))
        out = _tree_map(step, updates, mu, nu)
        # the second moment keeps its dtype (an integer one holds truncated floats), as optax
        nu = _tree_map(lambda v, old: v.astype(old.dtype), nu, state.nu)
        return out, ScaleByAdamState(count, as_mu(mu), nu)
    return GradientTransformation(init, update)


def scale_by_adamax(b1: float = 0.9, b2: float = 0.999,
                    eps: float = 1e-8) -> GradientTransformation:
    """Adamax's rescaling: the bias-corrected first moment over a decaying maximum of
    ``|g|``.

    >>> tx = fnx.optim.scale_by_adamax()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 1., -1.], dtype=float32)
    """
    def init(params):
        return ScaleByAdamState(_count0(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, b1), updates, state.mu)
        nu = _tree_map(lambda g, v: jnp.maximum(jnp.abs(g) + _const(eps, g), _const(b2, v) * v),
                       updates, state.nu)
        count = _increment(state.count)
        out = _tree_map(lambda m, v: m / _bias_correction(b1, count, m) / v, mu, nu)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


class ScaleByAmsgradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any
    nu_max: Any


def scale_by_amsgrad(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                     eps_root: float = 0.0) -> GradientTransformation:
    """AMSGrad's rescaling: Adam's, over the running maximum of the bias-corrected second
    moment.

    >>> tx = fnx.optim.scale_by_amsgrad()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 1., -1.], dtype=float32)
    """
    def init(params):
        return ScaleByAmsgradState(_count0(), *(_zeros_like(params) for _ in range(3)))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, b1), updates, state.mu)
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, b2), updates, state.nu)
        count = _increment(state.count)
        nu_max = _tree_map(lambda v, vm: jnp.maximum(vm, v / _bias_correction(b2, count, v)),
                           nu, state.nu_max)
        out = _tree_map(lambda m, vm: m / _bias_correction(b1, count, m)
                        / (jnp.sqrt(vm + _const(eps_root, vm)) + _const(eps, vm)), mu, nu_max)
        return out, ScaleByAmsgradState(count, mu, nu, nu_max)
    return GradientTransformation(init, update)


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: float = 0.1,
                 eps: float = 1e-7) -> GradientTransformation:
    """Adagrad's rescaling: divide by the root of the sum of all squared gradients so far.

    >>> tx = fnx.optim.scale_by_rss()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 0.8452, -0.9877], dtype=float32)
    """
    def init(params):
        return ScaleByRssState(_tree_map(lambda p: jnp.full_like(p, initial_accumulator_value),
                                         params))

    def update(updates, state, params=None):
        total = _tree_map(lambda g, t: jnp.square(g) + t, updates, state.sum_of_squares)
        out = _tree_map(lambda g, t: jnp.where(t > 0, lax.rsqrt(t + _const(eps, t)),
                                               _const(0, t)) * g, updates, total)
        return out, ScaleByRssState(total)
    return GradientTransformation(init, update)


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


def scale_by_lion(b1: float = 0.9, b2: float = 0.99) -> GradientTransformation:
    """Lion's rescaling (Chen et al., 2023): the sign of an interpolation of the momentum and
    the gradient; the momentum decays at ``b2``.

    >>> tx = fnx.optim.scale_by_lion()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 1., -1.], dtype=float32)
    """
    def init(params):
        return ScaleByLionState(_count0(), _zeros_like(params))

    def update(updates, state, params=None):
        out = _tree_map(lambda g, m: jnp.sign(_moment(g, m, b1)), updates, state.mu)
        mu = _tree_map(lambda g, m: _moment(g, m, b2), updates, state.mu)
        return out, ScaleByLionState(_increment(state.count), mu)
    return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm: float = 0.0, trust_coefficient: float = 1.0,
                         eps: float = 0.0) -> GradientTransformation:
    """LAMB's and LARS's layerwise scaling: each update times ``||param|| / ||update||`` (1
    where either norm is 0).

    >>> tx = fnx.optim.scale_by_trust_ratio()
    >>> params = {"w": jnp.array([3.0, 4.0])}
    >>> tx.update({"w": jnp.array([0.6, 0.8])}, tx.init(params), params)[0]
    {'w': Array([3., 4.], dtype=float32)}
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_trust_ratio needs params: call update(grads, state, "
                             "params)")

        def one(u, p):
            p_norm = jnp.maximum(jnp.linalg.norm(p), _const(min_norm, p))
            u_norm = jnp.maximum(jnp.linalg.norm(u), _const(min_norm, u))
            ratio = _const(trust_coefficient, p) * p_norm / (u_norm + _const(eps, u))
            return u * jnp.where((p_norm == 0) | (u_norm == 0), _const(1, p), ratio)
        return _tree_map(one, updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRmsWithCountState(NamedTuple):
    """``scale_by_rms``' state with ``bias_correction``.

    >>> ScaleByRmsWithCountState._fields
    ('count', 'nu')
    """
    count: Any
    nu: Any


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 eps_in_sqrt: bool = True, bias_correction: bool = False
                 ) -> GradientTransformation:
    """Divide by the root of a running mean of squared gradients: ``g / sqrt(nu + eps)``
    (``g / (sqrt(nu) + eps)`` without ``eps_in_sqrt``; ``nu`` bias-corrected with
    ``bias_correction``).

    >>> tx = fnx.optim.scale_by_rms()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 3.1623, -3.1623], dtype=float32)
    """
    def init(params):
        nu = _tree_map(lambda p: jnp.full_like(p, initial_scale), params)
        return ScaleByRmsWithCountState(_count0(), nu) if bias_correction else ScaleByRmsState(nu)

    def update(updates, state, params=None):
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, decay), updates, state.nu)
        if bias_correction:
            count = _increment(state.count)
            nu_hat = _tree_map(lambda v: v / _bias_correction(decay, count, v), nu)
        else:
            nu_hat = nu
        if eps_in_sqrt:
            out = _tree_map(lambda g, v: g * lax.rsqrt(v + _const(eps, v)), updates, nu_hat)
        else:
            out = _tree_map(lambda g, v: g / (jnp.sqrt(v) + _const(eps, v)), updates, nu_hat)
        new_state = ScaleByRmsWithCountState(count, nu) if bias_correction else ScaleByRmsState(nu)
        return out, new_state
    return GradientTransformation(init, update)


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRStdDevWithCountState(NamedTuple):
    """``scale_by_stddev``'s state with ``bias_correction``.

    >>> ScaleByRStdDevWithCountState._fields
    ('count', 'mu', 'nu')
    """
    count: Any
    mu: Any
    nu: Any


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                    eps_in_sqrt: bool = True, bias_correction: bool = False
                    ) -> GradientTransformation:
    """Centred RMS: divide by the root of the running variance of the gradients
    (``eps`` added outside the root without ``eps_in_sqrt``; moments bias-corrected with
    ``bias_correction``).

    >>> tx = fnx.optim.scale_by_stddev()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 3.3333, -3.3333], dtype=float32)
    """
    def init(params):
        mu = _zeros_like(params)
        nu = _tree_map(lambda p: jnp.full_like(p, initial_scale), params)
        return ScaleByRStdDevWithCountState(_count0(), mu, nu) if bias_correction else \
            ScaleByRStdDevState(mu, nu)

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, decay), updates, state.mu)
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, decay), updates, state.nu)
        mu_hat, nu_hat = mu, nu
        if bias_correction:
            count = _increment(state.count)
            mu_hat = _tree_map(lambda m: m / _bias_correction(decay, count, m), mu)
            nu_hat = _tree_map(lambda v: v / _bias_correction(decay, count, v), nu)
        if eps_in_sqrt:
            out = _tree_map(lambda g, m, v: g * lax.rsqrt(v - jnp.square(m) + _const(eps, v)),
                            updates, mu_hat, nu_hat)
        else:
            out = _tree_map(lambda g, m, v: g / (jnp.sqrt(v - jnp.square(m)) + _const(eps, v)),
                            updates, mu_hat, nu_hat)
        if bias_correction:
            return out, ScaleByRStdDevWithCountState(count, mu, nu)
        return out, ScaleByRStdDevState(mu, nu)
    return GradientTransformation(init, update)


class ScaleByBeliefState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def _nesterov_mu_hat(mu, updates, b1, count):
    """Nadam's look-ahead first moment, bias-corrected, as optax computes it."""
    return _tree_map(lambda m, g: _const(b1, m) * m / _bias_correction(b1, _increment(count), m)
                     + _const(1 - b1, g) * g / _bias_correction(b1, count, g), mu, updates)


def scale_by_radam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                   eps_root: float = 0.0, threshold: float = 5.0, *,
                   nesterov: bool = False) -> GradientTransformation:
    """RAdam's rescaling (Liu et al., 2020): Adam's step times the variance rectification
    ``r``, once the length ``rho`` of the approximated simple moving average reaches
    ``threshold``; before that, the bias-corrected momentum alone.

    >>> tx = fnx.optim.scale_by_radam()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 0.5, -2. ], dtype=float32)
    """
    rho_inf = 2.0 / (1.0 - b2) - 1.0

    def init(params):
        return ScaleByAdamState(_count0(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, b1), updates, state.mu)
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, b2), updates, state.nu)
        count = _increment(state.count)
        t = count.astype(jnp.float32)
        b2t = jnp.power(jnp.float32(b2), t)
        rho = rho_inf - 2 * t * b2t / (1 - b2t)
        r = jnp.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        mu_hat = _nesterov_mu_hat(mu, updates, b1, count) if nesterov else \
            _tree_map(lambda m: m / _bias_correction(b1, count, m), mu)

        def step(m, v):
            v_hat = v / _bias_correction(b2, count, v)
            rectified = r.astype(m.dtype) * m / (jnp.sqrt(v_hat + _const(eps_root, v))
                                                 + _const(eps, v))
            return jnp.where(rho >= threshold, rectified, m)
        return _tree_map(step, mu_hat, nu), ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_belief(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16,
                    eps_root: float = 1e-16, *, nesterov: bool = False) -> GradientTransformation:
    """AdaBelief's rescaling (Zhuang et al., 2020): Adam's, with the second moment of the
    gradient's deviation from its running mean (the "belief") instead of the gradient's.

    >>> tx = fnx.optim.scale_by_belief()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 1.1111, -1.1111], dtype=float32)
    """
    def init(params):
        return ScaleByBeliefState(_count0(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, b1), updates, state.mu)
        nu = _tree_map(lambda g, m, v: _moment(jnp.square(g - m), v, b2) + _const(eps_root, v),
                       updates, mu, state.nu)
        count = _increment(state.count)
        mu_hat = _nesterov_mu_hat(mu, updates, b1, count) if nesterov else \
            _tree_map(lambda m: m / _bias_correction(b1, count, m), mu)
        out = _tree_map(lambda m, v: m / (jnp.sqrt(v / _bias_correction(b2, count, v))
                                          + _const(eps, v)), mu_hat, nu)
        return out, ScaleByBeliefState(count, mu, nu)
    return GradientTransformation(init, update)


class EmaState(NamedTuple):
    """``ema``'s state: the step ``count`` and the moving average ``ema`` of the updates.

    >>> fnx.optim.ema(0.9).init({"w": jnp.zeros(2)})
    EmaState(count=Array(0, dtype=int32), ema={'w': Array([0., 0.], dtype=float32)})
    """
    count: Any
    ema: Any


def ema(decay: float, debias: bool = True, accumulator_dtype=None) -> GradientTransformation:
    """The updates' exponential moving average (bias-corrected with ``debias``), kept in
    ``accumulator_dtype`` if given.

    >>> opt = chain(ema(0.9), sgd(0.1))
    """
    def init(params):
        zeros = _zeros_like(params)
        if accumulator_dtype is not None:
            zeros = _tree_map(lambda z: z.astype(accumulator_dtype), zeros)
        return EmaState(_count0(), zeros)

    def update(updates, state, params=None):
        new = _tree_map(lambda g, e: _moment(g, e.astype(g.dtype), decay), updates, state.ema)
        count = _increment(state.count)
        out = _tree_map(lambda e: e / _bias_correction(decay, count, e), new) if debias else new
        if accumulator_dtype is not None:
            new = _tree_map(lambda e: e.astype(accumulator_dtype), new)
        return out, EmaState(count, new)
    return GradientTransformation(init, update)


def _safe_rms(x, min_rms):
    rms = jnp.sqrt(jnp.mean(_abs_sq(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)   # a finite gradient at zero, as optax
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(_abs_sq(x))))


def scale_by_param_block_rms(min_scale: float = 1e-3) -> GradientTransformation:
    """Scale each update leaf by its parameter's root mean square (at least ``min_scale``).

    >>> opt = chain(scale_by_param_block_rms(), scale(-1e-2))
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_param_block_rms needs the parameters: "
                             "update(updates, state, params)")
        leaves, tree = tree_flatten(updates)
        ps = tree_flatten(params)[0]
        return tree_unflatten(tree, [u * _safe_rms(p, min_scale)
                                     for u, p in zip(leaves, ps)]), state
    return GradientTransformation(lambda params: EmptyState(), update)



def scale_by_sign() -> GradientTransformation:
    """The sign of each update.

    >>> tx = fnx.optim.scale_by_sign()
    >>> tx.update({"w": jnp.array([0.5, -2.0, 0.0])}, tx.init(None))[0]
    {'w': Array([ 1., -1.,  0.], dtype=float32)}
    """
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None:
                                  (tree_map(jnp.sign, updates), state))


def scale_by_yogi(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-3, eps_root: float = 0.0,
                  initial_accumulator_value: float = 1e-6) -> GradientTransformation:
    """Yogi's rescaling: Adam's, with an additive update of the second moment.

    >>> tx = fnx.optim.scale_by_yogi()
    >>> params = {"w": jnp.zeros(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params))[0]["w"], 3)
    Array([ 0.996, -0.999], dtype=float32)
    """
    def init(params):
        full = lambda p: jnp.full_like(p, initial_accumulator_value)
        return ScaleByAdamState(_count0(), tree_map(full, params), tree_map(full, params))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, b1), updates, state.mu)
        nu = _tree_map(lambda g, v: v - _const(1 - b2, v) * jnp.sign(v - g * g) * (g * g),
                       updates, state.nu)
        count = _increment(state.count)
        out = _tree_map(lambda m, v: (m / _bias_correction(b1, count, m)) / (
            jnp.sqrt(v / _bias_correction(b2, count, v) + _const(eps_root, v)) + _const(eps, v)),
            mu, nu)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


class ScaleByAdaDeltaState(NamedTuple):
    """Adadelta's running means of squared gradients and of squared updates.

    >>> fnx.optim.scale_by_adadelta().init(jnp.zeros(2)).e_x
    Array([0., 0.], dtype=float32)
    """
    e_g: object
    e_x: object


def scale_by_adadelta(rho: float = 0.9, eps: float = 1e-6) -> GradientTransformation:
    """Adadelta's rescaling: the root of the mean squared update over that of the gradient.

    >>> tx = fnx.optim.scale_by_adadelta()
    >>> params = {"w": jnp.zeros(2)}
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params))[0]["w"].shape
    (2,)
    """
    def init(params):
        return ScaleByAdaDeltaState(_zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        e_g = _tree_map(lambda g, m: _moment(g * g, m, rho), updates, state.e_g)
        out = _tree_map(lambda g, cur, prev: jnp.sqrt(prev + _const(eps, prev))
                        / jnp.sqrt(cur + _const(eps, cur)) * g, updates, e_g, state.e_x)
        e_x = _tree_map(lambda u, m: _moment(u * u, m, rho), out, state.e_x)
        return out, ScaleByAdaDeltaState(e_g, e_x)
    return GradientTransformation(init, update)


def scale_by_param_block_norm(min_scale: float = 1e-3) -> GradientTransformation:
    """Each update times the l2 norm of its parameter block (at least ``min_scale``).

    >>> tx = scale_by_param_block_norm()
    >>> tx.update(jnp.ones(2), tx.init(None), jnp.array([3.0, 4.0]))[0]
    Array([5., 5.], dtype=float32)
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_param_block_norm needs params: call update(grads, "
                             "state, params)")
        return _tree_map(lambda u, p: u * safe_norm(p, min_scale), updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)


def normalize_by_update_norm(scale_factor: float = 1.0, eps: float = 1e-6) -> GradientTransformation:
    """The updates divided by their global l2 norm (plus ``eps``), times ``scale_factor``.

    >>> tx = normalize_by_update_norm()
    >>> tx.update(jnp.array([3.0, 4.0]), tx.init(None))[0].round(4)
    Array([0.6, 0.8], dtype=float32)
    """
    def update(updates, state, params=None):
        g_norm = (global_norm(updates) + eps) / scale_factor
        return _tree_map(lambda g: g / g_norm, updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


class ScaleByAdanState(NamedTuple):
    """``scale_by_adan``'s state: the moments ``m``, ``v``, ``n``, the last gradient ``g`` and
    the step ``t``.

    >>> ScaleByAdanState._fields
    ('m', 'v', 'n', 'g', 't')
    """
    m: Any
    v: Any
    n: Any
    g: Any
    t: Any


def scale_by_adan(b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8,
                  eps_root: float = 0.0) -> GradientTransformation:
    """Adan's rescaling (Xie et al., 2022): moments of the gradients, of their differences
    and of the squared corrected gradient.

    >>> tx = scale_by_adan()
    >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0].round(4)
    Array([1.], dtype=float32)
    """
    def init(params):
        z = _zeros_like(params)
        return ScaleByAdanState(z, z, z, z, _count0())

    def update(updates, state, params=None):
        first = state.t == 0
        diff = _tree_map(lambda g, prev: jnp.where(first, jnp.zeros_like(g), g - prev),
                         updates, state.g)
        m = _tree_map(lambda g, t: _moment(g, t, b1), updates, state.m)
        v = _tree_map(lambda d, t: _moment(d, t, b2), diff, state.v)
        n = _tree_map(lambda g, d, t: _moment(jnp.square(g + _const(1 - b2, d) * d), t, b3),
                      updates, diff, state.n)
        t = _increment(state.t)

        def step(m, v, n):
            m_hat = m / _bias_correction(b1, t, m)
            v_hat = v / _bias_correction(b2, t, v)
            n_hat = n / _bias_correction(b3, t, n)
            return (m_hat + _const(1 - b2, v) * v_hat) / (jnp.sqrt(n_hat + eps_root) + eps)
        return _tree_map(step, m, v, n), ScaleByAdanState(m, v, n, updates, t)
    return GradientTransformation(init, update)


class ScaleByRpropState(NamedTuple):
    """``scale_by_rprop``'s state: the per-entry ``step_sizes`` and the previous updates.

    >>> ScaleByRpropState._fields
    ('step_sizes', 'prev_updates')
    """
    step_sizes: Any
    prev_updates: Any


def scale_by_rprop(learning_rate: float, eta_minus: float = 0.5, eta_plus: float = 1.2,
                   min_step_size: float = 1e-6,
                   max_step_size: float = 50.0) -> GradientTransformation:
    """Rprop's rescaling: a step size per entry, grown by ``eta_plus`` while the gradient
    keeps its sign and shrunk by ``eta_minus`` when it flips (that step is skipped).

    >>> tx = scale_by_rprop(0.1)
    >>> tx.update(jnp.array([2.0, -3.0]), tx.init(jnp.zeros(2)))[0]
    Array([ 0.1, -0.1], dtype=float32)
    """
    def init(params):
        return ScaleByRpropState(_tree_map(lambda p: jnp.full_like(p, learning_rate), params),
                                 _zeros_like(params))

    def update(updates, state, params=None):
        sign = _tree_map(lambda g, prev: g * prev, updates, state.prev_updates)
        step_sizes = _tree_map(
            lambda s, size: jnp.where(s == 0, size, jnp.clip(
                size * jnp.where(s > 0, eta_plus, eta_minus), min_step_size, max_step_size)),
            sign, state.step_sizes)
        prev = _tree_map(lambda s, g, size: jnp.where(s < 0, jnp.zeros_like(g),
                                                      size * jnp.sign(g)),
                         sign, updates, step_sizes)
        out = _tree_map(lambda s, new, old: jnp.where(s < 0, jnp.zeros_like(old), new),
                        sign, prev, state.prev_updates)
        return out, ScaleByRpropState(step_sizes, prev)
    return GradientTransformation(init, update)


class ScaleBySM3State(NamedTuple):
    """``scale_by_sm3``'s state: ``mu`` (one accumulator per axis of each parameter) and the
    momentum ``nu``.

    >>> ScaleBySM3State._fields
    ('mu', 'nu')
    """
    mu: Any
    nu: Any


def scale_by_sm3(b1: float = 0.9, b2: float = 1.0, eps: float = 1e-8) -> GradientTransformation:
    """SM3's rescaling (Anil et al., 2019): second moments kept as one vector per axis (their
    minimum covers each entry), so the memory is linear in the sides.

    >>> tx = scale_by_sm3()
    >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0]
    Array([0.1], dtype=float32)
    """
    def init(params):
        mu = tree_map(lambda p: [jnp.zeros((p.shape[i],), p.dtype) for i in range(p.ndim)],
                      params)
        return ScaleBySM3State(mu, _zeros_like(params))

    def accumulate(g, v):
        c0 = (1.0 - b2) if b2 != 1.0 else 1.0
        prior = v[0] if g.ndim < 2 else functools.reduce(jnp.minimum, v)
        return c0 * g ** 2 + b2 * prior

    def update(updates, state, params=None):
        mu = tree_map(lambda g, v: [jnp.reshape(v[i], [1] * i + [g.shape[i]]
                                                + [1] * (g.ndim - i - 1))
                                    for i in range(g.ndim)], updates, state.mu)
        accum = tree_map(accumulate, updates, mu)
        inv = tree_map(lambda t: jnp.where(t > 0, lax.rsqrt(t + eps), 0.0), accum)
        up = tree_map(lambda g, a: g * a, updates, inv)
        nu = tree_map(lambda u, n: (1 - b1) * u + b1 * n, up, state.nu)
        mu = tree_map(lambda a: [a if a.ndim < 2 else jnp.max(
            a, axis=tuple(j for j in range(a.ndim) if j != i)) for i in range(a.ndim)], accum)
        return nu, ScaleBySM3State(mu, nu)
    return GradientTransformation(init, update)


class ScaleByNovogradState(NamedTuple):
    """``scale_by_novograd``'s state: the step ``count``, the momentum ``mu`` and ``nu``, one
    squared-gradient-norm average per parameter block.

    >>> ScaleByNovogradState._fields
    ('count', 'mu', 'nu')
    """
    count: Any
    mu: Any
    nu: Any


def scale_by_novograd(b1: float = 0.9, b2: float = 0.25, eps: float = 1e-8,
                      eps_root: float = 0.0, weight_decay: float = 0.0,
                      mu_dtype=None) -> GradientTransformation:
    """NovoGrad's rescaling (Ginsburg et al., 2019): each block's gradient divided by a
    moving average of its squared norm, plus weight decay, then momentum.

    >>> tx = scale_by_novograd()
    >>> tx.update(jnp.array([3.0, 4.0]), tx.init(jnp.zeros(2)), jnp.zeros(2))[0]
    Array([0.6, 0.8], dtype=float32)
    """
    def init(params):
        mu = _tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
        nu = _tree_map(lambda p: jnp.zeros((), jnp.asarray(p).dtype), params)
        return ScaleByNovogradState(_count0(), mu, nu)

    def update(updates, state, params=None):
        count = _increment(state.count)
        first = count == 1
        nu = _tree_map(lambda g, n: jnp.where(
            first, jnp.sum(jnp.square(g)).astype(n.dtype),
            _moment(jnp.sum(jnp.square(g)), n, b2)), updates, state.nu)
        mu = _tree_map(lambda g, p, n, m: (lambda u: jnp.where(first, u, b1 * m + u))(
            g / (jnp.sqrt(n + eps_root) + eps) + weight_decay * p).astype(m.dtype),
            updates, params, nu, state.mu)
        return mu, ScaleByNovogradState(count, mu, nu)
    return GradientTransformation(init, update)


class ScaleByOptimisticGradientState(NamedTuple):
    """``scale_by_optimistic_gradient``'s state.

    >>> ScaleByOptimisticGradientState._fields
    ('is_initial_step', 'previous_gradient')
    """
    is_initial_step: Any
    previous_gradient: Any


def scale_by_optimistic_gradient(alpha: float = 1.0, beta: float = 1.0) -> GradientTransformation:
    """Optimistic gradients: ``(alpha + beta) * g - beta * g_previous``.

    >>> tx = scale_by_optimistic_gradient()
    >>> state = tx.init(jnp.zeros(1))
    >>> _, state = tx.update(jnp.array([1.0]), state)
    >>> tx.update(jnp.array([3.0]), state)[0]
    Array([5.], dtype=float32)
    """
    def init(params):
        return ScaleByOptimisticGradientState(jnp.asarray(True), _zeros_like(params))

    def update(updates, state, params=None):
        def f(g, prev):
            prev = jnp.where(state.is_initial_step, g, prev)
            return (alpha + beta) * g - beta * prev
        return (_tree_map(f, updates, state.previous_gradient),
                ScaleByOptimisticGradientState(jnp.asarray(False), updates))
    return GradientTransformation(init, update)


class ScaleByDistanceOverGradientsState(NamedTuple):
    """``scale_by_distance_over_gradients``' state.

    >>> ScaleByDistanceOverGradientsState._fields
    ('max_dist', 'grad_sum_of_squares', 'init_params')
    """
    max_dist: Any
    grad_sum_of_squares: Any
    init_params: Any


def scale_by_distance_over_gradients(reps_rel=1e-6, eps=1e-8, param_dtype=jnp.float32,
                                     global_scale=1.0) -> GradientTransformation:
    """Layer-wise DoG (Ivgi et al., 2023): the step of each block is the largest distance
    travelled from the initial parameters over the root of the summed squared gradients.

    >>> tx = scale_by_distance_over_gradients()
    >>> p = jnp.zeros(1)
    >>> tx.update(jnp.array([2.0]), tx.init(p), p)[0]
    Array([1.e-06], dtype=float32)
    """
    def l2(x, y=0.0):
        return jnp.sqrt(jnp.square(x - y).sum())

    def init(params):
        return ScaleByDistanceOverGradientsState(
            tree_map(lambda x: reps_rel * (1 + l2(x)), params),
            tree_map(lambda x: jnp.zeros(1), params),
            tree_map(lambda x: x.astype(param_dtype), params))

    def update(updates, state, params=None):
        max_dist = tree_map(lambda d, x, y: jnp.maximum(d, l2(x, y)), state.max_dist, params,
                            state.init_params)
        g_sos = tree_map(lambda s, g: s + jnp.square(g).sum(), state.grad_sum_of_squares,
                         updates)
        out = tree_map(lambda g, d, s: global_scale * (d / jnp.sqrt(s + eps)) * g, updates,
                       max_dist, g_sos)
        return out, ScaleByDistanceOverGradientsState(max_dist, g_sos, state.init_params)
    return GradientTransformation(init, update)


def scale_by_polyak(f_min: float = 0.0, max_learning_rate: float = 1.0, eps: float = 0.0,
                    variant: str = "sps"):
    """Polyak's step size: the updates times ``min((value - f_min) / |g|^2,
    max_learning_rate)``, for the loss ``value`` given to ``update`` (``variant="sps+"``
    clips a negative gap to 0).

    >>> tx = scale_by_polyak()
    >>> tx.update(jnp.array([2.0]), tx.init(None), value=0.5)[0]
    Array([0.25], dtype=float32)
    """
    if variant not in ("sps", "sps+"):
        raise ValueError(f"scale_by_polyak: variant must be 'sps' or 'sps+', got {variant!r}")

    def update(updates, state, params=None, *, value, **extra_args):
        sq = tree_norm(updates, squared=True)
        gap = jnp.asarray(value - f_min).astype(sq.dtype)
        if variant == "sps+":
            gap = jnp.maximum(gap, 0)
        tiny = float(jnp.finfo(jnp.asarray(1.0).dtype).eps)
        step = jnp.where(sq + eps <= tiny, 0.0, jnp.minimum(gap / (sq + eps), max_learning_rate))
        return _tree_map(lambda g: step * g, updates), state
    return GradientTransformationExtraArgs(lambda params: EmptyState(), update)


class ApplyEvery(NamedTuple):
    """``apply_every``'s state: the step ``count`` and the accumulated gradients.

    >>> ApplyEvery._fields
    ('count', 'grad_acc')
    """
    count: Any
    grad_acc: Any


def apply_every(k: int = 1) -> GradientTransformation:
    """Accumulate the updates and emit their sum every ``k`` steps (zeros in between).

    >>> tx = apply_every(2)
    >>> state = tx.init(jnp.zeros(1))
    >>> u, state = tx.update(jnp.ones(1), state)
    >>> tx.update(jnp.ones(1), state)[0]
    Array([2.], dtype=float32)
    """
    def init(params):
        return ApplyEvery(_count0(), _zeros_like(params))

    def update(updates, state, params=None):
        c = state.count % k
        acc = c != 0
        grad_acc = _tree_map(lambda g, ga: acc * ga + g, updates, state.grad_acc)
        emit = c == (k - 1)
        return (_tree_map(lambda ga: emit * ga, grad_acc),
                ApplyEvery(_increment(state.count) % k, grad_acc))
    return GradientTransformation(init, update)


class AddNoiseState(NamedTuple):
    """``add_noise``'s state: the step ``count`` and the random key.

    >>> AddNoiseState._fields
    ('count', 'rng_key')
    """
    count: Any
    rng_key: Any


def add_noise(eta: float, gamma: float, key=None, *, seed=None) -> GradientTransformation:
    """Gaussian noise of variance ``eta / (1 + t) ** gamma`` added to the updates
    (Neelakantan et al., 2015); ``key`` a PRNG key or an int seed.

    >>> tx = add_noise(0.01, 0.55, key=0)
    >>> tx.update(jnp.zeros(3), tx.init(None))[0].shape
    (3,)
    """
    from .. import random
    key = seed if key is None else key
    key = 0 if key is None else key

    def init(params):
        k = random.PRNGKey(key) if isinstance(key, int) else key
        return AddNoiseState(_count0(), k)

    def update(updates, state, params=None):
        count = _increment(state.count)
        std = jnp.sqrt(eta / count.astype(jnp.float32) ** gamma)
        rng_key, sample_key = random.split(state.rng_key)
        noise = tree_random_like(sample_key, updates)
        return (_tree_map(lambda g, z: g + std.astype(g.dtype) * z, updates, noise),
                AddNoiseState(count, rng_key))
    return GradientTransformation(init, update)

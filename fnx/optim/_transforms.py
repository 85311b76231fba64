"""The building blocks: transformations that rescale the updates (moments, signs, trust
ratios, moving averages)."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core import lax
from ..core.pytree import tree_flatten, tree_map, tree_unflatten
from ._base import (EmptyState, GradientTransformation, Schedule, _bias_correction, _const,
                    _count0, _increment, _moment, _tree_map, _zeros_like)
from ._factorized import _abs_sq


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


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8,
                 initial_scale: float = 0.0) -> GradientTransformation:
    """Divide by the root of a running mean of squared gradients: ``g / sqrt(nu + eps)``.

    >>> tx = fnx.optim.scale_by_rms()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 3.1623, -3.1623], dtype=float32)
    """
    def init(params):
        return ScaleByRmsState(_tree_map(lambda p: jnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, decay), updates, state.nu)
        out = _tree_map(lambda g, v: g * lax.rsqrt(v + _const(eps, v)), updates, nu)
        return out, ScaleByRmsState(nu)
    return GradientTransformation(init, update)


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8,
                    initial_scale: float = 0.0) -> GradientTransformation:
    """Centred RMS: divide by the root of the running variance of the gradients.

    >>> tx = fnx.optim.scale_by_stddev()
    >>> params = {"w": jnp.zeros(2)}
    >>> updates, state = tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)
    >>> jnp.round(updates["w"], 4)
    Array([ 3.3333, -3.3333], dtype=float32)
    """
    def init(params):
        return ScaleByRStdDevState(_zeros_like(params),
                                   _tree_map(lambda p: jnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        mu = _tree_map(lambda g, m: _moment(g, m, decay), updates, state.mu)
        nu = _tree_map(lambda g, v: _moment(jnp.square(g), v, decay), updates, state.nu)
        out = _tree_map(lambda g, m, v: g * lax.rsqrt(v - jnp.square(m) + _const(eps, v)),
                        updates, mu, nu)
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

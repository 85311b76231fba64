"""More of optax's transformations, optimizers and schedules, composed from fnx.optim's own
(optax's definitions, step for step, so a ported program gets optax's numbers)."""
from __future__ import annotations

import functools
from typing import NamedTuple

from .. import numpy as jnp
from ..core.pytree import tree_map
from . import (EmptyState, GradientTransformation, ScaleByAdamState, _bias_correction, _const,
               _count0, _increment, _moment, _tree_map, _zeros_like, add_decayed_weights,
               adamw, chain, ema, exponential_decay, join_schedules, linear_schedule,
               scale_by_adamax, scale_by_learning_rate, constant_schedule,
               cosine_decay_schedule)


def scale_by_sign() -> GradientTransformation:
    """The sign of each update.

    >>> tx = fnx.optim.scale_by_sign()
    >>> tx.update({"w": jnp.array([0.5, -2.0, 0.0])}, tx.init(None))[0]
    {'w': Array([ 1., -1.,  0.], dtype=float32)}
    """
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None:
                                  (tree_map(jnp.sign, updates), state))


def sign_sgd(learning_rate) -> GradientTransformation:
    """SGD on the signs of the gradients (Bernstein et al., 2018).

    >>> tx = fnx.optim.sign_sgd(0.1)
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(None))[0]
    {'w': Array([-0.1,  0.1], dtype=float32)}
    """
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def signum(learning_rate, beta: float = 0.9, accumulator_dtype=None) -> GradientTransformation:
    """SGD on the signs of a moving average of the gradients.

    >>> tx = fnx.optim.signum(0.1)
    >>> params = {"w": jnp.zeros(2)}
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params))[0]
    {'w': Array([-0.1,  0.1], dtype=float32)}
    """
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), scale_by_sign(),
                 scale_by_learning_rate(learning_rate))


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


def yogi(learning_rate, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-3) -> GradientTransformation:
    """The Yogi optimizer (Zaheer et al., 2018).

    >>> tx = fnx.optim.yogi(0.1)
    >>> params = {"w": jnp.zeros(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params))[0]["w"], 3)
    Array([-0.1,  0.1], dtype=float32)
    """
    return chain(scale_by_yogi(b1=b1, b2=b2, eps=eps), scale_by_learning_rate(learning_rate))


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


def adadelta(learning_rate=None, rho: float = 0.9, eps: float = 1e-6,
             weight_decay: float = 0.0, weight_decay_mask=None) -> GradientTransformation:
    """The Adadelta optimizer (Zeiler, 2012); without a learning rate, its own step.

    >>> tx = fnx.optim.adadelta(1.0)
    >>> params = {"w": jnp.zeros(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)[0]["w"], 4)
    Array([-0.0032,  0.0032], dtype=float32)
    """
    lr = [] if learning_rate is None else [scale_by_learning_rate(learning_rate)]
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 scale_by_adadelta(rho=rho, eps=eps), *lr)


def adamaxw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
            weight_decay: float = 1e-4, mask=None) -> GradientTransformation:
    """Adamax with decoupled weight decay.

    >>> tx = fnx.optim.adamaxw(0.1)
    >>> params = {"w": jnp.ones(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)[0]["w"], 4)
    Array([-0.1,  0.1], dtype=float32)
    """
    return chain(scale_by_adamax(b1=b1, b2=b2, eps=eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def nadamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
           eps_root: float = 0.0, mu_dtype=None, weight_decay: float = 1e-4,
           mask=None) -> GradientTransformation:
    """AdamW with Nesterov's momentum (optax's ``adamw(..., nesterov=True)``).

    >>> tx = fnx.optim.nadamw(0.1)
    >>> params = {"w": jnp.ones(2)}
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)[0]["w"].shape
    (2,)
    """
    return adamw(learning_rate, b1=b1, b2=b2, eps=eps, eps_root=eps_root,
                 weight_decay=weight_decay, mask=mask, nesterov=True)


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


def sgdr_schedule(cosine_kwargs):
    """Warm restarts (Loshchilov & Hutter, 2017): one warmup-cosine schedule after another,
    each given by a dict of ``warmup_cosine_decay_schedule``'s arguments.

    >>> s = fnx.optim.sgdr_schedule([dict(init_value=0.0, peak_value=1.0, warmup_steps=2,
    ...                                   decay_steps=4)] * 2)
    >>> [round(float(s(i)), 3) for i in (0, 2, 4, 6)]
    [0.0, 1.0, 0.0, 1.0]
    """
    from . import warmup_cosine_decay_schedule
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


def safe_norm(x, min_norm, ord=None, axis=None, keepdims=False):  # noqa: A002
    """``max(norm(x), min_norm)``, with a gradient that is finite (zero) where the norm is
    below ``min_norm``.

    >>> fnx.grad(lambda x: fnx.optim.safe_norm(x, 1e-6))(jnp.zeros(2))
    Array([0., 0.], dtype=float32)
    """
    norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    x = jnp.where(norm <= min_norm, jnp.ones_like(x), x)
    norm = jnp.squeeze(norm, axis=axis) if not keepdims else norm
    masked = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return jnp.where(norm <= min_norm, min_norm, masked)


def safe_root_mean_squares(x, min_rms):
    """``max(sqrt(mean(x ** 2)), min_rms)`` with a finite gradient.

    >>> fnx.optim.safe_root_mean_squares(jnp.array([3.0, 4.0]), 1e-6)
    Array(3.535534, dtype=float32)
    """
    rms = jnp.sqrt(jnp.mean(jnp.square(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(jnp.square(x))))


def safe_increment(count):
    """``count + 1``, saturating at the largest value of its dtype (no wrap-around).

    >>> fnx.optim.safe_increment(jnp.array(2147483647, jnp.int32))
    Array(2147483647, dtype=int32)
    """
    count = jnp.asarray(count)
    if jnp.issubdtype(count.dtype, jnp.integer):
        top = jnp.iinfo(count.dtype).max
    else:
        top = jnp.finfo(count.dtype).max
    one = jnp.array(1, count.dtype)
    return jnp.where(count < top, count + one, jnp.array(top, count.dtype))


safe_int32_increment = safe_increment

__all__ = ["scale_by_sign", "sign_sgd", "signum", "scale_by_yogi", "yogi",
           "ScaleByAdaDeltaState", "scale_by_adadelta", "adadelta", "adamaxw", "nadamw",
           "centralize", "ZeroNansState", "zero_nans", "keep_params_nonnegative",
           "sgdr_schedule", "warmup_constant_schedule", "warmup_exponential_decay_schedule",
           "safe_norm", "safe_root_mean_squares", "safe_increment", "safe_int32_increment"]
del functools, cosine_decay_schedule

"""fnx.optim: gradient transformations in optax's style.

An optimizer is a ``GradientTransformation(init, update)``: ``state = opt.init(params)``, then
``updates, state = opt.update(grads, state, params)`` and ``params = apply_updates(params,
updates)``. Transformations compose with ``chain``; learning rates are floats or schedules
(functions of the step count). Parameters, gradients and states are pytrees (modules included),
and everything is built from fnx.numpy, so an update runs under ``jit``.

>>> import fnx, fnx.optim as optim
>>> import fnx.numpy as jnp
>>> def loss(params, x, y):
...     return jnp.mean((x @ params["w"] - y) ** 2)
>>> params = {"w": jnp.zeros(2)}
>>> x, y = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([1.0, 2.0])
>>> opt = optim.adam(1e-3)
>>> state = opt.init(params)
>>> grads = fnx.grad(loss)(params, x, y)
>>> updates, state = opt.update(grads, state, params)
>>> params = optim.apply_updates(params, updates)
>>> params["w"]
Array([0.00099999, 0.00099999], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.control_flow import cond
from ..core.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten

Schedule = Callable[[Any], Any]


class GradientTransformation(NamedTuple):
    """A pair of pure functions: ``init(params) -> state`` and
    ``update(updates, state, params=None) -> (updates, state)``.

    >>> def init(params):
    ...     return fnx.optim.EmptyState()
    >>> def update(updates, state, params=None):
    ...     return fnx.tree_util.tree_map(lambda g: 2 * g, updates), state
    >>> double = fnx.optim.GradientTransformation(init, update)
    >>> double.update({"w": jnp.ones(2)}, double.init(None))[0]
    {'w': Array([2., 2.], dtype=float32)}
    """
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none (``scale``, ``clip``, ...).

    >>> fnx.optim.scale(0.1).init({"w": jnp.zeros(2)})
    EmptyState()
    """
    pass


def _is_none(x):
    return x is None


def _tree_map(f, tree, *rest):
    # None leaves (e.g. a Linear without bias) stay None
    return tree_map(lambda x, *r: None if x is None else f(x, *r), tree, *rest, is_leaf=_is_none)


def _zeros_like(tree):
    return _tree_map(jnp.zeros_like, tree)


def _count0():
    return jnp.zeros((), jnp.int32)


def _increment(count):
    # saturates instead of wrapping, as optax's safe_increment
    return jnp.where(count < np.iinfo(np.int32).max, count + 1, count)


def _const(value, like):
    """``value`` as a 0-d array of ``like``'s dtype, exactly: a weak Python float would pass
    through float32 first. An array ``value`` (a hyperparameter that ``inject_hyperparams``
    holds in the state, traced under jit) is cast. A float ``value`` meeting an integer
    ``like`` is of the default float dtype, where JAX's weak typing puts ``0.1 * int_array``
    (optax's moments of integer parameters are floats)."""
    dtype = np.dtype(like.dtype)
    if isinstance(value, (float, np.floating)) and not dtypes.is_float(dtype):
        dtype = dtypes.default_float
    if not isinstance(value, (int, float, np.number, np.ndarray)):
        return jnp.asarray(value).astype(dtype)
    return lax.convert_element_type_p.bind(np.asarray(value, dtype), new_dtype=dtype,
                                           weak_type=False)


def _bias_correction(decay, count, like):
    """``1 - decay ** count`` in ``like``'s dtype, computed in float32 at least, as optax does:
    bfloat16 rounds 0.999 to 1.0, which would make it 0."""
    wide = jnp.result_type(like.dtype, jnp.float32)
    t = count.astype(wide)
    return (1 - jnp.power(_const(decay, t), t)).astype(like.dtype)


def _moment(g, m, decay):
    """The exponential moving average ``(1 - decay) * g + decay * m``."""
    return _const(1 - decay, g) * g + _const(decay, m) * m


def apply_updates(params, updates):
    """``params + updates`` leafwise, keeping each parameter's dtype.

    >>> apply_updates({"w": jnp.ones(2)}, {"w": jnp.array([0.5, -0.5])})
    {'w': Array([1.5, 0.5], dtype=float32)}
    """
    return _tree_map(lambda p, u: (jnp.asarray(p) + u).astype(jnp.asarray(p).dtype),
                     params, updates)


def global_norm(tree):
    """The l2 norm of all leaves together.

    >>> fnx.optim.global_norm({"a": jnp.array([3.0]), "b": jnp.array([4.0])})
    Array(5., dtype=float32)
    """
    leaves = [x for x in tree_leaves(tree) if x is not None]
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in leaves))


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` in order; the state is the tuple of their states.

    >>> opt = chain(clip_by_global_norm(1.0), adam(1e-3))
    """
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------
# Building blocks


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


def add_decayed_weights(weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay). ``mask`` (a
    pytree of bools like params, or a function of params giving one) limits it to some
    parameters.

    >>> tx = fnx.optim.add_decayed_weights(0.1)
    >>> params = {"w": jnp.array([1.0, -2.0])}
    >>> tx.update({"w": jnp.zeros(2)}, tx.init(params), params)[0]
    {'w': Array([ 0.1, -0.2], dtype=float32)}
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights needs params: call update(grads, state, "
                             "params)")
        m = mask(params) if callable(mask) else mask
        if m is None:
            return _tree_map(lambda g, p: g + _const(weight_decay, p) * p, updates, params), state
        return _tree_map(lambda g, p, keep: g + _const(weight_decay, p) * p if keep else g,
                         updates, params, m), state
    return GradientTransformation(lambda params: EmptyState(), update)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale all updates together so that their global l2 norm is at most ``max_norm``.

    >>> opt = chain(clip_by_global_norm(1.0), sgd(0.1))
    """
    def update(updates, state, params=None):
        norm = global_norm(updates)
        small = norm < max_norm
        out = _tree_map(lambda g: jnp.where(small, g, (g / norm.astype(g.dtype))
                                            * _const(max_norm, g)),
                        updates)
        return out, state
    return GradientTransformation(lambda params: EmptyState(), update)


def clip(max_delta: float) -> GradientTransformation:
    """Clip every update element to ``[-max_delta, max_delta]``.

    >>> tx = fnx.optim.clip(1.0)
    >>> tx.update({"w": jnp.array([-3.0, 0.5])}, tx.init(None))[0]
    {'w': Array([-1. ,  0.5], dtype=float32)}
    """
    def update(updates, state, params=None):
        return _tree_map(lambda g: jnp.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


# ---------------------------------------------------------------------------------------------
# Optimizers


def sgd(learning_rate, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    >>> opt = sgd(0.1, momentum=0.9)
    """
    parts = [trace(momentum, nesterov)] if momentum is not None else []
    return chain(*parts, scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         eps_root: float = 0.0, mu_dtype=None, *, nesterov: bool = False
         ) -> GradientTransformation:
    """Adam (Kingma & Ba, 2015); Nadam with ``nesterov``.

    >>> opt = adam(1e-3)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, mu_dtype=None, weight_decay: float = 1e-4, mask=None, *,
          nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019); the decay is scaled by
    the learning rate, as in optax (whose argument order this keeps).

    >>> opt = adamw(1e-3, weight_decay=1e-2)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            centered: bool = False, momentum: float | None = None,
            nesterov: bool = False) -> GradientTransformation:
    """RMSProp (Tieleman & Hinton, 2012), optionally centred and with momentum, as in optax.

    >>> opt = rmsprop(1e-3, momentum=0.9)
    """
    scaler = scale_by_stddev(decay, eps, initial_scale) if centered else \
        scale_by_rms(decay, eps, initial_scale)
    parts = [scaler, scale_by_learning_rate(learning_rate)]
    if momentum is not None:
        parts.append(trace(momentum, nesterov))
    return chain(*parts)


def nadam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0) -> GradientTransformation:
    """Adam with Nesterov momentum (Dozat, 2016), as optax's ``nadam``.

    >>> opt = nadam(1e-3)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=True),
                 scale_by_learning_rate(learning_rate))


def adamax(learning_rate, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> GradientTransformation:
    """Adamax, Adam under the infinity norm (Kingma & Ba, 2015).

    >>> opt = adamax(2e-3)
    """
    return chain(scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
            eps_root: float = 0.0) -> GradientTransformation:
    """AMSGrad (Reddi et al., 2018).

    >>> opt = amsgrad(1e-3)
    """
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adagrad(learning_rate, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad (Duchi et al., 2011).

    >>> opt = adagrad(1e-1)
    """
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1: float = 0.9, b2: float = 0.99, weight_decay: float = 1e-3,
         mask=None) -> GradientTransformation:
    """Lion (Chen et al., 2023), with decoupled weight decay as in optax.

    >>> opt = lion(1e-4)
    """
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6,
         eps_root: float = 0.0, weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """LAMB (You et al., 2020): Adam's step with weight decay, scaled layerwise by the trust
    ratio.

    >>> opt = lamb(1e-3, weight_decay=1e-2)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


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


def radam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, threshold: float = 5.0, *,
          nesterov: bool = False) -> GradientTransformation:
    """Rectified Adam (Liu et al., 2020).

    >>> opt = radam(1e-3)
    """
    return chain(scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16,
              eps_root: float = 1e-16, *, nesterov: bool = False) -> GradientTransformation:
    """AdaBelief (Zhuang et al., 2020).

    >>> opt = adabelief(1e-3)
    """
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


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


# ---------------------------------------------------------------------------------------------
# Wrappers: which parameters a transformation sees, which steps it applies


class MaskedState(NamedTuple):
    inner_state: Any


def masked(inner: GradientTransformation, mask) -> GradientTransformation:
    """Apply ``inner`` only to the parameters where ``mask`` (a pytree of bools like params,
    or a function of params giving one) is True; the other updates pass through unchanged.

    >>> opt = chain(masked(add_decayed_weights(1e-2), lambda p: {"w": True, "b": False}),
    ...             sgd(0.1))
    """
    def only(tree, m):
        # the leaves left out become None, which every transformation here passes over
        return _tree_map(lambda x, keep: x if keep else None, tree, m)

    def init(params):
        m = mask(params) if callable(mask) else mask
        return MaskedState(inner.init(only(params, m)))

    def update(updates, state, params=None):
        m = mask(updates if params is None else params) if callable(mask) else mask
        inner_updates, inner_state = inner.update(
            only(updates, m), state.inner_state, None if params is None else only(params, m))
        merged = _tree_map(lambda u, keep, new: new if keep else u, updates, m, inner_updates)
        return merged, MaskedState(inner_state)
    return GradientTransformation(init, update)


class MultiTransformState(NamedTuple):
    """``multi_transform``'s state: one inner state per label.

    >>> opt = fnx.optim.multi_transform({"a": fnx.optim.sgd(0.1)}, {"w": "a"})
    >>> list(opt.init({"w": jnp.zeros(2)}).inner_states)
    ['a']
    """
    inner_states: Any


def multi_transform(transforms: dict, param_labels) -> GradientTransformation:
    """A different transformation per group of parameters: ``param_labels`` (a pytree of
    labels like params, or a function of params giving one) names each parameter's key in
    ``transforms``.

    >>> opt = multi_transform({"adam": adam(1e-3), "sgd": sgd(1e-2)},
    ...                       {"w": "adam", "b": "sgd"})
    """
    def labels_of(params):
        return param_labels(params) if callable(param_labels) else param_labels

    def mask_for(label):
        return lambda params: tree_map(lambda lab: lab == label, labels_of(params))

    parts = {label: masked(t, mask_for(label)) for label, t in transforms.items()}

    def init(params):
        missing = set(tree_leaves(labels_of(params))) - set(transforms)
        if missing:
            raise ValueError(f"multi_transform: no transformation for the labels "
                             f"{sorted(map(str, missing))}; transforms has "
                             f"{sorted(map(str, transforms))}")
        return MultiTransformState({label: t.init(params) for label, t in parts.items()})

    def update(updates, state, params=None):
        # the groups are disjoint: each masked part changes only its own parameters
        new_states = {}
        for label, t in parts.items():
            updates, new_states[label] = t.update(updates, state.inner_states[label], params)
        return updates, MultiTransformState(new_states)
    return GradientTransformation(init, update)


class InjectHyperparamsState(NamedTuple):
    """``inject_hyperparams``' state: the step ``count``, the current ``hyperparams`` (arrays,
    so a jitted step can change them) and the inner optimizer's state.

    >>> opt = fnx.optim.inject_hyperparams(fnx.optim.sgd)(learning_rate=0.1)
    >>> opt.init({"w": jnp.zeros(2)}).hyperparams
    {'learning_rate': Array(0.1, dtype=float32)}
    """
    count: Any
    hyperparams: Any
    inner_state: Any


def inject_hyperparams(inner_factory: Callable, static_args=(), hyperparam_dtype=None):
    """Wrap an optimizer factory so that its numeric hyperparameters live in the state
    (``state.hyperparams["learning_rate"]``, which a training loop may change) and
    schedules given for them are evaluated at each step. ``static_args`` name arguments
    kept as they are.

    >>> opt = inject_hyperparams(adam)(learning_rate=linear_schedule(0.0, 1e-3, 100))
    >>> state = opt.init({"w": jnp.zeros(2)})
    >>> state.hyperparams["learning_rate"]
    Array(0., dtype=float32)
    """
    import functools
    import inspect
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)

    @functools.wraps(inner_factory)
    def wrapped(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        given = dict(bound.arguments)
        schedules = {k: v for k, v in given.items() if k not in static_args and callable(v)}
        numeric = {k: v for k, v in given.items() if k not in static_args
                   and not callable(v) and not isinstance(v, bool)
                   and isinstance(v, (int, float, np.number, np.ndarray, jnp.ndarray))}
        other = {k: v for k, v in given.items() if k not in schedules and k not in numeric}

        def dtype_of(tree):
            if hyperparam_dtype is not None:
                return hyperparam_dtype
            leaves = [x for x in tree_leaves(tree) if x is not None]
            return jnp.asarray(leaves[0]).dtype if leaves else jnp.float32

        def convert(v, dtype):
            # floats take the parameters' dtype; integers (step counts) stay integers
            v = jnp.asarray(v)
            return v.astype(dtype) if jnp.issubdtype(v.dtype, jnp.floating) else v

        def hyperparams(held, count, dtype):
            out = {k: convert(v, dtype) for k, v in held.items()}
            out.update({k: convert(f(count), dtype) for k, f in schedules.items()})
            return out

        def init(params):
            count = _count0()
            hp = hyperparams(numeric, count, dtype_of(params))
            return InjectHyperparamsState(count, hp, inner_factory(**other, **hp).init(params))

        def update(updates, state, params=None):
            held = {k: state.hyperparams[k] for k in numeric}
            hp = hyperparams(held, state.count, dtype_of(updates))
            updates, inner_state = inner_factory(**other, **hp).update(
                updates, state.inner_state, params)
            return updates, InjectHyperparamsState(_increment(state.count), hp, inner_state)
        return GradientTransformation(init, update)
    return wrapped


class ApplyIfFiniteState(NamedTuple):
    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def apply_if_finite(inner: GradientTransformation,
                    max_consecutive_errors: int) -> GradientTransformation:
    """Skip a step whose updates hold a NaN or inf: it returns zero updates and keeps
    ``inner``'s state, unless that happened ``max_consecutive_errors`` times in a row (then it
    applies the step, as optax does).

    >>> opt = apply_if_finite(adam(1e-3), max_consecutive_errors=5)
    """
    def init(params):
        zero = jnp.zeros((), jnp.int32)
        return ApplyIfFiniteState(zero, jnp.asarray(True), zero, inner.init(params))

    def update(updates, state, params=None):
        new_updates, new_inner = inner.update(updates, state.inner_state, params)
        finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(u))
                                      for u in tree_leaves(updates) if u is not None]))
        count = jnp.where(finite, 0, state.notfinite_count + 1)
        apply = finite | (count > max_consecutive_errors)
        keep = lambda new, old: jnp.where(apply, new, old)  # noqa: E731
        out = _tree_map(lambda u: jnp.where(apply, u, jnp.zeros_like(u)), new_updates)
        inner_state = tree_map(keep, new_inner, state.inner_state)
        return out, ApplyIfFiniteState(count, finite,
                                       state.total_notfinite + (~finite).astype(jnp.int32),
                                       inner_state)
    return GradientTransformation(init, update)


class MultiStepsState(NamedTuple):
    """``MultiSteps``' state: the ``mini_step`` within the current accumulation, the
    ``gradient_step`` count, the inner optimizer's state and the accumulated gradients.

    >>> opt = fnx.optim.MultiSteps(fnx.optim.sgd(0.1), every_k_schedule=2)
    >>> opt.init({"w": jnp.zeros(2)}).mini_step
    Array(0, dtype=int32)
    """
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any


class MultiSteps:
    """Gradient accumulation: the mean of ``every_k_schedule`` steps' gradients goes to
    ``opt`` once per that many steps; the steps between return zero updates.

    >>> opt = MultiSteps(adam(1e-3), every_k_schedule=4)
    >>> params = {"w": jnp.zeros(2)}
    >>> state = opt.init(params)
    >>> updates, state = opt.update({"w": jnp.ones(2)}, state, params)
    >>> updates["w"]     # zero until the fourth step
    Array([0., 0.], dtype=float32)
    """

    def __init__(self, opt: GradientTransformation, every_k_schedule):
        self.opt = opt
        self.every_k = every_k_schedule if callable(every_k_schedule) else (
            lambda step: every_k_schedule)

    def init(self, params):
        zero = jnp.zeros((), jnp.int32)
        return MultiStepsState(zero, zero, self.opt.init(params), _zeros_like(params))

    def update(self, updates, state, params=None):
        k = jnp.asarray(self.every_k(state.gradient_step), jnp.int32)
        step = state.mini_step
        # a running mean, so the emitted gradient is the mean of the k
        acc = _tree_map(lambda g, a: a + (g - a) / (step + 1).astype(a.dtype), updates,
                        state.acc_grads)
        emit = step + 1 >= k
        new_updates, new_inner = self.opt.update(acc, state.inner_opt_state, params)
        out = _tree_map(lambda u: jnp.where(emit, u, jnp.zeros_like(u)), new_updates)
        inner = tree_map(lambda new, old: jnp.where(emit, new, old), new_inner,
                         state.inner_opt_state)
        return out, MultiStepsState(
            jnp.where(emit, 0, step + 1), jnp.where(emit, _increment(state.gradient_step),
                                                    state.gradient_step),
            inner, _tree_map(lambda a: jnp.where(emit, jnp.zeros_like(a), a), acc))

    def gradient_transformation(self) -> GradientTransformation:
        return GradientTransformation(self.init, self.update)


# ---------------------------------------------------------------------------------------------
# Schedules: functions of the step count (a Python int or an int array, also traced)


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


# ---------------------------------------------------------------------------------------------
# Adafactor: second moments kept as row and column averages (optax's ``adafactor``)


class FactoredState(NamedTuple):
    """adafactor's second-moment state: the step ``count`` and, per leaf, the row and column
    averages of the squared gradients (factored leaves) or their full average ``v`` (the
    others).

    >>> opt = fnx.optim.adafactor(1e-2, min_dim_size_to_factor=2)
    >>> state = opt.init({"w": jnp.ones((4, 3))})[0]
    >>> state.v_row["w"].shape, state.v_col["w"].shape
    ((3,), (4,))
    """
    count: Any
    v_row: Any       # per factored leaf: the row averages of the squared gradients
    v_col: Any       # ... and the column averages
    v: Any           # per unfactored leaf: the full second moment


def _factored_dims(shape, factored: bool, min_dim_size_to_factor: int):
    """The two largest axes (second largest first) if both reach ``min_dim_size_to_factor``."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape)
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


def _abs_sq(x):
    return jnp.real(jnp.conj(x) * x)


def _decay_rate_pow(step, exponent):
    """Adafactor's second-moment decay ``1 - (step + 1) ** -exponent``, in float32 as optax."""
    return 1.0 - jnp.asarray(step + 1, jnp.float32) ** (-exponent)


def scale_by_factored_rms(factored: bool = True, decay_rate: float = 0.8, step_offset: int = 0,
                          min_dim_size_to_factor: int = 128, epsilon: float = 1e-30,
                          decay_rate_fn=_decay_rate_pow) -> GradientTransformation:
    """Divide updates by a root-mean-square estimate that, for a matrix whose two largest
    axes are ``min_dim_size_to_factor`` or longer, keeps only row and column averages.

    >>> opt = chain(scale_by_factored_rms(), scale(-1e-2))
    """
    def init(params):
        leaves, tree = tree_flatten(params)
        rows, cols, vs = [], [], []
        tiny = [jnp.zeros((1,), p.dtype) for p in leaves]
        for p, z in zip(leaves, tiny):
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            if dims is None:
                rows.append(z), cols.append(z), vs.append(jnp.zeros_like(p))
            else:
                d1, d0 = dims
                rows.append(jnp.zeros(np.delete(p.shape, d0), p.dtype))
                cols.append(jnp.zeros(np.delete(p.shape, d1), p.dtype))
                vs.append(z)
        return FactoredState(_count0(), *(tree_unflatten(tree, x) for x in (rows, cols, vs)))

    def update_leaf(g, v_row, v_col, v, p, decay):
        dtype = p.dtype
        tiny = jnp.zeros((1,), dtype)
        g_sq = _abs_sq(g) + epsilon
        dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
        if dims is None:
            new_v = (decay * v + (1.0 - decay) * g_sq).astype(dtype)
            return g * new_v ** -0.5, tiny, tiny, new_v
        d1, d0 = dims
        new_row = (decay * v_row + (1.0 - decay) * jnp.mean(g_sq, axis=d0)).astype(dtype)
        new_col = (decay * v_col + (1.0 - decay) * jnp.mean(g_sq, axis=d1)).astype(dtype)
        row_mean = jnp.mean(new_row, axis=d1 - 1 if d1 > d0 else d1, keepdims=True)
        update = (g * jnp.expand_dims((new_row / row_mean) ** -0.5, d0)
                  * jnp.expand_dims(new_col ** -0.5, d1))
        return update, new_row, new_col, tiny

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_factored_rms needs the parameters: "
                             "update(updates, state, params)")
        leaves, tree = tree_flatten(updates)
        parts = [tree_flatten(t)[0] for t in (state.v_row, state.v_col, state.v, params)]
        decay = decay_rate_fn(state.count - step_offset, decay_rate)
        outs = [update_leaf(*args, decay) for args in zip(leaves, *parts)]
        cols = [tree_unflatten(tree, list(c)) for c in zip(*outs)] if outs else [updates] * 4
        return cols[0], FactoredState(_increment(state.count), *cols[1:])
    return GradientTransformation(init, update)


def clip_by_block_rms(threshold: float) -> GradientTransformation:
    """Scale each update leaf down so its root mean square is at most ``threshold``.

    >>> opt = chain(clip_by_block_rms(1.0), scale(-1e-2))
    """
    def update(updates, state, params=None):
        def clip(u):
            return u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(_abs_sq(u))) / threshold)
        leaves, tree = tree_flatten(updates)
        return tree_unflatten(tree, [clip(u) for u in leaves]), state
    return GradientTransformation(lambda params: EmptyState(), update)


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


def adafactor(learning_rate=None, min_dim_size_to_factor: int = 128, decay_rate: float = 0.8,
              decay_offset: int = 0, multiply_by_parameter_scale: bool = True,
              clipping_threshold: float | None = 1.0, momentum: float | None = None,
              dtype_momentum=jnp.float32, weight_decay_rate: float | None = None,
              eps: float = 1e-30, factored: bool = True,
              weight_decay_mask=None) -> GradientTransformation:
    """The Adafactor optimizer (Shazeer and Stern, 2018) with optax's defaults and steps:
    factored second moments, update clipping, steps relative to each parameter's scale.

    >>> params = {"w": jnp.ones((4, 3))}
    >>> opt = adafactor(learning_rate=1e-2)
    >>> state = opt.init(params)
    >>> updates, state = opt.update({"w": jnp.full((4, 3), 0.5)}, state, params)
    >>> updates["w"][0]
    Array([-0.01, -0.01, -0.01], dtype=float32)
    """
    tx = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor,
                                eps)]
    if clipping_threshold is not None:
        tx.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(scale_by_param_block_rms())
    if momentum is not None:
        tx.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    tx.append(scale(-1))
    return chain(*tx)


__all__ = ["GradientTransformation", "EmptyState", "apply_updates", "global_norm", "chain",
           "scale", "scale_by_schedule", "scale_by_learning_rate", "trace", "scale_by_adam",
           "scale_by_rms", "scale_by_stddev", "add_decayed_weights", "clip_by_global_norm",
           "clip", "sgd", "adam", "adamw", "rmsprop", "constant_schedule", "polynomial_schedule",
           "linear_schedule", "exponential_decay", "cosine_decay_schedule", "join_schedules",
           "warmup_cosine_decay_schedule", "scale_by_adamax", "scale_by_amsgrad", "scale_by_rss",
           "scale_by_lion", "scale_by_trust_ratio", "nadam", "adamax", "amsgrad", "adagrad",
           "lion", "lamb", "masked", "apply_if_finite", "MultiSteps", "MultiStepsState",
           "piecewise_constant_schedule", "scale_by_radam", "scale_by_belief", "radam",
           "adabelief", "ema", "EmaState", "multi_transform", "MultiTransformState",
           "inject_hyperparams", "InjectHyperparamsState", "piecewise_interpolate_schedule",
           "linear_onecycle_schedule", "cosine_onecycle_schedule", "losses"]

__all__ += ["adafactor", "scale_by_factored_rms", "clip_by_block_rms", "scale_by_param_block_rms",
            "FactoredState"]



def identity() -> GradientTransformation:
    """Passes the updates through unchanged.

    >>> t = identity()
    >>> t.update({"w": jnp.ones(2)}, t.init(None))[0]["w"]
    Array([1., 1.], dtype=float32)
    """
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


def set_to_zero() -> GradientTransformation:
    """Zero updates: the parameters it is applied to stay as they are (see ``multi_transform``).

    >>> t = set_to_zero()
    >>> t.update({"w": jnp.ones(2)}, t.init(None))[0]["w"]
    Array([0., 0.], dtype=float32)
    """
    return GradientTransformation(
        lambda params: EmptyState(),
        lambda updates, state, params=None: (_tree_map(jnp.zeros_like, updates), state))


def stateless(f: Callable) -> GradientTransformation:
    """A transformation without state: ``updates = f(updates, params)``.

    >>> t = stateless(lambda u, p: fnx.tree_util.tree_map(lambda g: -g, u))
    >>> t.update({"w": jnp.ones(2)}, t.init(None))[0]["w"]
    Array([-1., -1.], dtype=float32)
    """
    return GradientTransformation(
        lambda params: EmptyState(),
        lambda updates, state, params=None: (f(updates, params), EmptyState()))


def stateless_with_tree_map(f: Callable) -> GradientTransformation:
    """:func:`stateless` with ``f(g, p)`` applied leaf by leaf (``p`` is None without params).

    >>> t = stateless_with_tree_map(lambda g, p: g + 0.1 * p)
    >>> t.update({"w": jnp.ones(2)}, t.init(None), {"w": jnp.ones(2)})[0]["w"]
    Array([1.1, 1.1], dtype=float32)
    """
    def update(updates, params):
        if params is None:
            return _tree_map(lambda g: f(g, None), updates)
        return _tree_map(f, updates, params)
    return stateless(update)


def incremental_update(new_tensors, old_tensors, step_size):
    """Polyak averaging: ``step_size * new + (1 - step_size) * old`` leaf by leaf (a target
    network's soft update).

    >>> incremental_update({"w": jnp.ones(2)}, {"w": jnp.zeros(2)}, 0.1)["w"]
    Array([0.1, 0.1], dtype=float32)
    """
    return tree_map(lambda new, old: None if new is None else
                    step_size * new + (1.0 - step_size) * old,
                    new_tensors, old_tensors, is_leaf=_is_none)


def periodic_update(new_tensors, old_tensors, steps, update_period):
    """``new_tensors`` every ``update_period`` steps, else ``old_tensors`` (a target network's
    hard update).

    >>> periodic_update(jnp.ones(2), jnp.zeros(2), steps=4, update_period=2)
    Array([1., 1.], dtype=float32)
    """
    return cond(jnp.mod(steps, update_period) == 0, lambda _: new_tensors,
                lambda _: old_tensors, None)


# optax's names for pytrees of parameters, updates and states
OptState = Params = Updates = Any
ScalarOrSchedule = Any

__all__ += ["identity", "set_to_zero", "stateless", "stateless_with_tree_map",
            "incremental_update", "periodic_update", "OptState", "Params", "Updates",
            "ScalarOrSchedule"]

# more of optax's transformations, optimizers and schedules, step for step as optax's


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

__all__ += ["scale_by_sign", "sign_sgd", "signum", "scale_by_yogi", "yogi",
           "ScaleByAdaDeltaState", "scale_by_adadelta", "adadelta", "adamaxw", "nadamw",
           "centralize", "ZeroNansState", "zero_nans", "keep_params_nonnegative",
           "sgdr_schedule", "warmup_constant_schedule", "warmup_exponential_decay_schedule",
           "safe_norm", "safe_root_mean_squares", "safe_increment", "safe_int32_increment"]


from . import losses  # noqa: E402  (optax.losses' names)
from .losses import (cosine_distance, cosine_similarity, hinge_loss, huber_loss,  # noqa: E402
                     kl_divergence, l2_loss, log_cosh,
                     sigmoid_binary_cross_entropy, smooth_labels, softmax_cross_entropy,
                     softmax_cross_entropy_with_integer_labels, squared_error)

# optax exports most of its losses at the top too
__all__ += [n for n in losses.__all__ if n != "kl_divergence_with_log_targets"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""Wrappers that choose which parameters a transformation sees and which steps it applies."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core.pytree import tree_broadcast, tree_flatten, tree_leaves, tree_map, tree_unflatten
from ._base import (GradientTransformation, GradientTransformationExtraArgs, _count0, _increment,
                    _is_none, _tree_map, _zeros_like, set_to_zero, with_extra_args_support)


class MaskedState(NamedTuple):
    inner_state: Any


def masked(inner: GradientTransformation, mask) -> GradientTransformation:
    """Apply ``inner`` only to the parameters where ``mask`` (a pytree of bools like params or
    a prefix of it, or a function of params giving one) is True; the other updates pass
    through unchanged.

    >>> opt = chain(masked(add_decayed_weights(1e-2), lambda p: {"w": True, "b": False}),
    ...             sgd(0.1))
    """
    def only(tree, m):
        # the leaves left out become None, which every transformation here passes over
        return _tree_map(lambda x, keep: x if keep else None, tree, m)

    def mask_for(tree):
        m = mask(tree) if callable(mask) else mask
        # a prefix mask (True for a whole subtree) covers every leaf below it
        return tree_broadcast(m, tree, is_leaf=_is_none)

    def init(params):
        m = mask_for(params)
        return MaskedState(inner.init(only(params, m)))

    def update(updates, state, params=None):
        m = mask_for(updates if params is None else params)
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
    """optax's former state of ``inject_hyperparams`` (kept for programs that build one);
    ``inject_hyperparams`` now keeps an :class:`InjectStatefulHyperparamsState`.

    >>> InjectHyperparamsState(jnp.zeros((), jnp.int32), {}, ()).hyperparams
    {}
    """
    count: Any
    hyperparams: Any
    inner_state: Any


class InjectStatefulHyperparamsState(NamedTuple):
    """``inject_hyperparams``' state: the step ``count``, the current ``hyperparams`` (arrays,
    so a jitted step can change them), the states of its schedules and the inner optimizer's
    state.

    >>> opt = fnx.optim.inject_hyperparams(fnx.optim.sgd)(learning_rate=0.1)
    >>> opt.init({"w": jnp.zeros(2)}).hyperparams
    {'learning_rate': Array(0.1, dtype=float32)}
    """
    count: Any
    hyperparams: Any
    hyperparams_states: Any
    inner_state: Any


class WrappedScheduleState(NamedTuple):
    """``WrappedSchedule``'s state.

    >>> WrappedScheduleState._fields
    ('count',)
    """
    count: Any


class WrappedSchedule:
    """A schedule of the step count as a stateful schedule (``init()``, ``update(state)``,
    ``__call__(state)``), the form ``inject_hyperparams`` evaluates.

    >>> sched = WrappedSchedule(lambda count: 0.1 * count)
    >>> sched(sched.update(sched.init()))
    Array(0.1, dtype=float32, weak_type=True)
    """

    def __init__(self, schedule_fn: Callable):
        self.schedule_fn = schedule_fn

    def init(self) -> WrappedScheduleState:
        return WrappedScheduleState(_count0())

    def update(self, state, **extra_args) -> WrappedScheduleState:
        return WrappedScheduleState(_increment(state.count))

    def __call__(self, state, **extra_args):
        return jnp.asarray(self.schedule_fn(state.count))


def _is_stateful_schedule(value) -> bool:
    return all(callable(getattr(value, name, None)) for name in ("init", "update", "__call__"))


def inject_hyperparams(inner_factory: Callable, static_args=(), hyperparam_dtype=None):
    """Wrap an optimizer factory so that its numeric hyperparameters live in the state
    (``state.hyperparams["learning_rate"]``, which a training loop may change) and
    schedules given for them are evaluated at each step: functions of the step count, or
    stateful schedules (``init()``, ``update(state, **extra_args)``,
    ``__call__(state, **extra_args)``) fed the keyword arguments of ``update``.
    ``static_args`` name arguments kept as they are.

    >>> opt = inject_hyperparams(adam)(learning_rate=linear_schedule(0.0, 1e-3, 100))
    >>> state = opt.init({"w": jnp.zeros(2)})
    >>> state.hyperparams["learning_rate"]
    Array(0., dtype=float32)
    """
    import functools
    import inspect
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)
    if not static_args <= set(signature.parameters):
        raise ValueError(f"inject_hyperparams: static_args {sorted(static_args)} must name "
                         f"parameters of the factory, {list(signature.parameters)}")

    @functools.wraps(inner_factory)
    def wrapped(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        schedules, numeric, other = {}, {}, {}
        for k, v in bound.arguments.items():
            if k in static_args or isinstance(v, bool):
                other[k] = v
            elif _is_stateful_schedule(v):
                schedules[k] = v
            elif callable(v):
                schedules[k] = WrappedSchedule(v)
            elif isinstance(v, (int, float, np.number, np.ndarray, jnp.ndarray)):
                numeric[k] = v
            else:
                other[k] = v

        def dtype_of(tree):
            if hyperparam_dtype is not None:
                return hyperparam_dtype
            leaves = [x for x in tree_leaves(tree) if x is not None]
            return jnp.asarray(leaves[0]).dtype if leaves else jnp.float32

        def convert(v, dtype):
            # floats take the parameters' dtype; integers (step counts) stay integers
            v = jnp.asarray(v)
            return v.astype(dtype) if jnp.issubdtype(v.dtype, jnp.floating) else v

        def init(params):
            dtype = dtype_of(params)
            hp = {k: convert(v, dtype) for k, v in numeric.items()}
            states = {k: f.init() for k, f in schedules.items()}
            hp.update({k: convert(f(states[k]), dtype) for k, f in schedules.items()})
            return InjectStatefulHyperparamsState(
                _count0(), hp, states, inner_factory(**other, **hp).init(params))

        def update(updates, state, params=None, **extra_args):
            dtype = dtype_of(updates)
            hp = {k: convert(state.hyperparams[k], dtype) for k in numeric}
            hp.update({k: convert(f(state.hyperparams_states[k], **extra_args), dtype)
                       for k, f in schedules.items()})
            states = {k: f.update(state.hyperparams_states[k], **extra_args)
                      for k, f in schedules.items()}
            inner = with_extra_args_support(inner_factory(**other, **hp))
            updates, inner_state = inner.update(updates, state.inner_state, params,
                                                **extra_args)
            return updates, InjectStatefulHyperparamsState(_increment(state.count), hp,
                                                           states, inner_state)
        return GradientTransformationExtraArgs(init, update)
    return wrapped


def inject_stateful_hyperparams(inner_factory: Callable, static_args=(),
                                hyperparam_dtype=None):
    """optax's former name of :func:`inject_hyperparams` (which takes stateful schedules).

    >>> opt = inject_stateful_hyperparams(sgd)(learning_rate=0.1)
    """
    return inject_hyperparams(inner_factory, static_args, hyperparam_dtype)


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
    ``gradient_step`` count, the inner optimizer's state, the accumulated gradients and what
    ``should_skip_update_fn`` last reported.

    >>> opt = fnx.optim.MultiSteps(fnx.optim.sgd(0.1), every_k_schedule=2)
    >>> opt.init({"w": jnp.zeros(2)}).mini_step
    Array(0, dtype=int32)
    """
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()


def _never_skip(updates, gradient_step, params):
    return jnp.asarray(False), ()


class MultiSteps:
    """Gradient accumulation: the mean (or with ``use_grad_mean=False`` the sum) of
    ``every_k_schedule`` steps' gradients goes to ``opt`` once per that many steps; the steps
    between return zero updates. A step for which ``should_skip_update_fn(updates,
    gradient_step, params)`` returns True (``skip_not_finite``) leaves the state as it was;
    its second output is kept in ``state.skip_state``.

    >>> opt = MultiSteps(adam(1e-3), every_k_schedule=4)
    >>> params = {"w": jnp.zeros(2)}
    >>> state = opt.init(params)
    >>> updates, state = opt.update({"w": jnp.ones(2)}, state, params)
    >>> updates["w"]     # zero until the fourth step
    Array([0., 0.], dtype=float32)
    """

    def __init__(self, opt: GradientTransformation, every_k_schedule, use_grad_mean: bool = True,
                 should_skip_update_fn: Callable | None = None, accumulator_dtype=None):
        self.opt = with_extra_args_support(opt)
        self.every_k = every_k_schedule if callable(every_k_schedule) else (
            lambda step: every_k_schedule)
        self.use_grad_mean = use_grad_mean
        self.should_skip = should_skip_update_fn or _never_skip
        self.accumulator_dtype = accumulator_dtype

    @property
    def inner_opt(self):
        return self.opt

    def _acc_dtype(self, a):
        return a.dtype if self.accumulator_dtype is None else self.accumulator_dtype

    def init(self, params):
        zero = jnp.zeros((), jnp.int32)
        acc = _tree_map(lambda p: jnp.zeros_like(p, dtype=self._acc_dtype(p)), params)
        _, skip_state = self.should_skip(_zeros_like(params), zero, params)
        return MultiStepsState(zero, zero, self.opt.init(params), acc, skip_state)

    def update(self, updates, state, params=None, **extra_args):
        k = jnp.asarray(self.every_k(state.gradient_step), jnp.int32)
        skip, skip_state = self.should_skip(updates, state.gradient_step, params)
        skip = jnp.asarray(skip)
        if skip.dtype != jnp.bool_ or skip.shape != ():
            raise ValueError("should_skip_update_fn must return a boolean scalar, got "
                             f"{skip.dtype}{list(skip.shape)}")
        step = state.mini_step
        if self.use_grad_mean:   # a running mean (Welford), so the emitted gradient is the mean
            acc = _tree_map(lambda g, a: a + (g.astype(a.dtype) - a) / (step + 1).astype(a.dtype),
                            updates, state.acc_grads)
        else:
            acc = _tree_map(lambda g, a: a + g.astype(a.dtype), updates, state.acc_grads)
        emit = (step + 1 >= k) & ~skip
        acc_like_updates = _tree_map(lambda a, g: a.astype(g.dtype), acc, updates)
        new_updates, new_inner = self.opt.update(acc_like_updates, state.inner_opt_state, params,
                                                 **extra_args)
        out = _tree_map(lambda u: jnp.where(emit, u, jnp.zeros_like(u)), new_updates)
        inner = tree_map(lambda new, old: jnp.where(emit, new, old).astype(old.dtype),
                         new_inner, state.inner_opt_state)
        keep = lambda new, old: jnp.where(skip, old, new)  # noqa: E731
        return out, MultiStepsState(
            keep(jnp.where(emit, 0, step + 1), step),
            jnp.where(emit, _increment(state.gradient_step), state.gradient_step),
            inner,
            _tree_map(lambda a, old: keep(jnp.where(emit, jnp.zeros_like(a), a), old), acc,
                      state.acc_grads),
            skip_state)

    def has_updated(self, state) -> Any:
        """Whether the last ``update`` applied the inner optimizer."""
        return (state.mini_step == 0) & (state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        return GradientTransformationExtraArgs(self.init, self.update)


partition = multi_transform
PartitionState = MultiTransformState


def named_chain(*args) -> GradientTransformationExtraArgs:
    """``chain`` of ``(name, transformation)`` pairs; the state is a dict by name.

    >>> opt = named_chain(("clip", clip(1.0)), ("sgd", sgd(0.1)))
    >>> list(opt.init(jnp.zeros(2)))
    ['clip', 'sgd']
    """
    names = [name for name, _ in args]
    if len(names) != len(set(names)):
        raise ValueError(f"named_chain: the names must be unique, got {names}")
    transforms = [(name, with_extra_args_support(t)) for name, t in args]

    def init(params):
        return {name: t.init(params) for name, t in transforms}

    def update(updates, state, params=None, **extra_args):
        new_state = {}
        for name, t in transforms:
            updates, new_state[name] = t.update(updates, state[name], params, **extra_args)
        return updates, new_state
    return GradientTransformationExtraArgs(init, update)


class ConditionallyTransformState(NamedTuple):
    """``conditionally_transform``'s state: the inner state and the step.

    >>> ConditionallyTransformState._fields
    ('inner_state', 'step')
    """
    inner_state: Any
    step: Any


class ConditionallyMaskState(NamedTuple):
    """``conditionally_mask``'s state: the step and the inner state.

    >>> ConditionallyMaskState._fields
    ('step', 'inner_state')
    """
    step: Any
    inner_state: Any


def _conditionally(inner, should_transform_fn, forward_extra_args, rejected, state_of, step_of,
                   inner_of):
    inner = with_extra_args_support(inner)

    def init(params):
        return state_of(inner.init(params), _count0())

    def update(updates, state, params=None, **extra_args):
        inner_state = inner_of(state)
        go = should_transform_fn(step_of(state), **(extra_args if forward_extra_args else {}))
        new_updates, new_inner = inner.update(updates, inner_state, params, **extra_args)
        out = tree_map(lambda n, o: jnp.where(go, n, o), new_updates, rejected(updates))
        kept = tree_map(lambda n, o: jnp.where(go, n, o), new_inner, inner_state)
        return out, state_of(kept, _increment(step_of(state)))
    return GradientTransformationExtraArgs(init, update)


def conditionally_transform(inner: GradientTransformation, should_transform_fn: Callable,
                            forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Apply ``inner`` at the steps where ``should_transform_fn(step)`` is True; at the others
    the updates pass through unchanged and ``inner``'s state is kept.

    >>> tx = conditionally_transform(scale(2.0), lambda step: step >= 1)
    >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0]
    Array([1.], dtype=float32)
    """
    return _conditionally(inner, should_transform_fn, forward_extra_args, lambda u: u,
                          lambda inner, step: ConditionallyTransformState(inner, step),
                          lambda s: s.step, lambda s: s.inner_state)


def conditionally_mask(inner: GradientTransformation, should_transform_fn: Callable,
                       forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Apply ``inner`` at the steps where ``should_transform_fn(step)`` is True; at the others
    the updates are zero and ``inner``'s state is kept.

    >>> tx = conditionally_mask(scale(2.0), lambda step: step >= 1)
    >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0]
    Array([0.], dtype=float32)
    """
    return _conditionally(inner, should_transform_fn, forward_extra_args,
                          lambda u: _tree_map(jnp.zeros_like, u),
                          lambda inner, step: ConditionallyMaskState(step, inner),
                          lambda s: s.step, lambda s: s.inner_state)


def freeze(mask) -> GradientTransformation:
    """Zero updates for the parameters where ``mask`` (a bool, or a pytree of bools like
    params or a prefix of it) is True: they stay as they are.

    >>> tx = freeze({"a": True, "b": False})
    >>> grads = {"a": jnp.ones(1), "b": jnp.ones(1)}
    >>> tx.update(grads, tx.init(grads))[0]
    {'a': Array([0.], dtype=float32), 'b': Array([1.], dtype=float32)}
    """
    return masked(set_to_zero(), mask)


def selective_transform(optimizer: GradientTransformation, *,
                        freeze_mask) -> GradientTransformation:
    """``optimizer`` for the parameters where ``freeze_mask`` is False; zero updates (and no
    optimizer state) for the others.

    >>> opt = selective_transform(sgd(0.1), freeze_mask={"a": True, "b": False})
    >>> opt.update({"a": jnp.ones(1), "b": jnp.ones(1)}, opt.init({"a": jnp.ones(1),
    ...            "b": jnp.ones(1)}))[0]["b"]
    Array([-0.1], dtype=float32)
    """
    def labels(params):
        return tree_map(lambda m: "freeze" if m else "train", freeze_mask)
    return partition({"train": optimizer, "freeze": set_to_zero()}, labels)


def flatten(inner: GradientTransformation) -> GradientTransformationExtraArgs:
    """``inner`` applied to all the updates as one flat vector (and its state kept so).

    >>> tx = flatten(scale(2.0))
    >>> tx.update({"a": jnp.ones(2), "b": jnp.ones(())}, tx.init({"a": jnp.ones(2),
    ...           "b": jnp.ones(())}))[0]["b"]
    Array(2., dtype=float32)
    """
    inner = with_extra_args_support(inner)

    def flat(tree):
        leaves = tree_leaves(tree)
        return jnp.concatenate([jnp.reshape(x, -1) for x in leaves]) if leaves else jnp.zeros(0)

    def unflat(like, vector):
        leaves, treedef = tree_flatten(like)
        out, offset = [], 0
        for x in leaves:
            size = int(np.size(x))
            out.append(jnp.reshape(vector[offset:offset + size], jnp.shape(x)))
            offset += size
        return tree_unflatten(treedef, out)

    def init(params):
        return inner.init(flat(params))

    def update(updates, state, params=None, **extra_args):
        new, state = inner.update(flat(updates), state,
                                  None if params is None else flat(params), **extra_args)
        return unflat(updates, new), state
    return GradientTransformationExtraArgs(init, update)


def skip_not_finite(updates, gradient_step, params):
    """A ``should_skip_update_fn`` for ``MultiSteps``: skip a step whose updates hold a NaN
    or inf. Returns ``(should_skip, {"should_skip", "num_not_finite"})``.

    >>> skip_not_finite({"w": jnp.array([1.0, jnp.nan])}, 0, None)[0]
    Array(True, dtype=bool)
    """
    num = sum(jnp.sum(~jnp.isfinite(x)) for x in tree_leaves(updates))
    num = jnp.asarray(num)
    should_skip = num > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num}


def skip_large_updates(updates, gradient_step, params, max_squared_norm):
    """A ``should_skip_update_fn`` for ``MultiSteps`` (bind ``max_squared_norm`` with
    ``functools.partial``): skip a step whose updates' squared norm is not below it.

    >>> skip_large_updates({"w": jnp.array([3.0, 4.0])}, 0, None, 10.0)[0]
    Array(True, dtype=bool)
    """
    norm_sq = sum(jnp.sum(jnp.square(x)) for x in tree_leaves(updates))
    should_skip = jnp.logical_not(norm_sq < max_squared_norm)
    return should_skip, {"should_skip": should_skip, "norm_squared": norm_sq}


class MaskedNode(NamedTuple):
    """The placeholder optax's ``masked`` puts for a parameter left out (here such leaves are
    None).

    >>> MaskedNode()
    MaskedNode()
    """


ShouldSkipUpdateFunction = Callable

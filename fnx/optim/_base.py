"""The core of fnx.optim: ``GradientTransformation``, ``chain``, applying updates, and the
leafwise helpers every transformation shares."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.control_flow import cond
from ..core.pytree import tree_leaves, tree_map


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


class GradientTransformationExtraArgs(GradientTransformation):
    """A ``GradientTransformation`` whose ``update`` also takes keyword arguments
    (``update(updates, state, params=None, **extra_args)``), such as the loss ``value`` that
    ``polyak_sgd`` needs. ``chain`` passes them on to the members that take them.

    >>> opt = fnx.optim.polyak_sgd()
    >>> isinstance(opt, GradientTransformationExtraArgs)
    True
    """


def with_extra_args_support(tx: GradientTransformation) -> GradientTransformationExtraArgs:
    """``tx`` as a ``GradientTransformationExtraArgs`` (its update ignores extra arguments).

    >>> tx = with_extra_args_support(fnx.optim.scale(2.0))
    >>> tx.update(jnp.ones(1), tx.init(None), value=3.0)[0]
    Array([2.], dtype=float32)
    """
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx

    def update(updates, state, params=None, **extra_args):
        del extra_args
        return tx.update(updates, state, params)
    return GradientTransformationExtraArgs(tx.init, update)


def init_empty_state(params) -> EmptyState:
    """``EmptyState()``, whatever the params: the ``init`` of a stateless transformation.

    >>> init_empty_state({"w": jnp.zeros(2)})
    EmptyState()
    """
    del params
    return EmptyState()


def chain(*transforms: GradientTransformation) -> GradientTransformationExtraArgs:
    """Apply ``transforms`` in order; the state is the tuple of their states. Keyword
    arguments of ``update`` go to the members that take them.

    >>> opt = chain(clip_by_global_norm(1.0), adam(1e-3))
    """
    transforms = tuple(with_extra_args_support(t) for t in transforms)

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None, **extra_args):
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params, **extra_args)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformationExtraArgs(init, update)


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


OptState = Params = Updates = Any
ScalarOrSchedule = Any

ArrayTree = Any
TransformInitFn = TransformUpdateFn = TransformUpdateExtraArgsFn = Callable
# a schedule with state (``init``, ``update(state, **extra_args)``, ``__call__(state)``) and
# the step predicate of conditionally_transform, as the types optax annotates with
StatefulSchedule = ConditionFn = Any

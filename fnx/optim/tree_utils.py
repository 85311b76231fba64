"""fnx.optim.tree_utils: arithmetic on whole pytrees (optax.tree_utils), leaf by leaf.

>>> from fnx.optim import tree_utils as otu
>>> otu.tree_l2_norm({"a": jnp.array([3.0]), "b": jnp.array([4.0])})
Array(5., dtype=float32)
"""
from __future__ import annotations

import functools
import operator
from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core.pytree import (register_pytree_node_class, tree_flatten, tree_leaves, tree_map,
                           tree_unflatten)


def _is_none(x):
    return x is None


def tree_add(tree_x, tree_y, *other_trees):
    """The leafwise sum of two or more trees.

    >>> tree_add({"a": jnp.ones(2)}, {"a": jnp.ones(2)})
    {'a': Array([2., 2.], dtype=float32)}
    """
    return tree_map(lambda *leaves: sum(leaves[1:], leaves[0]), tree_x, tree_y, *other_trees)


def tree_sub(tree_x, tree_y):
    """``tree_x - tree_y`` leafwise.

    >>> tree_sub({"a": jnp.ones(2)}, {"a": jnp.ones(2)})
    {'a': Array([0., 0.], dtype=float32)}
    """
    return tree_map(operator.sub, tree_x, tree_y)


def tree_mul(tree_x, tree_y):
    """``tree_x * tree_y`` leafwise.

    >>> tree_mul({"a": jnp.array([2.0])}, {"a": jnp.array([3.0])})
    {'a': Array([6.], dtype=float32)}
    """
    return tree_map(operator.mul, tree_x, tree_y)


def tree_div(tree_x, tree_y):
    """``tree_x / tree_y`` leafwise.

    >>> tree_div({"a": jnp.array([3.0])}, {"a": jnp.array([2.0])})
    {'a': Array([1.5], dtype=float32)}
    """
    return tree_map(operator.truediv, tree_x, tree_y)


def tree_scale(scalar, tree):
    """``scalar * tree``.

    >>> tree_scale(2.0, {"a": jnp.array([3.0])})
    {'a': Array([6.], dtype=float32)}
    """
    return tree_map(lambda x: scalar * x, tree)


def tree_add_scale(tree_x, scalar, tree_y):
    """``tree_x + scalar * tree_y`` (None leaves of ``tree_x`` stay None).

    >>> tree_add_scale({"a": jnp.ones(1)}, 0.5, {"a": jnp.ones(1)})
    {'a': Array([1.5], dtype=float32)}
    """
    scalar = jnp.asarray(scalar)
    return tree_map(lambda x, y: None if x is None else x + scalar * y, tree_x, tree_y,
                    is_leaf=_is_none)


def _vdot_safe(a, b):
    return jnp.vdot(jnp.asarray(a), jnp.asarray(b))


def tree_vdot(tree_x, tree_y):
    """The inner product of two trees: ``sum(vdot(x, y))`` over their leaves.

    >>> tree_vdot({"a": jnp.array([1.0, 2.0])}, {"a": jnp.array([3.0, 4.0])})
    Array(11., dtype=float32)
    """
    return tree_sum(tree_map(_vdot_safe, tree_x, tree_y))


def tree_sum(tree, associative_reduction: bool = False):
    """The sum of every element of every leaf.

    >>> tree_sum({"a": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)})
    Array(6., dtype=float32)
    """
    del associative_reduction   # one order of sums either way here
    sums = [jnp.sum(x) for x in tree_leaves(tree)]
    return functools.reduce(operator.add, sums, 0) if sums else 0


def tree_max(tree):
    """The largest element of all leaves (``-inf`` for an empty tree).

    >>> tree_max({"a": jnp.array([1.0, 5.0]), "b": jnp.array(3.0)})
    Array(5., dtype=float32)
    """
    maxes = [jnp.max(x) for x in tree_leaves(tree) if jnp.size(x)]
    return functools.reduce(jnp.maximum, maxes, -float("inf"))


def tree_min(tree):
    """The smallest element of all leaves (``inf`` for an empty tree).

    >>> tree_min({"a": jnp.array([1.0, 5.0]), "b": jnp.array(3.0)})
    Array(1., dtype=float32)
    """
    mins = [jnp.min(x) for x in tree_leaves(tree) if jnp.size(x)]
    return functools.reduce(jnp.minimum, mins, float("inf"))


def tree_size(tree) -> int:
    """The number of elements of all leaves.

    >>> tree_size({"a": jnp.ones((2, 3)), "b": jnp.ones(4)})
    10
    """
    return sum(int(jnp.size(x)) for x in tree_leaves(tree))


def tree_conj(tree):
    """The complex conjugate of every leaf.

    >>> tree_conj({"a": jnp.array([1 + 2j])})
    {'a': Array([1.-2.j], dtype=complex64)}
    """
    return tree_map(jnp.conj, tree)


def tree_real(tree):
    """The real part of every leaf.

    >>> tree_real({"a": jnp.array([1 + 2j])})
    {'a': Array([1.], dtype=float32)}
    """
    return tree_map(jnp.real, tree)


def _square(x):
    x = jnp.asarray(x)
    return jnp.real(x * jnp.conj(x)) if jnp.iscomplexobj(x) else x * x


def tree_norm(tree, ord=None, squared: bool = False):  # noqa: A002 (optax's name)
    """The norm of all leaves as one vector: ``ord`` 2 (default), 1 or ``inf``.

    >>> tree_norm({"a": jnp.array([3.0]), "b": jnp.array([-4.0])}, ord=1)
    Array(7., dtype=float32)
    """
    if ord is None or ord == 2:
        sq = tree_sum(tree_map(_square, tree))
        return jnp.asarray(sq if squared else jnp.sqrt(sq))
    if ord == 1:
        out = tree_sum(tree_map(jnp.abs, tree))
    elif ord == jnp.inf or ord in ("inf", "infinity"):
        out = tree_max(tree_map(jnp.abs, tree))
    else:
        raise ValueError(f"tree_norm: unsupported ord {ord!r}; use None, 1, 2 or inf")
    return jnp.asarray(_square(out) if squared else out)


def tree_l2_norm(tree, squared: bool = False):
    """The l2 norm of all leaves as one vector (optax's older name for ``tree_norm``).

    >>> tree_l2_norm({"a": jnp.array([3.0]), "b": jnp.array([4.0])}, squared=True)
    Array(25., dtype=float32)
    """
    return tree_norm(tree, 2, squared)


def tree_batch_shape(tree, shape: tuple = ()):
    """Every leaf broadcast to ``shape + leaf.shape``.

    >>> tree_batch_shape({"a": jnp.ones(2)}, (3,))["a"].shape
    (3, 2)
    """
    return tree_map(lambda x: jnp.broadcast_to(x, (*shape, *jnp.shape(x))), tree)


def tree_zeros_like(tree, dtype=None):
    """Zeros shaped like each leaf.

    >>> tree_zeros_like({"a": jnp.ones(2)})
    {'a': Array([0., 0.], dtype=float32)}
    """
    return tree_map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree, dtype=None):
    """Ones shaped like each leaf.

    >>> tree_ones_like({"a": jnp.zeros(2)})
    {'a': Array([1., 1.], dtype=float32)}
    """
    return tree_map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree, fill_value, dtype=None):
    """``fill_value`` shaped like each leaf.

    >>> tree_full_like({"a": jnp.zeros(2)}, 7.0)
    {'a': Array([7., 7.], dtype=float32)}
    """
    return tree_map(lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_clip(tree, min_value=None, max_value=None):
    """Every leaf clipped to ``[min_value, max_value]``.

    >>> tree_clip({"a": jnp.array([-2.0, 0.5, 2.0])}, -1.0, 1.0)
    {'a': Array([-1. ,  0.5,  1. ], dtype=float32)}
    """
    return tree_map(lambda g: jnp.clip(g, min_value, max_value), tree)


def tree_where(condition, tree_x, tree_y):
    """``where(condition, x, y)`` leafwise, for one (scalar) ``condition``.

    >>> tree_where(True, {"a": jnp.ones(1)}, {"a": jnp.zeros(1)})
    {'a': Array([1.], dtype=float32)}
    """
    return tree_map(lambda x, y: jnp.where(condition, x, y), tree_x, tree_y)


def tree_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every pair of leaves is ``allclose``.

    >>> bool(tree_allclose({"a": jnp.ones(2)}, {"a": jnp.ones(2) + 1e-9}))
    True
    """
    close = [jnp.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
             for x, y in zip(tree_leaves(a), tree_leaves(b))]
    tree_map(lambda x, y: None, a, b)   # the same structure, or tree_map's error
    return functools.reduce(operator.and_, close, jnp.asarray(True))


def tree_cast(tree, dtype):
    """Every leaf cast to ``dtype`` (the tree unchanged for None).

    >>> tree_cast({"a": jnp.ones(1)}, jnp.int32)
    {'a': Array([1], dtype=int32)}
    """
    return tree if dtype is None else tree_map(lambda t: t.astype(dtype), tree)


def tree_cast_like(tree, other_tree):
    """Every leaf cast to the dtype of the matching leaf of ``other_tree``.

    >>> tree_cast_like({"a": jnp.ones(1)}, {"a": jnp.zeros(1, jnp.int32)})
    {'a': Array([1], dtype=int32)}
    """
    return tree_map(lambda t, o: t.astype(o.dtype) if hasattr(o, "dtype") else t,
                    tree, other_tree)


def tree_dtype(tree, mixed_dtype_handler: str | None = None):
    """The dtype of the leaves: one common dtype (``None``: they must agree), or their
    ``"promote"``-d, ``"highest"`` or ``"lowest"`` dtype.

    >>> tree_dtype({"a": jnp.ones(1), "b": jnp.ones(1, jnp.int32)}, "promote")
    dtype('float32')
    """
    dts = [jnp.asarray(x).dtype for x in tree_leaves(tree)]
    if not dts:
        return jnp.asarray([]).dtype
    if mixed_dtype_handler is None:
        if any(d != dts[0] for d in dts):
            raise ValueError(f"tree_dtype: the leaves have different dtypes "
                             f"{sorted(set(map(str, dts)))}; pass mixed_dtype_handler='promote', 'highest' or 'lowest'")
        return dts[0]
    if mixed_dtype_handler == "promote":
        return functools.reduce(jnp.promote_types, dts)
    if mixed_dtype_handler in ("highest", "lowest"):
        def bits(d):
            return (jnp.dtype(d).itemsize, jnp.issubdtype(d, jnp.inexact))
        pick = max if mixed_dtype_handler == "highest" else min
        return pick(dts, key=bits)
    raise ValueError(f"tree_dtype: invalid mixed_dtype_handler {mixed_dtype_handler!r}; use "
                     "None, 'promote', 'highest' or 'lowest'")


def tree_split_key_like(rng_key, target_tree):
    """One fresh key per leaf of ``target_tree``, in a tree of its structure.

    >>> keys = tree_split_key_like(fnx.random.PRNGKey(0), {"a": 1.0, "b": 2.0})
    >>> sorted(keys)
    ['a', 'b']
    """
    from .. import random
    leaves, treedef = tree_flatten(target_tree)
    keys = random.split(rng_key, len(leaves))
    return tree_unflatten(treedef, [keys[i] for i in range(len(leaves))])


def tree_random_like(rng_key, target_tree, sampler=None, dtype=None):
    """Random leaves shaped like ``target_tree``'s, each from its own key: ``sampler(key,
    shape, dtype)`` (default: a standard normal).

    >>> tree_random_like(fnx.random.PRNGKey(0), {"a": jnp.zeros(3)})["a"].shape
    (3,)
    """
    from .. import random
    sampler = random.normal if sampler is None else sampler
    keys = tree_split_key_like(rng_key, target_tree)
    return tree_map(lambda leaf, key: sampler(key, jnp.shape(leaf),
                                              dtype or jnp.asarray(leaf).dtype),
                    target_tree, keys)


def tree_unwrap_random_key_data(input_tree):
    """Typed random keys replaced by their raw data (other leaves unchanged).

    >>> tree_unwrap_random_key_data({"k": fnx.random.key(0)})["k"].dtype
    dtype('uint32')
    """
    return tree_map(_unwrap_key, input_tree, is_leaf=lambda x: hasattr(x, "dtype"))


def _unwrap_key(x):
    from .. import dtypes, random
    typed = hasattr(x, "dtype") and jnp.issubdtype(x.dtype, dtypes.prng_key)
    return random.key_data(x) if typed else x


# Finding and replacing values in an optimizer state by their field or key name


class NamedTupleKey(NamedTuple):
    """A path entry naming a NamedTuple's field (``tuple_name``, ``name``), as in the paths
    that ``tree_get_all_with_path`` returns.

    >>> NamedTupleKey("ScaleByAdamState", "mu")
    NamedTupleKey(tuple_name='ScaleByAdamState', name='mu')
    """
    tuple_name: str
    name: str


def _children(node):
    """``(path entry, child, name)`` of a container; None for a leaf."""
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return [(NamedTupleKey(type(node).__name__, f), getattr(node, f), f)
                for f in node._fields]
    if isinstance(node, dict):
        return [(k, v, k) for k, v in node.items()]
    if isinstance(node, (list, tuple)):
        return [(i, v, None) for i, v in enumerate(node)]
    return None


def tree_get_all_with_path(tree, key, filtering=None):
    """Every ``(path, value)`` in ``tree`` whose field or dict key is named ``key`` (``key``
    may also be a NamedTuple class: its instances), kept where ``filtering(path, value)``.

    >>> state = fnx.optim.adam(0.1).init({"w": jnp.zeros(2)})
    >>> [value for _, value in tree_get_all_with_path(state, "count")]
    [Array(0, dtype=int32)]
    """
    found = []

    def visit(node, path):
        if isinstance(key, type) and isinstance(node, key):
            if filtering is None or filtering(path, node):
                found.append((path, node))
        children = _children(node)
        for entry, child, name in children or ():
            sub = (*path, entry)
            if not isinstance(key, type) and name == key and (
                    filtering is None or filtering(sub, child)):
                found.append((sub, child))
            visit(child, sub)
    visit(tree, ())
    return found


def tree_get(tree, key, default=None, filtering=None):
    """The one value in ``tree`` named ``key`` (``default`` if none; an error if several).

    >>> state = fnx.optim.inject_hyperparams(fnx.optim.sgd)(learning_rate=0.1).init(jnp.zeros(2))
    >>> tree_get(state, "learning_rate")
    Array(0.1, dtype=float32)
    """
    found = tree_get_all_with_path(tree, key, filtering)
    if len(found) > 1:
        raise KeyError(f"tree_get: {len(found)} values are named {key!r} "
                       f"(at {[p for p, _ in found]}); pass filtering= to choose one")
    return found[0][1] if found else default


def tree_set(tree, filtering=None, /, **kwargs):
    """``tree`` with the values of the fields or dict keys named in ``kwargs`` replaced (where
    ``filtering(path, value)``, if given).

    >>> state = fnx.optim.inject_hyperparams(fnx.optim.sgd)(learning_rate=0.1).init(jnp.zeros(2))
    >>> tree_get(tree_set(state, learning_rate=0.5), "learning_rate")
    0.5
    """
    def rebuild(node, path):
        children = _children(node)
        if children is None:
            return node
        new = []
        for entry, child, name in children:
            sub = (*path, entry)
            if name is not None and name in kwargs and (filtering is None
                                                        or filtering(sub, child)):
                value = kwargs[name]
                new.append(value(child) if callable(value) else value)
            else:
                new.append(rebuild(child, sub))
        if isinstance(node, dict):
            return type(node)(zip(node.keys(), new))
        if hasattr(node, "_fields"):
            return type(node)(*new)
        return type(node)(new)
    return rebuild(tree, ())


# Mapping over the parameter-shaped parts of an optimizer state


@register_pytree_node_class
class _ParamsPlaceholder:
    """A leafless stand-in for the parameters: ``init`` copies it wherever a state holds a
    tree shaped like them, which marks those places."""

    def tree_flatten(self):
        return (), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls()


def tree_map_params(initable, f, state, /, *rest, transform_non_params=None, is_leaf=None):
    """``state`` with ``f(leaf, *rest_leaves)`` applied to every parameter-shaped tree in it
    (the trees ``initable.init(params)`` makes from ``params``); other fields go through
    ``transform_non_params`` when given.

    >>> opt = fnx.optim.adam(0.1)
    >>> state = opt.init({"w": jnp.zeros(2)})
    >>> specs = tree_map_params(opt, lambda p: "spec", state, transform_non_params=lambda _: None)
    >>> specs[0].mu, specs[0].count
    ({'w': 'spec'}, None)
    """
    init = initable.init if hasattr(initable, "init") else initable
    marked = init(_ParamsPlaceholder())

    def map_params(mark, value):
        if isinstance(mark, _ParamsPlaceholder):
            return tree_map(f, value, *rest, is_leaf=is_leaf)
        return value if transform_non_params is None else transform_non_params(value)
    return tree_map(map_params, marked, state,
                    is_leaf=lambda v: isinstance(v, _ParamsPlaceholder))


# The moment updates optax's optimizers are written in


def tree_update_moment(updates, moments, decay, order):
    """``(1 - decay) * g ** order + decay * moment`` leafwise.

    >>> tree_update_moment(jnp.array([2.0]), jnp.array([1.0]), 0.5, 2)
    Array([2.5], dtype=float32)
    """
    return tree_map(lambda g, t: None if g is None else (1 - decay) * (g ** order) + decay * t,
                    updates, moments, is_leaf=_is_none)


def tree_update_infinity_moment(updates, moments, decay, eps):
    """``max(|g| + eps, decay * moment)`` leafwise.

    >>> tree_update_infinity_moment(jnp.array([-2.0]), jnp.array([3.0]), 0.5, 0.0)
    Array([2.], dtype=float32)
    """
    return tree_map(lambda g, t: None if g is None else jnp.maximum(jnp.abs(g) + eps, decay * t),
                    updates, moments, is_leaf=_is_none)


def tree_update_moment_per_elem_norm(updates, moments, decay, order):
    """``(1 - decay) * |g| ** order + decay * moment`` leafwise (``|g|`` the modulus for
    complex ``g``).

    >>> tree_update_moment_per_elem_norm(jnp.array([3j]), jnp.array([0.0]), 0.5, 2)
    Array([4.5], dtype=float32)
    """
    def norm(g):
        if not jnp.iscomplexobj(g):
            return g ** order
        half = order / 2
        return _square(g) ** (int(half) if float(half).is_integer() else half)
    return tree_map(lambda g, t: None if g is None else (1 - decay) * norm(g) + decay * t,
                    updates, moments, is_leaf=_is_none)


def tree_bias_correction(moment, decay, count):
    """``moment / (1 - decay ** count)`` leafwise.

    >>> tree_bias_correction(jnp.array([0.5]), 0.5, jnp.array(1))
    Array([1.], dtype=float32)
    """
    correction = 1 - decay ** jnp.asarray(count)
    return tree_map(lambda t: t / correction.astype(t.dtype), moment)


__all__ = ["NamedTupleKey", "tree_add", "tree_add_scale", "tree_allclose", "tree_batch_shape",
           "tree_bias_correction", "tree_cast", "tree_cast_like", "tree_clip", "tree_conj",
           "tree_div", "tree_dtype", "tree_full_like", "tree_get", "tree_get_all_with_path",
           "tree_l2_norm", "tree_map_params", "tree_max", "tree_min", "tree_mul", "tree_norm",
           "tree_ones_like",
           "tree_random_like", "tree_real", "tree_scale", "tree_set", "tree_size",
           "tree_split_key_like", "tree_sub", "tree_sum", "tree_unwrap_random_key_data",
           "tree_update_infinity_moment", "tree_update_moment",
           "tree_update_moment_per_elem_norm", "tree_vdot", "tree_where", "tree_zeros_like"]

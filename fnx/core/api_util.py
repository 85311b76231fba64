"""Flattening functions over pytrees, once (as JAX's api_util.flatten_fun)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import dtypes
from .pytree import (broadcast_prefix, register_pytree_node, tree_flatten, tree_map,
                     tree_unflatten)


def flatten_fun(fun: Callable, in_tree=None, kwargs: dict | None = None):
    """``fun`` over pytrees as a function of flat leaves, and a thunk giving ``fun``'s output
    tree once the flat function has run (the side channel every transformation reads).

    ``in_tree`` unflattens the leaves into ``fun``'s positional arguments; with None, ``fun``
    takes the leaves as they are.

    >>> leaves, tree = fnx.tree_util.tree_flatten(((1.0, 2.0),))
    >>> flat, out_tree = flatten_fun(lambda p: {"sum": p[0] + p[1]}, tree)
    >>> flat(*leaves), out_tree()
    ([3.0], PyTreeDef({'sum': *}))
    """
    store: list = []

    def flat_fun(*leaves):
        args = leaves if in_tree is None else tree_unflatten(in_tree, leaves)
        out_leaves, tree = flatten_outputs(fun(*args, **(kwargs or {})))
        store[:] = [tree]
        return out_leaves

    def out_tree():
        if not store:
            raise RuntimeError("the output tree is known once the flattened function has run")
        return store[0]
    return flat_fun, out_tree


class _Float0:
    """A float0 array in an output tree: a node without leaves, so no traced program carries
    it (float0 holds no values); unflattening the tree gives the array back."""
    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = tuple(shape)


register_pytree_node(_Float0, lambda z: ((), z.shape),
                     lambda shape, _: np.zeros(shape, dtypes.float0))


def is_float0(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == dtypes.float0


def flatten_outputs(out):
    """``tree_flatten(out)`` with float0 arrays (the tangents of integers) kept in the tree,
    not among the leaves.

    >>> leaves, tree = flatten_outputs((1.0, np.zeros(2, fnx.dtypes.float0)))
    >>> leaves, tree_unflatten(tree, leaves)[1].shape
    ([1.0], (2,))
    """
    return tree_flatten(tree_map(lambda x: _Float0(x.shape) if is_float0(x) else x, out))


def batch_float0(out, axes, size):
    """``out`` with each float0 leaf (kept out of the traced program, so per example or per
    iteration) given the axis of ``size`` its entry of the prefix ``axes`` names (vmap's
    ``out_axes``, scan's stacked outputs), as JAX returns it."""
    leaves, tree = tree_flatten(out)
    if not any(is_float0(x) for x in leaves):
        return out
    axes = broadcast_prefix(axes, out, "out_axes")
    leaves = [np.zeros(np.insert(x.shape, d % (x.ndim + 1), size).astype(int), x.dtype)
              if is_float0(x) and d is not None else x for x, d in zip(leaves, axes)]
    return tree_unflatten(tree, leaves)


__all__ = ["batch_float0", "flatten_fun", "flatten_outputs", "is_float0"]

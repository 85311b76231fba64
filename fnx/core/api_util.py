"""Flattening functions over pytrees, once (as JAX's api_util.flatten_fun)."""
from __future__ import annotations

from typing import Callable

from .pytree import tree_flatten, tree_unflatten


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
        out_leaves, tree = tree_flatten(fun(*args, **(kwargs or {})))
        store[:] = [tree]
        return out_leaves

    def out_tree():
        if not store:
            raise RuntimeError("the output tree is known once the flattened function has run")
        return store[0]
    return flat_fun, out_tree


__all__ = ["flatten_fun"]

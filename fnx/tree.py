"""fnx.tree: the pytree functions under JAX's short names, as ``jax.tree``.

>>> import fnx
>>> fnx.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (4, 6)}
"""
from __future__ import annotations

import dataclasses as _dataclasses

from .core import pytree as _pt

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]


def all(tree, *, is_leaf=None) -> bool:  # noqa: A001 - jax.tree's name
    """Whether every leaf is truthy.

    >>> fnx.tree.all([True, (1, 2.0)])
    True
    """
    return _pt.tree_all(tree, is_leaf=is_leaf)


def map(f, tree, *rest, is_leaf=None):  # noqa: A001 - jax.tree's name
    """Apply ``f`` leafwise over one or several trees of the same structure.

    >>> fnx.tree.map(lambda x, y: x + y, [1, 2], [10, 20])
    [11, 22]
    """
    return _pt.tree_map(f, tree, *rest, is_leaf=is_leaf)


def map_with_path(f, tree, *rest, is_leaf=None):
    """``map`` whose ``f`` also receives each leaf's key path first.

    >>> fnx.tree.map_with_path(lambda path, x: len(path), {"a": [1]})
    {'a': [2]}
    """
    return _pt.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf)


def leaves(tree, is_leaf=None) -> list:
    """The leaves, in flattening order (dict keys sorted).

    >>> fnx.tree.leaves({"b": 2, "a": [1, None]})
    [1, 2]
    """
    return _pt.tree_leaves(tree, is_leaf)


def leaves_with_path(tree, is_leaf=None) -> list:
    """``[(key_path, leaf), ...]``.

    >>> fnx.tree.leaves_with_path([7])
    [((SequenceKey(idx=0),), 7)]
    """
    return _pt.tree_leaves_with_path(tree, is_leaf)


def structure(tree, is_leaf=None):
    """The treedef of ``tree``.

    >>> fnx.tree.structure((1, [2]))
    PyTreeDef((*, [*]))
    """
    return _pt.tree_structure(tree, is_leaf)


def flatten(tree, is_leaf=None):
    """``(leaves, treedef)``.

    >>> fnx.tree.flatten([1, (2,)])[0]
    [1, 2]
    """
    return _pt.tree_flatten(tree, is_leaf)


def flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf), ...], treedef)``.

    >>> leaves, treedef = fnx.tree.flatten_with_path({"a": 1, "b": (2,)})
    >>> leaves
    [((DictKey(key='a'),), 1), ((DictKey(key='b'), SequenceKey(idx=0)), 2)]
    """
    return _pt.tree_flatten_with_path(tree, is_leaf)


def unflatten(treedef, leaves):
    """The tree of ``treedef``'s structure holding ``leaves``.

    >>> fnx.tree.unflatten(fnx.tree.structure([0, 0]), [1, 2])
    [1, 2]
    """
    return _pt.tree_unflatten(treedef, leaves)


def reduce(function, tree, initializer=_pt._NO_INIT, is_leaf=None):
    """``functools.reduce`` over the leaves.

    >>> fnx.tree.reduce(max, [3, (7, 5)])
    7
    """
    return _pt.tree_reduce(function, tree, initializer, is_leaf)


def reduce_associative(operation, tree, *, identity=_pt._NO_INIT, is_leaf=None):
    """The leaves combined by the associative ``operation`` pairwise, in a balanced tree of
    logarithmic depth; ``identity`` is the result for a tree with no leaves.

    >>> import operator
    >>> fnx.tree.reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]])
    21
    """
    level = _pt.tree_leaves(tree, is_leaf)
    if not level:
        if identity is _pt._NO_INIT:
            raise TypeError("reduce_associative: the tree has no leaves; pass identity= for "
                            "its result")
        return identity
    while len(level) > 1:
        pairs = [operation(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(level) - len(level) % 2:]
    return level[0]


def static(**kwargs):
    """A ``dataclasses.field`` marked static, so ``register_dataclass`` keeps it as aux data.

    >>> import dataclasses
    >>> @fnx.tree_util.register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...     x: float
    ...     kind: str = fnx.tree.static(default="add")
    >>> fnx.tree.leaves(Op(1.0))
    [1.0]
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return _dataclasses.field(**kwargs, metadata=metadata)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """An outer tree of inner trees as an inner tree of outer trees.

    >>> fnx.tree.transpose(fnx.tree.structure([0, 0]), None, [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    return _pt.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def broadcast(prefix_tree, full_tree, is_leaf=None):
    """``full_tree``'s structure filled from the ``prefix_tree`` leaves covering it.

    >>> fnx.tree.broadcast({"a": 0, "b": 1}, {"a": (5, 6), "b": 7})
    {'a': (0, 0), 'b': 1}
    """
    return _pt.tree_broadcast(prefix_tree, full_tree, is_leaf)

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""Pytrees: nested containers whose leaves are arrays.

Lists, tuples, dicts (keys sorted), None, NamedTuples, and registered classes/dataclasses are
containers; everything else is a leaf.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple


class _NodeType(NamedTuple):
    to_iterable: Callable      # node -> (children, aux_data)
    from_iterable: Callable    # (aux_data, children) -> node


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable):
    """Register a container type.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    """
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func)
    return nodetype


def register_pytree_node_class(cls):
    """Decorator: ``cls`` has ``tree_flatten(self)`` and classmethod ``tree_unflatten``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(cls=None, *, data_fields=None, meta_fields=None):
    """Register a dataclass; fields in ``meta_fields`` (or with ``metadata={"static": True}``)
    are static auxiliary data, the rest are children."""
    def wrap(cls):
        fields = [f for f in dataclasses.fields(cls)]
        meta = list(meta_fields) if meta_fields is not None else \
            [f.name for f in fields if f.metadata.get("static", False)]
        data = list(data_fields) if data_fields is not None else \
            [f.name for f in fields if f.name not in meta]

        def flatten(x):
            return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

        def unflatten(aux, children):
            obj = object.__new__(cls)
            for n, v in zip(data, children):
                object.__setattr__(obj, n, v)
            for n, v in zip(meta, aux):
                object.__setattr__(obj, n, v)
            return obj
        register_pytree_node(cls, flatten, unflatten)
        return cls
    return wrap if cls is None else wrap(cls)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda l: (l, None), lambda _, c: list(c))
register_pytree_node(type(None), lambda n: ((), None), lambda _, c: None)


def _dict_flatten(d):
    keys = sorted(d.keys(), key=lambda k: (type(k).__name__, k))
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))


def _node_type(x):
    t = type(x)
    nt = _registry.get(t)
    if nt is not None:
        return nt
    if isinstance(x, tuple) and hasattr(x, "_fields"):   # NamedTuple
        return _NodeType(lambda x: (tuple(x), None), lambda _, c, t=t: t(*c))
    return None


class PyTreeDef:
    """The structure of a pytree: node kinds, aux data and the number of leaves. Hashed once,
    at construction, since jit looks every call's structure up in its cache."""
    __slots__ = ("node", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node, aux, children):
        self.node = node          # None for a leaf
        self.aux = aux
        self.children = tuple(children)
        self.num_leaves = 1 if node is None else sum(c.num_leaves for c in self.children)
        self._hash = hash((node, _hashable(aux), tuple(c._hash for c in self.children)))

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children)

    def __eq__(self, other):
        return self is other or (isinstance(other, PyTreeDef) and self._hash == other._hash
                                 and self.node == other.node and self.aux == other.aux
                                 and self.children == other.children)

    def __hash__(self):
        return self._hash

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def __repr__(self):
        return f"PyTreeDef({self._pp()})"

    def _pp(self):
        if self.node is None:
            return "*"
        kids = ", ".join(c._pp() for c in self.children)
        if self.node is list:
            return f"[{kids}]"
        if self.node is tuple:
            return f"({kids}{',' if len(self.children) == 1 else ''})"
        if self.node is dict:
            return "{" + ", ".join(f"{k!r}: {c._pp()}" for k, c in zip(self.aux, self.children)) + "}"
        if self.node is type(None):
            return "None"
        return f"{getattr(self.node, '__name__', self.node)}({kids})"


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


_LEAF = None
_LEAF_DEF = PyTreeDef(_LEAF, None, ())


def _flatten(x, leaves, is_leaf):
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF_DEF
    t = type(x)
    if t is list or t is tuple:
        return PyTreeDef(t, None, [_flatten(c, leaves, is_leaf) for c in x])
    nt = _node_type(x)
    if nt is None:
        leaves.append(x)
        return _LEAF_DEF
    children, aux = nt.to_iterable(x)
    node = type(x)
    return PyTreeDef(node, aux, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)``.

    >>> tree_flatten({"a": 1, "b": (2, 3)})[0]
    [1, 2, 3]
    """
    leaves: list = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _unflatten(treedef: PyTreeDef, it):
    if treedef.node is _LEAF:
        return next(it)
    children = [_unflatten(c, it) for c in treedef.children]
    nt = _registry.get(treedef.node)
    if nt is None:   # NamedTuple
        return treedef.node(*children)
    return nt.from_iterable(treedef.aux, children)


def tree_unflatten(treedef: PyTreeDef, leaves):
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree structure {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """Apply ``f`` leafwise over one or several trees of the same structure.

    >>> tree_map(lambda x, y: x + y, [1, 2], [10, 20])
    [11, 22]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [flatten_up_to(treedef, r, "tree_map") for r in rest]
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def flatten_up_to(treedef: PyTreeDef, tree, what: str = "tree") -> list:
    """Leaves of ``tree`` cut at ``treedef``'s structure (its leaves may be subtrees)."""
    out: list = []

    def go(td, x, path):
        if td.node is _LEAF:
            out.append(x)
            return
        nt = _node_type(x)
        if nt is None or type(x) is not td.node and not (td.node is tuple and
                                                          isinstance(x, tuple)):
            raise ValueError(f"{what}: expected a {getattr(td.node, '__name__', td.node)} at "
                             f"{path or 'the root'}, got {type(x).__name__}")
        children, aux = nt.to_iterable(x)
        if len(children) != len(td.children) or (td.node is dict and aux != td.aux):
            raise ValueError(f"{what}: structures differ at {path or 'the root'}: "
                             f"{td} vs {tree_structure(x)}")
        for i, (c_td, c) in enumerate(zip(td.children, children)):
            go(c_td, c, f"{path}[{td.aux[i]!r}]" if td.node is dict else f"{path}[{i}]")
    go(treedef, tree, "")
    return out


def broadcast_prefix(prefix, tree, what: str, is_leaf=None) -> list:
    """One entry of ``prefix`` per leaf of ``tree`` (prefix leaves cover whole subtrees), as
    vmap's ``in_axes`` does."""
    leaves_of = []

    def go(p, t):
        if p is None or _node_type(p) is None:
            leaves_of.extend([p] * len(tree_leaves(t, is_leaf)))
            return
        children_p, _ = _node_type(p).to_iterable(p)
        nt = _node_type(t)
        if nt is None:
            raise ValueError(f"{what}: {p!r} is not a prefix of the argument structure")
        children_t, aux_t = nt.to_iterable(t)
        if isinstance(p, dict) and isinstance(t, dict):
            if set(p) != set(t):
                raise ValueError(f"{what}: dict keys {sorted(p)} do not match {sorted(t)}")
            children_p = [p[k] for k in aux_t]
        if len(children_p) != len(children_t):
            raise ValueError(f"{what}: {p!r} has {len(children_p)} entries where the argument "
                             f"has {len(children_t)}")
        for a, b in zip(children_p, children_t):
            go(a, b)
    go(prefix, tree)
    return leaves_of


def all_leaves(iterable, is_leaf=None):
    return all(tree_structure(x, is_leaf).node is _LEAF for x in iterable)


def tree_all(tree):
    return all(tree_leaves(tree))


def tree_reduce(f, tree, initializer=None):
    import functools
    leaves = tree_leaves(tree)
    return functools.reduce(f, leaves) if initializer is None else \
        functools.reduce(f, leaves, initializer)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node is _LEAF

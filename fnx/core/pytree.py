"""Pytrees: nested containers whose leaves are arrays.

Lists, tuples, dicts (keys sorted), None, NamedTuples, and registered classes/dataclasses are
containers; everything else is a leaf.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, NamedTuple, Tuple, TypeVar

from .errors import TreeStructureError, types_str as _types_str  # (not fnx.tree_util API)


class _NodeType(NamedTuple):
    to_iterable: Callable      # node -> (children, aux_data)
    from_iterable: Callable    # (aux_data, children) -> node


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable):
    """Register a container type.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> _ = register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves(Pair(1, [2, 3]))
    [1, 2, 3]
    """
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func)
    _key_registry.pop(nodetype, None)   # a re-registration without keys drops the old ones


def register_pytree_node_class(cls):
    """Decorator: ``cls`` has ``tree_flatten(self)`` and classmethod ``tree_unflatten``.

    >>> @fnx.tree_util.register_pytree_node_class
    ... class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    ...     def tree_flatten(self):
    ...         return (self.a, self.b), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children):
    ...         return cls(*children)
    >>> fnx.tree_util.tree_map(lambda v: v * 10, Pair(1, 2)).b
    20
    """
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


# ---------------------------------------------------------------------------------------------
# Key paths: each child of a node is named by a key, and a leaf by the tuple of keys leading to it


@dataclasses.dataclass(frozen=True)
class DictKey:
    """A dict entry: ``DictKey(key='a')``, printed ``['a']``.

    >>> fnx.tree_util.DictKey("a"), str(fnx.tree_util.DictKey("a"))
    (DictKey(key='a'), "['a']")
    """
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A list or tuple element: ``SequenceKey(idx=0)``, printed ``[0]``.

    >>> fnx.tree_util.SequenceKey(0), str(fnx.tree_util.SequenceKey(0))
    (SequenceKey(idx=0), '[0]')
    """
    idx: int

    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """An attribute (NamedTuple field, dataclass field): ``GetAttrKey(name='x')``, printed
    ``.x``.

    >>> fnx.tree_util.GetAttrKey("x"), str(fnx.tree_util.GetAttrKey("x"))
    (GetAttrKey(name='x'), '.x')
    """
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The position of a child of a node registered without keys.

    >>> fnx.tree_util.FlattenedIndexKey(1), str(fnx.tree_util.FlattenedIndexKey(1))
    (FlattenedIndexKey(key=1), '[<flat index 1>]')
    """
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text; ``simple=True`` drops the brackets, quotes and dots.

    >>> keystr((DictKey("a"), SequenceKey(0)))
    "['a'][0]"
    >>> keystr((DictKey("a"), SequenceKey(0)), simple=True, separator="/")
    'a/0'
    """
    if not simple:
        return separator.join(map(str, keys))
    return separator.join(str(getattr(k, f.name)) for k in keys
                          for f in dataclasses.fields(k)[:1])


# node type -> (node -> ([(key, child), ...], aux_data))
_key_registry: dict[type, Callable] = {}


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None):
    """Register a container type whose children are named by keys in key paths.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> _ = register_pytree_with_keys(
    ...     Pair, lambda p: (((GetAttrKey("a"), p.a), (GetAttrKey("b"), p.b)), None),
    ...     lambda _, c: Pair(*c))
    >>> [keystr(path) for path, _ in tree_flatten_with_path(Pair(1, 2))[0]]
    ['.a', '.b']
    """
    if flatten_func is None:
        def flatten_func(x):
            keyed, aux = flatten_with_keys(x)
            return [c for _, c in keyed], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func)
    _key_registry[nodetype] = flatten_with_keys


def register_pytree_with_keys_class(cls):
    """Decorator: ``cls`` has ``tree_flatten_with_keys(self)``, classmethod ``tree_unflatten``
    and optionally ``tree_flatten(self)``.

    >>> @fnx.tree_util.register_pytree_with_keys_class
    ... class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    ...     def tree_flatten_with_keys(self):
    ...         keys = fnx.tree_util.GetAttrKey("a"), fnx.tree_util.GetAttrKey("b")
    ...         return list(zip(keys, (self.a, self.b))), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children):
    ...         return cls(*children)
    >>> fnx.tree_util.tree_leaves_with_path(Pair(1, 2))
    [((GetAttrKey(name='a'),), 1), ((GetAttrKey(name='b'),), 2)]
    """
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              flatten)
    return cls


def register_static(cls):
    """Register ``cls`` as a node with no children: its instances travel as static aux data
    (so they must be hashable), e.g. a configuration object passed to a jitted function.

    >>> @register_static
    ... @dataclasses.dataclass(frozen=True)
    ... class Config:
    ...     depth: int
    """
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


def register_dataclass(cls=None, *, data_fields=None, meta_fields=None):
    """Register a dataclass; fields in ``meta_fields`` (or with ``metadata={"static": True}``)
    are static auxiliary data, the rest are children.

    >>> import dataclasses
    >>> @fnx.tree_util.register_dataclass
    ... @dataclasses.dataclass
    ... class Point:
    ...     x: float
    ...     y: float
    ...     name: str = dataclasses.field(default="p", metadata={"static": True})
    >>> fnx.tree_util.tree_leaves(Point(1.0, 2.0))
    [1.0, 2.0]
    """
    def wrap(cls):
        # with both lists given, any class will do, as in JAX
        fields = dataclasses.fields(cls) if data_fields is None or meta_fields is None else ()
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
        def flatten_with_keys(x):
            children, aux = flatten(x)
            return [(GetAttrKey(n), c) for n, c in zip(data, children)], aux
        register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
        return cls
    return wrap if cls is None else wrap(cls)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda l: (l, None), lambda _, c: list(c))
register_pytree_node(type(None), lambda n: ((), None), lambda _, c: None)


def _dict_flatten(d):
    try:
        keys = sorted(d.keys())
    except TypeError:       # keys of types that do not compare (1 and "y"): as JAX
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys: "
                         f"{list(d.keys())!r:.200}") from None
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))


def _sequence_keys(x):
    return [(SequenceKey(i), c) for i, c in enumerate(x)], None


def _dict_keys(d):
    children, keys = _dict_flatten(d)
    return [(DictKey(k), c) for k, c in zip(keys, children)], keys


_key_registry.update({tuple: _sequence_keys, list: _sequence_keys, dict: _dict_keys,
                      type(None): lambda _: ([], None)})


# JAX's two other dicts: an OrderedDict keeps its insertion order, a defaultdict sorts its keys
# and keeps its default factory
def _ordered_dict_keys(d):
    keys = tuple(d.keys())
    return [(DictKey(k), d[k]) for k in keys], keys


def _default_dict_keys(d):
    children, keys = _dict_flatten(d)
    return [(DictKey(k), c) for k, c in zip(keys, children)], (d.default_factory, keys)


register_pytree_with_keys(
    collections.OrderedDict, _ordered_dict_keys,
    lambda keys, c: collections.OrderedDict(zip(keys, c)),
    lambda d: (list(d.values()), tuple(d.keys())))
register_pytree_with_keys(
    collections.defaultdict, _default_dict_keys,
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
    lambda d: (lambda children, keys: (children, (d.default_factory, keys)))(*_dict_flatten(d)))


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
    at construction, since jit looks every call's structure up in its cache.

    >>> treedef = fnx.tree_util.tree_structure({"a": 1, "b": (2, 3)})
    >>> treedef, treedef.num_leaves
    (PyTreeDef({'a': *, 'b': (*, *)}), 3)
    """
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
        name = getattr(self.node, "__name__", self.node)
        if isinstance(self.node, type) and issubclass(self.node, tuple) and \
                hasattr(self.node, "_fields"):
            return f"CustomNode(namedtuple[{name}], [{kids}])"
        return f"CustomNode({name}[{self.aux!r}], [{kids}])"


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
    """The tree of structure ``treedef`` holding ``leaves``: the inverse of
    ``tree_flatten``.

    >>> leaves, treedef = fnx.tree_util.tree_flatten((1, [2, 3]))
    >>> fnx.tree_util.tree_unflatten(treedef, [x * 10 for x in leaves])
    (10, [20, 30])
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree structure {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree, is_leaf=None):
    """The leaves of ``tree``, in the order ``tree_flatten`` gives them.

    >>> fnx.tree_util.tree_leaves({"b": (2, 3), "a": 1})
    [1, 2, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The structure (treedef) of ``tree``, without its leaves.

    >>> fnx.tree_util.tree_structure({"a": 1, "b": (2, 3)}).num_leaves
    3
    """
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
    """Leaves of ``tree`` cut at ``treedef``'s structure (its leaves may be subtrees).

    >>> treedef = fnx.tree_util.tree_structure((1, 2))
    >>> fnx.tree_util.flatten_up_to(treedef, ([1, 2], {"c": 3}))
    [[1, 2], {'c': 3}]
    """
    out: list = []

    def go(td, x, path):
        if td.node is _LEAF:
            out.append(x)
            return
        nt = _node_type(x)
        if nt is None or type(x) is not td.node and not (td.node is tuple and
                                                          isinstance(x, tuple)):
            raise TreeStructureError(f"{what}: expected a {getattr(td.node, '__name__', td.node)}"
                                     f" at {path or 'the root'}, got {type(x).__name__}")
        children, aux = nt.to_iterable(x)
        if len(children) != len(td.children) or (td.node is dict and aux != td.aux):
            raise TreeStructureError(f"{what}: structures differ at {path or 'the root'}: "
                                     f"{td} vs {tree_structure(x)}")
        for i, (c_td, c) in enumerate(zip(td.children, children)):
            go(c_td, c, f"{path}[{td.aux[i]!r}]" if td.node is dict else f"{path}[{i}]")
    go(treedef, tree, "")
    return out


def broadcast_prefix(prefix, tree, what: str, is_leaf=None) -> list:
    """One entry of ``prefix`` per leaf of ``tree`` (prefix leaves cover whole subtrees), as
    vmap's ``in_axes`` does.

    >>> fnx.tree_util.broadcast_prefix((0, None), (jnp.ones(2), {"a": 1, "b": 2}), "in_axes")
    [0, None, None]
    """
    leaves_of = []

    def go(p, t):
        if p is None or _node_type(p) is None:
            leaves_of.extend([p] * len(tree_leaves(t, is_leaf)))
            return
        children_p, _ = _node_type(p).to_iterable(p)
        nt = _node_type(t)
        if nt is None:
            raise TreeStructureError(f"{what}: {p!r} is not a prefix of the argument structure "
                                     f"({_types_str(tree_leaves(t))})")
        children_t, aux_t = nt.to_iterable(t)
        if isinstance(p, dict) and isinstance(t, dict):
            if set(p) != set(t):
                raise TreeStructureError(f"{what}: dict keys {sorted(p)} do not match "
                                         f"{sorted(t)}")
            children_p = [p[k] for k in aux_t]
        if len(children_p) != len(children_t):
            raise TreeStructureError(f"{what} has {len(children_p)} entries for a tree of "
                                     f"{len(children_t)}: ({_types_str(tree_leaves(t))})")
        for a, b in zip(children_p, children_t):
            go(a, b)
    go(prefix, tree)
    return leaves_of


def all_leaves(iterable, is_leaf=None):
    """Whether every element of ``iterable`` is a leaf (a tree of one node).

    >>> fnx.tree_util.all_leaves([1.0, jnp.ones(2)]), fnx.tree_util.all_leaves([(1, 2)])
    (True, False)
    """
    return all(tree_structure(x, is_leaf).node is _LEAF for x in iterable)


def tree_all(tree, *, is_leaf=None):
    """Whether every leaf is truthy (``True`` for a tree with no leaves).

    >>> fnx.tree_util.tree_all([True, {"a": 1}]), fnx.tree_util.tree_all([True, 0])
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


_NO_INIT = object()


def tree_reduce(function, tree, initializer=_NO_INIT, is_leaf=None):
    """``functools.reduce(function, leaves)``, starting from ``initializer`` when given.

    >>> tree_reduce(lambda a, b: a + b, [1, (2, 3)])
    6
    """
    leaves = tree_leaves(tree, is_leaf)
    return functools.reduce(function, leaves) if initializer is _NO_INIT else \
        functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation, tree, *, identity=_NO_INIT, is_leaf=None):
    """Reduce the leaves with the associative ``operation`` as a balanced tree: each half
    reduced, then the two halves combined (JAX's order); ``identity`` is the result for a
    tree with no leaves.

    >>> tree_reduce_associative(lambda a, b: a + b, [1, (2, 3), {"x": 4}])
    10
    """
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_INIT:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity

    def reduce(lo, hi):
        if hi - lo == 1:
            return leaves[lo]
        mid = lo + (hi - lo) // 2
        return operation(reduce(lo, mid), reduce(mid, hi))
    return reduce(0, len(leaves))


def is_tree_node(typ: type) -> bool:
    """Whether instances of ``typ`` are pytree nodes (containers), not leaves.

    >>> is_tree_node(list), is_tree_node(int), is_tree_node(type(None))
    (True, False, True)
    """
    return typ in _registry or (issubclass(typ, tuple) and hasattr(typ, "_fields"))


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is the structure of a single leaf.

    >>> fnx.tree_util.treedef_is_leaf(fnx.tree_util.tree_structure(1.0))
    True
    """
    return treedef.node is _LEAF


def treedef_children(treedef: PyTreeDef) -> list:
    """The treedefs of the root's children.

    >>> treedef_children(tree_structure([1, (2, 3)]))
    [PyTreeDef(*), PyTreeDef((*, *))]
    """
    return list(treedef.children)


def treedef_tuple(treedefs) -> PyTreeDef:
    """The structure of a tuple whose elements have the structures ``treedefs``.

    >>> treedef_tuple([tree_structure(1), tree_structure([1, 2])])
    PyTreeDef((*, [*, *]))
    """
    return PyTreeDef(tuple, None, list(treedefs))


def flatten_one_level(tree):
    """``(children, aux_data)`` of the root node; ValueError for a leaf.

    >>> flatten_one_level({"b": 2, "a": 1})
    ([1, 2], ('a', 'b'))
    """
    nt = _node_type(tree)
    if nt is None:
        raise ValueError(f"can't tree-flatten type: {type(tree).__name__}")
    children, aux = nt.to_iterable(tree)
    return list(children), aux


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree):
    """Turn an outer tree of inner trees into an inner tree of outer trees; ``inner_treedef``
    None takes the structure of the first inner tree.

    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    inners = flatten_up_to(outer_treedef, pytree, "tree_transpose")
    if inner_treedef is None:
        if not inners:
            raise ValueError("tree_transpose: inner_treedef is needed for an empty outer tree")
        inner_treedef = tree_structure(inners[0])
    rows = [flatten_up_to(inner_treedef, t, "tree_transpose") for t in inners]
    columns = zip(*rows) if rows else [[]] * inner_treedef.num_leaves
    return inner_treedef.unflatten([outer_treedef.unflatten(c) for c in columns])


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``full_tree``'s structure, each leaf taken from the ``prefix_tree`` leaf that covers it.

    >>> tree_broadcast([1, 2], [(0, 0), 0])
    [(1, 1), 2]
    """
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = flatten_up_to(prefix_def, full_tree, "tree_broadcast")
    leaves = [p for p, sub in zip(prefix_leaves, subtrees)
              for _ in range(tree_structure(sub, is_leaf).num_leaves)]
    return tree_structure(full_tree, is_leaf).unflatten(leaves)


# ---------------------------------------------------------------------------------------------
# Flattening with key paths


def _keyed_children(x):
    """``[(key, child), ...]`` of a node, or None for a leaf."""
    with_keys = _key_registry.get(type(x))
    if with_keys is not None:
        return list(with_keys(x)[0])
    nt = _node_type(x)
    if nt is None:
        return None
    children = nt.to_iterable(x)[0]
    if type(x) not in _registry:    # a NamedTuple, by field name as in JAX
        return [(GetAttrKey(f), c) for f, c in zip(x._fields, children)]
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]


def flatten_one_level_with_keys(tree):
    """``([(key, child), ...], aux_data)`` of the root node; ValueError for a leaf.

    >>> flatten_one_level_with_keys({"b": 2, "a": 1})
    ([(DictKey(key='a'), 1), (DictKey(key='b'), 2)], ('a', 'b'))
    """
    keyed = _keyed_children(tree)
    if keyed is None:
        raise ValueError(f"can't tree-flatten type: {type(tree).__name__}")
    return keyed, flatten_one_level(tree)[1]


KeyEntry = TypeVar("KeyEntry", bound=Any)   # a key of one step of a path: DictKey, ...
KeyPath = Tuple[KeyEntry, ...]  # noqa: UP006 - typing's, so it stays out of the API pages


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf), ...], treedef)``: each leaf with the tuple of keys leading to it.

    >>> tree_flatten_with_path({"a": [5]})[0]
    [((DictKey(key='a'), SequenceKey(idx=0)), 5)]
    """
    out: list = []

    def go(x, path):
        kids = None if is_leaf is not None and is_leaf(x) else _keyed_children(x)
        if kids is None:
            out.append((path, x))
            return
        for k, c in kids:
            go(c, path + (k,))
    go(tree, ())
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    """``[(key_path, leaf), ...]``.

    >>> fnx.tree_util.tree_leaves_with_path({"a": [1, 2]})
    [((DictKey(key='a'), SequenceKey(idx=0)), 1),
     ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree, *rest, is_leaf=None):
    """``tree_map`` whose ``f`` also receives each leaf's key path first.

    >>> tree_map_with_path(lambda p, x: keystr(p), {"a": 1})
    {'a': "['a']"}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = [flatten_up_to(treedef, r, "tree_map_with_path") for r in rest]
    return treedef.unflatten([f(path, x, *xs) for (path, x), *xs in zip(pairs, *others)])


# ---------------------------------------------------------------------------------------------
# Partial


class _HashableCallableShim:
    """Wraps a functools.partial given to Partial, so Python does not merge it into the new
    one: its bound arguments stay static instead of becoming children."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self):
        return hash(self.fun)

    def __eq__(self, other):
        return isinstance(other, _HashableCallableShim) and self.fun == other.fun


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: the function is static aux data and the bound
    arguments are children, so it can be passed to (and returned from) jit, grad and vmap.

    >>> fnx.jit(lambda g, x: g(x))(Partial(fnx.numpy.add, 1.0), 2.0)
    Array(3., dtype=float32, weak_type=True)

    As in JAX, a functools.partial (or Partial) given as the function is kept whole and static.
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _HashableCallableShim(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, c: Partial(func, *c[0], **c[1]))


class _Registry:
    """The pytree node registry as an object (``jax.tree_util.default_registry``): its
    methods read and extend the same registry as the module's functions.

    >>> fnx.tree_util.default_registry.flatten({"b": (1, 2), "a": 3})
    ([3, 1, 2], PyTreeDef({'a': *, 'b': (*, *)}))
    >>> fnx.tree_util.default_registry.flatten_one_level(5) is None
    True
    """

    def flatten(self, tree, leaf_predicate=None):
        """``(leaves, treedef)``, as ``tree_flatten``."""
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        """``(children, aux_data)`` of the root node as its flatten function gives them, or None
        for a leaf."""
        nt = _node_type(tree)
        return None if nt is None else tuple(nt.to_iterable(tree))

    def flatten_one_level_with_keys(self, tree):
        """``([(key, child), ...], aux_data)`` of the root node, or None for a leaf."""
        return flatten_one_level_with_keys(tree) if is_tree_node(type(tree)) else None

    def flatten_with_path(self, tree, is_leaf=None):
        """``([(key_path, leaf), ...], treedef)``, as ``tree_flatten_with_path``."""
        return tree_flatten_with_path(tree, is_leaf)

    def is_node(self, typ: type) -> bool:
        """Whether instances of ``typ`` are nodes."""
        return is_tree_node(typ)

    def register_node(self, nodetype, to_iterable, from_iterable, to_iterable_with_keys=None):
        """Registers ``nodetype``, as ``register_pytree_node`` (with keys if given)."""
        if to_iterable_with_keys is None:
            register_pytree_node(nodetype, to_iterable, from_iterable)
        else:
            register_pytree_with_keys(nodetype, to_iterable_with_keys, from_iterable,
                                      to_iterable)

    def register_dataclass_node(self, nodetype, data_fields, meta_fields):
        """Registers ``nodetype`` by the attributes that are children and those that are static,
        as ``register_dataclass``."""
        register_dataclass(nodetype, data_fields=data_fields, meta_fields=meta_fields)


default_registry = _Registry()

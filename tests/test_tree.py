"""Pytrees: fnx.tree, key paths, Partial, register_static / register_pytree_with_keys,
tree_transpose and tree_broadcast, plus the top-level jacobian, linear_transpose,
block_until_ready and clear_caches."""
import dataclasses
import functools
from typing import NamedTuple

import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
import fnx.random as random
from fnx import tree_util as tu
from fnx.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey


class Point(NamedTuple):
    x: object
    y: object


class Box:
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(Box, lambda b: ((b.a, b.b), None), lambda _, c: Box(*c))


@tu.register_pytree_with_keys_class
class Named:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def tree_flatten_with_keys(self):
        return ((GetAttrKey("lo"), self.lo), (GetAttrKey("hi"), self.hi)), "meta"

    @classmethod
    def tree_unflatten(cls, aux, children):
        assert aux == "meta"
        return cls(*children)


# ---------------------------------------------------------------------------------------------
# fnx.tree


def test_tree_module_is_imported_by_fnx():
    import fnx as f
    assert f.tree.map(lambda x: x + 1, {"a": 1}) == {"a": 2}


def test_tree_map_leaves_structure_flatten_unflatten():
    tree = {"b": [1, (2, None)], "a": 3}
    assert fnx.tree.leaves(tree) == [3, 1, 2]
    leaves, treedef = fnx.tree.flatten(tree)
    assert treedef == fnx.tree.structure(tree)
    assert fnx.tree.unflatten(treedef, [x * 10 for x in leaves]) == \
        {"b": [10, (20, None)], "a": 30}
    assert fnx.tree.map(lambda x, y: x - y, tree, tree) == {"b": [0, (0, None)], "a": 0}


def test_tree_map_is_leaf():
    tree = {"p": (1, 2), "q": [3, 4]}
    out = fnx.tree.map(lambda x: len(x) if isinstance(x, tuple) else x * 2, tree,
                       is_leaf=lambda x: isinstance(x, tuple))
    assert out == {"p": 2, "q": [6, 8]}
    assert fnx.tree.leaves(tree, is_leaf=lambda x: isinstance(x, list)) == [1, 2, [3, 4]]


def test_tree_reduce_and_all():
    assert fnx.tree.reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert fnx.tree.reduce(lambda a, b: a + b, [], 10) == 10
    # None is a real initializer, not "no initializer"
    assert fnx.tree.reduce(lambda a, b: [a, b], [1], None) == [None, 1]
    with pytest.raises(TypeError):
        fnx.tree.reduce(lambda a, b: a + b, [])
    assert fnx.tree.all([True, (1, 2.0)])
    assert not fnx.tree.all({"a": True, "b": [0]})
    assert fnx.tree.all([])
    assert not fnx.tree.all([[], 0], is_leaf=lambda x: x == [])


def test_tree_transpose():
    outer = fnx.tree.structure([0, 0, 0])
    inner = fnx.tree.structure({"a": 0, "b": (0, 0)})
    tree = [{"a": i, "b": (10 * i, 100 * i)} for i in range(3)]
    expected = {"a": [0, 1, 2], "b": ([0, 10, 20], [0, 100, 200])}
    assert fnx.tree.transpose(outer, inner, tree) == expected
    assert fnx.tree.transpose(outer, None, tree) == expected
    assert tu.tree_transpose(outer, inner, tree) == expected
    with pytest.raises(ValueError):
        fnx.tree.transpose(outer, inner, [{"a": 0, "b": 1}] * 3)


def test_tree_broadcast():
    assert fnx.tree.broadcast({"a": 0, "b": 1}, {"a": (5, 6), "b": 7}) == {"a": (0, 0), "b": 1}
    assert fnx.tree.broadcast(9, [1, (2, 3)]) == [9, (9, 9)]
    assert tu.tree_broadcast([1, 2], [(0, 0), 0]) == [(1, 1), 2]
    with pytest.raises(ValueError):
        fnx.tree.broadcast([1, 2], [0, 0, 0])


def test_treedef_children_and_flatten_one_level():
    td = fnx.tree.structure([1, (2, 3), {"k": 4}])
    kids = tu.treedef_children(td)
    assert kids == [fnx.tree.structure(0), fnx.tree.structure((0, 0)),
                    fnx.tree.structure({"k": 0})]
    assert tu.flatten_one_level({"b": 2, "a": 1}) == ([1, 2], ("a", "b"))
    assert tu.flatten_one_level(Point(1, [2]))[0] == [1, [2]]
    with pytest.raises(ValueError):
        tu.flatten_one_level(3.0)


# ---------------------------------------------------------------------------------------------
# Key paths


def test_paths_for_dicts_lists_tuples_none():
    tree = {"b": [1, (2, None)], "a": 3}
    pairs = fnx.tree.leaves_with_path(tree)
    assert pairs == [((DictKey("a"),), 3),
                     ((DictKey("b"), SequenceKey(0)), 1),
                     ((DictKey("b"), SequenceKey(1), SequenceKey(0)), 2)]
    assert [tu.keystr(p) for p, _ in pairs] == ["['a']", "['b'][0]", "['b'][1][0]"]
    assert tu.keystr(pairs[2][0], simple=True, separator="/") == "b/1/0"


def test_path_order_matches_leaf_order():
    tree = {"z": {2: [1.0], 1: 2.0}, "a": Point(3.0, Box(4.0, [5.0])), "m": (6.0,)}
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert [x for _, x in pairs] == fnx.tree.leaves(tree)
    assert treedef == fnx.tree.structure(tree)


def test_paths_for_namedtuples_registered_nodes_and_keyed_classes():
    tree = [Point(1, 2), Box(3, 4), Named(5, 6)]
    paths = [p for p, _ in fnx.tree.leaves_with_path(tree)]
    assert paths == [(SequenceKey(0), GetAttrKey("x")), (SequenceKey(0), GetAttrKey("y")),
                     (SequenceKey(1), FlattenedIndexKey(0)),
                     (SequenceKey(1), FlattenedIndexKey(1)),
                     (SequenceKey(2), GetAttrKey("lo")), (SequenceKey(2), GetAttrKey("hi"))]
    assert tu.keystr(paths[0]) == "[0].x"
    assert tu.keystr(paths[2]) == "[1][<flat index 0>]"
    # the keyed class round-trips through flatten/unflatten (tree_flatten derived from keys)
    out = fnx.tree.map(lambda v: v * 2, Named(1, 2))
    assert (out.lo, out.hi) == (2, 4)


def test_paths_for_registered_dataclass_use_field_names():
    @functools.partial(tu.register_dataclass, data_fields=["w", "b"], meta_fields=["name"])
    @dataclasses.dataclass
    class Params:
        w: object
        b: object
        name: str

    pairs = fnx.tree.leaves_with_path(Params(1.0, 2.0, "p"))
    assert pairs == [((GetAttrKey("w"),), 1.0), ((GetAttrKey("b"),), 2.0)]
    assert fnx.tree.map(lambda x: -x, Params(1.0, 2.0, "p")).b == -2.0


def test_paths_for_nn_modules():
    layer = nn.Linear(random.key(0), 3, 2)
    pairs = fnx.tree.leaves_with_path(layer)
    leaves = fnx.tree.leaves(layer)
    assert len(pairs) == len(leaves) == 2
    assert [p for p, _ in pairs] == [(FlattenedIndexKey(0),), (FlattenedIndexKey(1),)]
    for (_, a), b in zip(pairs, leaves):
        assert a is b


def test_map_with_path_and_is_leaf():
    tree = {"a": [1, 2], "b": 3}
    out = fnx.tree.map_with_path(lambda p, x, y: (tu.keystr(p), x + y), tree, tree)
    assert out == {"a": [("['a'][0]", 2), ("['a'][1]", 4)], "b": ("['b']", 6)}
    out = fnx.tree.map_with_path(lambda p, x: (len(p), x), tree,
                                 is_leaf=lambda x: isinstance(x, list))
    assert out == {"a": (1, [1, 2]), "b": (1, 3)}
    pairs, treedef = fnx.tree.flatten_with_path(tree, is_leaf=lambda x: isinstance(x, list))
    assert pairs == [((DictKey("a"),), [1, 2]), ((DictKey("b"),), 3)]
    assert treedef.num_leaves == 2


def test_key_objects_compare_and_print_like_jax():
    assert DictKey("a") == DictKey("a") and DictKey("a") != DictKey("b")
    assert hash(SequenceKey(1)) == hash(SequenceKey(1))
    assert repr(DictKey("a")) == "DictKey(key='a')"
    assert repr(GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert str(SequenceKey(3)) == "[3]" and str(GetAttrKey("x")) == ".x"


def test_register_pytree_with_keys_function_form():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_with_keys(
        Pair, lambda p: (((DictKey("first"), p.a), (DictKey("second"), p.b)), None),
        lambda _, c: Pair(*c))
    pairs = fnx.tree.leaves_with_path([Pair(1, 2)])
    assert [tu.keystr(p) for p, _ in pairs] == ["[0]['first']", "[0]['second']"]
    # re-registering without keys falls back to flat indices
    tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    assert fnx.tree.leaves_with_path(Pair(1, 2))[1][0] == (FlattenedIndexKey(1),)


# ---------------------------------------------------------------------------------------------
# register_static and Partial


def test_register_static():
    @tu.register_static
    class Config:
        def __init__(self, scale):
            self.scale = scale

        def __eq__(self, other):
            return isinstance(other, Config) and other.scale == self.scale

        def __hash__(self):
            return hash(self.scale)

    cfg = Config(3.0)
    assert fnx.tree.leaves([cfg, 1.0]) == [1.0]
    traces = []

    @fnx.jit
    def f(c, x):
        traces.append(1)
        return x * c.scale

    np.testing.assert_allclose(f(cfg, jnp.ones(2)), [3.0, 3.0])
    np.testing.assert_allclose(f(Config(3.0), jnp.ones(2)), [3.0, 3.0])
    assert len(traces) == 1
    np.testing.assert_allclose(f(Config(5.0), jnp.ones(2)), [5.0, 5.0])
    assert len(traces) == 2


def test_partial_is_a_pytree():
    p = tu.Partial(jnp.add, 1.0)
    leaves, treedef = fnx.tree.flatten(p)
    assert leaves == [1.0]
    q = fnx.tree.unflatten(treedef, [5.0])
    assert isinstance(q, tu.Partial) and float(q(2.0)) == 7.0
    kw = tu.Partial(lambda x, *, s: x * s, s=3.0)
    assert fnx.tree.leaves(kw) == [3.0]


def test_partial_under_jit_traces_once_and_keeps_function_static():
    traces = []

    @fnx.jit
    def apply(g, x):
        traces.append(1)
        return g(x)

    x = jnp.arange(3.0)
    np.testing.assert_allclose(apply(tu.Partial(jnp.multiply, jnp.float32(2.0)), x), [0, 2, 4])
    np.testing.assert_allclose(apply(tu.Partial(jnp.multiply, jnp.float32(5.0)), x), [0, 5, 10])
    assert len(traces) == 1      # a new bound value, the same function: no retrace
    np.testing.assert_allclose(apply(tu.Partial(jnp.add, jnp.float32(5.0)), x), [5, 6, 7])
    assert len(traces) == 2


def test_partial_returned_from_jit_and_through_grad_and_vmap():
    make = fnx.jit(lambda a: tu.Partial(jnp.multiply, a * 2))
    g = make(jnp.float32(3.0))
    assert isinstance(g, tu.Partial) and float(g(1.0)) == 6.0
    d = fnx.grad(lambda p: p(3.0))(tu.Partial(jnp.multiply, 2.0))
    assert isinstance(d, tu.Partial) and float(d.args[0]) == 3.0
    out = fnx.vmap(lambda p: p(3.0))(tu.Partial(jnp.multiply, jnp.arange(3.0)))
    np.testing.assert_allclose(out, [0.0, 3.0, 6.0])


def test_partial_of_a_partial_keeps_inner_arguments_static():
    inner = functools.partial(lambda a, b, c: a + 10 * b + 100 * c, 1.0)
    p = tu.Partial(inner, 2.0)
    assert fnx.tree.leaves(p) == [2.0]
    assert p(3.0) == 321.0


# ---------------------------------------------------------------------------------------------
# Top-level additions


def test_jacobian_is_jacrev():
    assert fnx.jacobian is fnx.jacrev
    x = np.array([0.3, -1.2, 2.0])
    jac = fnx.jacobian(lambda v: jnp.sin(v) * v[0])(x)
    expected = np.diag(np.cos(x) * x[0])
    expected[:, 0] += np.sin(x)
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-6)


def test_linear_transpose_matches_the_matrix_transpose():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    ct = rng.standard_normal(4).astype(np.float32)
    t = fnx.linear_transpose(lambda x: jnp.asarray(a) @ x, fnx.ShapeDtypeStruct((3,), "float32"))
    (out,) = t(ct)
    np.testing.assert_allclose(out, a.T @ ct, rtol=1e-5, atol=1e-5)


def test_linear_transpose_of_pytrees():
    def f(x, y):
        return {"s": 2 * x + jnp.sum(y), "h": x[0]}

    t = fnx.linear_transpose(f, jnp.zeros(3), jnp.zeros(2))
    cx, cy = t({"s": jnp.ones(3), "h": jnp.float32(5.0)})
    np.testing.assert_allclose(cx, [7.0, 2.0, 2.0])
    np.testing.assert_allclose(cy, [3.0, 3.0])
    # the adjoint identity <f(x), c> == <x, f^T(c)> at a random point
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(3), rng.standard_normal(2)
    c = {"s": rng.standard_normal(3), "h": rng.standard_normal()}
    tx, ty = fnx.linear_transpose(f, x, y)(c)
    fx = f(x, y)
    lhs = np.dot(fx["s"], c["s"]) + float(fx["h"]) * c["h"]
    np.testing.assert_allclose(lhs, np.dot(x, tx) + np.dot(y, ty), rtol=1e-10)


def test_linear_transpose_rejects_integer_inputs():
    with pytest.raises(fnx.GradError):
        fnx.linear_transpose(lambda x: x, jnp.arange(3))


def test_block_until_ready_returns_its_argument():
    tree = {"a": jnp.ones(3), "b": [jnp.zeros(2), 5, "label"]}
    assert fnx.block_until_ready(tree) is tree
    x = jnp.ones(2)
    assert fnx.block_until_ready(x) is x


def test_clear_caches_forces_a_retrace():
    traces = []

    @fnx.jit
    def f(x):
        traces.append(1)
        return x + 1

    f(jnp.ones(3))
    f(jnp.ones(3))
    assert len(traces) == 1 and f.cache_size == 1
    fnx.clear_caches()
    assert f.cache_size == 0
    np.testing.assert_allclose(f(jnp.ones(3)), [2.0, 2.0, 2.0])
    assert len(traces) == 2

"""fnx.sharding.AbstractMesh, auto_axes, explicit_axes and reshard with a bare PartitionSpec on
4 virtual CPU devices, and fnx.tree_util.default_registry, against JAX where JAX can run them
(one CPU device: the abstract mesh, the errors, the registry)."""
import collections

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P
from conftest import virtual_cpu_devices

jax = pytest.importorskip("jax")
import jax.sharding as jsh  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def four_devices():
    with virtual_cpu_devices(4):
        yield


def _types(module, names):
    return tuple(getattr(module.AxisType, n) for n in names)


# (sizes, names, axis types by name or None)
MESHES = {
    "auto": ((2, 4), ("data", "model"), None),
    "explicit": ((8,), ("x",), ("Explicit",)),
    "mixed": ((2, 1, 3), ("a", "b", "c"), ("Explicit", "Auto", "Manual")),
    "empty": ((), (), None),
}


@pytest.mark.parametrize("case", MESHES)
def test_abstract_mesh_matches_jax(case):
    sizes, names, types = MESHES[case]
    ours = AbstractMesh(sizes, names, None if types is None else _types(fnx.sharding, types))
    theirs = jsh.AbstractMesh(sizes, names, None if types is None else _types(jsh, types))
    assert repr(ours) == repr(theirs)
    for attr in ("size", "empty", "shape_tuple", "axis_sizes", "axis_names", "auto_axes",
                 "explicit_axes", "manual_axes", "are_all_axes_auto", "are_all_axes_explicit",
                 "are_all_axes_manual"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert dict(ours.shape) == dict(theirs.shape)
    assert ours.abstract_mesh is ours
    assert ours == AbstractMesh(sizes, names, ours.axis_types)
    assert hash(ours) == hash(AbstractMesh(sizes, names, ours.axis_types))
    if names:
        flip = {names[0]: fnx.sharding.AxisType.Explicit}
        assert repr(ours.update_axis_types(flip)) == \
            repr(theirs.update_axis_types({names[0]: jsh.AxisType.Explicit}))
        assert ours.update(axis_sizes=(1,) * len(sizes)).size == 1


@pytest.mark.parametrize("make, error", [
    (lambda m: m.AbstractMesh((2,), ("x",), ("Auto",)), TypeError),
    (lambda m: m.AbstractMesh((2,), ("x",), (m.AxisType.Auto,) * 2), ValueError),
    (lambda m: m.AbstractMesh((2,), ("x",)).devices, ValueError),
    (lambda m: m.AbstractMesh((2,), ("x",)).device_ids, ValueError),
    (lambda m: m.AbstractMesh((2,), ("x",)).__enter__(), ValueError),
])
def test_abstract_mesh_errors_match_jax(make, error):
    with pytest.raises(error):
        make(fnx.sharding)
    with pytest.raises(error):
        make(jsh)


def test_concrete_mesh_abstract_mesh():
    mesh = fnx.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    assert mesh.abstract_mesh == AbstractMesh((2, 2), ("x", "y"),
                                              (AxisType.Explicit, AxisType.Auto))
    assert mesh.explicit_axes == ("x",) and mesh.auto_axes == ("y",)
    assert mesh.shape_tuple == (("x", 2), ("y", 2))


def test_reshard_takes_a_bare_spec_over_the_mesh_in_force(rng):
    mesh = fnx.make_mesh((2, 2), ("x", "y"))
    x = rng.standard_normal((4, 6))
    with fnx.set_mesh(mesh):
        out = fnx.sharding.reshard({"a": x, "b": [x]}, {"a": P("x"), "b": [P(None, "y")]})
    assert out["a"].sharding == NamedSharding(mesh, P("x"))
    assert out["b"][0].sharding == NamedSharding(mesh, P(None, "y"))
    np.testing.assert_array_equal(np.asarray(out["a"]), x)
    with pytest.raises(ValueError, match="without a mesh"):
        fnx.sharding.reshard(x, P("x"))


def test_auto_axes(rng):
    explicit = (AxisType.Explicit, AxisType.Explicit)
    mesh = fnx.make_mesh((2, 2), ("x", "y"), axis_types=explicit)
    x = jnp.asarray(rng.standard_normal((4, 4)))
    seen = []

    def f(v):
        seen.append(fnx.sharding.get_abstract_mesh().axis_types)
        return jnp.sin(v) * 2
    with fnx.set_mesh(mesh):
        out = fnx.sharding.auto_axes(f, out_sharding=P("x", "y"))(x)
        one = fnx.sharding.auto_axes(axes="y")(f)(x, out_sharding=P(None, "y"))
        jitted = fnx.jit(fnx.sharding.auto_axes(f, out_sharding=P("x")))(x)
    assert seen[:2] == [(AxisType.Auto, AxisType.Auto), (AxisType.Explicit, AxisType.Auto)]
    assert out.sharding == NamedSharding(mesh, P("x", "y"))
    assert one.sharding == NamedSharding(mesh, P(None, "y"))
    for got in (out, one, jitted):
        np.testing.assert_allclose(np.asarray(got), np.sin(np.asarray(x)) * 2, rtol=1e-12)
    # without any mesh, f simply runs, as in JAX
    assert fnx.sharding.auto_axes(f, out_sharding=P())(x).shape == (4, 4)
    with pytest.raises(TypeError, match="out_sharding"):
        fnx.sharding.auto_axes(f)(x)
    with pytest.raises(TypeError, match="out_sharding"):
        jsh.auto_axes(lambda v: v)(np.ones(2))


def test_explicit_axes(rng):
    mesh = fnx.make_mesh((2, 2), ("x", "y"))
    x = rng.standard_normal((4, 4))
    seen = []

    def f(v):
        seen.append((fnx.sharding.get_abstract_mesh().axis_types, v.sharding))
        return v + 1
    with fnx.set_mesh(mesh):
        out = fnx.sharding.explicit_axes(f, in_sharding=P("x"))(x)
        fnx.sharding.explicit_axes(axes=("x",))(f)(x, in_sharding=P(None, "y"))
    assert seen == [((AxisType.Explicit, AxisType.Explicit), NamedSharding(mesh, P("x"))),
                    ((AxisType.Explicit, AxisType.Auto), NamedSharding(mesh, P(None, "y")))]
    np.testing.assert_allclose(np.asarray(out), x + 1, rtol=1e-12)
    for module in (fnx.sharding, jsh):        # no mesh in force: ValueError, as JAX
        with pytest.raises(ValueError):
            module.explicit_axes(lambda v: v, in_sharding=P())(np.ones(2))
        with pytest.raises(TypeError, match="in_sharding"):
            module.explicit_axes(lambda v: v)(np.ones(2))


Pair = collections.namedtuple("Pair", "a b")

TREES = {
    "dict": {"b": (1, 2.0), "a": [3, None]},
    "nested": [(1,), {"k": Pair(2, [3, 4])}],
    "leaf": 5,
    "none": None,
    "empty": ((), []),
}


@pytest.mark.parametrize("case", TREES)
def test_default_registry_matches_jax(case):
    tree = TREES[case]
    ours, theirs = fnx.tree_util.default_registry, jax.tree_util.default_registry
    leaves, treedef = ours.flatten(tree)
    want_leaves, want_def = theirs.flatten(tree)
    assert leaves == want_leaves and str(treedef) == str(want_def)
    one, want_one = ours.flatten_one_level(tree), theirs.flatten_one_level(tree)
    assert (one is None) == (want_one is None)
    if one is not None:
        assert list(one[0]) == list(want_one[0]) and one[1] == want_one[1]
    paths = [(fnx.tree_util.keystr(p), v) for p, v in ours.flatten_with_path(tree)[0]]
    assert paths == [(jax.tree_util.keystr(p), v) for p, v in theirs.flatten_with_path(tree)[0]]
    assert ours.is_node(type(tree)) == theirs.is_node(type(tree))
    assert ours.flatten(tree, lambda x: isinstance(x, tuple))[0] == \
        theirs.flatten(tree, lambda x: isinstance(x, tuple))[0]


def test_default_registry_registers_for_every_tree_function():
    class Box:
        def __init__(self, inner, label):
            self.inner, self.label = inner, label

    class Point:
        def __init__(self, x, name):
            self.x, self.name = x, name
    registry = fnx.tree_util.default_registry
    registry.register_node(Box, lambda b: ((b.inner,), b.label), lambda lab, c: Box(c[0], lab))
    registry.register_dataclass_node(Point, ["x"], ["name"])
    tree = Box([1, Point(2, "p")], "box")
    assert fnx.tree_util.tree_leaves(tree) == [1, 2]
    doubled = fnx.tree_util.tree_map(lambda v: v * 2, tree)
    assert doubled.label == "box" and doubled.inner[1].x == 4 and doubled.inner[1].name == "p"
    assert registry.flatten_one_level(tree) == ((tree.inner,), "box")
    assert registry.is_node(Box) and registry.is_node(Point)

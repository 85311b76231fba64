"""Core: IR printing and type checking, transformation composition, errors, pytrees, dtypes,
layering and rule-table coverage."""
import dataclasses
import os
import re
import subprocess
import sys
from typing import NamedTuple

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import tree_util
from fnx.backends import numpy_backend
from fnx.core import lax as core_lax
from fnx.core.jaxpr import Jaxpr, JaxprEqn, JaxprTypeError, Var, typecheck_jaxpr
from fnx.core.core import ShapedArray

HERE = os.path.basename(__file__)
rng = np.random.default_rng(0)


# ---------------------------------------------------------------------------------------------
# IR goldens


def test_jaxpr_golden_elementwise():
    jaxpr = fnx.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(np.ones(3, np.float32))
    # as JAX prints it: one line when it fits in 80 columns, literals typed
    assert str(jaxpr) == (
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }")


def test_jaxpr_golden_reduction_and_dot():
    def f(w, x):
        return jnp.sum(jnp.tanh(x @ w), axis=0)
    jaxpr = fnx.make_jaxpr(f)(np.ones((4, 2), np.float32), np.ones((3, 4), np.float32))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[4,2] b:f32[3,4]. let\n"
        "    c:f32[3,2] = dot_general[\n"
        "      dimension_numbers=(([1], [0]), ([], []))\n"
        "      preferred_element_type=float32\n"
        "    ] b a\n"
        "    d:f32[3,2] = tanh c\n"
        "    e:f32[2] = reduce_sum[axes=(0,) out_sharding=None] d\n"
        "  in (e,) }")


def test_jaxpr_golden_grad():
    jaxpr = fnx.make_jaxpr(fnx.grad(lambda x: jnp.sin(x)))(np.float32(1.0))
    text = str(jaxpr)
    assert "cos a" in text and "mul" in text, text
    typecheck_jaxpr(jaxpr.jaxpr)


def test_jaxpr_records_source_line():
    def f(x):
        return jnp.exp(x)   # the line below is recorded
    jaxpr = fnx.make_jaxpr(f)(np.ones(2, np.float32))
    info = jaxpr.eqns[0].source_info
    assert info is not None and info.filename.endswith(HERE) and info.function == "f"


def test_typecheck_rejects_wrong_aval():
    a = Var(ShapedArray((3,), np.float32))
    b = Var(ShapedArray((4,), np.float32))   # sin of f32[3] cannot be f32[4]
    bad = Jaxpr([], [a], [b], [JaxprEqn([a], [b], core_lax.sin_p, {})])
    with pytest.raises(JaxprTypeError, match="disagrees"):
        typecheck_jaxpr(bad)


def test_typecheck_rejects_undefined_var():
    a = Var(ShapedArray((3,), np.float32))
    c = Var(ShapedArray((3,), np.float32))
    b = Var(ShapedArray((3,), np.float32))
    bad = Jaxpr([], [a], [b], [JaxprEqn([c], [b], core_lax.sin_p, {})])
    with pytest.raises(JaxprTypeError, match="undefined"):
        typecheck_jaxpr(bad)


# ---------------------------------------------------------------------------------------------
# Composition of transformations


def f_scalar(x):
    return jnp.sum(jnp.sin(x) * x ** 2)


def test_grad_grad_grad_matches_analytic():
    x = 0.7
    d3 = fnx.grad(fnx.grad(fnx.grad(lambda x: jnp.sin(x) * x)))(x)
    # d^3/dx^3 [x sin x] = -3 sin x - x cos x
    np.testing.assert_allclose(float(d3), -3 * np.sin(x) - x * np.cos(x), rtol=1e-5)


def test_jacfwd_jacrev_hessian_agree():
    x = rng.standard_normal(4)
    h1 = fnx.jacfwd(fnx.jacrev(f_scalar))(x)
    h2 = fnx.jacrev(fnx.jacfwd(f_scalar))(x)
    h3 = fnx.hessian(f_scalar)(x)
    # analytic: d2/dx2 [x^2 sin x] on the diagonal
    diag = 2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x)
    for h in (h1, h2, h3):
        np.testing.assert_allclose(np.asarray(h), np.diag(diag), atol=1e-10)


def test_vmap_of_grad_is_per_example_gradient():
    xs = rng.standard_normal((5, 3))
    g = fnx.vmap(fnx.grad(f_scalar))(xs)
    expected = np.stack([np.asarray(fnx.grad(f_scalar)(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-12)


def test_grad_of_vmap():
    xs = rng.standard_normal((5, 3))
    g = fnx.grad(lambda xs: jnp.sum(fnx.vmap(f_scalar)(xs)))(xs)
    expected = np.stack([np.asarray(fnx.grad(f_scalar)(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-12)


def test_nested_vmap_with_pytree_axes():
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = rng.standard_normal((4, 5, 3))

    def layer(p, x):
        return jnp.tanh(x @ p["w"] + p["b"])
    out = fnx.vmap(fnx.vmap(layer, in_axes=(None, 0)), in_axes=({"w": None, "b": None}, 0))(
        params, xs)
    expected = np.tanh(xs @ params["w"] + params["b"])
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-12)


def test_vmap_in_axes_1_and_out_axes():
    x = rng.standard_normal((3, 4))
    out = fnx.vmap(lambda r: r * 2, in_axes=1, out_axes=1)(x)
    np.testing.assert_allclose(np.asarray(out), x * 2)
    out = fnx.vmap(lambda r: jnp.sum(r), in_axes=1)(x)
    np.testing.assert_allclose(np.asarray(out), x.sum(0))


def test_jvp_of_vmap_of_grad():
    xs = rng.standard_normal((2, 3))
    ts = rng.standard_normal((2, 3))
    _, t = fnx.jvp(fnx.vmap(fnx.grad(f_scalar)), (xs,), (ts,))
    hs = [np.asarray(fnx.hessian(f_scalar)(x)) @ tv for x, tv in zip(xs, ts)]
    np.testing.assert_allclose(np.asarray(t), np.stack(hs), rtol=1e-10)


def test_linearize_matches_jvp():
    x = rng.standard_normal(3)
    t = rng.standard_normal(3)
    y, f_jvp = fnx.linearize(f_scalar, x)
    _, t_ref = fnx.jvp(f_scalar, (x,), (t,))
    np.testing.assert_allclose(float(f_jvp(t)), float(t_ref), rtol=1e-12)
    np.testing.assert_allclose(float(y), float(f_scalar(x)))


def test_value_and_grad_argnums_and_has_aux():
    def loss(w, b, x):
        y = x @ w + b
        return jnp.sum(y ** 2), {"pred": y}
    w, b, x = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 3))
    (val, aux), (gw, gb) = fnx.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, b, x)
    y = x @ w + b
    np.testing.assert_allclose(float(val), np.sum(y ** 2))
    np.testing.assert_allclose(np.asarray(aux["pred"]), y)
    np.testing.assert_allclose(np.asarray(gw), x.T @ (2 * y))
    np.testing.assert_allclose(np.asarray(gb), (2 * y).sum(0))


def test_python_control_flow_on_concrete_values_under_grad():
    def f(x):
        if x > 0:           # concrete under grad, as in JAX
            return x ** 2
        return -x
    assert float(fnx.grad(f)(3.0)) == 6.0
    assert float(fnx.grad(f)(-3.0)) == -1.0


def test_stop_gradient():
    g = fnx.grad(lambda x: x * fnx.lax.stop_gradient(x))(3.0)
    assert float(g) == 3.0


def test_closure_over_outer_tracer():
    def outer(x):
        return fnx.grad(lambda y: jnp.sin(x * y))(1.0)   # inner closes over outer's tracer
    g = fnx.grad(outer)(0.5)
    # d/dx [x cos(x)] = cos x - x sin x
    np.testing.assert_allclose(float(g), np.cos(0.5) - 0.5 * np.sin(0.5), rtol=1e-6)


def test_perturbation_confusion_is_avoided():
    # the classic nested-derivative bug: d/dx [x * d/dy (x + y)] = 1
    g = fnx.grad(lambda x: x * fnx.grad(lambda y: x + y)(1.0))(2.0)
    assert float(g) == 1.0


# ---------------------------------------------------------------------------------------------
# Errors name the problem and the user's line


def _assert_names_this_file(err):
    assert HERE in str(err), str(err)


def test_grad_of_non_scalar_output():
    with pytest.raises(fnx.GradError, match=r"scalar.*\(3,\)") as e:
        fnx.grad(lambda x: x * 2)(np.ones(3))
    _assert_names_this_file(e.value)


@pytest.mark.x32
def test_grad_of_integer_input():
    with pytest.raises(fnx.GradError, match="int32") as e:
        fnx.grad(lambda x: x * 2.0)(3)
    _assert_names_this_file(e.value)


def test_incompatible_shapes_shows_both():
    with pytest.raises(fnx.ShapeError, match=r"\(3,\).*\(4,\)") as e:
        jnp.ones(3) + jnp.ones(4)
    _assert_names_this_file(e.value)


def test_python_if_on_traced_value_says_what_to_use():
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(fnx.ConcretizationTypeError, match="lax.cond") as e:
        fnx.vmap(f)(np.ones(3))
    _assert_names_this_file(e.value)
    with pytest.raises(fnx.ConcretizationTypeError, match="static_argnums"):
        fnx.make_jaxpr(lambda x: int(x))(1.0)


def test_vmap_mismatched_sizes():
    with pytest.raises(fnx.BatchingError, match=r"size 3.*\n.*size 4") as e:
        fnx.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    _assert_names_this_file(e.value)


def test_vmap_axis_out_of_range():
    with pytest.raises(fnx.BatchingError, match=r"axis 2.*rank 2"):
        fnx.vmap(lambda a: a, in_axes=2)(np.ones((3, 4)))


def test_reshape_to_wrong_size():
    with pytest.raises(fnx.ShapeError, match=r"\(2, 3\).*size 6.*\(4, 2\)") as e:
        jnp.ones((2, 3)).reshape(4, 2)
    _assert_names_this_file(e.value)


def test_escaped_tracer_is_reported():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2
    fnx.grad(f)(1.0)
    with pytest.raises(fnx.TracerLeakError, match="escaped"):
        leaked[0] + 1


def test_matmul_shape_error_names_shapes():
    with pytest.raises(fnx.ShapeError, match=r"\(3, 4\).*\(3, 4\)"):
        jnp.ones((3, 4)) @ jnp.ones((3, 4))


# ---------------------------------------------------------------------------------------------
# Arrays and dtypes


@pytest.mark.x32
def test_array_repr_and_methods():
    x = jnp.array([1.0, 2.0])
    assert repr(x) == "Array([1., 2.], dtype=float32)"
    assert repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
    assert isinstance(np.asarray(x), np.ndarray)
    assert x.T.shape == (2,) and x.astype(jnp.int32).dtype == np.int32
    assert float(x.sum()) == 3.0 and x[1].item() == 2.0
    with pytest.raises(TypeError):
        hash(x)


@pytest.mark.parametrize("a,b,expected", [
    (np.ones(2, np.int32), 2.5, np.float32),
    (np.ones(2, np.float16), 2.0, np.float16),
    (np.ones(2, np.int8), np.ones(2, np.uint8), np.int16),
    (np.ones(2, np.float64), 1.0, np.float32),     # float64 is float32 without x64
    (np.ones(2, np.float32), np.ones(2, np.float64), np.float32),
    (np.ones(2, np.int32), np.ones(2, np.float16), np.float16),
    (np.ones(2, np.bool_), 1, np.int32),
    (np.ones(2, np.uint8), 3, np.uint8),
])
@pytest.mark.x32
def test_dtype_promotion(a, b, expected):
    assert (jnp.asarray(a) + b).dtype == expected


@pytest.mark.x32
def test_weak_scalars_default():
    assert jnp.asarray(2.0).weak_type
    assert (jnp.asarray(2.0) * 3).dtype == np.float32
    assert jnp.array([1.0, 2.0]).dtype == np.float32     # Python floats -> float32
    assert jnp.array(np.array([1.0])).dtype == np.float32  # float64 canonicalized (x64 off)
    with fnx.enable_x64():
        assert jnp.array(np.array([1.0])).dtype == np.float64
        assert (jnp.asarray(2.0) * 3).dtype == np.float64


# ---------------------------------------------------------------------------------------------
# Pytrees


class Point(NamedTuple):
    x: object
    y: object


@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="layer", metadata={"static": True})


tree_util.register_dataclass(Params)


class Box:
    def __init__(self, v):
        self.v = v


tree_util.register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(c[0]))


def test_tree_flatten_unflatten_roundtrip():
    tree = {"a": [1, (2, None)], "b": Point(3, 4), "c": Box(5), "d": Params(6, 7)}
    leaves, treedef = tree_util.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, 6, 7]
    back = tree_util.tree_unflatten(treedef, leaves)
    assert back["b"] == Point(3, 4) and back["c"].v == 5 and back["d"].name == "layer"
    assert tree_util.tree_structure(tree) == treedef


def test_tree_map_several_trees():
    out = tree_util.tree_map(lambda a, b: a * b, {"x": 2, "y": [3]}, {"x": 5, "y": [7]})
    assert out == {"x": 10, "y": [21]}
    with pytest.raises(ValueError, match="structures differ|expected"):
        tree_util.tree_map(lambda a, b: a, {"x": 1}, [1])


def test_grad_through_pytrees_of_params():
    p = Params(rng.standard_normal((3, 2)), rng.standard_normal(2))
    x = rng.standard_normal((4, 3))
    g = fnx.grad(lambda p: jnp.sum((x @ p.w + p.b) ** 2))(p)
    y = x @ p.w + p.b
    assert isinstance(g, Params)
    np.testing.assert_allclose(np.asarray(g.w), x.T @ (2 * y))
    np.testing.assert_allclose(np.asarray(g.b), (2 * y).sum(0))


# ---------------------------------------------------------------------------------------------
# Layering and tables


def test_core_imports_no_backend():
    core_dir = os.path.join(os.path.dirname(fnx.__file__), "core")
    pattern = re.compile(r"^\s*(from|import)\s+(fnx\.(backends|cuda)|cupy)|from \.\.(backends|cuda)")
    for name in os.listdir(core_dir):
        if name.endswith(".py"):
            with open(os.path.join(core_dir, name)) as fh:
                for line in fh:
                    assert not pattern.search(line), f"{name}: {line.strip()}"


def test_import_does_not_import_cupy():
    # how long the import takes is a benchmark figure (benchmarks/import_time.py), not a test
    code = "import sys; import fnx; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(fnx.__file__)))
    assert out.stdout.split() == ["False"], out.stdout


# Primitives no backend runs directly: they interpret a sub-jaxpr (impl) or must never execute.
NO_BACKEND_IMPL = {"custom_lin"}


def test_every_primitive_has_a_cpu_impl():
    missing = [p.name for p in core_lax.all_primitives()
               if p not in numpy_backend.impls and p.impl is None
               and p.name not in NO_BACKEND_IMPL]
    assert not missing, f"primitives without a CPU impl: {missing}"


# Rules a primitive may lack, each with the reason.
MISSING_RULE_OK = {
    ("custom_lin", "jvp"),     # forward mode through custom_vjp is refused, as in JAX
    ("custom_lin", "batch"),
}


@pytest.mark.parametrize("rule", ["abstract_eval", "jvp", "batch"])
def test_every_primitive_has_its_rules(rule):
    missing = [p.name for p in core_lax.all_primitives()
               if getattr(p, rule) is None and (p.name, rule) not in MISSING_RULE_OK
               and not (rule == "batch" and p.name == "iota")   # iota has no operands
               and not (rule == "batch" and p.batch_named is not None)]   # collectives
    assert not missing, f"primitives without a {rule} rule: {missing}"


def test_linear_primitives_have_transpose():
    missing = [p.name for p in core_lax.all_primitives() if p.is_linear and p.transpose is None]
    assert not missing


def test_python_numbers_keep_full_precision_in_float64():
    x = jnp.ones(3, jnp.float64)
    assert float((x * 0.7)[0]) == 0.7
    assert float(jnp.asarray(0.7, jnp.float64)) == 0.7
    assert float(jnp.full((), np.finfo(np.float64).min, jnp.float64)) == np.finfo(np.float64).min


def test_jvp_python_number_tangent_takes_the_primal_dtype():
    y, t = fnx.jvp(lambda a: 0.5 * (a + 2.0 / a), (np.float64(2.0),), (1.0,))
    assert t.dtype == np.float64
    np.testing.assert_allclose(float(t), 0.5 * (1 - 2.0 / 4.0))


def test_default_device_block_places_new_arrays():
    cpu = fnx.devices("cpu")[0]
    before = fnx.default_backend()
    with fnx.default_device(cpu):
        assert fnx.numpy.ones(3)._backend is cpu
        assert fnx.default_backend() == "cpu"
    assert fnx.default_backend() == before

"""fnx.export: exported functions called as the original (under jit, vmap and grad), round trips
through serialize/deserialize, JAX's attributes and errors, and a format that loads safely.
JAX on the CPU is the oracle where its API runs here (its serialization needs flatbuffers, so
JAX's side is compared before serialization)."""
import json
import struct
from typing import NamedTuple

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx import export

rng = np.random.default_rng(0)


def _roundtrip(exp, vjp_order=0):
    blob = exp.serialize(vjp_order=vjp_order)
    assert isinstance(blob, bytearray)
    return export.deserialize(bytes(blob))


def _make_mlp(numpy):
    def mlp(params, x):
        h = numpy.tanh(x @ params["w1"] + params["b1"])
        return numpy.sum((h @ params["w2"]) ** 2), h
    return mlp


_mlp, _mlp_jax = _make_mlp(jnp), _make_mlp(jjnp)


def _params():
    return {"w1": rng.standard_normal((4, 5)), "b1": rng.standard_normal(5),
            "w2": rng.standard_normal((5, 2))}


def test_round_trip_matches_original_and_jax(jax_x64_as_fnx):
    params, x = _params(), rng.standard_normal((3, 4))
    exp = export.export(fnx.jit(_mlp))(params, x)
    jexp = jax.export.export(jax.jit(_mlp_jax))(params, x)
    assert exp.fun_name == jexp.fun_name == "mlp"
    assert repr(exp.in_avals) == repr(jexp.in_avals)
    assert repr(exp.out_avals) == repr(jexp.out_avals)
    assert str(exp.in_tree) == str(jexp.in_tree) and str(exp.out_tree) == str(jexp.out_tree)
    assert exp.nr_devices == jexp.nr_devices == 1
    assert exp.platforms == jexp.platforms == ("cpu",)
    assert exp.in_shardings_hlo == (None,) * 4 and exp.out_shardings_hlo == (None,) * 2
    again = _roundtrip(exp)
    assert again.fun_name == "mlp" and again.in_tree == exp.in_tree
    assert [(a.shape, a.dtype) for a in again.out_avals] == \
        [(a.shape, a.dtype) for a in exp.out_avals]
    p2, x2 = _params(), rng.standard_normal((3, 4))       # fresh values, same signature
    want = jexp.call(p2, x2)
    for got in (exp.call(p2, x2), again.call(p2, x2), _mlp(p2, x2)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_call_under_jit_vmap_and_grad():
    params, x = _params(), rng.standard_normal((3, 4))
    exp = export.export(fnx.jit(_mlp))(params, x)
    again = _roundtrip(exp, vjp_order=1)

    def loss(f, p, x):
        return f(p, x)[0]
    want_g = fnx.grad(lambda p: loss(_mlp, p, x))(params)
    for e in (exp, again):
        g = fnx.jit(fnx.grad(lambda p: loss(e.call, p, x)))(params)
        for k in params:
            np.testing.assert_allclose(g[k], want_g[k], rtol=1e-10)
        xs = rng.standard_normal((6, 3, 4))
        batched = fnx.vmap(lambda xi: e.call(params, xi)[0])(xs)
        np.testing.assert_allclose(batched, [_mlp(params, xi)[0] for xi in xs], rtol=1e-12)
        per_example = fnx.vmap(fnx.grad(lambda xi: loss(e.call, params, xi)))(xs)
        want = np.stack([fnx.grad(lambda xi: loss(_mlp, params, xi))(xi) for xi in xs])
        np.testing.assert_allclose(per_example, want, rtol=1e-10)


def test_grad_of_deserialized_call_against_finite_differences():
    def f(x, y):
        return jnp.sum(jnp.sin(x) * jnp.exp(y) + x ** 3)
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    again = _roundtrip(export.export(fnx.jit(f))(x, y), vjp_order=1)
    gx, gy = fnx.grad(again.call, argnums=(0, 1))(x, y)
    eps, d = 1e-6, rng.standard_normal(5)
    fd = (f(x + eps * d, y) - f(x - eps * d, y)) / (2 * eps)
    np.testing.assert_allclose(np.dot(gx, d), fd, rtol=1e-6)
    fd = (f(x, y + eps * d) - f(x, y - eps * d)) / (2 * eps)
    np.testing.assert_allclose(np.dot(gy, d), fd, rtol=1e-6)


def test_vjp_orders_bound_the_derivatives_of_a_deserialized_call():
    def f(x):
        return 7 * x * x * x
    exp = export.export(fnx.jit(f))(1.0)
    f2 = _roundtrip(exp, vjp_order=2).call
    x = float(rng.uniform(0.5, 1.5))
    np.testing.assert_allclose(f2(x), 7 * x ** 3)
    np.testing.assert_allclose(fnx.grad(f2)(x), 21 * x ** 2)
    np.testing.assert_allclose(fnx.grad(fnx.grad(f2))(x), 42 * x)
    with pytest.raises(ValueError, match="No VJP is available"):     # as JAX
        fnx.grad(fnx.grad(fnx.grad(f2)))(x)
    with pytest.raises(export.ExportError, match="No VJP"):
        fnx.grad(_roundtrip(exp).call)(x)
    assert exp.has_vjp() and not _roundtrip(exp).has_vjp()
    np.testing.assert_allclose(fnx.grad(fnx.grad(fnx.grad(exp.call)))(x), 42.0)


def test_custom_vjp_rule_travels_in_the_serialized_vjp():
    @fnx.custom_vjp
    def clipped(x):
        return jnp.sin(x)
    clipped.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (10.0 * g * jnp.cos(x),))
    x = rng.standard_normal(4)
    f = fnx.jit(lambda x: jnp.sum(clipped(x)))
    again = _roundtrip(export.export(f)(x), vjp_order=1)
    np.testing.assert_allclose(again.call(x), np.sum(np.sin(x)))
    np.testing.assert_allclose(fnx.grad(again.call)(x), 10 * np.cos(x))
    # the serialized program holds no Python rule: the custom_vjp is written as its primal
    assert "custom_vjp_call" not in again.mlir_module()


def test_forward_mode_is_refused_as_in_jax():
    exp = export.export(fnx.jit(jnp.sin))(1.0)
    with pytest.raises(TypeError, match="forward-mode"):
        fnx.jvp(exp.call, (1.0,), (1.0,))


class Point(NamedTuple):
    x: object
    y: object


export.register_namedtuple_serialization(Point, serialized_name="tests.test_export.Point")


class Unregistered(NamedTuple):
    a: object


def test_pytrees_kwargs_static_arguments_and_keys():
    def f(p, scale, *, key, extra):
        noise = fnx.random.normal(key, p.x.shape)
        return {"sum": Point(p.x * scale + noise, p.y - extra[0]), "keys": fnx.random.split(key)}
    jf = fnx.jit(f, static_argnums=1)
    p = Point(rng.standard_normal(3), rng.standard_normal(2))
    key, extra = fnx.random.key(3), (rng.standard_normal(2), None)
    exp = export.export(jf)(p, 2.5, key=key, extra=extra)
    assert exp.in_tree == fnx.tree_util.tree_structure(((p,), {"extra": extra, "key": key}))
    again = _roundtrip(exp)
    want = f(p, 2.5, key=key, extra=extra)
    got = again.call(p, key=key, extra=extra)
    assert fnx.tree_util.tree_structure(got) == fnx.tree_util.tree_structure(want)
    for a, b in zip(fnx.tree_util.tree_leaves(got), fnx.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(fnx.random.key_data(a) if a.dtype == key.dtype else a,
                                      fnx.random.key_data(b) if b.dtype == key.dtype else b)


def test_unregistered_pytree_node_cannot_be_serialized():
    exp = export.export(fnx.jit(lambda u: u.a * 2))(Unregistered(jnp.ones(2)))
    np.testing.assert_array_equal(exp.call(Unregistered(jnp.ones(2))), [2.0, 2.0])
    with pytest.raises(export.ExportError, match="register_namedtuple_serialization"):
        exp.serialize()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64",
                                   "int8", "uint32", "int64", "bool"])
def test_dtypes_round_trip(dtype):
    def f(x):
        return x * x if x.dtype != jnp.bool_ else ~x, jnp.ones(2, x.dtype)
    x = jnp.asarray(rng.standard_normal(6) * 3).astype(dtype)
    again = _roundtrip(export.export(fnx.jit(f))(x))
    assert again.in_avals[0].dtype == x.dtype
    for got, want in zip(again.call(x), f(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_integer_inputs_and_outputs_differentiate_where_floats_do():
    def f(x, n):
        return x * n, n + 1
    again = _roundtrip(export.export(fnx.jit(f))(jnp.ones(3), jnp.arange(3)), vjp_order=1)
    x, n = rng.standard_normal(3), jnp.asarray([1, 2, 3])
    g = fnx.grad(lambda x: jnp.sum(again.call(x, n)[0]))(x)
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(again.call(x, n)[1], [2, 3, 4])


def test_control_flow_and_closed_over_constants_round_trip():
    table = rng.standard_normal((3, 3))

    def f(x):
        x = lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)
        x, ys = lax.scan(lambda c, a: (c * 0.9 + a, c.sum()), x, jnp.asarray(table))
        x = lax.fori_loop(0, 3, lambda i, c: c + i, x)
        x = lax.while_loop(lambda c: c[1] < 4, lambda c: (c[0] * 1.1, c[1] + 1), (x, 0))[0]
        return x @ table + ys.sum(), lax.switch(1, [jnp.sin, jnp.cos], x)
    for sign in (1, -1):
        x = sign * np.abs(rng.standard_normal(3))
        again = _roundtrip(export.export(fnx.jit(f))(x))
        for got, want in zip(again.call(x), f(x)):
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_checkpoint_and_custom_jvp_inside_differentiate_after_deserialization():
    def f(x):
        y = fnx.checkpoint(lambda v: jnp.sin(v) * v)(x)
        return jnp.sum(fnx.nn.gelu(y) + fnx.nn.softplus(y))
    x = rng.standard_normal(4)
    again = _roundtrip(export.export(fnx.jit(f))(x), vjp_order=1)
    np.testing.assert_allclose(again.call(x), f(x), rtol=1e-12)
    np.testing.assert_allclose(fnx.grad(again.call)(x), fnx.grad(f)(x), rtol=1e-10)


def test_call_checks_structure_shapes_and_dtypes():
    exp = export.export(fnx.jit(lambda x, y: x + y))(jnp.ones(3), jnp.ones(3))
    with pytest.raises(export.ExportError, match=r"f64\[3\].*f64\[4\]|float.*\[4\]"):
        exp.call(jnp.ones(3), jnp.ones(4))
    with pytest.raises(export.ExportError, match="i32|int"):
        exp.call(jnp.ones(3), jnp.ones(3, jnp.int32))
    with pytest.raises(ValueError, match="structure"):
        exp.call(jnp.ones(3), y=jnp.ones(3))


def test_platform_check_and_its_opt_out():
    exp = export.export(fnx.jit(lax.cos), platforms=["tpu"])(1.0)
    assert exp.platforms == ("tpu",)
    with pytest.raises(ValueError, match="platforms"):
        exp.call(1.0)
    unsafe = export.export(fnx.jit(lax.cos), platforms=["tpu"],
                           disabled_checks=[export.DisabledSafetyCheck.platform()])(1.0)
    np.testing.assert_allclose(_roundtrip(unsafe).call(0.3), np.cos(0.3))
    assert export.export(fnx.jit(lax.cos), platforms=["gpu", "cpu"])(1.0).platforms == \
        ("cuda", "cpu")


@pytest.mark.x32
def test_weak_types_as_jax_prints_them():
    # in memory the weak type stays; JAX's format keeps none at the boundary, and neither does
    # fnx's (the deserialized call returns float32, as JAX's documentation shows)
    exp = export.export(fnx.jit(lambda x: 7 * x * x * x))(1.0)
    jexp = jax.export.export(jax.jit(lambda x: 7 * x * x * x))(1.0)
    assert repr(exp.call(0.1)) == repr(jexp.call(0.1))
    assert repr(_roundtrip(exp, 1).call(0.1)) == "Array(0.007, dtype=float32)"
    assert repr(fnx.grad(_roundtrip(exp, 1).call)(0.1)) == "Array(0.21000001, dtype=float32)"
    assert repr(exp.in_avals) == repr(jexp.in_avals)
    assert repr(_roundtrip(exp).in_avals) == "(ShapedArray(float32[]),)"


def test_unknown_versions_and_foreign_bytes_are_refused():
    blob = export.export(fnx.jit(jnp.sin))(jnp.ones(2)).serialize()
    head = len(b"fnx.export\x00")
    newer = blob[:head] + struct.pack(">I", 999) + blob[head + 4:]
    with pytest.raises(export.ExportVersionError, match="version 999"):
        export.deserialize(newer)
    with pytest.raises(export.ExportVersionError):
        export.deserialize(b"\x80\x04\x95 a pickle")
    assert export.minimum_supported_calling_convention_version <= \
        export.maximum_supported_calling_convention_version


def _rewrite_document(blob, edit):
    head = len(b"fnx.export\x00")
    n = struct.unpack(">Q", blob[head + 4:head + 12])[0]
    doc = json.loads(bytes(blob[head + 12:head + 12 + n]))
    edit(doc)
    text = json.dumps(doc).encode()
    return bytes(blob[:head + 4]) + struct.pack(">Q", len(text)) + text + \
        bytes(blob[head + 12 + n:])


def test_loading_resolves_names_only_among_fnx_own():
    exp = export.export(fnx.jit(lambda x: jnp.fft.fft(x)))(jnp.ones(4))
    blob = exp.serialize()
    assert b'"enum"' in bytes(blob)         # FftType is stored by name

    def to_os_system(doc):
        for e in doc["program"]["jaxpr"]["eqns"]:
            for v in e["params"].values():
                if isinstance(v, dict) and v.get("t") == "enum":
                    v["cls"] = "os:system"
    with pytest.raises(export.ExportVersionError, match="os:system"):
        export.deserialize(_rewrite_document(blob, to_os_system))

    def unknown_primitive(doc):
        doc["program"]["jaxpr"]["eqns"][0]["p"] = "no_such_primitive"
    with pytest.raises(export.ExportVersionError, match="no_such_primitive"):
        export.deserialize(_rewrite_document(blob, unknown_primitive))


def test_callbacks_cannot_be_serialized_but_run_in_memory():
    f = fnx.jit(lambda x: fnx.pure_callback(np.sin, x, x))
    exp = export.export(f)(jnp.ones(3))
    np.testing.assert_allclose(exp.call(jnp.zeros(3)), 0.0)
    with pytest.raises(export.ExportError, match="pure_callback"):
        exp.serialize()


def test_symbolic_shapes_are_refused_by_name():
    assert export.symbolic_shape("3, 4") == (3, 4)
    with pytest.raises(export.ShapePolymorphismError, match="'b'"):
        export.symbolic_shape("b, 4")
    with pytest.raises(NotImplementedError):
        export.symbolic_args_specs(jnp.ones((2, 3)), "b, 3")
    assert not export.is_symbolic_dim(3)


def test_a_function_that_is_not_jitted_is_jitted_first():
    exp = export.export(jnp.tanh)(jnp.ones(2))
    np.testing.assert_allclose(_roundtrip(exp).call(jnp.asarray([0.5, -1.0])),
                               np.tanh([0.5, -1.0]))
    assert "tanh" in exp.mlir_module()


@pytest.mark.cuda
def test_round_trip_runs_and_differentiates_on_the_gpu(gpu):
    x = rng.standard_normal(5)
    exp = export.export(fnx.jit(lambda x: jnp.sin(x) * 2), platforms=["cuda", "cpu"])(x)
    again = _roundtrip(exp, vjp_order=1)
    on_gpu = fnx.device_put(x, gpu)
    np.testing.assert_allclose(again.call(on_gpu), 2 * np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(fnx.grad(lambda v: again.call(v).sum())(on_gpu), 2 * np.cos(x),
                               rtol=1e-12)

"""Errors users cause: a named fnx error of the type JAX raises for the same call, a message
showing the shapes and dtypes involved, and a traceback that ends at the user's line with
fnx's own frames filtered out (JAX's traceback filtering)."""
import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax as flax
from fnx.core import errors
from fnx.core.traceback_util import UnfilteredStackTrace

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")

FNX_DIR = os.path.dirname(fnx.__file__) + os.sep


def _leak(t):
    leaked = []
    t.jit(lambda x: leaked.append(x) or x)(1.0)
    return leaked[0] + 1.0


# name: (bad call on (transformations, numpy, lax), text the message must show)
CASES = {
    "matmul": (lambda t, np_, lax: np_.matmul(np_.ones((2, 3)), np_.ones((4, 5))), "(2, 3)"),
    "matmul_operator": (lambda t, np_, lax: np_.ones((2, 3)) @ np_.ones((4, 5)), "(4, 5)"),
    "dot": (lambda t, np_, lax: np_.dot(np_.ones(3), np_.ones(4)), "(4,)"),
    "einsum": (lambda t, np_, lax: np_.einsum("ij,jk->ik", np_.ones((2, 3)), np_.ones((4, 5))),
               "(2, 3)"),
    "add_broadcast": (lambda t, np_, lax: np_.ones(3) + np_.ones(4), "(3,) (4,)"),
    "jnp_add": (lambda t, np_, lax: np_.add(np_.ones(3), np_.ones(4)), "(3,) (4,)"),
    "lax_add": (lambda t, np_, lax: lax.add(np_.ones(3), np_.ones(4)), "(3,)"),
    "lax_add_dtypes": (lambda t, np_, lax: lax.add(np_.ones(3), np_.arange(3)), "int"),
    "dot_general": (lambda t, np_, lax: lax.dot_general(np_.ones((2, 3)), np_.ones((4, 5)),
                                                        (((1,), (0,)), ((), ()))), "(4, 5)"),
    "concatenate": (lambda t, np_, lax: np_.concatenate([np_.ones((2, 3)), np_.ones((4, 5))]),
                    "(4, 5)"),
    "stack": (lambda t, np_, lax: np_.stack([np_.ones(3), np_.ones(4)]), "(4,)"),
    "reshape": (lambda t, np_, lax: np_.reshape(np_.ones((2, 3)), (4, 2)), "(2, 3)"),
    "reshape_method": (lambda t, np_, lax: np_.ones((2, 3)).reshape(5), "(2, 3)"),
    "transpose": (lambda t, np_, lax: np_.transpose(np_.ones((2, 3)), (0, 0)), "(0, 0)"),
    "squeeze": (lambda t, np_, lax: np_.squeeze(np_.ones((2, 3)), axis=0), "(2, 3)"),
    "where": (lambda t, np_, lax: np_.where(np_.ones(3) > 0, np_.ones(3), np_.ones(4)), "(4,)"),
    "broadcast_to": (lambda t, np_, lax: np_.broadcast_to(np_.ones(3), (4,)), "(3,)"),
    "clip": (lambda t, np_, lax: np_.clip(np_.ones(3), np_.ones(4), 2.0), "(4,)"),
    "split": (lambda t, np_, lax: np_.split(np_.ones(3), 2), "3"),
    "pad_width": (lambda t, np_, lax: np_.pad(np_.ones(3), ((1, 1), (1, 1))), "(2, 2)"),
    "repeat_counts": (lambda t, np_, lax: np_.repeat(np_.ones(3), np_.array([1, 2])), "3"),
    "at_set": (lambda t, np_, lax: np_.ones(3).at[0:2].set(np_.ones(4)), "(4,)"),
    "dynamic_slice": (lambda t, np_, lax: lax.dynamic_slice(np_.ones(3), (0,), (5,)), "(3,)"),
    "conv_features": (lambda t, np_, lax: lax.conv(np_.ones((1, 2, 5, 5)),
                                                   np_.ones((3, 4, 3, 3)), (1, 1), "SAME"), "4"),
    "inv_not_square": (lambda t, np_, lax: np_.linalg.inv(np_.ones((2, 3))), "(2, 3)"),
    "solve_shapes": (lambda t, np_, lax: np_.linalg.solve(np_.eye(3), np_.ones(4)), "(4,)"),
    "sum_axis": (lambda t, np_, lax: np_.sum(np_.ones((2, 3)), axis=2), "dimension 2"),
    "expand_dims_axis": (lambda t, np_, lax: np_.expand_dims(np_.ones((2, 3)), 5), "axis 5"),
    "moveaxis_axis": (lambda t, np_, lax: np_.moveaxis(np_.ones((2, 3)), 3, 0), "axis 3"),
    "take_axis": (lambda t, np_, lax: np_.take(np_.ones(3), np_.arange(3), axis=3), "axis 3"),
    "sort_axis": (lambda t, np_, lax: np_.sort(np_.ones(3), axis=1), "axis 1"),
    "cumsum_axis": (lambda t, np_, lax: np_.cumsum(np_.ones(3), axis=1), "axis 1"),
    "softmax_axis": (lambda t, np_, lax: t.nn.softmax(np_.ones((2, 3)), axis=5), "axis 5"),
    "zeros_float_shape": (lambda t, np_, lax: np_.zeros((2.5, 3)), "2.5"),
    "zeros_bad_dtype": (lambda t, np_, lax: np_.zeros(3, dtype="foo"), "foo"),
    "astype_bad_dtype": (lambda t, np_, lax: np_.ones(3).astype("notatype"), "notatype"),
    "bitwise_of_floats": (lambda t, np_, lax: np_.bitwise_and(np_.ones(3), np_.ones(3)),
                          "float"),
    "sin_of_int": (lambda t, np_, lax: lax.sin(np_.arange(3)), "int"),
    "float_index": (lambda t, np_, lax: np_.ones(3)[1.5], "float"),
    "too_many_indices": (lambda t, np_, lax: np_.ones(3)[0, 0], "1-dimensional"),
    "ragged_array": (lambda t, np_, lax: np_.array([[1, 2], [3]]), "inhomogeneous"),
    "float_of_array": (lambda t, np_, lax: float(np_.ones(3)), "(3,)"),
    "bool_of_array": (lambda t, np_, lax: bool(np_.ones(3)), "(3,)"),
    "linspace_num": (lambda t, np_, lax: np_.linspace(0, 1, -1), "-1"),
    "one_hot_classes": (lambda t, np_, lax: t.nn.one_hot(np_.arange(3), 3.5), "3.5"),
    "grad_of_vector": (lambda t, np_, lax: t.grad(lambda x: x)(np_.ones(3)), "(3,)"),
    "grad_of_int_input": (lambda t, np_, lax: t.grad(lambda x: x.sum())(np_.arange(3)),
                          "dtype int"),
    "grad_argnums": (lambda t, np_, lax: t.grad(lambda x: x.sum(), argnums=3)(np_.ones(3)),
                     "argnums"),
    "grad_of_string": (lambda t, np_, lax: t.grad(lambda x: x)("hello"), "str"),
    "grad_has_aux": (lambda t, np_, lax: t.grad(lambda x: x.sum(), has_aux=True)(np_.ones(3)),
                     "pair"),
    "vmap_sizes": (lambda t, np_, lax: t.vmap(lambda x, y: x + y)(np_.ones(3), np_.ones(4)),
                   "4"),
    "vmap_axis": (lambda t, np_, lax: t.vmap(np_.sum, in_axes=2)(np_.ones((2, 3))), "(2, 3)"),
    "vmap_in_axes_length": (lambda t, np_, lax: t.vmap(lambda x, y: x, in_axes=(0, 0, 0))(
        np_.ones(3), np_.ones(3)), "3"),
    "vmap_of_scalar": (lambda t, np_, lax: t.vmap(lambda x: x)(1.0), "rank 0"),
    "vmap_out_axes": (lambda t, np_, lax: t.vmap(lambda x: x, out_axes=3)(np_.ones(3)),
                      "out_axes=3"),
    "jit_if_on_tracer": (lambda t, np_, lax: t.jit(lambda x: 1 if x > 0 else 2)(1.0),
                         "bool[]"),
    "jit_range_of_tracer": (lambda t, np_, lax: t.jit(lambda x: range(x))(3), "[]"),
    "jit_numpy_of_tracer": (lambda t, np_, lax: t.jit(lambda x: np.asarray(x))(np_.ones(3)),
                            "[3]"),
    "jit_matmul": (lambda t, np_, lax: t.jit(lambda x, y: x @ y)(np_.ones((2, 3)),
                                                                 np_.ones((4, 5))), "(2, 3)"),
    "jit_unhashable_static": (lambda t, np_, lax: t.jit(lambda x, n: x, static_argnums=1)(
        np_.ones(3), [1]), "list"),
    "jit_of_string": (lambda t, np_, lax: t.jit(lambda x: x)("str"), "str"),
    "jit_static_argnums": (lambda t, np_, lax: t.jit(lambda x: x, static_argnums=3),
                           "static_argnums"),
    "jit_arange_of_tracer": (lambda t, np_, lax: t.jit(lambda n: np_.arange(n))(3), "[]"),
    "jit_ones_of_tracer": (lambda t, np_, lax: t.jit(lambda n: np_.ones(n))(3), "[]"),
    "jit_nonzero": (lambda t, np_, lax: t.jit(np_.nonzero)(np_.ones(3)), "[3]"),
    "jit_boolean_mask": (lambda t, np_, lax: t.jit(lambda x: x[x > 0])(np_.ones(3)), "[3]"),
    "tracer_leak": (lambda t, np_, lax: _leak(t), "escaped"),
    "cond_branch_types": (lambda t, np_, lax: lax.cond(True, lambda: np_.ones(3),
                                                       lambda: np_.ones(4)), "[4]"),
    "cond_predicate": (lambda t, np_, lax: lax.cond(np_.ones(3), lambda: 1.0, lambda: 2.0),
                       "(3,)"),
    "scan_carry": (lambda t, np_, lax: lax.scan(lambda c, x: (c[None], x), 0.0, np_.ones(3)),
                   "[1]"),
    "fori_carry": (lambda t, np_, lax: lax.fori_loop(0, 3, lambda i, c: c.astype(np_.int32),
                                                     0.0), "int32"),
    "random_key": (lambda t, np_, lax: t.random.normal(3, (2,)), "key"),
    "random_shape": (lambda t, np_, lax: t.random.uniform(t.random.PRNGKey(0), (2.5,)), "2.5"),
    "tree_structures": (lambda t, np_, lax: t.tree_util.tree_map(lambda x, y: x, {"a": 1},
                                                                 {"b": 2}), "'b'"),
    "jvp_shapes": (lambda t, np_, lax: t.jvp(np_.sin, (np_.ones(3),), (np_.ones(4),)), "(4,)"),
    "jvp_not_tuples": (lambda t, np_, lax: t.jvp(np_.sin, np_.ones(3), np_.ones(3)), "tuple"),
    "vjp_cotangent_shape": (lambda t, np_, lax: t.vjp(np_.sin, np_.ones(3))[1](np_.ones(4)),
                            "(4,)"),
    "vjp_complex_cotangent": (lambda t, np_, lax: t.vjp(np_.sin, 1.0)[1](1j), "c"),
    "linear_transpose_shape": (lambda t, np_, lax: t.linear_transpose(
        lambda x: x, np_.ones(3))(np_.ones(4)), "(4,)"),
    "eval_shape": (lambda t, np_, lax: t.eval_shape(lambda x, y: x @ y, np_.ones((2, 3)),
                                                    np_.ones((4, 5))), "(2, 3)"),
    "make_jaxpr": (lambda t, np_, lax: t.make_jaxpr(lambda x, y: x @ y)(np_.ones((2, 3)),
                                                                        np_.ones((4, 5))),
                   "(2, 3)"),
    "device_put_string": (lambda t, np_, lax: t.device_put("x"), "str"),
    "compiled_shape": (lambda t, np_, lax: _compiled(t, np_)(_f32(np_, 4)), "float32[4]"),
    "compiled_dtype": (lambda t, np_, lax: _compiled(t, np_)(np_.ones(3, np_.int32)),
                       "int32[3]"),
    "compiled_arity": (lambda t, np_, lax: _compiled(t, np_)(_f32(np_, 3), _f32(np_, 3)),
                       "(float32[3], float32[3])"),
    "compiled_keywords": (lambda t, np_, lax: _compiled(t, np_)(x=_f32(np_, 3)), "float32[3]"),
    "compiled_transformed": (lambda t, np_, lax: t.jit(lambda x: _compiled(t, np_)(x))(
        _f32(np_, 3)), "f32[3]"),
    "in_shardings_length": (lambda t, np_, lax: t.jit(lambda x, y: x, in_shardings=(
        _replicated(t),))(_f32(np_, 3), _f32(np_, 2)), "(float32[3], float32[2])"),
    "out_shardings_length": (lambda t, np_, lax: t.jit(lambda x: (x, x), out_shardings=(
        _replicated(t),) * 3)(_f32(np_, 3)), "(float32[3], float32[3])"),
    "shard_map_out_specs": (lambda t, np_, lax: t.shard_map(
        lambda x: x, mesh=_replicated(t).mesh, in_specs=t.sharding.PartitionSpec())(np_.ones(3)),
        "out_specs"),
}


def _f32(np_, n):
    return np_.ones(n, np_.float32)


def _compiled(t, np_):
    """A function compiled for one float32[3] argument."""
    return t.jit(lambda x: x).lower(_f32(np_, 3)).compile()


def _replicated(t):
    return t.sharding.NamedSharding(t.make_mesh((1,), ("x",)), t.sharding.PartitionSpec())


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as e:    # noqa: BLE001 (the error is what is tested)
        return e
    raise AssertionError("no error raised")


@pytest.mark.parametrize("name", list(CASES))
def test_user_error_is_named_typed_as_jax_and_ends_at_the_users_line(name):
    call, shown = CASES[name]
    import jax.numpy as jjnp
    expected = _raised(call, jax, jjnp, jax.lax)
    got = _raised(call, fnx, jnp, flax)
    assert isinstance(got, errors.FnxError), f"{type(got).__name__}: {got}"
    # the type JAX raises (a JAX-specific subclass counts as its builtin base)
    jax_type = next(c for c in type(expected).__mro__ if c.__module__ == "builtins")
    assert isinstance(got, jax_type), (type(got).__mro__, type(expected).__mro__)
    assert shown in str(got), str(got)
    frames = traceback.extract_tb(got.__traceback__)
    assert frames[-1].filename == __file__, frames[-1]
    assert not [f for f in frames if f.filename.startswith(FNX_DIR)], frames


def test_tracer_conversions_have_jax_names():
    for call, cls in [(lambda x: 1 if x > 0 else 2, "TracerBoolConversionError"),
                      (lambda x: range(x), "TracerIntegerConversionError"),
                      (lambda x: np.asarray(x), "TracerArrayConversionError")]:
        with pytest.raises(getattr(fnx.errors, cls)):
            fnx.jit(call)(3)
    assert fnx.errors.UnexpectedTracerError is fnx.errors.TracerLeakError
    assert issubclass(fnx.errors.TracerBoolConversionError, fnx.errors.ConcretizationTypeError)


def _bad_matmul():
    return jnp.ones((2, 3)) @ jnp.ones((4, 5))


def test_filtering_off_shows_fnx_frames():
    with fnx.config.option("traceback_filtering", "off"):
        e = _raised(_bad_matmul)
    frames = traceback.extract_tb(e.__traceback__)
    assert any(f.filename.startswith(FNX_DIR) for f in frames)
    assert frames[-1].filename.startswith(FNX_DIR)


def test_remove_frames_keeps_the_unfiltered_trace_as_the_cause():
    with fnx.config.option("jax_traceback_filtering", "remove_frames"):
        e = _raised(_bad_matmul)
    frames = traceback.extract_tb(e.__traceback__)
    assert frames[-1].name == "_bad_matmul"
    assert isinstance(e.__cause__, UnfilteredStackTrace)
    hidden = traceback.extract_tb(e.__cause__.__traceback__)
    assert hidden[-1].filename.startswith(FNX_DIR)


def test_tracebackhide_marks_fnx_frames_and_keeps_them():
    with fnx.config.option("traceback_filtering", "tracebackhide"):
        e = _raised(_bad_matmul)
    tb, marks = e.__traceback__, []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(FNX_DIR):
            marks.append(tb.tb_frame.f_locals.get("__tracebackhide__", False))
        tb = tb.tb_next
    assert marks and all(marks)


def test_default_mode_notes_the_filtering():
    e = _raised(_bad_matmul)
    assert any("JAX_TRACEBACK_FILTERING=off" in n for n in getattr(e, "__notes__", ()))


def test_traceback_filtering_option_and_environment_variable():
    with pytest.raises(ValueError, match="traceback_filtering"):
        fnx.config.update("jax_traceback_filtering", "sometimes")
    code = "import fnx; print(fnx.config.jax_traceback_filtering)"
    env = dict(os.environ, JAX_TRACEBACK_FILTERING="off")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)), check=True)
    assert out.stdout.strip() == "off"


def test_error_inside_a_jitted_function_ends_in_its_body():
    def body(x, y):
        return jnp.tanh(x) @ y            # the failing line

    e = _raised(fnx.jit(body), np.ones((2, 3)), np.ones((4, 5)))
    frames = traceback.extract_tb(e.__traceback__)
    assert frames[-1].name == "body" and "failing line" in frames[-1].line
    assert not [f for f in frames if f.filename.startswith(FNX_DIR)]
    e = _raised(fnx.grad(lambda x: body(x, np.ones((4, 5))).sum()), np.ones((2, 3)))
    assert traceback.extract_tb(e.__traceback__)[-1].name == "body"


def _mesh_1():
    return fnx.make_mesh((1,), ("x",))


# main's later entry points: public modules (fnx.scipy.signal, fnx.amp) and transformed
# functions (pmap, shard_map, a sharded jit, the AOT stages, a mixed-precision policy)
LATER_ENTRY_POINTS = {
    "signal": lambda: fnx.scipy.signal.convolve(jnp.ones(3), jnp.ones(3), mode="bad"),
    "pmap": lambda: fnx.pmap(lambda x: x @ x)(jnp.ones((1, 2, 3))),
    "shard_map": lambda: fnx.shard_map(lambda x: x @ x, mesh=_mesh_1(), in_specs=fnx.P("x"),
                                       out_specs=fnx.P("x"))(jnp.ones((2, 3))),
    "jit_in_shardings": lambda: fnx.jit(
        lambda x: x @ x, in_shardings=fnx.NamedSharding(_mesh_1(), fnx.P("x")))(
        jnp.ones((2, 3))),
    "jit_trace": lambda: fnx.jit(lambda x: x @ x).trace(jnp.ones((2, 3))),
    "compiled_call": lambda: fnx.jit(lambda x: x).lower(jnp.ones(3)).compile()(jnp.ones(4)),
    "amp_policy": lambda: fnx.amp.apply_policy(lambda x: x @ x, "p=f32,c=f32,o=f32")(
        jnp.ones((2, 3))),
    "amp_get_policy": lambda: fnx.amp.get_policy("nonsense=3"),
    "checkpoint": lambda: fnx.checkpoint(lambda x: x @ x)(jnp.ones((2, 3))),
    "remat_under_grad": lambda: fnx.grad(fnx.remat(lambda x: (x @ x).sum()))(jnp.ones((2, 3))),
    "eye": lambda: jnp.eye(-1),
    "tri": lambda: jnp.tri(2, -3),
    "identity_of_a_float": lambda: jnp.identity(2.5),
}


@pytest.mark.parametrize("name", list(LATER_ENTRY_POINTS))
def test_later_entry_points_end_at_the_users_line(name):
    e = _raised(LATER_ENTRY_POINTS[name])
    frames = traceback.extract_tb(e.__traceback__)
    assert frames[-1].filename == __file__, frames[-1]
    assert not [f for f in frames if f.filename.startswith(FNX_DIR)], frames


def _from_dlpack_to_another_device():
    old = fnx.config.num_cpu_devices
    fnx.config.update("jax_num_cpu_devices", 2)
    try:
        return jnp.from_dlpack(np.ones(2), device=fnx.devices("cpu")[1], copy=False)
    finally:
        fnx.config.update("jax_num_cpu_devices", old)


# errors of calls JAX makes differently (or cannot make here): the named fnx error subclasses
# the builtin these raised before, so an existing ``except`` still catches it
OWN_CASES = {
    "from_dlpack_of_a_list": (lambda: jnp.from_dlpack([1, 2]), errors.ArgumentTypeError,
                              TypeError, "got list"),
    "from_dlpack_copy_false": (_from_dlpack_to_another_device, errors.MeshError, ValueError,
                               "copy=False"),
    "ppermute_repeated_source": (lambda: fnx.vmap(lambda x: flax.ppermute(
        x, "i", [(0, 1), (0, 2)]), axis_name="i")(jnp.ones(3)), errors.MeshError, ValueError,
        "[(0, 1), (0, 2)]"),
    "distributed_without_coordinator": (lambda: fnx.distributed.initialize(),
                                        errors.DistributedError, ValueError,
                                        "coordinator_address"),
}


@pytest.mark.parametrize("name", list(OWN_CASES))
def test_own_errors_are_named_and_end_at_the_users_line(name, monkeypatch):
    for var in ("FNX_COORDINATOR_ADDRESS", "MASTER_ADDR"):
        monkeypatch.delenv(var, raising=False)
    call, cls, builtin, shown = OWN_CASES[name]
    e = _raised(call)
    assert isinstance(e, cls) and isinstance(e, builtin), type(e).__mro__
    assert shown in str(e), str(e)
    frames = traceback.extract_tb(e.__traceback__)
    assert frames[-1].filename == __file__, frames[-1]
    assert not [f for f in frames if f.filename.startswith(FNX_DIR)], frames


# ---------------------------------------------------------------------------------------------
# Arrays are allocated for real, as in JAX


HUGE = (10 ** 6, 10 ** 6)


@pytest.mark.parametrize("make", [
    lambda: jnp.zeros(HUGE), lambda: jnp.ones(HUGE), lambda: jnp.empty(HUGE),
    lambda: jnp.full(HUGE, 2.0), lambda: jnp.zeros_like(jnp.ones(2), shape=HUGE),
    lambda: jnp.broadcast_to(jnp.ones(HUGE[1]), HUGE),
    lambda: fnx.jit(lambda x: x + jnp.ones(HUGE))(1.0),
], ids=["zeros", "ones", "empty", "full", "zeros_like", "broadcast_to", "jit"])
def test_huge_constructor_raises_out_of_memory(make):
    with pytest.raises(MemoryError) as info:
        make()
    assert isinstance(info.value, errors.OutOfMemoryError) and isinstance(info.value, RuntimeError)
    assert "4000000000000 bytes" in str(info.value) or "broadcast_in_dim" in str(info.value)


def test_constructors_return_real_buffers(rng):
    x = rng.standard_normal(7).astype(np.float32)
    for a in (jnp.zeros((5, 7)), jnp.full((5, 7), 3.0), jnp.broadcast_to(x, (5, 7)),
              jnp.ones((5, 7)) * 1, fnx.jit(lambda: jnp.zeros((5, 7)))()):
        buf = np.asarray(a)
        assert 0 not in buf.strides, buf.strides
    np.testing.assert_array_equal(np.asarray(jnp.broadcast_to(x, (5, 7))), np.tile(x, (5, 1)))


def test_array_of_none_or_objects_raises_jaxs_error_types():
    jax = pytest.importorskip("jax")
    for value in (None, [1.0, None], [[None]], object()):
        with pytest.raises(Exception) as theirs:
            jax.numpy.asarray(value)
        with pytest.raises(Exception) as ours:
            jnp.asarray(value)
        assert isinstance(ours.value, type(theirs.value)), (value, ours.value, theirs.value)

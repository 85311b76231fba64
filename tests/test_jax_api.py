"""JAX's top-level names that real programs use (config spellings, disable_jit, host callbacks,
custom_gradient, ravel_pytree, ...), each checked against JAX itself on the CPU."""
import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx.test_util import assert_close as _assert_close

jax.config.update("jax_platforms", "cpu")


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    """float32 results of two libraries agree to float32's rounding."""
    _assert_close(actual, expected, rtol, atol)


@pytest.mark.x32
def test_jax_prefixed_config_names():
    assert fnx.config.jax_enable_x64 is False and fnx.config.jax_debug_nans is False
    fnx.config.update("jax_debug_nans", True)
    try:
        assert fnx.config.debug_nans is True
        with pytest.raises(fnx.debug.NaNError):
            jnp.log(jnp.array([-1.0]))
    finally:
        fnx.config.update("jax_debug_nans", False)
    old = fnx.config.jax_traceback_filtering
    fnx.config.update("jax_traceback_filtering", "off")      # keeps fnx's frames in tracebacks
    assert fnx.config.jax_traceback_filtering == "off"
    fnx.config.update("jax_traceback_filtering", old)        # the later tests expect filtering
    with pytest.raises(KeyError):
        fnx.config.update("jax_no_such_option", 1)
    with pytest.raises(AttributeError):
        fnx.config.jax_no_such_option


@pytest.mark.x32
def test_enable_x64_defaults_to_64_bits():
    with fnx.enable_x64():
        assert fnx.config.jax_enable_x64
        assert jnp.arange(3.0).dtype == jnp.float64 and jnp.array([1, 2]).dtype == jnp.int64
        assert jnp.ones(2).dtype == jnp.float64
        assert float(jnp.asarray(0.1)) == 0.1
    assert jnp.ones(2).dtype == jnp.float32 and jnp.array([1]).dtype == jnp.int32


def test_disable_jit_runs_python_eagerly():
    seen = []

    @fnx.jit
    def f(x):
        seen.append(type(x))
        return x * 2
    with fnx.disable_jit():
        assert float(f(jnp.asarray(1.5))) == 3.0
        f(jnp.asarray(1.5))
    assert seen == [fnx.Array, fnx.Array]           # called each time, never traced
    f(jnp.asarray(1.5))
    assert seen[-1] is not fnx.Array                # a tracer again


@pytest.mark.parametrize("precision", [None, "highest", "float32", "default", "high",
                                       lax.Precision.DEFAULT, lax.Precision.HIGH,
                                       lax.Precision.HIGHEST,
                                       (lax.Precision.HIGHEST, lax.Precision.DEFAULT)])
def test_precision_accepted_wherever_taken(rng, precision):
    a, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    want = np.asarray(jax.lax.dot(a, b, precision=jax.lax.Precision.HIGHEST))
    for got in (lax.dot(a, b, precision=precision), jnp.dot(a, b, precision=precision),
                jnp.matmul(a, b, precision=precision),
                jnp.einsum("ij,jk->ik", a, b, precision=precision)):
        assert_close(got, want, rtol=1e-5, atol=1e-5)
    with fnx.default_matmul_precision("float32"):
        assert fnx.config.default_matmul_precision == "highest"


def test_numpy_dtype_promotion_strict():
    f32 = jnp.ones(2, jnp.float32)
    with fnx.numpy_dtype_promotion("strict"):
        assert (f32 + 1.0).dtype == jnp.float32 and (f32 + 1).dtype == jnp.float32
        for bad in (lambda: jnp.ones(2, jnp.int32) + 1.5, lambda: f32 + jnp.ones(2, jnp.float16),
                    lambda: f32 * jnp.ones(2, jnp.int32)):
            with pytest.raises(fnx.core.errors.TypePromotionError):
                bad()
    assert (f32 + jnp.ones(2, jnp.int32)).dtype == jnp.float32
    with pytest.raises(ValueError):
        fnx.config.update("jax_numpy_dtype_promotion", "loose")


def test_devices_and_scopes():
    assert fnx.device_count() == fnx.local_device_count() == len(fnx.local_devices()) == 1
    assert (fnx.process_index(), fnx.process_count()) == (0, 1)
    with fnx.named_scope("block"):
        y = fnx.jit(fnx.named_call(lambda x: x + 1, name="inc"))(1.0)
    assert float(y) == 2.0


def test_shape_dtype_struct_in_eval_shape_make_jaxpr_and_lower():
    s = fnx.ShapeDtypeStruct((3, 2), jnp.float32)
    f = lambda x: jnp.sum(x ** 2, axis=0)             # noqa: E731
    assert fnx.eval_shape(f, s) == fnx.ShapeDtypeStruct((2,), jnp.float32)
    assert "reduce_sum" in str(fnx.make_jaxpr(f)(s))
    assert "reduce_sum" in fnx.jit(f).lower(s).as_text()


def test_typing_names():
    from fnx.typing import ArrayLike, DTypeLike

    def scale(x: ArrayLike, dtype: DTypeLike = None) -> fnx.Array:
        return jnp.asarray(x, dtype) * 2
    assert scale(1, jnp.float32).dtype == jnp.float32 and ArrayLike and DTypeLike


def test_ravel_pytree_matches_jax(rng):
    from jax.flatten_util import ravel_pytree as ravel_ref

    from fnx.flatten_util import ravel_pytree
    tree = {"w": rng.normal(size=(2, 3)).astype(np.float32), "b": np.arange(2, dtype=np.int32),
            "s": [np.float32(rng.normal())]}
    flat, unravel = ravel_pytree(tree)
    flat_ref, _ = ravel_ref(tree)
    assert flat.dtype == flat_ref.dtype
    assert_close(flat, flat_ref)
    back = unravel(flat)
    assert back["b"].dtype == jnp.int32 and back["w"].shape == (2, 3)
    assert_close(back["w"], tree["w"])
    # differentiable both ways: a loss of the flat vector sees every leaf
    g = fnx.grad(lambda v: jnp.sum(unravel(v)["w"] ** 2))(flat)
    assert_close(g[3:], 2 * tree["w"].ravel())        # leaves in key order: b, s, w


def _host_sin(x):
    assert isinstance(x, (np.ndarray, fnx.Array))
    return np.sin(np.asarray(x))


@pytest.mark.parametrize("vmap_method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_in_jit_and_vmap(rng, vmap_method):
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    y = rng.normal(size=(4,)).astype(np.float32)

    def f(a, b):
        spec = fnx.ShapeDtypeStruct(a.shape, a.dtype)
        return fnx.pure_callback(lambda p, q: np.sin(np.asarray(p)) * np.asarray(q), spec, a, b,
                                 vmap_method=vmap_method)

    def f_ref(a, b):
        spec = jax.ShapeDtypeStruct(a.shape, a.dtype)
        return jax.pure_callback(lambda p, q: np.sin(np.asarray(p)) * np.asarray(q), spec, a, b,
                                 vmap_method=vmap_method)
    assert_close(fnx.jit(f)(x[0, 0], y), jax.jit(f_ref)(x[0, 0], y))
    got = fnx.jit(fnx.vmap(fnx.vmap(f, (0, None)), (0, None)))(x, y)
    assert_close(got, jax.vmap(jax.vmap(f_ref, (0, None)), (0, None))(x, y))


def test_pure_callback_errors():
    spec = fnx.ShapeDtypeStruct((3,), jnp.float32)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        fnx.vmap(lambda x: fnx.pure_callback(_host_sin, spec, x))(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="do not support JVP"):     # JAX's error
        fnx.grad(lambda x: jnp.sum(fnx.pure_callback(_host_sin, spec, x)))(jnp.ones(3))
    with pytest.raises(ValueError, match="shape"):
        fnx.pure_callback(lambda x: np.ones(2), spec, jnp.ones(3))


def test_debug_callback_in_jit_vmap_and_grad():
    seen = []

    def f(x):
        fnx.debug.callback(lambda v, tag: seen.append((tag, np.asarray(v).tolist())), x, tag="t")
        return jnp.sum(x ** 2)
    fnx.jit(f)(jnp.arange(2.0))
    fnx.vmap(f)(jnp.arange(4.0).reshape(2, 2))
    fnx.grad(f)(jnp.arange(2.0))
    assert seen == [("t", [0.0, 1.0]), ("t", [0.0, 1.0]), ("t", [2.0, 3.0]), ("t", [0.0, 1.0])]


def test_custom_gradient_matches_jax(rng):
    def make(jax_mod, np_mod):
        @jax_mod.custom_gradient
        def f(x, y):
            out = np_mod.sin(x) * y
            return out, lambda g: (g * 10 * np_mod.cos(x) * y, g * np_mod.sin(x) ** 2)
        return lambda x, y: np_mod.sum(f(x, y))
    x, y = rng.normal(size=(2, 5)).astype(np.float32)
    f, f_ref = make(fnx, jnp), make(jax, jnp_ref)
    assert_close(f(x, y), f_ref(x, y), rtol=1e-5)
    for got, want in zip(fnx.jit(fnx.grad(f, (0, 1)))(x, y), jax.grad(f_ref, (0, 1))(x, y)):
        assert_close(got, want, rtol=1e-5)
    assert_close(fnx.vmap(fnx.grad(f))(x[:, None], y[:, None]),
                 jax.vmap(jax.grad(f_ref))(x[:, None], y[:, None]), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# fnx.ops: segment reductions

SEGMENT_OPS = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


@pytest.mark.parametrize("name", SEGMENT_OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_segment_ops_match_jax(rng, name, dtype):
    data = rng.normal(size=(7, 3)).astype(np.float32) * 3
    data = data.astype(dtype)
    ids = rng.integers(-2, 6, size=7).astype(np.int32)     # some out of range: dropped
    f, f_ref = getattr(fnx.ops, name), getattr(jax.ops, name)
    want = f_ref(data, ids, num_segments=5)
    assert_close(f(data, ids, num_segments=5), want)
    assert_close(fnx.jit(lambda d, i: f(d, i, 5, indices_are_sorted=False))(data, ids), want)
    ok = ids[ids >= 0]
    assert_close(f(data[ids >= 0], ok), f_ref(data[ids >= 0], ok))     # num_segments inferred
    assert_close(fnx.vmap(lambda d: f(d, ids, 5), 1, 1)(data), want)


@pytest.mark.parametrize("name", SEGMENT_OPS)
def test_segment_ops_grad_matches_jax(rng, name):
    data = rng.normal(size=(6, 2)).astype(np.float32)
    ids = np.array([0, 2, 0, 1, 2, 7], np.int32)
    f = lambda d: jnp.sum(getattr(fnx.ops, name)(d, ids, 4) ** 2)             # noqa: E731
    if name == "segment_prod":      # JAX differentiates it only for unique ids
        fnx.test_util.check_grads(f, (data,), order=1)
        return
    f_ref = lambda d: jnp_ref.sum(getattr(jax.ops, name)(d, ids, 4) ** 2)     # noqa: E731
    got, want = fnx.grad(f)(data), jax.grad(f_ref)(data)
    finite = np.isfinite(np.asarray(want))
    assert_close(np.asarray(got)[finite], np.asarray(want)[finite], rtol=1e-4)


def test_devices_print_as_in_jax():
    mine, theirs = fnx.devices("cpu")[0], jax.devices("cpu")[0]
    assert (str(mine), repr(mine)) == (str(theirs), repr(theirs))
    assert str(jnp.ones(2).device) == str(jnp_ref.ones(2).device)


def test_item_assignment_is_a_type_error_pointing_at_at(rng):
    for x in (jnp.ones(3), jnp_ref.ones(3)):
        with pytest.raises(TypeError, match=r"immutable.*x\.at\[idx\]\.set\(y\)"):
            x[0] = 1.0

    def f(x):
        x[0] = 2.0
        return x
    with pytest.raises(TypeError, match="immutable"):
        fnx.jit(f)(jnp.ones(3))


def test_grad_allow_int_gives_float0_gradients_as_jax():
    f = lambda p: jnp.sum(p["x"] * p["n"])  # noqa: E731
    params = {"x": np.float32(2.0), "n": np.arange(3, dtype=np.int32)}
    mine = fnx.grad(f, allow_int=True)(params)
    theirs = jax.grad(lambda p: jnp_ref.sum(p["x"] * p["n"]), allow_int=True)(params)
    assert mine["n"].dtype == theirs["n"].dtype == fnx.dtypes.float0
    assert mine["n"].shape == theirs["n"].shape == (3,)
    np.testing.assert_allclose(mine["x"], theirs["x"])
    value, (gx, gn) = fnx.value_and_grad(lambda x, n: x * n, (0, 1), allow_int=True)(2.0, 3)
    assert float(value) == 6.0 and float(gx) == 3.0 and gn.dtype == fnx.dtypes.float0
    with pytest.raises(fnx.GradError, match="dtype int32"):
        fnx.grad(lambda x, n: x * n, (0, 1))(2.0, np.int32(3))


@pytest.mark.parametrize("name", ["jax_use_shardy_partitioner", "jax_cpu_enable_async_dispatch",
                                  "jax_threefry_partitionable", "jax_compilation_cache_dir"])
def test_jax_options_without_fnx_behaviour_are_accepted_and_remembered(name):
    old = getattr(fnx.config, name, None)
    fnx.config.update(name, True)
    try:
        assert getattr(fnx.config, name) is True
    finally:
        fnx.config.update(name, old)


def test_partition_specs_print_as_in_jax():
    from jax.sharding import PartitionSpec as JP

    from fnx.sharding import PartitionSpec
    for parts in [(), (None, "a"), (("a", "b"),), ("a",)]:
        assert repr(PartitionSpec(*parts)) == repr(JP(*parts))

"""Newer JAX APIs real programs use: user-defined primitives through ``jax.extend`` and
``jax.interpreters``, array refs, and top-level names; each checked against JAX on the CPU."""
import importlib

import numpy as np
import pytest

import fnx

jax = pytest.importorskip("jax")

rng = np.random.default_rng()
pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _lib(name):
    """(top level, numpy, extend.core, interpreters.ad, interpreters.batching, mlir)."""
    return [importlib.import_module(f"{name}{m}") for m in
            ("", ".numpy", ".extend.core", ".interpreters.ad", ".interpreters.batching",
             ".interpreters.mlir")]


def _multiply_add(name):
    """JAX's "how primitives work" example: ``x * y + z`` as a primitive with every rule,
    written once against either library."""
    top, jnp, core, ad, batching, mlir = _lib(name)
    ma_p = core.Primitive(f"multiply_add_{rng.integers(1 << 30)}")

    def multiply_add(x, y, z):
        return ma_p.bind(x, y, z)

    ma_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    ma_p.def_abstract_eval(lambda xs, ys, zs: top.core.ShapedArray(xs.shape, xs.dtype))
    mlir.register_lowering(ma_p, mlir.lower_fun(lambda x, y, z: x * y + z,
                                                multiple_results=False))

    def jvp(primals, tangents):
        x, y, z = primals
        xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
        return multiply_add(x, y, z), multiply_add(xt, y, multiply_add(x, yt, zt))
    ad.primitive_jvps[ma_p] = jvp

    def transpose(ct, x, y, z):
        # linear in x (with y known) or in y (with x known), and in z
        if ad.is_undefined_primal(x):
            ct_x = None if type(ct) is ad.Zero else multiply_add(ct, y, jnp.zeros_like(y))
            return ct_x, None, ct
        ct_y = None if type(ct) is ad.Zero else multiply_add(x, ct, jnp.zeros_like(x))
        return None, ct_y, ct
    ad.primitive_transposes[ma_p] = transpose

    def batch(args, dims):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        args = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
        return multiply_add(*args), 0
    batching.primitive_batchers[ma_p] = batch
    return top, multiply_add


def _programs(name):
    top, ma = _multiply_add(name)
    sq_add = lambda a, b: ma(a, a, b)   # noqa: E731
    return {
        "eager": lambda x, y: ma(x, y, 1.0 + x),
        "jit": top.jit(lambda x, y: ma(x, y, x)),
        "grad": top.grad(lambda x, y: sq_add(x, y).sum(), argnums=(0, 1)),
        "jit_grad": top.jit(top.grad(lambda x, y: (ma(x, y, x) ** 2).sum())),
        "vmap": top.vmap(lambda x, y: ma(x, y, y), in_axes=(0, 1)),
        "vmap_grad": top.vmap(top.grad(lambda x, y: sq_add(x, y).sum()), in_axes=(1, 0)),
        "jvp": lambda x, y: top.jvp(lambda a: ma(a, y, a), (x,), (y,)),
    }


@pytest.mark.parametrize("prog", ["eager", "jit", "grad", "jit_grad", "vmap", "vmap_grad",
                                  "jvp"])
def test_user_primitive_matches_jax(prog):
    x, y = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    got = _programs("fnx")[prog](x, y)
    want = _programs("jax")[prog](x, y)
    for g, w in zip(fnx.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_extend_core_jaxprs():
    from fnx.extend import core
    closed = fnx.make_jaxpr(lambda x: (fnx.numpy.sin(x) * 2, x + 1))(1.0)
    assert isinstance(closed, core.ClosedJaxpr) and isinstance(closed.jaxpr, core.Jaxpr)
    x = rng.standard_normal()
    got = core.jaxpr_as_fun(closed)(x)
    np.testing.assert_allclose([float(v) for v in got], [np.sin(x) * 2, x + 1], rtol=1e-12)
    # the function runs under transformations, as JAX's does
    np.testing.assert_allclose(float(fnx.grad(lambda x: core.jaxpr_as_fun(closed)(x)[0])(x)),
                               2 * np.cos(x), rtol=1e-12)
    core.check_jaxpr(closed)
    assert core.primitives.sin_p is fnx.lax.sin_p
    assert core.concrete_or_error(int, fnx.numpy.array(3)) == 3
    with pytest.raises(fnx.errors.ConcretizationTypeError):
        fnx.jit(lambda x: core.concrete_or_error(int, x, "the size"))(3)


def test_extend_helpers_match_jax():
    from fnx.extend import core, linear_util, random
    import jax.extend as jex
    k, c = rng.integers(0, 2 ** 32, 2, dtype=np.uint32), rng.integers(0, 2 ** 32, 7,
                                                                      dtype=np.uint32)
    np.testing.assert_array_equal(np.asarray(random.threefry_2x32(k, c)),
                                  np.asarray(jex.random.threefry_2x32(k, c)))
    aval = core.ShapedArray((4, 3), np.float32)
    assert core.mapped_aval(4, 0, aval).shape == (3,)
    assert core.unmapped_aval(5, 1, aval).shape == (4, 5, 3)
    assert core.primal_dtype_to_tangent_dtype(np.int32) == \
        jex.core.primal_dtype_to_tangent_dtype(np.int32)
    assert linear_util.wrap_init(lambda a, *, b: a - b, {"b": 2}).call_wrapped(5) == 3
    assert fnx.extend.backend.get_backend().platform == "cpu"


def test_defjvp_deflinear_defvectorized_helpers():
    from fnx.extend.core import Primitive
    from fnx.interpreters import ad, batching
    cube = Primitive("cube_t")
    cube.def_impl(lambda x: x ** 3)
    cube.def_abstract_eval(lambda x: x)
    ad.defjvp(cube, lambda g, x: 3 * x ** 2 * g)
    batching.defvectorized(cube)
    scale = Primitive("scale_t")
    scale.def_impl(lambda x, *, k: k * x)
    scale.def_abstract_eval(lambda x, *, k: x)
    ad.deflinear(scale, lambda ct, *, k: [k * ct])
    batching.defvectorized(scale)
    x = rng.standard_normal(4)
    f = lambda x: scale.bind(cube.bind(x), k=2.5).sum()   # noqa: E731
    np.testing.assert_allclose(np.asarray(fnx.jit(fnx.grad(f))(x)), 7.5 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnx.vmap(fnx.grad(f))(x[:, None])),
                               7.5 * x[:, None] ** 2, rtol=1e-12)
    with pytest.raises(fnx.interpreters.mlir.LoweringError, match="def_impl"):
        fnx.interpreters.mlir.register_lowering(Primitive("no_impl"), lambda ctx, x: x)


# ---- array refs -------------------------------------------------------------------------------

def _ref_programs(name):
    top, jnp = _lib(name)[:2]
    lax = top.lax

    def closure_jit():
        x_ref = top.new_ref(jnp.zeros(3))

        @top.jit
        def f():
            x_ref[1] += 1.0
        f()
        f()
        return x_ref[...]

    def internal_grad(x):
        def g(x):
            ref = top.new_ref(0.0)
            ref[...] = jnp.sin(x)
            return ref[...]
        return top.grad(g)(x)

    def fori_closure(x):
        x, acc = jnp.asarray(x), top.new_ref(jnp.zeros(3))

        def body(i, c):
            acc[i % 3] += c * x[i]
            return c + 1.0
        out = top.jit(lambda: lax.fori_loop(0, 6, body, 1.0))()
        eager = lax.fori_loop(0, 2, body, 0.5)
        return out, eager, acc[...]

    def scan_grad(xs):
        def g(xs):
            ref = top.new_ref(jnp.zeros(xs.shape[1]))

            def step(c, x):
                ref[...] = ref[...] * 0.5 + x * c
                return c + 1.0, x.sum() * c
            _, ys = lax.scan(step, 1.0, xs)
            return (ref[...] ** 2).sum() + ys.sum()
        return top.jit(top.grad(g))(xs)

    def while_and_cond(x):
        count = top.new_ref(0)
        seen = top.new_ref(jnp.zeros(2))

        def body(v):
            count[...] += 1
            return v * 1.5

        def branch_pos(v):
            seen[0] += v
            return v

        def branch_neg(v):
            seen[1] += v
            return -v
        v = top.jit(lambda x: lax.while_loop(lambda v: v < 10.0, body, x))(x)
        a = lax.cond(x > 2.0, branch_pos, branch_neg, x)
        b = top.jit(lambda x: lax.cond(x > 2.0, branch_pos, branch_neg, x))(-x)
        return v, a, b, count[...], seen[...]

    def ref_functions(x):
        r = top.new_ref(x)
        old = top.ref.swap(r, 0, x[1] * 2)
        top.ref.addupdate(r, 1, x[0])
        top.ref.set(r, 2, 7.0)
        return old, top.ref.get(r, 1), r[...], top.freeze(r), str(top.typeof(r))

    def stash(x):
        @top.custom_vjp
        def stash_grads(grads_ref, x):
            return x

        def fwd(grads_ref, x):
            return x, grads_ref

        def bwd(grads_ref, g):
            grads_ref[...] = g
            return None, g
        stash_grads.defvjp(fwd, bwd)
        grads_ref = top.new_ref(0.0)
        top.grad(lambda x, r: jnp.sin(stash_grads(r, x)) * 3.0)(x, grads_ref)
        return grads_ref[...]

    def vmapped_ref_args(vecs):
        def dist(x, y, out_ref):
            out_ref[...] = jnp.sum((x - y) ** 2)
        out_ref = top.new_ref(jnp.zeros((vecs.shape[0],) * 2))
        top.vmap(top.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, out_ref)
        return out_ref[...]

    return dict(closure_jit=closure_jit, internal_grad=internal_grad,
                fori_closure=fori_closure, scan_grad=scan_grad, while_and_cond=while_and_cond,
                ref_functions=ref_functions, stash=stash, vmapped_ref_args=vmapped_ref_args)


_REF_INPUTS = {"closure_jit": lambda: (), "internal_grad": lambda: (rng.standard_normal(),),
               "fori_closure": lambda: (rng.standard_normal(6),),
               "scan_grad": lambda: (rng.standard_normal((4, 3)),),
               "while_and_cond": lambda: (rng.uniform(1.0, 4.0),),
               "ref_functions": lambda: (rng.standard_normal(3),),
               "stash": lambda: (rng.standard_normal(),),
               "vmapped_ref_args": lambda: (rng.standard_normal((3, 4)),)}


@pytest.mark.parametrize("prog", list(_REF_INPUTS))
def test_ref_programs_match_jax(prog):
    args = _REF_INPUTS[prog]()
    got = _ref_programs("fnx")[prog](*args)
    want = _ref_programs("jax")[prog](*args)
    got_leaves, want_leaves = fnx.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(w, str):
            assert g == w
        else:
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-14)


def test_ref_misuse_errors():
    x_ref = fnx.new_ref(0.0)
    with pytest.raises(TypeError, match="not an array"):
        fnx.numpy.sin(x_ref)
    with pytest.raises(ValueError, match="same reference twice"):
        fnx.jit(lambda a, b: None)(x_ref, x_ref)

    @fnx.jit
    def closes_and_takes(y_ref):
        y_ref[...] = x_ref[...]
    with pytest.raises(ValueError, match="both closed over and passed"):
        closes_and_takes(x_ref)
    with pytest.raises(ValueError, match="cannot be returned"):
        fnx.jit(lambda r: r)(x_ref)
    r = fnx.empty_ref(fnx.ShapeDtypeStruct((2, 3), np.float32))
    assert r.shape == (2, 3) and r.dtype == np.float32
    fnx.free_ref(r)
    with pytest.raises(ValueError, match="freed"):
        r[...]
    assert isinstance(fnx.typeof(x_ref), fnx.ref.AbstractRef)


# ---- top-level and module names from recent JAX releases --------------------------------------

def test_config_option_contexts_as_jax():
    for name, value in [("numpy_rank_promotion", "raise"), ("debug_infs", True),
                        ("default_prng_impl", "rbg"), ("explain_cache_misses", True),
                        ("transfer_guard_host_to_device", "disallow")]:
        before = getattr(fnx.config, name)
        with getattr(fnx, name)(value):
            assert getattr(fnx.config, name) == value
            assert getattr(fnx.config, f"jax_{name}") == value
        assert getattr(fnx.config, name) == before == getattr(jax.config, f"jax_{name}")
    with fnx.transfer_guard("log"):
        assert fnx.config.transfer_guard_device_to_host == "log"
    with fnx.checking_leaks():
        assert fnx.config.check_tracer_leaks


def test_error_classes_as_jax():
    for name in ["JaxRuntimeError", "JAXTypeError", "JAXIndexError", "JaxprTypeError",
                 "KeyReuseError", "InconclusiveDimensionOperation"]:
        ours, theirs = getattr(fnx.errors, name), getattr(jax.errors, name)
        builtin = [b for b in theirs.__mro__ if b.__module__ == "builtins"][0]
        assert issubclass(ours, builtin), name
    assert issubclass(fnx.errors.OutOfMemoryError, fnx.errors.JaxRuntimeError)


def test_tree_util_additions_match_jax():
    import collections
    point = collections.namedtuple("point", "x y")
    trees = [{"b": 2, "a": (1, 3)}, [1.0, None, 2.0], point(1, 2)]
    for tree in trees[:2]:
        assert str(fnx.tree_util.flatten_one_level_with_keys(tree)[0]) == \
            str(list(jax.tree_util.flatten_one_level_with_keys(tree)[0]))
    for tree in trees:
        got = fnx.tree_util.tree_reduce_associative(lambda a, b: a * 10 + b, tree)
        assert got == jax.tree_util.tree_reduce_associative(lambda a, b: a * 10 + b, tree)
    for typ in (list, dict, tuple, type(None), int, point, np.ndarray):
        assert fnx.tree_util.is_tree_node(typ) == jax.tree_util.is_tree_node(typ), typ
    with pytest.raises(TypeError, match="identity"):
        fnx.tree_util.tree_reduce_associative(lambda a, b: a + b, [])


def test_random_nn_and_sharding_additions_match_jax():
    assert str(fnx.random.key_dtype()) == str(jax.random.key_dtype())
    k = rng.integers(0, 2 ** 32, 2, dtype=np.uint32)
    for shape in [(3, 2, 2), (3, 3, 2, 4), (1, 3, 2, 3, 3)]:
        np.testing.assert_allclose(
            np.asarray(fnx.nn.initializers.delta_orthogonal(scale=1.5)(k, shape)),
            np.asarray(jax.nn.initializers.delta_orthogonal(scale=1.5)(k, shape)), atol=1e-6)
    with pytest.raises(ValueError, match="fan_in"):
        fnx.nn.initializers.delta_orthogonal()(k, (3, 4, 2))
    AxisType = fnx.sharding.AxisType
    assert [t.name for t in AxisType] == [t.name for t in jax.sharding.AxisType]
    mesh = fnx.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,))
    assert mesh.axis_types == (AxisType.Explicit,) and fnx.sharding.get_mesh().empty
    with fnx.set_mesh(mesh):
        assert fnx.sharding.get_mesh() is mesh
    data = rng.standard_normal((4, 3))
    s = fnx.NamedSharding(mesh, fnx.P("x"))
    got = fnx.make_array_from_callback(data.shape, s, lambda idx: data[idx])
    np.testing.assert_array_equal(np.asarray(got), data)
    assert fnx.reshard(got, s).sharding == s
    assert fnx.process_indices() == jax.process_indices() and fnx.host_count() == 1


def test_stages_and_custom_derivatives_modules():
    lowered = fnx.jit(lambda x: x * 2).lower(fnx.ShapeDtypeStruct((2,), np.float32))
    assert isinstance(lowered, fnx.stages.Lowered)
    assert isinstance(lowered.compile(), fnx.stages.Compiled)
    assert isinstance(fnx.jit(jnp_sin), fnx.stages.Wrapped)
    assert fnx.custom_derivatives.custom_vjp is fnx.custom_vjp


def jnp_sin(x):
    return fnx.numpy.sin(x)


def test_vjp_with_refs_accumulates_as_jax_docs_show():
    # from JAX's "Ref" documentation: gradients accumulated into refs, or left out
    x = rng.standard_normal()
    grad_ref = fnx.new_ref(100.0)
    _, f_vjp = fnx.vjp(lambda x_ref: x_ref[...] ** 2, fnx.new_ref(x))
    assert isinstance(f_vjp.with_refs(grad_ref)(1.0)[0], fnx.ad.GradRef)
    np.testing.assert_allclose(float(grad_ref[...]), 100.0 + 2 * x, rtol=1e-12)
    with pytest.raises(ValueError, match="with_refs"):
        f_vjp(1.0)

    def g(x_ref):
        x_ref[...] = fnx.numpy.sin(x_ref[...])
        return x_ref[...] ** 2
    x_ref, g_ref = fnx.new_ref(x), fnx.new_ref(0.0)
    _, g_vjp = fnx.vjp(g, x_ref)          # runs g: x_ref is updated
    np.testing.assert_allclose(float(x_ref[...]), np.sin(x), rtol=1e-12)
    g_vjp.with_refs(g_ref)(1.0)
    np.testing.assert_allclose(float(g_ref[...]), 2 * np.sin(x) * np.cos(x), rtol=1e-12)

    w, v = rng.standard_normal((3, 3)), rng.standard_normal(3)
    _, p_vjp = fnx.vjp(lambda w, v: w @ v, w, v)
    w_bar, v_bar = fnx.jit(lambda f, ct: f.with_refs(fnx.ad.GradValue(), fnx.ad.DontWant())(ct))(
        p_vjp, np.ones(3))
    np.testing.assert_allclose(np.asarray(w_bar), np.outer(np.ones(3), v), rtol=1e-12)
    assert isinstance(v_bar, fnx.ad.DidntWant)


def test_lax_dot_dimension_numbers_device_and_shard_names():
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    dims = (((2,), (1,)), ((0,), (0,)))
    np.testing.assert_allclose(np.asarray(fnx.lax.dot(a, b, dimension_numbers=dims)),
                               np.asarray(jax.lax.dot(a, b, dimension_numbers=dims)),
                               rtol=1e-12)
    assert isinstance(fnx.devices()[0], fnx.Device)
    assert isinstance(fnx.numpy.ones(2).addressable_shards[0], fnx.Shard)
    with fnx.thread_guard(True):
        assert fnx.config.thread_guard


def test_environment_monitoring_and_runtime_names_as_jax():
    for name in ["print_environment_info", "live_arrays", "copy_to_host_async", "lib", "memory",
                 "monitoring", "version", "no_tracing", "no_execution"]:
        assert hasattr(fnx, name), name
    info = fnx.print_environment_info(return_string=True)
    assert f"fnx:    {fnx.__version__}" in info and f"numpy:  {np.__version__}" in info
    assert fnx.version.__version__ == fnx.__version__
    x, y = fnx.numpy.ones(3), fnx.numpy.zeros(2)
    y.delete()
    live = fnx.live_arrays()
    assert any(a is x for a in live) and not any(a is y for a in live)
    assert fnx.copy_to_host_async({"x": x}) is None
    assert fnx.lib.xla_bridge.get_backend().platform == fnx.default_backend()
    assert [s.name for s in fnx.memory.Space] == [s.name for s in jax.memory.Space]
    # listeners see what is recorded, in order, until unregistered, as JAX's
    for lib in (fnx, jax):
        seen = []

        def on_event(event, **kw):
            seen.append((event, kw))

        def on_duration(event, secs, **kw):
            seen.append((event, secs))
        lib.monitoring.register_event_listener(on_event)
        lib.monitoring.register_event_duration_secs_listener(on_duration)
        lib.monitoring.record_event("/test/a", step=1)
        lib.monitoring.record_event_duration_secs("/test/b", 0.5)
        lib.monitoring.unregister_event_listener(on_event)
        lib.monitoring.unregister_event_duration_listener(on_duration)
        lib.monitoring.record_event("/test/c")
        assert [s for s in seen if s[0].startswith("/test/")] == [("/test/a", {"step": 1}),
                                                                  ("/test/b", 0.5)], lib
        with pytest.raises(AssertionError):
            lib.monitoring.unregister_event_listener(on_event)

"""Programs in the style of JAX's newer documentation pages (configuration, stateful random
generators, vmap's sum_match, the removed checkpoint option, custom interpreters' names) whose
outcome once differed from JAX's: each runs with fnx's names and with JAX's on the CPU, with fresh
random inputs, and must give the same values, dtypes and shapes (or raise alike)."""
import importlib

import jax
import numpy as np
import pytest

import fnx
from test_jax_differences_2 import FNX, JAX, same_as_jax

# with x64 off (the user's default), and JAX run with x64 set as fnx's
pytestmark = [pytest.mark.x32, pytest.mark.usefixtures("jax_x64_as_fnx")]


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.mark.parametrize("name, value", [
    ("jax_persistent_cache_enable_xla_caches", "xla_gpu_per_fusion_autotune_cache_dir"),
    ("jax_logging_level", "WARNING"), ("jax_transfer_guard", "allow"),
    ("jax_dump_ir_modes", "eqn_count_pprof")])
def test_configuration_lines_of_jax_pages_run(name, value):
    fnx.config.update(name, value)
    assert getattr(fnx.config, name) == value


def test_transfer_guard_and_compilation_cache_settings_run_unchanged(tmp_path):
    from fnx.experimental.compilation_cache import compilation_cache as cc
    old = getattr(fnx.config, "compilation_cache_dir", None)
    cc.set_cache_dir(tmp_path)
    assert fnx.config.jax_compilation_cache_dir == str(tmp_path) and cc.is_initialized()
    fnx.config.update("jax_compilation_cache_dir", old)
    x = fnx.numpy.array([1, 2])
    with fnx.transfer_guard("disallow"):
        assert fnx.config.transfer_guard == "disallow"
        np.testing.assert_array_equal(fnx.device_get(x), [1, 2])
    with fnx.transfer_guard_device_to_host("log"):
        assert fnx.config.transfer_guard_device_to_host == "log"


def _stateful_draws(side, seed):
    random = importlib.import_module(side.m.__name__ + ".experimental.random")
    rng = random.stateful_rng(seed)
    jitted = side.m.jit(rng.uniform)
    xs = side.np.zeros(3)
    return (rng.random((5,)), rng.random(2), rng.uniform(-1.0, 2.0, (3,)), jitted(), jitted(),
            rng.normal(1.0, 2.0, (4,)), rng.integers(10, size=(2,)),
            side.m.random.key_data(rng.key((2,))),
            [r.integers(0, 10, 2) for r in rng.spawn(2)],
            side.m.vmap(lambda r, x: x + r.uniform())(rng.split(3), xs))


def test_stateful_rng_draws_as_jax(rng):
    seed = int(rng.integers(2**31))
    same_as_jax(lambda side: _stateful_draws(side, seed))


def test_vmap_sum_match_sums_outputs_that_vary(rng):
    x, y = rng.standard_normal((2, 4, 3)).astype(np.float32)
    same_as_jax(lambda s: s.m.vmap(lambda a, b: (a * b[0], b[0], a), in_axes=(0, None),
                                   out_axes=(None, None, 0), sum_match=True)(x, y))
    same_as_jax(lambda s: s.m.jit(s.m.vmap(lambda a: 2.0 * a, out_axes=None,
                                           sum_match=True))(x))
    same_as_jax(lambda s: s.m.vmap(lambda a: 2.0 * a, out_axes=None)(x))     # raises


def test_checkpoint_refuses_the_removed_concrete_option():
    for side in (FNX, JAX):
        with pytest.raises(NotImplementedError):
            side.m.checkpoint(lambda x: x, concrete=True)


def test_closed_jaxpr_literals_are_its_consts(rng):
    c = rng.standard_normal(3).astype(np.float32)
    closed = fnx.make_jaxpr(lambda x: fnx.numpy.exp(fnx.numpy.tanh(x)) + c)(np.ones(3, np.float32))
    want = jax.make_jaxpr(lambda x: jax.numpy.exp(jax.numpy.tanh(x)) + c)(np.ones(3, np.float32))
    assert len(closed.literals) == len(want.literals) == len(closed.consts)
    for g, w in zip(closed.literals, want.literals):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_copies_of_traced_values_stay_in_their_trace(rng):
    # jax_md's dataclasses.astuple deep-copies a state of tracers inside jit and grad
    import copy
    x = np.float32(rng.standard_normal())

    def program(side):
        def f(v):
            return copy.deepcopy({"v": v})["v"] * 2.0 + copy.copy(v) ** 2
        return side.m.jit(f)(x), side.m.grad(f)(x), copy.deepcopy(side.np.asarray(x) + 1)
    same_as_jax(program)


def test_cond_with_an_operand_per_branch(rng):
    # JAX's oldest form: cond(pred, true_operand, true_fun, false_operand, false_fun)
    a, b = rng.standard_normal((2, 3)).astype(np.float32)
    for pred in (True, False):
        same_as_jax(lambda s: s.m.jit(lambda p, a, b: s.lax.cond(
            p, a, lambda u: u + 1.0, b, lambda v: v * 2.0))(pred, a, b))
    same_as_jax(lambda s: s.lax.cond(True, 1.0, 2.0, 3.0))     # raises TypeError


def test_eval_shape_takes_shaped_arrays_and_duck_typed_shapes():
    class Spec:
        shape, dtype = (4, 3), np.dtype("float32")
    from fnx.core import ShapedArray
    from jax.core import ShapedArray as JaxShapedArray
    for side, shaped in ((FNX, ShapedArray), (JAX, JaxShapedArray)):
        out = side.m.eval_shape(lambda a, b: a @ b.T, shaped((2, 3), np.float32), Spec())
        assert out.shape == (2, 4) and out.dtype == np.float32


def test_interpreters_modules_import_under_jax_names():
    from fnx.interpreters import ad, batching, partial_eval  # noqa: F401
    assert batching.not_mapped is None


@pytest.mark.parametrize("count", [0, 5, 31, 32, 40, -1])
def test_shifts_by_one_count_in_and_out_of_range(rng, count):
    x = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    for op in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        same_as_jax(lambda s: getattr(s.lax, op)(x, np.int32(count)))
        same_as_jax(lambda s: getattr(s.lax, op)(x.view(np.uint32), np.uint32(count % 2**32)))


def test_explicit_sharding_spellings_of_the_training_cookbook(rng):
    # jax.make_mesh(shape, names, axis_types) positionally, jax.set_mesh(mesh) as a statement,
    # out_sharding= on einsum, .at[].get and initializers, make_array_from_process_local_data
    # of a pytree with a bare PartitionSpec: values as JAX computes them
    from fnx.sharding import AxisType
    P = fnx.P
    mesh = fnx.make_mesh((1,), ("fsdp",), (AxisType.Explicit,))
    assert mesh.axis_types == (AxisType.Explicit,)
    tokens = rng.integers(0, 16, (2, 5)).astype(np.int32)
    table = rng.standard_normal((16, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    with fnx.set_mesh(mesh):
        batch = fnx.make_array_from_process_local_data(P("fsdp"), {"ids": tokens})
        assert batch["ids"].sharding.spec == P("fsdp")
        emb = fnx.numpy.asarray(table).at[batch["ids"]].get(out_sharding=P("fsdp", None, None))
        out = fnx.numpy.einsum("bsd,dh->bsh", emb, w, out_sharding=P("fsdp", None, None))
        out2 = fnx.numpy.matmul(emb, w, out_sharding=P("fsdp")) + fnx.numpy.dot(emb, w,
                                                                               out_sharding=None)
        init = fnx.nn.initializers.he_normal(1, 1)(fnx.random.key(3), (4, 3), "float32",
                                                   P(None, "fsdp"))
    from fnx.core.sharding import current_mesh
    before = current_mesh()
    setting = fnx.sharding.set_mesh(mesh)      # a statement sets it at once
    assert current_mesh() is mesh
    setting.__exit__(None, None, None)
    assert current_mesh() is before
    want = np.einsum("bsd,dh->bsh", table[tokens], w)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(out2), 2 * want, rtol=1e-5, atol=1e-5)
    jax_init = jax.nn.initializers.he_normal(1, 1)(jax.random.key(3), (4, 3), "float32")
    np.testing.assert_allclose(np.asarray(init), np.asarray(jax_init), rtol=1e-6)
    with pytest.raises(ValueError):
        with fnx.set_mesh(None):
            fnx.make_array_from_process_local_data(P("fsdp"), tokens)


def test_jax_array_protocol_only_in_explicit_conversions(rng):
    data = rng.standard_normal(5).astype(np.float32)

    def program(side):
        class Custom:
            def __jax_array__(self):
                return side.np.asarray(data)
        return side.np.asarray(Custom()), side.np.array(Custom(), dtype="float16")
    same_as_jax(program)
    for side in (FNX, JAX):
        class Custom:
            def __jax_array__(self):
                return side.np.asarray(data)
        for use in (lambda x: side.np.multiply(x, 2), side.np.sin, side.m.jit(lambda x: x)):
            with pytest.raises(ValueError):
                use(Custom())


def test_none_is_not_an_array_value(rng):
    # custom_pytrees.md: jacobian rebuilds a class whose __init__ calls jnp.asarray on None
    for side in (FNX, JAX):
        for convert in (side.np.asarray, side.np.array):
            with pytest.raises(ValueError):
                convert(None)


def _hijax_program(side, x, y, get=None):
    hijax = importlib.import_module(side.m.__name__ + ".experimental.hijax")
    np_, typeof = side.np, side.m.typeof

    class ScaledGrad(hijax.VJPHiPrimitive):      # identity forward, scaled cotangent back
        def __init__(self, x_aval, b_aval, *, scale):
            self.in_avals, self.out_aval = (x_aval, b_aval), x_aval
            self.params = dict(scale=scale)
            super().__init__()

        def expand(self, x, b):
            return x

        def vjp_fwd(self, nzs_in, x, b):
            return self(x, b), None

        def vjp_bwd_retval(self, res, g):
            return (self.scale * g, None)              # None: a zero cotangent

        def batch_dim_rule(self, axis_data, in_dims):
            return in_dims[0]

    class SinTimes(hijax.VJPHiPrimitive):        # both rules; Python control flow on values
        def __init__(self, x_aval, y_aval):
            self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
            super().__init__()

        def expand(self, x, y):
            return np_.sin(x) * y

        def vjp_fwd(self, nzs_in, x, y):
            return self(x, y), (np_.cos(x), np_.sin(x), y)

        def vjp_bwd_retval(self, res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)

        def jvp(self, primals, tangents):
            (x, y), (dx, dy) = primals, tangents
            return self(x, y), np_.cos(x) * dx * y + np_.sin(x) * dy

        def batch_dim_rule(self, axis_data, in_dims):
            return in_dims[0] if in_dims[0] is not None else in_dims[1]

    class Exp(hijax.VJPHiPrimitive):             # linearization rules only
        def __init__(self, x_aval):
            self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
            super().__init__()

        def expand(self, x):
            return np_.exp(x)

        def lin(self, nzs_in, x):
            e = np_.exp(x)
            return e, e

        def linearized(self, e, dx):
            return e * dx

    scaled = lambda v: ScaledGrad(typeof(v), typeof(v), scale=3.0)(v, v)   # noqa: E731
    sin_times = lambda a, b: SinTimes(typeof(a), typeof(b))(a, b)   # noqa: E731
    exp = lambda v: Exp(typeof(v))(v)                                # noqa: E731
    if get == "exp":
        return exp
    g = side.m.grad
    return (side.m.vmap(g(lambda v: np_.sin(scaled(v))))(x),
            side.m.jit(g(sin_times, (0, 1)))(x[0], y[0]),
            side.m.jvp(sin_times, (x[0], y[0]), (y[1], x[1])),
            side.m.vmap(side.m.jit(sin_times))(x, y),
            side.m.linearize(exp, x)[1](y))


def test_python_primitives_of_hijax_as_jax(rng):
    x, y = rng.standard_normal((2, 4)).astype(np.float32)
    same_as_jax(lambda side: _hijax_program(side, x, y), rtol=1e-5, atol=1e-6)
    same_as_jax(lambda side: side.m.vmap(_hijax_program(side, x, y, get="exp"))(x))   # raises
    # the forward rule is used under jvp, the reverse rules under grad (when they agree, as
    # they should, fnx may differentiate either)


def test_vjp_with_refs_accumulates_and_returns_as_jax(rng):
    w = rng.standard_normal((3, 3)).astype(np.float32)
    xs = rng.standard_normal((4, 3)).astype(np.float32)

    def program(side):
        ad = side.m.ad
        acc = side.m.new_ref(side.np.zeros((3, 3)))
        outs = []
        for x in xs:          # microbatches: gradients of w accumulated in place
            loss, f_vjp = side.m.vjp(lambda w, x: side.np.sum(side.np.tanh(w @ x)), w, x)
            outs.append(f_vjp.with_refs(acc, ad.GradValue())(side.np.ones_like(loss))[1])
        _, f_vjp = side.m.vjp(lambda w, x: w @ x, w, xs[0])
        only_w = f_vjp.with_refs(ad.GradValue(), ad.DontWant())(side.np.ones(3))
        return (acc[...], outs, only_w[0], repr(only_w[1]),
                repr(f_vjp.with_refs(acc, ad.DontWant())(side.np.ones(3))))
    got, want = program(FNX), program(JAX)
    assert got[3:] == want[3:] == ("DidntWant()", "(GradRef(), DidntWant())")
    same_as_jax(lambda side: program(side)[:3], rtol=1e-5, atol=1e-5)

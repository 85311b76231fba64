"""Programs in the style of JAX's tutorials, run by fnx and by JAX on the CPU: the same printed
values, weak types, tracer reprs, call sequences of custom rules, and error types. Each test
runs with x64 off in both (the users' default)."""
import warnings
from typing import NamedTuple

import numpy as np
import pytest

import fnx
import fnx.numpy as fjnp
from fnx.experimental import io_callback

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402

pytestmark = pytest.mark.x32
rng = np.random.default_rng()


@pytest.fixture(autouse=True)
def _jax_x32():
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        jax.config.update("jax_enable_x64", old)


LIBS = [(fnx, fjnp), (jax, jjnp)]


def both(program):
    """``program(lib, jnp)`` run with fnx and with JAX."""
    return [program(lib, np_) for lib, np_ in LIBS]


# ---------------------------------------------------------------------------------------------
# jit: ahead-of-time stages, and one trace per function


def test_aot_stages_compile_and_check_their_signature():
    x, y = (int(v) for v in rng.integers(-50, 50, 2))

    def program(lib, jnp):
        f = lambda a, b: 2 * a + b  # noqa: E731
        i32 = lib.ShapeDtypeStruct((), jnp.dtype("int32"))
        compiled = lib.jit(f).trace(i32, i32).lower().compile()
        out = [compiled(x, y), lib.jit(f).trace(x, y).lower().compile()(x, y),
               lib.jit(f, static_argnums=0).trace(x, i32).lower().compile()(y)]
        errors = []
        for bad in (jnp.arange(3), jnp.float32(2.0)):
            try:
                compiled(bad, bad)
            except TypeError:
                errors.append("TypeError")
        g = lambda z: z @ jnp.ones(2)  # noqa: E731
        z = jnp.arange(6.0).reshape(3, 2)
        try:
            lib.vmap(lib.jit(g).trace(z).lower().compile())(jnp.ones((4, 3, 2)))
        except TypeError:
            errors.append("TypeError")
        return [(int(o), o.dtype, o.weak_type) for o in out], errors
    got, want = both(program)
    assert got == want
    assert want[1] == ["TypeError"] * 3


def test_traced_jaxpr_evaluates_the_function():
    x = rng.standard_normal(4).astype(np.float32)
    traced = fnx.jit(lambda v: fjnp.sin(v) * 3.0).trace(x)
    np.testing.assert_allclose(np.asarray(traced.jaxpr(x)[0]), np.sin(x) * 3.0, rtol=1e-6)
    assert traced.out_info == fnx.ShapeDtypeStruct((4,), np.float32)


def test_jit_of_the_same_function_traces_it_once():
    def program(lib, jnp):
        calls = []

        def f(v):
            calls.append(1)
            return v + 1.0
        outs = [float(lib.jit(f)(4.0)), float(lib.jit(f)(5.0)), lib.jit(f)(jnp.array([5.0]))]
        return len(calls), outs[:2]
    got, want = both(program)
    assert got == want == (2, [5.0, 6.0])


# ---------------------------------------------------------------------------------------------
# What users see printed


def test_tracers_print_as_in_jax():
    def program(lib, jnp):
        seen = []

        def f(v):
            seen.append(repr(v))
            seen.append(f"{v}")
            try:
                f"{v:.2f}"
            except TypeError:
                seen.append("TypeError")
            return v * 2
        lib.jit(f)(1.0)
        lib.jit(f)(jnp.ones((2, 3), jnp.int32))
        lib.grad(f)(1.5)
        lib.jvp(f, (1.5,), (1.0,))
        lib.vmap(f)(jnp.ones(3))
        lib.jit(lib.grad(f))(1.0)
        return seen
    got, want = both(program)
    assert got == want


def test_typeof_shape_dtype_struct_like_and_devices():
    x = rng.standard_normal((3, 2)).astype(np.float32)

    def program(lib, jnp):
        a = jnp.asarray(x)
        return (str(lib.typeof(a)), str(lib.typeof(1.0)), repr(lib.ShapeDtypeStruct.like(a)),
                len(a.devices()), lib.effects_barrier())
    got, want = both(program)
    assert got == want


def test_pytree_structures_print_as_in_jax():
    class Point(NamedTuple):
        x: float
        y: float

    def program(lib, jnp):
        class Pair:
            def __init__(self, a, b):
                self.a, self.b = a, b
        registered = lib.tree_util.register_pytree_node(
            Pair, lambda p: ((p.a, p.b), ("aux", 1)), lambda aux, c: Pair(*c))
        trees = [Point(1.0, 2.0), Pair(1.0, [2.0, 3.0]), (1.0, {"b": 2.0, "a": None})]
        return registered, [str(lib.tree.structure(t)) for t in trees]
    got, want = both(program)
    assert got == want


def test_errors_raised_as_in_jax():
    def program(lib, jnp):
        raised = []
        for attempt in (lambda: lib.tree.map(lambda v: v + 1, {1: 7, "y": 42}),
                        lambda: jnp.sum([1, 2, 3]), lambda: jnp.mean((1.0, 2.0)),
                        lambda: jnp.array(None)):
            try:
                attempt()
                raised.append(None)
            except (TypeError, ValueError) as e:
                raised.append(TypeError if isinstance(e, TypeError) else ValueError)
        return raised
    got, want = both(program)
    assert got == want == [ValueError, TypeError, TypeError, ValueError]


# ---------------------------------------------------------------------------------------------
# Weak types of derivatives and loops


def test_derivatives_and_loops_keep_weak_types():
    x = float(rng.uniform(0.5, 2.0))

    def program(lib, jnp):
        outs = [lib.grad(jnp.sin)(x), lib.grad(jnp.sin)(jnp.float32(x)),
                lib.vjp(lambda v: jnp.pi * v, x)[1](1.0)[0],
                lib.jit(lib.vjp(lambda v: jnp.pi * v, x)[1])(1.0)[0],
                lib.vjp(lambda v: v * 2, x)[1](jnp.float32(1.0))[0],
                lib.grad(lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2)(x + 2j),
                lib.grad(jnp.sin, holomorphic=True)(x + 1j),
                lib.lax.fori_loop(0, 10, lambda i, v: v + i, 0),
                lib.lax.fori_loop(0, 3, lambda i, v: v * 1.5, x),
                lib.grad(lambda v: lib.lax.fori_loop(0, 3, lambda i, c: c * c, v))(x)]
        return [(np.asarray(o).tolist(), o.dtype, o.weak_type) for o in outs]
    got, want = both(program)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g[0], w[0], rtol=1e-5)
        assert g[1:] == w[1:]


# ---------------------------------------------------------------------------------------------
# Custom derivative rules run as in JAX


def _custom_programs(lib, jnp):
    calls = []

    @lib.custom_jvp
    def f(v):
        calls.append("f")
        return jnp.sin(v)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("f_jvp")
        return f(primals[0]), jnp.cos(primals[0]) * tangents[0]

    @lib.custom_vjp
    def g(v):
        calls.append("g")
        return jnp.sin(v)

    def g_fwd(v):
        calls.append("g_fwd")
        return g(v), jnp.cos(v)

    def g_bwd(cos_v, ct):
        calls.append("g_bwd")
        return (cos_v * ct,)
    g.defvjp(g_fwd, g_bwd)
    return calls, f, g


@pytest.mark.parametrize("how", ["call", "jvp", "grad", "grad_grad", "jit_grad", "vmap_grad",
                                 "grad_of_jit_closure"])
def test_custom_rules_are_called_as_in_jax(how):
    x = float(rng.uniform(0.5, 2.0))

    def program(lib, jnp):
        calls, f, g = _custom_programs(lib, jnp)
        results = []
        for fun in (f, g):
            if how == "call":
                out = fun(x)
            elif how == "jvp":
                out = lib.jvp(fun, (x,), (1.0,))[1] if fun is f else lib.vjp(fun, x)[1](1.0)[0]
            elif how == "grad":
                out = lib.grad(fun)(x)
            elif how == "grad_grad":
                out = lib.grad(lib.grad(fun))(x) if fun is f else lib.grad(fun)(x)
            elif how == "jit_grad":
                out = lib.jit(lib.grad(fun))(x)
            elif how == "vmap_grad":
                out = lib.vmap(lib.grad(fun))(jnp.full(2, x))
            else:
                out = lib.grad(lambda v: lib.jit(lambda w: fun(v) * w)(2.0))(x)
            results.append(np.asarray(out).tolist())
            calls.append("|")
        return calls, results
    (got_calls, got), (want_calls, want) = both(program)
    assert got_calls == want_calls
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_forward_mode_of_custom_vjp_raises_type_error_after_running_fwd():
    def program(lib, jnp):
        calls, _, g = _custom_programs(lib, jnp)
        try:
            lib.jvp(g, (3.0,), (1.0,))
        except TypeError:
            calls.append("TypeError")
        return calls
    got, want = both(program)
    assert got == want


# ---------------------------------------------------------------------------------------------
# io_callback and configuration


def test_io_callback_runs_in_order_and_is_never_dropped():
    x = rng.standard_normal(5).astype(np.float32)

    def program(lib, jnp):
        from importlib import import_module
        io = import_module(f"{lib.__name__}.experimental").io_callback
        seen = []

        def host(v):
            seen.append(np.asarray(v).tolist())
            return (np.asarray(v) * 2).astype(v.dtype)

        @lib.jit
        def f(v):
            io(host, v, v)                  # unused: still called
            return io(host, v, v + 1)
        out = f(x)
        batched = lib.vmap(f)(jnp.stack([x, -x]))
        errors = []
        for attempt in (lambda: lib.vmap(lambda v: io(host, v, v, ordered=True))(
                            jnp.stack([x, x])),
                        lambda: lib.jvp(f, (x,), (x,))):
            try:
                attempt()
            except ValueError:
                errors.append("ValueError")
        return len(seen), np.asarray(out).tolist(), np.asarray(batched).tolist(), errors
    got, want = both(program)
    assert got[0] == want[0] and got[3] == want[3] == ["ValueError"] * 2
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_io_callback_matches_numpy():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    out = fnx.jit(lambda v: io_callback(np.sin, fnx.ShapeDtypeStruct.like(v), v))(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(x), rtol=1e-6)


def test_configuration_context_managers_and_jax_option_names():
    before = fnx.config.debug_nans
    with fnx.debug_nans(False):
        assert np.isnan(float(fnx.jit(lambda v: fjnp.log(-v))(5.0)))
    with fnx.debug_nans(True):
        assert fnx.config.debug_nans is True
        with pytest.raises(FloatingPointError):
            fnx.jit(lambda v: fjnp.log(-v))(5.0)
    assert fnx.config.debug_nans == before
    fnx.config.update("jax_remat3", True)           # JAX options with no fnx behaviour
    fnx.config.update("jax_num_cpu_devices", 1)


def test_custom_functions_run_as_python_on_concrete_values():
    x = float(rng.uniform(0.5, 2.0))

    def program(lib, jnp):
        @lib.custom_jvp
        def f(v):                           # Python control flow on the value
            return jnp.sin(v) if v > 0 else jnp.cos(v)

        @f.defjvp
        def f_jvp(primals, tangents):
            (v,), (t,) = primals, tangents
            return f(v), (2 * t if v > 0 else 3 * t)

        @lib.custom_vjp
        def g(pair):
            return {"a": pair[0], "b": jnp.sin(pair[1])}
        g.defvjp(lambda pair: (g(pair), pair[1]), lambda y, ct: ((ct["a"], ct["b"] * y),))
        eager = g((x, x))
        return ([float(lib.grad(f)(x)), float(lib.grad(f)(-x))], isinstance(eager["a"], float),
                float(lib.grad(lambda v: g((v, v))["b"])(x)))
    got, want = both(program)
    assert got == want


# ---------------------------------------------------------------------------------------------
# Jaxprs print as JAX prints them (for programs both trace to the same equations)


def _jaxpr_programs(lib, jnp, c):
    lax = lib.lax
    return [
        (lambda x, y: 2 * x + y, (3, 4)),
        (lambda x: jnp.sin(x) * 2.0, (1.0,)),
        (lambda x: jnp.sin(x) * c + jnp.cos(x) / c - x, (np.ones(3, np.float32),)),
        (lambda: 1, ()),
        (lib.grad(lambda x: jnp.log(1.0 + jnp.exp(x))), (100.0,)),
        (lambda a: lax.cond(a >= 0.0, lambda t: t + c, lambda f: f - c, a), (5.0,)),
        (lambda a, p: lax.cond(a >= 0.0, lambda t: t[0], lambda f: jnp.array([1]) + f[1], p),
         (5.0, (np.zeros(1, np.float32), 2.0))),
    ]


def test_jaxprs_print_as_in_jax():
    c = float(np.float32(rng.uniform(1.0, 4.0)))     # a float32 value: branches keep those
    got, want = both(lambda lib, jnp: [str(lib.make_jaxpr(f)(*args))
                                       for f, args in _jaxpr_programs(lib, jnp, c)])
    for g, w in zip(got, want):
        assert g == w
    assert "\n" not in got[1] and "\n" in got[0]       # one line only when it fits


def test_traced_jaxpr_prints_as_in_jax():
    got, want = both(lambda lib, jnp: str(lib.jit(lambda x, y: 2 * x + y).trace(3, 4).jaxpr))
    assert got == want


def test_fori_loop_types_and_jaxpr_as_in_jax():
    n = int(rng.integers(2, 9))
    x = rng.standard_normal(16).astype(np.float32)

    def program(lib, jnp):
        lax = lib.lax
        outs = [lax.fori_loop(0, n, lambda i, v: v + i, 0),
                lax.fori_loop(jnp.int32(0), n, lambda i, v: v + i, 0),
                lax.fori_loop(0, jnp.int32(n), lambda i, v: v * 0.5 + i, 1.0)]
        ones = jnp.ones(x.shape)
        text = str(lib.make_jaxpr(lambda a, m: lax.fori_loop(
            0, m, lambda i, c: c + ones * 3.0 + a, a + ones))(x, n))
        return [(float(o), o.dtype, o.weak_type) for o in outs], text
    got, want = both(program)
    assert got == want


def test_named_checkpoint_policies_give_jax_values():
    x = rng.standard_normal((4, 3)).astype(np.float32)
    ws = [rng.standard_normal((3, 3)).astype(np.float32) * 0.5 for _ in range(3)]

    def program(lib, jnp):
        from importlib import import_module
        adc = import_module(f"{lib.__name__}.ad_checkpoint")
        policies = [lib.checkpoint_policies.save_only_these_names("pre"),
                    lib.checkpoint_policies.save_any_names_but_these("pre"),
                    lib.checkpoint_policies.save_from_both_policies(
                        lib.checkpoint_policies.dots_saveable,
                        lib.checkpoint_policies.save_only_these_names("pre"))]
        grads = []
        for policy in policies:
            def layer(v, w):
                return jnp.tanh(adc.checkpoint_name(v @ w, "pre"))

            def loss(params):
                v = x
                for w in params:
                    v = lib.checkpoint(layer, policy=policy)(v, w)
                return jnp.sum(v ** 2)
            grads.append([np.asarray(g) for g in lib.grad(loss)(ws)])
        return grads
    got, want = both(program)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Mutable references


def test_references_read_write_and_discharge_through_jit():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    s = float(rng.uniform(0.5, 2.0))

    def program(lib, jnp):
        seen = []
        counter = lib.new_ref(jnp.zeros(3))

        @lib.jit
        def bump():
            counter[1] += 1.0
        bump()
        bump()
        seen.append(repr(counter))
        r = lib.new_ref(jnp.asarray(x))
        r[1] = r[0]
        r[2, 3] = r[1, 2]
        r[0, :3] = r[:, 1]
        r[jnp.array([1, 2]), jnp.array([0, 1])] = r[jnp.array([0, 0]), jnp.array([2, 3])]
        seen.append(np.asarray(lib.freeze(r)).tolist())

        @lib.jit
        def scale(v):
            r[...] = r[...] * v
            return r[0, 0] + 1.0
        seen += [float(scale(s)), float(scale(s)), np.asarray(r[...]).tolist()]

        def inner(v):           # a reference inside a differentiated function
            acc = lib.new_ref(0.0)
            acc[...] = jnp.sin(v) * v
            return acc[...]
        seen += [float(lib.grad(inner)(s)), float(lib.jit(lib.grad(inner))(s))]
        for bad in (lambda: jnp.sin(lib.new_ref(1.0)),
                    lambda: lib.grad(lambda v: scale(v))(s),
                    lambda: lib.vmap(lambda v: r.__setitem__((0, 0), v))(jnp.ones(2))):
            try:
                bad()
                seen.append(None)
            except Exception as e:  # noqa: BLE001 (JAX raises a plain Exception for two)
                seen.append("TypeError" if isinstance(e, TypeError) else "error")
        seen.append(np.asarray(r[...]).tolist())     # failed writes leave it unchanged
        return seen
    got, want = both(program)
    assert got[0] == want[0] and got[-4:] == want[-4:]
    for g, w in zip(got[1:-4], want[1:-4]):     # r[0, 0] * s + 1 may cancel to near 0
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_references_mapped_by_vmap():
    xs = rng.standard_normal(3).astype(np.float32)
    m = rng.standard_normal((2, 3)).astype(np.float32)

    def program(lib, jnp):
        def scale_into(x, out):
            out[...] = 2.0 * x

        out = lib.new_ref(jnp.zeros(3))
        lib.vmap(scale_into)(xs, out)

        def add_row(x, r):          # each instance sees its own column, mapped along axis 1
            r[1] += x
            return r[0] * x
        r = lib.new_ref(jnp.asarray(m))
        ys = lib.vmap(add_row, in_axes=(0, 1))(xs, r)
        return [np.asarray(out[...]), np.asarray(r[...]), np.asarray(ys)]
    got, want = both(program)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(got[1], m + np.stack([np.zeros(3), xs]), rtol=1e-6)

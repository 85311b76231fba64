"""jit: compile cache, composition with every transformation, static arguments, explanations."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.core.jaxpr import typecheck_jaxpr

rng = np.random.default_rng(0)


def test_cached_call_does_not_retrace_and_shape_change_does():
    traces = []

    @fnx.jit
    def f(x):
        traces.append(x.shape)
        return jnp.sin(x) * 2

    x = rng.standard_normal(3)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * 2)
    assert traces == [(3,)]
    f(rng.standard_normal(4))
    f(jnp.asarray(x))            # an fnx array of the same signature hits the cache
    assert traces == [(3,), (4,)]
    f(x.astype(np.float32))      # a new dtype retraces
    assert len(traces) == 3 and f.cache_size == 3


def test_static_argnums_and_argnames():
    traces = []

    def f(x, n, *, mode="sum"):
        traces.append((n, mode))
        y = x ** n
        return jnp.sum(y) if mode == "sum" else jnp.max(y)
    g = fnx.jit(f, static_argnums=1, static_argnames="mode")
    x = rng.standard_normal(5)
    assert float(g(x, 2)) == pytest.approx(np.sum(x ** 2))
    assert float(g(x, 3, mode="max")) == pytest.approx(np.max(x ** 3))
    g(x, 2)
    assert traces == [(2, "sum"), (3, "max")]
    with pytest.raises(TypeError, match="hashable"):
        g(x, [2])


def test_python_control_flow_on_traced_value_names_the_fix():
    @fnx.jit
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(fnx.ConcretizationTypeError, match="static_argnums|lax.cond"):
        f(1.0)


def test_compositions():
    def f(x):
        return jnp.sum(jnp.tanh(x) ** 2 * x)
    x = rng.standard_normal((4, 3))
    g = fnx.grad(f)(x)
    for variant in (fnx.jit(fnx.grad(f)), fnx.grad(fnx.jit(f)), fnx.jit(fnx.jit(fnx.grad(f))),
                    fnx.jit(fnx.grad(fnx.jit(f)))):
        np.testing.assert_allclose(np.asarray(variant(x)), np.asarray(g), rtol=1e-12)
    per_row = fnx.vmap(fnx.jit(fnx.grad(f)))(x)
    np.testing.assert_allclose(np.asarray(per_row),
                               np.stack([np.asarray(fnx.grad(f)(r)) for r in x]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnx.jit(fnx.vmap(fnx.grad(f)))(x)),
                               np.asarray(per_row), rtol=1e-12)
    h = fnx.hessian(fnx.jit(f))(x[0])
    np.testing.assert_allclose(np.asarray(h), np.asarray(fnx.hessian(f)(x[0])), rtol=1e-10)
    _, t = fnx.jvp(fnx.jit(f), (x,), (np.ones_like(x),))
    _, t_ref = fnx.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(float(t), float(t_ref), rtol=1e-12)


def test_jaxprs_of_jit_transformations_typecheck():
    f = fnx.jit(lambda x, w: jnp.tanh(x @ w))
    x, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    for g in (f, fnx.grad(lambda x, w: jnp.sum(f(x, w)), (0, 1)), fnx.vmap(f, (0, None))):
        typecheck_jaxpr(fnx.make_jaxpr(g)(x if g is not None else x, w).jaxpr)


def test_pytrees_in_and_out():
    @fnx.jit
    def step(params, x):
        y = x @ params["w"] + params["b"]
        return {"y": y, "norm": jnp.sum(y ** 2)}, [params["b"]]
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    x = rng.standard_normal((4, 3))
    out, (b,) = step(params, x)
    np.testing.assert_allclose(np.asarray(out["y"]), x @ params["w"] + params["b"])
    np.testing.assert_allclose(np.asarray(b), params["b"])


def test_closure_over_outer_tracer():
    def outer(a):
        return fnx.jit(lambda x: jnp.sin(a * x))(2.0)
    np.testing.assert_allclose(float(fnx.grad(outer)(0.3)), 2 * np.cos(0.6), rtol=1e-6)


def test_explain_cache_misses(caplog):
    f = fnx.jit(lambda x, y: x + y)
    with fnx.config.option("explain_cache_misses", True), caplog.at_level("WARNING", "fnx.jit"):
        f(np.ones(3, np.float32), np.ones(3, np.float32))
        f(np.ones(4, np.float32), np.ones(3, np.float32) if False else np.ones(4, np.float32))
        f(np.ones(4, np.float64), np.ones(4, np.float32))
    assert {r.name for r in caplog.records} == {"fnx.jit"}
    text = caplog.text
    assert "argument leaf 0: shape (3,) -> (4,)" in text
    assert "dtype float32 -> float64" in text
    assert "test_jit.py" in text


def test_log_compiles_is_a_log_record_per_trace(caplog, capsys):
    f = fnx.jit(lambda x: x * 2)
    with fnx.config.option("log_compiles", True), caplog.at_level("WARNING", "fnx.jit"):
        f(np.ones(3, np.float32))
        f(np.ones(3, np.float32))     # a cache hit traces nothing
        f(np.ones(2, np.float32))
    messages = [r.getMessage() for r in caplog.records if r.name == "fnx.jit"]
    assert len(messages) == 2 and all("tracing" in m for m in messages), messages
    assert capsys.readouterr().out == ""


def test_lower_shows_the_program():
    x = jnp.ones(3)
    lowered = fnx.jit(lambda x: jnp.exp(x) * 2.0).lower(x)
    assert "exp" in lowered.as_text() and "mul" in lowered.as_text()
    exe = lowered.compile().executable     # buffers in, buffers out, on the arrays' backend
    out = x._backend.to_numpy(exe(x._value)[0])
    np.testing.assert_allclose(out, np.exp(1.0) * 2, rtol=1e-6)


def test_precision_config_is_part_of_the_key():
    traces = []

    @fnx.jit
    def f(x):
        traces.append(fnx.config.default_matmul_precision)
        return x @ x
    x = rng.standard_normal((2, 2)).astype(np.float32)
    f(x)
    with fnx.default_matmul_precision("tensorfloat32"):
        f(x)
    f(x)
    assert traces == ["highest", "tensorfloat32"]
    with pytest.raises(ValueError, match="default_matmul_precision"):
        fnx.config.update("default_matmul_precision", "fast")


def test_decorator_with_options():
    @fnx.jit(static_argnums=(1,))
    def f(x, k):
        return x * k
    assert float(f(2.0, 3)) == 6.0


def test_repeated_calls_with_nested_containers_keep_their_structure():
    f = fnx.jit(lambda p, x: ({"s": x * 2, "l": [p[0][1]]}, (p[1][0],)))
    p = [(jnp.ones(2), jnp.zeros(3)), (jnp.full(4, 2.0), jnp.ones(1))]
    x = jnp.arange(3.0)
    first, second = f(p, x), f(p, x)
    for out in (first, second):
        assert set(out[0]) == {"s", "l"} and isinstance(out[0]["l"], list)
        assert isinstance(out[1], tuple) and out[1][0].shape == (4,)
        np.testing.assert_allclose(np.asarray(out[0]["s"]), [0.0, 2.0, 4.0])
    g = fnx.jit(lambda d: d[1] + d["a"])     # keys of mixed types do not sort: as in JAX
    with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
        g({1: jnp.ones(1), "a": jnp.ones(1)})


def test_ensure_compile_time_eval_keeps_constants_concrete_under_jit():
    traced = []

    @fnx.jit
    def f(x):
        with fnx.ensure_compile_time_eval():
            n = int(jnp.arange(4).sum())       # concrete: a Python int while tracing
            scale = jnp.sin(3.0)
            y = x * 2.0                        # x is traced: staged as usual
        traced.append(n)
        return y * n + scale
    np.testing.assert_allclose(f(2.0), 24.0 + np.sin(3.0), rtol=1e-6)
    assert traced == [6]
    assert [e.primitive.name for e in fnx.make_jaxpr(f)(2.0).eqns[0].params["jaxpr"].eqns] == \
        ["mul", "mul", "add"]
    np.testing.assert_allclose(fnx.grad(f)(1.0), 12.0)
    with pytest.raises(fnx.ConcretizationTypeError):
        fnx.jit(lambda x: int(x.sum()))(jnp.ones(2))      # outside it, tracing as before


def test_references_passed_as_arguments_are_written_back():
    # JAX's jit documentation passes references to jitted functions that update them
    @fnx.jit
    def step(refs, x, scale):
        total, last = refs
        total[...] += x * scale
        last[0] = x.sum()
        return x * 2

    x = np.random.default_rng(0).standard_normal(3)
    total, last = fnx.new_ref(jnp.zeros(3)), fnx.new_ref(jnp.zeros(2))
    np.testing.assert_allclose(step((total, last), x, 2.0), 2 * x)
    step((total, last), x, 2.0)
    np.testing.assert_allclose(total[...], 4 * x)
    np.testing.assert_allclose(last[...], [x.sum(), 0.0])
    other = fnx.new_ref(jnp.ones(3))         # another reference: the same compiled program
    step((other, last), x, 1.0)
    np.testing.assert_allclose(other[...], 1 + x)
    assert len(step._with_refs) == 1 and next(iter(step._with_refs.values())).cache_size == 1


def test_unsafe_buffer_pointer_is_the_host_buffer_on_the_cpu():
    x = jnp.arange(4.0)
    assert x.unsafe_buffer_pointer() == np.asarray(x).__array_interface__["data"][0]
    assert fnx.new_ref(x).unsafe_buffer_pointer() == x.unsafe_buffer_pointer()

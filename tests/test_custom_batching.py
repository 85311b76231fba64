"""fnx.custom_batching (custom_vmap, sequential_vmap) against JAX on the CPU: the rule replaces
the function under vmap (nested, with in_axes, inside and outside jit), forward mode goes
through the rule's JVP as in JAX, reverse mode is refused unless custom_vjp wraps it."""
import numpy as np
import pytest

import fnx
import fnx.numpy as fjnp

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _make(lib, np_, seen=None):
    """A function whose rule computes something else, so using the rule is visible."""
    @lib.custom_batching.custom_vmap
    def f(x, y):
        return {"s": np_.sin(x) * y, "t": x}

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        if seen is not None:
            seen.append((axis_size, list(in_batched)))
        assert not in_batched[0] or xs.shape[0] == axis_size
        out = {"s": np_.cos(xs) * ys + 1.0, "t": xs * 3.0}
        return out, {"s": any(in_batched), "t": in_batched[0]}
    return f


def _close(a, b):
    for x, y in zip(fnx.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("in_axes", [0, (0, None), (None, 0), (1, 0)])
def test_vmap_uses_the_rule_as_jax(in_axes, rng):
    seen = []
    f, g = _make(fnx, fjnp, seen), _make(jax, jjnp)
    x, y = rng.standard_normal((4, 4)), rng.standard_normal(4)
    if in_axes == (None, 0):
        x = x[0, 0]
    if in_axes == (0, None):
        y = y[0]
    _close(fnx.vmap(f, in_axes)(x, y), jax.vmap(g, in_axes)(x, y))
    _close(fnx.jit(fnx.vmap(f, in_axes))(x, y), jax.vmap(g, in_axes)(x, y))
    _close(fnx.vmap(fnx.jit(f), in_axes)(x, y), jax.vmap(g, in_axes)(x, y))
    assert seen and seen[0][0] == 4
    # unbatched, it is the function itself
    _close(f(x, 2.0), g(x, 2.0))
    _close(fnx.jit(f)(0.3, 2.0), g(0.3, 2.0))


def test_nested_vmap_applies_the_rule_at_each_level(rng):
    f, g = _make(fnx, fjnp), _make(jax, jjnp)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    _close(fnx.vmap(fnx.vmap(f))(x, y), jax.vmap(jax.vmap(g))(x, y))


def test_forward_mode_through_the_rule_matches_jax(rng):
    f, g = _make(fnx, fjnp), _make(jax, jjnp)
    x, t = rng.standard_normal(5), rng.standard_normal(5)
    _close(fnx.jvp(f, (0.4, 2.0), (1.0, 0.5)), jax.jvp(g, (0.4, 2.0), (1.0, 0.5)))
    for vm in [lambda lib, h: lib.vmap(lambda x, t: lib.jvp(h, (x, 2.0), (t, 0.0))),
               lambda lib, h: lib.vmap(lambda x, t: lib.jvp(h, (0.5, 2.0), (t, 0.0))),
               lambda lib, h: lib.vmap(lambda x, t: lib.jvp(h, (x, 2.0), (0.7, 1.0)))]:
        _close(vm(fnx, f)(x, t), vm(jax, g)(x, t))
    # jvp of vmap too
    _close(fnx.jvp(fnx.vmap(f), (x, t), (t, x)), jax.jvp(jax.vmap(g), (x, t), (t, x)))


def test_reverse_mode_is_refused_and_custom_vjp_outside_gives_a_gradient(rng):
    f = _make(fnx, fjnp)
    with pytest.raises(fnx.GradError, match="custom_vjp"):
        fnx.grad(lambda x: f(x, 2.0)["s"])(0.3)

    def make(lib, np_):
        @lib.custom_vjp
        @lib.custom_batching.custom_vmap
        def h(x, y):
            return np_.sin(x) * y

        @h.def_vmap
        def rule(axis_size, in_batched, xs, ys):
            return np_.cos(xs) * ys, True
        h.defvjp(lambda x, y: (h(x, y), (np_.cos(x), np_.sin(x), y)),
                 lambda res, ct: (res[0] * ct * res[2], res[1] * ct))
        return h
    h, k = make(fnx, fjnp), make(jax, jjnp)
    x, y = rng.standard_normal(4), rng.standard_normal(4)
    _close(fnx.vmap(h)(x, y), jax.vmap(k)(x, y))
    _close(fnx.vmap(fnx.grad(h, (0, 1)))(x, y), jax.vmap(jax.grad(k, (0, 1)))(x, y))
    _close(fnx.jit(fnx.grad(lambda x: fnx.vmap(h)(x, y).sum()))(x),
           jax.grad(lambda x: jax.vmap(k)(x, y).sum())(x))


def test_rule_errors_are_named():
    f = fnx.custom_batching.custom_vmap(lambda x: x)
    with pytest.raises(AttributeError, match="No batching rule"):
        fnx.vmap(f)(fjnp.ones(2))
    f.def_vmap(lambda n, b, x: ((x, x), True))
    with pytest.raises(ValueError, match="do not match"):
        fnx.vmap(f)(fjnp.ones(2))
    f.def_vmap(lambda n, b, x: (x[0], True))
    with pytest.raises(fnx.ShapeError, match="marked batched"):
        fnx.vmap(f)(fjnp.ones(2))


def test_sequential_vmap_loops_as_jax(rng):
    def make(lib, np_, calls):
        @lib.custom_batching.sequential_vmap
        def h(x, y):
            calls.append(1)             # traced once, under the loop
            return {"a": np_.sum(x) * y, "b": x + y}
        return h
    fc, jc = [], []
    x, y = rng.standard_normal((3, 2)), rng.standard_normal(3)
    _close(fnx.vmap(make(fnx, fjnp, fc))(x, y), jax.vmap(make(jax, jjnp, jc))(x, y))
    _close(fnx.vmap(make(fnx, fjnp, fc), (0, None))(x, 2.0),
           jax.vmap(make(jax, jjnp, jc), (0, None))(x, 2.0))
    jaxpr = fnx.make_jaxpr(fnx.vmap(make(fnx, fjnp, fc)))(x, y)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["scan"]


@pytest.mark.cuda
def test_custom_vmap_under_jit_on_the_gpu_matches_the_cpu(gpu, cpu):
    """The rule's program is inlined into the GPU's graph like any call."""
    f = _make(fnx, fjnp)
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    y = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    step = fnx.jit(fnx.vmap(f))
    on_gpu = step(fnx.device_put(x, gpu), fnx.device_put(y, gpu))
    on_cpu = step(fnx.device_put(x, cpu), fnx.device_put(y, cpu))
    assert fnx.tree_util.tree_leaves(on_gpu)[0].devices() == {gpu}
    for a, b in zip(fnx.tree_util.tree_leaves(on_gpu), fnx.tree_util.tree_leaves(on_cpu)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(on_gpu["t"]), 3 * x, rtol=1e-6)

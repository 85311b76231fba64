"""custom_derivatives.linear_call against JAX's on the CPU: the call's value, its transpose
(linear_transpose, grad, vjp) taken from the user's rule, transposes of transposes, pytrees of
residual and linear arguments, forward mode, jit; and, where JAX has no rule, vmap against
per-example results."""
from functools import partial

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.custom_derivatives import linear_call

jax = pytest.importorskip("jax")
from jax.custom_derivatives import linear_call as jax_linear_call  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _scale(r, x):
    return {"y": x["a"] * r[0] + x["b"], "z": x["b"] / r[1]}


def _scale_t(r, ct):    # deliberately not the true transpose (2x on "a"): the rule is used
    return {"a": 2.0 * ct["y"] * r[0], "b": ct["y"] + ct["z"] / r[1]}


def program(lc, side):
    """A function of (r, x): linear in x through linear_call, plus ordinary arithmetic."""
    def f(r, x):
        out = lc(_scale, _scale_t, (r, 2.0 * r), x)
        return side.sum(out["y"] * out["y"]) + side.sum(side.sin(out["z"]))
    return f


def _args(rng):
    r = rng.uniform(0.5, 2.0, 3)
    x = {"a": rng.standard_normal(3), "b": rng.standard_normal(3)}
    return r, x


def _close(ours, theirs, tol=1e-12):
    for o, t in zip(fnx.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.shape(o) == np.shape(t)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=tol, atol=tol)


@pytest.mark.parametrize("transform", ["value", "grad", "jit-grad", "jvp", "vjp"])
def test_matches_jax(transform, rng):
    r, x = _args(rng)
    ours, theirs = program(linear_call, jnp), program(jax_linear_call, jax.numpy)
    if transform == "value":
        _close(ours(r, x), theirs(r, x))
    elif transform in ("grad", "jit-grad"):
        wrap = fnx.jit if transform == "jit-grad" else (lambda f: f)
        _close(wrap(fnx.grad(ours, argnums=1))(r, x), jax.grad(theirs, argnums=1)(r, x))
    elif transform == "jvp":
        t = {"a": rng.standard_normal(3), "b": rng.standard_normal(3)}
        _close(fnx.jvp(partial(ours, r), (x,), (t,)), jax.jvp(partial(theirs, r), (x,), (t,)))
    else:
        out, pull = fnx.vjp(lambda x: linear_call(_scale, _scale_t, (r, r), x), x)
        j_out, j_pull = jax.vjp(lambda x: jax_linear_call(_scale, _scale_t, (r, r), x), x)
        ct = {"y": rng.standard_normal(3), "z": rng.standard_normal(3)}
        _close(out, j_out)
        _close(pull(ct), j_pull(ct))


def test_transposes_of_transposes_alternate(rng):
    seven = float(rng.uniform(5, 9))

    def custom_id(lc):
        return lambda x: lc(lambda _, x: x, lambda _, t: seven * t, (), x)

    def transpose(lt, f, example):
        return lambda y: lt(f, example)(y)[0]
    got = {}
    for lc, lt in ((linear_call, fnx.linear_transpose), (jax_linear_call, jax.linear_transpose)):
        f, got[lc] = custom_id(lc), []
        for _ in range(4):
            f = transpose(lt, f, 1.0)
            got[lc].append(float(f(1.5)))
    # the rule, then the function again (the transpose of the transpose), and so on
    assert got[linear_call] == got[jax_linear_call] == [seven * 1.5, 1.5] * 2


def test_staged_as_one_equation_and_run_by_jit(rng):
    r = float(rng.uniform(1, 2))
    f = lambda x: linear_call(lambda r, x: x / r, lambda r, t: t / r, r, x)   # noqa: E731
    jaxpr = fnx.make_jaxpr(f)(1.0)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["linear_call"]
    x = rng.standard_normal(4)
    np.testing.assert_allclose(np.asarray(fnx.jit(f)(x)), x / r, rtol=1e-15)


def test_vmap_of_the_call_and_of_its_transpose(rng):
    r = rng.uniform(0.5, 2.0, 4)
    x = rng.standard_normal(4)
    tripled = lambda r, x: linear_call(lambda r, x: x / r, lambda r, t: 3 * t / r, r, x)  # noqa
    np.testing.assert_allclose(np.asarray(fnx.vmap(tripled)(r, x)), x / r, rtol=1e-15)
    # residuals batched, linear argument not: the cotangent sums over the batch
    grad = fnx.grad(lambda x: fnx.vmap(tripled, in_axes=(0, None))(r, x).sum())(x[0])
    np.testing.assert_allclose(float(grad), np.sum(3 / r), rtol=1e-14)
    per_example = fnx.vmap(fnx.grad(tripled, argnums=1))(r, x)
    np.testing.assert_allclose(np.asarray(per_example), 3 / r, rtol=1e-14)


def test_errors():
    f = lambda r, x: x / r                                                      # noqa: E731
    with pytest.raises(TypeError, match="pytree structure"):
        fnx.linear_transpose(lambda x: linear_call(f, lambda r, t: (t, t), 2.0, x), 1.0)(1.0)
    with pytest.raises(TypeError, match="residual"):
        fnx.grad(lambda r: linear_call(f, lambda r, t: t / r, r, 2.0))(3.0)

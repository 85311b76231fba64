"""Reductions at Python floats: their gradients come back weakly typed and in JAX's dtype, with
x64 on and off (the reductions compute in a strong type, as JAX's do), eagerly and staged."""
import numpy as np
import pytest

import fnx
import fnx.numpy as fjnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

# var, std and prod at a Python float and inside a program; the others at a Python float
CASES = [(name, shape) for name in ("var", "std", "prod") for shape in ("scalar", "stacked")] + \
    [(name, "scalar") for name in ("sum", "mean", "max", "min", "ptp", "nanvar", "nanstd",
                                   "nanprod", "nanmean", "nansum")]


def _program(module, name, shape):
    f = getattr(module, name)
    if shape == "scalar":
        return lambda x: f(x)
    return lambda x: module.sum(f(module.stack([x, 2.0 * x, x * x])))


def _kind(a):
    return np.dtype(a.dtype), bool(a.weak_type)


@pytest.fixture(params=[True, False], ids=["x64", "x32"])
def x64(request):
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    with fnx.enable_x64(request.param):
        yield request.param
    jax.config.update("jax_enable_x64", old)


@pytest.mark.parametrize("name, shape", CASES)
def test_gradient_at_a_python_float_is_typed_as_jax(name, shape, x64, rng):
    x = float(rng.uniform(0.5, 2.0))
    ours, theirs = _program(fjnp, name, shape), _program(jnp, name, shape)
    for fnx_t, jax_t in [(lambda f: f, lambda f: f), (fnx.grad, jax.grad),
                         (fnx.jacfwd, jax.jacfwd)]:
        got, want = fnx_t(ours)(x), jax_t(theirs)(x)
        assert _kind(got) == _kind(want), (name, _kind(got), _kind(want))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5 if not x64
                                   else 1e-12)
    staged = fnx.make_jaxpr(fnx.grad(ours))(x).out_avals
    want = jax.make_jaxpr(jax.grad(theirs))(x).out_avals
    assert [(a.dtype, a.weak_type) for a in staged] == [(a.dtype, a.weak_type) for a in want]

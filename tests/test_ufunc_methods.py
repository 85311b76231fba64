"""jnp's ufunc methods (``jnp.add.reduce``, ``.accumulate``, ``.outer``, ``.at``), against JAX on the CPU."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


def _rand(rng, kind):
    if kind == "int":
        return rng.integers(-5, 6, (3, 4)).astype(np.int32)
    return rng.standard_normal((3, 4)).astype(np.float32)


UFUNC_CASES = {
    "add_reduce": lambda m, x: m.add.reduce(x),
    "add_reduce_all_keepdims": lambda m, x: m.add.reduce(x, axis=None, keepdims=True),
    "add_reduce_initial": lambda m, x: m.add.reduce(x, axis=1, initial=2),
    "multiply_reduce": lambda m, x: m.multiply.reduce(x, axis=1),
    "maximum_reduce": lambda m, x: m.maximum.reduce(x, axis=0),
    "minimum_reduce_initial": lambda m, x: m.minimum.reduce(x, axis=1, initial=-1),
    "subtract_reduce": lambda m, x: m.subtract.reduce(x, axis=1),
    "logical_and_reduce": lambda m, x: m.logical_and.reduce(x > 0, axis=0),
    "add_accumulate": lambda m, x: m.add.accumulate(x, axis=1),
    "multiply_accumulate": lambda m, x: m.multiply.accumulate(x),
    "maximum_accumulate": lambda m, x: m.maximum.accumulate(x, axis=1),
    "subtract_accumulate": lambda m, x: m.subtract.accumulate(x, axis=1),
    "add_outer": lambda m, x: m.add.outer(x[0], x[1]),
    "multiply_outer": lambda m, x: m.multiply.outer(x, x[0, :2]),
    "add_at": lambda m, x: m.add.at(x, np.array([0, 0, 2]), 1, inplace=False),
    "multiply_at": lambda m, x: m.multiply.at(x, (np.array([1, 1]), 2), 3, inplace=False),
    "maximum_at": lambda m, x: m.maximum.at(x, np.array([2, 0, 2]), 0, inplace=False),
    "subtract_at": lambda m, x: m.subtract.at(x, 1, 1, inplace=False),
    "call": lambda m, x: m.add(x, 1),
}


@pytest.mark.x32        # JAX runs with its defaults (x64 off): compare dtypes with fnx's
@pytest.mark.parametrize("kind", ["float", "int"])
@pytest.mark.parametrize("name", UFUNC_CASES)
def test_ufunc_methods_match_jax(name, kind):
    x = _rand(np.random.default_rng(), kind)
    f = UFUNC_CASES[name]
    mine, theirs = np.asarray(f(jnp, x)), np.asarray(f(jjnp, x))
    assert mine.dtype == theirs.dtype
    np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fnx.jit(lambda v: f(jnp, v))(x)), theirs, rtol=1e-5,
                               atol=1e-6)


def test_ufunc_methods_differentiate_and_batch():
    x = _rand(np.random.default_rng(), "float")
    g = fnx.grad(lambda v: jnp.sum(jnp.subtract.accumulate(v, axis=1) ** 2))(x)
    gj = jax.grad(lambda v: jjnp.sum(jjnp.subtract.accumulate(v, axis=1) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-5)
    out = fnx.vmap(lambda v: jnp.subtract.reduce(v))(x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jjnp.subtract.reduce(x, axis=1)),
                               rtol=1e-6)
    assert fnx.lax.reduce(x, 0.0, jnp.add, (0,)).shape == (4,)
    with pytest.raises(NotImplementedError):
        jnp.add.at(x, 0, 1.0)

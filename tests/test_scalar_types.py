"""jnp's scalar types (``jnp.float32(x)`` under jit too, and as a dtype), against JAX on the CPU."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

SCALAR_TYPES = ["bool_", "int8", "int16", "int32", "uint8", "uint32", "float16", "bfloat16",
                "float32", "float64", "complex64"]


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_type_converts_under_jit_and_is_a_dtype(name):
    t, tj = getattr(jnp, name), getattr(jjnp, name)
    x = np.random.default_rng().uniform(-3, 3, (2, 3)).astype(np.float32)
    with jax.enable_x64(name == "float64"):
        expected = np.asarray(tj(x))
    for out in (t(x), fnx.jit(lambda v: t(v))(x), fnx.jit(lambda v: t(v[0, 0]))(x)):
        assert out.dtype == expected.dtype
    with jax.enable_x64(name == "float64"):     # traced, the conversion is XLA's (saturating)
        expected_traced = np.asarray(jax.jit(tj)(x))
    np.testing.assert_array_equal(np.asarray(fnx.jit(lambda v: t(v))(x)), expected_traced)
    assert t(1).shape == () and t([1, 2]).shape == (2,)
    assert np.dtype(t) == t.dtype == expected.dtype
    assert jnp.zeros(3, t).dtype == jnp.asarray(x).astype(t).dtype == expected.dtype
    assert jnp.dtype(t) == expected.dtype and t == expected.dtype.type
    assert {t: 1}[expected.dtype.type] == 1
    assert isinstance(expected.dtype.type(0), t)


@pytest.mark.x32     # JAX's default dtypes (x64 off), here and in JAX
def test_scalar_types_in_dtype_tests():
    x = jnp.arange(3.0)
    assert jnp.issubdtype(x.dtype, jnp.floating) and jnp.issubdtype(x.dtype, jnp.float32)
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and not jnp.issubdtype(jnp.int32,
                                                                            jnp.floating)
    assert x.dtype == jnp.float32 and x.dtype != jnp.float16
    assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.iinfo(jnp.int8).max == 127
    assert jnp.result_type(jnp.float32, jnp.int32) == np.float32
    assert fnx.grad(lambda v: jnp.float32(v) * 3.0)(2.0) == 3.0

"""ml_dtypes' narrow types (the float8s, float6s, float4, int4, ...) as JAX has them: arrays of
them, arithmetic with themselves and with Python scalars, no implicit promotion with other
dtypes (TypePromotionError), conversions both ways, under jit and grad; checked against JAX on
the CPU."""
import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.core import dtypes

pytestmark = pytest.mark.x32

# the types XLA's CPU computes in, JAX being the reference (the float6s, float4, the sign-less
# exponent-only float8_e8m0fnu and the 1-bit integers fail or differ inside XLA itself)
FLOATS = [t.name for t in dtypes.NARROW_FLOATS if t.name.startswith("float8")
          and t.name != "float8_e8m0fnu" and hasattr(jjnp, t.name)]
INTS = [t.name for t in dtypes.NARROW_INTS + dtypes.NARROW_UINTS
        if t.itemsize and not t.name.endswith("int1") and hasattr(jjnp, t.name)]


def _same(got, want):
    assert np.dtype(got.dtype) == np.dtype(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64),
                                  np.asarray(want).astype(np.float64))


@pytest.mark.parametrize("name", FLOATS)
def test_narrow_float_arrays_compute_as_in_jax(name, rng):
    x = rng.uniform(0.25, 4.0, 6).astype(np.float32)
    ours, theirs = jnp.asarray(x, getattr(jnp, name)), jjnp.asarray(x, getattr(jjnp, name))
    _same(ours, theirs)
    for f in (lambda a: a * 2.0, lambda a: a + a, lambda a: -a, lambda a: a.sum(),
              lambda a: jnp.max(a) if isinstance(a, fnx.Array) else jjnp.max(a),
              lambda a: a.astype(np.float32) * 0.5, lambda a: a > 1.0):
        _same(f(ours), f(theirs))
    _same(fnx.jit(lambda a: a * 3.0)(ours), jax.jit(lambda a: a * 3.0)(theirs))


@pytest.mark.parametrize("name", INTS)
def test_narrow_int_arrays_compute_as_in_jax(name, rng):
    t = ml_dtypes.iinfo(getattr(ml_dtypes, name))
    x = rng.integers(t.min, t.max + 1, 6)
    ours, theirs = jnp.asarray(x, getattr(jnp, name)), jjnp.asarray(x, getattr(jjnp, name))
    _same(ours, theirs)
    for f in (lambda a: a + 0, lambda a: a == a, lambda a: a.astype(np.float32) * 2.0):
        _same(f(ours), f(theirs))
    assert jnp.iinfo(getattr(jnp, name)).max == t.max


@pytest.mark.parametrize("a,b", [("float8_e4m3fn", "float32"), ("float8_e5m2", "bfloat16"),
                                 ("float8_e4m3fn", "float8_e5m2"), ("int4", "int8"),
                                 ("uint4", "int32")])
def test_narrow_types_do_not_promote_implicitly(a, b):
    with pytest.raises(Exception) as theirs:     # (JAX's TypePromotionError is private)
        jjnp.promote_types(getattr(jjnp, a), getattr(jjnp, b))
    with pytest.raises(fnx.errors.TypePromotionError, match="no available implicit"):
        jnp.promote_types(getattr(jnp, a), getattr(jnp, b))
    assert "no available implicit dtype promotion" in str(theirs.value)
    x = jnp.ones(2, getattr(jnp, a))
    with pytest.raises(fnx.errors.TypePromotionError):
        x + jnp.ones(2, getattr(jnp, b))


def test_narrow_types_are_their_kinds_and_print_as_jax_does():
    assert jnp.issubdtype(jnp.float8_e4m3fn, jnp.floating)
    assert jnp.issubdtype(jnp.int4, jnp.signedinteger) and not jnp.issubdtype(jnp.int4,
                                                                                jnp.floating)
    assert jnp.issubdtype(jnp.uint4, jnp.unsignedinteger)
    assert jnp.finfo(jnp.float8_e4m3fn).max == jjnp.finfo(jjnp.float8_e4m3fn).max
    x = jnp.ones(3, jnp.float8_e4m3fn)
    assert "f8_e4m3fn[3]" in str(fnx.make_jaxpr(lambda a: a * 2.0)(x))
    assert "i4[3]" in str(fnx.make_jaxpr(lambda a: a + 1)(jnp.ones(3, jnp.int4)))


def test_grad_through_a_narrow_float_matches_jax():
    x = np.array([1.0, 2.5, -3.0], np.float32)
    f = lambda a, np_: (a.astype(np.float32) ** 2).sum()    # noqa: E731
    ours = fnx.grad(lambda a: f(a, jnp))(jnp.asarray(x, jnp.float8_e4m3fn))
    theirs = jax.grad(lambda a: f(a, jjnp))(jjnp.asarray(x, jjnp.float8_e4m3fn))
    _same(ours, theirs)


@pytest.mark.parametrize("name", [t.name for t in dtypes.NARROW_FLOATS + dtypes.NARROW_INTS
                                  + dtypes.NARROW_UINTS])
def test_every_narrow_type_holds_arrays_and_converts_as_ml_dtypes(name, rng):
    """Those XLA cannot compute in too: arrays of them, and exact conversions to float32."""
    t = getattr(ml_dtypes, name)
    x = rng.uniform(-3.0, 3.0, 8).astype(np.float32)
    if dtypes.kind(t) in "iu":
        info = ml_dtypes.iinfo(t)
        x = rng.integers(info.min, info.max + 1, 8).astype(np.float32)
    a = jnp.asarray(x, getattr(jnp, name))
    assert a.dtype == np.dtype(t) and a.shape == (8,)
    np.testing.assert_array_equal(np.asarray(a.astype(jnp.float32)),
                                  x.astype(t).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(fnx.jit(lambda v: v.astype(jnp.float32))(a)),
                                  x.astype(t).astype(np.float32))

"""jaxtyping annotations on fnx arrays, checked at run time, also while jit/grad/vmap trace."""
import numpy as np
import pytest
from beartype import beartype
from jaxtyping import Float, Int, jaxtyped

import fnx
import fnx.numpy as jnp


@jaxtyped(typechecker=beartype)
def layer(w: Float[fnx.Array, "din dout"], x: Float[fnx.Array, "batch din"]
          ) -> Float[fnx.Array, "batch dout"]:
    return jnp.tanh(x @ w)


@jaxtyped(typechecker=beartype)
def pick(x: Float[fnx.Array, "n"], i: Int[fnx.Array, ""]) -> Float[fnx.Array, ""]:
    return x[i]


def test_annotations_hold_eagerly_and_under_transformations():
    rng = np.random.default_rng(0)
    w, x = jnp.asarray(rng.standard_normal((3, 2))), jnp.asarray(rng.standard_normal((4, 3)))
    expected = np.tanh(np.asarray(x) @ np.asarray(w))
    np.testing.assert_allclose(np.asarray(layer(w, x)), expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnx.jit(layer)(w, x)), expected, rtol=1e-12)
    g = fnx.grad(lambda w: jnp.sum(layer(w, x)))(w)
    assert g.shape == (3, 2)
    assert fnx.vmap(layer, (None, 0))(w, jnp.ones((5, 4, 3))).shape == (5, 4, 2)
    assert float(pick(jnp.arange(3.0), jnp.asarray(2))) == 2.0


def test_shape_mismatch_is_caught_while_tracing():
    w = jnp.ones((3, 2))
    with pytest.raises(Exception, match="x"):
        fnx.jit(layer)(w, jnp.ones((4, 5)))
    with pytest.raises(Exception, match="x"):
        layer(w, jnp.ones((4, 5)))


def test_tracers_are_fnx_arrays():
    seen = []
    fnx.jit(lambda x: seen.append(isinstance(x, fnx.Array)) or x)(jnp.ones(2))
    fnx.grad(lambda x: seen.append(isinstance(x, fnx.Array)) or x)(1.0)
    assert seen == [True, True]

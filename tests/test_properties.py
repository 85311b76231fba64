"""Property tests: hypothesis draws shapes, axes and small random programs; fnx must agree with
float64 NumPy, with vmap-as-a-loop, and with finite differences."""
import numpy as np
from hypothesis import given, settings, strategies as st

import fnx
import fnx.numpy as jnp
from fnx.test_util import check_grads

SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def shapes(draw, min_dims=1, max_dims=4, max_side=4):
    n = draw(st.integers(min_dims, max_dims))
    return tuple(draw(st.integers(1, max_side)) for _ in range(n))


@st.composite
def array_and_axis(draw):
    shape = draw(shapes())
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    seed = draw(st.integers(0, 2**31 - 1))
    return np.random.default_rng(seed).standard_normal(shape), axis


@SETTINGS
@given(array_and_axis(), st.sampled_from(["sum", "mean", "max", "min", "prod", "var", "std"]),
       st.booleans())
def test_reductions_match_numpy(xa, name, keepdims):
    x, axis = xa
    out = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(np.asarray(out), getattr(np, name)(x, axis=axis, keepdims=keepdims),
                               rtol=1e-10, atol=1e-12)


@st.composite
def broadcastable_pair(draw):
    shape = draw(shapes())
    other = tuple(1 if draw(st.booleans()) else d for d in shape)
    other = other[draw(st.integers(0, len(other))):]
    return shape, other


@SETTINGS
@given(broadcastable_pair(), st.sampled_from(["add", "subtract", "multiply", "maximum",
                                              "arctan2", "hypot"]),
       st.integers(0, 2**31 - 1), st.booleans())
def test_broadcasting_binary_ops_match_numpy(shapes_, name, seed, swap):
    a_shape, b_shape = shapes_[::-1] if swap else shapes_
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    np.testing.assert_allclose(np.asarray(getattr(jnp, name)(a, b)), getattr(np, name)(a, b),
                               rtol=1e-12)


@SETTINGS
@given(shapes(min_dims=2), st.data())
def test_transpose_moveaxis_reshape(shape, data):
    x = np.random.default_rng(0).standard_normal(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    np.testing.assert_array_equal(np.asarray(jnp.transpose(x, perm)), np.transpose(x, perm))
    src = data.draw(st.integers(-len(shape), len(shape) - 1))
    dst = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_array_equal(np.asarray(jnp.moveaxis(x, src, dst)), np.moveaxis(x, src, dst))
    flat = x.size
    np.testing.assert_array_equal(np.asarray(jnp.reshape(x, (-1,))), x.reshape(flat))


@SETTINGS
@given(array_and_axis())
def test_vmap_of_reduction_equals_loop(xa):
    x, axis = xa
    if x.ndim < 2:
        x = x[None]
    f = lambda r: jnp.sum(jnp.sin(r) * r, axis=None if axis is None else -1)  # noqa: E731
    out = fnx.vmap(f)(x)
    np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(f(r)) for r in x]),
                               rtol=1e-12)


# small random programs: a chain of unary and binary steps over two inputs
UNARY = [jnp.sin, jnp.tanh, lambda v: jnp.exp(-v * v), lambda v: v * v, lambda v: jnp.log1p(v * v),
         lambda v: jnp.sum(v, axis=-1, keepdims=True) * v]
BINARY = [jnp.add, jnp.multiply, jnp.subtract, lambda a, b: a / (1.0 + b * b)]


@st.composite
def programs(draw):
    steps = draw(st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 3)),
                          min_size=1, max_size=5))
    return steps


def _run(program, x, y):
    a, b = x, y
    for use_binary, ui, bi in program:
        a, b = (BINARY[bi](a, b), a) if use_binary else (UNARY[ui](a), b)
    return jnp.sum(a * jnp.cos(b))


@settings(max_examples=15, deadline=None)
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_programs_have_correct_gradients(program, seed):
    rng = np.random.default_rng(seed)
    x, y = 0.5 * rng.standard_normal((2, 3)), 0.5 * rng.standard_normal((2, 3))
    check_grads(lambda x, y: _run(program, x, y), (x, y), order=2, atol=1e-4, rtol=1e-4)
    jaxpr = fnx.make_jaxpr(fnx.grad(lambda x, y: _run(program, x, y)))(x, y)
    fnx.core.jaxpr.typecheck_jaxpr(jaxpr.jaxpr)
    per_example = fnx.vmap(fnx.grad(lambda x, y: _run(program, x, y)))(x, y)
    loop = [np.asarray(fnx.grad(lambda x, y: _run(program, x, y))(x[i], y[i])) for i in range(2)]
    np.testing.assert_allclose(np.asarray(per_example), np.stack(loop), rtol=1e-10, atol=1e-12)

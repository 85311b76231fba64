"""fnx.example_libraries (stax and optimizers) against jax.example_libraries on the CPU: the same
shapes, parameters and outputs from the same keys, and the same optimizer trajectories."""
import numpy as np
import pytest

import fnx
from fnx import random
from fnx.example_libraries import optimizers, stax

jax = pytest.importorskip("jax")
from jax.example_libraries import optimizers as joptimizers  # noqa: E402
from jax.example_libraries import stax as jstax  # noqa: E402

pytestmark = pytest.mark.x32


def assert_trees_close(actual, expected, rtol=1e-5, atol=1e-6):
    a_leaves, a_tree = fnx.tree_util.tree_flatten(actual)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert len(a_leaves) == len(e_leaves), (a_tree, e_tree)
    for a, e in zip(a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.shape, a.dtype) == (e.shape, e.dtype)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def _layers(lib):
    s = lib
    return {
        "conv": (s.Conv(3, (2, 2), strides=(1, 2), padding="SAME"), (2, 5, 6, 2)),
        "general_conv": (s.GeneralConv(("NCHW", "OIHW", "NHWC"), 4, (3, 2)), (2, 3, 6, 5)),
        "conv_transpose": (s.ConvTranspose(2, (3, 3), strides=(2, 2)), (1, 4, 4, 3)),
        "conv1d_transpose": (s.Conv1DTranspose(2, (3,), padding="SAME"), (2, 7, 3)),
        "batch_norm": (s.BatchNorm(axis=(0, 1)), (4, 3, 5)),
        "avg_pool": (s.AvgPool((2, 2), strides=(1, 2), padding="SAME"), (2, 5, 5, 3)),
        "sum_pool_nchw": (s.SumPool((2, 3), spec="NCHW"), (2, 3, 5, 6)),
        "max_pool": (s.MaxPool((3, 3)), (1, 6, 6, 2)),
        "flatten_dense": (s.serial(s.Flatten, s.Dense(4), s.Selu, s.Dense(3), s.Softmax),
                          (2, 3, 4)),
        "fan_in": (s.serial(s.FanOut(3), s.parallel(s.Dense(4), s.Dense(4), s.Identity),
                            s.FanOut(2), s.parallel(s.FanInSum, s.FanInConcat(-1))),
                   (3, 4)),
        "elementwise": (s.serial(s.Tanh, s.Exp, s.Sigmoid, s.Elu, s.LeakyRelu, s.Gelu,
                                 s.Softplus, s.Relu, s.LogSoftmax), (2, 5)),
        "shape_dependent": (s.shape_dependent(lambda shape: s.Dense(shape[-1] * 2)), (3, 2)),
    }


@pytest.mark.parametrize("name", sorted(_layers(stax)))
def test_stax_layer_matches_jax(name, rng, jax_x64_as_fnx):
    (init, apply), shape = _layers(stax)[name]
    (jinit, japply), _ = _layers(jstax)[name]
    out_shape, params = init(random.key(7), shape)
    j_out_shape, j_params = jinit(jax.random.key(7), shape)
    assert_trees_close(params, j_params)
    x = rng.standard_normal(shape).astype(np.float32)
    out, j_out = apply(params, x), japply(j_params, x)
    assert_trees_close(out, j_out, rtol=2e-5, atol=2e-5)
    assert jax.tree_util.tree_map(tuple, out_shape, is_leaf=lambda s: isinstance(s, tuple)) == \
        jax.tree_util.tree_map(tuple, j_out_shape, is_leaf=lambda s: isinstance(s, tuple))


def test_stax_shapes_keep_an_unknown_batch():
    init, _ = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.MaxPool((2, 2)),
                          stax.Flatten, stax.Dense(5))
    j_init, _ = jstax.serial(jstax.Conv(4, (3, 3), padding="SAME"), jstax.MaxPool((2, 2)),
                             jstax.Flatten, jstax.Dense(5))
    out_shape, _ = init(random.key(0), (-1, 6, 6, 1))
    j_out_shape, _ = j_init(jax.random.key(0), (-1, 6, 6, 1))
    assert tuple(map(int, out_shape)) == tuple(map(int, j_out_shape))


def test_stax_dropout_needs_a_key_and_matches_jax(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    _, apply = stax.Dropout(0.7)
    _, japply = jstax.Dropout(0.7)
    np.testing.assert_array_equal(apply((), x, rng=random.key(3)),
                                  japply((), x, rng=jax.random.key(3)))
    np.testing.assert_array_equal(stax.Dropout(0.7, mode="test")[1]((), x, rng=random.key(3)), x)
    with pytest.raises(ValueError, match="PRNG key"):
        apply((), x)


def _optimizers(lib):
    o = lib
    return {
        "sgd": o.sgd(o.inverse_time_decay(0.1, 2, 0.5)),
        "sgd_staircase": o.sgd(o.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
        "momentum": o.momentum(0.05, 0.9),
        "nesterov": o.nesterov(o.exponential_decay(0.05, 3, 0.7), 0.8),
        "adagrad": o.adagrad(0.1),
        "rmsprop": o.rmsprop(0.01),
        "rmsprop_momentum": o.rmsprop_momentum(0.01),
        "adam": o.adam(o.polynomial_decay(0.05, 4, 0.001)),
        "adamax": o.adamax(o.piecewise_constant([2, 4], [0.1, 0.05, 0.01])),
        "sm3": o.sm3(0.1),
    }


@pytest.mark.parametrize("name", sorted(_optimizers(optimizers)))
def test_optimizer_follows_jax(name, rng, jax_x64_as_fnx):
    params = {"w": rng.standard_normal((3, 2)).astype(np.float32),
              "b": [rng.standard_normal(2).astype(np.float32)]}
    grads = [{"w": rng.standard_normal((3, 2)).astype(np.float32),
              "b": [rng.standard_normal(2).astype(np.float32)]} for _ in range(6)]
    init, update, get_params = _optimizers(optimizers)[name]
    j_init, j_update, j_get_params = _optimizers(joptimizers)[name]
    state, j_state = init(params), j_init(params)
    for i, g in enumerate(grads):
        state = fnx.jit(update)(i, optimizers.clip_grads(g, 2.0), state)
        j_state = j_update(i, joptimizers.clip_grads(g, 2.0), j_state)
    assert_trees_close(get_params(state), j_get_params(j_state))
    restored = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert_trees_close(get_params(restored), j_get_params(j_state))


def test_sm3_keeps_a_scalar_parameter_scalar():
    init, update, get_params = optimizers.sm3(0.1)
    f32 = fnx.numpy.float32
    state = update(1, f32(3.0), update(0, f32(2.0), init(f32(1.0))))
    # the accumulator of a scalar is the running sum of squares: 4, then 13
    expected = 1.0 - 0.1 * 0.1 * 2.0 / 2.0 - 0.1 * (0.1 * 3.0 / np.sqrt(13.0) + 0.9 * 0.1)
    assert get_params(state).shape == ()
    np.testing.assert_allclose(get_params(state), expected, rtol=1e-6)


def test_optimizer_refuses_a_gradient_of_another_structure():
    init, update, _ = optimizers.adam(0.1)
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(0, [1.0, 2.0], init({"a": 1.0, "b": 2.0}))


def test_l2_norm_and_schedules_match_jax(rng):
    tree = [rng.standard_normal(3).astype(np.float32), {"x": rng.standard_normal((2, 2))}]
    np.testing.assert_allclose(optimizers.l2_norm(tree), joptimizers.l2_norm(tree), rtol=1e-6)
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [0.1, 0.2])
    assert optimizers.make_schedule(0.3)(5) == 0.3

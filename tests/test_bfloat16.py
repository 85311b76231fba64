"""bfloat16 as JAX has it: ml_dtypes' type, JAX's promotion lattice, sums and products that
accumulate in float32, and grad / vmap / jit through it; on the CPU, and on the GPU (marked
``cuda``: CuPy arrays of bfloat16, generated kernels over __nv_bfloat16, cuBLAS products).

Inputs are drawn in bfloat16, so their float64 copies are exact and a float64 computation on them
is the reference. One rounding to bfloat16 is off by at most half its spacing, 2**-8 relative.
"""
import ml_dtypes
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.nn as nn
import fnx.numpy as jnp
from fnx.core import dtypes

BF16 = np.dtype(ml_dtypes.bfloat16)
ULP = 2.0 ** -7          # the spacing of bfloat16 just above 1




def _draw(rng, shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape).astype(BF16)


def _on(device, *xs):
    return [fnx.device_put(x, device) for x in xs]


def _f64(x):
    return np.asarray(x).astype(np.float64)


def _erf(x):
    import math
    return np.vectorize(math.erf)(x)


# name -> (fnx function, float64 reference, input range, number of inputs)
OPS = {
    "neg": (jnp.negative, np.negative, (-2, 2), 1),
    "abs": (jnp.abs, np.abs, (-2, 2), 1),
    "exp": (jnp.exp, np.exp, (-2, 2), 1),
    "log": (jnp.log, np.log, (0.1, 4), 1),
    "sqrt": (jnp.sqrt, np.sqrt, (0.1, 4), 1),
    "tanh": (jnp.tanh, np.tanh, (-2, 2), 1),
    "sin": (jnp.sin, np.sin, (-2, 2), 1),
    "sigmoid": (nn.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-4, 4), 1),
    "erf": (lax.erf, _erf, (-2, 2), 1),
    "square": (lambda x: x ** 2, np.square, (-2, 2), 1),
    "add": (jnp.add, np.add, (-2, 2), 2),
    "sub": (jnp.subtract, np.subtract, (-2, 2), 2),
    "mul": (jnp.multiply, np.multiply, (-2, 2), 2),
    "div": (jnp.divide, np.divide, (0.5, 2), 2),
    "max": (jnp.maximum, np.maximum, (-2, 2), 2),
    "pow": (jnp.power, np.power, (0.5, 2), 2),
    "where": (lambda x, y: jnp.where(x > 0, x, y), lambda x, y: np.where(x > 0, x, y),
              (-2, 2), 2),
    "sum": (lambda x: jnp.sum(x, axis=1), lambda x: np.sum(x, axis=1), (-2, 2), 1),
    "sum_leading": (lambda x: jnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), (-2, 2), 1),
    "reduce_max": (lambda x: jnp.max(x, axis=1), lambda x: np.max(x, axis=1), (-2, 2), 1),
    "cumsum": (lambda x: jnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), (0, 1), 1),
    "sort": (lambda x: jnp.sort(x, axis=1), lambda x: np.sort(x, axis=1), (-2, 2), 1),
    "scatter_add": (lambda x, y: x.at[jnp.array([0, 2, 2])].add(y[:3]),
                    lambda x, y: _scatter_add(x, y[:3]), (-2, 2), 2),
    "softmax": (nn.softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True), (-2, 2), 1),
}


def _scatter_add(x, y):
    out = x.copy()
    np.add.at(out, [0, 2, 2], y)
    return out


def _check_op(name, device, seed):
    fn, ref, (low, high), n = OPS[name]
    rng = np.random.default_rng(seed)
    args = [_draw(rng, (6, 37), low, high) for _ in range(n)]
    out = fn(*_on(device, *args))
    assert out.dtype == BF16, name
    assert out._backend is device, name
    # accumulations run in float32, so even a sum or a softmax rounds about once or twice
    np.testing.assert_allclose(_f64(out), ref(*map(_f64, args)), rtol=2 * ULP, atol=1e-6,
                               err_msg=name)


# ---------------------------------------------------------------------------------------------
# dtypes and promotion


def test_bfloat16_is_ml_dtypes_type():
    # as in JAX, jnp.bfloat16 is a scalar type standing for (and equal to) ml_dtypes' type
    assert jnp.bfloat16 == ml_dtypes.bfloat16 and jnp.bfloat16.dtype == BF16
    assert fnx.dtypes.bfloat16 == BF16 == jnp.dtype("bfloat16")
    assert jnp.finfo(jnp.bfloat16).eps == ULP
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating)
    assert jnp.issubdtype(BF16, jnp.inexact) and not jnp.issubdtype(BF16, jnp.integer)
    assert not jnp.issubdtype(BF16, jnp.float32) and not jnp.issubdtype(jnp.float16, BF16)
    assert dtypes.is_float(BF16) and dtypes.kind(BF16) == "f"


@pytest.mark.parametrize("other, expected", [
    (BF16, BF16), (np.float16, np.float32), (np.float32, np.float32), (np.float64, np.float64),
    (np.int8, BF16), (np.int32, BF16), (np.uint8, BF16), (np.bool_, BF16),
    (np.complex64, np.complex64)])
def test_promotion_table(other, expected):
    assert jnp.result_type(BF16, other) == expected
    assert jnp.result_type(other, BF16) == expected
    assert (jnp.ones(2, BF16) + jnp.ones(2, other)).dtype == expected


@pytest.mark.x32
def test_weak_scalars_keep_bfloat16():
    x = jnp.ones(3, BF16)
    assert (x * 2.5).dtype == BF16 and (x + 1).dtype == BF16 and (3.0 - x).dtype == BF16
    assert dtypes.result_type((BF16, False), (dtypes.float32, True)) == (BF16, False)
    assert jnp.result_type(2.0) == np.float32      # a weak float alone is float32


def test_jaxpr_prints_bf16():
    text = str(fnx.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3, BF16)))
    assert "bf16[3]" in text


def test_casts_round_to_nearest_even():
    v = np.random.default_rng(101).standard_normal(1000).astype(np.float32)
    got = jnp.asarray(v).astype(jnp.bfloat16)
    assert got.dtype == BF16
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), v.astype(BF16).view(np.uint16))
    back = lax.convert_element_type(got, np.float32)
    np.testing.assert_array_equal(np.asarray(back), v.astype(BF16).astype(np.float32))


# ---------------------------------------------------------------------------------------------
# arithmetic on the CPU


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_float64(name, cpu):
    _check_op(name, cpu, seed=200 + sorted(OPS).index(name))


def test_sum_accumulates_in_float32(cpu):
    # summed in bfloat16, 10000 ones stop at 256; in float32, the total rounds once, to 9984
    ones = fnx.device_put(np.ones(10000, BF16), cpu)
    assert float(jnp.sum(ones)) == float(np.float32(10000).astype(BF16)) == 9984.0
    assert float(fnx.jit(jnp.sum)(ones)) == 9984.0
    assert float(jnp.cumsum(ones)[-1]) == 9984.0


def _check_matmul(device, jit=False):
    rng = np.random.default_rng(300)
    a, b = _draw(rng, (64, 512)), _draw(rng, (512, 48))
    ref = _f64(a) @ _f64(b)
    x, y = _on(device, a, b)
    wide_fn = lambda x, y: jnp.matmul(x, y, preferred_element_type=jnp.float32)  # noqa: E731
    narrow_fn = jnp.matmul
    if jit:
        wide_fn, narrow_fn = fnx.jit(wide_fn), fnx.jit(narrow_fn)
    for _ in range(3 if jit else 1):        # jit on the GPU: warm-up, capture, replay
        wide = wide_fn(x, y)
        assert wide.dtype == np.float32
        # products of two bfloat16s are exact in float32: only the float32 sum rounds, where
        # a bfloat16 accumulator would be off by tenths
        np.testing.assert_allclose(_f64(wide), ref, rtol=1e-5, atol=1e-3)
        narrow = narrow_fn(x, y)
        assert narrow.dtype == BF16 and narrow._backend is device
        np.testing.assert_allclose(_f64(narrow), ref, rtol=ULP, atol=1e-3)
    return wide, narrow


def test_matmul_accumulates_in_float32(cpu):
    wide, narrow = _check_matmul(cpu)
    # the bfloat16 product is the float32 one, rounded once
    np.testing.assert_array_equal(np.asarray(narrow), np.asarray(wide).astype(BF16))


def test_jit_matmul_on_cpu(cpu):
    _check_matmul(cpu, jit=True)


# ---------------------------------------------------------------------------------------------
# grad, vmap, jit


def _mlp_loss(params, x, y):
    w1, b1, w2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.mean((h @ w2 - y) ** 2)


def _mlp_inputs(rng):
    params = (_draw(rng, (8, 16), -0.5, 0.5), _draw(rng, (16,), -0.1, 0.1),
              _draw(rng, (16, 4), -0.5, 0.5))
    return params, _draw(rng, (32, 8)), _draw(rng, (32, 4), -1, 1)


def _check_grads_close(got, want):
    for g, w in zip(got, want):
        assert g.dtype == BF16
        w = _f64(w)
        np.testing.assert_allclose(_f64(g), w, atol=0.03 * np.abs(w).max())


def _check_mlp_grads(device, seed):
    params, x, y = _mlp_inputs(np.random.default_rng(seed))
    want = fnx.grad(_mlp_loss)(*[fnx.tree_util.tree_map(_f64, t) for t in (params, x, y)])
    on = lambda t: fnx.device_put(t, device)     # noqa: E731
    args = (on(params), on(x), on(y))
    _check_grads_close(fnx.grad(_mlp_loss)(*args), want)
    step = fnx.jit(fnx.value_and_grad(_mlp_loss))
    for _ in range(3):          # on the GPU: warm-up, capture, replay
        loss, grads = step(*args)
        assert loss.dtype == BF16 and grads[0]._backend is device
        _check_grads_close(grads, want)


def test_grad_of_mlp(cpu):
    _check_mlp_grads(cpu, 400)


def test_grads_come_back_in_the_input_dtype():
    x = jnp.asarray(np.random.default_rng(401).standard_normal(5).astype(BF16))
    g = fnx.grad(lambda v: jnp.sum(v.astype(jnp.float32) ** 2))(x)
    assert g.dtype == BF16
    np.testing.assert_allclose(_f64(g), 2 * _f64(x), rtol=ULP)
    g32 = fnx.grad(lambda v: jnp.sum(v.astype(jnp.bfloat16) ** 2))(jnp.ones(3, np.float32))
    assert g32.dtype == np.float32


def test_grad_through_float32_accumulating_matmul():
    rng = np.random.default_rng(402)
    a, b = _draw(rng, (5, 7)), _draw(rng, (7, 3))

    def loss(a, b):
        return jnp.sum(jnp.matmul(a, b, preferred_element_type=jnp.float32) ** 2)
    ga, gb = fnx.grad(loss, (0, 1))(jnp.asarray(a), jnp.asarray(b))
    wa, wb = fnx.grad(loss, (0, 1))(jnp.asarray(_f64(a)), jnp.asarray(_f64(b)))
    _check_grads_close((ga, gb), (wa, wb))


def test_vmap_of_grad_matches_stacking():
    params, x, y = _mlp_inputs(np.random.default_rng(403))
    per_example = fnx.vmap(fnx.grad(_mlp_loss), in_axes=(None, 0, 0))(params, x[:, None],
                                                                      y[:, None])
    for i in (0, 7, 31):
        one = fnx.grad(_mlp_loss)(params, x[i:i + 1], y[i:i + 1])
        for got, want in zip(per_example, one):
            assert got.dtype == BF16
            np.testing.assert_allclose(_f64(got[i]), _f64(want), rtol=2 * ULP, atol=1e-3)


def test_adam_trains_bfloat16_params():
    # bfloat16 rounds Adam's b2 = 0.999 to 1: its bias correction must run in float32
    import fnx.optim as optim
    params, x, y = _mlp_inputs(np.random.default_rng(405))
    opt = optim.adam(1e-2)

    @fnx.jit
    def step(params, state):
        loss, grads = fnx.value_and_grad(_mlp_loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, loss
    state, losses = opt.init(params), []
    for _ in range(60):
        params, state, loss = step(params, state)
        losses.append(float(loss))
    assert all(p.dtype == BF16 for p in params)
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0]


def _chain(x, y):
    return jnp.tanh(x) * y + 0.5 * jnp.exp(-x * x) - jnp.maximum(y, 0.0) / 3.0


def _chain_ref(x, y):
    return np.tanh(x) * y + 0.5 * np.exp(-x * x) - np.maximum(y, 0.0) / 3.0


def test_jit_equals_eager_bit_for_bit_on_cpu(cpu):
    rng = np.random.default_rng(404)
    x, y = _on(cpu, _draw(rng, (40, 9)), _draw(rng, (40, 9)))

    def f(x, y):
        z = _chain(x, y)
        return z, jnp.sum(z, axis=0), z @ y.T, nn.softmax(z)
    for got, want in zip(fnx.jit(f)(x, y), f(x, y)):
        assert got.dtype == want.dtype == BF16
        np.testing.assert_array_equal(np.asarray(got).view(np.uint16),
                                      np.asarray(want).view(np.uint16))
    np.testing.assert_allclose(_f64(f(x, y)[0]), _chain_ref(_f64(x), _f64(y)), atol=4 * ULP)


# ---------------------------------------------------------------------------------------------
# the GPU


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(OPS))
def test_eager_op_on_gpu(name, gpu):
    _check_op(name, gpu, seed=500 + sorted(OPS).index(name))


@pytest.mark.cuda
def test_transfers_keep_the_bits(gpu, cpu):
    v = _draw(np.random.default_rng(501), (3, 5))
    on_gpu = fnx.device_put(v, gpu)
    assert on_gpu.dtype == BF16 and on_gpu._backend is gpu
    np.testing.assert_array_equal(np.asarray(on_gpu).view(np.uint16), v.view(np.uint16))
    back = fnx.device_put(on_gpu, cpu)
    np.testing.assert_array_equal(np.asarray(back).view(np.uint16), v.view(np.uint16))


def _lower(f, args, gpu):
    from fnx.cuda.lowering import lower
    closed = fnx.make_jaxpr(f)(*args)
    exe = lower(closed.jaxpr, closed.consts, gpu)
    return exe, exe(*[a._value for a in args])


@pytest.mark.cuda
def test_jit_elementwise_chain_on_gpu(gpu):
    rng = np.random.default_rng(502)
    a, b = _draw(rng, (64, 33)), _draw(rng, (64, 33))
    x, y = _on(gpu, a, b)
    exe, (out,) = _lower(_chain, [x, y], gpu)
    # one generated kernel, loading and storing __nv_bfloat16 and computing in float
    assert exe.num_launches == 1, exe.describe()
    assert "__nv_bfloat16" in exe.kernels[0].source and "cuda_bf16.h" in exe.kernels[0].source
    assert out.dtype == BF16
    ref = _chain_ref(_f64(a), _f64(b))
    np.testing.assert_allclose(_f64(gpu.to_numpy(out)), ref, rtol=ULP, atol=ULP / 4)
    f = fnx.jit(_chain)
    for _ in range(3):          # warm-up, capture, replay
        got = f(x, y)
        assert got.dtype == BF16 and got._backend is gpu
        np.testing.assert_allclose(_f64(got), ref, rtol=ULP, atol=ULP / 4)


@pytest.mark.cuda
def test_jit_sum_over_leading_axes_on_gpu(gpu):
    a = _draw(np.random.default_rng(503), (300, 40))
    (x,) = _on(gpu, a)
    f = lambda x: (x * 2.0 + 1.0, jnp.sum(x * 2.0 + 1.0, axis=0))    # noqa: E731
    exe, (scaled, total) = _lower(f, [x], gpu)
    assert "columns" in exe.describe(), exe.describe()
    assert total.dtype == BF16
    np.testing.assert_allclose(_f64(gpu.to_numpy(total)), np.sum(_f64(a) * 2 + 1, axis=0),
                               rtol=ULP, atol=1e-3)
    np.testing.assert_array_equal(gpu.to_numpy(scaled), (_f64(a) * 2 + 1).astype(BF16))


@pytest.mark.cuda
def test_matmul_on_gpu(gpu):
    _check_matmul(gpu)


@pytest.mark.cuda
def test_jit_matmul_on_gpu(gpu):
    # bfloat16 operands on cuBLAS / cuBLASLt, accumulating in float32
    _check_matmul(gpu, jit=True)
    rng = np.random.default_rng(504)
    x, y = _on(gpu, _draw(rng, (16, 24)), _draw(rng, (24, 8)))
    exe, _ = _lower(lambda x, y: x @ y, [x, y], gpu)
    assert exe.num_launches == 1 and "dot_general" in exe.describe(), exe.describe()


@pytest.mark.cuda
def test_grad_of_mlp_on_gpu(gpu):
    _check_mlp_grads(gpu, 505)

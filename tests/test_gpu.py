"""GPU backend: every op spec matches the CPU (forward, gradients, vmap); devices and transfers.

Marked ``cuda``: skipped where no GPU exists, run on the device machine with
``python -m pytest -m cuda``."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.test_util import check_grads

from op_specs import SPECS, SPEC_IDS

pytestmark = pytest.mark.cuda




def _on(device, args):
    return [fnx.device_put(a, device) for a in args]


def _assert_on_gpu(x, gpu):
    for leaf in fnx.tree_util.tree_leaves(x):
        assert leaf._backend is gpu, f"result left the GPU: {leaf._backend}"


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_forward_matches_cpu(spec, gpu, cpu):
    args = spec.draw(np.random.default_rng(1))
    out = spec.fn(*_on(gpu, args))
    _assert_on_gpu(out, gpu)
    expected = spec.fn(*_on(cpu, args))
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), atol=1e-6, rtol=1e-6)


GRAD_SPECS = [s for s in SPECS if s.grad]


def _float_only(spec, args):
    fidx = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]

    def f(*fa):
        full = list(args)
        for i, v in zip(fidx, fa):
            full[i] = v
        return jnp.sum(spec.fn(*full))
    return f, [args[i] for i in fidx]


@pytest.mark.parametrize("spec", GRAD_SPECS, ids=[s.name for s in GRAD_SPECS])
def test_grad_matches_cpu(spec, gpu, cpu):
    args = spec.draw(np.random.default_rng(2))
    f_gpu, fa_gpu = _float_only(spec, _on(gpu, args))
    f_cpu, fa_cpu = _float_only(spec, _on(cpu, args))
    argnums = tuple(range(len(fa_gpu)))
    g_gpu = fnx.grad(f_gpu, argnums)(*fa_gpu)
    g_cpu = fnx.grad(f_cpu, argnums)(*fa_cpu)
    _assert_on_gpu(g_gpu, gpu)
    for a, b in zip(g_gpu, g_cpu):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_vmap_matches_cpu(spec, gpu, cpu):
    args = spec.draw(np.random.default_rng(3), batch=3)
    out = fnx.vmap(spec.fn)(*_on(gpu, args))
    expected = fnx.vmap(spec.fn)(*_on(cpu, args))
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), atol=1e-6, rtol=1e-6)


def test_check_grads_on_gpu(gpu):
    x = fnx.device_put(np.random.default_rng(4).standard_normal((3, 4)), gpu)
    check_grads(lambda x: jnp.tanh(x) @ x.T, (x,), order=2)


def test_arrays_default_to_gpu_and_stay_there(gpu):
    assert fnx.default_backend() == "gpu"
    x = jnp.ones((4, 4))
    assert x._backend is gpu
    y = (x @ x + 1.0).sum(0)
    _assert_on_gpu(y, gpu)
    assert y.block_until_ready() is y
    host = fnx.device_get(y)
    assert isinstance(host, np.ndarray) and np.allclose(host, 20.0)


def test_device_put_round_trip(gpu, cpu):
    x = np.arange(6.0).reshape(2, 3)
    on_gpu = fnx.device_put(x, gpu)
    back = fnx.device_put(on_gpu, cpu)
    assert on_gpu._backend is gpu and back._backend is cpu
    np.testing.assert_array_equal(np.asarray(back), x)


def test_dlpack_shares_the_gpu_buffer(gpu):
    import cupy as cp
    x = jnp.arange(5.0)
    y = cp.from_dlpack(x)
    assert isinstance(y, cp.ndarray) and float(y.sum()) == 10.0


def test_broadcast_of_a_host_scalar_lands_on_the_gpu(gpu):
    out = fnx.lax.broadcast_in_dim(2.0, (3,), ())
    _assert_on_gpu(out, gpu)
    x = jnp.ones(3)
    g = fnx.vjp(jnp.sum, x)[1](np.ones((), x.dtype))[0]
    _assert_on_gpu(g, gpu)
    np.testing.assert_array_equal(np.asarray(g), np.ones(3))


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_jit_on_gpu_equals_eager_on_gpu(spec, gpu):
    args = _on(gpu, spec.draw(np.random.default_rng(9)))
    f = fnx.jit(spec.fn)
    for _ in range(3):      # eager warm-up, capture, replay
        out = f(*args)
        _assert_on_gpu(out, gpu)
        np.testing.assert_allclose(np.asarray(out), np.asarray(spec.fn(*args)), atol=1e-6,
                                   rtol=1e-6)


def test_jitted_train_step_on_gpu(gpu):
    rng = np.random.default_rng(10)
    w = fnx.device_put(rng.standard_normal((8, 4)), gpu)
    x = fnx.device_put(rng.standard_normal((16, 8)), gpu)

    @fnx.jit
    def step(w):
        loss, g = fnx.value_and_grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
        return loss, w - 0.5 * g
    losses = []
    for _ in range(20):
        loss, w = step(w)
        losses.append(float(loss))
    _assert_on_gpu(w, gpu)
    assert losses[-1] < losses[0]


def _integer_edges(x, y, u, s):
    """XLA's integer edge cases: x / 0, x % 0, INT_MIN / -1, arithmetic shifts of unsigned
    values, bitwise reductions, and max/min over no elements."""
    lax = fnx.lax
    return (lax.div(x, y), lax.rem(x, y), lax.shift_right_arithmetic(u, s),
            lax.shift_right_arithmetic(x, s.astype(x.dtype)),
            lax.reduce_and(u, (1,)), lax.reduce_or(x, (0,)),
            lax.reduce_max(x[:, :0], (1,)), lax.reduce_min(u[:0], (0,)))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_edge_cases_match_the_cpu(dtype, gpu, cpu, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (6, 5), dtype=dtype, endpoint=True)
    y = rng.integers(-3, 4, (6, 5), dtype=dtype)
    x[0, :2], y[0, :2] = info.min, -1
    y[1] = 0
    u = rng.integers(0, np.iinfo("u" + dtype).max, (6, 5), dtype="u" + dtype, endpoint=True)
    s = rng.integers(0, info.bits + 2, (6, 5), dtype="u" + dtype)
    expected = _integer_edges(*_on(cpu, [x, y, u, s]))
    for f in (_integer_edges, fnx.jit(_integer_edges), fnx.jit(_integer_edges)):
        out = f(*_on(gpu, [x, y, u, s]))
        for got, want in zip(out, expected):
            _assert_on_gpu(got, gpu)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

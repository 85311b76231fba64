"""Dense layers ``act(x @ w + b)`` under jit on the GPU: every activation and every kind of bias,
forward and backward, against float64 references, with the launches they lower to."""
import math
import zlib

import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp

pytestmark = pytest.mark.cuda

_erf = np.vectorize(math.erf)
# name -> (fnx activation, float64 NumPy reference, fused into the GEMM's launch)
ACTS = {
    "none": (lambda z: z, lambda z: z, True),
    "relu": (nn.relu, lambda z: np.maximum(z, 0), True),
    "leaky_relu": (lambda z: nn.leaky_relu(z, 0.1), lambda z: np.where(z >= 0, z, 0.1 * z), True),
    "sigmoid": (nn.sigmoid, lambda z: 1 / (1 + np.exp(-z)), True),
    "tanh": (jnp.tanh, np.tanh, True),
    "gelu_tanh": (lambda z: nn.gelu(z, approximate=True),
                  lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                   * (z + 0.044715 * z ** 3))), True),
    "gelu_exact": (lambda z: nn.gelu(z, approximate=False),
                   lambda z: 0.5 * z * (1 + _erf(z / math.sqrt(2))), True),
}
# bias kind -> its shape for an (m, n) product
BIASES = {"column": lambda m, n: (n,), "row": lambda m, n: (m, 1), "scalar": lambda m, n: ()}



def _draw(rng, m, k, n, bias):
    return [rng.standard_normal(s).astype(np.float32)
            for s in [(m, k), (k, n), BIASES[bias](m, n)]]


def _layer(act):
    f = ACTS[act][0]
    return lambda x, w, b: f(x @ w + b)


@pytest.mark.parametrize("bias", list(BIASES))
@pytest.mark.parametrize("act", list(ACTS))
def test_dense_forward_matches_float64(gpu, act, bias):
    rng = np.random.default_rng(zlib.crc32(f"{act}-{bias}".encode()))
    x, w, b = _draw(rng, 96, 200, 48, bias)
    step = fnx.jit(_layer(act))
    args = fnx.device_put((x, w, b), gpu)
    out = step(*args)
    ref = ACTS[act][1](x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-4)
    exe = step.lower(*args).compile()
    launches = exe.num_launches
    # one dense step (a GEMM with the layer's epilogue, or the fastest GEMM and one
    # bias+activation kernel), or a GEMM step then one fused elementwise kernel
    if ACTS[act][2] and bias == "column":
        assert launches == 1 and "dense" in exe.describe(), exe.describe()
    else:
        assert launches <= 2, exe.describe()


@pytest.mark.parametrize("m,k,n", [(96, 200, 48), (128, 64, 10), (4, 6, 3)])
def test_relu_layer_keeps_a_nan_as_jax(gpu, m, k, n):
    """``nn.relu`` is ``max(z, 0)``: a NaN stays NaN (as on the CPU and in JAX) in whichever
    kernel the layer runs; the calls after the first may time and take other candidates."""
    x, w, b = _draw(np.random.default_rng(m * k + n), m, k, n, "column")
    x[1, 0] = np.nan
    step = fnx.jit(_layer("relu"))
    ref = np.maximum(x.astype(np.float64) @ w + b, 0)
    for _ in range(3):
        out = np.asarray(step(*fnx.device_put((x, w, b), gpu)))
        assert np.isnan(out[1]).all()
        np.testing.assert_allclose(np.delete(out, 1, 0), np.delete(ref, 1, 0), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("bias", list(BIASES))
@pytest.mark.parametrize("act", list(ACTS))
def test_dense_gradients_match_finite_differences(gpu, act, bias):
    """Small sizes: every input's gradient against central differences of the float64
    reference."""
    rng = np.random.default_rng(zlib.crc32(f"{act}-{bias}-grad".encode()))
    x, w, b = _draw(rng, 6, 5, 4, bias)
    g = rng.standard_normal((6, 4))
    layer = _layer(act)
    loss = fnx.jit(fnx.grad(lambda x, w, b: jnp.sum(layer(x, w, b) * g.astype(np.float32)),
                            argnums=(0, 1, 2)))
    grads = loss(*fnx.device_put((x, w, b), gpu))
    ref_f = ACTS[act][1]

    def ref_loss(x, w, b):
        return float(np.sum(ref_f(x @ w + b) * g))
    args64 = [a.astype(np.float64) for a in (x, w, b)]
    eps = 1e-6
    for i, got in enumerate(grads):
        num = np.zeros_like(args64[i])
        for idx in np.ndindex(num.shape):
            hi = [a.copy() for a in args64]
            lo = [a.copy() for a in args64]
            hi[i][idx] += eps
            lo[i][idx] -= eps
            num[idx] = (ref_loss(*hi) - ref_loss(*lo)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(got), num, rtol=2e-3, atol=2e-3,
                                   err_msg=f"gradient of input {i}")


@pytest.mark.parametrize("act", list(ACTS))
def test_dense_gradients_at_layer_size_match_float64(gpu, act):
    """A layer-sized backward pass on the GPU (float32) against the same program on the CPU in
    float64."""
    rng = np.random.default_rng(zlib.crc32(f"{act}-layer".encode()))
    x, w, b = _draw(rng, 128, 300, 200, "column")
    g = rng.standard_normal((128, 200))
    layer = _layer(act)

    def loss(x, w, b, g):
        return jnp.sum(layer(x, w, b) * g)
    grad = fnx.jit(fnx.grad(loss, argnums=(0, 1, 2)))
    got = grad(*fnx.device_put((x, w, b, g.astype(np.float32)), gpu))
    cpu = fnx.devices("cpu")[0]
    ref = grad(*fnx.device_put([a.astype(np.float64) for a in (x, w, b, g)], cpu))
    for a, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(r), rtol=2e-3,
                                   atol=2e-3 * float(np.abs(np.asarray(r)).max()))


def test_scaled_product_plus_c_operand(gpu):
    """``alpha * (x @ w) + beta * c + b``: the GEMM's C operand and scale, in at most one extra
    launch."""
    rng = np.random.default_rng(14)
    x, w, b = _draw(rng, 64, 80, 32, "column")
    c = rng.standard_normal((64, 32)).astype(np.float32)
    f = fnx.jit(lambda x, w, c, b: nn.relu(0.5 * (x @ w) + 2.0 * c + b))
    args = fnx.device_put((x, w, c, b), gpu)
    out = f(*args)
    ref = np.maximum(0.5 * (x.astype(np.float64) @ w) + 2.0 * c + b, 0)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-4)
    assert f.lower(*args).compile().num_launches <= 2


def _gelu_tanh_and_slope(z):
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (z + 0.044715 * z ** 3))
    return 0.5 * z * (1 + t), 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * c * (1 + 3 * 0.044715 * z * z)


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_cublaslt_auxiliary_epilogues_match_float64(gpu, act):
    """The forward epilogue writes the activation and its auxiliary matrix (ReLU's bitmask,
    GELU's input); the backward one reads it and writes ``gZ = (g @ w2.T) * act'(z)`` and the
    bias gradient ``gZ.sum(0)``. 96 columns: the bitmask's rows are padded to 128 bits."""
    import cupy as cp
    from fnx.cuda.cublaslt import Plan, aux_shape
    m, n, k, k2 = 64, 96, 80, 48
    rng = np.random.default_rng(7 if act == "relu" else 8)
    x, w, b, g, w2 = (rng.standard_normal(s).astype(np.float32)
                      for s in [(m, k), (k, n), (n,), (m, k2), (n, k2)])
    z = x.astype(np.float64) @ w.astype(np.float64) + b
    h_ref, slope = (np.maximum(z, 0), (z > 0) * 1.0) if act == "relu" else _gelu_tanh_and_slope(z)
    forward = Plan(m, n, k, False, False, np.float32, np.float32, "highest",
                   epilogue=f"{act}_aux_bias")
    backward = Plan(m, n, k2, False, True, np.float32, np.float32, "highest",
                    epilogue=f"d{act}_bgrad")
    assert forward.algos and backward.algos
    shape, dtype = aux_shape(m, n, forward.epilogue, np.float32)
    aux, h = cp.zeros(shape, dtype), cp.empty((m, n), np.float32)
    forward(h, cp.asarray(x), cp.asarray(w), bias=cp.asarray(b), aux=aux)
    np.testing.assert_allclose(cp.asnumpy(h), h_ref, rtol=1e-4, atol=1e-4)
    if act == "relu":
        bits = np.unpackbits(cp.asnumpy(aux), axis=1, bitorder="little")[:, :n].astype(bool)
        clear = np.abs(z) > 1e-4
        np.testing.assert_array_equal(bits[clear], (z > 0)[clear])
    else:
        np.testing.assert_allclose(cp.asnumpy(aux)[:, :n], z, rtol=1e-4, atol=1e-4)
    gz, gb = cp.empty((m, n), np.float32), cp.empty(n, np.float32)
    backward(gz, cp.asarray(g), cp.asarray(w2), bias=gb, aux=aux)
    gz_ref = (g.astype(np.float64) @ w2.astype(np.float64).T) * slope
    # cuBLASLt's GELU derivative is a fast approximation: off by up to ~2e-4 on inputs near 0
    tol = 1e-4 if act == "relu" else 1e-3
    np.testing.assert_allclose(cp.asnumpy(gz), gz_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(cp.asnumpy(gb), gz_ref.sum(0), rtol=tol, atol=10 * tol)


@pytest.mark.parametrize("act", ["gelu_tanh", "gelu_exact"])
def test_gelu_backward_recomputes_from_the_pre_activation(gpu, act):
    """Training through a GELU layer followed by another product: the forward's activation
    kernel writes only its result, and the backward's kernel recomputes the activation's
    intermediates from the pre-activation (fnx.cuda.fusion.recompute_residuals); the gradients
    match float64."""
    from fnx.cuda.lowering import lower
    rng = np.random.default_rng(zlib.crc32(f"{act}-recompute".encode()))
    x, w, b = _draw(rng, 128, 300, 200, "column")
    w2, g = (rng.standard_normal(s).astype(np.float32) for s in [(200, 64), (128, 64)])
    layer = _layer(act)

    def loss(x, w, b, w2, g):
        return jnp.sum((layer(x, w, b) @ w2) * g)
    grad = fnx.grad(loss, argnums=(0, 1, 2, 3))
    args = (x, w, b, w2, g)
    closed = fnx.make_jaxpr(grad)(*args)
    exe = lower(closed.jaxpr, closed.consts, gpu)
    special = "tanh" if act == "gelu_tanh" else "erf"
    parts = [p for k in exe.kernels for p in getattr(k, "kernels", [k])]     # multi: its parts
    users = [k for k in parts if any(e.primitive.name == special for e in k.eqns)]
    assert len(users) == 2, exe.describe()          # the forward's, and the backward's copy
    assert len(users[0].outputs) == 1, exe.describe()
    got = exe(*[gpu.to_buffer(fnx.device_put(a, gpu), np.float32) for a in args])
    cpu = fnx.devices("cpu")[0]
    ref = fnx.jit(grad)(*fnx.device_put([a.astype(np.float64) for a in args], cpu))
    for a, r in zip(got, ref):
        np.testing.assert_allclose(gpu.to_numpy(a), np.asarray(r), rtol=2e-3,
                                   atol=2e-3 * float(np.abs(np.asarray(r)).max()))


@pytest.mark.parametrize("path", ["fnx", "lt", "timed"])
def test_gelu_backward_under_tf32_on_either_path_matches_float64(gpu, path, tmp_path,
                                                                  monkeypatch):
    """A GELU layer's backward under TF32 runs fnx's product + column kernel or cuBLASLt's
    DGELU_BGRAD (forced here, or timed on the first call and remembered); the gradients
    match float64 within TF32's precision."""
    from fnx.cuda import gemm_table
    from fnx.cuda.lowering import lower
    from fnx.cuda.lt_backward import GeluBackward
    monkeypatch.setenv("FNX_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(zlib.crc32(f"dgelu-{path}".encode()))
    args = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
            for s in [(128, 256), (256, 192), (192,), (192, 64), (128, 64)]]
    tf32 = "tensorfloat32"

    def loss(x, w, b, w2, g):
        h = nn.gelu(jnp.matmul(x, w, precision=tf32) + b, approximate=True)
        return jnp.sum(jnp.matmul(h, w2, precision=tf32) * g)
    grad = fnx.grad(loss, argnums=(0, 1, 2, 3))
    closed = fnx.make_jaxpr(grad)(*args)
    exe = lower(closed.jaxpr, closed.consts, gpu)
    found = [c for c in exe.choices if isinstance(c, GeluBackward)]
    assert len(found) == 1, exe.describe()
    key = found[0].key
    saved = gemm_table.TABLE.choices.get(key)
    try:
        if path == "timed":
            gemm_table.TABLE.choices.pop(key, None)
        else:
            gemm_table.TABLE.choices[key] = "fnx" if path == "fnx" else "lt:0"
        bufs = [gpu.to_buffer(fnx.device_put(a, gpu), np.float32) for a in args]
        got = exe(*bufs)
        choice = gemm_table.TABLE.choice(key)
        assert choice == "fnx" or choice.startswith("lt:"), choice
        assert found[0].lt == choice.startswith("lt:")
        cpu = fnx.devices("cpu")[0]
        ref = fnx.jit(grad)(*fnx.device_put([a.astype(np.float64) for a in args], cpu))
        for a, r in zip(got, ref):
            r = np.asarray(r)
            np.testing.assert_allclose(gpu.to_numpy(a), r, rtol=1e-2,
                                       atol=1e-2 * float(np.abs(r).max()))
        again = exe(*bufs)                  # the remembered path, the same gradients
        for a, b in zip(again, got):
            np.testing.assert_allclose(gpu.to_numpy(a), gpu.to_numpy(b), rtol=1e-5, atol=1e-6)
    finally:
        if saved is None:
            gemm_table.TABLE.choices.pop(key, None)
        else:
            gemm_table.TABLE.choices[key] = saved

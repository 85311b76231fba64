"""fnx.nn's transformer and conv-net building blocks against JAX on the CPU: attention (every
option, grouped key/value heads, gradients), layer norm, rms norm, gelu in both forms and dense
layers of any rank, in float32 and bfloat16, and reductions that accumulate half precision in
float32. Inputs are fresh random draws each test."""
import math

import ml_dtypes
import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
from fnx.core.errors import UnavailableImplementationError

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

BF16 = np.dtype(ml_dtypes.bfloat16)
# tolerances relative to the output's scale: float32 round-off, or a few bfloat16 roundings
TOL = {np.dtype(np.float32): 2e-6, BF16: 2 ** -6}


def _jax(fn, *args):
    """``fn(*args)`` in JAX, compiled once: JAX's op-by-op mode compiles every operation."""
    return jax.jit(fn)(*args)


def _draw(rng, shape, dtype, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(dtype)


def _close(ours, theirs, dtype, factor=1.0):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    ours, theirs = ours.astype(np.float64), theirs.astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(theirs))))
    np.testing.assert_allclose(ours, theirs, rtol=0,
                               atol=factor * TOL[np.dtype(dtype)] * scale)


# --- dot_product_attention ------------------------------------------------------------------

ATTENTION_OPTIONS = [
    {},
    {"is_causal": True},
    {"scale": 0.3},
    {"bias": True},
    {"mask": True},
    {"bias": True, "mask": True, "is_causal": True},
    {"local_window_size": 1},
    {"local_window_size": (2, 0), "is_causal": True},
    {"query_seq_lengths": True, "key_value_seq_lengths": True},
]


def _attention_args(rng, dtype, options, B=2, T=5, S=7, N=4, K=2, H=8):
    q, k, v = (_draw(rng, (B, L, heads, H), dtype) for L, heads in ((T, N), (S, K), (S, K)))
    kwargs = dict(options)
    if options.get("bias"):
        kwargs["bias"] = _draw(rng, (1, N, T, S), dtype)
    if options.get("mask"):
        mask = rng.random((B, 1, T, S)) < 0.7
        mask[..., 0] = True
        kwargs["mask"] = mask
    if options.get("query_seq_lengths"):
        kwargs["query_seq_lengths"] = rng.integers(1, T + 1, B).astype(np.int32)
        kwargs["key_value_seq_lengths"] = rng.integers(1, S + 1, B).astype(np.int32)
    return (q, k, v), kwargs


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["f32", "bf16"])
@pytest.mark.parametrize("options", ATTENTION_OPTIONS, ids=lambda o: "-".join(o) or "plain")
def test_attention_matches_jax(options, dtype, rng):
    (q, k, v), kwargs = _attention_args(rng, dtype, options)
    ours = nn.dot_product_attention(*map(jnp.asarray, (q, k, v)), **{
        n: jnp.asarray(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()})
    theirs = _jax(lambda: jax.nn.dot_product_attention(q, k, v, **kwargs))
    _close(ours, theirs, dtype)


@pytest.mark.parametrize("heads", [(4, 4), (6, 2), (3, 1)], ids=["mha", "gqa", "mqa"])
def test_attention_gradients_match_jax(heads, rng):
    N, K = heads
    (q, k, v), kwargs = _attention_args(rng, np.float32, {"bias": True, "is_causal": True},
                                        N=N, K=K, T=4, S=4)
    bias, ct = kwargs.pop("bias"), _draw(rng, q.shape, np.float32)

    def loss(np_, q, k, v, bias):
        out = (nn if np_ is jnp else jax.nn).dot_product_attention(q, k, v, bias, **kwargs)
        return np_.sum(out * ct)
    ours = fnx.grad(lambda *a: loss(jnp, *a), argnums=(0, 1, 2, 3))(
        *map(jnp.asarray, (q, k, v, bias)))
    theirs = _jax(jax.grad(lambda *a: loss(jjnp, *a), argnums=(0, 1, 2, 3)), q, k, v, bias)
    for o, t in zip(ours, theirs):
        _close(o, t, np.float32)


def test_attention_jit_matches_jax_in_bfloat16(rng):
    (q, k, v), _ = _attention_args(rng, BF16, {})
    ours = fnx.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True))(q, k, v)
    _close(ours, _jax(lambda: jax.nn.dot_product_attention(q, k, v, is_causal=True)), BF16)


def test_attention_cudnn_raises_on_the_cpu_as_jax_does(rng):
    (q, k, v), _ = _attention_args(rng, BF16, {})
    with pytest.raises(RuntimeError):
        jax.nn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(UnavailableImplementationError, match="cuDNN"):
        nn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(ValueError, match="implementation"):
        nn.dot_product_attention(q, k, v, implementation="flash")
    _close(nn.dot_product_attention(q, k, v, implementation="xla"),
           _jax(lambda: jax.nn.dot_product_attention(q, k, v, implementation="xla")), BF16)


# --- norms, gelu, dense ---------------------------------------------------------------------

def _jax_layer_norm(x, scale, bias, axis, eps):
    """Flax's LayerNorm: statistics and normalisation in float32, one rounding at the end."""
    xf = x.astype(jjnp.promote_types(x.dtype, jjnp.float32))
    mean = xf.mean(axis, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + eps) * scale.astype(xf.dtype) + bias.astype(xf.dtype)
    return y.astype(jjnp.result_type(x, scale, bias))


def _jax_rms_norm(x, scale, axis, eps):
    xf = x.astype(jjnp.promote_types(x.dtype, jjnp.float32))
    y = xf * jax.lax.rsqrt((xf * xf).mean(axis, keepdims=True) + eps) * scale.astype(xf.dtype)
    return y.astype(jjnp.result_type(x, scale))


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["f32", "bf16"])
def test_layer_norm_and_rms_norm_match_jax(dtype, rng):
    # a large common offset: a half-precision mean would lose the variance
    x = (_draw(rng, (3, 5, 16), np.float32) + 40).astype(dtype)
    scale, bias = _draw(rng, (16,), dtype), _draw(rng, (16,), dtype)
    _close(nn.layer_norm(x, scale, bias, epsilon=1e-5),
           _jax(lambda: _jax_layer_norm(x, scale, bias, -1, 1e-5)), dtype)
    _close(nn.rms_norm(x, scale), _jax(lambda: _jax_rms_norm(x, scale, -1, 1e-6)), dtype)
    scale2 = _draw(rng, (5, 16), dtype)
    _close(nn.layer_norm(x, scale2, scale2, axis=(1, 2)),
           _jax(lambda: _jax_layer_norm(x, scale2, scale2, (1, 2), 1e-6)), dtype)
    _close(nn.rms_norm(x, scale2, axis=(-2, -1)),
           _jax(lambda: _jax_rms_norm(x, scale2, (1, 2), 1e-6)), dtype)


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["f32", "bf16"])
def test_norm_modules_and_gradients_match_jax(dtype, rng):
    x = _draw(rng, (4, 6), dtype)
    ln, rms = nn.LayerNorm(6, eps=1e-5, dtype=dtype), nn.RMSNorm(6, dtype=dtype)
    ln.weight, ln.bias, rms.weight = (jnp.asarray(_draw(rng, (6,), dtype)) for _ in range(3))
    w, b, r = (np.asarray(p) for p in (ln.weight, ln.bias, rms.weight))
    _close(ln(x), _jax(lambda: _jax_layer_norm(x, w, b, -1, 1e-5)), dtype)
    _close(rms(x), _jax(lambda: _jax_rms_norm(x, r, -1, 1e-6)), dtype)
    with pytest.raises(ValueError, match="RMSNorm"):
        rms(jnp.ones((4, 5), dtype))
    ct = _draw(rng, (4, 6), np.float32)
    ours = fnx.grad(lambda x, s, b: jnp.sum(nn.layer_norm(x, s, b) * ct), argnums=(0, 1, 2))(
        x, ln.weight, ln.bias)
    theirs = _jax(jax.grad(lambda x, s, b: jjnp.sum(_jax_layer_norm(x, s, b, -1, 1e-6) * ct),
                           argnums=(0, 1, 2)), x, w, b)
    for o, t in zip(ours, theirs):
        _close(o, t, dtype)


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["f32", "bf16"])
@pytest.mark.parametrize("approximate", [True, False], ids=["tanh", "erf"])
def test_gelu_matches_jax(approximate, dtype, rng):
    x = _draw(rng, (257,), dtype, scale=3.0)
    _close(nn.gelu(x, approximate=approximate),
           _jax(lambda: jax.nn.gelu(x, approximate=approximate)), dtype)
    ours = fnx.grad(lambda v: jnp.sum(nn.gelu(v, approximate)))(x)
    theirs = _jax(jax.grad(lambda v: jjnp.sum(jax.nn.gelu(v, approximate))), x)
    _close(ours, theirs, dtype, factor=8)   # a derivative formula of several roundings


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["f32", "bf16"])
@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 3, 7), (2, 2, 3, 7)], ids=len)
def test_dense_of_any_rank_matches_jax(shape, dtype, rng):
    layer = nn.Linear(fnx.random.key(int(rng.integers(1 << 30))), 7, 5, dtype=dtype)
    layer.bias = jnp.asarray(_draw(rng, (5,), dtype))
    x = _draw(rng, shape, dtype)
    w, b = np.asarray(layer.weight), np.asarray(layer.bias)
    _close(layer(x), _jax(lambda: jjnp.dot(x, w) + b), dtype)
    ours = fnx.grad(lambda m: jnp.sum(jnp.tanh(m(x))))(layer)
    theirs = _jax(jax.grad(lambda w, b: jjnp.sum(jjnp.tanh(jjnp.dot(x, w) + b)), (0, 1)), w, b)
    _close(ours.weight, theirs[0], dtype)
    _close(ours.bias, theirs[1], dtype)


# --- half-precision reductions accumulate in float32 ----------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "prod"])
def test_half_precision_reductions_match_jax(name, dtype, rng):
    # offset values: a half-precision accumulator overflows (float16) or loses the variance
    x = 1.0 + rng.standard_normal((8, 512)) / 100 if name == "prod" else \
        100.0 + 3.0 * rng.standard_normal((8, 512))
    x = x.astype(dtype)
    for axis in (None, 1):
        ours = getattr(jnp, name)(x, axis=axis)
        theirs = _jax(lambda: getattr(jjnp, name)(x, axis=axis))
        assert ours.dtype == theirs.dtype == dtype
        ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
        np.testing.assert_allclose(ours, theirs, rtol=2 * ml_dtypes.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_half_precision_cumsum_rounds_once(dtype, rng):
    # JAX's CPU cumsum accumulates bfloat16 in bfloat16 (off by several spacings here); fnx
    # accumulates in float32, so each entry is the exact running sum rounded once
    x = (100.0 + 3.0 * rng.standard_normal((4, 512))).astype(dtype)
    exact = np.cumsum(x.astype(np.float64), axis=1)
    ours = np.asarray(jnp.cumsum(x, axis=1), np.float64)
    # one rounding is off by at most half a spacing: eps / 2 relative
    spacing = ml_dtypes.finfo(dtype).eps * np.abs(exact)
    assert np.all(np.abs(ours - exact) <= spacing)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_softmax_and_logsumexp_match_jax_in_half_precision(dtype, rng):
    x = _draw(rng, (4, 300), dtype, scale=4.0)
    _close(nn.softmax(x), _jax(lambda: jax.nn.softmax(x)), BF16)
    _close(nn.log_softmax(x), _jax(lambda: jax.nn.log_softmax(x)), BF16)
    _close(nn.logsumexp(x, axis=-1), _jax(lambda: jax.nn.logsumexp(x, axis=-1)), BF16)
    # many equal logits: the normaliser is an accumulated sum, exact in float32
    assert float(jnp.sum(nn.softmax(jnp.zeros(3000, dtype)))) == pytest.approx(1.0, rel=1e-2)


def test_reductions_keep_float32_and_integers_unchanged(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    assert str(fnx.make_jaxpr(jnp.sum)(x)).count("convert_element_type") == 0
    assert str(fnx.make_jaxpr(jnp.cumsum)(x)).count("convert_element_type") == 0
    expr = str(fnx.make_jaxpr(jnp.mean)(x.astype(BF16)))
    assert "f32" in expr and "reduce_sum" in expr

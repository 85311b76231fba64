"""fnx.nn activations and softmax-family functions against float64 formulas, with gradient
checks, vmap and extreme inputs."""
import math

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
import fnx.nn as nn
from fnx.test_util import assert_close, check_grads


def _away_from_zero(x, eps=1e-3):
    """Keep points off the kink at 0 so finite differences see one branch."""
    return np.where(np.abs(x) < eps, eps + np.abs(x), x)


# --- float64 references, written from the definitions ---------------------------------------

def ref_sigmoid(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                    np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def ref_softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def ref_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def ref_gelu_exact(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def ref_logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def ref_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --- activations -----------------------------------------------------------------------------

def test_relu(rng):
    x = rng.standard_normal((4, 5)) * 3
    assert_close(nn.relu(jnp.asarray(x)), np.maximum(x, 0))
    assert nn.relu(jnp.asarray(x)).dtype == jnp.float64
    xi = np.array([-3, 0, 4], np.int32)
    out = nn.relu(jnp.asarray(xi))
    assert out.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(out), [0, 0, 4])
    assert float(fnx.grad(nn.relu)(0.0)) == 0.0      # JAX's convention at the kink
    assert float(fnx.grad(nn.relu)(2.0)) == 1.0
    check_grads(nn.relu, (_away_from_zero(x),), order=2)


@pytest.mark.parametrize("slope", [0.01, 0.2])
def test_leaky_relu(slope, rng):
    x = rng.standard_normal((4, 5)) * 3
    assert_close(nn.leaky_relu(jnp.asarray(x), slope), np.where(x >= 0, x, slope * x))
    if slope == 0.01:
        assert_close(nn.leaky_relu(jnp.asarray(x)), np.where(x >= 0, x, 0.01 * x))
    assert float(fnx.grad(lambda t: nn.leaky_relu(t, slope))(-1.5)) == pytest.approx(slope)
    assert float(fnx.grad(lambda t: nn.leaky_relu(t, slope))(1.5)) == 1.0
    check_grads(lambda t: nn.leaky_relu(t, slope), (_away_from_zero(x),), order=2)


@pytest.mark.parametrize("approximate", [True, False])
def test_gelu(approximate, rng):
    x = rng.standard_normal((4, 5)) * 3
    ref = ref_gelu_tanh if approximate else ref_gelu_exact
    assert_close(nn.gelu(jnp.asarray(x), approximate=approximate), ref(x), rtol=1e-12,
                 atol=1e-14)
    out32 = nn.gelu(jnp.asarray(x.astype(np.float32)), approximate=approximate)
    assert out32.dtype == jnp.float32
    assert_close(out32, ref(x.astype(np.float32).astype(np.float64)), rtol=1e-5, atol=1e-6)
    # the two forms differ, slightly
    assert not np.allclose(np.asarray(nn.gelu(jnp.asarray(x), approximate=True)),
                           ref_gelu_exact(x), rtol=1e-10, atol=0)
    check_grads(lambda t: nn.gelu(t, approximate=approximate), (x,), order=2)
    big = jnp.asarray(np.array([-50.0, 50.0, 0.0]))
    assert_close(nn.gelu(big, approximate=approximate), [0.0, 50.0, 0.0], atol=1e-12)
    g = fnx.vmap(fnx.grad(lambda t: nn.gelu(t, approximate=approximate)))(big)
    assert_close(g, [0.0, 1.0, 0.5], atol=1e-12)


def test_gelu_default_is_tanh_form(rng):
    x = rng.standard_normal(7)
    assert_close(nn.gelu(jnp.asarray(x)), ref_gelu_tanh(x))


def test_sigmoid(rng):
    x = rng.standard_normal((4, 5)) * 4
    assert_close(nn.sigmoid(jnp.asarray(x)), ref_sigmoid(x), rtol=1e-13)
    ext = jnp.asarray(np.array([-800.0, 800.0, 0.0]))
    assert_close(nn.sigmoid(ext), [0.0, 1.0, 0.5])
    g = fnx.vmap(fnx.grad(nn.sigmoid))(ext)
    assert np.all(np.isfinite(np.asarray(g)))
    assert_close(g, [0.0, 0.0, 0.25])
    check_grads(nn.sigmoid, (x,), order=2)


def test_silu(rng):
    x = rng.standard_normal((4, 5)) * 4
    assert_close(nn.silu(jnp.asarray(x)), x * ref_sigmoid(x), rtol=1e-13)
    assert_close(nn.swish(jnp.asarray(x)), x * ref_sigmoid(x), rtol=1e-13)
    s = ref_sigmoid(x)
    assert_close(fnx.vmap(fnx.vmap(fnx.grad(nn.silu)))(jnp.asarray(x)), s * (1 + x * (1 - s)),
                 rtol=1e-12)
    check_grads(nn.silu, (x,), order=2)


def test_softplus(rng):
    x = rng.standard_normal((4, 5)) * 5
    assert_close(nn.softplus(jnp.asarray(x)), ref_softplus(x), rtol=1e-13)
    ext = jnp.asarray(np.array([-1000.0, 1000.0, 0.0]))
    assert_close(nn.softplus(ext), [0.0, 1000.0, math.log(2)])
    g = fnx.vmap(fnx.grad(nn.softplus))(ext)
    assert_close(g, [0.0, 1.0, 0.5])
    assert_close(fnx.vmap(fnx.grad(nn.softplus))(jnp.asarray(x.ravel())), ref_sigmoid(x.ravel()),
                 rtol=1e-12)
    check_grads(nn.softplus, (x,), order=2)


# --- softmax family --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_log_softmax(axis, rng):
    x = rng.standard_normal((3, 4, 5)) * 3
    sm = nn.softmax(jnp.asarray(x), axis=axis)
    assert_close(sm, ref_softmax(x, axis), rtol=1e-12)
    assert_close(np.asarray(sm).sum(axis=axis), np.ones(np.delete(x.shape, axis)))
    assert_close(nn.log_softmax(jnp.asarray(x), axis=axis), np.log(ref_softmax(x, axis)),
                 rtol=1e-12, atol=1e-12)
    check_grads(lambda t: nn.softmax(t, axis=axis), (x,), order=2)
    check_grads(lambda t: nn.log_softmax(t, axis=axis), (x,), order=2)


def test_softmax_extreme_and_masked_inputs():
    big = jnp.asarray(np.array([1000.0, 1000.0, -1000.0, 999.0]))
    e = np.exp(np.array([0.0, 0.0, -2000.0, -1.0]))
    assert_close(nn.softmax(big), e / e.sum(), rtol=1e-12)
    xb = np.array([1000.0, 1000.0, -1000.0, 999.0])
    assert_close(nn.log_softmax(big), xb - ref_logsumexp(xb), rtol=1e-12)
    g = fnx.grad(lambda t: nn.log_softmax(t)[0])(big)
    assert np.all(np.isfinite(np.asarray(g)))
    # -inf entries (masks) get probability 0
    masked = jnp.asarray(np.array([-np.inf, 0.0, 1.0]))
    assert_close(nn.softmax(masked), np.concatenate([[0.0], ref_softmax(np.array([0.0, 1.0]))]))
    g = fnx.grad(lambda t: nn.softmax(t)[2])(masked)
    assert np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("masked", [False, True])
def test_softmax_backward_keeps_only_its_result_and_matches_jax(masked, rng, jax_x64_as_fnx):
    import jax
    x = rng.standard_normal((3, 4, 6))
    w = rng.standard_normal((3, 4, 6))
    where = rng.random((3, 4, 6)) > 0.3 if masked else None
    out, pullback = fnx.vjp(lambda t: nn.softmax(t, axis=1, where=where), jnp.asarray(x))
    # the residuals of x's size: the result alone (besides a mask and a fill of zeros), not
    # the exponentials, their sum and its square too
    kept = [r for r in fnx.tree_util.tree_leaves(pullback) if r.shape == x.shape
            and np.dtype(r.dtype) == np.float64 and np.any(np.asarray(r))]
    assert len(kept) == 1, [(r.shape, r.dtype) for r in fnx.tree_util.tree_leaves(pullback)]
    ref = jax.vjp(lambda t: jax.nn.softmax(t, axis=1, where=where), x)[1](w)[0]
    assert_close(pullback(jnp.asarray(w))[0], np.asarray(ref), rtol=1e-12, atol=1e-14)
    check_grads(lambda t: nn.softmax(t, axis=(1, 2), where=where), (x,), order=2)


def test_logsumexp(rng):
    x = rng.standard_normal((3, 4, 5)) * 3
    a = jnp.asarray(x)
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            assert_close(nn.logsumexp(a, axis=axis, keepdims=keepdims),
                         ref_logsumexp(x, axis=axis, keepdims=keepdims), rtol=1e-12)
    check_grads(nn.logsumexp, (x,), order=2)
    check_grads(lambda t: nn.logsumexp(t, axis=1), (x,), order=2)
    # with weights and a sign
    w = rng.uniform(0.5, 2.0, 5) * np.array([1, -1, 1, 1, -1])
    v = rng.standard_normal(5)
    out, sign = nn.logsumexp(jnp.asarray(v), b=jnp.asarray(w), return_sign=True)
    s = np.sum(w * np.exp(v))
    assert_close(out, np.log(abs(s)), rtol=1e-12)
    assert float(sign) == np.sign(s)


def test_logsumexp_huge_inputs_do_not_overflow(rng):
    x = np.array([1000.0, 1000.0, -1000.0, 999.0])
    out = nn.logsumexp(jnp.asarray(x))
    assert np.isfinite(float(out))
    assert_close(out, 1000.0 + np.log(2 + np.exp(-1.0)), rtol=1e-14)
    g = fnx.grad(nn.logsumexp)(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g)))
    assert_close(g, nn.softmax(jnp.asarray(x)), rtol=1e-12)
    assert_close(g, ref_softmax(x), rtol=1e-12)
    rows = np.full((2, 3), 1000.0) + rng.standard_normal((2, 3))
    assert_close(nn.logsumexp(jnp.asarray(rows), axis=1), ref_logsumexp(rows, axis=1),
                 rtol=1e-14)
    # float32 as well
    out32 = nn.logsumexp(jnp.asarray(x.astype(np.float32)))
    assert out32.dtype == jnp.float32 and np.isfinite(float(out32))
    g32 = fnx.grad(nn.logsumexp)(jnp.asarray(x.astype(np.float32)))
    assert np.all(np.isfinite(np.asarray(g32)))
    # the gradient of logsumexp is softmax everywhere, including the Hessian-vector product
    y = rng.standard_normal(6) * 50
    assert_close(fnx.grad(nn.logsumexp)(jnp.asarray(y)), ref_softmax(y), rtol=1e-12, atol=1e-15)
    p = ref_softmax(y)
    assert_close(fnx.hessian(nn.logsumexp)(jnp.asarray(y)), np.diag(p) - np.outer(p, p),
                 rtol=1e-10, atol=1e-15)


def test_one_hot(rng):
    labels = rng.integers(0, 5, size=7).astype(np.int32)
    out = nn.one_hot(jnp.asarray(labels), 5)
    assert out.dtype == fnx.core.dtypes.default_float     # JAX's jnp.float_: float64 with x64
    np.testing.assert_array_equal(np.asarray(out), np.eye(5, dtype=np.float32)[labels])
    # out-of-range labels give all-zero rows
    out = nn.one_hot(jnp.asarray(np.array([0, 5, -1, 2], np.int32)), 3)
    np.testing.assert_array_equal(np.asarray(out), [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]])
    lab2 = rng.integers(0, 3, size=(2, 4)).astype(np.int32)
    ref = np.eye(3)[lab2]
    np.testing.assert_array_equal(np.asarray(nn.one_hot(jnp.asarray(lab2), 3)), ref)
    np.testing.assert_array_equal(np.asarray(nn.one_hot(jnp.asarray(lab2), 3, axis=0)),
                                  np.moveaxis(ref, -1, 0))
    assert nn.one_hot(jnp.asarray(lab2), 3, dtype=jnp.int32).dtype == jnp.int32
    out = fnx.vmap(lambda l: nn.one_hot(l, 4))(jnp.asarray(lab2))
    np.testing.assert_array_equal(np.asarray(out), np.eye(4)[lab2])


def test_cross_entropy_from_parts(rng):
    """One-hot labels and log_softmax compose into a loss whose gradient is softmax - onehot."""
    logits = rng.standard_normal((6, 4)) * 3
    labels = rng.integers(0, 4, 6).astype(np.int32)

    def loss(z):
        return -jnp.mean(jnp.sum(nn.one_hot(jnp.asarray(labels), 4, dtype=z.dtype)
                                 * nn.log_softmax(z), axis=-1))
    ref = (ref_softmax(logits) - np.eye(4)[labels]) / 6
    assert_close(fnx.grad(loss)(jnp.asarray(logits)), ref, rtol=1e-12, atol=1e-15)
    check_grads(loss, (logits,), order=2)


@pytest.mark.parametrize("name", ["relu", "sigmoid", "silu", "softplus", "gelu", "softmax",
                                  "log_softmax", "logsumexp", "leaky_relu"])
def test_vmap_matches_stacking(name, rng):
    f = getattr(nn, name)
    x = rng.standard_normal((5, 3, 4)) * 2
    out = fnx.vmap(f)(jnp.asarray(x))
    ref = np.stack([np.asarray(f(jnp.asarray(xi))) for xi in x])
    assert_close(out, ref, rtol=1e-13)


def test_other_activations(rng):
    x = rng.standard_normal((3, 4)) * 2
    a = jnp.asarray(x)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    assert_close(nn.elu(a, 0.5), np.where(x > 0, x, 0.5 * np.expm1(x)))
    assert_close(nn.celu(a, 0.5), np.maximum(x, 0) + 0.5 * np.expm1(np.minimum(x, 0) / 0.5))
    assert_close(nn.selu(a), scale * np.where(x > 0, x, alpha * np.expm1(x)))
    assert_close(nn.relu6(a * 4), np.clip(x * 4, 0, 6))
    assert_close(nn.log_sigmoid(a), -np.logaddexp(0, -x))
    assert_close(nn.soft_sign(a), x / (1 + np.abs(x)))
    assert_close(nn.hard_tanh(a), np.clip(x, -1, 1))
    assert_close(nn.glu(a), x[:, :2] * ref_sigmoid(x[:, 2:]))
    assert_close(nn.standardize(a),
                 (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5))
    for f in (nn.elu, nn.celu, nn.selu, nn.log_sigmoid, nn.soft_sign, nn.glu, nn.standardize):
        check_grads(f, (x,), order=2)
    # JAX's conventions at the kinks: relu6 has derivative 0 at 0 and at 6
    assert [float(fnx.grad(nn.relu6)(v)) for v in (0.0, 3.0, 6.0, 7.0)] == [0.0, 1.0, 0.0, 0.0]
    assert_close(nn.log_sigmoid(jnp.asarray(np.array([-1000.0, 1000.0]))), [-1000.0, 0.0])


# --- the rest of jax.nn's activations -------------------------------------------------------

def _off_kinks(x, kinks, eps=1e-2):
    """Move points within ``eps`` of a kink to ``kink + 2 * eps``."""
    for k in kinks:
        x = np.where(np.abs(x - k) < eps, k + 2 * eps, x)
    return x


def test_identity_and_tanh(rng):
    x = rng.standard_normal((3, 4)) * 3
    assert_close(nn.identity(jnp.asarray(x)), x)
    assert_close(nn.tanh(jnp.asarray(x)), np.tanh(x))
    check_grads(nn.tanh, (x,), order=2)


def test_hard_sigmoid_and_hard_silu(rng):
    x = _off_kinks(rng.uniform(-6, 6, (50,)), (-3.0, 3.0))
    hs = np.clip(x + 3, 0, 6) / 6
    assert_close(nn.hard_sigmoid(jnp.asarray(x)), hs)
    assert_close(nn.hard_silu(jnp.asarray(x)), x * hs)
    assert nn.hard_swish is nn.hard_silu
    for f in (nn.hard_sigmoid, nn.hard_silu):
        check_grads(f, (x,), order=1)
    g = fnx.vmap(fnx.grad(nn.hard_sigmoid))(jnp.asarray(x))
    assert_close(g, np.where(np.abs(x) < 3, 1 / 6, 0.0))
    assert nn.hard_sigmoid(jnp.float32(0.0)).dtype == np.float32


def test_mish(rng):
    x = rng.standard_normal(40) * 4
    assert_close(nn.mish(jnp.asarray(x)), x * np.tanh(ref_softplus(x)), rtol=1e-12)
    check_grads(nn.mish, (x,), order=2)
    # large inputs neither overflow nor give NaN gradients
    big = jnp.asarray(np.array([-200.0, 200.0]))
    assert_close(nn.mish(big), [0.0, 200.0], atol=1e-80)
    assert np.all(np.isfinite(np.asarray(fnx.vmap(fnx.grad(nn.mish))(big))))


@pytest.mark.parametrize("b", [4, 1.0, 0.25])
def test_squareplus(b, rng):
    x = rng.standard_normal(30) * 3
    assert_close(nn.squareplus(jnp.asarray(x), b), (x + np.sqrt(x * x + b)) / 2)
    check_grads(lambda v: nn.squareplus(v, b), (x,), order=2)
    if b == 4:
        assert_close(nn.squareplus(jnp.asarray(x)), (x + np.sqrt(x * x + 4)) / 2)


def test_sparse_plus_and_sparse_sigmoid(rng):
    x = _off_kinks(rng.uniform(-3, 3, (60,)), (-1.0, 1.0))
    plus = np.where(x <= -1, 0.0, np.where(x >= 1, x, (x + 1) ** 2 / 4))
    sig = np.clip((x + 1) / 2, 0, 1)
    assert_close(nn.sparse_plus(jnp.asarray(x)), plus)
    assert_close(nn.sparse_sigmoid(jnp.asarray(x)), sig)
    check_grads(nn.sparse_plus, (x,), order=1)
    check_grads(nn.sparse_sigmoid, (x,), order=1)
    # sparse_sigmoid is sparse_plus's derivative
    assert_close(fnx.vmap(fnx.grad(nn.sparse_plus))(jnp.asarray(x)), sig)


def test_log1mexp(rng):
    x = np.concatenate([rng.uniform(1e-6, 0.69, 20), rng.uniform(0.7, 30, 20), [1e-10, 50.0]])
    ref = np.log(-np.expm1(-x))
    assert_close(nn.log1mexp(jnp.asarray(x)), ref, rtol=1e-12)
    check_grads(nn.log1mexp, (x[:40],), order=2, rtol=1e-4)
    assert_close(fnx.vmap(fnx.grad(nn.log1mexp))(jnp.asarray(x)), 1 / np.expm1(x), rtol=1e-10)


def test_logmeanexp(rng):
    x = rng.standard_normal((3, 5)) * 3
    assert_close(nn.logmeanexp(jnp.asarray(x)), ref_logsumexp(x) - np.log(15))
    assert_close(nn.logmeanexp(jnp.asarray(x), axis=1), ref_logsumexp(x, axis=1) - np.log(5))
    assert_close(nn.logmeanexp(jnp.asarray(x), axis=0, keepdims=True),
                 ref_logsumexp(x, axis=0, keepdims=True) - np.log(3))
    where = rng.random((3, 5)) < 0.6
    where[:, 0] = True
    ref = np.array([np.log(np.mean(np.exp(row[w]))) for row, w in zip(x, where)])
    assert_close(nn.logmeanexp(jnp.asarray(x), axis=1, where=jnp.asarray(where)), ref,
                 rtol=1e-12)
    check_grads(lambda v: nn.logmeanexp(v, axis=1), (x,), order=2)
    huge = jnp.asarray(np.array([1000.0, 1000.0]))
    assert_close(nn.logmeanexp(huge), 1000.0)


# --- dot_product_attention ------------------------------------------------------------------

def ref_attention(q, k, v, bias=None, mask=None, scale=None, is_causal=False):
    """Float64, one (batch, head) pair at a time; query head n reads key/value head
    n // (N // K)."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(H) if scale is None else scale
    bias = np.zeros((1, 1, 1, 1)) if bias is None else bias
    mask = np.ones((1, 1, 1, 1), bool) if mask is None else mask
    bias = np.broadcast_to(bias, (B, N, T, S))
    mask = np.broadcast_to(mask, (B, N, T, S))
    out = np.zeros((B, T, N, H))
    for b in range(B):
        for n in range(N):
            kh = n // (N // K)
            s = q[b, :, n] @ k[b, :, kh].T * scale + bias[b, n]
            keep = mask[b, n].copy()
            if is_causal:
                keep &= np.tril(np.ones((T, S), bool))
            s = np.where(keep, s, -0.7 * np.finfo(np.float64).max)
            p = np.exp(s - s.max(-1, keepdims=True))
            out[b, :, n] = (p / p.sum(-1, keepdims=True)) @ v[b, :, kh]
    return out


def _qkv(rng, B=2, T=3, S=4, N=4, K=4, H=5):
    return (rng.standard_normal((B, T, N, H)), rng.standard_normal((B, S, K, H)),
            rng.standard_normal((B, S, K, H)))


def _attn(*args, **kwargs):
    return nn.dot_product_attention(*map(jnp.asarray, args), **kwargs)


def test_attention_plain_and_scaled(rng):
    q, k, v = _qkv(rng)
    assert_close(_attn(q, k, v), ref_attention(q, k, v))
    assert_close(_attn(q, k, v, scale=0.3), ref_attention(q, k, v, scale=0.3))


def test_attention_bias_mask_causal(rng):
    q, k, v = _qkv(rng, T=4, S=6)
    bias = rng.standard_normal((1, 4, 1, 6))
    mask = rng.random((2, 1, 4, 6)) < 0.6
    mask[..., 0] = True
    for kwargs in ({"bias": bias}, {"mask": mask}, {"is_causal": True},
                   {"bias": bias, "mask": mask, "is_causal": True}):
        ref = ref_attention(q, k, v, **kwargs)
        args = {n: jnp.asarray(a) if not isinstance(a, bool) else a for n, a in kwargs.items()}
        assert_close(_attn(q, k, v, **args), ref, rtol=1e-11, atol=1e-12)


def test_attention_causal_differs_from_plain(rng):
    q, k, v = _qkv(rng, T=3, S=3)
    causal = np.asarray(_attn(q, k, v, is_causal=True))
    # the first query sees only the first key, so its output is that value row
    assert_close(causal[:, 0], v[:, 0])
    assert not np.allclose(causal, np.asarray(_attn(q, k, v)))


def test_attention_grouped_kv_heads(rng):
    q, k, v = _qkv(rng, N=6, K=2)
    assert_close(_attn(q, k, v, is_causal=True), ref_attention(q, k, v, is_causal=True))
    q1, k1, v1 = _qkv(rng, N=3, K=1)
    assert_close(_attn(q1, k1, v1), ref_attention(q1, k1, v1))
    with pytest.raises(ValueError):
        _attn(*_qkv(rng, N=3, K=2))


def test_attention_without_batch_axis(rng):
    q, k, v = _qkv(rng, B=1)
    out = _attn(q[0], k[0], v[0], is_causal=True)
    assert out.shape == (3, 4, 5)
    assert_close(out, ref_attention(q, k, v, is_causal=True)[0])


def test_attention_sequence_lengths_and_window(rng):
    q, k, v = _qkv(rng, T=5, S=5)
    q_len, kv_len = np.array([3, 5]), np.array([2, 4])
    keep = (np.arange(5)[None, :] < kv_len[:, None])[:, None, None, :]
    keep = keep & (np.arange(5)[None, :, None] < q_len[:, None, None])[:, None]
    ref = ref_attention(q, k, v, mask=keep)
    ref *= (np.arange(5)[None, :] < q_len[:, None])[:, :, None, None]
    out = _attn(q, k, v, query_seq_lengths=jnp.asarray(q_len),
                key_value_seq_lengths=jnp.asarray(kv_len))
    assert_close(out, ref, rtol=1e-11)
    t, s = np.arange(5)[:, None], np.arange(5)[None, :]
    window = (s >= t - 1) & (s <= t + 2)
    assert_close(_attn(q, k, v, local_window_size=(1, 2)), ref_attention(q, k, v, mask=window))


def test_attention_fully_masked_row_averages_values(rng):
    q, k, v = _qkv(rng, T=2, S=3)
    mask = np.ones((1, 1, 2, 3), bool)
    mask[..., 1, :] = False
    out = np.asarray(_attn(q, k, v, mask=jnp.asarray(mask)))
    assert np.all(np.isfinite(out))
    assert_close(out[:, 1], v.mean(axis=1))


def test_attention_float32(rng):
    q, k, v = (a.astype(np.float32) for a in _qkv(rng))
    out = _attn(q, k, v, is_causal=True)
    assert out.dtype == np.float32
    assert_close(out, ref_attention(q.astype(np.float64), k.astype(np.float64),
                                    v.astype(np.float64), is_causal=True), rtol=1e-5, atol=1e-6)


def test_attention_grad(rng):
    q, k, v = _qkv(rng, B=1, T=3, S=3, N=2, K=1, H=2)
    bias = rng.standard_normal((1, 2, 3, 3))
    mask = np.tril(np.ones((3, 3), bool)) | np.eye(3, k=1, dtype=bool)

    def f(q, k, v, bias):
        return nn.dot_product_attention(q, k, v, bias, jnp.asarray(mask), is_causal=False)
    check_grads(f, (q, k, v, bias), order=1)
    check_grads(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
                (q, k, v), order=2, atol=1e-4, rtol=1e-4)


def test_attention_vmap_and_jit(rng):
    q, k, v = (rng.standard_normal((3,) + a.shape) for a in _qkv(rng, B=2))
    f = lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    out = fnx.vmap(f)(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v))
    ref = np.stack([ref_attention(*t, is_causal=True) for t in zip(q, k, v)])
    assert_close(out, ref, rtol=1e-11)
    assert_close(fnx.jit(f)(*map(jnp.asarray, (q[0], k[0], v[0]))), ref[0], rtol=1e-11)


def test_initializer_protocol_annotates_every_initializer():
    from typing import get_type_hints

    from fnx.nn.initializers import Initializer, glorot_normal

    def make(init: Initializer = glorot_normal()) -> Initializer:
        return init
    assert get_type_hints(make)["init"] is Initializer
    w = make()(fnx.random.key(0), (3, 2))
    assert w.shape == (3, 2) and callable(Initializer.__call__)

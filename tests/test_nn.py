"""fnx.nn activations and softmax-family functions against float64 formulas, with gradient
checks, vmap and extreme inputs."""
import math
import zlib

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
import fnx.nn as nn
from fnx.test_util import check_grads


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def assert_close(actual, expected, rtol=1e-12, atol=1e-12):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol)


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
    assert out.dtype == jnp.float32
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

"""fnx.nn modules, initialisers and losses: forward passes against float64 NumPy references,
gradients by check_grads, and modules as pytrees through grad, vmap and jit."""
import math

import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
import fnx.random as random
from fnx import tree_util
from fnx.test_util import check_grads

rng = np.random.default_rng(0)


def _np(x):
    return np.asarray(x, np.float64)


def _randomize(module, seed=0):
    """The module with every parameter replaced by fresh float64 normal values (no zero
    biases, no unit scales), so references test every term."""
    r = np.random.default_rng(seed)
    leaves, tree = tree_util.tree_flatten(module)
    return tree_util.tree_unflatten(tree, [r.standard_normal(np.shape(x)) for x in leaves])


def _with_params(module, leaves):
    return tree_util.tree_unflatten(tree_util.tree_structure(module), list(leaves))


# ---------------------------------------------------------------------------------------------
# NumPy references


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _conv_ref(x, w, stride, padding, dilation):
    (sh, sw), ((pt, pb), (pl, pr)), (dh, dw) = stride, padding, dilation
    x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    ho = (h - (kh - 1) * dh - 1) // sh + 1
    wo = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            rows = slice(i * sh, i * sh + (kh - 1) * dh + 1, dh)
            cols = slice(j * sw, j * sw + (kw - 1) * dw + 1, dw)
            patch = x[:, :, rows, cols]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def _mha_ref(m, x, mask=None):
    def lin(layer, v):
        return v @ _np(layer.weight) + _np(layer.bias)
    h, e = m.num_heads, m.embed_dim
    d = e // h

    def heads(v):
        return np.swapaxes(v.reshape(v.shape[:-1] + (h, d)), -2, -3)
    q, k, v = heads(lin(m.query, x)), heads(lin(m.key, x)), heads(lin(m.value, x))
    logits = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)
    if mask is not None:
        logits = np.where(mask, logits, -1e300)
    att = np.swapaxes(_softmax(logits) @ v, -2, -3)
    return lin(m.out, att.reshape(att.shape[:-2] + (e,)))


# ---------------------------------------------------------------------------------------------
# Forward passes


def test_linear_matches_numpy():
    layer = _randomize(nn.Linear(random.key(0), 5, 3), 1)
    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(_np(layer(x)), x @ _np(layer.weight) + _np(layer.bias),
                               rtol=1e-12)
    assert nn.Linear(random.key(0), 5, 3, use_bias=False)(x.astype(np.float32)).shape == (4, 3)


@pytest.mark.x32
def test_linear_default_init():
    layer = nn.Linear(random.key(0), 400, 300)
    w = _np(layer.weight)
    assert layer.weight.dtype == np.float32 and np.all(_np(layer.bias) == 0)
    # LeCun normal: variance 1 / fan_in
    assert abs(w.var() * 400 - 1) < 0.05 and abs(w.mean()) < 0.01


def test_mlp_matches_numpy():
    mlp = _randomize(nn.MLP(random.key(0), [6, 8, 7, 3], activation=jnp.tanh), 2)
    x = rng.standard_normal((5, 6))
    h = x
    for i, layer in enumerate(mlp.layers):
        h = h @ _np(layer.weight) + _np(layer.bias)
        if i < 2:
            h = np.tanh(h)
    np.testing.assert_allclose(_np(mlp(x)), h, rtol=1e-10)


def test_layernorm_matches_numpy():
    ln = _randomize(nn.LayerNorm((3, 4), eps=1e-3), 3)
    x = rng.standard_normal((2, 3, 4)) * 3 + 1
    mean = x.mean((1, 2), keepdims=True)
    var = x.var((1, 2), keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-3) * _np(ln.weight) + _np(ln.bias)
    np.testing.assert_allclose(_np(ln(x)), ref, rtol=1e-10)
    with pytest.raises(ValueError, match="LayerNorm"):
        ln(np.ones((2, 4, 3)))


def test_embedding_matches_numpy():
    emb = _randomize(nn.Embedding(random.key(0), 10, 4), 4)
    ids = rng.integers(0, 10, (3, 5)).astype(np.int32)
    np.testing.assert_array_equal(_np(emb(ids)), _np(emb.weight)[ids])


def test_dropout():
    drop = nn.Dropout(0.3)
    x = rng.uniform(1.0, 2.0, (200, 500))
    y = _np(drop(x, key=random.key(0)))
    zeros = y == 0
    assert abs(zeros.mean() - 0.3) < 0.005
    np.testing.assert_allclose(y[~zeros], x[~zeros] / 0.7, rtol=1e-12)
    np.testing.assert_array_equal(_np(drop(x, key=random.key(0))), y)
    assert not np.array_equal(_np(drop(x, key=random.key(1))), y)
    np.testing.assert_array_equal(_np(drop(x)), x)
    np.testing.assert_array_equal(_np(drop(x, key=random.key(0), deterministic=True)), x)
    with pytest.raises(ValueError):
        nn.Dropout(1.0)


def _same_padding(size, k, stride, dilation):
    """SAME: ceil(size / stride) outputs, the odd element of padding at the end."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


@pytest.mark.parametrize("stride, padding, dilation", [
    (1, 0, 1), (2, 1, 1), ((1, 2), ((1, 0), (2, 1)), 1), (1, "SAME", 2), (2, "SAME", 1),
    (1, "VALID", (2, 1)),
])
def test_conv2d_matches_numpy(stride, padding, dilation):
    conv = _randomize(nn.Conv2d(random.key(0), 3, 4, (3, 2), stride, padding, dilation), 5)
    x = rng.standard_normal((2, 3, 9, 8))
    out = _np(conv(x))
    s, d = nn.modules._pair(stride, ""), nn.modules._pair(dilation, "")
    if isinstance(padding, str):
        pad = ((0, 0), (0, 0)) if padding == "VALID" else (
            _same_padding(9, 3, s[0], d[0]), _same_padding(8, 2, s[1], d[1]))
    else:
        pad = nn.modules._padding_pairs(padding)
    ref = _conv_ref(x, _np(conv.weight), s, pad, d) + _np(conv.bias)[None, :, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    if padding == "SAME":
        assert out.shape[2:] == (-(-9 // s[0]), -(-8 // s[1]))
    np.testing.assert_allclose(_np(conv(x[0])), ref[0], rtol=1e-10, atol=1e-12)


def test_multi_head_attention_matches_numpy():
    mha = _randomize(nn.MultiHeadAttention(random.key(0), 8, 2), 6)
    x = rng.standard_normal((3, 5, 8))
    np.testing.assert_allclose(_np(mha(x)), _mha_ref(mha, x), rtol=1e-10, atol=1e-12)
    causal = np.tril(np.ones((5, 5), bool))
    np.testing.assert_allclose(_np(mha(x, mask=causal)), _mha_ref(mha, x, causal), rtol=1e-10,
                               atol=1e-12)
    # a causal mask makes the first position depend on itself only
    x2 = x.copy()
    x2[:, 1:] += 1.0
    np.testing.assert_allclose(_np(mha(x2, mask=causal))[:, 0], _np(mha(x, mask=causal))[:, 0],
                               rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Gradients


def _check_module_grads(module, x, order=1, atol=1e-5, **kw):
    leaves = tree_util.tree_leaves(module)

    def f(*args):
        *params, inp = args
        return _with_params(module, params)(inp, **kw)
    check_grads(f, leaves + [x], order=order, atol=atol, rtol=1e-5)


def test_module_gradients():
    r = np.random.default_rng(1)
    _check_module_grads(_randomize(nn.Linear(random.key(0), 4, 3), 7), r.standard_normal((2, 4)),
                        order=2)
    _check_module_grads(_randomize(nn.MLP(random.key(0), [3, 5, 2], activation=jnp.tanh), 8),
                        r.standard_normal((4, 3)), order=2)
    _check_module_grads(_randomize(nn.LayerNorm(5), 9), r.standard_normal((3, 5)), order=2)
    _check_module_grads(_randomize(nn.Conv2d(random.key(0), 2, 3, 3, 2, 1), 10),
                        r.standard_normal((1, 2, 5, 5)))
    _check_module_grads(_randomize(nn.MultiHeadAttention(random.key(0), 4, 2), 11),
                        r.standard_normal((3, 4)), mask=np.tril(np.ones((3, 3), bool)))


def test_embedding_gradient_scatters_rows():
    emb = _randomize(nn.Embedding(random.key(0), 5, 3), 12)
    ids = np.array([1, 3, 1], np.int32)
    g = fnx.grad(lambda m: jnp.sum(m(ids) * np.arange(3.0)))(emb)
    expected = np.zeros((5, 3))
    np.add.at(expected, ids, np.arange(3.0))
    np.testing.assert_allclose(_np(g.weight), expected)


def test_dropout_gradient_is_the_mask():
    drop = nn.Dropout(0.5)
    x = rng.uniform(1.0, 2.0, 100)
    g = _np(fnx.grad(lambda x: jnp.sum(drop(x, key=random.key(3))))(x))
    kept = _np(drop(x, key=random.key(3))) != 0
    np.testing.assert_allclose(g, np.where(kept, 2.0, 0.0))


# ---------------------------------------------------------------------------------------------
# Modules as pytrees


def test_module_is_a_pytree_with_static_config():
    mlp = nn.MLP(random.key(0), [4, 6, 2])
    leaves, tree = tree_util.tree_flatten(mlp)
    assert len(leaves) == 4
    rebuilt = tree_util.tree_unflatten(tree, leaves)
    assert isinstance(rebuilt, nn.MLP) and rebuilt.activation is nn.relu
    assert rebuilt.layers[0].in_features == 4
    other = nn.MLP(random.key(0), [4, 6, 2], activation=jnp.tanh)
    assert tree_util.tree_structure(other) != tree
    doubled = tree_util.tree_map(lambda p: p * 2, mlp)
    np.testing.assert_allclose(_np(doubled.layers[1].bias), 2 * _np(mlp.layers[1].bias))
    assert "Linear(in_features=4" in repr(mlp)
    no_bias = nn.Linear(random.key(0), 3, 2, use_bias=False)
    assert len(tree_util.tree_leaves(no_bias)) == 1


def test_grad_of_a_module_is_a_module():
    mlp = _randomize(nn.MLP(random.key(0), [3, 4, 2]), 13)
    x = rng.standard_normal((5, 3))
    y = np.array([0, 1, 1, 0, 1], np.int32)

    def loss(m):
        return nn.softmax_cross_entropy(m(x), y).mean()
    g = fnx.grad(loss)(mlp)
    assert isinstance(g, nn.MLP) and g.layers[0].weight.shape == (3, 4)
    # finite differences on one weight entry
    w = _np(mlp.layers[0].weight)
    eps = 1e-6
    bumped = [w.copy(), w.copy()]
    bumped[0][1, 2] += eps
    bumped[1][1, 2] -= eps
    index = next(i for i, leaf in enumerate(tree_util.tree_leaves(mlp))
                 if leaf is mlp.layers[0].weight)
    vals = []
    for wb in bumped:
        leaves = tree_util.tree_leaves(mlp)
        leaves[index] = wb
        vals.append(float(loss(_with_params(mlp, leaves))))
    np.testing.assert_allclose(_np(g.layers[0].weight)[1, 2], (vals[0] - vals[1]) / (2 * eps),
                               rtol=1e-6)


def test_per_example_grads_of_a_module_with_vmap():
    layer = _randomize(nn.Linear(random.key(0), 3, 2), 14)
    xs = rng.standard_normal((4, 3))
    per_example = fnx.vmap(fnx.grad(lambda m, x: jnp.sum(m(x) ** 2)), in_axes=(None, 0))(layer, xs)
    assert isinstance(per_example, nn.Linear) and per_example.weight.shape == (4, 3, 2)
    for i in range(4):
        gi = fnx.grad(lambda m: jnp.sum(m(xs[i]) ** 2))(layer)
        np.testing.assert_allclose(_np(per_example.weight[i]), _np(gi.weight), rtol=1e-12)


def test_module_through_jit():
    jit = getattr(fnx, "jit", None)
    if jit is None:
        pytest.skip("fnx.jit is not available")
    mlp = nn.MLP(random.key(0), [3, 4, 2])
    x = rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(_np(jit(lambda m, x: m(x))(mlp, x)), _np(mlp(x)), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Initialisers


@pytest.mark.parametrize("name, variance", [
    ("glorot_uniform", lambda fi, fo: 2 / (fi + fo)),
    ("glorot_normal", lambda fi, fo: 2 / (fi + fo)),
    ("xavier_uniform", lambda fi, fo: 2 / (fi + fo)), ("he_uniform", lambda fi, fo: 2 / fi),
    ("he_normal", lambda fi, fo: 2 / fi), ("kaiming_normal", lambda fi, fo: 2 / fi),
    ("lecun_uniform", lambda fi, fo: 1 / fi), ("lecun_normal", lambda fi, fo: 1 / fi),
])
def test_variance_scaling_initializers(name, variance):
    w = _np(getattr(nn.initializers, name)()(random.key(0), (300, 200)))
    assert abs(w.var() / variance(300, 200) - 1) < 0.03
    assert abs(w.mean()) < 0.01 * math.sqrt(variance(300, 200)) * 10
    if "uniform" in name:
        assert np.abs(w).max() <= math.sqrt(3 * variance(300, 200))
    else:   # truncated at two standard deviations of the untruncated normal
        assert np.abs(w).max() <= 2 * math.sqrt(variance(300, 200)) / 0.87962566103423978 + 1e-6


def test_conv_fans_and_other_initializers():
    w = _np(nn.initializers.he_normal(in_axis=1, out_axis=0)(random.key(1), (64, 32, 3, 3)))
    assert abs(w.var() * 32 * 9 / 2 - 1) < 0.05
    assert np.all(_np(nn.initializers.zeros(None, (2, 3))) == 0)
    assert np.all(_np(nn.initializers.ones(None, (2,), jnp.float64)) == 1)
    assert np.all(_np(nn.initializers.constant(0.5)(None, (3,))) == 0.5)
    n = _np(nn.initializers.normal(0.1)(random.key(0), (100_000,)))
    assert abs(n.std() - 0.1) < 0.002
    t = _np(nn.initializers.truncated_normal(0.1)(random.key(0), (10_000,)))
    assert np.abs(t).max() < 0.2
    q = _np(nn.initializers.orthogonal()(random.key(0), (6, 4), jnp.float64))
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-12)
    q = _np(nn.initializers.orthogonal(2.0)(random.key(0), (3, 5), jnp.float64))
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(3), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Losses


def test_softmax_cross_entropy():
    logits = rng.standard_normal((6, 4)) * 3
    labels = rng.integers(0, 4, 6).astype(np.int32)
    log_probs = np.log(_softmax(logits))
    ref = -log_probs[np.arange(6), labels]
    np.testing.assert_allclose(_np(nn.softmax_cross_entropy(logits, labels)), ref, rtol=1e-12)
    onehot = np.eye(4)[labels]
    np.testing.assert_allclose(_np(nn.softmax_cross_entropy(logits, onehot)), ref, rtol=1e-12)
    soft = _softmax(rng.standard_normal((6, 4)))
    np.testing.assert_allclose(_np(nn.softmax_cross_entropy(logits, soft)),
                               -(soft * log_probs).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(float(nn.softmax_cross_entropy(logits, labels, reduction="mean")),
                               ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(
        _np(nn.softmax_cross_entropy(logits.T, labels, axis=0)), ref, rtol=1e-12)
    huge = nn.softmax_cross_entropy(np.array([[1e4, 0.0], [0.0, 1e4]], np.float32), [1, 1])
    np.testing.assert_allclose(_np(huge), [1e4, 0.0])
    check_grads(lambda l: nn.softmax_cross_entropy(l, labels), (logits,), order=2)
    check_grads(lambda l, s: nn.softmax_cross_entropy(l, s), (logits, soft), order=2)


def test_binary_cross_entropy():
    logits = rng.standard_normal(10) * 4
    labels = rng.uniform(0, 1, 10)
    p = 1 / (1 + np.exp(-logits))
    ref = -(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    np.testing.assert_allclose(_np(nn.binary_cross_entropy(logits, labels)), ref, rtol=1e-10)
    big = nn.binary_cross_entropy(np.array([1e4, -1e4, 1e4], np.float32), np.array([0.0, 1.0, 1.0]))
    np.testing.assert_allclose(_np(big), [1e4, 1e4, 0.0])
    check_grads(nn.binary_cross_entropy, (logits, labels), order=2)


def test_mse():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(float(nn.mse(a, b)), np.mean((a - b) ** 2), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.mse(a, b, reduction="none")), (a - b) ** 2, rtol=1e-12)
    np.testing.assert_allclose(float(nn.mse(a, b, reduction="sum")), np.sum((a - b) ** 2),
                               rtol=1e-12)
    check_grads(nn.mse, (a, b), order=2)
    with pytest.raises(ValueError, match="reduction"):
        nn.mse(a, b, reduction="max")

"""Training and solve programs fnx was not tuned for, beside JAX and PyTorch.

    PYTHONPATH=. python3 benchmarks/workloads.py [--quick] [--cpu] [--precision fp32|tf32|both]
        [--frameworks fnx,jax,torch] [--json PATH] [gru ridge lstsq conv ... logreg]

Programs (the whole step jitted in fnx and JAX; the same math from the same initial values,
float32, in every framework):

- ``gru``: a character-level GRU language model: embedding lookup, GRU over time by
  ``lax.scan`` (PyTorch's gate convention, input projections of all steps as one product before
  the scan), linear readout, softmax cross-entropy on the next token, Adam. PyTorch runs the
  same cell math in a Python loop over time steps (explicit products, not ``torch.nn.GRU``).
- ``ridge``: ridge regression for several regularisation values at once: the Gram matrix
  ``X^T X``, a batch of ``X^T X + lam I`` factored by ``linalg.cholesky``, two batched
  ``scipy.linalg.solve_triangular`` calls, and the objective of each solution.
- ``lstsq``: ``linalg.lstsq`` (SVD in fnx and JAX; PyTorch's CUDA driver is QR, ``gels``) of the
  same ``X`` and right-hand sides, and the mean squared residual.
- ``conv``: a small conv net (three 3x3 ``lax.conv_general_dilated`` NHWC convolutions, ReLU,
  2x2 max pooling by ``lax.reduce_window``, a dense classifier), softmax cross-entropy, SGD with
  momentum (PyTorch's form: ``v = mu v + g; p -= lr v``).
- ``mlp``: ``mlp_train.py``'s step (its ``CONFIGS`` and ``_data``, the small config): ReLU
  layers, softmax cross-entropy, SGD.
- ``transformer``: a decoder-only transformer LM (pre-LayerNorm, causal attention as einsum +
  mask + softmax, GELU MLP, AdamW on every parameter).
- ``perex``: DP-SGD-style per-example gradients: ``vmap(value_and_grad(loss))`` over the batch
  of a ReLU MLP (784-512-512-10, batch 256), each example's gradient clipped to norm 1 inside
  the vmap, averaged, Gaussian noise from ``random.normal`` added, SGD. PyTorch runs
  ``torch.func.vmap(grad_and_value)``; its noise comes from its own generator.
- ``kmeans``: one Lloyd iteration per step (65536 points x 64 dims, 256 centroids): distances
  by ``||x||^2 + ||c||^2 - 2 x.c``, argmin, ``ops.segment_sum`` of the points and of their
  counts, the new centroids carried to the next step (PyTorch: ``index_add_`` and
  ``bincount``). The loss is the mean squared distance to the nearest centroid.
- ``lstm``: an LSTM language model over ``lax.scan`` (the four gates of a step from one product
  of ``[x_t, h]``), softmax cross-entropy on the next token, gradients clipped by their global
  norm (``clip_grad_norm_`` in PyTorch), Adam.
- ``vae``: a variational autoencoder on 784-dim binary images: ReLU encoder to a Gaussian's
  mean and log-variance, a sample by ``random.normal`` from a key split each step and carried
  in the state, ReLU decoder to Bernoulli logits (log-likelihood by ``nn.log_sigmoid`` and
  ``nn.softplus``; the error of the decoded image ``sigmoid(logits)`` is kept in the state),
  KL term, Adam. PyTorch's noise comes from its own generator.
- ``resnet``: a small residual conv net (3x3 convolutions, strided where a block halves the
  resolution, 1x1 projections on changed shortcuts), each convolution followed by batch
  normalisation in training mode (``jnp.mean``/``jnp.var`` over N, H, W; running statistics
  carried), ReLU, global average pooling, a dense head, softmax cross-entropy, SGD with momentum
  and weight decay.
- ``attention``: a transformer encoder classifier over padded sequences:
  ``nn.dot_product_attention`` with a padding mask from the lengths (PyTorch:
  ``scaled_dot_product_attention``), post-LayerNorm written out, exact GELU, masked mean
  pooling, AdamW.
- ``node``: a neural ODE: a tanh MLP vector field (that also sees the time) integrated by 20
  fixed RK4 steps of ``lax.fori_loop``, mean squared error of the final state, the gradient
  through the loop, SGD.
- ``newton``: Newton's method for ``x + a tanh(W x) = b`` per example (4096 systems of 16):
  ``lax.while_loop`` to a tolerance, the Jacobian by ``jacfwd``, the step by ``linalg.solve``,
  halved by ``lax.cond`` where it does not reduce the residual, all under ``vmap``; no training
  (the result is the mean residual norm). No PyTorch version (a blank cell).
- ``embed``: a bag-of-embeddings text classifier: ``jnp.take`` from a 32k-word table, the mean
  per text by ``ops.segment_sum`` (padding ids left out), a ReLU layer with dropout by
  ``random.bernoulli``, cross-entropy against label-smoothed ``one_hot`` targets, Adam (the
  table's gradient is a scatter-add). PyTorch's dropout mask comes from its own generator.
- ``logreg``: multinomial logistic regression: 10 full-batch gradient descent steps inside one
  ``lax.scan`` per call on ``logsumexp`` less the label's logit (``nn.one_hot``) plus an L2
  penalty; the loss is the last inner step's.

Each program is written once, ``build(L, cfg)``, against a namespace ``L`` holding ``jnp``,
``lax``, ``nn``, ``jax`` (the top-level module), ``segment_sum`` and ``solve_triangular``, and
runs unchanged with fnx or JAX; PyTorch has its own version of each but ``newton``. Optimizers
are written out (Adam, AdamW, SGD with momentum) in fnx/JAX and are ``torch.optim``'s (the same
formulas) in PyTorch.

"fp32" = full float32 products (fnx and JAX ``default_matmul_precision`` "highest", PyTorch
``allow_tf32 = False`` for matmuls and cuDNN); "tf32" = TF32 tensor cores ("tensorfloat32";
PyTorch ``allow_tf32 = True``). Each (program, precision, framework) runs in its own process,
one after another, with empty fnx and CuPy kernel caches (fresh ``FNX_CACHE_DIR`` and
``CUPY_CACHE_DIR``) and no JAX persistent cache, so first calls are cold. Each child reports:
the step time (µs, median of repeats after a warm-up; steps per repeat are picked from the
warm-up so that a slow step still finishes quickly), the first call (trace + compile + run) and,
separately, the second call (where fnx captures its CUDA graph), the losses of the first three
calls, for fnx how the compiled program runs (``graph``: replayed as one CUDA graph, or the
reason from its ``describe()``) and its launch count, and device memory after the timed steps:
for fnx the bytes its CuPy pools hold (the default pool and its captured graphs' arenas: held, not
just in use, so at least its peak in use), for JAX its allocator's ``peak_bytes_in_use``, for
PyTorch ``torch.cuda.max_memory_allocated``. A child catches its own errors (an error
cell) and has a time limit, and the whole run has a time budget (later cells are then skipped).

``--cpu`` runs fnx (``FNX_PLATFORM=cpu``), JAX (``JAX_PLATFORMS=cpu``) and PyTorch on the CPU
with tiny sizes: a smoke test of every program, with matching losses, on a machine without a GPU.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FRAMEWORKS = ("fnx", "jax", "torch")
PRECISIONS = ("fp32", "tf32")


# ---------------------------------------------------------------------------------------------
# Shared pieces, written against L (fnx or JAX)

def _cross_entropy(L, logits, labels):
    """Mean softmax cross-entropy of integer ``labels`` over every leading position."""
    logp = L.nn.log_softmax(logits, axis=-1)
    return -L.jnp.mean(L.jnp.take_along_axis(logp, labels[..., None], axis=-1))


def _adam(L, params, grads, opt, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    """Adam (AdamW with ``wd``: decoupled decay ``p -= lr wd p``), as torch.optim writes it."""
    jnp, tm = L.jnp, L.tree_map
    t = opt["t"] + 1.0
    m = tm(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
    v = tm(lambda v, g: b2 * v + (1 - b2) * (g * g), opt["v"], grads)
    c1 = 1 - jnp.power(b1, t)
    c2 = 1 - jnp.power(b2, t)
    params = tm(lambda p, m, v: p * (1 - lr * wd) - lr * (m / c1) / (jnp.sqrt(v / c2) + eps),
                params, m, v)
    return params, {"m": m, "v": v, "t": t}


def _clip_by_global_norm(L, grads, max_norm):
    """``grads`` scaled so that their norm over every leaf is at most ``max_norm``, as
    ``torch.nn.utils.clip_grad_norm_`` does it (``max_norm / (norm + 1e-6)``, at most 1)."""
    jnp = L.jnp
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in L.tree_leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return L.tree_map(lambda g: g * scale, grads)


def _adam_init(params):
    import numpy as np
    zeros = {k: np.zeros_like(p) for k, p in params.items()}
    return {"m": zeros, "v": dict(zeros), "t": np.zeros((), np.float32)}


def _torch_update(opt, loss):
    """One PyTorch optimizer step on ``loss``; returns it."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def _normal(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype("float32")


# ---------------------------------------------------------------------------------------------
# gru

def gru_init(cfg, rng):
    import numpy as np
    B, T, V, E, H = cfg["batch"], cfg["T"], cfg["vocab"], cfg["emb"], cfg["hidden"]
    params = {"emb": _normal(rng, (V, E), 1.0),
              "w_i": _normal(rng, (E, 3 * H), 1 / math.sqrt(E)),
              "b_i": np.zeros(3 * H, np.float32),
              "w_h": _normal(rng, (H, 3 * H), 1 / math.sqrt(H)),
              "b_h": np.zeros(3 * H, np.float32),
              "w_o": _normal(rng, (H, V), 1 / math.sqrt(H)),
              "b_o": np.zeros(V, np.float32)}
    tokens = rng.integers(0, V, (B, T + 1)).astype(np.int32)
    return (params, _adam_init(params)), [tokens]


def gru_build(L, cfg):
    jnp, lax, nn = L.jnp, L.lax, L.nn
    H = cfg["hidden"]

    def loss_fn(p, tokens):
        x = jnp.swapaxes(p["emb"][tokens[:, :-1]], 0, 1)        # (T, B, E)
        xp = jnp.matmul(x, p["w_i"]) + p["b_i"]                  # every step's input part
        h0 = jnp.zeros((tokens.shape[0], H), jnp.float32)

        def cell(h, xt):
            hp = jnp.matmul(h, p["w_h"]) + p["b_h"]
            r = nn.sigmoid(xt[:, :H] + hp[:, :H])
            z = nn.sigmoid(xt[:, H:2 * H] + hp[:, H:2 * H])
            n = jnp.tanh(xt[:, 2 * H:] + r * hp[:, 2 * H:])
            h = (1 - z) * n + z * h
            return h, h
        _, hs = lax.scan(cell, h0, xp)                            # (T, B, H)
        logits = jnp.matmul(hs, p["w_o"]) + p["b_o"]
        return _cross_entropy(L, logits, jnp.swapaxes(tokens[:, 1:], 0, 1))

    def step(state, tokens):
        params, opt = state
        loss, grads = L.jax.value_and_grad(loss_fn)(params, tokens)
        return loss, _adam(L, params, grads, opt, cfg["lr"])
    return step


def gru_torch(cfg, state, data, dev):
    import torch
    (params, _), (tokens,) = state, data
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in params.items()}
    tokens = torch.tensor(tokens, device=dev).long()
    opt = torch.optim.Adam(list(p.values()), lr=cfg["lr"], eps=1e-8)
    H = cfg["hidden"]

    def step():
        x = p["emb"][tokens[:, :-1]].transpose(0, 1)
        xp = x @ p["w_i"] + p["b_i"]
        h = torch.zeros(tokens.shape[0], H, device=dev)
        hs = []
        for t in range(xp.shape[0]):
            xt = xp[t]
            hp = h @ p["w_h"] + p["b_h"]
            r = torch.sigmoid(xt[:, :H] + hp[:, :H])
            z = torch.sigmoid(xt[:, H:2 * H] + hp[:, H:2 * H])
            n = torch.tanh(xt[:, 2 * H:] + r * hp[:, 2 * H:])
            h = (1 - z) * n + z * h
            hs.append(h)
        logits = torch.stack(hs) @ p["w_o"] + p["b_o"]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 tokens[:, 1:].transpose(0, 1).reshape(-1))
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# ridge and lstsq

def ridge_init(cfg, rng):
    import numpy as np
    n, d, k = cfg["n"], cfg["d"], cfg["k"]
    x = _normal(rng, (n, d), 1.0)
    w = _normal(rng, (d, k), 1 / math.sqrt(d))
    y = (x @ w + _normal(rng, (n, k), 0.1)).astype(np.float32)
    lams = np.logspace(-2, 2, cfg["lams"]).astype(np.float32) * n
    return None, [x, y, lams]


def ridge_build(L, cfg):
    jnp = L.jnp

    def solve(x, y, lams):
        d = x.shape[1]
        gram = jnp.matmul(x.T, x)
        a = gram[None] + lams[:, None, None] * jnp.eye(d, dtype=x.dtype)
        rhs = jnp.broadcast_to(jnp.matmul(x.T, y), (lams.shape[0],) + (d, y.shape[1]))
        chol = jnp.linalg.cholesky(a)
        z = L.solve_triangular(chol, rhs, lower=True)
        w = L.solve_triangular(chol, z, lower=True, trans=1)        # (n_lams, d, k)
        resid = jnp.einsum("nd,ldk->lnk", x, w) - y
        objective = jnp.mean(resid * resid, axis=(1, 2)) + \
            lams / x.shape[0] * jnp.sum(w * w, axis=(1, 2))
        return jnp.mean(objective), w
    return solve


def ridge_torch(cfg, state, data, dev):
    import torch
    x, y, lams = (torch.tensor(a, device=dev) for a in data)

    def solve():
        d = x.shape[1]
        a = (x.T @ x)[None] + lams[:, None, None] * torch.eye(d, device=dev)
        rhs = (x.T @ y).expand(lams.shape[0], d, y.shape[1])
        chol = torch.linalg.cholesky(a)
        z = torch.linalg.solve_triangular(chol, rhs, upper=False)
        w = torch.linalg.solve_triangular(chol.mT, z, upper=True)
        resid = torch.einsum("nd,ldk->lnk", x, w) - y
        objective = (resid * resid).mean(dim=(1, 2)) + lams / x.shape[0] * (w * w).sum(dim=(1, 2))
        return objective.mean()
    return solve


def lstsq_build(L, cfg):
    jnp = L.jnp

    def solve(x, y, lams):
        del lams
        w = jnp.linalg.lstsq(x, y)[0]
        resid = jnp.matmul(x, w) - y
        return jnp.mean(resid * resid), w
    return solve


def lstsq_torch(cfg, state, data, dev):
    import torch
    x, y = (torch.tensor(a, device=dev) for a in data[:2])

    def solve():
        w = torch.linalg.lstsq(x, y).solution
        resid = x @ w - y
        return (resid * resid).mean()
    return solve


# ---------------------------------------------------------------------------------------------
# conv

_CONV_DN = ("NHWC", "HWIO", "NHWC")


def conv_init(cfg, rng):
    import numpy as np
    B, S, C = cfg["batch"], cfg["size"], cfg["channels"]
    chans = [3] + list(C)
    params = {}
    for i, (cin, cout) in enumerate(zip(chans[:-1], chans[1:])):
        params[f"w{i}"] = _normal(rng, (3, 3, cin, cout), math.sqrt(2 / (9 * cin)))
        params[f"b{i}"] = np.zeros(cout, np.float32)
    side = S // 2 ** len(C)
    feat = side * side * chans[-1]
    params["wd"] = _normal(rng, (feat, 10), 1 / math.sqrt(feat))
    params["bd"] = np.zeros(10, np.float32)
    x = _normal(rng, (B, S, S, 3), 1.0)
    y = rng.integers(0, 10, B).astype(np.int32)
    mom = {k: np.zeros_like(v) for k, v in params.items()}
    return (params, mom), [x, y]


def conv_build(L, cfg):
    jnp, lax, nn = L.jnp, L.lax, L.nn
    n_conv = len(cfg["channels"])

    def loss_fn(p, x, y):
        h = x
        for i in range(n_conv):
            h = lax.conv_general_dilated(h, p[f"w{i}"], (1, 1), "SAME",
                                         dimension_numbers=_CONV_DN) + p[f"b{i}"]
            h = nn.relu(h)
            h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        logits = jnp.matmul(h.reshape(h.shape[0], -1), p["wd"]) + p["bd"]
        return _cross_entropy(L, logits, y)

    def step(state, x, y):
        params, mom = state
        loss, grads = L.jax.value_and_grad(loss_fn)(params, x, y)
        mom = L.tree_map(lambda v, g: cfg["momentum"] * v + g, mom, grads)
        params = L.tree_map(lambda p, v: p - cfg["lr"] * v, params, mom)
        return loss, (params, mom)
    return step


def conv_torch(cfg, state, data, dev):
    import torch
    import torch.nn.functional as F
    (params, _), (x, y) = state, data
    p = {}
    for k, v in params.items():     # HWIO -> OIHW for the convolutions
        v = v.transpose(3, 2, 0, 1).copy() if v.ndim == 4 else v
        p[k] = torch.tensor(v, device=dev, requires_grad=True)
    x = torch.tensor(x.transpose(0, 3, 1, 2).copy(), device=dev)
    y = torch.tensor(y, device=dev).long()
    opt = torch.optim.SGD(list(p.values()), lr=cfg["lr"], momentum=cfg["momentum"])
    n_conv = len(cfg["channels"])

    def step():
        h = x
        for i in range(n_conv):
            h = F.max_pool2d(F.relu(F.conv2d(h, p[f"w{i}"], p[f"b{i}"], padding=1)), 2)
        logits = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1) @ p["wd"] + p["bd"]
        loss = F.cross_entropy(logits, y)
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# mlp (mlp_train.py's step and data)

def mlp_init(cfg, rng):
    from mlp_train import CONFIGS, _data
    sizes, batch = CONFIGS[cfg["config"]] if "config" in cfg else (cfg["sizes"], cfg["batch"])
    params, x, y = _data(sizes, batch)
    return params, [x, y]


def mlp_build(L, cfg):
    """mlp_train.fnx_train_step (ReLU hidden layers), written against L."""
    jnp, nn = L.jnp, L.nn

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = nn.relu(jnp.matmul(h, w) + b)
        w, b = params[-1]
        return _cross_entropy(L, jnp.matmul(h, w) + b, y)

    def step(params, x, y):
        loss, grads = L.jax.value_and_grad(loss_fn)(params, x, y)
        return loss, L.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    return step


def mlp_torch(cfg, state, data, dev):
    import torch
    ps = [torch.tensor(a, device=dev, requires_grad=True) for pair in state for a in pair]
    x, y = torch.tensor(data[0], device=dev), torch.tensor(data[1], device=dev).long()
    opt = torch.optim.SGD(ps, lr=0.01)

    def step():
        h = x
        for i in range(0, len(ps) - 2, 2):
            h = torch.relu(h @ ps[i] + ps[i + 1])
        loss = torch.nn.functional.cross_entropy(h @ ps[-2] + ps[-1], y)
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# transformer

def transformer_init(cfg, rng):
    import numpy as np
    B, S, V, D, F = cfg["batch"], cfg["seq"], cfg["vocab"], cfg["d"], cfg["ff"]
    params = {"tok": _normal(rng, (V, D), 0.02), "pos": _normal(rng, (S, D), 0.02),
              "lnf_g": np.ones(D, np.float32), "lnf_b": np.zeros(D, np.float32),
              "w_out": _normal(rng, (D, V), 0.02)}
    for i in range(cfg["layers"]):
        params.update({
            f"l{i}_ln1_g": np.ones(D, np.float32), f"l{i}_ln1_b": np.zeros(D, np.float32),
            f"l{i}_qkv": _normal(rng, (D, 3 * D), 0.02),
            f"l{i}_o": _normal(rng, (D, D), 0.02 / math.sqrt(2 * cfg["layers"])),
            f"l{i}_ln2_g": np.ones(D, np.float32), f"l{i}_ln2_b": np.zeros(D, np.float32),
            f"l{i}_w1": _normal(rng, (D, F), 0.02), f"l{i}_b1": np.zeros(F, np.float32),
            f"l{i}_w2": _normal(rng, (F, D), 0.02 / math.sqrt(2 * cfg["layers"])),
            f"l{i}_b2": np.zeros(D, np.float32)})
    tokens = rng.integers(0, V, (B, S + 1)).astype(np.int32)
    return (params, _adam_init(params)), [tokens]


def transformer_build(L, cfg):
    jnp, nn = L.jnp, L.nn
    Hn, D = cfg["heads"], cfg["d"]
    dh = D // Hn

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    def loss_fn(p, tokens):
        inp, tgt = tokens[:, :-1], tokens[:, 1:]
        B, S = inp.shape
        x = p["tok"][inp] + p["pos"][None, :S]
        mask = jnp.tril(jnp.ones((S, S), bool))
        for i in range(cfg["layers"]):
            h = layer_norm(x, p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"])
            qkv = jnp.matmul(h, p[f"l{i}_qkv"]).reshape(B, S, 3, Hn, dh)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
            a = nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
            o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(B, S, D)
            x = x + jnp.matmul(o, p[f"l{i}_o"])
            h = layer_norm(x, p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"])
            h = nn.gelu(jnp.matmul(h, p[f"l{i}_w1"]) + p[f"l{i}_b1"], approximate=True)
            x = x + jnp.matmul(h, p[f"l{i}_w2"]) + p[f"l{i}_b2"]
        x = layer_norm(x, p["lnf_g"], p["lnf_b"])
        return _cross_entropy(L, jnp.matmul(x, p["w_out"]), tgt)

    def step(state, tokens):
        params, opt = state
        loss, grads = L.jax.value_and_grad(loss_fn)(params, tokens)
        return loss, _adam(L, params, grads, opt, cfg["lr"], wd=cfg["wd"])
    return step


def transformer_torch(cfg, state, data, dev):
    import torch
    import torch.nn.functional as F
    (params, _), (tokens,) = state, data
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in params.items()}
    tokens = torch.tensor(tokens, device=dev).long()
    opt = torch.optim.AdamW(list(p.values()), lr=cfg["lr"], eps=1e-8, weight_decay=cfg["wd"])
    Hn, D = cfg["heads"], cfg["d"]
    dh = D // Hn

    def step():
        inp, tgt = tokens[:, :-1], tokens[:, 1:]
        B, S = inp.shape
        x = p["tok"][inp] + p["pos"][None, :S]
        mask = torch.tril(torch.ones(S, S, dtype=torch.bool, device=dev))
        for i in range(cfg["layers"]):
            h = F.layer_norm(x, (D,), p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"], eps=1e-5)
            qkv = (h @ p[f"l{i}_qkv"]).reshape(B, S, 3, Hn, dh)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
            a = torch.softmax(s.masked_fill(~mask, -1e9), dim=-1)
            o = torch.einsum("bhqk,bkhd->bqhd", a, v).reshape(B, S, D)
            x = x + o @ p[f"l{i}_o"]
            h = F.layer_norm(x, (D,), p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"], eps=1e-5)
            h = F.gelu(h @ p[f"l{i}_w1"] + p[f"l{i}_b1"], approximate="tanh")
            x = x + h @ p[f"l{i}_w2"] + p[f"l{i}_b2"]
        x = F.layer_norm(x, (D,), p["lnf_g"], p["lnf_b"], eps=1e-5)
        logits = x @ p["w_out"]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# perex: DP-SGD-style per-example gradients

def perex_init(cfg, rng):
    import numpy as np
    sizes, B = cfg["sizes"], cfg["batch"]
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"w{i}"] = _normal(rng, (a, b), math.sqrt(2 / a))
        params[f"b{i}"] = np.zeros(b, np.float32)
    x = _normal(rng, (B, sizes[0]), 1.0)
    y = rng.integers(0, sizes[-1], B).astype(np.int32)
    return (params, np.zeros(2, np.uint32)), [x, y]      # the key: PRNGKey(0)'s bits


def _perex_example_loss(L, n_layers):
    """One example's softmax cross-entropy through the ReLU MLP."""
    jnp, nn = L.jnp, L.nn

    def loss(p, x, y):
        h = x
        for i in range(n_layers - 1):
            h = nn.relu(jnp.matmul(h, p[f"w{i}"]) + p[f"b{i}"])
        logits = jnp.matmul(h, p[f"w{n_layers - 1}"]) + p[f"b{n_layers - 1}"]
        return -nn.log_softmax(logits)[y]
    return loss


def perex_build(L, cfg):
    """Each example's gradient clipped to norm ``clip`` inside the vmap (the per-example norm
    is a reduction over every axis of one example's gradient), averaged, Gaussian noise of
    std ``noise * clip / batch`` added, then SGD."""
    jnp, jax = L.jnp, L.jax
    n_layers = len(cfg["sizes"]) - 1
    loss = _perex_example_loss(L, n_layers)
    clip, lr = cfg["clip"], cfg["lr"]

    def clipped(p, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        return value, _clip_by_global_norm(L, g, clip)

    def step(state, x, y):
        params, key = state
        losses, grads = jax.vmap(clipped, in_axes=(None, 0, 0))(params, x, y)
        key, *keys = jax.random.split(key, len(params) + 1)
        std = cfg["noise"] * clip / x.shape[0]
        noisy = {k: jnp.mean(grads[k], axis=0) + std * jax.random.normal(kk, params[k].shape)
                 for k, kk in zip(sorted(params), keys)}
        params = {k: params[k] - lr * noisy[k] for k in params}
        return jnp.mean(losses), (params, key)
    return step


def perex_torch(cfg, state, data, dev):
    """The same step through torch.func (vmap of grad_and_value); the noise is torch's own
    generator, so losses after the first call differ from JAX's by the noise's effect."""
    import torch
    from torch.func import grad_and_value, vmap
    (params, _), (x, y) = state, data
    p = {k: torch.tensor(v, device=dev) for k, v in params.items()}
    x, y = torch.tensor(x, device=dev), torch.tensor(y, device=dev).long()
    n_layers = len(cfg["sizes"]) - 1
    clip, lr = cfg["clip"], cfg["lr"]
    std = cfg["noise"] * clip / x.shape[0]
    gen = torch.Generator(device=dev).manual_seed(0)

    def loss(p, x, y):
        h = x
        for i in range(n_layers - 1):
            h = torch.relu(h @ p[f"w{i}"] + p[f"b{i}"])
        logits = h @ p[f"w{n_layers - 1}"] + p[f"b{n_layers - 1}"]
        return -torch.log_softmax(logits, -1).gather(0, y[None])[0]

    def clipped(p, x, y):
        g, value = grad_and_value(loss)(p, x, y)
        norm = torch.sqrt(sum(torch.sum(v * v) for v in g.values()))
        scale = torch.clamp(clip / (norm + 1e-6), max=1.0)
        return value, {k: v * scale for k, v in g.items()}
    per_example = vmap(clipped, in_dims=(None, 0, 0))

    def step():
        losses, grads = per_example(p, x, y)
        for k in p:
            noise = torch.randn(p[k].shape, device=dev, generator=gen)
            p[k] = p[k] - lr * (grads[k].mean(0) + std * noise)
        return losses.mean()
    return step


# ---------------------------------------------------------------------------------------------
# kmeans: one Lloyd iteration per step

def kmeans_init(cfg, rng):
    import numpy as np
    N, D, K = cfg["points"], cfg["dims"], cfg["k"]
    centers = _normal(rng, (K, D), 4.0)
    x = (centers[rng.integers(0, K, N)] + _normal(rng, (N, D), 1.0)).astype(np.float32)
    return x[rng.choice(N, K, replace=False)].copy(), [x]


def kmeans_build(L, cfg):
    """Squared distances by ``||x||^2 + ||c||^2 - 2 x.c``, each point's nearest centroid,
    segment sums of the points and their counts per centroid, the new centroids (an empty
    cluster keeps its centroid). The loss is the mean squared distance to the old centroids."""
    jnp = L.jnp
    K = cfg["k"]

    def step(c, x):
        d = (jnp.sum(x * x, axis=1, keepdims=True) + jnp.sum(c * c, axis=1)
             - 2 * jnp.matmul(x, c.T))
        assign = jnp.argmin(d, axis=1)
        inertia = jnp.mean(jnp.min(d, axis=1))
        sums = L.segment_sum(x, assign, num_segments=K)
        counts = L.segment_sum(jnp.ones_like(x[:, 0]), assign, num_segments=K)
        new = jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1)[:, None], c)
        return inertia, new
    return step


def kmeans_torch(cfg, state, data, dev):
    import torch
    c = torch.tensor(state, device=dev)
    x = torch.tensor(data[0], device=dev)
    K = cfg["k"]
    box = {"c": c}

    def step():
        c = box["c"]
        d = (x * x).sum(1, keepdim=True) + (c * c).sum(1) - 2 * (x @ c.T)
        mins, assign = d.min(1)
        sums = torch.zeros_like(c).index_add_(0, assign, x)
        counts = torch.bincount(assign, minlength=K).to(x.dtype)
        box["c"] = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None], c)
        return mins.mean()
    return step


# ---------------------------------------------------------------------------------------------
# lstm: an LSTM language model

def lstm_init(cfg, rng):
    import numpy as np
    B, T, V, E, H = cfg["batch"], cfg["T"], cfg["vocab"], cfg["emb"], cfg["hidden"]
    bias = np.zeros(4 * H, np.float32)
    bias[H:2 * H] = 1.0                             # forget gates start open
    params = {"emb": _normal(rng, (V, E), 1.0),
              "w": _normal(rng, (E + H, 4 * H), 1 / math.sqrt(E + H)),
              "b": bias,
              "w_o": _normal(rng, (H, V), 1 / math.sqrt(H)),
              "b_o": np.zeros(V, np.float32)}
    tokens = rng.integers(0, V, (B, T + 1)).astype(np.int32)
    return (params, _adam_init(params)), [tokens]


def _lstm_cell(c, h, gates, sigmoid, tanh):
    """One LSTM update from the pre-activations of the (input, forget, cell, output) gates."""
    H = h.shape[-1]
    i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return c, sigmoid(o) * tanh(c)


def lstm_build(L, cfg):
    """The gates of a step come from one product of ``[x_t, h]`` with the stacked weights;
    the gradients are clipped by their global norm before Adam."""
    jnp, lax, nn = L.jnp, L.lax, L.nn
    H = cfg["hidden"]

    def loss_fn(p, tokens):
        x = jnp.swapaxes(p["emb"][tokens[:, :-1]], 0, 1)        # (T, B, E)
        zeros = jnp.zeros((tokens.shape[0], H), jnp.float32)

        def cell(carry, xt):
            c, h = carry
            gates = jnp.matmul(jnp.concatenate([xt, h], axis=1), p["w"]) + p["b"]
            c, h = _lstm_cell(c, h, gates, nn.sigmoid, jnp.tanh)
            return (c, h), h
        _, hs = lax.scan(cell, (zeros, zeros), x)                # (T, B, H)
        logits = jnp.matmul(hs, p["w_o"]) + p["b_o"]
        return _cross_entropy(L, logits, jnp.swapaxes(tokens[:, 1:], 0, 1))

    def step(state, tokens):
        params, opt = state
        loss, grads = L.jax.value_and_grad(loss_fn)(params, tokens)
        grads = _clip_by_global_norm(L, grads, cfg["clip"])
        return loss, _adam(L, params, grads, opt, cfg["lr"])
    return step


def lstm_torch(cfg, state, data, dev):
    import torch
    (params, _), (tokens,) = state, data
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in params.items()}
    tokens = torch.tensor(tokens, device=dev).long()
    opt = torch.optim.Adam(list(p.values()), lr=cfg["lr"], eps=1e-8)
    H = cfg["hidden"]

    def step():
        x = p["emb"][tokens[:, :-1]].transpose(0, 1)
        c = h = torch.zeros(tokens.shape[0], H, device=dev)
        hs = []
        for t in range(x.shape[0]):
            gates = torch.cat([x[t], h], dim=1) @ p["w"] + p["b"]
            c, h = _lstm_cell(c, h, gates, torch.sigmoid, torch.tanh)
            hs.append(h)
        logits = torch.stack(hs) @ p["w_o"] + p["b_o"]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 tokens[:, 1:].transpose(0, 1).reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), cfg["clip"])
        opt.step()
        return loss
    return step


# ---------------------------------------------------------------------------------------------
# vae: a variational autoencoder on binary images

def vae_init(cfg, rng):
    import numpy as np
    B, D, H, Z = cfg["batch"], cfg["dim"], cfg["hidden"], cfg["latent"]
    params = {"enc_w1": _normal(rng, (D, H), math.sqrt(2 / D)),
              "enc_b1": np.zeros(H, np.float32),
              "enc_w2": _normal(rng, (H, 2 * Z), 1 / math.sqrt(H)),
              "enc_b2": np.zeros(2 * Z, np.float32),
              "dec_w1": _normal(rng, (Z, H), math.sqrt(2 / Z)),
              "dec_b1": np.zeros(H, np.float32),
              "dec_w2": _normal(rng, (H, D), 1 / math.sqrt(H)),
              "dec_b2": np.zeros(D, np.float32)}
    x = (rng.random((B, D)) < 0.3).astype(np.float32)      # binary "pixels"
    state = {"params": params, "opt": _adam_init(params),
             "key": np.zeros(2, np.uint32),                   # PRNGKey(0)'s bits
             "recon_error": np.zeros((), np.float32)}
    return state, [x]


def vae_build(L, cfg):
    """The negative ELBO: a Bernoulli log-likelihood of the pixels given the decoder's
    logits (``log sigmoid(l)`` for ones, ``log(1 - sigmoid(l)) = -softplus(l)`` for zeros) plus
    the Gaussian KL term. The key is split each step and carried; the state also keeps the
    step's mean squared error of the decoded image ``sigmoid(l)``, as a training loop logs."""
    jnp, nn, jax = L.jnp, L.nn, L.jax
    Z = cfg["latent"]

    def loss_fn(p, x, key):
        h = nn.relu(jnp.matmul(x, p["enc_w1"]) + p["enc_b1"])
        stats = jnp.matmul(h, p["enc_w2"]) + p["enc_b2"]
        mu, logvar = stats[:, :Z], stats[:, Z:]
        z = mu + jnp.exp(0.5 * logvar) * jax.random.normal(key, mu.shape)
        h = nn.relu(jnp.matmul(z, p["dec_w1"]) + p["dec_b1"])
        logits = jnp.matmul(h, p["dec_w2"]) + p["dec_b2"]
        loglik = jnp.sum(x * nn.log_sigmoid(logits) - (1 - x) * nn.softplus(logits), axis=1)
        kl = 0.5 * jnp.sum(jnp.exp(logvar) + mu * mu - 1.0 - logvar, axis=1)
        recon_error = jnp.mean(jnp.square(nn.sigmoid(logits) - x))
        return jnp.mean(kl - loglik), recon_error

    def step(state, x):
        key, sample_key = jax.random.split(state["key"])
        (loss, recon_error), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            state["params"], x, sample_key)
        params, opt = _adam(L, state["params"], grads, state["opt"], cfg["lr"])
        return loss, {"params": params, "opt": opt, "key": key, "recon_error": recon_error}
    return step


def vae_torch(cfg, state, data, dev):
    """The same step; the noise comes from torch's own generator, so the losses differ from
    JAX's by the noise's effect."""
    import torch
    import torch.nn.functional as F
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in state["params"].items()}
    x = torch.tensor(data[0], device=dev)
    opt = torch.optim.Adam(list(p.values()), lr=cfg["lr"], eps=1e-8)
    gen = torch.Generator(device=dev).manual_seed(0)
    Z = cfg["latent"]

    def step():
        h = torch.relu(x @ p["enc_w1"] + p["enc_b1"])
        stats = h @ p["enc_w2"] + p["enc_b2"]
        mu, logvar = stats[:, :Z], stats[:, Z:]
        z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, device=dev, generator=gen)
        logits = torch.relu(z @ p["dec_w1"] + p["dec_b1"]) @ p["dec_w2"] + p["dec_b2"]
        loglik = (x * F.logsigmoid(logits) - (1 - x) * F.softplus(logits)).sum(1)
        kl = 0.5 * (torch.exp(logvar) + mu * mu - 1.0 - logvar).sum(1)
        loss = (kl - loglik).mean()
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# resnet: a small residual conv net with batch normalisation

def _resnet_blocks(cfg):
    """(name, input channels, output channels, stride) of each residual block: one block per
    entry of ``channels``, the first at the stem's resolution, each later one halving it."""
    chans = cfg["channels"]
    return [(f"s{i}", chans[max(i - 1, 0)], c, 1 if i == 0 else 2)
            for i, c in enumerate(chans)]


def resnet_init(cfg, rng):
    import numpy as np
    B, S, C = cfg["batch"], cfg["size"], cfg["channels"]
    params, stats = {}, {}

    def conv(name, k, cin, cout):
        params[name] = _normal(rng, (k, k, cin, cout), math.sqrt(2 / (k * k * cin)))
        params[name + "_g"] = np.ones(cout, np.float32)
        params[name + "_b"] = np.zeros(cout, np.float32)
        stats[name + "_mean"] = np.zeros(cout, np.float32)
        stats[name + "_var"] = np.ones(cout, np.float32)
    conv("stem", 3, 3, C[0])
    for name, cin, cout, stride in _resnet_blocks(cfg):
        conv(name + "_c1", 3, cin, cout)
        conv(name + "_c2", 3, cout, cout)
        if stride != 1 or cin != cout:
            conv(name + "_proj", 1, cin, cout)
    params["wd"] = _normal(rng, (C[-1], cfg["classes"]), 1 / math.sqrt(C[-1]))
    params["bd"] = np.zeros(cfg["classes"], np.float32)
    x = _normal(rng, (B, S, S, 3), 1.0)
    y = rng.integers(0, cfg["classes"], B).astype(np.int32)
    mom = {k: np.zeros_like(v) for k, v in params.items()}
    return (params, mom, stats), [x, y]


def resnet_build(L, cfg):
    """Each convolution (3x3 with padding 1, strided where a block halves the resolution; a 1x1
    projection on the shortcut where the shape changes) is followed by batch normalisation in
    training mode: the batch's mean and variance over N, H, W, with running averages carried
    as state (used by no loss here, as in training). SGD with momentum and weight decay in
    PyTorch's form (``g += wd p; v = mu v + g; p -= lr v``)."""
    jnp, lax, nn = L.jnp, L.lax, L.nn
    blocks = _resnet_blocks(cfg)
    mom_bn = cfg["bn_momentum"]

    def loss_fn(p, stats, x, y):
        new_stats = {}

        def conv_bn(h, name, stride=1):
            w = p[name]
            pad = [(1, 1), (1, 1)] if w.shape[0] == 3 else "VALID"
            h = lax.conv_general_dilated(h, w, (stride, stride), pad,
                                         dimension_numbers=_CONV_DN)
            mean = jnp.mean(h, axis=(0, 1, 2))
            var = jnp.var(h, axis=(0, 1, 2))
            for k, v in (("_mean", mean), ("_var", var)):
                new_stats[name + k] = mom_bn * stats[name + k] + \
                    (1 - mom_bn) * lax.stop_gradient(v)
            return (h - mean) * lax.rsqrt(var + 1e-5) * p[name + "_g"] + p[name + "_b"]

        h = nn.relu(conv_bn(x, "stem"))
        for name, cin, cout, stride in blocks:
            r = nn.relu(conv_bn(h, name + "_c1", stride))
            r = conv_bn(r, name + "_c2")
            shortcut = conv_bn(h, name + "_proj", stride) if name + "_proj" in p else h
            h = nn.relu(r + shortcut)
        logits = jnp.matmul(jnp.mean(h, axis=(1, 2)), p["wd"]) + p["bd"]
        return _cross_entropy(L, logits, y), new_stats

    def step(state, x, y):
        params, mom, stats = state
        (loss, stats), grads = L.jax.value_and_grad(loss_fn, has_aux=True)(params, stats, x, y)
        grads = L.tree_map(lambda g, p: g + cfg["wd"] * p, grads, params)
        mom = L.tree_map(lambda v, g: cfg["momentum"] * v + g, mom, grads)
        params = L.tree_map(lambda p, v: p - cfg["lr"] * v, params, mom)
        return loss, (params, mom, stats)
    return step


def resnet_torch(cfg, state, data, dev):
    import torch
    import torch.nn.functional as F
    (params, _, _), (x, y) = state, data
    p = {}
    for k, v in params.items():     # HWIO -> OIHW for the convolutions
        v = v.transpose(3, 2, 0, 1).copy() if v.ndim == 4 else v
        p[k] = torch.tensor(v, device=dev, requires_grad=True)
    x = torch.tensor(x.transpose(0, 3, 1, 2).copy(), device=dev)
    y = torch.tensor(y, device=dev).long()
    opt = torch.optim.SGD(list(p.values()), lr=cfg["lr"], momentum=cfg["momentum"],
                          weight_decay=cfg["wd"])

    def conv_bn(h, name, stride=1):
        w = p[name]
        h = F.conv2d(h, w, stride=stride, padding=1 if w.shape[-1] == 3 else 0)
        mean = h.mean((0, 2, 3), keepdim=True)
        var = h.var((0, 2, 3), unbiased=False, keepdim=True)
        return (h - mean) * torch.rsqrt(var + 1e-5) * p[name + "_g"][:, None, None] + \
            p[name + "_b"][:, None, None]

    def step():
        h = torch.relu(conv_bn(x, "stem"))
        for name, cin, cout, stride in _resnet_blocks(cfg):
            r = torch.relu(conv_bn(h, name + "_c1", stride))
            r = conv_bn(r, name + "_c2")
            shortcut = conv_bn(h, name + "_proj", stride) if name + "_proj" in p else h
            h = torch.relu(r + shortcut)
        loss = F.cross_entropy(h.mean((2, 3)) @ p["wd"] + p["bd"], y)
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# attention: a transformer encoder classifier over padded sequences

def attention_init(cfg, rng):
    import numpy as np
    B, S, V, D, F = cfg["batch"], cfg["seq"], cfg["vocab"], cfg["d"], cfg["ff"]
    params = {"tok": _normal(rng, (V, D), 0.02), "pos": _normal(rng, (S, D), 0.02),
              "w_cls": _normal(rng, (D, cfg["classes"]), 1 / math.sqrt(D)),
              "b_cls": np.zeros(cfg["classes"], np.float32)}
    for i in range(cfg["layers"]):
        params.update({
            f"l{i}_qkv": _normal(rng, (D, 3 * D), 1 / math.sqrt(D)),
            f"l{i}_o": _normal(rng, (D, D), 1 / math.sqrt(D)),
            f"l{i}_ln1_g": np.ones(D, np.float32), f"l{i}_ln1_b": np.zeros(D, np.float32),
            f"l{i}_w1": _normal(rng, (D, F), 1 / math.sqrt(D)),
            f"l{i}_b1": np.zeros(F, np.float32),
            f"l{i}_w2": _normal(rng, (F, D), 1 / math.sqrt(F)),
            f"l{i}_b2": np.zeros(D, np.float32),
            f"l{i}_ln2_g": np.ones(D, np.float32), f"l{i}_ln2_b": np.zeros(D, np.float32)})
    lengths = rng.integers(S // 4, S + 1, B).astype(np.int32)
    tokens = rng.integers(1, V, (B, S)).astype(np.int32)
    tokens[np.arange(S)[None, :] >= lengths[:, None]] = 0       # padding
    labels = rng.integers(0, cfg["classes"], B).astype(np.int32)
    return (params, _adam_init(params)), [tokens, lengths, labels]


def _layer_norm(jnp, x, g, b, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps) * g + b


def attention_build(L, cfg):
    """Post-LayerNorm encoder layers: ``nn.dot_product_attention`` with a key padding mask
    from the lengths (no bias on the projections to the queries, keys and values: a key bias
    has a zero gradient, which Adam would turn into rounding noise), exact GELU; the valid
    positions mean-pooled into a linear classifier; AdamW."""
    jnp, nn = L.jnp, L.nn
    Hn, D = cfg["heads"], cfg["d"]

    def loss_fn(p, tokens, lengths, labels):
        B, S = tokens.shape
        valid = jnp.arange(S)[None, :] < lengths[:, None]            # (B, S)
        x = jnp.take(p["tok"], tokens, axis=0) + p["pos"][None]
        for i in range(cfg["layers"]):
            qkv = jnp.matmul(x, p[f"l{i}_qkv"]).reshape(B, S, 3, Hn, -1)
            o = nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2],
                                         mask=valid[:, None, None, :])
            x = _layer_norm(jnp, x + jnp.matmul(o.reshape(B, S, D), p[f"l{i}_o"]),
                            p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"])
            h = nn.gelu(jnp.matmul(x, p[f"l{i}_w1"]) + p[f"l{i}_b1"], approximate=False)
            x = _layer_norm(jnp, x + jnp.matmul(h, p[f"l{i}_w2"]) + p[f"l{i}_b2"],
                            p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"])
        pooled = jnp.sum(jnp.where(valid[..., None], x, 0.0), axis=1) / lengths[:, None]
        return _cross_entropy(L, jnp.matmul(pooled, p["w_cls"]) + p["b_cls"], labels)

    def step(state, tokens, lengths, labels):
        params, opt = state
        loss, grads = L.jax.value_and_grad(loss_fn)(params, tokens, lengths, labels)
        return loss, _adam(L, params, grads, opt, cfg["lr"], wd=cfg["wd"])
    return step


def attention_torch(cfg, state, data, dev):
    import torch
    import torch.nn.functional as F
    (params, _), (tokens, lengths, labels) = state, data
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in params.items()}
    tokens = torch.tensor(tokens, device=dev).long()
    lengths = torch.tensor(lengths, device=dev)
    labels = torch.tensor(labels, device=dev).long()
    opt = torch.optim.AdamW(list(p.values()), lr=cfg["lr"], eps=1e-8, weight_decay=cfg["wd"])
    Hn, D = cfg["heads"], cfg["d"]

    def step():
        B, S = tokens.shape
        valid = torch.arange(S, device=dev)[None, :] < lengths[:, None]
        x = p["tok"][tokens] + p["pos"][None]
        for i in range(cfg["layers"]):
            qkv = (x @ p[f"l{i}_qkv"]).reshape(B, S, 3, Hn, -1)
            q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))     # (B, Hn, S, dh)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=valid[:, None, None, :])
            x = F.layer_norm(x + o.transpose(1, 2).reshape(B, S, D) @ p[f"l{i}_o"], (D,),
                             p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"], eps=1e-5)
            h = F.gelu(x @ p[f"l{i}_w1"] + p[f"l{i}_b1"])
            x = F.layer_norm(x + h @ p[f"l{i}_w2"] + p[f"l{i}_b2"], (D,), p[f"l{i}_ln2_g"],
                             p[f"l{i}_ln2_b"], eps=1e-5)
        pooled = torch.where(valid[..., None], x, 0.0).sum(1) / lengths[:, None]
        loss = F.cross_entropy(pooled @ p["w_cls"] + p["b_cls"], labels)
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# node: a neural ODE

def node_init(cfg, rng):
    import numpy as np
    B, D, H = cfg["batch"], cfg["dim"], cfg["hidden"]
    params = {"w1": _normal(rng, (D, H), 1 / math.sqrt(D)), "wt": _normal(rng, (H,), 1.0),
              "b1": np.zeros(H, np.float32),
              "w2": _normal(rng, (H, D), 0.5 / math.sqrt(H)), "b2": np.zeros(D, np.float32)}
    x0 = _normal(rng, (B, D), 1.0)
    mix = _normal(rng, (D, D), 1 / math.sqrt(D))
    target = np.tanh(x0 @ mix).astype(np.float32)
    return params, [x0, target]


def _node_field(jnp, p, t, h):
    """The learned vector field ``dh/dt = f(t, h)``: a tanh MLP that also sees the time."""
    return jnp.matmul(jnp.tanh(jnp.matmul(h, p["w1"]) + t * p["wt"] + p["b1"]), p["w2"]) + \
        p["b2"]


def _rk4_step(field, t, h, dt):
    k1 = field(t, h)
    k2 = field(t + dt / 2, h + dt / 2 * k1)
    k3 = field(t + dt / 2, h + dt / 2 * k2)
    k4 = field(t + dt, h + dt * k3)
    return h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def node_build(L, cfg):
    """The state at t = 1 from fixed-step RK4 (``steps`` steps of ``lax.fori_loop``), its
    mean squared error from the targets, differentiated through the loop; SGD."""
    jnp, lax = L.jnp, L.lax
    steps = cfg["steps"]
    dt = 1.0 / steps

    def loss_fn(p, x0, target):
        field = lambda t, h: _node_field(jnp, p, t, h)  # noqa: E731
        h = lax.fori_loop(0, steps, lambda i, h: _rk4_step(field, i * dt, h, dt), x0)
        return jnp.mean(jnp.square(h - target))

    def step(params, x0, target):
        loss, grads = L.jax.value_and_grad(loss_fn)(params, x0, target)
        return loss, L.tree_map(lambda p, g: p - cfg["lr"] * g, params, grads)
    return step


def node_torch(cfg, state, data, dev):
    import torch
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in state.items()}
    x0, target = (torch.tensor(a, device=dev) for a in data)
    opt = torch.optim.SGD(list(p.values()), lr=cfg["lr"])
    steps = cfg["steps"]
    dt = 1.0 / steps

    def step():
        field = lambda t, h: _node_field(torch, p, t, h)  # noqa: E731
        h = x0
        for i in range(steps):
            h = _rk4_step(field, i * dt, h, dt)
        loss = torch.mean(torch.square(h - target))
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# newton: batched Newton's method

def newton_init(cfg, rng):
    import numpy as np
    B, n = cfg["batch"], cfg["n"]
    w = rng.standard_normal((n, n))
    w *= 0.9 / np.linalg.norm(w, 2)     # |a W| < 1: every Jacobian I + a diag(.) W invertible
    a = rng.uniform(0.5, 1.0, B).astype(np.float32)
    b = _normal(rng, (B, n), 2.0)
    return None, [w.astype(np.float32), a, b]


def newton_build(L, cfg):
    """For each example, ``x + a tanh(W x) = b`` by Newton's method from ``x = 0``:
    ``lax.while_loop`` until the residual norm is below ``tol`` (or ``max_iter``), the Jacobian
    by ``jacfwd``, the step by ``linalg.solve``; a step that does not reduce the residual is
    halved (``lax.cond``). ``vmap`` over the batch; the result is the mean final residual
    norm (near float32 rounding: it differs between frameworks by more than a loss would),
    the solutions and each example's iteration count."""
    jnp, lax, jax = L.jnp, L.lax, L.jax
    tol, max_iter = cfg["tol"], cfg["max_iter"]

    def solve(w, a, b):
        def residual(x, a, b):
            return x + a * jnp.tanh(jnp.matmul(w, x)) - b

        def solve_one(a, b):
            def not_done(carry):
                _, it, norm = carry
                return (norm > tol) & (it < max_iter)

            def newton_step(carry):
                x, it, norm = carry
                dx = jnp.linalg.solve(jax.jacfwd(residual)(x, a, b), residual(x, a, b))
                full = x - dx
                full_norm = jnp.linalg.norm(residual(full, a, b))

                def halved():
                    half = x - 0.5 * dx
                    return half, jnp.linalg.norm(residual(half, a, b))
                x, norm = lax.cond(full_norm < norm, lambda: (full, full_norm), halved)
                return x, it + 1, norm

            x0 = jnp.zeros_like(b)
            return lax.while_loop(not_done, newton_step,
                                  (x0, 0, jnp.linalg.norm(residual(x0, a, b))))
        xs, iterations, norms = jax.vmap(solve_one)(a, b)
        return jnp.mean(norms), (xs, iterations)
    return solve


# ---------------------------------------------------------------------------------------------
# embed: a bag-of-embeddings text classifier

def embed_init(cfg, rng):
    import numpy as np
    B, S, V, E, H, C = (cfg[k] for k in ("batch", "seq", "vocab", "emb", "hidden", "classes"))
    params = {"table": _normal(rng, (V, E), 1.0),
              "w1": _normal(rng, (E, H), math.sqrt(2 / E)), "b1": np.zeros(H, np.float32),
              "w2": _normal(rng, (H, C), 1 / math.sqrt(H)), "b2": np.zeros(C, np.float32)}
    lengths = rng.integers(S // 2, S + 1, B)
    ids = rng.integers(1, V, (B, S)).astype(np.int32)
    ids[np.arange(S)[None, :] >= lengths[:, None]] = 0           # id 0 pads
    labels = rng.integers(0, C, B).astype(np.int32)
    state = {"params": params, "opt": _adam_init(params), "key": np.zeros(2, np.uint32)}
    return state, [ids, labels]


def embed_build(L, cfg):
    """Each text is the mean of its tokens' embeddings (``jnp.take`` of the table, then
    ``segment_sum`` per text, padding ids left out), through a ReLU layer with dropout
    (``random.bernoulli`` keep mask from a key split each step) and a linear layer; softmax
    cross-entropy against label-smoothed one-hot targets; Adam. The table's gradient is a
    scatter-add of the token gradients."""
    jnp, nn, jax = L.jnp, L.nn, L.jax
    C, rate, smooth = cfg["classes"], cfg["dropout"], cfg["smoothing"]

    def loss_fn(p, ids, labels, key):
        B, S = ids.shape
        flat = ids.reshape(-1)
        present = (flat != 0).astype(jnp.float32)
        text = jnp.repeat(jnp.arange(B), S)
        sums = L.segment_sum(jnp.take(p["table"], flat, axis=0) * present[:, None], text,
                             num_segments=B, indices_are_sorted=True)
        counts = L.segment_sum(present, text, num_segments=B, indices_are_sorted=True)
        h = nn.relu(jnp.matmul(sums / jnp.maximum(counts, 1.0)[:, None], p["w1"]) + p["b1"])
        keep = jax.random.bernoulli(key, 1.0 - rate, h.shape)
        h = jnp.where(keep, h / (1.0 - rate), 0.0)
        logits = jnp.matmul(h, p["w2"]) + p["b2"]
        targets = nn.one_hot(labels, C) * (1.0 - smooth) + smooth / C
        return -jnp.mean(jnp.sum(targets * nn.log_softmax(logits), axis=-1))

    def step(state, ids, labels):
        key, drop_key = jax.random.split(state["key"])
        loss, grads = jax.value_and_grad(loss_fn)(state["params"], ids, labels, drop_key)
        params, opt = _adam(L, state["params"], grads, state["opt"], cfg["lr"])
        return loss, {"params": params, "opt": opt, "key": key}
    return step


def embed_torch(cfg, state, data, dev):
    """The same step; the dropout mask comes from torch's own generator, so the losses differ
    from JAX's by the mask's effect."""
    import torch
    import torch.nn.functional as F
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in state["params"].items()}
    ids = torch.tensor(data[0], device=dev).long()
    labels = torch.tensor(data[1], device=dev).long()
    opt = torch.optim.Adam(list(p.values()), lr=cfg["lr"], eps=1e-8)
    gen = torch.Generator(device=dev).manual_seed(0)
    rate = cfg["dropout"]

    def step():
        present = (ids != 0).float()
        bag = (p["table"][ids] * present[..., None]).sum(1) / present.sum(1).clamp(min=1)[:, None]
        h = torch.relu(bag @ p["w1"] + p["b1"])
        keep = torch.rand(h.shape, device=dev, generator=gen) < 1.0 - rate
        h = torch.where(keep, h / (1.0 - rate), 0.0)
        loss = F.cross_entropy(h @ p["w2"] + p["b2"], labels, label_smoothing=cfg["smoothing"])
        return _torch_update(opt, loss)
    return step


# ---------------------------------------------------------------------------------------------
# logreg: multinomial logistic regression, several gradient steps per call

def logreg_init(cfg, rng):
    import numpy as np
    N, D, C = cfg["n"], cfg["d"], cfg["classes"]
    x = _normal(rng, (N, D), 1.0)
    true_w = _normal(rng, (D, C), 1 / math.sqrt(D))
    y = np.argmax(x @ true_w + rng.gumbel(size=(N, C)), axis=1).astype(np.int32)
    params = {"w": _normal(rng, (D, C), 0.01), "b": np.zeros(C, np.float32)}
    return params, [x, y]


def logreg_build(L, cfg):
    """``inner`` full-batch gradient descent steps inside ``lax.scan`` per call, on the mean
    negative log-likelihood (``logsumexp`` of the logits less the label's, picked by
    ``one_hot``) plus an L2 penalty on the weights; the loss is the last inner step's."""
    jnp, nn, jax = L.jnp, L.nn, L.jax
    C, lam, lr = cfg["classes"], cfg["l2"], cfg["lr"]

    def loss_fn(p, x, y):
        logits = jnp.matmul(x, p["w"]) + p["b"]
        nll = nn.logsumexp(logits, axis=1) - jnp.sum(nn.one_hot(y, C) * logits, axis=1)
        return jnp.mean(nll) + 0.5 * lam * jnp.sum(jnp.square(p["w"]))

    def step(params, x, y):
        def descend(p, _):
            loss, g = jax.value_and_grad(loss_fn)(p, x, y)
            return L.tree_map(lambda p, g: p - lr * g, p, g), loss
        params, losses = L.lax.scan(descend, params, None, length=cfg["inner"])
        return losses[-1], params
    return step


def logreg_torch(cfg, state, data, dev):
    import torch
    import torch.nn.functional as F
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in state.items()}
    x = torch.tensor(data[0], device=dev)
    y = torch.tensor(data[1], device=dev).long()
    opt = torch.optim.SGD(list(p.values()), lr=cfg["lr"])

    def step():
        for _ in range(cfg["inner"]):
            loss = F.cross_entropy(x @ p["w"] + p["b"], y) + \
                0.5 * cfg["l2"] * torch.sum(torch.square(p["w"]))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return loss
    return step


# ---------------------------------------------------------------------------------------------
# The table of programs: init (NumPy values), build (fnx/JAX), torch, whether the step carries
# state (its second result is the next call's first argument, donated), and sizes per mode.

PROGRAMS = {
    "gru": dict(init=gru_init, build=gru_build, torch=gru_torch, carry=True, sizes={
        "gpu": dict(batch=64, T=64, vocab=128, emb=64, hidden=256, lr=1e-3),
        "cpu": dict(batch=4, T=6, vocab=11, emb=5, hidden=8, lr=1e-3)}),
    "ridge": dict(init=ridge_init, build=ridge_build, torch=ridge_torch, carry=False, sizes={
        "gpu": dict(n=4096, d=512, k=64, lams=8),
        "cpu": dict(n=64, d=8, k=3, lams=4)}),
    "lstsq": dict(init=ridge_init, build=lstsq_build, torch=lstsq_torch, carry=False, sizes={
        "gpu": dict(n=4096, d=512, k=64, lams=1),
        "cpu": dict(n=64, d=8, k=3, lams=1)}),
    "conv": dict(init=conv_init, build=conv_build, torch=conv_torch, carry=True, sizes={
        "gpu": dict(batch=128, size=32, channels=(32, 64, 64), lr=0.01, momentum=0.9),
        "cpu": dict(batch=4, size=8, channels=(4, 8), lr=0.01, momentum=0.9)}),
    "mlp": dict(init=mlp_init, build=mlp_build, torch=mlp_torch, carry=True, sizes={
        "gpu": dict(config="small"),
        "cpu": dict(sizes=[16, 12, 5], batch=8)}),
    "transformer": dict(init=transformer_init, build=transformer_build, torch=transformer_torch,
                        carry=True, sizes={
        "gpu": dict(batch=32, seq=128, vocab=256, d=256, heads=4, ff=1024, layers=2, lr=3e-4,
                    wd=0.01),
        "cpu": dict(batch=2, seq=8, vocab=13, d=16, heads=2, ff=32, layers=2, lr=1e-3,
                    wd=0.01)}),
    "perex": dict(init=perex_init, build=perex_build, torch=perex_torch, carry=True, sizes={
        "gpu": dict(batch=256, sizes=[784, 512, 512, 10], clip=1.0, noise=1.0, lr=0.1),
        "cpu": dict(batch=8, sizes=[12, 16, 16, 5], clip=1.0, noise=1.0, lr=0.1)}),
    "kmeans": dict(init=kmeans_init, build=kmeans_build, torch=kmeans_torch, carry=True, sizes={
        "gpu": dict(points=65536, dims=64, k=256),
        "cpu": dict(points=256, dims=4, k=8)}),
    "lstm": dict(init=lstm_init, build=lstm_build, torch=lstm_torch, carry=True, sizes={
        "gpu": dict(batch=128, T=32, vocab=256, emb=128, hidden=512, lr=1e-3, clip=1.0),
        "cpu": dict(batch=4, T=6, vocab=11, emb=5, hidden=8, lr=1e-3, clip=0.5)}),
    "vae": dict(init=vae_init, build=vae_build, torch=vae_torch, carry=True, sizes={
        "gpu": dict(batch=256, dim=784, hidden=512, latent=32, lr=1e-3),
        "cpu": dict(batch=4, dim=12, hidden=8, latent=3, lr=1e-3)}),
    "resnet": dict(init=resnet_init, build=resnet_build, torch=resnet_torch, carry=True, sizes={
        "gpu": dict(batch=128, size=32, channels=(32, 64, 128), classes=10, lr=0.05,
                    momentum=0.9, wd=5e-4, bn_momentum=0.9),
        "cpu": dict(batch=4, size=8, channels=(4, 8), classes=5, lr=0.05, momentum=0.9,
                    wd=5e-4, bn_momentum=0.9)}),
    "attention": dict(init=attention_init, build=attention_build, torch=attention_torch,
                      carry=True, sizes={
        "gpu": dict(batch=32, seq=128, vocab=1024, d=256, heads=4, ff=1024, layers=2,
                    classes=10, lr=3e-4, wd=0.01),
        "cpu": dict(batch=3, seq=8, vocab=13, d=16, heads=2, ff=32, layers=2, classes=4,
                    lr=1e-3, wd=0.01)}),
    "node": dict(init=node_init, build=node_build, torch=node_torch, carry=True, sizes={
        "gpu": dict(batch=256, dim=64, hidden=512, steps=20, lr=0.1),
        "cpu": dict(batch=4, dim=3, hidden=8, steps=20, lr=0.1)}),
    "newton": dict(init=newton_init, build=newton_build, torch=None, carry=False, sizes={
        "gpu": dict(batch=4096, n=16, tol=1e-3, max_iter=20),
        "cpu": dict(batch=8, n=4, tol=1e-3, max_iter=20)}),
    "embed": dict(init=embed_init, build=embed_build, torch=embed_torch, carry=True, sizes={
        "gpu": dict(batch=256, seq=64, vocab=32768, emb=256, hidden=512, classes=20,
                    dropout=0.1, smoothing=0.1, lr=1e-3),
        "cpu": dict(batch=4, seq=6, vocab=50, emb=8, hidden=8, classes=5, dropout=0.1,
                    smoothing=0.1, lr=1e-3)}),
    "logreg": dict(init=logreg_init, build=logreg_build, torch=logreg_torch, carry=True, sizes={
        "gpu": dict(n=65536, d=256, classes=16, inner=10, l2=1e-4, lr=0.5),
        "cpu": dict(n=64, d=5, classes=3, inner=10, l2=1e-4, lr=0.5)}),
}


# ---------------------------------------------------------------------------------------------
# Child process: one (program, precision, framework)

def _emit(**kw):
    """One JSON line to the parent (it merges them, so a child killed later keeps these)."""
    print(json.dumps(kw), flush=True)


def _timed(once, sync, warmup_s, repeats, target_s):
    """Median µs per step over ``repeats`` runs after ``warmup_s`` seconds (at least 2 calls)
    of steps; each run takes about ``target_s`` seconds (its step count is set from a probe)."""
    import numpy as np
    t = time.perf_counter()
    n = 0
    while n < 2 or time.perf_counter() - t < warmup_s:
        once()
        n += 1
    sync()
    t, n = time.perf_counter(), 0
    while n < 3 or time.perf_counter() - t < min(0.05, target_s):
        once()
        n += 1
    sync()
    per = (time.perf_counter() - t) / n
    steps = max(1, min(2000, int(target_s / per)))
    times = []
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        for _ in range(steps):
            once()
        sync()
        times.append((time.perf_counter() - t) / steps * 1e6)
    return float(np.median(times)), steps


def _library(fw):
    """The namespace L the programs are written against."""
    if fw == "fnx":
        import fnx
        import fnx.lax
        import fnx.nn
        import fnx.numpy
        import fnx.ops
        import fnx.scipy
        return types.SimpleNamespace(jax=fnx, jnp=fnx.numpy, lax=fnx.lax, nn=fnx.nn,
                                     tree_map=fnx.tree_util.tree_map,
                                     tree_leaves=fnx.tree_util.tree_leaves,
                                     segment_sum=fnx.ops.segment_sum,
                                     solve_triangular=fnx.scipy.linalg.solve_triangular)
    import jax
    import jax.numpy as jnp
    import jax.ops
    import jax.scipy.linalg
    return types.SimpleNamespace(jax=jax, jnp=jnp, lax=jax.lax, nn=jax.nn,
                                 tree_map=jax.tree_util.tree_map,
                                 tree_leaves=jax.tree_util.tree_leaves,
                                 segment_sum=jax.ops.segment_sum,
                                 solve_triangular=jax.scipy.linalg.solve_triangular)


def _fnx_execution(step):
    """How fnx runs the compiled program that took the most calls: ``graph`` or the reason
    it is not one, its launch count and ``describe()``."""
    from fnx.core.jit import _executables
    exes = [e for t in step._cache.values() for e in _executables.get(t.jaxpr, {}).values()]
    if not exes:
        return {"mode": "no compiled program found"}
    exe = max(exes, key=lambda e: getattr(e, "calls", 0))
    out = {"traces": step.cache_size, "describe": exe.describe() if hasattr(exe, "describe")
           else type(exe).__name__}
    if hasattr(exe, "graph"):
        out["launches"] = exe.num_launches
        out["recaptures"] = exe.recaptures
        if exe.graph is not None:
            out["mode"] = "graph"
            if exe.eager_fallbacks:
                out["mode"] += f" ({exe.eager_fallbacks} calls eager: results still held)"
        else:
            out["mode"] = exe.reason or "eager (not captured)"
    else:
        out["mode"] = "cpu (no graph)"
    return out


def _run_jaxlike(fw, prog, cfg, precision, cpu, timing):
    import numpy as np
    L = _library(fw)
    prec = "highest" if precision == "fp32" else "tensorfloat32"
    if fw == "fnx":
        import fnx
        fnx.config.update("default_matmul_precision", prec)
        device = fnx.devices("cpu" if cpu else "gpu")[0]
        put, block = (lambda x: fnx.device_put(x, device)), fnx.block_until_ready
        if cpu:
            sync = lambda: None  # noqa: E731
        else:
            import cupy as cp
            sync = cp.cuda.Device().synchronize
    else:
        import jax
        jax.config.update("jax_default_matmul_precision", prec)
        device = jax.devices()[0]
        if not cpu and device.platform != "gpu":
            raise RuntimeError(f"JAX has no GPU here (its device is {device}): install jax[cuda]")
        put, block = (lambda x: jax.device_put(x, device)), jax.block_until_ready
        sync = None
    state, data = prog["init"](cfg, np.random.default_rng(0))
    fn = prog["build"](L, cfg)
    carry = prog["carry"]
    args = list(put(([state] if carry else []) + data))
    step = L.jax.jit(fn, donate_argnums=0 if carry else ())
    res = {"sizes": {k: v for k, v in cfg.items()}}

    losses = []
    for call in ("first_call_s", "second_call_s", None):
        t = time.perf_counter()
        loss, out = step(*args)
        block((loss, out))
        if call:
            res[call] = time.perf_counter() - t
        if carry:
            args[0] = out
        losses.append(float(loss))
        del loss, out
        if call:
            _emit(**{call: res[call]})
    res["losses"] = losses
    _emit(losses=losses)

    box = {}

    def once():
        box["loss"], out = step(*args)
        if carry:
            args[0] = out
    if sync is None:
        sync = lambda: block((box.get("loss"), args[0]))  # noqa: E731
    res["step_us"], res["steps_per_repeat"] = _timed(once, sync, *timing)
    if fw == "fnx":
        res.update(_fnx_execution(step))
    if not cpu:
        res["memory_mib"] = _device_memory(fw, step, device) / 2**20
    return res


def _device_memory(fw, step, device):
    """Device bytes the framework holds (fnx) or has had in use at its peak (JAX)."""
    if fw == "jax":
        return (device.memory_stats() or {}).get("peak_bytes_in_use", float("nan"))
    import cupy as cp
    from fnx.core.jit import _executables
    held = cp.get_default_memory_pool().total_bytes()
    for t in step._cache.values():
        for exe in _executables.get(t.jaxpr, {}).values():
            held += sum(p.total_bytes() for p in getattr(exe, "_pools", ()) or ())
    return held


def _run_torch(prog, cfg, precision, cpu, timing):
    import numpy as np
    import torch
    dev = "cpu" if cpu else "cuda"
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    state, data = prog["init"](cfg, np.random.default_rng(0))
    once = prog["torch"](cfg, state, data, dev)
    sync = (lambda: None) if cpu else torch.cuda.synchronize
    res = {"sizes": dict(cfg)}
    losses = []
    for call in ("first_call_s", "second_call_s", None):
        t = time.perf_counter()
        loss = float(once())
        if call:
            res[call] = time.perf_counter() - t
        losses.append(loss)
    res["losses"] = losses
    res["step_us"], res["steps_per_repeat"] = _timed(once, sync, *timing)
    if not cpu:
        res["memory_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return res


def _child(fw, name, precision, cpu, quick):
    prog = PROGRAMS[name]
    cfg = prog["sizes"]["cpu" if cpu else "gpu"]
    # warm-up s (as mlp_train.py: long enough for fnx's background GEMM kernels to join its
    # graph), repeats, s per repeat
    timing = (1.0, 3, 0.05) if quick else (2.0, 5, 0.1)
    if fw == "torch":
        return _run_torch(prog, cfg, precision, cpu, timing)
    return _run_jaxlike(fw, prog, cfg, precision, cpu, timing)


# ---------------------------------------------------------------------------------------------
# Parent: run the children one after another, print the table

def _run_child(fw, name, precision, args, limit_s):
    """Run one child with fresh caches and a time limit; its merged JSON lines, or an error."""
    caches = [tempfile.mkdtemp(prefix="wl-fnx-"), tempfile.mkdtemp(prefix="wl-cupy-")]
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", FNX_CACHE_DIR=caches[0],
               CUPY_CACHE_DIR=caches[1])
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if args.cpu:
        env.update(FNX_PLATFORM="cpu", JAX_PLATFORMS="cpu")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", fw, name, precision] + \
        (["--cpu"] if args.cpu else []) + (["--quick"] if args.quick else [])
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)     # the child's whole session (ptxas, NVRTC, ...)
        out, err = proc.communicate()
        timed_out = True
    finally:
        for c in caches:
            shutil.rmtree(c, ignore_errors=True)
    res = {}
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                res.update(json.loads(line))
            except ValueError:
                pass
    res["wall_s"] = time.perf_counter() - t
    if timed_out:
        res["error"] = f"time limit ({limit_s:.0f} s) reached"
    elif "step_us" not in res and "error" not in res:
        res["error"] = f"exit {proc.returncode}: " + (err.strip().splitlines() or ["?"])[-1][-200:]
    return res


def _fmt(v, f="{:.1f}"):
    return "" if v is None else f.format(v)


def _table(results, names, precisions):
    head = ["program", "prec", "fnx µs", "JAX µs", "torch µs", "fnx/JAX", "fnx 1st s",
            "fnx 2nd s", "JAX 1st s", "fnx MiB", "JAX MiB", "torch MiB", "fnx execution",
            "loss fnx", "loss JAX", "loss torch"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        for prec in precisions:
            r = {fw: results.get((name, prec, fw), {}) for fw in FRAMEWORKS}

            def t(fw):
                x = r[fw]
                if "step_us" in x:
                    return f"{x['step_us']:,.1f}"
                if "error" in x:
                    return "timeout" if x["error"].startswith("time limit") else "error"
                return x.get("skipped", "")
            ratio = r["fnx"].get("step_us", 0) / r["jax"]["step_us"] \
                if "step_us" in r["fnx"] and "step_us" in r["jax"] else None
            mode = r["fnx"].get("mode", "")
            mode = mode if len(mode) <= 80 else mode[:77] + "..."
            if "launches" in r["fnx"]:
                mode += f" ({r['fnx']['launches']} launches)"
            loss = {fw: (r[fw].get("losses") or [None])[0] for fw in FRAMEWORKS}
            lines.append("| " + " | ".join([
                name, prec, t("fnx"), t("jax"), t("torch"), _fmt(ratio, "{:.2f}"),
                _fmt(r["fnx"].get("first_call_s"), "{:.2f}"),
                _fmt(r["fnx"].get("second_call_s"), "{:.2f}"),
                _fmt(r["jax"].get("first_call_s"), "{:.2f}"),
                *[_fmt(r[fw].get("memory_mib"), "{:,.0f}") for fw in FRAMEWORKS],
                mode.replace("|", "/"),
                _fmt(loss["fnx"], "{:.6g}"), _fmt(loss["jax"], "{:.6g}"),
                _fmt(loss["torch"], "{:.6g}")]) + " |")
    return "\n".join(lines)


def _loss_check(results):
    """Largest relative difference of fnx's (and torch's) first three losses from JAX's."""
    out = {}
    for (name, prec, fw), r in results.items():
        ref = results.get((name, prec, "jax"), {}).get("losses")
        if fw != "jax" and ref and r.get("losses"):
            out[(name, prec, fw)] = max(abs(a - b) / max(abs(b), 1e-30)
                                        for a, b in zip(r["losses"], ref))
    return out


def main():
    import argparse
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        fw, name, precision = sys.argv[2:5]
        try:
            _emit(done=True, **_child(fw, name, precision, "--cpu" in sys.argv,
                                      "--quick" in sys.argv))
        except BaseException as e:      # an error cell, not a dead run
            import traceback
            _emit(error=f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}",
                  traceback=traceback.format_exc()[-3000:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*", metavar="PROGRAM",
                    help="any of " + " ".join(PROGRAMS) + " (default: all)")
    ap.add_argument("--quick", action="store_true",
                    help="shorter timing, tf32 only unless --precision says otherwise")
    ap.add_argument("--cpu", action="store_true",
                    help="fnx, JAX and PyTorch on the CPU, tiny sizes")
    ap.add_argument("--precision", choices=("fp32", "tf32", "both"), default=None)
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                    help="comma-separated subset of " + ",".join(FRAMEWORKS))
    ap.add_argument("--json", metavar="PATH", help="write every result here")
    ap.add_argument("--child-limit", type=float, default=None, help="seconds per child")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run")
    args = ap.parse_args()
    unknown = [n for n in args.programs if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown programs {unknown}; choose from {list(PROGRAMS)}")
    names = args.programs or list(PROGRAMS)
    precision = args.precision or ("fp32" if args.cpu else "tf32" if args.quick else "both")
    precisions = PRECISIONS if precision == "both" else (precision,)
    frameworks = [f for f in args.frameworks.split(",") if f in FRAMEWORKS]
    child_limit = args.child_limit or (60 if args.quick else 120)
    budget = args.budget or (170 if args.quick else 460)

    start = time.perf_counter()
    results = {}
    for name in names:
        for prec in precisions:
            for fw in frameworks:
                if fw == "torch" and PROGRAMS[name]["torch"] is None:
                    results[(name, prec, fw)] = {"skipped": ""}     # a blank cell
                    continue
                left = budget - (time.perf_counter() - start)
                if left < 5:
                    results[(name, prec, fw)] = {"skipped": "skipped (run budget)"}
                    continue
                r = results[(name, prec, fw)] = _run_child(fw, name, prec, args,
                                                           min(child_limit, left))
                status = f"{r['step_us']:.1f} µs" if "step_us" in r else r.get("error")
                print(f"[{time.perf_counter() - start:6.1f} s] {name} {prec} {fw}: {status}",
                      file=sys.stderr, flush=True)

    where = "CPU (--cpu, tiny sizes)" if args.cpu else "GPU"
    print(f"\n{where}; step times in µs, median of {3 if args.quick else 5} repeats; first "
          "calls with empty fnx/CuPy caches; losses of the first call\n")
    print(_table(results, names, precisions))
    diffs = _loss_check(results)
    if diffs:
        print("\nlargest relative difference from JAX over the first three losses: " + ", ".join(
            f"{n} {p} {fw} {d:.1e}" for (n, p, fw), d in sorted(diffs.items())))
    errors = [(k, r) for k, r in results.items() if "error" in r]
    if errors:
        print("\nerrors:")
        for (n, p, fw), r in errors:
            print(f"- {n} {p} {fw}: {r['error']}")
    print(f"\nwhole run: {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(program=n, precision=p, framework=fw, **r)
                       for (n, p, fw), r in results.items()], f, indent=1)


if __name__ == "__main__":
    main()

"""Training and solve programs fnx was not tuned for, beside JAX and PyTorch.

    PYTHONPATH=. python3 benchmarks/workloads.py [--quick] [--cpu] [--precision fp32|tf32|both]
        [--json PATH] [gru ridge lstsq conv mlp transformer perex kmeans ...]

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

Each program is written once, ``build(L, cfg)``, against a namespace ``L`` holding ``jnp``,
``lax``, ``nn``, ``jax`` (the top-level module) and ``solve_triangular``, and runs unchanged with
fnx or JAX; PyTorch has its own version of each. Optimizers are written out (Adam, AdamW, SGD
with momentum) in fnx/JAX and are ``torch.optim``'s (the same formulas) in PyTorch.

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


def _adam_init(params):
    import numpy as np
    zeros = {k: np.zeros_like(p) for k, p in params.items()}
    return {"m": zeros, "v": dict(zeros), "t": np.zeros((), np.float32)}


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
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
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
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
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
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
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
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
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
        norm = jnp.sqrt(sum(jnp.sum(v * v) for v in L.tree_leaves(g)))
        scale = jnp.minimum(1.0, clip / (norm + 1e-6))
        return value, L.tree_map(lambda v: v * scale, g)

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
# The table of programs: init (NumPy values), build (fnx/JAX), torch, whether the step carries
# state (its second result is the next call's first argument, donated), and sizes per mode.

PROGRAMS = {
    "gru": dict(init=gru_init, build=gru_build, torch=gru_torch, carry=True, sizes={
        "gpu": dict(batch=64, T=64, vocab=128, emb=64, hidden=256, lr=1e-3),
        "cpu": dict(batch=4, T=6, vocab=11, emb=5, hidden=8, lr=1e-2)}),
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
        "cpu": dict(batch=2, seq=8, vocab=13, d=16, heads=2, ff=32, layers=2, lr=1e-2,
                    wd=0.01)}),
    "perex": dict(init=perex_init, build=perex_build, torch=perex_torch, carry=True, sizes={
        "gpu": dict(batch=256, sizes=[784, 512, 512, 10], clip=1.0, noise=1.0, lr=0.1),
        "cpu": dict(batch=8, sizes=[12, 16, 16, 5], clip=1.0, noise=1.0, lr=0.1)}),
    "kmeans": dict(init=kmeans_init, build=kmeans_build, torch=kmeans_torch, carry=True, sizes={
        "gpu": dict(points=65536, dims=64, k=256),
        "cpu": dict(points=256, dims=4, k=8)}),
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

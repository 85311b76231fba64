"""MLP train step on the GPU: fnx beside JAX, PyTorch eager and PyTorch in one CUDA graph.

    PYTHONPATH=. python3 benchmarks/mlp_train.py [--quick] [--gelu] [small|mid|large ...]

The step: forward through ReLU layers (GELU, tanh form, with ``--gelu``), softmax cross-entropy with integer labels, backward,
SGD update; float32 data; "fp32" = full float32 products, "tf32" = TF32 tensor cores. Each
framework runs in its own process, one after another, on the same GPU. Prints step times (median
over repeats) and ratios to JAX, and fnx's first-call time (trace + lowering + kernel compiles).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

CONFIGS = {
    "small": ([784, 512, 512, 10], 128),
    "mid": ([784, 2048, 2048, 10], 1024),
    "large": ([1024, 4096, 4096, 4096, 1024], 4096),
}
QUICK = "--quick" in sys.argv
ACT = "gelu" if "--gelu" in sys.argv else "relu"
STEPS = {"small": 200, "mid": 100, "large": 10}
REPEATS = 5
WARMUP_S = 2.0


def _data(sizes, batch, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
               np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch).astype(np.int32)
    return params, x, y


def _timed(step_once, sync, steps):
    """Median µs per step over REPEATS runs of ``steps``, after WARMUP_S seconds of steps (for
    every framework alike: a training loop's steady state, with whatever each one finishes in
    the background, such as fnx's GEMM kernels joining its captured graph)."""
    import time
    import numpy as np
    t = time.perf_counter()
    while time.perf_counter() - t < WARMUP_S:
        step_once()
    times = []
    for _ in range(REPEATS):
        sync()
        t = time.perf_counter()
        for _ in range(steps):
            step_once()
        sync()
        times.append((time.perf_counter() - t) / steps * 1e6)
    return float(np.median(times))


def fnx_train_step(precision):
    """The step in fnx: ``(params, x, y) -> (loss, new params)``."""
    import fnx
    import fnx.nn as nn
    import fnx.numpy as jnp
    prec = "highest" if precision == "fp32" else "tensorfloat32"

    def train_step(params, x, y):
        def loss(params):
            h = x
            for w, b in params[:-1]:
                z = jnp.matmul(h, w, precision=prec) + b
                h = nn.relu(z) if ACT == "relu" else nn.gelu(z, approximate=True)
            w, b = params[-1]
            logits = jnp.matmul(h, w, precision=prec) + b
            logp = nn.log_softmax(logits)
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        value, grads = fnx.value_and_grad(loss)(params)
        return value, fnx.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    return train_step


def run_fnx(name, precision):
    import time
    import cupy as cp
    import fnx
    sizes, batch = CONFIGS[name]
    params, x, y = _data(sizes, batch)
    train_step = fnx_train_step(precision)

    gpu = fnx.devices("gpu")[0]
    params, x, y = fnx.device_put((params, x, y), gpu)
    t0 = time.perf_counter()
    if hasattr(fnx, "jit"):
        step = fnx.jit(train_step, donate_argnums=0)
        value, params = step(params, x, y)
        value.block_until_ready()
        first = time.perf_counter() - t0

        def once():
            nonlocal params, value
            value, params = step(params, x, y)
    else:
        leaves, tree = fnx.tree_util.tree_flatten((params, x, y))
        closed = fnx.make_jaxpr(lambda *l: fnx.tree_util.tree_leaves(
            train_step(*fnx.tree_util.tree_unflatten(tree, l))))(*leaves)
        exe = gpu.compile(closed.jaxpr, closed.consts)
        bufs = [l._value for l in leaves]
        n_p = len(bufs) - 2
        outs = exe(*bufs)
        cp.cuda.get_current_stream().synchronize()
        first = time.perf_counter() - t0

        def once():
            nonlocal bufs, outs
            outs = exe(*bufs)
            bufs = outs[1:1 + n_p] + bufs[n_p:]
    step_us = _timed(once, lambda: cp.cuda.get_current_stream().synchronize(), STEPS[name])
    return {"step_us": step_us, "first_call_s": first}


def run_jax(name, precision):
    import jax
    import jax.numpy as jnp
    sizes, batch = CONFIGS[name]
    params, x, y = _data(sizes, batch)
    prec = "highest" if precision == "fp32" else "tensorfloat32"

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            z = jnp.matmul(h, w, precision=prec) + b
            h = jax.nn.relu(z) if ACT == "relu" else jax.nn.gelu(z, approximate=True)
        w, b = params[-1]
        logp = jax.nn.log_softmax(jnp.matmul(h, w, precision=prec) + b)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    step = jax.jit(step, donate_argnums=0)
    params, x, y = jax.device_put((params, x, y))
    import time
    t = time.perf_counter()
    value, params = step(params, x, y)
    value.block_until_ready()
    first = time.perf_counter() - t
    state = {"p": params}

    def once():
        state["v"], state["p"] = step(state["p"], x, y)
    us = _timed(once, lambda: jax.block_until_ready(state.get("v", value)), STEPS[name])
    return {"step_us": us, "first_call_s": first}


def run_torch(name, precision, graphed):
    import torch
    sizes, batch = CONFIGS[name]
    params, x, y = _data(sizes, batch)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dev = "cuda"
    ps = [(torch.tensor(w, device=dev, requires_grad=True), torch.tensor(b, device=dev,
                                                                         requires_grad=True))
          for w, b in params]
    xt, yt = torch.tensor(x, device=dev), torch.tensor(y, device=dev).long()
    flat = [t for pair in ps for t in pair]

    def step():
        h = xt
        for w, b in ps[:-1]:
            h = torch.relu(h @ w + b) if ACT == "relu" else \
                torch.nn.functional.gelu(h @ w + b, approximate="tanh")
        w, b = ps[-1]
        loss = torch.nn.functional.cross_entropy(h @ w + b, yt)
        grads = torch.autograd.grad(loss, flat)
        with torch.no_grad():
            for p, g in zip(flat, grads):
                p.sub_(0.01 * g)
        return loss
    if graphed:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        once = g.replay
    else:
        once = step
    us = _timed(once, torch.cuda.synchronize, STEPS[name])
    return {"step_us": us}


def _child(framework, name, precision):
    if framework == "fnx":
        return run_fnx(name, precision)
    if framework == "jax":
        return run_jax(name, precision)
    return run_torch(name, precision, graphed=framework == "torch_graph")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, fw, name, precision = sys.argv[:5]
        print(json.dumps(_child(fw, name, precision)))
        return
    names = [a for a in sys.argv[1:] if a in CONFIGS] or \
        (["small", "mid"] if QUICK else ["small", "mid", "large"])
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    results = {}
    for name in names:
        for precision in ("fp32", "tf32"):
            for fw in ("fnx", "jax", "torch_eager", "torch_graph"):
                proc = subprocess.run([sys.executable, __file__, "--child", fw, name, precision]
                                      + (["--gelu"] if ACT == "gelu" else []),
                                      capture_output=True, text=True, env=env, timeout=600)
                try:
                    results[(name, precision, fw)] = json.loads(proc.stdout.strip().splitlines()[-1])
                except Exception:
                    results[(name, precision, fw)] = {"error": proc.stderr.strip()[-300:]}
                    print(f"{fw} {name} {precision} failed: {proc.stderr.strip()[-300:]}",
                          file=sys.stderr)
    print(f"{'config':14s} {'fnx':>9s} {'JAX':>9s} {'torch':>9s} {'torch+graph':>11s} "
          f"{'fnx/JAX':>8s} {'fnx first call':>15s}")
    for name in names:
        for precision in ("fp32", "tf32"):
            r = {fw: results[(name, precision, fw)] for fw in
                 ("fnx", "jax", "torch_eager", "torch_graph")}
            t = {fw: v.get("step_us", float("nan")) for fw, v in r.items()}
            print(f"{name + ' ' + precision:14s} {t['fnx']:9.1f} {t['jax']:9.1f} "
                  f"{t['torch_eager']:9.1f} {t['torch_graph']:11.1f} "
                  f"{t['fnx'] / t['jax']:8.3f} {r['fnx'].get('first_call_s', float('nan')):14.2f}s")
    print(f"step times in microseconds (median of 5 repeats), {ACT} hidden layers")


if __name__ == "__main__":
    main()

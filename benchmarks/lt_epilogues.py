"""cuBLASLt's ReLU epilogues with an auxiliary bitmask, against the path fnx takes, per hidden
layer of the MLP configs: forward ``relu(x @ w + b)`` (RELU_AUX_BIAS writes the mask the
backward reads) and backward ``gz = (g @ w2.T) * (h > 0)`` with ``gb = gz.sum(0)``
(DRELU_BGRAD). fnx's figures are the GPU time of its lowered launches (the gemm table's
choice, plus the fused mask and bias-gradient kernel); cuBLASLt's are its fastest algorithm.

    PYTHONPATH=. python3 benchmarks/lt_epilogues.py [small|mid|large ...]
"""
from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mlp_train import CONFIGS  # noqa: E402


def _fnx_us(f, args):
    import fnx
    from fnx.cuda.lowering import lower
    gpu = fnx.devices("gpu")[0]
    closed = fnx.make_jaxpr(f)(*args)
    exe = lower(closed.jaxpr, closed.consts, gpu)
    bufs = [a._value for a in fnx.device_put(list(args), gpu)]
    exe(*bufs)              # picks its kernels
    return sum(t for _, t in exe.profile(*bufs))


def _lt_us(plan, run):
    from fnx.cuda import gemm_table
    times = []
    for i in range(len(plan.algos)):
        try:
            times.append(min(gemm_table._time(lambda: run(i), 10) for _ in range(2)) * 1e3)
        except RuntimeError:
            pass
    return min(times) if times else float("nan")


def layer(m, n, k, k2, precision, rng):
    import cupy as cp
    import fnx.nn as nn
    import fnx.numpy as jnp
    from fnx import lax
    from fnx.cuda.cublaslt import Plan, aux_shape
    x, w, b, g, w2, h = ((rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)
                         for s in [(m, k), (k, n), (n,), (m, k2), (n, k2), (m, n)])
    fwd = _fnx_us(lambda x, w, b: nn.relu(jnp.matmul(x, w, precision=precision) + b),
                  (x, w, b))

    def backward(g, w2, h):     # as a train step's backward: g @ w2.T, then the mask
        gh = lax.dot_general(g, w2, (((1,), (1,)), ((), ())), precision=precision)
        gz = jnp.where(h > 0, gh, 0.0)
        return gz, gz.sum(0)
    bwd = _fnx_us(backward, (g, w2, h))
    xd, wd, bd, gd, w2d = (cp.asarray(a) for a in (x, w, b, g, w2))
    out, gb = cp.empty((m, n), np.float32), cp.empty(n, np.float32)
    forward = Plan(m, n, k, False, False, np.float32, np.float32, precision,
                   epilogue="relu_aux_bias", max_algos=16)
    shape, dtype = aux_shape(m, n, "relu_aux_bias", np.float32)
    aux = cp.zeros(shape, dtype)
    lt_fwd = _lt_us(forward, lambda i: forward(out, xd, wd, i, bias=bd, aux=aux))
    drelu = Plan(m, n, k2, False, True, np.float32, np.float32, precision,
                 epilogue="drelu_bgrad", max_algos=16)
    lt_bwd = _lt_us(drelu, lambda i: drelu(out, gd, w2d, i, bias=gb, aux=aux))
    return fwd, lt_fwd, bwd, lt_bwd


def main(names):
    rng = np.random.default_rng(0)
    print(f"{'layer (m x n x k, next k)':34s} {'prec':5s} {'fwd fnx':>8s} {'fwd Lt':>8s} "
          f"{'bwd fnx':>8s} {'bwd Lt':>8s} {'both fnx':>9s} {'both Lt':>8s}")
    for name in names:
        sizes, batch = CONFIGS[name]
        for k, n, k2 in zip(sizes[:-2], sizes[1:-1], sizes[2:]):
            for prec, tag in (("highest", "fp32"), ("tensorfloat32", "tf32")):
                f, lf, b, lb = layer(batch, n, k, k2, prec, rng)
                print(f"{name + f' {batch}x{n}x{k}, {k2}':34s} {tag:5s} {f:8.1f} {lf:8.1f} "
                      f"{b:8.1f} {lb:8.1f} {f + b:9.1f} {lf + lb:8.1f}", flush=True)
    print("GPU µs per call")


if __name__ == "__main__":
    main(sys.argv[1:] or ["small", "mid", "large"])

"""Data parallelism on N GPUs: correctness, scaling efficiency and all-reduce bus bandwidth.

    NCCL_NVLS_ENABLE=0 python3 benchmarks/multi_gpu.py            # every visible GPU
    python3 benchmarks/multi_gpu.py --gpus 1,2,4,8 --steps 50
    FNX_PLATFORM=cpu XLA_FLAGS=--xla_force_host_platform_device_count=4 \\
        python3 benchmarks/multi_gpu.py --gpus 1,4 --steps 3        # dry run on virtual CPUs

1. **Same step**: one data-parallel MLP step (batch split over a 'batch' mesh axis, parameters
   replicated; shard_map averaging gradients with pmean, and jit with shardings) on N devices
   equals the one-device step on the same global batch.
2. **Scaling efficiency** with the per-device batch fixed (weak scaling): an MLP step and a small
   transformer step; efficiency = time(1 device) / time(N devices) (1.0 is perfect: N times the
   work in the same time).
3. **All-reduce bus bandwidth** (nccl-tests' definition): psum of a float32 buffer of each size
   inside a jitted device program; busbw = bytes / time * 2 (N - 1) / N.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import numpy as np  # noqa: E402

import fnx  # noqa: E402
import fnx.numpy as jnp  # noqa: E402
from fnx import lax  # noqa: E402
from fnx.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

MLP = [1024, 2048, 2048, 1024]
PER_DEVICE_BATCH = 128
D_MODEL, HEADS, SEQ, LAYERS = 256, 4, 128, 2


def mlp_params(rng):
    return [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in zip(MLP[:-1], MLP[1:])]


def mlp_loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = fnx.nn.relu(h)
    return jnp.mean((h - y) ** 2)


def transformer_params(rng):
    def dense(m, n):
        return (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32)
    layers = []
    for _ in range(LAYERS):
        layers.append({"qkv": dense(D_MODEL, 3 * D_MODEL), "out": dense(D_MODEL, D_MODEL),
                       "up": dense(D_MODEL, 4 * D_MODEL), "down": dense(4 * D_MODEL, D_MODEL),
                       "ln1": np.ones(D_MODEL, np.float32), "ln2": np.ones(D_MODEL, np.float32)})
    return layers


def _norm(x, g):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * g


def transformer_loss(params, x, y):
    b, t, d = x.shape
    h = x
    for p in params:
        q, k, v = jnp.split(_norm(h, p["ln1"]) @ p["qkv"], 3, axis=-1)
        heads = lambda z: z.reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)  # noqa
        att = fnx.nn.softmax(heads(q) @ heads(k).transpose(0, 1, 3, 2) / np.sqrt(d // HEADS))
        h = h + (att @ heads(v)).transpose(0, 2, 1, 3).reshape(b, t, d) @ p["out"]
        h = h + fnx.nn.gelu(_norm(h, p["ln2"]) @ p["up"]) @ p["down"]
    return jnp.mean((h - y) ** 2)


def dp_step(loss_fn, lr=1e-3):
    def step(params, x, y):
        loss, grads = fnx.value_and_grad(loss_fn)(params, x, y)
        grads = lax.pmean(grads, "batch")
        params = fnx.tree.map(lambda p, g: p - lr * g, params, grads)
        return params, lax.pmean(loss, "batch")
    return step


def make_step(loss_fn, devices, engine="shard_map"):
    """The data-parallel step: shard_map with explicit pmeans, or jit with shardings (which
    partitions the global step and adds the psums itself)."""
    mesh = fnx.make_mesh((len(devices),), ("batch",), devices=devices)
    if engine == "jit":
        rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))

        def step(params, x, y):
            loss, grads = fnx.value_and_grad(loss_fn)(params, x, y)
            return fnx.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss
        return fnx.jit(step, in_shardings=(rep, rows, rows), out_shardings=(rep, rep))
    return fnx.shard_map(dp_step(loss_fn), mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                         out_specs=(P(), P()))


def placed(devices, *batch):
    """The global batch with each device's rows already on that device (as a data loader
    would place them), so the timed steps copy nothing from the host."""
    mesh = fnx.make_mesh((len(devices),), ("batch",), devices=devices)
    return [fnx.device_put(b, NamedSharding(mesh, P("batch"))) for b in batch]


def timed(step, params, x, y, steps):
    for _ in range(3):                       # warm-up: compile, then capture the graphs
        params, loss = step(params, x, y)
    fnx.block_until_ready(loss)
    t = time.perf_counter()
    for _ in range(steps):
        params, loss = step(params, x, y)
    fnx.block_until_ready((params, loss))
    return (time.perf_counter() - t) / steps


def check_same_step(devices, rng):
    n = len(devices)
    params = mlp_params(rng)
    x = rng.standard_normal((PER_DEVICE_BATCH * n, MLP[0])).astype(np.float32)
    y = rng.standard_normal((PER_DEVICE_BATCH * n, MLP[-1])).astype(np.float32)
    one, loss_1 = make_step(mlp_loss, devices[:1])(params, x, y)
    for engine in ("shard_map", "jit"):
        many, loss_n = make_step(mlp_loss, devices, engine)(params, x, y)
        err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                  for a, b in zip(fnx.tree.leaves(many), fnx.tree.leaves(one)))
        print(f"same step ({engine}) on {n} devices as on 1 (global batch {len(x)}): loss "
              f"{float(loss_n):.6f} vs {float(loss_1):.6f}, max |param difference| {err:.2e}")
        assert err < 1e-4 and abs(float(loss_n) - float(loss_1)) < 1e-4 * abs(float(loss_1)), \
            f"the data-parallel step ({engine}) differs from the one-device step"


def scaling(name, loss_fn, params_fn, batch_fn, counts, all_devices, steps, rng, engine):
    base = None
    for n in counts:
        devices = all_devices[:n]
        batch = PER_DEVICE_BATCH * n if name == "mlp" else 8 * n
        x, y = placed(devices, *batch_fn(rng, batch))
        seconds = timed(make_step(loss_fn, devices, engine), params_fn(rng), x, y, steps)
        base = base or seconds
        print(f"  {name:12s} ({engine}) {n} device(s): {seconds * 1e3:8.2f} ms/step, "
              f"efficiency {base / seconds:5.2f}")


def all_reduce_bandwidth(devices, steps):
    n = len(devices)
    mesh = fnx.make_mesh((n,), ("i",), devices=devices)
    print(f"all-reduce bus bandwidth over {n} devices (psum in a jitted device program):")
    for size in (1 << 16, 1 << 20, 1 << 24, 1 << 26):
        f = fnx.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                          out_specs=P("i"))
        x, = placed(devices, np.ones(size * n // 4, np.float32))    # size bytes a device
        out = f(x)
        for _ in range(2):
            out = f(out)
        fnx.block_until_ready(out)
        t = time.perf_counter()
        for _ in range(steps):
            out = f(out)
        fnx.block_until_ready(out)
        seconds = (time.perf_counter() - t) / steps
        busbw = size / seconds * 2 * (n - 1) / n / 1e9 if n > 1 else 0.0
        print(f"  {size / 2**20:8.2f} MiB: {seconds * 1e6:9.1f} us, busbw {busbw:7.1f} GB/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", default=None, help="device counts, e.g. 1,2,4,8")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    devices = fnx.devices()
    counts = [int(c) for c in args.gpus.split(",")] if args.gpus else \
        sorted({1, *[2 ** k for k in range(1, 4) if 2 ** k <= len(devices)], len(devices)})
    print(f"devices: {devices}")
    rng = np.random.default_rng(0)
    check_same_step(devices[:max(counts)], rng)

    def mlp_batch(rng, b):
        return (rng.standard_normal((b, MLP[0])).astype(np.float32),
                rng.standard_normal((b, MLP[-1])).astype(np.float32))

    def seq_batch(rng, b):
        return (rng.standard_normal((b, SEQ, D_MODEL)).astype(np.float32),
                rng.standard_normal((b, SEQ, D_MODEL)).astype(np.float32))
    print("scaling efficiency (per-device batch fixed):")
    for engine in ("shard_map", "jit"):
        scaling("mlp", mlp_loss, mlp_params, mlp_batch, counts, devices, args.steps, rng,
                engine)
        scaling("transformer", transformer_loss, transformer_params, seq_batch, counts,
                devices, args.steps, rng, engine)
    all_reduce_bandwidth(devices[:max(counts)], args.steps)


if __name__ == "__main__":
    main()

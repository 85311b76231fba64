"""Where the time of a jitted MLP train step goes on the GPU: the lowered program's launches with
each one's GPU time, the whole graph's replay time, and the time of a full ``fnx.jit`` call.

    PYTHONPATH=. python3 benchmarks/profile_step.py [small|mid|large] [fp32|tf32]
"""
from __future__ import annotations

import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mlp_train import CONFIGS, _data, fnx_train_step  # noqa: E402


def main(name="small", precision="fp32"):
    import cupy as cp
    import fnx
    from fnx.core.jit import _executables
    sizes, batch = CONFIGS[name]
    train_step = fnx_train_step(precision)

    params, x, y = fnx.device_put(_data(sizes, batch), fnx.devices("gpu")[0])
    step = fnx.jit(train_step, donate_argnums=0)
    t = time.perf_counter()
    while time.perf_counter() - t < 2.0:    # as mlp_train: kernels compiling join the graph
        value, params = step(params, x, y)
    cp.cuda.Device().synchronize()
    traced = next(iter(step._cache.values()))
    exe = next(e for (backend, donated), e in _executables[traced.jaxpr].items() if donated)
    print(exe.describe())
    from fnx.cuda import gemm_table
    print("GEMM choices:", {k: v for k, v in gemm_table.TABLE.choices.items() if isinstance(v, str)})
    leaves = [a._value for a in fnx.tree_util.tree_leaves((params, x, y))]
    consts = [c._value if hasattr(c, "_value") else c for c in traced.consts]
    prof = exe.executable.profile(*consts, *leaves)
    total = sum(t for _, t in prof)
    print(f"\nper launch (GPU µs, each replayed alone), sum {total:.1f} µs")
    for label, t in prof:
        print(f"  {t:7.2f}  {label}")
    del leaves, consts     # the step donates params: no stray references to their buffers
    stream = cp.cuda.get_current_stream()
    if exe.graph is not None:
        for _ in range(10):
            exe.graph.launch(stream)
        stream.synchronize()
        n = 500
        t0 = time.perf_counter()
        for _ in range(n):
            exe.graph.launch(stream)
        stream.synchronize()
        print(f"graph replay alone: {(time.perf_counter() - t0) / n * 1e6:.1f} µs")
    n = 500
    t0 = time.perf_counter()
    for _ in range(n):
        value, params = step(params, x, y)
    stream.synchronize()
    print(f"fnx.jit call: {(time.perf_counter() - t0) / n * 1e6:.1f} µs")
    t0 = time.perf_counter()
    for _ in range(n):
        value, params = step(params, x, y)
    print(f"fnx.jit call, host only (no sync): {(time.perf_counter() - t0) / n * 1e6:.1f} µs")
    stream.synchronize()
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        value, params = step(params, x, y)
    prof.disable()
    stream.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main(*sys.argv[1:3])

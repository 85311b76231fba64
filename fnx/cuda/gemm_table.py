"""The kernel table for products: for each problem (shape, layout, dtype, precision, epilogue)
the candidates are cublasGemmEx with cuBLAS's own choice and every algorithm cuBLASLt's heuristic
offers. The first eager call of a problem times them on the device and keeps the fastest; the
choice is remembered in memory and on disk (``$FNX_CACHE_DIR`` or ``~/.cache/fnx``), so later
processes skip the timing. During stream capture an unknown problem uses cublasGemmEx.
"""
from __future__ import annotations

import json
import os

import numpy as np

from . import cublas

_choices: dict = {}          # key -> "gemmex" or the index of a cuBLASLt algorithm
_plans: dict = {}
_loaded = False


def cache_file() -> str:
    import cupy as cp
    root = os.environ.get("FNX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "fnx")
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    tag = "".join(c if c.isalnum() else "-" for c in name)
    return os.path.join(root, f"gemm-{tag}-cublas{cp.cuda.get_cublas_version()}.json"
                        if hasattr(cp.cuda, "get_cublas_version") else f"gemm-{tag}.json")


def _load():
    global _loaded
    _loaded = True
    try:
        with open(cache_file()) as fh:
            _choices.update(json.load(fh))
    except (OSError, ValueError):
        pass


def _save():
    path = cache_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as fh:
            json.dump(_choices, fh)
        os.replace(tmp, path)
    except OSError:
        pass        # a read-only home only costs the timing in the next process


def _plan(key, args):
    plan = _plans.get(key)
    if plan is None:
        from .cublaslt import Plan
        try:
            plan = Plan(*args)
        except (RuntimeError, OSError, AttributeError):
            plan = None
        _plans[key] = plan
    return plan


_timing_stream = None


def _time(fn, reps):
    """GPU milliseconds per call of ``fn``: ``reps`` calls captured into one CUDA graph and
    replayed, so host launch cost (which dwarfs small GEMMs) stays out of the figure."""
    import cupy as cp
    from .cublas import handle_for
    global _timing_stream
    if _timing_stream is None:
        _timing_stream = cp.cuda.Stream(non_blocking=True)
        handle_for(_timing_stream.ptr)
    stream = _timing_stream
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    with stream:
        fn()
        stream.begin_capture()
        try:
            for _ in range(reps):
                fn()
        finally:
            graph = stream.end_capture()
        graph.launch(stream)
        start.record(stream)
        graph.launch(stream)
        stop.record(stream)
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / reps


def _select(key, plan, gemmex, run_lt, flops):
    import cupy as cp
    reps = int(min(20, max(2, 2e10 / max(flops, 1))))
    cp.cuda.get_current_stream().synchronize()   # operands are ready before timing reads them
    best, best_t = "gemmex", _time(gemmex, reps)
    n_algos = len(plan.algos) if plan is not None else 0
    for i in range(min(n_algos, 8 if flops < 1e11 else 4)):
        try:
            t = _time(lambda i=i: run_lt(i), reps)
        except RuntimeError:
            continue
        if t < best_t:
            best, best_t = i, t
    return best


def matmul_into(out, a, b, trans_a: bool, trans_b: bool, precision: str, batch: int = 1):
    """``out = op(a) @ op(b)`` (batched along a leading axis when ``batch > 1``) with the
    fastest known kernel for this problem."""
    import cupy as cp
    m, n = out.shape[-2], out.shape[-1]
    k = a.shape[-2] if trans_a else a.shape[-1]
    dtype = np.dtype(a.dtype)
    key = f"{m}x{n}x{k}b{batch}{'T' if trans_a else 'N'}{'T' if trans_b else 'N'}" \
          f"-{dtype.name}-{np.dtype(out.dtype).name}-{precision}"
    if not _loaded:
        _load()
    choice = _choices.get(key)

    def gemmex():
        cublas.matmul_into(out, a, b, trans_a, trans_b, precision, batch=batch)
    if choice is None:
        if cp.cuda.get_current_stream().is_capturing():
            return gemmex()
        plan = _plan(key, (m, n, k, trans_a, trans_b, dtype, out.dtype, precision, batch))
        choice = _choices[key] = _select(key, plan, gemmex, lambda i: plan(out, a, b, i),
                                         2.0 * m * n * k * batch)
        _save()
    if choice == "gemmex":
        return gemmex()
    plan = _plan(key, (m, n, k, trans_a, trans_b, dtype, out.dtype, precision, batch))
    if plan is None or choice >= len(plan.algos):
        return gemmex()
    return plan(out, a, b, choice)


def choice_for(key):
    return _choices.get(key)

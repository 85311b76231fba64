"""What a first ``jit`` call on the GPU needs, made ready on a background thread as soon as the
GPU backend starts, while the user's program is still making its data: the compiling processes
(fnx.cuda.compile), the CUDA libraries (NVRTC, cuBLAS, cuBLASLt: on a fresh machine, reading
them from disk takes a few hundred milliseconds) and fnx's GPU compiler modules (0.1 s of
imports), which would otherwise all land inside the first call."""
from __future__ import annotations

import importlib
import threading

_started = False


def start() -> None:
    """Begin loading, once per process; returns at once."""
    global _started
    if not _started:
        _started = True
        threading.Thread(target=_load, name="fnx-preload", daemon=True).start()


def _load() -> None:
    try:
        from . import compile
        compile.start_workers()
        import cupy as cp
        cp.cuda.nvrtc.getVersion()
        cp.cuda.device.get_cublas_handle()      # loads libcublas, and with it libcublasLt
        for module in ("lowering", "graph", "lt_backward"):
            importlib.import_module(f"{__package__}.{module}")
    except Exception:       # the first call then loads them itself, and reports what fails
        pass

"""Loading the CUDA libraries a first ``jit`` call needs (NVRTC, cuBLAS, cuBLASLt) on a
background thread as soon as the GPU backend starts, while the user's program is still making
its data: on a fresh machine, reading them from disk takes a few hundred milliseconds that would
otherwise land inside the first call."""
from __future__ import annotations

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
    except Exception:       # the first call then loads them itself, and reports what fails
        pass

"""Compiling generated CUDA source into kernels, cached in memory (CuPy caches binaries on disk).

NVRTC's cost is mostly per program (starting up, parsing the headers, loading the module), not
per kernel, so ``compile_together`` builds the kernels a lowered program needs as a few programs,
compiled on background threads (NVRTC runs without Python's lock, though it overlaps programs
only in part): a first call pays the start-up cost a few times instead of once per kernel. It
returns at once: the first launch of a kernel waits for its own program only, so a first call's
cuBLAS work (choosing GEMM algorithms) runs while the rest still compiles.
"""
from __future__ import annotations

import functools
import os
import re
from concurrent.futures import ThreadPoolExecutor

_KERNELS: dict = {}      # (source, name) -> cupy.RawKernel
_PENDING: dict = {}      # (source, name) -> Future of the program compiling it


def kernel(source: str, name: str):
    """The compiled kernel ``name`` of ``source``: waits for the program compiling it, if one
    is, and compiles it alone if none did."""
    unit = (source, name)
    k = _KERNELS.get(unit)
    if k is None:
        future = _PENDING.get(unit)
        if future is not None:
            future.result()
            k = _KERNELS.get(unit)
    if k is None:
        import cupy as cp
        k = _KERNELS[unit] = cp.RawKernel(source, name)
    return k


@functools.lru_cache(maxsize=None)
def compute_capability() -> int:
    """The current device's compute capability as a number (90 for an H100)."""
    import cupy as cp
    return int(cp.cuda.Device().compute_capability)


def ready(unit) -> bool:
    """Whether ``unit = (source, name)`` is compiled (launching it would not wait)."""
    return unit in _KERNELS


def when_compiled(units, callback) -> None:
    """Call ``callback()`` (on a compiling thread) once the programs compiling ``units`` are
    done, or at once if none is still compiling."""
    futures = {id(f): f for f in (_PENDING.get(u) for u in units) if f is not None}
    if not futures:
        callback()
        return
    left = [len(futures)]

    def done(_):
        left[0] -= 1
        if not left[0]:
            callback()
    for f in futures.values():
        f.add_done_callback(done)


_THREADS = max(1, min(4, (os.cpu_count() or 1) // 2))
_pool = None


def _compile_pool():
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="fnx-nvrtc")
    return _pool


def in_background(build) -> None:
    """Run ``build()`` (compiling a module that ``compile_together`` cannot batch, such as one
    of templates) on a compiling thread, so a first call does not wait for it in line."""
    _compile_pool().submit(build)


def compile_together(units) -> None:
    """Compile the not yet compiled ``units = [(source, name)]``, split into up to ``_THREADS``
    NVRTC programs compiled in parallel.

    Each unit goes into its own namespace, so helper functions of the same name do not clash;
    its kernel is renamed (kernels have C linkage, which namespaces do not separate) and
    ``#include`` lines move to the top. If a combined program fails to build, nothing of it is
    cached and each of its kernels compiles alone when first launched."""
    pending = list(dict.fromkeys(u for u in units if u not in _KERNELS and u not in _PENDING))
    if not pending:
        return
    n = max(1, min(_THREADS, len(pending) // 2))
    # balanced by source length, which is what NVRTC's time follows
    chunks = [[] for _ in range(n)]
    sizes = [0] * n
    for unit in sorted(pending, key=lambda u: -len(u[0])):
        k = sizes.index(min(sizes))
        chunks[k].append(unit)
        sizes[k] += len(unit[0])
    import cupy as cp
    device = cp.cuda.Device().id
    for chunk in chunks:
        future = _compile_pool().submit(_build, chunk, device)
        _PENDING.update((unit, future) for unit in chunk)


def _build(units, device) -> None:
    try:
        _build_program(units, device)
    finally:
        for unit in units:
            _PENDING.pop(unit, None)


def _build_program(units, device) -> None:
    includes, parts = [], []
    for i, (source, name) in enumerate(units):
        body = []
        for line in source.splitlines():
            (includes if line.lstrip().startswith("#include") else body).append(line)
        renamed, found = re.subn(rf"\b{re.escape(name)}(\s*\()", rf"{name}__u{i}\1",
                                 "\n".join(body), count=1)
        if not found:
            return
        parts.append(f"namespace fnx_unit{i} {{\n{renamed}\n}}\n")
    code = "".join(f"{line}\n" for line in dict.fromkeys(includes)) + "".join(parts)
    import cupy as cp
    try:
        cp.cuda.Device(device).use()    # a worker thread: the program's device is current
        module = cp.RawModule(code=code)
        kernels = [module.get_function(f"{name}__u{i}") for i, (_, name) in enumerate(units)]
    except Exception:       # compile each alone, where the failing one reports its own error
        return
    _KERNELS.update(zip(units, kernels))

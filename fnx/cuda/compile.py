"""Compiling generated CUDA source into kernels, cached in memory and on disk.

``compile_together`` builds the kernels a lowered program needs as a few NVRTC programs at once
and returns at once: the first launch of a kernel waits for its own program only, so a first
call's cuBLAS work (choosing GEMM algorithms) runs while the rest still compiles.

NVRTC serialises its work inside one process (a program's kernels on 8 threads took as long as
one after another), so programs go to compiling processes (:class:`Workers`, running
fnx/cuda/nvrtc_worker.py at a lower priority). They start with the GPU backend
(fnx.cuda.preload), in about 0.2 s, while the user's program is still making its data, and
compile a first call's kernels in parallel: on an H100 host (16 cores) a transformer step's first
call took 1.4 s with 8 workers and 2.3 s without, a GRU's 0.9 s and 1.3 s.
``FNX_COMPILE_WORKERS`` sets how many start (default: half the cores, at most 8; 0 turns them
off). Their binaries are kept in ``$FNX_CACHE_DIR/kernels`` (``~/.cache/fnx``), so a later
process loads them without compiling. Until the workers have started, or where one fails,
programs compile in this process as CuPy's RawModules (which CuPy caches on disk).
"""
from __future__ import annotations

import functools
import hashlib
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

# keyed by (device, (source, name)): a loaded module's functions launch on its own device only
_KERNELS: dict = {}      # -> cupy.RawKernel
_PENDING: dict = {}      # -> Future of the program compiling it


def _current_device() -> int:
    import cupy as cp
    return cp.cuda.runtime.getDevice()


def kernel(source: str, name: str):
    """The compiled kernel ``name`` of ``source``: waits for the program compiling it, if one
    is, and compiles it alone if none did."""
    key = (_current_device(), (source, name))
    k = _KERNELS.get(key)
    if k is None:
        future = _PENDING.get(key)
        if future is not None:
            future.result()
            k = _KERNELS.get(key)
    if k is None:
        import cupy as cp
        k = _KERNELS[key] = cp.RawKernel(source, name)
    return k


@functools.lru_cache(maxsize=None)
def compute_capability() -> int:
    """The current device's compute capability as a number (90 for an H100)."""
    import cupy as cp
    return int(cp.cuda.Device().compute_capability)


def ready(unit) -> bool:
    """Whether ``unit = (source, name)`` is compiled (launching it would not wait)."""
    return (_current_device(), unit) in _KERNELS


def when_compiled(units, callback) -> None:
    """Call ``callback()`` (on a compiling thread) once the programs compiling ``units`` are
    done, or at once if none is still compiling."""
    device = _current_device()
    futures = {id(f): f for f in (_PENDING.get((device, u)) for u in units) if f is not None}
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


def cache_root() -> str:
    """Where fnx keeps what it learns across processes (kernel binaries, GEMM choices)."""
    return os.environ.get("FNX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "fnx")


_CORES = os.cpu_count() or 1
_THREADS = max(1, min(4, _CORES // 2))
_WORKERS = int(os.environ.get("FNX_COMPILE_WORKERS", min(8, _CORES // 2) if _CORES >= 4 else 0))
_pool = None


def _compile_pool():
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max(_THREADS, _WORKERS), thread_name_prefix="fnx-nvrtc")
    return _pool


class Workers:
    """Compiling processes, each running fnx/cuda/nvrtc_worker.py; idle ones wait in a queue."""

    _WARM_UP = 'extern "C" __global__ void fnx_warm_up(float* x) { x[0] = 1.0f; }'

    def __init__(self, count: int):
        self.count = count
        self.idle: queue.Queue = queue.Queue()
        self.ready = threading.Event()      # set once every worker has compiled one kernel
        self.alive = 0

    def start(self) -> None:
        """Start the processes and warm each up (NVRTC's own start-up) with a tiny kernel; on
        the calling thread. Any failure leaves no worker, and programs compile in-process."""
        from . import nvrtc_worker
        from .libpaths import loaded
        try:
            options = _nvrtc_options()
            import cupy as cp
            cp.cuda.nvrtc.getVersion()      # loads NVRTC here, so that its path is known
            library = loaded("libnvrtc.so")
            if library is None:
                return
            procs = [subprocess.Popen([sys.executable, "-S", "-E", nvrtc_worker.__file__,
                                       library],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL) for _ in range(self.count)]
            for proc in procs:
                nvrtc_worker._write(proc.stdin, (self._WARM_UP, *options))
            for proc in procs:
                if nvrtc_worker._read(proc.stdout)[0] == "ok":
                    self.alive += 1
                    self.idle.put(proc)
                else:
                    proc.kill()
        except Exception:
            pass
        finally:
            self.ready.set()

    def usable(self) -> bool:
        """Whether programs can go to the workers now: they have started and some are alive
        (until then programs compile in-process: waiting for the workers to start, which
        takes about a second beside a first call's own work, would cost more)."""
        return self.ready.is_set() and self.alive > 0

    def compile(self, source: str, options):
        """NVRTC's binary of ``source``, or None where no worker could build it."""
        from . import nvrtc_worker
        if not self.usable():
            return None
        proc = self.idle.get()
        try:
            nvrtc_worker._write(proc.stdin, (source, *options))
            status, result = nvrtc_worker._read(proc.stdout)
        except Exception:           # a worker that died is not put back
            self.alive -= 1
            proc.kill()
            return None
        self.idle.put(proc)
        return result if status == "ok" else None


@functools.lru_cache(maxsize=None)
def _nvrtc_options():
    """The options CuPy's RawModule compiles with, and the binary kind it loads."""
    from cupy._core.core import assemble_cupy_compiler_options
    from cupy.cuda import compiler
    arch_option, binary = compiler._get_arch_for_options_for_nvrtc()
    options = assemble_cupy_compiler_options(()) + (
        "-ftz=true", arch_option, "--device-as-default-execution-space")
    return options, binary


_workers = None


def start_workers() -> None:
    """Start the compiling processes in the background, once per process."""
    global _workers
    if _workers is None and _WORKERS > 0 and not os.environ.get("CUPY_CACHE_IN_MEMORY"):
        _workers = Workers(_WORKERS)
        threading.Thread(target=_workers.start, name="fnx-nvrtc-workers", daemon=True).start()


class LoadedKernel:
    """A kernel of a module loaded from a binary, launched as a ``cupy.RawKernel`` is."""

    def __init__(self, function):
        self.function = function

    def __call__(self, grid, block, args, *, shared_mem=0):
        self.function(tuple(grid), tuple(block), args, shared_mem)

    @property
    def max_dynamic_shared_size_bytes(self):
        import cupy as cp
        return cp.cuda.driver.funcGetAttribute(
            cp.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.function.ptr)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, size):
        import cupy as cp
        cp.cuda.driver.funcSetAttribute(
            self.function.ptr, cp.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            size)


def _binary(code: str):
    """The compiled binary of ``code`` from the disk cache, else from a worker if one is ready
    (then stored); None where neither has it."""
    if _workers is None:
        return None
    try:
        options = _nvrtc_options()
    except Exception:
        return None
    key = hashlib.sha256(repr((code, options)).encode()).hexdigest()
    path = os.path.join(cache_root(), "kernels", key[:2], key + ".bin")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if len(data) > 32 and hashlib.sha256(data[32:]).digest() == data[:32]:
            return data[32:]
    except OSError:
        pass
    binary = _workers.compile(code, options)
    if binary is not None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as fh:
                fh.write(hashlib.sha256(binary).digest() + binary)
            os.replace(fh.name, path)        # whole files only, whoever writes last
        except OSError:
            pass
    return binary


def in_background(build) -> None:
    """Run ``build()`` (compiling a module that ``compile_together`` cannot batch, such as one
    of templates) on a compiling thread, so a first call does not wait for it in line."""
    _compile_pool().submit(build)


def compile_together(units) -> None:
    """Compile the not yet compiled ``units = [(source, name)]``, split into as many NVRTC
    programs as there are workers (or compiling threads), compiled in parallel.

    Each unit goes into its own namespace, so helper functions of the same name do not clash;
    its kernel is renamed (kernels have C linkage, which namespaces do not separate) and
    ``#include`` lines move to the top. If a combined program fails to build, nothing of it is
    cached and each of its kernels compiles alone when first launched."""
    device = _current_device()
    pending = list(dict.fromkeys(u for u in units if (device, u) not in _KERNELS
                                 and (device, u) not in _PENDING))
    if not pending:
        return
    start_workers()
    if _workers is not None:    # started with the backend, they are usually ready by now
        _workers.ready.wait(1.0)
    parallel = _workers.count if _workers is not None and _workers.usable() else _THREADS
    n = max(1, min(parallel, len(pending) // 2))
    # balanced by source length, which is what NVRTC's time follows
    chunks = [[] for _ in range(n)]
    sizes = [0] * n
    for unit in sorted(pending, key=lambda u: -len(u[0])):
        k = sizes.index(min(sizes))
        chunks[k].append(unit)
        sizes[k] += len(unit[0])
    for chunk in chunks:
        future = _compile_pool().submit(_build, chunk, device)
        _PENDING.update(((device, unit), future) for unit in chunk)


def _build(units, device) -> None:
    try:
        _build_program(units, device)
    finally:
        for unit in units:
            _PENDING.pop((device, unit), None)


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
        binary = _binary(code)
        if binary is not None:
            module = cp.cuda.function.Module()
            module.load(binary)
            kernels = [LoadedKernel(module.get_function(f"{name}__u{i}"))
                       for i, (_, name) in enumerate(units)]
        else:
            module = cp.RawModule(code=code)
            kernels = [module.get_function(f"{name}__u{i}") for i, (_, name) in enumerate(units)]
    except Exception:       # compile each alone, where the failing one reports its own error
        return
    _KERNELS.update(zip([(device, u) for u in units], kernels))

"""Backends run primitives on real buffers. Each one is an impl table keyed by primitive.

The NumPy backend (CPU) is always there. The CuPy backend (GPU) registers itself when CuPy and a
GPU are found; CuPy is imported only then.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

import importlib.util
import os

from ..core.core import register_backend, set_default_backend_resolver
from . import numpy_backend


class Backend(Protocol):
    """What fnx needs from a place that runs arrays (the CPU's NumpyBackend and the GPU's
    CupyBackend both are one)."""
    name: str              # "cpu" or "gpu": the key it registers under
    platform: str          # "cpu" or "gpu"
    supports_donation: bool   # whether compiled programs may write into donated arguments
    impls: dict            # Primitive -> callable(*buffers, **params) -> buffer(s)

    def to_buffer(self, x: Any, dtype) -> Any: ...      # scalar / ndarray / Array -> buffer
    def cast(self, buf: Any, dtype) -> Any: ...         # make sure a result has ``dtype``
    def to_numpy(self, buf: Any): ...                   # buffer -> numpy.ndarray
    def from_numpy(self, x): ...
    def synchronize(self, buf: Any) -> None: ...

    def compile(self, jaxpr, consts, donated: tuple = ()) -> Callable:
        """``executable(*buffers) -> list of buffers`` for ``jaxpr`` (its inputs after
        ``consts``); results may be written into the buffers of the ``donated`` argument
        positions where ``supports_donation``."""

    # several devices (pmap, shard_map: fnx.core.spmd); each device is a backend object
    id: int                # the device's id among the program's devices
    process_index: int     # the process that drives it (fnx.distributed)

    def devices(self) -> list: ...       # every device of this platform, this one first
    def scope(self): ...                 # context manager: work inside runs on this device

    def communicator(self, devices):
        """What the collectives' impls use to reach ``devices`` (read through
        ``fnx.core.axis_env.current_device().comm``); ``abort()`` releases devices waiting
        in a collective when one of them failed."""


register_backend("cpu", numpy_backend.backend, default=True)


def _find_gpu():
    """Make the GPU the default backend when CuPy and a device are present, unless
    ``FNX_PLATFORM=cpu``; ``FNX_PLATFORM=gpu`` insists on one."""
    want = os.environ.get("FNX_PLATFORM", "").lower()
    if want == "cpu":
        return
    if want != "gpu" and importlib.util.find_spec("cupy") is None:
        return
    try:
        from . import cupy_backend
        ok = cupy_backend.gpu_available()
    except Exception as e:   # a broken CUDA install must not break the CPU path
        if want == "gpu":
            raise RuntimeError(f"FNX_PLATFORM=gpu, but CuPy could not start: {e}") from e
        return
    if ok:
        register_backend("gpu", cupy_backend.CupyBackend(0), default=True)
        from ..cuda import preload
        preload.start()
    elif want == "gpu":
        raise RuntimeError("FNX_PLATFORM=gpu, but no CUDA device was found")


set_default_backend_resolver(_find_gpu)

__all__ = ["Backend", "numpy_backend"]

"""Arrays from DLPack producers (NumPy, PyTorch, JAX, CuPy), as ``jax.dlpack.from_dlpack``."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.core import Array, get_backend, local_devices
from ..core.errors import ArgumentTypeError, MeshError
from ..core.interop import KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED
from ..core.placement import device_put     # to a device or a sharding
from ._core import astype

_PLATFORMS = {KDL_CPU: "cpu", KDL_CUDA_HOST: "cpu", KDL_CUDA: "gpu", KDL_CUDA_MANAGED: "gpu"}


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """An fnx array holding the values of ``x``, any object with ``__dlpack__`` and
    ``__dlpack_device__`` (a NumPy array, a torch tensor, a JAX or CuPy array).

    fnx arrays are immutable, so by default (``copy=None``) and with ``copy=True`` the values
    are copied: a later write to ``x`` changes nothing here. ``copy=False`` shares ``x``'s
    memory, as JAX does whenever it can; writing to ``x`` afterwards is then an error fnx
    cannot see (JAX calls it undefined behaviour). The array lands on ``x``'s device unless
    ``device`` names another; 64-bit values become 32-bit ones without x64, as in JAX.

    >>> import numpy as np
    >>> jnp.from_dlpack(np.arange(3.0))
    Array([0., 1., 2.], dtype=float32)
    """
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise ArgumentTypeError("from_dlpack takes an object with __dlpack__ and "
                                f"__dlpack_device__ methods, got {type(x).__name__}")
    kind, index = (int(v) for v in x.__dlpack_device__()[:2])
    if kind not in _PLATFORMS:
        raise ArgumentTypeError(f"from_dlpack: {type(x).__name__} lives on DLPack device type "
                                f"{kind}, which fnx cannot read (it reads CPU and CUDA memory)")
    source = _producer_device(kind, index)
    target = source if device is None else (
        get_backend(device) if isinstance(device, str) else device)
    if target is not source and copy is False:
        raise MeshError(f"from_dlpack: moving the array from {source!r} to {target!r} needs a "
                        "copy, but copy=False was given")
    out = Array(source.import_dlpack(x, copy=copy if target is source else False), source)
    if dtypes.canonical(out.dtype) != out.dtype:
        out = astype(out, dtypes.canonical(out.dtype))
    return out if target is source else device_put(out, target)


def _producer_device(kind, index):
    """The fnx device whose memory DLPack's ``(kind, index)`` names: GPU ``index`` of this
    process, or the CPU."""
    platform = _PLATFORMS[kind]
    if platform == "gpu":
        for d in local_devices(backend="gpu"):
            if getattr(d, "cuda_id", 0) == index:
                return d
    return get_backend(platform)


def is_supported_dtype(dtype) -> bool:
    """Whether fnx arrays of ``dtype`` travel through DLPack (booleans, integers, floats and
    complex numbers; bfloat16 where the other library reads it).

    >>> fnx.dlpack.is_supported_dtype(jnp.float32), fnx.dlpack.is_supported_dtype(np.str_)
    (True, False)
    """
    return np.dtype(dtype).kind in "biufc"

"""Arrays of other libraries as fnx sees them: NumPy-likes (``__array__``), DLPack producers
(``__dlpack__``) and CUDA arrays (``__cuda_array_interface__``), such as torch tensors, JAX
arrays and CuPy arrays.

fnx functions take them as they take NumPy arrays: their shape and dtype are read here, and the
backends copy their values in (``to_buffer``), so a later write by their owner changes no fnx
array. Nothing here imports a backend or another library.
"""
from __future__ import annotations

import numpy as np

from . import dtypes

# DLPack's device types (dlpack.h's DLDeviceType)
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_ON_GPU = (KDL_CUDA, KDL_CUDA_MANAGED)


def is_foreign_array(x) -> bool:
    """Whether ``x`` is another library's array (NumPy's own arrays are not foreign)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return False
    return (hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__")
            or hasattr(x, "__array__") or hasattr(x, "__array_interface__"))


def on_gpu(x) -> bool:
    """Whether foreign array ``x`` lives in GPU memory."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    device = getattr(x, "__dlpack_device__", None)
    return device is not None and int(device()[0]) in _ON_GPU


def host_view(x) -> np.ndarray:
    """Foreign array ``x`` as a NumPy array, sharing its memory where it can (callers that
    keep the result copy it); a GPU array is downloaded."""
    if on_gpu(x):
        get = getattr(x, "get", None)          # CuPy's download
        # otherwise DLPack 1.0 asks the producer for a host copy (NumPy >= 2.1)
        return np.asarray(get()) if get is not None else np.from_dlpack(x, device="cpu")
    if hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return np.asarray(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    raise TypeError(f"{type(x).__name__} is not an array fnx can read")


def foreign_shape_dtype(x):
    """``(shape, dtype)`` of foreign array ``x`` (its dtype made canonical), or None if ``x``
    is not one."""
    if not is_foreign_array(x):
        return None
    if on_gpu(x):
        # read without a download: the CUDA array interface, else the object's own attributes
        cai = getattr(x, "__cuda_array_interface__", None)
        dtype = getattr(x, "dtype", None)
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(cai["typestr"]) if cai is not None else np.dtype(str(dtype))
        shape = cai["shape"] if cai is not None else tuple(x.shape)
        return tuple(shape), dtypes.canonical(dtype)
    host = host_view(x)
    return host.shape, dtypes.canonical(host.dtype)

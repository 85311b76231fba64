"""fnx.dlpack: arrays from other libraries through DLPack, as ``jax.dlpack``.

>>> import numpy as np, fnx
>>> fnx.dlpack.from_dlpack(np.ones(2))
Array([1., 1.], dtype=float32)
"""
from .numpy.dlpack import from_dlpack, is_supported_dtype

__all__ = ["from_dlpack", "is_supported_dtype"]

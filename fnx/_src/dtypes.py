"""``jax._src.dtypes``: fnx.dtypes and the dtype helpers libraries take from it.

>>> from fnx._src import dtypes
>>> dtypes.to_complex_dtype(np.float32), dtypes.to_inexact_dtype(np.int32)
(dtype('complex64'), dtype('float32'))
"""
import numpy as np

from ..dtypes import *  # noqa: F401,F403 - the public names, as jax._src.dtypes has them
from ..dtypes import canonicalize_dtype, issubdtype


def to_complex_dtype(dtype) -> np.dtype:
    """The complex dtype of ``dtype``'s precision (complex128 for 64-bit floats)."""
    dtype = np.dtype(to_inexact_dtype(dtype))
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def to_inexact_dtype(dtype) -> np.dtype:
    """``dtype`` if inexact, else the default float dtype."""
    dtype = np.dtype(dtype)
    return dtype if issubdtype(dtype, np.inexact) else canonicalize_dtype(np.float64)

"""fnx.typing: annotations for array arguments, as ``jax.typing``.

>>> from fnx.typing import ArrayLike, DTypeLike
>>> def scale(x: ArrayLike, dtype: DTypeLike = None) -> fnx.Array: ...
"""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from .core.core import Array

# what fnx.numpy functions accept as an array: fnx arrays (traced ones too), NumPy arrays and
# scalars, and Python numbers
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]

# what a dtype= argument accepts: a name, a scalar type, a NumPy dtype, or anything with .dtype
DTypeLike = Union[str, type[Any], np.dtype, Any]

__all__ = ["ArrayLike", "DTypeLike"]

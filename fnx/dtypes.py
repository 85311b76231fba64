"""fnx.dtypes: the names of ``jax.dtypes`` (canonicalization, promotion, abstract dtypes).

>>> import numpy as np
>>> fnx.dtypes.canonicalize_dtype(np.float64)      # x64 off, JAX's default
dtype('float32')
>>> fnx.dtypes.result_type(np.int8, 2.0)
dtype('float32')
"""
import numpy as np

from .core.dtypes import (bfloat16, canonical, extended, finfo, float0, iinfo, issubdtype,
                          kind, lattice_result_type, prng_key)
from .core.errors import TypePromotionError
from .numpy._core import _typed
from .numpy._core import result_type as _result_type

def canonicalize_dtype(dtype, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype fnx holds a value of ``dtype`` in: 64-bit types become 32-bit ones unless
    x64 is on.

    >>> with fnx.enable_x64(False):
    ...     fnx.dtypes.canonicalize_dtype(np.int64)
    dtype('int32')
    """
    if allow_extended_dtype and getattr(dtype, "abstract_type", None) is not None:
        return dtype
    return canonical(dtype)


def result_type(*args, return_weak_type_flag: bool = False):
    """The dtype ``args`` (arrays, dtypes, Python scalars) promote to, as ``jnp.result_type``;
    with ``return_weak_type_flag``, also whether the result is weakly typed.

    >>> fnx.dtypes.result_type(np.int8, 2.0, return_weak_type_flag=True)
    (dtype('float32'), True)
    """
    dtype = _result_type(*args)
    if not return_weak_type_flag:
        return dtype
    return dtype, lattice_result_type(*(_typed(a) for a in args))[1]


def scalar_type_of(x) -> type:
    """The Python scalar type (``bool``, ``int``, ``float``, ``complex``) of ``x``'s dtype.

    >>> fnx.dtypes.scalar_type_of(np.float32(1.0)), fnx.dtypes.scalar_type_of(3)
    (<class 'float'>, <class 'int'>)
    """
    dtype = getattr(x, "dtype", None)
    dtype = np.dtype(np.result_type(x) if dtype is None else dtype)
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind(dtype)]


def itemsize_bits(dtype) -> int:
    """The width of one element of ``dtype`` in bits.

    >>> fnx.dtypes.itemsize_bits(np.int16)
    16
    """
    return 8 * np.dtype(dtype).itemsize


__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]

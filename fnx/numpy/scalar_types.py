"""fnx.numpy's scalar types (``jnp.float32``, ``jnp.int32``, ...), as JAX's: each is a callable
that makes an array of its dtype (from a number, a list, an array, or a tracer under jit) and
also stands for the dtype wherever one is expected (``np.dtype(jnp.float32)``,
``jnp.zeros(3, jnp.float32)``, ``x.astype(jnp.int8)``, ``jnp.float32.dtype``,
``x.dtype == jnp.float32``), as NumPy's own ``np.float32`` does.

>>> jnp.float32(2)
Array(2., dtype=float32)
>>> fnx.jit(lambda x: jnp.int32(x * 2))(1.7)
Array(3, dtype=int32)
"""
from __future__ import annotations

import ml_dtypes
import numpy as np


class _ScalarMeta(type):
    """The metaclass of the scalar types: calling one converts, and it equals (and hashes as)
    NumPy's scalar type of its dtype."""
    dtype: np.dtype

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        from ._core import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'fnx.numpy.{cls.__name__}'>"


_WIDE = ("float64", "int64", "uint64", "complex128")   # 32-bit unless x64 is on


def _doc(name: str, dtype: np.dtype) -> str:
    """The scalar type's docstring, with an example that shows what it makes."""
    value = np.array2string(np.array(3, dtype))     # how an Array of it prints 3
    example = f"jnp.{name}(3)\n    Array({value}, dtype={dtype.name})"
    if dtype.name in _WIDE:
        example = (f"with fnx.enable_x64():   # else {name} makes 32-bit values, as in JAX\n"
                   f"    ...     {example}")
    return (f"An array of dtype {dtype.name} from ``x`` (a number, a sequence, an array or a "
            f"tracer); also usable as that dtype.\n\n    >>> {example}\n    ")


def _scalar_type(np_type, name=None):
    name = name or np.dtype(np_type).name
    cls = _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type)})
    cls.__module__ = "fnx.numpy"
    cls.__doc__ = _doc(name, cls.dtype)
    return cls


bool_ = _scalar_type(np.bool_, "bool_")
int8, int16, int32, int64 = map(_scalar_type, (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(_scalar_type, (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = map(_scalar_type, (np.float16, np.float32, np.float64))
bfloat16 = _scalar_type(ml_dtypes.bfloat16, "bfloat16")
complex64, complex128 = map(_scalar_type, (np.complex64, np.complex128))

__all__ = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]

# NumPy's C-style names, as JAX spells them (jnp.int_ is int64: the width x64 allows)
single, double = float32, float64
csingle, cdouble = complex64, complex128
float_, complex_, int_, uint = float64, complex128, int64, uint64

# ml_dtypes' narrow types, which JAX exposes under the same names: they combine with Python
# scalars and with themselves (fnx.core.dtypes), and live on the CPU (CuPy has no such arrays)
_NARROW = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
           "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
           "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4", "uint1", "uint2", "uint4")
globals().update({name: _scalar_type(getattr(ml_dtypes, name), name)
                   for name in _NARROW if hasattr(ml_dtypes, name)})

# abstract and non-numeric NumPy types: JAX re-exports NumPy's own
generic, character, flexible, object_ = np.generic, np.character, np.flexible, np.object_

__all__ += ["single", "double", "csingle", "cdouble", "float_", "complex_", "int_", "uint",
            "generic", "character", "flexible", "object_"]
__all__ += [name for name in _NARROW if hasattr(ml_dtypes, name)]

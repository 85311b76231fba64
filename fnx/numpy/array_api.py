"""The Python array API standard's names that NumPy spells differently or lacks.

``x.__array_namespace__()`` returns ``fnx.numpy`` (as JAX's arrays return ``jax.numpy``), so
code written against the standard (``xp = x.__array_namespace__()``) runs on fnx arrays.
"""
from __future__ import annotations

import sys

import numpy as np

from ..core import dtypes
from ..core.core import devices, get_backend
from . import ufuncs

__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc",
}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names ('bool',
    'signed integer', 'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric'), or a tuple of these. bfloat16 is a real floating type, as in JAX.

    >>> jnp.isdtype(jnp.float32, "real floating")
    True
    >>> jnp.isdtype(jnp.int8, ("bool", "unsigned integer"))
    False
    """
    d = np.dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected a dtype or one of "
                             f"{sorted(_KINDS)}")
        return dtypes.kind(d) in _KINDS[kind]
    return d == np.dtype(kind)


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype or an array) casts to dtype ``to`` by NumPy's ``casting``
    rule (ml_dtypes teaches NumPy bfloat16's casts, as JAX relies on).

    >>> jnp.can_cast(jnp.int8, jnp.int32), jnp.can_cast(jnp.float32, jnp.int32)
    (True, False)
    """
    src = from_ if isinstance(from_, (type, str, np.dtype)) else from_.dtype
    return bool(np.can_cast(np.dtype(src), np.dtype(to), casting))


def pow(x1, x2, /):  # noqa: A001 (the standard's name)
    """``x1 ** x2`` elementwise: the standard's name for ``power``.

    >>> jnp.pow(jnp.array([2.0, 3.0]), 2)
    Array([4., 9.], dtype=float32)
    """
    return ufuncs.power(x1, x2)


class ArrayNamespaceInfo:
    """What ``__array_namespace_info__()`` reports: fnx's devices, dtypes and capabilities
    (the dtypes of the current x64 setting, as JAX reports)."""

    def capabilities(self) -> dict:
        # boolean masks and nonzero give data-dependent shapes, which jit cannot trace
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": None}

    def default_device(self):
        return get_backend()

    def devices(self) -> list:
        out = devices("cpu")
        try:
            out = out + [d for d in devices("gpu") if d not in out]
        except ValueError:        # no GPU
            pass
        return out

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": dtypes.default_float, "complex floating": dtypes.default_complex,
                "integral": dtypes.default_int, "indexing": dtypes.default_int}

    def dtypes(self, *, device=None, kind=None) -> dict:
        names = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
                 "complex64"]
        if dtypes.x64_enabled:
            names += ["int64", "uint64", "float64", "complex128"]
        out = {n: np.dtype(n) for n in names}
        if kind is None:
            return out
        return {n: d for n, d in out.items() if isdtype(d, kind)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The array API's inspection object for fnx.numpy.

    >>> jnp.__array_namespace_info__().default_dtypes()["real floating"]
    dtype('float32')
    """
    return ArrayNamespaceInfo()


def array_namespace(x, api_version=None):
    """``x.__array_namespace__(api_version=...)``: the ``fnx.numpy`` module."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"fnx.numpy implements array API versions {_VERSIONS}, "
                         f"not {api_version!r}")
    return sys.modules[__package__]     # fnx.numpy, this module's package (imported already)

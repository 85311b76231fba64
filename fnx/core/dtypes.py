"""dtypes and JAX's type-promotion lattice, with weakly typed Python scalars.

A Python scalar (``2``, ``2.0``) is *weak*: it takes the dtype of the array it meets
(``f16_array * 2.0`` stays float16). Alone, weak ints default to int32 and weak floats to
float32. Unlike JAX, an explicit float64 array stays float64.

bfloat16 is ``ml_dtypes.bfloat16``, the type JAX uses. NumPy files it under kind "V" (a type
defined outside NumPy), so ask ``kind``, ``is_float``, ``issubdtype`` and ``finfo`` here: they
count it as the float it is.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

default_float = float32
default_int = int32
default_complex = complex64


def set_x64(on: bool) -> None:
    """Python scalars and dtype-less creation default to 64 bits (config ``enable_x64``)."""
    global default_float, default_int, default_complex
    default_float, default_int, default_complex = \
        (float64, int64, complex128) if on else (float32, int32, complex64)

_SUPPORTED = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128}

# Lattice nodes: numpy dtypes plus the three weak kinds of Python scalars.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"
_EDGES = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8, _WEAK_FLOAT],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: [_WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [float16, bfloat16, _WEAK_COMPLEX],
    float16: [float32], bfloat16: [float32], float32: [float64, complex64], float64: [complex128],
    _WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
}


def _upper_bounds(node):
    seen, stack = {node}, [node]
    while stack:
        for nxt in _EDGES[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


_UB = {n: frozenset(_upper_bounds(n)) for n in _EDGES}


def canonicalize(dtype) -> np.dtype:
    """The numpy dtype fnx uses for ``dtype`` (Python types map to fnx's defaults)."""
    if dtype is float:
        return default_float
    if dtype is int:
        return default_int
    if dtype is bool:
        return bool_
    if dtype is complex:
        return default_complex
    d = np.dtype(dtype)
    if d not in _SUPPORTED:
        raise TypeError(f"fnx does not support dtype {d}")
    return d


def _node(dtype, weak):
    if not weak:
        return dtype
    return {"b": bool_, "i": _WEAK_INT, "u": _WEAK_INT, "f": _WEAK_FLOAT,
            "c": _WEAK_COMPLEX}[kind(dtype)]


@functools.lru_cache(maxsize=None)
def _join(nodes):
    common = frozenset.intersection(*(_UB[n] for n in nodes))
    # the least upper bound is the common bound that all other common bounds lie above
    for cand in common:
        if common <= _UB[cand]:
            return cand
    raise TypeError(f"no common dtype for {nodes}")


def _node_to_dtype(node):
    return {_WEAK_INT: default_int, _WEAK_FLOAT: default_float,
            _WEAK_COMPLEX: default_complex}.get(node, node)


def result_type(*typed) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak_type)`` pairs; returns ``(dtype, weak_type)`` of the result.

    >>> result_type((int32, False), (float32, True))
    (dtype('float32'), False)
    """
    nodes = tuple(_node(d, w) for d, w in typed)
    joined = _join(tuple(sorted(set(nodes), key=str)))
    if isinstance(joined, str):
        return _node_to_dtype(joined), True
    # a weak scalar never widens a strong array's dtype
    weak = all(w for _, w in typed)
    return joined, weak


def scalar_dtype(x) -> np.dtype:
    """The dtype a Python scalar defaults to (weakly typed)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int
    if isinstance(x, float):
        return default_float
    if isinstance(x, complex):
        return default_complex
    raise TypeError(f"not a Python scalar: {type(x).__name__}")


def kind(dtype) -> str:
    """NumPy's kind letter of ``dtype`` ("f", "i", "u", "c", "b"), bfloat16 being a float."""
    d = np.dtype(dtype)
    return "f" if d == bfloat16 else d.kind


def is_float(dtype) -> bool:
    return kind(dtype) in "fc"


def is_int(dtype) -> bool:
    return kind(dtype) in "iu"


def issubdtype(arg1, arg2) -> bool:
    """``np.issubdtype``, with bfloat16 under ``np.floating`` as in JAX."""
    if _is_bfloat16(arg1):
        return _is_bfloat16(arg2) or (isinstance(arg2, type) and issubclass(np.floating, arg2))
    return np.issubdtype(arg1, arg2)


def _is_bfloat16(x) -> bool:
    try:
        return np.dtype(x) == bfloat16
    except TypeError:       # the abstract types (np.floating, ...) are no dtypes
        return False


def short_name(dtype) -> str:
    """JAX's short dtype names for jaxpr printing: f32, i32, bool, ..."""
    d = np.dtype(dtype)
    if d == bool_:
        return "bool"
    if d == bfloat16:
        return "bf16"
    return {"f": "f", "i": "i", "u": "u", "c": "c"}[d.kind] + str(8 * d.itemsize)


def finfo(dtype):
    """``np.finfo``, for bfloat16 too."""
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)

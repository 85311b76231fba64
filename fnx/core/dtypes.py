"""dtypes and JAX's type-promotion lattice, with weakly typed Python scalars.

A Python scalar (``2``, ``2.0``) is *weak*: it takes the dtype of the array it meets
(``f16_array * 2.0`` stays float16). Alone, weak ints default to int32 and weak floats to
float32.

As in JAX, 64-bit types exist only with ``enable_x64`` (``jax_enable_x64``) on. Off (the
default), every dtype entering fnx is *canonicalized*: float64 -> float32, int64 -> int32,
uint64 -> uint32, complex128 -> complex64 (NumPy arrays, NumPy scalars, requested dtypes; a
requested 64-bit dtype warns that it is truncated), and the promotion lattice never forms a
64-bit type from 32-bit ones (uint32 with int32 gives int32).

bfloat16 is ``ml_dtypes.bfloat16``, the type JAX uses. NumPy files it under kind "V" (a type
defined outside NumPy), so ask ``kind``, ``is_float``, ``issubdtype`` and ``finfo`` here: they
count it as the float it is.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from .errors import DTypeError

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

default_float = float32
default_int = int32
default_uint = uint32
default_complex = complex64
x64_enabled = False


# the dtype of the gradients of integer and boolean inputs (JAX's float0: no values at all)
float0 = np.dtype([("float0", np.void, 0)])


def set_x64(on: bool) -> None:
    """64-bit types on or off (config ``enable_x64``): Python scalars and dtype-less creation
    default to 64 bits, and 64-bit dtypes are kept instead of canonicalized to 32 bits."""
    global default_float, default_int, default_uint, default_complex, x64_enabled
    x64_enabled = bool(on)
    default_float, default_int, default_uint, default_complex = \
        (float64, int64, uint64, complex128) if on else (float32, int32, uint32, complex64)


def _ml(names):
    return tuple(np.dtype(getattr(ml_dtypes, n)) for n in names if hasattr(ml_dtypes, n))


# ml_dtypes' narrow types, JAX's too. JAX's lattice puts each right below its weak kind, with
# nothing above it: they combine with Python scalars and with themselves only.
NARROW_FLOATS = _ml(("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                     "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn",
                     "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"))
NARROW_INTS = _ml(("int1", "int2", "int4"))
NARROW_UINTS = _ml(("uint1", "uint2", "uint4"))
_NARROW = frozenset(NARROW_FLOATS + NARROW_INTS + NARROW_UINTS)

_SUPPORTED = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128} | _NARROW

# Lattice nodes: numpy dtypes plus the three weak kinds of Python scalars.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"
_EDGES = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8, *NARROW_INTS, *NARROW_UINTS, _WEAK_FLOAT],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: [_WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [float16, bfloat16, *NARROW_FLOATS, _WEAK_COMPLEX],
    float16: [float32], bfloat16: [float32], float32: [float64, complex64], float64: [complex128],
    _WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
    **{t: [] for t in _NARROW},
}


def _upper_bounds(node, edges=_EDGES):
    seen, stack = {node}, [node]
    while stack:
        for nxt in edges[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


_UB = {n: frozenset(_upper_bounds(n)) for n in _EDGES}
# Without x64, no promotion forms a 64-bit type from narrower ones: the lattice's only such
# edge, uint32 -> int64, becomes uint32 -> int32 (as in JAX)
_EDGES_X32 = {**_EDGES, uint32: [int32, uint64]}
_UB_X32 = {n: frozenset(_upper_bounds(n, _EDGES_X32)) for n in _EDGES}

_TO_32 = {float64: float32, int64: int32, uint64: uint32, complex128: complex64}


def _supported(dtype) -> np.dtype:
    if dtype is float:
        return float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if dtype is complex:
        return complex128
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"{e}") from None
    if d not in _SUPPORTED:
        raise DTypeError(f"fnx does not support dtype {d}")
    return d


def canonical(dtype) -> np.dtype:
    """The dtype fnx holds a value of ``dtype`` in (a NumPy array's, a NumPy scalar's): 64-bit
    types become 32-bit ones unless x64 is on, silently (JAX's ``canonicalize_dtype``)."""
    d = _supported(dtype)
    return d if x64_enabled else _TO_32.get(d, d)


def canonicalize(dtype, fun_name: str | None = None) -> np.dtype:
    """The dtype fnx uses for a *requested* ``dtype`` (a ``dtype=`` argument, ``astype``):
    Python types map to fnx's defaults, and a 64-bit dtype without x64 is truncated to 32 bits
    with a warning (once per place), as in JAX."""
    if dtype is float:
        return default_float
    if dtype is int:
        return default_int
    if dtype is bool:
        return bool_
    if dtype is complex:
        return default_complex
    d = _supported(dtype)
    if x64_enabled or d not in _TO_32:
        return d
    _warn_truncated(d, fun_name)
    return _TO_32[d]


def _warn_truncated(d, fun_name):
    import warnings
    where = f" requested in {fun_name}" if fun_name else ""
    warnings.warn(f"Explicitly requested dtype {d}{where} is not available, and will be "
                  f"truncated to dtype {_TO_32[d]}. To enable more dtypes, set the "
                  "jax_enable_x64 configuration option (fnx.config.update(\"jax_enable_x64\", "
                  "True)) or use fnx.enable_x64().", UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The stacklevel of the first frame outside fnx (so the warning names the user's line)."""
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(root):
        frame, level = frame.f_back, level + 1
    return level


# Lattice nodes of (dtype, weak_type): a weak value is its kind's Python type (JAX's _jax_type)
def _node(dtype, weak):
    if not weak or dtype == bool_:
        return dtype
    return {"i": _WEAK_INT, "u": _WEAK_INT, "f": _WEAK_FLOAT, "c": _WEAK_COMPLEX}[kind(dtype)]


@functools.lru_cache(maxsize=None)
def _join(nodes, x64):
    ub = _UB if x64 else _UB_X32
    common = frozenset.intersection(*(ub[n] for n in nodes))
    inside = common & set(nodes)
    if inside:
        return next(iter(inside))
    # the least upper bound is the common bound that all other common bounds lie above
    for cand in common:
        if common <= ub[cand]:
            return cand
    from .errors import TypePromotionError
    names = ", ".join(repr(n if isinstance(n, str) else n.name) for n in nodes)
    raise TypePromotionError(f"Input dtypes ({names}) have no available implicit dtype "
                             "promotion path.")


def _lub(nodes):
    return _join(tuple(sorted(set(nodes), key=str)), x64_enabled)


def _node_to_dtype(node):
    return {_WEAK_INT: default_int, _WEAK_FLOAT: default_float,
            _WEAK_COMPLEX: default_complex}.get(node, node)


def lattice_result_type(*typed) -> tuple[np.dtype, bool]:
    """JAX's ``lattice_result_type`` on ``(dtype, weak_type)`` pairs: the common dtype of the
    operands (a weak result takes its kind's default dtype unless every operand was weak, when
    it keeps the join of their dtypes), and whether it is weak."""
    dts = [np.dtype(d) for d, _ in typed]
    weaks = [bool(w) for _, w in typed]
    if len(typed) == 1:
        out, weak = dts[0], weaks[0]
    elif len(set(dts)) == 1 and not all(weaks):
        out, weak = dts[0], False
    elif all(weaks):
        # every operand weak: join their dtypes as if strong, and keep the result weak
        out, weak = _node_to_dtype(_lub(dts)), True
    else:
        joined = _lub(_node(d, w) for d, w in typed)
        out, weak = _node_to_dtype(joined), isinstance(joined, str)
    return out, out != bool_ and weak


def result_type(*typed) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak_type)`` pairs as fnx.numpy's operations do (JAX's
    ``promote_dtypes``): returns the canonical ``(dtype, weak_type)`` of the result.

    >>> result_type((int32, False), (float32, True))
    (dtype('float32'), False)
    """
    out, weak = lattice_result_type(*typed)
    return canonical(out), weak


def promote_types(a, b) -> np.dtype:
    """``jnp.promote_types``: the join of two dtypes on the lattice (Python's ``int``,
    ``float``, ``complex`` count as weak), not canonicalized, as in JAX."""
    weak = {int: _WEAK_INT, float: _WEAK_FLOAT, complex: _WEAK_COMPLEX}
    na = weak[a] if any(a is t for t in weak) else _supported(np.dtype(a))
    nb = weak[b] if any(b is t for t in weak) else _supported(np.dtype(b))
    joined = _lub((na, nb))
    return {_WEAK_INT: int64, _WEAK_FLOAT: float64, _WEAK_COMPLEX: complex128}.get(joined, joined)


def to_inexact(dtype) -> np.dtype:
    """The float an integer or boolean dtype computes in where a float is needed (``sin``,
    ``mean``, ``/``): float32 up to 32-bit integers, float64 for 64-bit ones, as in JAX."""
    d = np.dtype(dtype)
    if is_float(d):
        return d
    return float64 if d.itemsize == 8 else float32


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
    """NumPy's kind letter of ``dtype`` ("f", "i", "u", "c", "b"), with ml_dtypes' types
    (bfloat16, the float8s, int4, ...) as the floats and integers they are."""
    d = np.dtype(dtype)
    return _ML_KIND.get(d, d.kind)


_ML_KIND = {bfloat16: "f", **{t: "f" for t in NARROW_FLOATS}, **{t: "i" for t in NARROW_INTS},
            **{t: "u" for t in NARROW_UINTS}}


def is_float(dtype) -> bool:
    return kind(dtype) in "fc"


def is_int(dtype) -> bool:
    return kind(dtype) in "iu"


class extended:
    """The abstract type of dtypes NumPy does not have (JAX's ``dtypes.extended``).

    >>> fnx.numpy.issubdtype(fnx.random.key(0).dtype, fnx.dtypes.extended)
    True
    """


class prng_key(extended):
    """The abstract type of typed PRNG keys' dtypes (``key<fry>``).

    >>> fnx.numpy.issubdtype(fnx.random.key(0).dtype, fnx.dtypes.prng_key)
    True
    """


def issubdtype(arg1, arg2) -> bool:
    """``np.issubdtype``, with bfloat16 under ``np.floating`` and key dtypes under
    ``prng_key``, as in JAX.

    >>> jnp.issubdtype(jnp.float32, jnp.floating), jnp.issubdtype(jnp.int32, jnp.floating)
    (True, False)
    """
    kind = getattr(arg1, "abstract_type", None)        # an extended dtype (a key's)
    if kind is not None or arg2 in (extended, prng_key):
        if kind is None:
            return False
        return arg2 == arg1 if not isinstance(arg2, type) else issubclass(kind, arg2)
    ml = _ml_dtype(arg1)
    if ml is not None:
        if _ml_dtype(arg2) is not None:
            return ml == _ml_dtype(arg2)
        abstract = {"f": np.floating, "i": np.signedinteger, "u": np.unsignedinteger}[_ML_KIND[ml]]
        return isinstance(arg2, type) and issubclass(abstract, arg2)
    return np.issubdtype(arg1, arg2)


def _ml_dtype(x):
    """``np.dtype(x)`` where that is one of ml_dtypes' types (bfloat16, float8s, ...)."""
    try:
        d = np.dtype(x)
    except TypeError:       # the abstract types (np.floating, ...) are no dtypes
        return None
    return d if d in _ML_KIND else None


def short_name(dtype) -> str:
    """JAX's short dtype names for jaxpr printing: f32, i32, bool, ..."""
    d = np.dtype(dtype)
    if d == bool_:
        return "bool"
    if d == bfloat16:
        return "bf16"
    if d in NARROW_FLOATS:                       # float8_e4m3fn -> f8_e4m3fn
        return "f" + d.name[len("float"):]
    if d in _NARROW:                             # int4 -> i4
        return d.name[0] + d.name.lstrip("uint")
    return {"f": "f", "i": "i", "u": "u", "c": "c"}[d.kind] + str(8 * d.itemsize)


def finfo(dtype):
    """``np.finfo``, for bfloat16 too.

    >>> jnp.finfo(jnp.float16).max
    np.float16(6.55e+04)
    """
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    """The limits of an integer dtype (NumPy's ``iinfo``).

    >>> jnp.iinfo(jnp.int8).max
    127
    """
    return ml_dtypes.iinfo(dtype) if np.dtype(dtype) in _NARROW else np.iinfo(dtype)

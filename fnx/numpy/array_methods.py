"""Operators and methods of fnx.Array and of tracers, defined once for both.

Core defines the array types; this module (above core) gives them NumPy's behaviour, as JAX's
``_set_array_base_attributes`` does."""
from __future__ import annotations

import numpy as np

from ..core.core import Array, Tracer
from ..core.traceback_util import api_boundary, boundary_methods
from . import indexing, ordering, products, reductions, selection, shapes, sorting, ufuncs
from ..core import dtypes, lax
from ._core import astype, _own_copy
from .array_api import array_namespace


def _swap(f):
    return lambda self, other: f(other, self)


_OPERANDS = (int, float, complex, np.generic, np.ndarray, Array, Tracer)
# sequences whose +, * or == would otherwise mean concatenation, repetition or a Python False
_REFUSED = {"__add__": ("+", (list, tuple)), "__radd__": ("+", (list, tuple)),
            "__mul__": ("*", (list, tuple)), "__rmul__": ("*", (list, tuple)),
            "__eq__": ("==", (dict, list, set, tuple)), "__ne__": ("!=", (dict, list, set, tuple))}


def _foreign_array(x):
    # other libraries' arrays (JAX's, torch's, CuPy's) are operands, as fnx functions take them
    return any(hasattr(type(x), p) for p in ("__array__", "__dlpack__", "__cuda_array_interface__"))


def _defer(name, f):
    # JAX's rule: arrays (fnx's and other libraries'), NumPy values and Python numbers are
    # operands; anything else is asked for its reflected operator (a Gaussian-process kernel's
    # __rmul__ in ``amplitude * kernel``, a sparse array's __rmatmul__), and Python raises
    # TypeError if it has none
    symbol, refused = _REFUSED.get(name, (name, ()))

    def op(self, other):
        if hasattr(type(other), "__jax_array__"):
            other = other.__jax_array__()
        if (isinstance(other, _OPERANDS) or _foreign_array(other)) and \
                getattr(other, "__array_priority__", 0) <= self.__array_priority__:
            return f(self, other)
        if type(other) in refused:
            raise TypeError(f"unsupported operand type(s) for {symbol}: "
                            f"{type(self).__name__!r} and {type(other).__name__!r}")
        return NotImplemented
    return op


_OPERATORS = {
    "__add__": ufuncs.add, "__sub__": ufuncs.subtract, "__mul__": ufuncs.multiply,
    "__truediv__": ufuncs.true_divide, "__floordiv__": ufuncs.floor_divide,
    "__mod__": ufuncs.remainder, "__pow__": ufuncs.power, "__matmul__": products.matmul,
    "__and__": ufuncs.bitwise_and, "__or__": ufuncs.bitwise_or, "__xor__": ufuncs.bitwise_xor,
    "__lshift__": ufuncs.left_shift, "__rshift__": ufuncs.right_shift,
    "__eq__": ufuncs.equal, "__ne__": ufuncs.not_equal, "__lt__": ufuncs.less,
    "__le__": ufuncs.less_equal, "__gt__": ufuncs.greater, "__ge__": ufuncs.greater_equal,
}
_REVERSED = {
    "__radd__": ufuncs.add, "__rsub__": ufuncs.subtract, "__rmul__": ufuncs.multiply,
    "__rtruediv__": ufuncs.true_divide, "__rfloordiv__": ufuncs.floor_divide,
    "__rmod__": ufuncs.remainder, "__rpow__": ufuncs.power, "__rmatmul__": products.matmul,
    "__rand__": ufuncs.bitwise_and, "__ror__": ufuncs.bitwise_or,
    "__rxor__": ufuncs.bitwise_xor, "__rlshift__": ufuncs.left_shift,
    "__rrshift__": ufuncs.right_shift,
}


def _reshape_method(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return shapes.reshape(self, shape, order)


def _transpose_method(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return shapes.transpose(self, axes or None)


def _format_method(self, spec):
    # f"{loss:.4f}": a 0-d array formats as its Python scalar, as JAX's arrays do; a tracer
    # formats as its repr, and refuses a format spec (TypeError, as in JAX)
    if isinstance(self, Tracer):
        if spec:
            raise TypeError(f"unsupported format string {spec!r} for a traced value "
                            f"{self.aval.str_short()}: format it with fnx.debug.print")
        return repr(self)
    if self.ndim == 0:
        return format(self.item(), spec)
    return format(str(self), spec)


def _setitem(self, index, value):
    raise TypeError("fnx arrays are immutable and do not support in-place item assignment. "
                    "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method.")


def _numpy_method(f):
    """A method NumPy's functions may call (``np.mean(x)`` calls ``x.mean(axis=None,
    dtype=None, out=None)``): ``out=None`` is accepted, any other ``out`` refused, as in JAX."""
    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise NotImplementedError(f"the 'out' argument to {f.__name__} is not supported: "
                                      "fnx arrays are immutable")
        return f(self, *args, **kwargs)
    method.__name__, method.__doc__ = f.__name__, f.__doc__
    return method


def _view(self, dtype=None, type=None):  # noqa: A002 - NumPy's argument name
    """The array's bits seen as ``dtype``; a change of width changes the last axis's size, as
    in JAX and NumPy."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return self
    dtype = dtypes.canonical(dtype)
    bits_in, bits_out = self.dtype.itemsize * 8, dtype.itemsize * 8
    if self.ndim == 0:
        if bits_in != bits_out:
            raise ValueError("view() of a 0d array is only supported if the itemsize is "
                             "unchanged.")
        return _view(lax.expand_dims(self, (0,)), dtype).squeeze()
    if (self.shape[-1] * bits_in) % bits_out != 0:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                         "total size in bytes of the last axis of the array.")
    if self.dtype == dtype:
        return self
    if self.dtype == bool:
        return _view(self.astype("uint8"), dtype)
    if self.dtype.kind == "c":
        parts = lax.concatenate([lax.expand_dims(self.real, (self.ndim,)),
                                 lax.expand_dims(self.imag, (self.ndim,))], self.ndim)
        return _view(parts.reshape(*self.shape[:-1], 2 * self.shape[-1]), dtype)
    if dtype == bool:
        return _view(self, np.uint8).astype(bool)
    if dtype.kind == "c":
        out = _view(self, np.dtype(f"float{bits_out // 2}"))
        return lax.complex_(out[..., 0::2], out[..., 1::2])
    if bits_in < bits_out:
        factor = bits_out // bits_in
        return lax.bitcast_convert_type(
            self.reshape(*self.shape[:-1], self.shape[-1] // factor, factor), dtype)
    out = lax.bitcast_convert_type(self, dtype)
    return out.reshape(*self.shape[:-1], -1) if bits_in > bits_out else out


def _byteswap(self):
    """The array with the bytes of each element reversed (little- <-> big-endian)."""
    if self.dtype.kind == "c":
        return lax.complex_(_byteswap(self.real), _byteswap(self.imag))
    if self.dtype.itemsize == 1:
        return self
    swapped = lax.rev(lax.bitcast_convert_type(self, np.uint8), (self.ndim,))
    return lax.bitcast_convert_type(swapped, self.dtype)


def _compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
    return selection.compress(condition, self, axis=axis, out=out, size=size,
                              fill_value=fill_value)


def _builtin_round(a, ndigits=None):
    # Python's round(x) is an integer, so JAX's is an int array; round(x, n) keeps the dtype
    out = ufuncs.round(a, ndigits or 0)
    return out if ndigits is not None else out.astype(dtypes.default_int)


_METHODS = {
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.absolute,
    "__invert__": ufuncs.invert, "__getitem__": indexing.getitem, "__setitem__": _setitem,
    "__divmod__": lambda a, b: (ufuncs.floor_divide(a, b), ufuncs.remainder(a, b)),
    "__round__": _builtin_round,
    "__iter__": lambda a: (a[i] for i in range(len(a))), "__format__": _format_method,
    "astype": astype, "reshape": _reshape_method, "transpose": _transpose_method,
    "sum": reductions.sum, "mean": reductions.mean, "var": reductions.var,
    "std": reductions.std, "prod": reductions.prod, "max": reductions.max,
    "min": reductions.min, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "any": reductions.any, "all": reductions.all, "cumsum": reductions.cumsum,
    "cumprod": reductions.cumprod, "ptp": reductions.ptp,
    "ravel": shapes.ravel, "flatten": shapes.ravel, "squeeze": shapes.squeeze,
    "swapaxes": shapes.swapaxes, "repeat": shapes.repeat, "diagonal": shapes.diagonal,
    "trace": reductions.trace, "dot": products.dot, "clip": ufuncs.clip, "round": ufuncs.round,
    "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate, "take": indexing.take,
    "sort": sorting.sort, "argsort": sorting.argsort,
    "nonzero": indexing.nonzero, "copy": _own_copy, "view": _view, "byteswap": _byteswap,
    # arrays are immutable, so a copy may be the array itself; a traced value stays in its
    # trace (copy.deepcopy of a dataclass of tracers, as jax_md's dataclasses.astuple does)
    "__copy__": lambda a: a, "__deepcopy__": lambda a, memo: a,
    "compress": _compress, "choose": lambda a, choices, out=None, mode="raise":
        selection.choose(a, choices, out=out, mode=mode),
    "searchsorted": sorting.searchsorted, "argpartition": ordering.argpartition,
    "tobytes": lambda a, order="C": np.asarray(a).tobytes(order),
    "is_ready": lambda a: True, "addressable_data": lambda a, index: a,
    "__array_namespace__": array_namespace,
}
# methods NumPy's functions of the same name call with an ``out=`` argument
_NUMPY_CALLED = {"sum", "mean", "var", "std", "prod", "max", "min", "argmax", "argmin", "any",
                 "all", "cumsum", "cumprod", "ptp", "clip", "round", "take", "trace"}
_PROPERTIES = {
    "T": lambda a: shapes.transpose(a), "mT": shapes.matrix_transpose,
    "at": lambda a: indexing._IndexUpdateHelper(a), "real": ufuncs.real,
    "imag": ufuncs.imag, "itemsize": lambda a: a.dtype.itemsize,
    "nbytes": lambda a: a.size * a.dtype.itemsize, "flat": lambda a: iter(shapes.ravel(a)),
}


# the array types' own methods that raise for users (a traced value where Python needs one)
_CORE_METHODS = ("__bool__", "__int__", "__float__", "__complex__", "__index__", "__len__",
                 "__array__", "__hash__")


def install(cls):
    # every operator and method is an API boundary: its errors end at the user's line
    for name, f in _OPERATORS.items():
        setattr(cls, name, api_boundary(_defer(name, f)))
    for name, f in _REVERSED.items():
        setattr(cls, name, api_boundary(_defer(name, _swap(f))))
    for name, f in _METHODS.items():
        setattr(cls, name, api_boundary(_numpy_method(f) if name in _NUMPY_CALLED else f))
    for name, f in _PROPERTIES.items():
        setattr(cls, name, property(api_boundary(f)))
    boundary_methods(cls, _CORE_METHODS)


install(Array)
install(Tracer)
boundary_methods(indexing._IndexUpdateRef, ("get", "set", "add", "subtract", "multiply",
                                             "divide", "min", "max", "apply"))
boundary_methods(indexing._IndexUpdateHelper, ("__getitem__",))

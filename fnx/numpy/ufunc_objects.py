"""NumPy-style ufunc objects (JAX's ``jnp.ufunc``): ``jnp.add``, ``jnp.multiply``,
``jnp.maximum``, ... are still called as functions, and also have NumPy's methods ``reduce``,
``accumulate``, ``outer`` and ``at``.

A ufunc with a known reduction (``add`` -> ``sum``, ``maximum`` -> ``max``, ...) reduces and
accumulates through it; any other binary ufunc folds with ``lax.scan`` along the axis. ``at``
is out of place, as in JAX (``inplace=False``), and goes through ``x.at[...]``.

>>> jnp.add.reduce(jnp.arange(4))
Array(6, dtype=int32)
>>> jnp.multiply.outer(jnp.arange(1, 3), jnp.arange(3))
Array([[0, 1, 2],
       [0, 2, 4]], dtype=int32)
"""
from __future__ import annotations

import functools

import numpy as np

from ..core import dtypes, lax
from . import reductions, ufuncs
from ..core.traceback_util import boundary_methods
from ._core import asarray, canonicalize_axis


class ufunc:
    """A binary elementwise function with NumPy's ufunc methods (JAX's ``jnp.ufunc``)."""

    def __init__(self, fn, identity=None, reduce=None, accumulate=None, at=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.identity = identity
        self._reduce, self._accumulate, self._at = reduce, accumulate, at
        self.nin, self.nout, self.nargs = 2, 1, 2

    def __call__(self, x, y, /):
        return self._fn(x, y)

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __hash__(self):
        return hash(self._fn)

    def __eq__(self, other):
        return self is other or (isinstance(other, ufunc) and other._fn is self._fn)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """Combine ``a``'s elements along ``axis`` (a tuple of axes, or None for all).

        >>> jnp.maximum.reduce(jnp.array([[1, 5], [4, 2]]), axis=1)
        Array([5, 4], dtype=int32)
        """
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.reduce: out is not supported (fnx "
                                      "arrays are immutable)")
        a = asarray(a)
        if dtype is not None:
            a = a.astype(dtype)
        if self._reduce is not None:
            kw = {} if where is None else {"where": where}
            if dtypes.is_int(a.dtype) and self._reduce in (reductions.sum, reductions.prod):
                kw["dtype"] = a.dtype     # JAX's ufunc.reduce keeps the operand's integer type
            out = self._reduce(a, axis=axis, keepdims=keepdims, **kw)
            # the known reductions are associative: the initial value joins at the end
            return out if initial is None else self._fn(out, initial).astype(out.dtype)
        if where is not None:
            raise NotImplementedError(f"{self.__name__}.reduce: where is not supported")
        axes = tuple(range(a.ndim)) if axis is None else \
            (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = sorted({canonicalize_axis(ax, a.ndim) for ax in axes})
        out = a
        for ax in reversed(axes):
            out = self._fold(out, ax, initial)
        if keepdims:
            out = lax.expand_dims(out, axes)
        return out

    def _fold(self, a, axis, initial):
        moved = lax.moveaxis(a, axis, 0)
        if initial is None:
            if moved.shape[0] == 0:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            init, rest = moved[0], moved[1:]
        else:
            init = lax.convert_element_type(lax.full(moved.shape[1:], initial), moved.dtype)
            rest = moved
        from ..core.control_flow import scan
        carry, _ = scan(lambda c, x: (self._fn(c, x).astype(c.dtype), None), init, rest)
        return carry

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running ``reduce`` along ``axis``.

        >>> jnp.add.accumulate(jnp.array([1, 2, 3]))
        Array([1, 3, 6], dtype=int32)
        """
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.accumulate: out is not supported")
        a = asarray(a)
        if dtype is not None:
            a = a.astype(dtype)
        axis = canonicalize_axis(axis, a.ndim)
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis).astype(a.dtype)
        from ..core.control_flow import scan
        moved = lax.moveaxis(a, axis, 0)

        def step(c, x):
            c = self._fn(c, x).astype(c.dtype)
            return c, c
        _, ys = scan(step, moved[0], moved[1:])
        return lax.moveaxis(lax.concatenate([moved[:1], ys], 0), 0, axis)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """``reduce`` over the segments ``a[indices[i]:indices[i + 1]]`` along ``axis`` (just
        ``a[indices[i]]`` where the next index is not larger), as NumPy and JAX define it.

        >>> jnp.add.reduceat(jnp.arange(6), jnp.array([0, 4, 1]))
        Array([ 6,  4, 15], dtype=int32)
        """
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.reduceat: out is not supported")
        a, indices = asarray(a), asarray(indices)
        if a.ndim == 0:
            raise ValueError(f"{self.__name__}.reduceat: a must have 1 or more dimensions, got "
                             f"shape {a.shape}")
        if indices.ndim != 1:
            raise ValueError(f"{self.__name__}.reduceat: indices must be one-dimensional, got "
                             f"shape {indices.shape}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{self.__name__}.reduceat requires a single integer axis")
        # dtype is accepted and, as in JAX, not applied: the segments reduce in a's dtype
        axis = canonicalize_axis(axis, a.ndim)
        from ..core.control_flow import fori_loop
        from .indexing import take
        n = a.shape[axis]
        others = [d for d in range(a.ndim) if d != axis]
        bounds = lax.expand_dims(lax.concatenate([indices, lax.full((1,), n, indices.dtype)], 0),
                                 others)
        start = lax.slice_in_dim(bounds, 0, bounds.shape[axis] - 1, axis=axis)
        stop = lax.slice_in_dim(bounds, 1, bounds.shape[axis], axis=axis)

        # every element i joins the segments that start before it and end after it
        def fold(i, acc):
            inside = lax.bitwise_and(lax.gt(i, start), lax.lt(i, stop))
            step = self._fn(acc, take(a, lax.expand_dims(i, (0,)), axis=axis)).astype(acc.dtype)
            return ufuncs.where(inside, step, acc)
        return fori_loop(0, n, fold, take(a, indices, axis=axis))

    def outer(self, a, b):
        """``self(a[i...], b[j...])`` for every pair: shape ``a.shape + b.shape``.

        >>> jnp.add.outer(jnp.arange(2), jnp.arange(3)).shape
        (2, 3)
        """
        a, b = asarray(a), asarray(b)
        return self._fn(lax.reshape(a, a.shape + (1,) * b.ndim), b)

    def at(self, a, indices, b=None, *, inplace=True):
        """``a`` with ``self(a[indices], b)`` written at ``indices`` (repeated indices
        accumulate for add, multiply, maximum and minimum). Out of place, as in JAX: pass
        ``inplace=False``.

        >>> jnp.add.at(jnp.zeros(3), jnp.array([0, 0, 2]), 1.0, inplace=False)
        Array([2., 0., 1.], dtype=float32)
        """
        if inplace:
            raise NotImplementedError("fnx arrays are immutable: jnp.ufunc.at needs "
                                      "inplace=False, and returns the updated array")
        a = asarray(a)
        if b is None:
            raise TypeError(f"{self.__name__}.at needs the second operand b")
        if self._at is not None:
            return getattr(a.at[indices], self._at)(b)
        return a.at[indices].set(self._fn(a[indices], b).astype(a.dtype))


boundary_methods(ufunc, ("__call__", "reduce", "accumulate", "reduceat", "outer", "at"))


def _make(fn, identity=None, reduce=None, accumulate=None, at=None):
    return ufunc(fn, identity, reduce, accumulate, at)


add = _make(ufuncs.add, 0, reductions.sum, reductions.cumsum, "add")
multiply = _make(ufuncs.multiply, 1, reductions.prod, reductions.cumprod, "multiply")
maximum = _make(ufuncs.maximum, None, reductions.max, lambda a, axis: lax.cummax(a, axis), "max")
minimum = _make(ufuncs.minimum, None, reductions.min, lambda a, axis: lax.cummin(a, axis), "min")
logical_and = _make(ufuncs.logical_and, True, reductions.all)
logical_or = _make(ufuncs.logical_or, False, reductions.any)
subtract, true_divide, floor_divide, power, remainder, fmod = map(
    _make, (ufuncs.subtract, ufuncs.true_divide, ufuncs.floor_divide, ufuncs.power,
            ufuncs.remainder, ufuncs.fmod))
divide, mod = true_divide, remainder
logical_xor, bitwise_and, bitwise_or, bitwise_xor = map(
    _make, (ufuncs.logical_xor, ufuncs.bitwise_and, ufuncs.bitwise_or, ufuncs.bitwise_xor))
fmax, fmin, arctan2, hypot, logaddexp, logaddexp2, copysign, nextafter = map(
    _make, (ufuncs.fmax, ufuncs.fmin, ufuncs.arctan2, ufuncs.hypot, ufuncs.logaddexp,
            ufuncs.logaddexp2, ufuncs.copysign, ufuncs.nextafter))
equal, not_equal, less, less_equal, greater, greater_equal = map(
    _make, (ufuncs.equal, ufuncs.not_equal, ufuncs.less, ufuncs.less_equal, ufuncs.greater,
            ufuncs.greater_equal))

__all__ = ["ufunc", "add", "multiply", "maximum", "minimum", "logical_and", "logical_or",
           "subtract", "true_divide", "divide", "floor_divide", "power", "remainder", "mod",
           "fmod", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "fmax", "fmin",
           "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "equal",
           "not_equal", "less", "less_equal", "greater", "greater_equal"]

"""Applying Python functions over arrays: ``apply_along_axis``, ``apply_over_axes``,
``fromfunction`` and ``frompyfunc``, built on ``vmap`` as in JAX."""
from __future__ import annotations

from ..core.api import vmap
from ._core import asarray, canonicalize_axis
from .creation import arange
from .shapes import expand_dims
from .vectorize import vectorize

__all__ = ["apply_along_axis", "apply_over_axes", "fromfunction", "frompyfunc"]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to each 1-D slice of ``arr`` along ``axis``.

    >>> jnp.apply_along_axis(jnp.sum, 1, jnp.arange(6).reshape(2, 3))
    Array([ 3, 12], dtype=int32)
    """
    arr = asarray(arr)
    axis = canonicalize_axis(axis, arr.ndim)

    def func(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, arr.ndim - axis):      # the axes after `axis`, from the inside out
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied repeatedly over ``axes``, keeping the dimensions.

    >>> jnp.apply_over_axes(jnp.sum, jnp.ones((2, 3)), [0, 1])
    Array([[6.]], dtype=float32)
    """
    a = asarray(a)
    for axis in [axes] if isinstance(axes, int) else axes:
        b = asarray(func(a, axis))
        if b.ndim == a.ndim - 1:
            b = expand_dims(b, axis)
        elif b.ndim != a.ndim:
            raise ValueError(f"apply_over_axes: func must keep or drop one dimension, got shape "
                             f"{b.shape} from shape {a.shape}")
        a = b
    return a


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """An array whose element at each index ``(i, j, ...)`` is ``function(i, j, ...)``,
    computed with ``vmap``.

    >>> jnp.fromfunction(lambda i, j: i + j, (2, 3), dtype=int)
    Array([[0, 1, 2],
           [1, 2, 3]], dtype=int32)
    """
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)

    def call(*coords):
        return function(*coords, **kwargs)

    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        call = vmap(call, in_axes=tuple(in_axes[::-1]))
    return call(*(arange(s, dtype=dtype) for s in shape))


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A broadcasting elementwise function from a scalar Python function of ``nin`` arguments
    (a ``jnp.ufunc`` with ``reduce``, ``outer``, ... when it is binary with one output).

    >>> jnp.frompyfunc(lambda x, y: x * y + 1, 2, 1).outer(jnp.arange(2), jnp.arange(3))
    Array([[1, 1, 1],
           [1, 2, 3]], dtype=int32)
    """
    elementwise = vectorize(func)
    if nin == 2 and nout == 1:
        from .ufunc_objects import ufunc
        return ufunc(elementwise, identity=identity)
    elementwise.nin, elementwise.nout, elementwise.identity = nin, nout, identity
    return elementwise

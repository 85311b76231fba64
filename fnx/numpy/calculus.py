"""Discrete calculus on sampled values: ``gradient`` (central differences) and ``unwrap``
(phase unwrapping)."""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.errors import ShapeError
from ._core import asarray, canonicalize_axes, canonicalize_axis, promote_dtypes_inexact
from .indexing import where
from .reductions import cumsum, diff
from .shapes import concatenate, reshape
from .ufuncs import abs, mod

__all__ = ["gradient", "unwrap"]


def _gradient_along(a, h, axis):
    def sliced(start, stop, x=a):
        return lax.slice_in_dim(x, start % x.shape[axis] if start < 0 else start,
                                x.shape[axis] if stop is None else
                                stop % x.shape[axis] if stop < 0 else stop, axis=axis)

    upper = sliced(1, 2) - sliced(0, 1)
    lower = sliced(-1, None) - sliced(-2, -1)
    if h.ndim == 0:
        inner = (sliced(2, None) - sliced(0, -2)) * 0.5 / h
        upper, lower = upper / h, lower / h
    else:
        if h.shape[0] != a.shape[axis]:
            raise ShapeError(f"gradient: coordinates of length {h.shape[0]} do not match axis "
                             f"{axis} of length {a.shape[axis]}")
        shape = [1] * a.ndim
        shape[axis] = h.shape[0]
        h = reshape(h, shape)
        upper = upper / (sliced(1, 2, h) - sliced(0, 1, h))
        lower = lower / (sliced(-1, None, h) - sliced(-2, -1, h))
        dx1 = sliced(1, -1, h) - sliced(0, -2, h)
        dx2 = sliced(2, None, h) - sliced(1, -1, h)
        # second-order accurate weights on an uneven grid
        inner = (-dx2 / (dx1 * (dx1 + dx2)) * sliced(0, -2)
                 + (dx2 - dx1) / (dx1 * dx2) * sliced(1, -1)
                 + dx1 / (dx2 * (dx1 + dx2)) * sliced(2, None))
    return concatenate([upper, inner, lower], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of sampled ``f``: central differences inside, one-sided at the edges;
    spacings ``varargs`` are scalars or coordinate arrays, one per axis (or one for all).

    >>> jnp.gradient(jnp.array([1.0, 4.0, 9.0, 16.0]))
    Array([3., 4., 6., 7.], dtype=float32)
    """
    if edge_order is not None:
        raise NotImplementedError("gradient: edge_order is not supported, as in JAX")
    f, = promote_dtypes_inexact(f)
    axes = tuple(range(f.ndim)) if axis is None else canonicalize_axes(axis, f.ndim)
    if len(varargs) == 0:
        spacings = [asarray(1.0, f.dtype)] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = [asarray(varargs[0], f.dtype)] * len(axes)
    elif len(varargs) == len(axes):
        spacings = [promote_dtypes_inexact(v)[0] for v in varargs]
    else:
        raise TypeError(f"gradient: got {len(varargs)} spacings for {len(axes)} axes")
    for ax in axes:
        if f.shape[ax] < 2:
            raise ShapeError(f"gradient: axis {ax} of shape {f.shape} needs at least 2 samples")
    out = [_gradient_along(f, h, ax) for ax, h in zip(axes, spacings)]
    return out[0] if len(out) == 1 else out


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` replaced by their ``period`` complements.

    >>> jnp.unwrap(jnp.array([0.0, 3.0, 6.5])).round(2)
    Array([0.  , 3.  , 0.22], dtype=float32)
    """
    p, = promote_dtypes_inexact(p)
    axis = canonicalize_axis(axis, p.ndim)
    discont = period / 2 if discont is None else discont
    interval = period / 2
    dd = diff(p, axis=axis)
    ddmod = mod(dd + interval, period) - interval
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = where(abs(dd) < discont, 0, ddmod - dd)
    n = p.shape[axis]
    return concatenate([lax.slice_in_dim(p, 0, 1, axis=axis),
                        lax.slice_in_dim(p, 1, n, axis=axis) + cumsum(correction, axis=axis)],
                       axis=axis)

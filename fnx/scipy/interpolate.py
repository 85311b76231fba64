"""fnx.scipy.interpolate: SciPy's ``RegularGridInterpolator`` as JAX has it (linear and nearest
interpolation on a rectilinear grid whose axes increase), a pytree of its grid, values and
fill value.

>>> interp = RegularGridInterpolator((jnp.array([0.0, 1.0]),), jnp.array([0.0, 10.0]))
>>> interp(jnp.array([[0.25], [2.0]]))
Array([2.5, nan], dtype=float32)
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import numpy as jnp
from ..core.pytree import register_pytree_node
from ..numpy._core import promote_dtypes_inexact

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined")


def _points_array(xi, ndim: int):
    """Query points as an array of shape (..., ndim): a tuple of coordinate arrays is stacked
    along a new last axis, a 1-d array is read as rows of ``ndim`` coordinates."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        return jnp.stack(jnp.broadcast_arrays(*xi), axis=-1)
    xi = jnp.asarray(xi)
    return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
    """Interpolation on a regular grid in any number of dimensions (SciPy's
    ``scipy.interpolate.RegularGridInterpolator``, as in JAX): ``points`` holds each axis'
    strictly increasing coordinates, ``values`` the data on the grid (trailing axes beyond the
    grid's are carried along), and points outside the grid get ``fill_value`` (or, when it is
    None, the linear extrapolation). ``bounds_error=True`` is refused, as in JAX: a check of
    traced points cannot raise.

    >>> points = (jnp.array([1.0, 2.0, 3.0]), jnp.array([4.0, 5.0, 6.0]))
    >>> values = jnp.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0], [70.0, 80.0, 90.0]])
    >>> RegularGridInterpolator(points, values)(jnp.array([[1.5, 4.5], [2.2, 5.8]]))
    Array([30., 64.], dtype=float32)
    """

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=np.nan):
        _check_method(method)
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        values, = promote_dtypes_inexact(jnp.asarray(values))
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        if fill_value is not None:
            fill_value = jnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 "with values")
        self.method, self.bounds_error = method, bounds_error
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values, self.fill_value = values, fill_value

    def __call__(self, xi, method=None):
        """The interpolated values at the points ``xi`` (shape ``(..., ndim)``).

        >>> f = RegularGridInterpolator((jnp.arange(3.0),), jnp.array([0.0, 1.0, 4.0]))
        >>> f(jnp.array([0.4, 1.6]), method="nearest")
        Array([0., 4.], dtype=float32)
        """
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        lead = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        indices, distances, outside = self._find_indices(xi)
        if method == "linear":
            result = self._linear(indices, distances)
        else:
            result = self.values[tuple(jnp.where(d <= 0.5, i, i + 1)
                                       for i, d in zip(indices, distances))]
        if self.fill_value is not None:
            mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
            result = jnp.where(mask, self.fill_value, result)
        return result.reshape(lead + self.values.shape[ndim:])

    def _linear(self, indices, distances):
        """The sum over the cell's 2**ndim corners of the value times its weight."""
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        result = 0.0
        for corner in itertools.product((0, 1), repeat=len(indices)):
            weight = 1.0
            for upper, d in zip(corner, distances):
                weight = weight * (d if upper else 1 - d)
            value = self.values[tuple(i + upper for i, upper in zip(indices, corner))]
            result = result + value * weight[trailing]
        return result

    def _find_indices(self, xi):
        indices, distances = [], []
        outside = jnp.zeros(xi.shape[0], dtype=bool)
        for x, g in zip(xi.T, self.grid):
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
            indices.append(i)
            distances.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        return indices, distances, outside


register_pytree_node(
    RegularGridInterpolator,
    lambda f: ((f.grid, f.values, f.fill_value), (f.method, f.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]))

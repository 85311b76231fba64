"""fnx.scipy.ndimage: ``map_coordinates`` (orders 0 and 1), as ``jax.scipy.ndimage``: the modes
follow SciPy's documentation ('constant' and 'wrap' act as SciPy's 'grid-constant' and
'grid-wrap').

>>> import fnx.numpy as jnp
>>> image = jnp.arange(12.0).reshape(3, 4)
>>> map_coordinates(image, [jnp.array([0.5, 1.5]), jnp.array([1.5, 2.5])], order=1)
Array([3.5, 8.5], dtype=float32)
"""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.jit import jit


def _mirror(index, size):
    s = size - 1        # the half-period of the triangle wave the index folds along
    return jnp.abs((index + s) % (2 * s) - s)


def _reflect(index, size):
    return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {"constant": lambda index, size: index,
                 "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
                 "wrap": lambda index, size: index % size,
                 "mirror": _mirror, "reflect": _reflect}


def _round_half_away_from_zero(a):
    return a if jnp.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest(coordinate):
    return [(_round_half_away_from_zero(coordinate).astype(np.int32), coordinate.dtype.type(1))]


def _linear(coordinate):
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


@functools.partial(jit, static_argnums=(2, 3))
def _map_coordinates(image, coordinates, order, mode, cval):
    fix = _INDEX_FIXERS[mode]
    nodes = _nearest if order == 0 else _linear
    per_axis = []
    for coordinate, size in zip(coordinates, image.shape):
        per_axis.append([(fix(index, size), (0 <= index) & (index < size), weight)
                         for index, weight in nodes(coordinate)])
    outputs = []
    for corner in itertools.product(*per_axis):
        indices, valid, weights = zip(*corner)
        value = image[tuple(indices)]
        if mode == "constant":
            value = jnp.where(functools.reduce(operator.and_, valid), value, cval)
        outputs.append(functools.reduce(operator.mul, weights) * value)
    result = sum(outputs[1:], outputs[0])
    if jnp.issubdtype(image.dtype, np.integer):
        result = _round_half_away_from_zero(result)
    return result.astype(image.dtype)


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
    """The values of ``input`` at ``coordinates`` (one array per axis), by nearest-neighbour
    (``order=0``) or linear (``order=1``) interpolation; points outside follow ``mode``:
    'constant' (``cval``), 'nearest', 'wrap', 'mirror' or 'reflect'.

    >>> map_coordinates(jnp.array([0.0, 10.0, 20.0]), [jnp.array([0.5, 3.0])], 1, "nearest")
    Array([ 5., 20.], dtype=float32)
    """
    image = jnp.asarray(input)
    coordinates = [jnp.asarray(c) for c in coordinates]
    if len(coordinates) != image.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {image.ndim}")
    if mode not in _INDEX_FIXERS:
        raise NotImplementedError(
            f"fnx.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
            f"Currently supported modes are {set(_INDEX_FIXERS)}.")
    if order not in (0, 1):
        raise NotImplementedError("fnx.scipy.ndimage.map_coordinates currently requires "
                                  "order<=1")
    return _map_coordinates(image, coordinates, order, mode, jnp.asarray(cval, image.dtype))


__all__ = ["map_coordinates"]

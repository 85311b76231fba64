"""Optimizing complex parameters as pairs of real ones."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformation


class SplitRealAndImaginaryArrays(NamedTuple):
    """A complex leaf as its real and imaginary parts.

    >>> SplitRealAndImaginaryArrays._fields
    ('real', 'imaginary')
    """
    real: Any
    imaginary: Any


class SplitRealAndImaginaryState(NamedTuple):
    """``split_real_and_imaginary``'s state: the inner transformation's.

    >>> SplitRealAndImaginaryState._fields
    ('inner_state',)
    """
    inner_state: Any


def _split(x):
    return SplitRealAndImaginaryArrays(x.real, x.imag) if jnp.iscomplexobj(x) else x


def _join(x):
    if isinstance(x, SplitRealAndImaginaryArrays):
        return x.real + x.imaginary * 1j
    return x


def split_real_and_imaginary(inner: GradientTransformation) -> GradientTransformation:
    """``inner`` run on the real and imaginary parts of complex leaves as separate real
    leaves (so Adam's moments are per part, not of the modulus).

    >>> opt = split_real_and_imaginary(fnx.optim.sgd(0.5))
    >>> params = jnp.array([1.0 + 2.0j])
    >>> opt.update(jnp.array([2.0 - 4.0j]), opt.init(params), params)[0]
    Array([-1.+2.j], dtype=complex64)
    """
    def init(params):
        return SplitRealAndImaginaryState(inner.init(tree_map(_split, params)))

    def update(updates, state, params=None):
        updates, inner_state = inner.update(tree_map(_split, updates), state.inner_state,
                                            tree_map(_split, params))
        updates = tree_map(_join, updates,
                           is_leaf=lambda x: isinstance(x, SplitRealAndImaginaryArrays))
        return updates, SplitRealAndImaginaryState(inner_state)
    return GradientTransformation(init, update)

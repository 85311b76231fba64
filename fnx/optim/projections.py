"""fnx.optim.projections: Euclidean projections of a pytree onto convex sets
(optax.projections), for projected gradient descent.

>>> from fnx.optim import projections
>>> projections.projection_simplex(jnp.array([0.5, 1.5]))
Array([0., 1.], dtype=float32)
"""
from __future__ import annotations

from typing import Any

from .. import numpy as jnp
from ..core.control_flow import cond
from ..core.custom_derivatives import custom_jvp
from ..core.pytree import tree_map, tree_structure
from ..flatten_util import ravel_pytree
from .tree_utils import tree_add_scale, tree_full_like, tree_mul, tree_norm, tree_scale, tree_vdot


def _like(bound, tree):
    # a scalar bound holds for every leaf
    if tree_structure(bound).num_leaves == 1 and tree_structure(tree).num_leaves != 1:
        return tree_full_like(tree, bound)
    return bound


def projection_non_negative(tree: Any) -> Any:
    """The nearest tree with no negative entries: ``max(x, 0)``.

    >>> projection_non_negative(jnp.array([-1.0, 2.0]))
    Array([0., 2.], dtype=float32)
    """
    return tree_map(lambda x: jnp.maximum(x, 0), tree)


def projection_box(tree: Any, lower: Any, upper: Any) -> Any:
    """The nearest tree with ``lower <= x <= upper`` (bounds: trees like ``tree`` or scalars).

    >>> projection_box(jnp.array([-2.0, 0.5, 3.0]), -1.0, 1.0)
    Array([-1. ,  0.5,  1. ], dtype=float32)
    """
    return tree_map(jnp.clip, tree, _like(lower, tree), _like(upper, tree))


def projection_hypercube(tree: Any, scale: Any = 1) -> Any:
    """The nearest tree with ``0 <= x <= scale``.

    >>> projection_hypercube(jnp.array([-2.0, 0.5, 3.0]))
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    return projection_box(tree, lower=0, upper=scale)


@custom_jvp
def _projection_unit_simplex(values):
    n = values.shape[0]
    u = jnp.sort(values)[::-1]
    cumsum_u = jnp.cumsum(u)
    ind = jnp.arange(n) + 1
    support = 1 / ind + (u - cumsum_u / ind) > 0
    idx = jnp.count_nonzero(support)
    return jnp.maximum(1 / idx + (values - cumsum_u[idx - 1] / idx), 0)


@_projection_unit_simplex.defjvp
def _projection_unit_simplex_jvp(primals, tangents):
    (values,), (values_dot,) = primals, tangents
    out = _projection_unit_simplex(values)
    supp = (out > 0).astype(values.dtype)
    card = jnp.count_nonzero(supp)
    return out, supp * values_dot - (jnp.dot(supp, values_dot) / card) * supp


def projection_simplex(tree: Any, scale=1) -> Any:
    """The nearest tree whose entries are non-negative and sum to ``scale`` (all leaves
    together).

    >>> projection_simplex(jnp.array([1.0, 2.0, 3.0]), scale=2.0)
    Array([0. , 0.5, 1.5], dtype=float32)
    """
    values, unravel = ravel_pytree(tree)
    return unravel(scale * _projection_unit_simplex(values / scale))


def projection_l1_sphere(tree: Any, scale=1) -> Any:
    """The nearest tree with l1 norm exactly ``scale``.

    >>> projection_l1_sphere(jnp.array([-2.0, 1.0]))
    Array([-1.,  0.], dtype=float32)
    """
    signs = tree_map(jnp.sign, tree)
    return tree_mul(signs, projection_simplex(tree_map(jnp.abs, tree), scale))


def projection_l1_ball(tree: Any, scale=1) -> Any:
    """The nearest tree with l1 norm at most ``scale``.

    >>> projection_l1_ball(jnp.array([0.25, -0.5]))
    Array([ 0.25, -0.5 ], dtype=float32)
    """
    return cond(tree_norm(tree, ord=1) <= scale, lambda t: t,
                lambda t: projection_l1_sphere(t, scale), tree)


def projection_l2_sphere(tree: Any, scale=1) -> Any:
    """``tree`` rescaled to l2 norm ``scale``.

    >>> projection_l2_sphere(jnp.array([3.0, 4.0]))
    Array([0.6, 0.8], dtype=float32)
    """
    return tree_scale(scale / tree_norm(tree), tree)


def projection_l2_ball(tree: Any, scale=1) -> Any:
    """The nearest tree with l2 norm at most ``scale``.

    >>> projection_l2_ball(jnp.array([3.0, 4.0]), scale=10.0)
    Array([3., 4.], dtype=float32)
    """
    squared = tree_norm(tree, squared=True)
    return tree_scale(scale / jnp.sqrt(jnp.maximum(squared, scale ** 2)), tree)


def projection_linf_ball(tree: Any, scale=1) -> Any:
    """The nearest tree with every entry in ``[-scale, scale]``.

    >>> projection_linf_ball(jnp.array([-3.0, 0.5]))
    Array([-1. ,  0.5], dtype=float32)
    """
    return projection_box(tree, tree_full_like(tree, -scale), tree_full_like(tree, scale))


def projection_vector(x: Any, a: Any) -> Any:
    """The projection of ``x`` onto the line spanned by ``a``.

    >>> projection_vector(jnp.array([1.0, 1.0]), jnp.array([2.0, 0.0]))
    Array([1., 0.], dtype=float32)
    """
    return tree_scale(tree_vdot(x, a) / tree_vdot(a, a), a)


def projection_hyperplane(x: Any, a: Any, b) -> Any:
    """The nearest point to ``x`` with ``<a, x> = b``.

    >>> projection_hyperplane(jnp.array([1.0, 1.0]), jnp.array([1.0, 0.0]), 3.0)
    Array([3., 1.], dtype=float32)
    """
    return tree_add_scale(x, (b - tree_vdot(x, a)) / tree_vdot(a, a), a)


def projection_halfspace(x: Any, a: Any, b) -> Any:
    """The nearest point to ``x`` with ``<a, x> <= b``.

    >>> projection_halfspace(jnp.array([5.0, 1.0]), jnp.array([1.0, 0.0]), 3.0)
    Array([3., 1.], dtype=float32)
    """
    scalar = jnp.minimum((b - tree_vdot(x, a)) / tree_vdot(a, a), 0)
    return tree_add_scale(x, scalar, a)


__all__ = ["projection_box", "projection_halfspace", "projection_hypercube",
           "projection_hyperplane", "projection_l1_ball", "projection_l1_sphere",
           "projection_l2_ball", "projection_l2_sphere", "projection_linf_ball",
           "projection_non_negative", "projection_simplex", "projection_vector"]

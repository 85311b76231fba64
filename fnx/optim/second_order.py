"""fnx.optim.second_order: curvature of a loss ``loss(params, inputs, targets)`` over the
flattened parameters (optax.second_order, which optax marks deprecated).

>>> def loss(params, x, y):
...     return jnp.sum((x @ params["w"] - y) ** 2)
>>> params = {"w": jnp.array([1.0, 2.0])}
>>> x, y = jnp.array([[1.0, 0.0], [1.0, 3.0]]), jnp.array([0.0, 1.0])
>>> hessian_diag(loss, params, x, y)
Array([ 4., 18.], dtype=float32)
"""
from __future__ import annotations

from .. import numpy as jnp
from ..core.api import grad, jvp, vmap
from ..flatten_util import ravel_pytree


def _ravel(tree):
    return ravel_pytree(tree)[0]


def hvp(loss, v, params, inputs, targets):
    """The Hessian of ``loss`` at ``(params, inputs, targets)`` times the flat vector ``v``,
    as a tree shaped like ``params`` (forward over reverse mode).

    >>> loss = lambda p, x, y: jnp.sum(p ** 3) * x + y
    >>> hvp(loss, jnp.array([1.0, 0.0]), jnp.array([1.0, 2.0]), 1.0, 0.0)
    Array([6., 0.], dtype=float32)
    """
    _, unravel = ravel_pytree(params)
    return jvp(grad(lambda p: loss(p, inputs, targets)), (params,), (unravel(v),))[1]


def hessian_diag(loss, params, inputs, targets):
    """The diagonal of the Hessian of ``loss`` over the flattened ``params``, one
    Hessian-vector product per parameter.

    >>> loss = lambda p, x, y: jnp.sum(p ** 3) * x + y
    >>> hessian_diag(loss, jnp.array([1.0, 2.0]), 1.0, 0.0)
    Array([ 6., 12.], dtype=float32)
    """
    basis = jnp.eye(_ravel(params).size)
    return vmap(lambda v: jnp.vdot(v, _ravel(hvp(loss, v, params, inputs, targets))))(basis)


def fisher_diag(negative_log_likelihood, params, inputs, targets):
    """The diagonal of the observed Fisher information: the squared gradient of
    ``negative_log_likelihood`` over the flattened ``params``.

    >>> nll = lambda p, x, y: jnp.sum((p * x - y) ** 2)
    >>> fisher_diag(nll, jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0]), 0.0)
    Array([ 4., 16.], dtype=float32)
    """
    return jnp.square(_ravel(grad(negative_log_likelihood)(params, inputs, targets)))


__all__ = ["fisher_diag", "hessian_diag", "hvp"]

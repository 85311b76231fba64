"""L-BFGS: updates multiplied by an inverse-Hessian approximation built from the last few
parameter and gradient differences, then scaled by a line search."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core.api import stop_gradient
from ..core.control_flow import scan
from ..core.pytree import tree_map
from ._base import GradientTransformation, chain, identity
from ._linesearch import scale_by_zoom_linesearch
from ._numerics import safe_increment
from ._transforms import scale, scale_by_learning_rate
from .tree_utils import (tree_add_scale, tree_cast_like, tree_norm, tree_real, tree_scale,
                         tree_sub, tree_vdot, tree_zeros_like)


class ScaleByLBFGSState(NamedTuple):
    """``scale_by_lbfgs``' state: the step count, the last params and updates, and the memory
    of their differences (stacked on a leading axis) with their weights ``1 / <dw, du>``.

    >>> ScaleByLBFGSState._fields
    ('count', 'params', 'updates', 'diff_params_memory', 'diff_updates_memory', 'weights_memory')
    """
    count: Any
    params: Any
    updates: Any
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


def _precondition(updates, dw_memory, du_memory, rhos, identity_scale, memory_idx):
    """The two-loop recursion (Nocedal and Wright, Algorithm 7.4) over the memory, oldest
    difference at ``memory_idx``."""
    size = rhos.shape[0]
    indices = (memory_idx + jnp.arange(size)) % size

    def at(idx):
        return tree_map(lambda x: x[idx], (dw_memory, du_memory))

    def right(vec, idx):
        dw, du = at(idx)
        alpha = rhos[idx] * tree_real(tree_vdot(dw, vec))
        return tree_cast_like(tree_add_scale(vec, -alpha, du), vec), alpha

    vec, alphas = scan(right, updates, indices, reverse=True)
    vec = tree_scale(identity_scale, vec)

    def left(vec, idx_alpha):
        idx, alpha = idx_alpha
        dw, du = at(idx)
        beta = rhos[idx] * tree_real(tree_vdot(du, vec))
        return tree_cast_like(tree_add_scale(vec, alpha - beta, dw), vec), beta

    vec, _ = scan(left, vec, (indices, alphas))
    return vec


def scale_by_lbfgs(memory_size: int = 10, scale_init_precond: bool = True
                   ) -> GradientTransformation:
    """Multiply the updates by L-BFGS' approximation of the inverse Hessian, built from the
    last ``memory_size`` differences of parameters and updates (the first step is scaled by
    ``min(1, 1 / ||g||)``).

    >>> opt = chain(scale_by_lbfgs(), scale(-0.5))
    """
    if memory_size < 1:
        raise ValueError(f"scale_by_lbfgs' memory_size must be >= 1, got {memory_size}")

    def init(params):
        stacked = tree_map(lambda x: jnp.zeros((memory_size,) + jnp.shape(x),
                                               jnp.asarray(x).dtype), params)
        return ScaleByLBFGSState(jnp.asarray(0, jnp.int32), tree_zeros_like(params),
                                 tree_zeros_like(params), stacked, stacked,
                                 jnp.zeros(memory_size))

    def update(updates, state, params):
        if params is None:
            raise ValueError("scale_by_lbfgs needs params: call update(updates, state, params)")
        memory_idx = state.count % memory_size
        prev_idx = (state.count - 1) % memory_size
        dw, du = tree_sub(params, state.params), tree_sub(updates, state.updates)
        dot = tree_real(tree_vdot(du, dw))
        weight = jnp.where(dot == 0.0, 0.0, 1.0 / dot)
        first = state.count == 0
        dw, du, weight = tree_map(lambda x: jnp.where(first, jnp.zeros_like(x), x),
                                  (dw, du, weight))
        dw_memory, du_memory, weights = tree_map(
            lambda mem, x: mem.at[prev_idx].set(x),
            (state.diff_params_memory, state.diff_updates_memory, state.weights_memory),
            (dw, du, weight))
        if scale_init_precond:
            denominator = tree_norm(du, squared=True)
            gamma = jnp.where(denominator > 0.0, tree_real(tree_vdot(du, dw)) / denominator, 1.0)
            capped = jnp.minimum(1.0, 1.0 / tree_norm(stop_gradient(updates)))
            gamma = jnp.where(first, capped, gamma)
        else:
            gamma = 1.0
        out = _precondition(updates, dw_memory, du_memory, weights, gamma, memory_idx)
        return out, ScaleByLBFGSState(safe_increment(state.count), params, updates, dw_memory,
                                      du_memory, weights)
    return GradientTransformation(init, update)


_DEFAULT_LINESEARCH = object()


def lbfgs(learning_rate=None, memory_size: int = 10, scale_init_precond: bool = True,
          linesearch=_DEFAULT_LINESEARCH):
    """L-BFGS: :func:`scale_by_lbfgs`, then ``-learning_rate`` (``-1`` if None), then a
    line search (by default a zoom line search of up to 20 steps). Its ``update`` takes the
    objective: ``update(grad, state, params, value=, grad=, value_fn=)``.

    >>> f = lambda x: jnp.sum((x - jnp.array([1.0, 2.0])) ** 2)
    >>> opt = lbfgs()
    >>> x = jnp.zeros(2)
    >>> state = opt.init(x)
    >>> value_and_grad = value_and_grad_from_state(f)
    >>> for _ in range(3):
    ...     value, grad = value_and_grad(x, state=state)
    ...     updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=f)
    ...     x = apply_updates(x, updates)
    >>> x
    Array([1., 2.], dtype=float32)
    """
    if linesearch is _DEFAULT_LINESEARCH:
        linesearch = scale_by_zoom_linesearch(max_linesearch_steps=20,
                                              initial_guess_strategy="one")
    return chain(scale_by_lbfgs(memory_size, scale_init_precond),
                 scale(-1.0) if learning_rate is None else scale_by_learning_rate(learning_rate),
                 identity() if linesearch is None else linesearch)

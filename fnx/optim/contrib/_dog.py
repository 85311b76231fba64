"""DoG and DoWG: step sizes from the distance travelled from the initial parameters."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from .._base import GradientTransformation, chain, identity
from .._constrain import add_decayed_weights
from .._transforms import scale_by_learning_rate
from ..tree_utils import tree_dtype, tree_norm, tree_scale, tree_sub


class DoGState(NamedTuple):
    """``scale_by_dog``'s state.

    >>> DoGState._fields
    ('is_init_step', 'init_params', 'max_dist', 'sum_sq_norm_grads')
    """
    is_init_step: Any
    init_params: Any
    max_dist: Any
    sum_sq_norm_grads: Any


def scale_by_dog(init_step, eps: float = 1e-8) -> GradientTransformation:
    """Distance over Gradients (Ivgi et al., 2023): scale by ``max_dist / sqrt(sum |g|^2)``.
    ``init_step`` is ``("distance", r)``, ``("learning_rate", lr)`` or ``("heuristic", c)``
    (``r = c * (1 + |x0|)``).

    >>> opt = scale_by_dog(("heuristic", 1e-6))
    """
    kind, amount = init_step
    if kind not in ("distance", "learning_rate", "heuristic"):
        raise ValueError(f"scale_by_dog: init_step must start with 'distance', "
                         f"'learning_rate' or 'heuristic', got {kind!r}")

    def init(params):
        dtype = tree_dtype(params, "lowest")
        r = {"distance": amount, "learning_rate": 0.0}.get(kind)
        if r is None:
            r = amount * (1 + tree_norm(params))
        return DoGState(jnp.asarray(True), params, jnp.asarray(r, dtype), jnp.zeros((), dtype))

    def update(updates, state, params):
        max_dist = jnp.maximum(state.max_dist, tree_norm(tree_sub(state.init_params, params)))
        sum_sq = state.sum_sq_norm_grads + tree_norm(updates, squared=True)
        lr = max_dist / jnp.sqrt(sum_sq + eps)
        if kind == "learning_rate":
            lr = jnp.where(state.is_init_step, amount, lr)
        return tree_scale(lr, updates), DoGState(jnp.asarray(False), state.init_params,
                                                 max_dist, sum_sq)
    return GradientTransformation(init, update)


def dog(learning_rate=1.0, init_step=("heuristic", 1e-6), eps: float = 1e-8,
        weight_decay: float | None = None, mask=None) -> GradientTransformation:
    """DoG with optional weight decay; ``learning_rate`` multiplies its step.

    >>> opt = dog()
    """
    return chain(identity() if weight_decay is None else add_decayed_weights(weight_decay, mask),
                 scale_by_dog(init_step, eps), scale_by_learning_rate(learning_rate))


class DoWGState(NamedTuple):
    """``scale_by_dowg``'s state.

    >>> DoWGState._fields
    ('init_params', 'weighted_sq_norm_grads', 'estim_sq_dist')
    """
    init_params: Any
    weighted_sq_norm_grads: Any
    estim_sq_dist: Any


def scale_by_dowg(init_estim_sq_dist: float | None = None,
                  eps: float = 1e-4) -> GradientTransformation:
    """Distance over Weighted Gradients (Khaled et al., 2023).

    >>> opt = scale_by_dowg()
    """
    def init(params):
        dtype = tree_dtype(params, "lowest")
        start = eps if init_estim_sq_dist is None else init_estim_sq_dist
        return DoWGState(params, jnp.zeros((), dtype), jnp.asarray(start, dtype))

    def update(updates, state, params):
        sq_dist = jnp.maximum(state.estim_sq_dist,
                              tree_norm(tree_sub(state.init_params, params), squared=True))
        weighted = sq_dist * tree_norm(updates, squared=True) + state.weighted_sq_norm_grads
        lr = sq_dist / (jnp.sqrt(weighted) + eps)
        return tree_scale(lr, updates), state._replace(estim_sq_dist=sq_dist,
                                                       weighted_sq_norm_grads=weighted)
    return GradientTransformation(init, update)


def dowg(learning_rate=1.0, init_estim_sq_dist: float | None = None, eps: float = 1e-4,
         weight_decay: float | None = None, mask=None) -> GradientTransformation:
    """DoWG with optional weight decay; ``learning_rate`` multiplies its step.

    >>> opt = dowg()
    """
    return chain(identity() if weight_decay is None else add_decayed_weights(weight_decay, mask),
                 scale_by_dowg(init_estim_sq_dist, eps), scale_by_learning_rate(learning_rate))

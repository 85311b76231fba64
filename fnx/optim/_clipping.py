"""Transformations that clip the updates."""
from __future__ import annotations

from .. import numpy as jnp
from ..core.pytree import tree_flatten, tree_unflatten
from ._base import EmptyState, GradientTransformation, _const, _tree_map, global_norm
from ._factorized import _abs_sq


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale all updates together so that their global l2 norm is at most ``max_norm``.

    >>> opt = chain(clip_by_global_norm(1.0), sgd(0.1))
    """
    def update(updates, state, params=None):
        norm = global_norm(updates)
        small = norm < max_norm
        out = _tree_map(lambda g: jnp.where(small, g, (g / norm.astype(g.dtype))
                                            * _const(max_norm, g)),
                        updates)
        return out, state
    return GradientTransformation(lambda params: EmptyState(), update)


def clip(max_delta: float) -> GradientTransformation:
    """Clip every update element to ``[-max_delta, max_delta]``.

    >>> tx = fnx.optim.clip(1.0)
    >>> tx.update({"w": jnp.array([-3.0, 0.5])}, tx.init(None))[0]
    {'w': Array([-1. ,  0.5], dtype=float32)}
    """
    def update(updates, state, params=None):
        return _tree_map(lambda g: jnp.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def clip_by_block_rms(threshold: float) -> GradientTransformation:
    """Scale each update leaf down so its root mean square is at most ``threshold``.

    >>> opt = chain(clip_by_block_rms(1.0), scale(-1e-2))
    """
    def update(updates, state, params=None):
        def clip(u):
            return u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(_abs_sq(u))) / threshold)
        leaves, tree = tree_flatten(updates)
        return tree_unflatten(tree, [clip(u) for u in leaves]), state
    return GradientTransformation(lambda params: EmptyState(), update)

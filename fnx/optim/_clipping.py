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


def _batched_norms(grads):
    """Each example's global l2 norm (axis 0 of every leaf is the batch)."""
    leaves = tree_flatten(grads)[0]
    batch = leaves[0].shape[0]
    if not all(g.ndim >= 1 and g.shape[0] == batch for g in leaves):
        raise ValueError("per-example clipping expects every gradient to have the batch on "
                         f"axis 0; got shapes {[tuple(g.shape) for g in leaves]}")
    return jnp.sqrt(sum(jnp.sum(_abs_sq(g).reshape(batch, -1), axis=1) for g in leaves))


def per_example_global_norm_clip(grads, l2_norm_clip):
    """Clip each example's gradient (axis 0 of every leaf) to global norm ``l2_norm_clip`` and
    sum over examples. Returns ``(clipped_sum, num_clipped)``.

    >>> grads = [jnp.array([[0., 0., 0.], [0., 3., 4.], [4., 0., 3.], [3., 4., 0.]])]
    >>> per_example_global_norm_clip(grads, 1.25)
    ([Array([1.75, 1.75, 1.75], dtype=float32)], Array(3, dtype=int32))
    """
    norms = _batched_norms(grads)
    multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    num_clipped = jnp.sum(multipliers < 1.0).astype(jnp.int32)
    leaves, tree = tree_flatten(grads)
    summed = [jnp.tensordot(multipliers, g, axes=1) for g in leaves]
    return tree_unflatten(tree, summed), num_clipped


def per_example_layer_norm_clip(grads, global_l2_norm_clip, uniform: bool = True):
    """:func:`per_example_global_norm_clip` layer by layer: each of the ``K`` leaves is clipped
    to ``C / sqrt(K)`` (``uniform``) or ``C * sqrt(D_i / D)`` by its share of parameters.
    Returns ``(clipped_sums, nums_clipped)``, each shaped like ``grads``.

    >>> grads = [jnp.array([[0., 0., 0.], [0., 3., 4.], [4., 0., 3.], [3., 4., 0.]])]
    >>> per_example_layer_norm_clip(grads, 1.25)
    ([Array([1.75, 1.75, 1.75], dtype=float32)], [Array(3, dtype=int32)])
    """
    leaves, tree = tree_flatten(grads)
    _batched_norms(grads)   # checks the batch axis
    total = sum(g[0].size for g in leaves)
    sums, counts = [], []
    for g in leaves:
        share = 1.0 / len(leaves) if uniform else g[0].size / total
        s, n = per_example_global_norm_clip([g], global_l2_norm_clip * share ** 0.5)
        sums.append(s[0])
        counts.append(n)
    return tree_unflatten(tree, sums), tree_unflatten(tree, counts)


_UNIT_AXES = {2: (0,), 3: (0,), 4: (0, 1, 2), 5: (0, 1, 2, 3)}


def unitwise_norm(x, axis=None):
    """The l2 norm of each unit of ``x``, broadcast to ``x``'s shape. Without ``axis`` the
    units follow layer conventions: a vector whole, axis 0 of a (multihead) linear kernel,
    the spatial and input axes of a conv kernel (HWIO, DHWIO).

    >>> unitwise_norm(jnp.array([[3.0, 0.0], [4.0, 1.0]]))
    Array([[5., 1.],
           [5., 1.]], dtype=float32)
    """
    x = jnp.asarray(x)
    if axis is None and jnp.squeeze(x).ndim <= 1:
        axis = None
    elif axis is None:
        if x.ndim not in _UNIT_AXES:
            raise ValueError(f"unitwise_norm expects a parameter of rank 1 to 5, got shape "
                             f"{tuple(x.shape)}; pass axis= for other shapes")
        axis = _UNIT_AXES[x.ndim]
    return jnp.broadcast_to(jnp.sqrt(jnp.sum(_abs_sq(x), axis=axis, keepdims=True)), x.shape)


def unitwise_clip(g_norm, max_norm, grad, div_eps=1e-6):
    """``grad`` rescaled to ``max_norm`` where its unit norm ``g_norm`` exceeds it.

    >>> unitwise_clip(jnp.array([5.0]), jnp.array([1.0]), jnp.array([5.0]))
    Array([1.], dtype=float32)
    """
    shapes = {tuple(jnp.shape(a)) for a in (g_norm, max_norm, grad)}
    if len(shapes) != 1:
        raise ValueError(f"unitwise_clip expects equal shapes, got {sorted(shapes)}")
    clipped = grad * (max_norm / jnp.maximum(g_norm, div_eps))
    return jnp.where(g_norm < max_norm, grad, clipped)


def adaptive_grad_clip(clipping: float, eps: float = 1e-3, axis=None) -> GradientTransformation:
    """Clip each unit's update to at most ``clipping`` times its parameter's unit norm
    (at least ``eps``), as NFNets do.

    >>> opt = chain(adaptive_grad_clip(0.01), sgd(0.1))
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("adaptive_grad_clip needs params: call update(updates, state, "
                             "params)")

        def clip_leaf(g, p):
            g_norm, p_norm = unitwise_norm(g, axis), unitwise_norm(p, axis)
            return unitwise_clip(g_norm, clipping * jnp.maximum(p_norm, eps), g)
        return _tree_map(clip_leaf, updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)

"""Adafactor: second moments kept as row and column averages (optax's ``adafactor``)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core.pytree import tree_flatten, tree_unflatten
from . import (EmptyState, GradientTransformation, _count0, _increment, add_decayed_weights,
               chain, ema, scale, scale_by_learning_rate)


class FactoredState(NamedTuple):
    count: Any
    v_row: Any       # per factored leaf: the row averages of the squared gradients
    v_col: Any       # ... and the column averages
    v: Any           # per unfactored leaf: the full second moment


def _factored_dims(shape, factored: bool, min_dim_size_to_factor: int):
    """The two largest axes (second largest first) if both reach ``min_dim_size_to_factor``."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape)
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


def _abs_sq(x):
    return jnp.real(jnp.conj(x) * x)


def _decay_rate_pow(step, exponent):
    """Adafactor's second-moment decay ``1 - (step + 1) ** -exponent``, in float32 as optax."""
    return 1.0 - jnp.asarray(step + 1, jnp.float32) ** (-exponent)


def scale_by_factored_rms(factored: bool = True, decay_rate: float = 0.8, step_offset: int = 0,
                          min_dim_size_to_factor: int = 128, epsilon: float = 1e-30,
                          decay_rate_fn=_decay_rate_pow) -> GradientTransformation:
    """Divide updates by a root-mean-square estimate that, for a matrix whose two largest
    axes are ``min_dim_size_to_factor`` or longer, keeps only row and column averages.

    >>> opt = chain(scale_by_factored_rms(), scale(-1e-2))
    """
    def init(params):
        leaves, tree = tree_flatten(params)
        rows, cols, vs = [], [], []
        tiny = [jnp.zeros((1,), p.dtype) for p in leaves]
        for p, z in zip(leaves, tiny):
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            if dims is None:
                rows.append(z), cols.append(z), vs.append(jnp.zeros_like(p))
            else:
                d1, d0 = dims
                rows.append(jnp.zeros(np.delete(p.shape, d0), p.dtype))
                cols.append(jnp.zeros(np.delete(p.shape, d1), p.dtype))
                vs.append(z)
        return FactoredState(_count0(), *(tree_unflatten(tree, x) for x in (rows, cols, vs)))

    def update_leaf(g, v_row, v_col, v, p, decay):
        dtype = p.dtype
        tiny = jnp.zeros((1,), dtype)
        g_sq = _abs_sq(g) + epsilon
        dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
        if dims is None:
            new_v = (decay * v + (1.0 - decay) * g_sq).astype(dtype)
            return g * new_v ** -0.5, tiny, tiny, new_v
        d1, d0 = dims
        new_row = (decay * v_row + (1.0 - decay) * jnp.mean(g_sq, axis=d0)).astype(dtype)
        new_col = (decay * v_col + (1.0 - decay) * jnp.mean(g_sq, axis=d1)).astype(dtype)
        row_mean = jnp.mean(new_row, axis=d1 - 1 if d1 > d0 else d1, keepdims=True)
        update = (g * jnp.expand_dims((new_row / row_mean) ** -0.5, d0)
                  * jnp.expand_dims(new_col ** -0.5, d1))
        return update, new_row, new_col, tiny

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_factored_rms needs the parameters: "
                             "update(updates, state, params)")
        leaves, tree = tree_flatten(updates)
        parts = [tree_flatten(t)[0] for t in (state.v_row, state.v_col, state.v, params)]
        decay = decay_rate_fn(state.count - step_offset, decay_rate)
        outs = [update_leaf(*args, decay) for args in zip(leaves, *parts)]
        cols = [tree_unflatten(tree, list(c)) for c in zip(*outs)] if outs else [updates] * 4
        return cols[0], FactoredState(_increment(state.count), *cols[1:])
    return GradientTransformation(init, update)


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


def _safe_rms(x, min_rms):
    rms = jnp.sqrt(jnp.mean(_abs_sq(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)   # a finite gradient at zero, as optax
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(_abs_sq(x))))


def scale_by_param_block_rms(min_scale: float = 1e-3) -> GradientTransformation:
    """Scale each update leaf by its parameter's root mean square (at least ``min_scale``).

    >>> opt = chain(scale_by_param_block_rms(), scale(-1e-2))
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_param_block_rms needs the parameters: "
                             "update(updates, state, params)")
        leaves, tree = tree_flatten(updates)
        ps = tree_flatten(params)[0]
        return tree_unflatten(tree, [u * _safe_rms(p, min_scale)
                                     for u, p in zip(leaves, ps)]), state
    return GradientTransformation(lambda params: EmptyState(), update)


def adafactor(learning_rate=None, min_dim_size_to_factor: int = 128, decay_rate: float = 0.8,
              decay_offset: int = 0, multiply_by_parameter_scale: bool = True,
              clipping_threshold: float | None = 1.0, momentum: float | None = None,
              dtype_momentum=jnp.float32, weight_decay_rate: float | None = None,
              eps: float = 1e-30, factored: bool = True,
              weight_decay_mask=None) -> GradientTransformation:
    """The Adafactor optimizer (Shazeer and Stern, 2018) with optax's defaults and steps:
    factored second moments, update clipping, steps relative to each parameter's scale.

    >>> opt = adafactor(learning_rate=1e-2)
    >>> state = opt.init(params)
    >>> updates, state = opt.update(grads, state, params)
    """
    tx = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor,
                                eps)]
    if clipping_threshold is not None:
        tx.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(scale_by_param_block_rms())
    if momentum is not None:
        tx.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    tx.append(scale(-1))
    return chain(*tx)

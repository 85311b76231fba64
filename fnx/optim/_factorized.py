"""Adafactor's factored second moments."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core.pytree import tree_flatten, tree_unflatten
from ._base import GradientTransformation, _count0, _increment


class FactoredState(NamedTuple):
    """adafactor's second-moment state: the step ``count`` and, per leaf, the row and column
    averages of the squared gradients (factored leaves) or their full average ``v`` (the
    others).

    >>> opt = fnx.optim.adafactor(1e-2, min_dim_size_to_factor=2)
    >>> state = opt.init({"w": jnp.ones((4, 3))})[0]
    >>> state.v_row["w"].shape, state.v_col["w"].shape
    ((3,), (4,))
    """
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

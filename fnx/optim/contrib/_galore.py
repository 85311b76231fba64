"""GaLore (Zhao et al., 2024, "Memory-Efficient LLM Training by Gradient Low-Rank
Projection"): a base optimizer run on gradients projected onto their top singular vectors,
the projection refreshed every ``update_proj_gap`` steps."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence, Union

from ... import numpy as jnp
from ...core.control_flow import cond
from ...core.pytree import tree_flatten, tree_map, tree_structure, tree_transpose
from .._base import GradientTransformation, chain
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from .._transforms import scale_by_adam, scale_by_learning_rate


class GaLoreDimensionNumbers(NamedTuple):
    """Which axes of a weight are its matrix's rows (``reduction_axis``) and columns
    (``output_axis``); together they name every axis once.

    >>> GaLoreDimensionNumbers()
    GaLoreDimensionNumbers(reduction_axis=0, output_axis=1)
    """
    reduction_axis: Union[Sequence[int], int] = 0
    output_axis: Union[Sequence[int], int] = 1


class GaLoreState(NamedTuple):
    """``scale_by_galore``'s state: the step, the base optimizer's state (over the projected
    gradients) and the projection matrices.

    >>> GaLoreState._fields
    ('count', 'base_optimizer_state', 'projector')
    """
    count: Any
    base_optimizer_state: Any
    projector: Any


def _is_dim_nums_leaf(x):
    return x is None or isinstance(x, GaLoreDimensionNumbers)


def _axes(axis, ndim):
    return tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))


def _as_matrix(x, dims):
    """``(to_matrix, from_matrix)`` for arrays shaped like ``x`` under ``dims``."""
    if x.ndim < 2:
        raise ValueError(f"GaLore needs weights of rank 2 or more, got shape {x.shape}")
    rows, cols = _axes(dims.reduction_axis, x.ndim), _axes(dims.output_axis, x.ndim)
    if set(rows) & set(cols) or len(set(rows) | set(cols)) != x.ndim:
        raise ValueError(f"GaLore: reduction axes {rows} and output axes {cols} must split the "
                         f"{x.ndim} axes of shape {x.shape} between them")
    order = rows + cols
    inverse = tuple(sorted(range(x.ndim), key=lambda i: order[i]))
    shape = tuple(x.shape[a] for a in order)
    m, n = math.prod(shape[:len(rows)]), math.prod(shape[len(rows):])
    return (lambda y: y.transpose(order).reshape(m, n),
            lambda y: y.reshape(shape).transpose(inverse))


def scale_by_galore(rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0,
                    base_optimizer=None, weight_dimension_numbers=None) -> GradientTransformation:
    """``base_optimizer`` (Adam's scaling by default) on each weight matrix's gradient
    projected onto its ``rank`` leading singular vectors (left ones for tall matrices, right
    ones for wide), mapped back and times ``scale``; weights of rank < 2 are passed through.

    >>> tx = scale_by_galore(rank=1, update_proj_gap=10)
    >>> params = {"w": jnp.ones((4, 3)), "b": jnp.ones(3)}
    >>> tx.init(params).projector["w"].shape
    (4, 1)
    """
    base = scale_by_adam() if base_optimizer is None else base_optimizer
    if not isinstance(rank, int):
        raise TypeError(f"scale_by_galore: rank must be an int, got {type(rank).__name__}")
    if rank <= 0:
        raise ValueError(f"scale_by_galore: rank must be positive, got {rank}")
    dim_nums_of = weight_dimension_numbers

    def dim_nums(tree):
        if dim_nums_of is None:
            return tree_map(lambda p: GaLoreDimensionNumbers() if p.ndim == 2 else None, tree)
        if isinstance(dim_nums_of, GaLoreDimensionNumbers):
            return tree_map(lambda p: dim_nums_of if p.ndim >= 2 else None, tree)
        return dim_nums_of(tree) if callable(dim_nums_of) else dim_nums_of

    def split(tree, results):
        return tree_transpose(tree_structure(tree), tree_structure((0, 0)), results)

    def shapes(p, dims):
        if dims is None:
            return jnp.zeros((0, 0), p.dtype), jnp.zeros_like(p)
        m, n = _as_matrix(p, dims)[0](p).shape
        k = min(rank, m, n)
        # the projector and the projected gradient the base optimizer sees
        return ((jnp.zeros((m, k), p.dtype), jnp.zeros((k, n), p.dtype)) if m >= n else
                (jnp.zeros((n, k), p.dtype), jnp.zeros((m, k), p.dtype)))

    def init(params):
        if not tree_flatten(params)[0]:
            return GaLoreState(jnp.zeros([], jnp.int32), base.init(params), params)
        projectors, proxies = split(params, tree_map(shapes, params, dim_nums(params),
                                                     is_leaf=_is_dim_nums_leaf))
        return GaLoreState(jnp.zeros([], jnp.int32), base.init(proxies), projectors)

    def update(updates, state, params=None):
        refresh = state.count % update_proj_gap == 0

        def project(g, projector, dims):
            if dims is None:
                return g, projector
            g2 = _as_matrix(g, dims)[0](g)
            m, n = g2.shape
            k = min(rank, m, n)
            # the SVD in float32, as optax does, whatever the gradient's precision

            def fresh():
                u, _, vh = jnp.linalg.svd(g2.astype(jnp.float32), full_matrices=False)
                return (u[:, :k] if m >= n else vh[:k, :].T).astype(g.dtype)
            projector = cond(refresh, fresh, lambda: projector)
            return (projector.T @ g2 if m >= n else g2 @ projector), projector

        def back(low, projector, g, dims):
            if dims is None:
                return low
            m, n = _as_matrix(g, dims)[0](g).shape
            full = projector @ low if m >= n else low @ projector.T
            return (scale * _as_matrix(g, dims)[1](full)).astype(g.dtype)

        dims = dim_nums(updates)
        low, projectors = split(updates, tree_map(project, updates, state.projector, dims,
                                                  is_leaf=_is_dim_nums_leaf))
        low, base_state = base.update(low, state.base_optimizer_state, None)
        out = tree_map(back, low, projectors, updates, dims, is_leaf=_is_dim_nums_leaf)
        return out, GaLoreState(safe_increment(state.count), base_state, projectors)
    return GradientTransformation(init, update)


def galore(learning_rate, rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0,
           base_optimizer=None, weight_decay=0.0, mask=None,
           weight_dimension_numbers=None) -> GradientTransformation:
    """GaLore with decoupled weight decay and a learning rate (a float or a schedule).

    >>> opt = galore(1e-2, rank=2)
    >>> state = opt.init({"w": jnp.ones((4, 3))})
    """
    return chain(scale_by_galore(rank, update_proj_gap, scale, base_optimizer,
                                 weight_dimension_numbers),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))

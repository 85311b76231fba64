"""MADGRAD (Defazio and Jelassi, 2021): dual averaging with a cube-root adaptive scale and
momentum by averaging iterates."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.pytree import tree_map
from .._base import GradientTransformation, chain
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from ..tree_utils import tree_zeros_like


class MadgradState(NamedTuple):
    """``scale_by_madgrad``'s state: the step, the weighted sums of squared gradients and of
    gradients, and the initial parameters.

    >>> MadgradState._fields
    ('count', 'grad_sum_sq', 's', 'x0')
    """
    count: Any
    grad_sum_sq: Any
    s: Any
    x0: Any


def scale_by_madgrad(learning_rate, momentum: float = 0.9,
                     eps: float = 1e-6) -> GradientTransformation:
    """MADGRAD's step (it carries its own learning rate): ``z = x0 - s / (cbrt(G) + eps)``,
    then the parameters move a ``1 - momentum`` share of the way to ``z``.

    >>> tx = scale_by_madgrad(0.1, momentum=0.0)
    >>> params = jnp.array([1.0])
    >>> tx.update(jnp.array([1.0]), tx.init(params), params)[0]
    Array([-0.21544445], dtype=float32)
    """
    def init(params):
        return MadgradState(jnp.zeros([], jnp.int32), tree_zeros_like(params),
                            tree_zeros_like(params), tree_map(lambda x: x, params))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_madgrad needs params: call update(grads, state, params)")
        lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
        # eps in the rate too, as the reference PyTorch implementation has it
        lamb = (lr + eps) * jnp.sqrt(state.count + 1)
        grad_sum_sq = tree_map(lambda acc, g: acc + (lamb * g ** 2).astype(g.dtype),
                               state.grad_sum_sq, updates)
        s = tree_map(lambda acc, g: acc + (lamb * g).astype(g.dtype), state.s, updates)
        z = tree_map(lambda x0, s, acc: x0 - s / (jnp.cbrt(acc) + eps), state.x0, s,
                     grad_sum_sq)
        out = tree_map(lambda z, x: (1 - momentum) * z + momentum * x - x, z, params)
        return out, MadgradState(safe_increment(state.count), grad_sum_sq, s, state.x0)
    return GradientTransformation(init, update)


def madgrad(learning_rate, momentum: float = 0.9, weight_decay: float = 0.0,
            eps: float = 1e-6) -> GradientTransformation:
    """MADGRAD with weight decay added to the gradients.

    >>> opt = madgrad(1e-2)
    >>> state = opt.init({"w": jnp.zeros(2)})
    """
    return chain(add_decayed_weights(weight_decay),
                 scale_by_madgrad(learning_rate, momentum, eps))

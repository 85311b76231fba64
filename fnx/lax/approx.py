"""jax.lax's approximate top-k: fnx returns the exact top k, which meets any recall target.

>>> lax.approx_max_k(jnp.array([1.0, 4.0, 2.0]), 2)
(Array([4., 2.], dtype=float32), Array([1, 2], dtype=int32))
"""
from __future__ import annotations

from ..core import lax
from ..core.core import get_aval


def _top_k_along(operand, k, axis, largest):
    nd = get_aval(operand).ndim
    axis = axis % nd
    x = lax.moveaxis(operand, axis, nd - 1)
    if largest:
        values, indices = lax.top_k(x, k)
    else:
        values, indices = lax.top_k(lax.neg(x), k)
        values = lax.neg(values)
    return lax.moveaxis(values, nd - 1, axis), lax.moveaxis(indices, nd - 1, axis)


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """``(values, indices)`` of the ``k`` largest entries along ``reduction_dimension``,
    largest first (exact in fnx).

    >>> lax.approx_max_k(jnp.array([[1, 5], [3, 2]]), 1, reduction_dimension=0)
    (Array([[3, 5]], dtype=int32), Array([[1, 0]], dtype=int32))
    """
    return _top_k_along(operand, k, reduction_dimension, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """``(values, indices)`` of the ``k`` smallest entries along ``reduction_dimension``,
    smallest first (exact in fnx; floats or signed integers).

    >>> lax.approx_min_k(jnp.array([3.0, 1.0, 2.0]), 2)
    (Array([1., 2.], dtype=float32), Array([1, 2], dtype=int32))
    """
    return _top_k_along(operand, k, reduction_dimension, False)

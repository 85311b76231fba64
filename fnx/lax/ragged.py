"""jax.lax's grouped products: ``ragged_dot`` multiplies consecutive row groups of ``lhs`` by
their own ``rhs`` matrix (mixture-of-experts layers). Composed of one batched ``dot_general``
and a group mask, so grad, vmap and jit follow.

>>> lhs, rhs = jnp.ones((3, 2)), jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
>>> lax.ragged_dot(lhs, rhs, jnp.array([1, 2]))
Array([[1., 1.],
       [2., 2.],
       [2., 2.]], dtype=float32)
"""
from __future__ import annotations

from ..core import lax
from ..core.core import get_aval
from ..core.errors import ShapeError


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """``out[i] = lhs[i] @ rhs[g]`` for row ``i`` in group ``g``: ``lhs`` is (m, k), ``rhs``
    (g, k, n), ``group_sizes`` (g,) counts consecutive rows; rows past the groups give zeros.

    >>> lax.ragged_dot(jnp.ones((2, 1)), jnp.array([[[1.0]], [[5.0]]]), jnp.array([0, 2]))
    Array([[5.],
           [5.]], dtype=float32)
    """
    if group_offset is not None:
        raise NotImplementedError("ragged_dot: group_offset is not supported by fnx")
    (m, k), (g, k2, n) = get_aval(lhs).shape, get_aval(rhs).shape
    if k != k2 or tuple(get_aval(group_sizes).shape) != (g,):
        raise ShapeError(f"ragged_dot needs lhs (m, k), rhs (g, k, n) and group_sizes (g,), "
                         f"got {get_aval(lhs).shape}, {get_aval(rhs).shape} and "
                         f"{get_aval(group_sizes).shape}")
    # every group's product (g, m, n), then each row keeps its own group's
    each = lax.dot_general(lhs, rhs, (((1,), (1,)), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)     # (m, g, n)
    dtype = get_aval(group_sizes).dtype
    ends = lax.cumsum(group_sizes, axis=0)
    starts = ends - group_sizes
    row = lax.broadcast_in_dim(lax.iota(dtype, m), (m, g), (0,))
    mine = (row >= lax.broadcast_in_dim(starts, (m, g), (1,))) & (
        row < lax.broadcast_in_dim(ends, (m, g), (1,)))
    mine = lax.broadcast_in_dim(mine, (m, g, n), (0, 1))
    zeros = lax.full((m, g, n), 0, get_aval(each).dtype)
    return lax.reduce_sum(lax.select(mine, each, zeros), (1,))


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """``ragged_dot`` with explicit dimension numbers; fnx supports the ragged-rows form
    (lhs (m, k) ragged in m, rhs (g, k, n) grouped in axis 0), which ``ragged_dot`` is.

    >>> dn = lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), [0], [0])
    >>> lax.ragged_dot_general(jnp.ones((2, 1)), jnp.ones((1, 1, 3)), jnp.array([2]), dn).shape
    (2, 3)
    """
    dn = ragged_dot_dimension_numbers
    if (tuple(map(tuple, dn.dot_dimension_numbers[0])) != ((1,), (1,))
            or tuple(map(tuple, dn.dot_dimension_numbers[1])) != ((), ())
            or list(dn.lhs_ragged_dimensions) != [0] or list(dn.rhs_group_dimensions) != [0]):
        raise NotImplementedError(f"ragged_dot_general supports only the ragged_dot form "
                                  f"in fnx, got {dn}")
    return ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset)

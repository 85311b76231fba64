"""Batching rules for user-defined primitives, as ``jax.interpreters.batching``:
``primitive_batchers[p] = rule(args, dims, **params) -> (out, out_dim)``, with ``not_mapped``
(None) for an unbatched operand, and the helpers ``defvectorized``, ``defbroadcasting``.

>>> from fnx.extend.core import Primitive
>>> twice_p = Primitive("twice")
>>> _ = twice_p.def_impl(lambda x: 2 * x)
>>> _ = twice_p.def_abstract_eval(lambda x: x)
>>> defvectorized(twice_p)
>>> fnx.vmap(twice_p.bind)(jnp.arange(3.0))
Array([0., 2., 4.], dtype=float32)
"""
from __future__ import annotations

from ..core.batching import BatchTrace, BatchTracer, not_mapped  # noqa: F401
from ..core.core import get_aval
from ..core.lax import reshape
from ..core.lax import base as _base
from ..core.lax.base import broadcast_batch, moveaxis
from ._tables import RuleTable

primitive_batchers = RuleTable("batch")


def bdim_at_front(x, bdim, size: int):
    """``x`` with its batch axis ``bdim`` first (broadcast to ``size`` when ``not_mapped``).

    >>> bdim_at_front(jnp.ones((2, 3)), 1, 3).shape, bdim_at_front(jnp.ones(2), None, 4).shape
    ((3, 2), (4, 2))
    """
    return _base.bdim_at_front(x, bdim, size)


def broadcast(x, sz: int, axis: int):
    """``x`` with a new axis of size ``sz`` at ``axis``.

    >>> broadcast(jnp.ones(2), 3, 0).shape
    (3, 2)
    """
    return broadcast_batch(x, sz, axis)


def defvectorized(prim):
    """``prim`` acts elementwise on one operand: its batched form is itself.

    >>> from fnx.extend.core import Primitive
    >>> sq_p = Primitive("my_square")
    >>> _ = sq_p.def_impl(lambda x: x * x)
    >>> _ = sq_p.def_abstract_eval(lambda x: x)
    >>> defvectorized(sq_p)
    >>> fnx.vmap(sq_p.bind)(jnp.arange(3.0))
    Array([0., 1., 4.], dtype=float32)
    """
    def rule(args, dims, **params):
        return prim.bind(*args, **params), dims[0]
    prim.batch = rule


def defbroadcasting(prim):
    """``prim`` is elementwise with NumPy broadcasting over its operands: the batch axes are
    moved to the front, unbatched operands keep their rank.

    >>> from fnx.extend.core import Primitive
    >>> add_p = Primitive("my_add")
    >>> _ = add_p.def_impl(lambda x, y: x + y)
    >>> _ = add_p.def_abstract_eval(lambda x, y: x)
    >>> defbroadcasting(add_p)
    >>> fnx.vmap(add_p.bind, (0, None))(jnp.ones((2, 3)), jnp.arange(3.0))
    Array([[1., 2., 3.],
           [1., 2., 3.]], dtype=float32)
    """
    def rule(args, dims, **params):
        ndim = max(len(get_aval(x).shape) - (d is not not_mapped) for x, d in zip(args, dims))
        moved = []
        for x, d in zip(args, dims):
            if d is not_mapped:
                moved.append(x)
                continue
            x = moveaxis(x, d, 0) if d != 0 else x
            shape = get_aval(x).shape
            # line the batch axis up with the others' leading axis
            rank = len(shape) - 1
            if rank < ndim:
                x = reshape(x, (shape[0],) + (1,) * (ndim - rank) + shape[1:])
            moved.append(x)
        return prim.bind(*moved, **params), 0
    prim.batch = rule


__all__ = ["primitive_batchers", "not_mapped", "bdim_at_front", "broadcast", "defvectorized",
           "defbroadcasting"]

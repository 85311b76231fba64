"""jax.lax collectives composed from fnx's collective primitives.

>>> fnx.vmap(lambda x: lax.pbroadcast(x, 'i', 2), axis_name='i')(jnp.arange(3.0))
Array([2., 2., 2.], dtype=float32)
"""
from __future__ import annotations

from ..core import lax
from ..core.collectives import all_to_all, axis_index, psum
from ..core.core import get_aval
from ..core.pytree import tree_map


def pbroadcast(x, axis_name, source):
    """Every member of ``axis_name`` gets the ``x`` of member ``source`` (pytrees leafwise).

    >>> fnx.vmap(lambda x: lax.pbroadcast(x, 'i', 0), axis_name='i')(jnp.array([5, 6]))
    Array([5, 5], dtype=int32)
    """
    def one(v):
        aval = get_aval(v)
        me = axis_index(axis_name)
        mine = lax.eq(me, lax.full((), int(source), get_aval(me).dtype))
        mine = lax.broadcast_in_dim(mine, aval.shape, ())
        return psum(lax.select(mine, v, lax.full(aval.shape, 0, aval.dtype)), axis_name)
    return tree_map(one, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named axis with positional ``axis`` (whose size must be the named axis's), as
    an all-to-all.

    >>> fnx.vmap(lambda x: lax.pswapaxes(x, 'i', 0), axis_name='i')(jnp.arange(4).reshape(2, 2))
    Array([[0, 2],
           [1, 3]], dtype=int32)
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pcast(x, axis_name, *, to: str):
    """Change whether ``x`` is typed as varying over ``axis_name`` (JAX's shard_map type
    system). fnx does not track varying axes in types, so the value is unchanged.

    >>> lax.pcast(jnp.ones(2), 'i', to='varying')
    Array([1., 1.], dtype=float32)
    """
    if to not in ("varying", "invariant", "reduced", "unreduced"):
        raise ValueError(f"pcast: to must be 'varying' or 'invariant', got {to!r}")
    return x

"""``sort`` of one or several operands along one dimension."""
from __future__ import annotations

from .. import dtypes
from ..ad_util import Zero
from ..core import get_aval
from ..errors import ShapeError
from .base import _shp, bdim_at_front, not_mapped, primitive
from .shapes import broadcasted_iota
from .indexing import take_along_axis


sort_p = primitive("sort", multiple_results=True)


def _sort_aval(*operands, dimension, num_keys):
    _check_shapes_only("sort", operands)
    return list(operands)


def _check_shapes_only(name, avals):
    for a in avals[1:]:
        if a.shape != avals[0].shape:
            raise ShapeError(f"{name} operands have shapes {_shp(avals[0].shape)} and "
                             f"{_shp(a.shape)}")


def _sort_jvp(primals, tangents, *, dimension, num_keys):
    shape = get_aval(primals[0]).shape
    idx = broadcasted_iota(dtypes.int32, shape, dimension)
    outs = sort_p.bind(*primals, idx, dimension=dimension, num_keys=num_keys)
    perm = outs[-1]
    tans = [Zero(get_aval(p)) if isinstance(t, Zero) else take_along_axis(t, perm, dimension)
            for p, t in zip(primals, tangents)]
    return outs[:-1], tans


def _sort_batch(vals, dims, *, dimension, num_keys):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    xs = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    return sort_p.bind(*xs, dimension=dimension + 1, num_keys=num_keys), [0] * len(xs)


sort_p.abstract_eval = _sort_aval
sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch


def sort(operands, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along ``dimension`` (stably: the sort is always stable). Several operands sort
    together by the first ``num_keys`` of them, lexicographically, and come back as a tuple.

    >>> keys, vals = lax.sort((jnp.array([3, 1, 2]), jnp.array([0., 1., 2.])), num_keys=1)
    """
    single = not isinstance(operands, (list, tuple))
    ops = [operands] if single else list(operands)
    dimension = dimension % get_aval(ops[0]).ndim
    outs = sort_p.bind(*ops, dimension=dimension, num_keys=num_keys)
    return outs[0] if single else tuple(outs)

"""Collectives over named axes: psum, pmax, pmin, all_gather, psum_scatter, ppermute,
all_to_all, axis_index, each a primitive with JAX's rules.

A function run under ``vmap(..., axis_name='i')``, ``pmap(..., axis_name='i')`` or ``shard_map``
sees one slice (one "device") of a mapped axis; a collective combines the values of all slices
along the axes it names. Under vmap the batching rule computes that across the batch axis; on
devices (fnx.core.spmd) each device's program runs the primitive's backend impl, which exchanges
values with the other devices. The two agree, so ``vmap`` with an axis name and ``pmap`` are the
same program.

Named axes in scope are kept in an *axis environment* while functions are traced: a collective
over a name nobody bound raises ``AxisNameError`` at the user's line.

>>> fnx.vmap(lambda x: x / fnx.lax.psum(x, 'i'), axis_name='i')(jnp.arange(1.0, 4.0))
Array([0.16666667, 0.33333334, 0.5       ], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from . import dtypes, lax
from .ad import Zero, deflinear, instantiate, zero_jvp
from .axis_env import (DeviceContext, axis_env_key, axis_size, current_device,  # noqa: F401
                       device_context, extend_axis_env, names_of)
from .batching import bdim_at_front, not_mapped
from .core import ShapedArray, get_aval
from .errors import MeshError, ShapeError
from .pytree import tree_map

# ---------------------------------------------------------------------------------------------
# Primitives


def _collective(name):
    p = lax.primitive(name)
    p.has_effect = True          # never folded, merged or dropped: every device must run it
    return p


psum_p = _collective("psum")
pmax_p = _collective("pmax")
pmin_p = _collective("pmin")
all_gather_p = _collective("all_gather")
psum_scatter_p = _collective("reduce_scatter")
ppermute_p = _collective("ppermute")
all_to_all_p = _collective("all_to_all")
axis_index_p = _collective("axis_index")

ALL = (psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p, ppermute_p, all_to_all_p,
       axis_index_p)

_REDUCERS = {psum_p: lax.reduce_sum, pmax_p: lax.reduce_max, pmin_p: lax.reduce_min}

for _p in (psum_p, pmax_p, pmin_p, ppermute_p):
    _p.abstract_eval = lambda x, **params: x


def _gather_aval(x, *, axes, axis_size, axis, tiled):
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return x.update(shape=tuple(shape))


def _scatter_aval(x, *, axes, axis_size, axis, tiled):
    shape = list(x.shape)
    n = shape[axis]
    if (tiled and n % axis_size) or (not tiled and n != axis_size):
        raise ShapeError(f"psum_scatter over {axes[0]!r} (size {axis_size}) needs dimension "
                         f"{axis} of {x.str_short()} to be "
                         f"{'a multiple of' if tiled else 'equal to'} {axis_size}")
    if tiled:
        shape[axis] = n // axis_size
    else:
        del shape[axis]
    return x.update(shape=tuple(shape))


def _all_to_all_aval(x, *, axes, axis_size, split_axis, concat_axis):
    shape = list(x.shape)
    if shape[split_axis] % axis_size:
        raise ShapeError(f"all_to_all over {axes[0]!r} (size {axis_size}) splits dimension "
                         f"{split_axis} of {x.str_short()}, which it does not divide")
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return x.update(shape=tuple(shape))


all_gather_p.abstract_eval = _gather_aval
psum_scatter_p.abstract_eval = _scatter_aval
all_to_all_p.abstract_eval = _all_to_all_aval
axis_index_p.abstract_eval = lambda *, axes: ShapedArray((), np.int32)


# -- differentiation: the linear ones transpose to their duals, as in JAX

def _transposed(fn):
    """A transpose rule from ``fn(ct, **params) -> ct_in`` (the operand is the linear one)."""
    def rule(ct, x, **params):
        if isinstance(ct, Zero):
            return [Zero(x.aval)]
        return [fn(ct, **params)]
    return rule


deflinear(psum_p, _transposed(lambda ct, axes: psum_p.bind(ct, axes=axes)))
deflinear(all_gather_p, _transposed(lambda ct, **p: psum_scatter_p.bind(ct, **p)))
deflinear(psum_scatter_p, _transposed(lambda ct, **p: all_gather_p.bind(ct, **p)))
deflinear(ppermute_p, _transposed(lambda ct, axes, perm: ppermute_p.bind(
    ct, axes=axes, perm=tuple((d, s) for s, d in perm))))
deflinear(all_to_all_p, _transposed(lambda ct, axes, axis_size, split_axis, concat_axis:
                                    all_to_all_p.bind(ct, axes=axes, axis_size=axis_size,
                                                      split_axis=concat_axis,
                                                      concat_axis=split_axis)))


def _extremum_jvp(p):
    """The tangent of the extreme value, averaged over the devices that hold it (ties)."""
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = p.bind(x, axes=axes)
        if isinstance(t, Zero):
            return out, t
        hit = lax.convert_element_type(lax.eq(x, out), get_aval(t).dtype)
        count = psum_p.bind(hit, axes=axes)
        return out, lax.div(psum_p.bind(lax.mul(instantiate(t), hit), axes=axes), count)
    return rule


pmax_p.jvp = _extremum_jvp(pmax_p)
pmin_p.jvp = _extremum_jvp(pmin_p)


zero_jvp(axis_index_p)


# -- batching: a vmap whose axis a collective names computes it across its batch axis


def _scalar(v, dtype):
    return np.asarray(v, dtype)


def _batch_reduce(p):
    def rule(vals, dims, frame, *, axes):
        (x,), (d,) = vals, dims
        name, size = frame
        if name not in axes:
            return (p.bind(x, axes=axes), d)
        rest = tuple(a for a in axes if a != name)
        if d is not_mapped:
            y = lax.mul(x, _scalar(size, get_aval(x).dtype)) if p is psum_p else x
        else:
            y = _REDUCERS[p](x, (d,))
        return (p.bind(y, axes=rest) if rest else y), not_mapped
    return rule


for _p in _REDUCERS:
    _p.batch_named = _batch_reduce(_p)


def _over_other_axes(prim, x, d, *, axes, axis_size, axis, tiled):
    """``prim`` (a gather or scatter along ``axis``) over axes another frame binds: the vmapped
    dimension, if any, moves to the front and rides along."""
    if d is not_mapped:
        return prim.bind(x, axes=axes, axis_size=axis_size, axis=axis, tiled=tiled), not_mapped
    x = bdim_at_front(x, d, None)
    return prim.bind(x, axes=axes, axis_size=axis_size, axis=axis + 1, tiled=tiled), 0


def _all_gather_batch(vals, dims, frame, *, axes, axis_size, axis, tiled):
    (x,), (d,) = vals, dims
    name, size = frame
    if axes != (name,):
        return _over_other_axes(all_gather_p, x, d, axes=axes, axis_size=axis_size, axis=axis,
                                tiled=tiled)
    x = bdim_at_front(x, d, size)          # every slice's value, stacked: the gathered array
    out = lax.moveaxis(x, 0, axis)
    if tiled:
        shape = list(get_aval(x).shape[1:])
        shape[axis] *= size
        out = lax.reshape(out, tuple(shape))
    return out, not_mapped


def _psum_scatter_batch(vals, dims, frame, *, axes, axis_size, axis, tiled):
    (x,), (d,) = vals, dims
    name, size = frame
    if axes != (name,):
        return _over_other_axes(psum_scatter_p, x, d, axes=axes, axis_size=axis_size,
                                axis=axis, tiled=tiled)
    total = _batch_reduce(psum_p)([x], [d], frame, axes=axes)[0]
    _scatter_aval(get_aval(total), axes=axes, axis_size=size, axis=axis, tiled=tiled)
    if tiled:
        shape = list(get_aval(total).shape)
        shape[axis:axis + 1] = [size, shape[axis] // size]
        total = lax.reshape(total, tuple(shape))
    return lax.moveaxis(total, axis, 0), 0


def _ppermute_batch(vals, dims, frame, *, axes, perm):
    (x,), (d,) = vals, dims
    name, size = frame
    if axes != (name,):
        return ppermute_p.bind(x, axes=axes, perm=perm), d
    x = bdim_at_front(x, d, size)
    src = np.zeros(size, np.int32)
    got = np.zeros(size, bool)
    for s, t in perm:
        src[t], got[t] = s, True
    moved = lax.take(x, src, 0)
    shape = get_aval(moved).shape
    mask = lax.broadcast_in_dim(got, shape, (0,))
    return lax.select(mask, moved, lax.full(shape, 0, get_aval(x).dtype)), 0


def _all_to_all_batch(vals, dims, frame, *, axes, axis_size, split_axis, concat_axis):
    (x,), (d,) = vals, dims
    name, size = frame
    if axes != (name,):
        if d is not_mapped:
            return all_to_all_p.bind(x, axes=axes, axis_size=axis_size, split_axis=split_axis,
                                     concat_axis=concat_axis), not_mapped
        x = bdim_at_front(x, d, None)
        return all_to_all_p.bind(x, axes=axes, axis_size=axis_size, split_axis=split_axis + 1,
                                 concat_axis=concat_axis + 1), 0
    x = bdim_at_front(x, d, size)               # (source j, ...)
    shape = list(get_aval(x).shape)
    s, c = split_axis + 1, concat_axis + 1
    chunks = shape[:s] + [size, shape[s] // size] + shape[s + 1:]
    y = lax.reshape(x, tuple(chunks))           # (j, ..., k, chunk, ...)
    k_at = s
    y = lax.moveaxis(y, k_at, 0)                # (k, j, ...) with the chunk where s was
    y = lax.moveaxis(y, 1, c)                   # j right before the concatenated axis
    out_shape = [size] + shape[1:]
    out_shape[s] //= size
    out_shape[c] *= size
    return lax.reshape(y, tuple(out_shape)), 0


def _axis_index_batch(vals, dims, frame, *, axes):
    name, size = frame
    if axes != (name,):
        return axis_index_p.bind(axes=axes), not_mapped
    return lax.iota(np.int32, size), 0


all_gather_p.batch_named = _all_gather_batch
psum_scatter_p.batch_named = _psum_scatter_batch
ppermute_p.batch_named = _ppermute_batch
all_to_all_p.batch_named = _all_to_all_batch
axis_index_p.batch_named = _axis_index_batch


# ---------------------------------------------------------------------------------------------
# The functions users call (fnx.lax.psum, ...)


def _one_name(axis_name, what):
    names = names_of(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"{what} over several axes {names}: name one axis")
    axis_size(names)      # raises on an unbound name
    return names


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` over the named axis (or tuple of axes), for every leaf of pytree ``x``.

    >>> fnx.vmap(lambda x: fnx.lax.psum(x, 'i'), axis_name='i')(jnp.arange(3.0))
    Array([3., 3., 3.], dtype=float32)
    """
    _no_groups(axis_index_groups)
    names = names_of(axis_name)
    axis_size(names)
    return tree_map(lambda v: psum_p.bind(v, axes=names), x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the named axis (or axes).

    >>> fnx.vmap(lambda x: fnx.lax.pmean(x, 'i'), axis_name='i')(jnp.arange(3.0))
    Array([1., 1., 1.], dtype=float32)
    """
    _no_groups(axis_index_groups)
    n = axis_size(axis_name)

    def mean(v):
        total = psum(v, axis_name)
        dtype = dtypes.to_inexact(get_aval(total).dtype)     # integers average to floats
        total = lax.convert_element_type(total, dtype, get_aval(total).weak_type)
        return lax.div(total, _scalar(n, dtype))
    return tree_map(mean, x)


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of ``x`` over the named axis (or axes).

    >>> fnx.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(jnp.array([1.0, 3.0, 2.0]))
    Array([3., 3., 3.], dtype=float32)
    """
    _no_groups(axis_index_groups)
    names = names_of(axis_name)
    axis_size(names)
    return tree_map(lambda v: pmax_p.bind(v, axes=names), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of ``x`` over the named axis (or axes).

    >>> fnx.vmap(lambda x: lax.pmin(x, "i"), axis_name="i")(jnp.array([1.0, 3.0, 2.0]))
    Array([1., 1., 1.], dtype=float32)
    """
    _no_groups(axis_index_groups)
    names = names_of(axis_name)
    axis_size(names)
    return tree_map(lambda v: pmin_p.bind(v, axes=names), x)


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
    """Every device's ``x``, stacked along a new axis ``axis`` (concatenated along ``axis``
    when ``tiled``).

    >>> fnx.vmap(lambda x: fnx.lax.all_gather(x, 'i'), axis_name='i')(jnp.arange(2.0))
    Array([[0., 1.],
           [0., 1.]], dtype=float32)
    """
    _no_groups(axis_index_groups)
    names = _one_name(axis_name, "all_gather")
    n = axis_size(names)

    def one(v):
        nd = get_aval(v).ndim + (0 if tiled else 1)
        if not -nd <= axis < nd or (tiled and nd == 0):
            raise ShapeError(f"all_gather axis={axis} is out of range for an operand of shape "
                             f"{get_aval(v).shape}")
        return all_gather_p.bind(v, axes=names, axis_size=n, axis=axis % nd, tiled=bool(tiled))
    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
    """The sum over the named axis, of which each device keeps its own block along
    ``scatter_dimension`` (a slice of size 1 dropped, or a tile when ``tiled``).

    >>> fnx.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(jnp.ones((2, 2)))
    Array([2., 2.], dtype=float32)
    """
    _no_groups(axis_index_groups)
    names = _one_name(axis_name, "psum_scatter")
    n = axis_size(names)

    def one(v):
        nd = get_aval(v).ndim
        return psum_scatter_p.bind(v, axes=names, axis_size=n, axis=scatter_dimension % nd,
                                   tiled=bool(tiled))
    return tree_map(one, x)


def ppermute(x, axis_name, perm):
    """Send ``x`` from device ``src`` to device ``dst`` for each pair ``(src, dst)`` of
    ``perm``; a device no pair sends to gets zeros.

    >>> shift = lambda x: fnx.lax.ppermute(x, 'i', [(0, 1), (1, 2), (2, 0)])
    >>> fnx.vmap(shift, axis_name='i')(jnp.arange(3.0))
    Array([2., 0., 1.], dtype=float32)
    """
    names = _one_name(axis_name, "ppermute")
    n = axis_size(names)
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) < len(srcs) or len(set(dsts)) < len(dsts) \
            or not all(0 <= i < n for i in srcs + dsts):
        raise MeshError(f"ppermute perm {list(perm)} must pair distinct sources with distinct "
                        f"destinations in range({n}) (the size of axis {names[0]!r})")
    return tree_map(lambda v: ppermute_p.bind(v, axes=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
    """Device ``i`` gets the ``x`` of device ``perm[i]``.

    >>> shuffle = lambda x: lax.pshuffle(x, "i", [1, 2, 0])
    >>> fnx.vmap(shuffle, axis_name="i")(jnp.array([1.0, 2.0, 3.0]))
    Array([2., 3., 1.], dtype=float32)
    """
    return ppermute(x, axis_name, [(s, d) for d, s in enumerate(perm)])


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Split ``split_axis`` into one block per device, send block ``k`` to device ``k`` and
    join the blocks received along ``concat_axis``. Without ``tiled``, ``split_axis`` must have
    the axis's size and is removed, and the received values form a new axis at
    ``concat_axis``, as in JAX.

    >>> x = jnp.arange(4.0).reshape(2, 2)   # row i lives on device i of axis "i"
    >>> fnx.vmap(lambda r: lax.all_to_all(r, "i", 0, 0), axis_name="i")(x)
    Array([[0., 2.],
           [1., 3.]], dtype=float32)
    """
    _no_groups(axis_index_groups)
    names = _one_name(axis_name, "all_to_all")
    n = axis_size(names)

    def one(v):
        nd = get_aval(v).ndim
        s = split_axis % nd
        if tiled:
            return all_to_all_p.bind(v, axes=names, axis_size=n, split_axis=s,
                                     concat_axis=concat_axis % nd)
        if get_aval(v).shape[s] != n:
            raise ShapeError(f"all_to_all over {names[0]!r} (size {n}) without tiled needs "
                             f"split_axis {s} of shape {get_aval(v).shape} to have size {n}")
        y = lax.expand_dims(lax.moveaxis(v, s, 0), (0,))      # (1, n, rest)
        y = all_to_all_p.bind(y, axes=names, axis_size=n, split_axis=1, concat_axis=0)
        y = lax.reshape(y, (n,) + get_aval(y).shape[2:])
        return lax.moveaxis(y, 0, concat_axis % nd)
    return tree_map(one, x)


def axis_index(axis_name):
    """This device's (or vmap slice's) index along the named axis; for a tuple of names, the
    row-major index over them.

    >>> fnx.vmap(lambda x: fnx.lax.axis_index('i'), axis_name='i')(jnp.zeros(3))
    Array([0, 1, 2], dtype=int32)
    """
    names = names_of(axis_name)
    axis_size(names)
    index = None
    for name in names:
        i = axis_index_p.bind(axes=(name,))
        index = i if index is None else lax.add(lax.mul(index, _scalar(axis_size(name),
                                                                         np.int32)), i)
    return index


def _no_groups(groups):
    if groups is not None:
        raise NotImplementedError("axis_index_groups is not supported (JAX deprecates it); "
                                  "use a mesh axis of that size instead")


__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "pshuffle", "all_to_all", "axis_index", "axis_size", "extend_axis_env",
           "DeviceContext", "device_context", "current_device"]

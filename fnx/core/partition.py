"""jit with shardings on every device: a global program rewritten as one device's program.

Given the shardings of its arguments over a mesh, each value of the traced global program gets a
layout (per dimension: the mesh axis that splits it, or None) and every equation is rewritten
for one device's blocks, adding the collectives the layouts need: a product or a sum over a
split dimension is computed on the local block and psum'd, elementwise operations and products
keep the layout of their operands, a broadcast of a replicated value is built at the local block
shape. Any other operation gathers its operands whole first, so every program partitions; data
parallelism (batch split, parameters replicated) and parameters split over a mesh axis stay
split through products, elementwise chains and reductions.

The result runs through shard_map (fnx.core.shard_map), whose results are then laid out as
``out_shardings`` ask.
"""
from __future__ import annotations

import numpy as np

from . import collectives as C, lax
from .convolution import conv_general_dilated_p
from .core import get_aval
from .jaxpr import Literal
from .passes import ELEMENTWISE
from .sharding import NamedSharding, PartitionSpec

_ELEMENTWISE = ELEMENTWISE - {lax.iota_p}


class Unsupported(Exception):
    """A layout the rewriting does not handle: the caller computes the program globally."""


def layout_of(sharding: NamedSharding, ndim: int) -> tuple:
    """Per dimension, the one mesh axis that splits it, or None."""
    out = []
    for d in range(ndim):
        names = sharding.spec.names(d)
        if len(names) > 1:
            raise Unsupported("a dimension split over several mesh axes")
        out.append(names[0] if names else None)
    return tuple(out)


def spec_of(layout) -> PartitionSpec:
    return PartitionSpec(*layout)


class _Value:
    """One value of the global program on this device: its local block, its layout and, for a
    replicated broadcast, how to build any block of it (``recipe``)."""
    __slots__ = ("block", "layout", "recipe")

    def __init__(self, block, layout, recipe=None):
        self.block, self.layout, self.recipe = block, layout, recipe


def device_program(jaxpr, consts, in_layouts, out_layouts, mesh):
    """``fn(*blocks) -> blocks``: ``jaxpr`` (global) as one device's program over its blocks,
    its results laid out by ``out_layouts``."""
    sizes = mesh.shape

    def fn(*blocks):
        consts_in = [_Value(c, (None,) * np.ndim(c)) for c in consts]
        outs = _run(jaxpr, consts_in, [_Value(b, lay) for b, lay in zip(blocks, in_layouts)],
                    sizes)
        return [_relayout(v, lay, sizes).block for v, lay in zip(outs, out_layouts)]
    return fn


def _run(jaxpr, consts, vals, sizes) -> list:
    """``jaxpr``'s results, as ``_Value``s, from its constants' and arguments'."""
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, vals))

    def read(v):
        if isinstance(v, Literal):
            return _Value(v.val, (None,) * np.ndim(v.val))
        return env[v]
    for eqn in jaxpr.eqns:
        env.update(zip(eqn.outvars, _rewrite(eqn, [read(v) for v in eqn.invars], sizes)))
    return [read(v) for v in jaxpr.outvars]


# ---------------------------------------------------------------------------------------------
# Moving a value between layouts


def _replicated(val: _Value, sizes) -> _Value:
    block = val.block
    for d, name in enumerate(val.layout):
        if name is not None:
            block = C.all_gather(block, name, axis=d, tiled=True)
    return _Value(block, (None,) * len(val.layout))


def _relayout(val: _Value, layout, sizes) -> _Value:
    """``val`` with ``layout``: split dimensions gathered, newly split ones cut locally."""
    if tuple(val.layout) == tuple(layout):
        return val
    if any(a is not None and a != b for a, b in zip(val.layout, layout)):
        val = _replicated(val, sizes)
    if val.recipe is not None and all(a is None for a in val.layout):
        return _Value(val.recipe(layout), tuple(layout))
    block = val.block
    for d, name in enumerate(layout):
        if name is not None and val.layout[d] is None:
            n = get_aval(block).shape[d] // sizes[name]
            start = lax.mul(C.axis_index(name), np.int32(n))
            starts = [0] * len(layout)
            starts[d] = start
            sz = list(get_aval(block).shape)
            sz[d] = n
            block = lax.dynamic_slice(block, starts, sz)
    return _Value(block, tuple(layout))


# ---------------------------------------------------------------------------------------------
# One equation


def _rewrite(eqn, vals, sizes) -> list:
    p, params = eqn.primitive, eqn.params
    if p.name == "custom_jvp_call":     # nothing differentiates a device program: its body
        return _run(params["call_jaxpr"], [], vals, sizes)
    if p in _ELEMENTWISE:
        return [_elementwise(eqn, vals, sizes)]
    if p is lax.broadcast_in_dim_p:
        return [_broadcast(eqn, vals[0], sizes)]
    if p is lax.dot_general_p:
        return [_dot(eqn, vals, sizes)]
    if p is conv_general_dilated_p:
        return _conv(eqn, vals, sizes)
    if p in (lax.reduce_sum_p, lax.reduce_max_p, lax.reduce_min_p):
        return [_reduce(eqn, vals[0])]
    if p is lax.transpose_p:
        lay = tuple(vals[0].layout[i] for i in params["permutation"])
        return [_Value(p.bind(vals[0].block, **params), lay)]
    if p is lax.reshape_p:
        return [_reshape(eqn, vals[0], sizes)]
    touched = _axes_touched(eqn)
    if touched is not None:
        return _along(eqn, vals, touched, sizes)
    return _whole(eqn, vals, sizes)


def _axes_touched(eqn):
    """The dimensions a data-movement or scan-like primitive works along (the others it maps
    over elementwise), or None for primitives without such a rule."""
    p, params = eqn.primitive, eqn.params
    shape = eqn.invars[0].aval.shape if eqn.invars else ()
    if p is lax.slice_p:
        return {d for d, (a, b, s) in enumerate(zip(params["start_indices"],
                                                     params["limit_indices"],
                                                     params["strides"] or (1,) * len(shape)))
                if (a, b, s) != (0, shape[d], 1)}
    if p is lax.pad_p:
        return {d for d, c in enumerate(params["padding_config"]) if tuple(c) != (0, 0, 0)}
    if p is lax.concatenate_p:
        return {params["dimension"]}
    if p is lax.rev_p:
        return set(params["dimensions"])
    if p is lax.cumsum_p:
        return {params["axis"]}
    if p in (lax.argmax_p, lax.argmin_p):
        return {params["axis"]}
    if p is lax.sort_p:
        return {params["dimension"]}
    return None


def _along(eqn, vals, touched, sizes):
    """Local when no operand is split along the dimensions the primitive works along."""
    ranked = [v for v in vals if len(v.layout) == len(eqn.invars[0].aval.shape)]
    target = next((v.layout for v in ranked if any(a is not None for a in v.layout)), None)
    if target is None or any(target[d] is not None for d in touched) or \
            any(any(a is not None and a != b for a, b in zip(v.layout, target))
                for v in ranked):
        return _whole(eqn, vals, sizes)
    blocks = [_relayout(v, target, sizes).block if v in ranked else v.block for v in vals]
    params = eqn.params
    if eqn.primitive is lax.slice_p:         # the dimensions it keeps whole: the local size
        local = get_aval(blocks[0]).shape
        params = dict(params, limit_indices=tuple(
            local[d] if d not in touched else b for d, b in enumerate(params["limit_indices"])))
    out = eqn.primitive.bind(*blocks, **params)
    outs = out if eqn.primitive.multiple_results else [out]
    layouts = []
    for o in eqn.outvars:
        if len(o.aval.shape) == len(target):
            layouts.append(target)
        else:                                     # argmax drops its axis
            layouts.append(tuple(a for d, a in enumerate(target) if d not in touched))
    return [_Value(o, lay) for o, lay in zip(outs, layouts)]


def _whole(eqn, vals, sizes):
    """Gather the operands and compute replicated."""
    blocks = [_replicated(v, sizes).block for v in vals]
    out = eqn.primitive.bind(*blocks, **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    return [_Value(o, (None,) * len(v.aval.shape)) for o, v in zip(outs, eqn.outvars)]


def _conv(eqn, vals, sizes):
    """A convolution split along the batch (data parallelism) stays split; one split alike
    along the input features of both operands (a kernel's gradient in a batch-split step, the
    batch being those features) is computed on the local blocks and psum'd. Other splits
    gather."""
    (lhs, rhs), params = vals, eqn.params
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    batch, features = lhs.layout[lhs_spec[0]], lhs.layout[lhs_spec[1]]
    elsewhere = [lhs.layout[d] for d in lhs_spec[2:]] + \
        [rhs.layout[d] for d in rhs_spec if d != rhs_spec[1]]
    if any(a is not None for a in elsewhere) or params["batch_group_count"] != 1 \
            or features != rhs.layout[rhs_spec[1]] or (batch is not None and batch == features) \
            or (features is not None and params["feature_group_count"] != 1):
        return _whole(eqn, vals, sizes)
    out = eqn.primitive.bind(lhs.block, rhs.block, **params)
    if features is not None:
        out = C.psum(out, (features,))
    layout = [None] * len(out_spec)
    layout[out_spec[0]] = batch
    return [_Value(out, tuple(layout))]


def _elementwise(eqn, vals, sizes):
    ranked = [v for v in vals if len(v.layout)]
    target = next((v.layout for v in ranked if any(a is not None for a in v.layout)), None)
    if target is None or any(any(a is not None and a != b for a, b in zip(v.layout, target))
                             for v in ranked):
        if target is not None:      # two different splits: compute replicated
            return _whole(eqn, vals, sizes)[0]
        out = eqn.primitive.bind(*[v.block for v in vals], **eqn.params)
        return _Value(out, (None,) * len(eqn.outvars[0].aval.shape))
    blocks = [_relayout(v, target, sizes).block if len(v.layout) else v.block
              for v in vals]
    return _Value(eqn.primitive.bind(*blocks, **eqn.params), target)


def _broadcast(eqn, val, sizes):
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    if any(a is not None for a in val.layout):
        lay = [None] * len(shape)
        local = list(shape)
        for i, d in enumerate(dims):
            lay[d] = val.layout[i]
            local[d] = get_aval(val.block).shape[i]
        for d, name in enumerate(lay):
            if name is not None and local[d] == 1 and shape[d] != 1:
                raise Unsupported("broadcasting a split dimension of size one")
        return _Value(lax.broadcast_in_dim(val.block, tuple(
            local[d] if lay[d] is not None else shape[d] for d in range(len(shape))), dims),
            tuple(lay))
    operand = val

    def recipe(layout):
        """The block of the broadcast under ``layout``, built at the block's shape."""
        local = [n // sizes[a] if a is not None else n for n, a in zip(shape, layout)]
        op_layout = [layout[d] if get_aval(operand.block).shape[i] == shape[d] != 1 else None
                     for i, d in enumerate(dims)]
        op = _relayout(operand, tuple(op_layout), sizes).block
        return lax.broadcast_in_dim(op, tuple(local), dims)
    out = lax.broadcast_in_dim(val.block, tuple(shape), dims)
    return _Value(out, (None,) * len(shape), recipe)


def _reduce(eqn, val):
    axes = eqn.params["axes"]
    p = eqn.primitive
    out = p.bind(val.block, **eqn.params)
    split = tuple(val.layout[a] for a in axes if val.layout[a] is not None)
    if split:
        out = {lax.reduce_sum_p: C.psum, lax.reduce_max_p: C.pmax,
               lax.reduce_min_p: C.pmin}[p](out, split)
    lay = tuple(a for i, a in enumerate(val.layout) if i not in axes)
    return _Value(out, lay)


def _split_alike(lhs, rhs, lhs_dims, rhs_dims, sizes, what):
    """``lhs`` and ``rhs`` with each pair of dimensions split over the same mesh axis: one split
    and one replicated become both split; split over different axes is Unsupported."""
    for i, j in zip(lhs_dims, rhs_dims):
        a, b = lhs.layout[i], rhs.layout[j]
        if a == b:
            continue
        if a is not None and b is None:
            rhs = _relayout(rhs, _with(rhs.layout, j, a), sizes)
        elif b is not None and a is None:
            lhs = _relayout(lhs, _with(lhs.layout, i, b), sizes)
        else:
            raise Unsupported(f"{what} dimensions split over different axes")
    return lhs, rhs


def _dot(eqn, vals, sizes):
    lhs, rhs = vals
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    # contracting dimensions: split alike on both sides (psum after), or replicated on both
    lhs, rhs = _split_alike(lhs, rhs, lc, rc, sizes, "contracting")
    split = [lhs.layout[i] for i in lc if lhs.layout[i] is not None]
    lhs, rhs = _split_alike(lhs, rhs, lb, rb, sizes, "batch")
    lfree = [i for i in range(len(lhs.layout)) if i not in lc and i not in lb]
    rfree = [j for j in range(len(rhs.layout)) if j not in rc and j not in rb]
    taken = set(split) | {lhs.layout[i] for i in [*lb, *lfree]}
    for j in rfree:         # an axis already splitting the result: gather rhs's dimension
        if rhs.layout[j] is not None and rhs.layout[j] in taken:
            rhs = _relayout(rhs, _with(rhs.layout, j, None), sizes)
    lay = [lhs.layout[i] for i in lb] + [lhs.layout[i] for i in lfree] + \
        [rhs.layout[j] for j in rfree]
    named = [a for a in lay if a is not None] + split
    if len(set(named)) != len(named):
        raise Unsupported("one mesh axis splits two dimensions of a product")
    out = eqn.primitive.bind(lhs.block, rhs.block, **eqn.params)
    if split:
        out = C.psum(out, tuple(split))
    return _Value(out, tuple(lay))


def _reshape(eqn, val, sizes):
    """Reshapes that keep every split dimension as a leading factor of its own output
    dimension (merging or splitting the dimensions after it) keep the split."""
    new = eqn.params["new_sizes"]
    old = get_aval(val.block).shape
    if all(a is None for a in val.layout):
        return _Value(eqn.primitive.bind(val.block, **eqn.params), (None,) * len(new))
    global_old = [n * sizes[a] if a is not None else n for n, a in zip(old, val.layout)]
    d = next(i for i, a in enumerate(val.layout) if a is not None)
    # a block of dimension d is one contiguous run of every leading row: it stays one if the
    # leading dimensions are kept and the new dimension d still divides into the blocks
    if sum(a is not None for a in val.layout) > 1 or d >= len(new) or \
            int(np.prod(global_old[:d])) != int(np.prod(new[:d])) or \
            new[d] % sizes[val.layout[d]]:
        return _whole(eqn, [val], sizes)[0]
    local = list(new)
    local[d] //= sizes[val.layout[d]]
    lay = [None] * len(new)
    lay[d] = val.layout[d]
    if int(np.prod(local)) != int(np.prod(old)):
        return _whole(eqn, [val], sizes)[0]
    return _Value(lax.reshape(val.block, tuple(local)), tuple(lay))


def _with(layout, d, name):
    out = list(layout)
    out[d] = name
    return tuple(out)


__all__ = ["device_program", "layout_of", "spec_of", "Unsupported"]

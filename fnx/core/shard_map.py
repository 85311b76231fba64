"""shard_map: a function written for one device's block, run on every device of a mesh.

``in_specs`` say how each argument is cut into blocks (``P('data')``: rows split over the mesh
axis 'data'), ``out_specs`` how the results' blocks are joined back; mesh axes a result's spec
does not name are taken to hold the same block on every device (the first one's is used).

On concrete arrays the SPMD engine runs the block function on every device (fnx.core.spmd).
Inside another transformation the same program is computed on one device: the blocks are
stacked along one leading axis per mesh axis and the function is vmapped over each with the
mesh axis's name, so its collectives mean the same thing.

Collectives transpose as in pmap (``psum`` to ``psum``): the numbers are JAX's with
``check_vma=False`` (JAX's default ``check_vma=True`` types values as varying or invariant
over mesh axes, and differentiates an invariant input with an implicit psum).
"""
from __future__ import annotations

import functools
import math

from . import lax, spmd
from .api import vmap
from .config import config
from .core import EvalTrace, Tracer, current_trace, get_aval
from .axis_env import axis_env_key
from .errors import ArgumentTypeError, MeshError
from .pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .sharding import Mesh, NamedSharding, PartitionSpec, current_mesh
from .traceback_util import api_boundary


def shard_map(f=None, /, *args, mesh: Mesh | None = None, in_specs=None, out_specs=None,
              check_rep: bool = True, check_vma: bool = True, auto=frozenset(),
              axis_names=None):
    """``f`` on each device's blocks of its arguments, over ``mesh``.

    >>> mesh = fnx.make_mesh((1,), ("i",))            # (8,) on 8 devices
    >>> f = shard_map(lambda x: fnx.lax.psum(x.sum(), "i"), mesh=mesh, in_specs=fnx.P("i"),
    ...               out_specs=fnx.P())
    >>> f(jnp.arange(8.0))
    Array(28., dtype=float32)
    """
    if args:    # fnx.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs)
        names = ("mesh", "in_specs", "out_specs", "check_rep", "auto")
        given = dict(zip(names, args))
        mesh = given.get("mesh", mesh)
        in_specs = given.get("in_specs", in_specs)
        out_specs = given.get("out_specs", out_specs)
    if f is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 check_rep=check_rep, check_vma=check_vma, auto=auto,
                                 axis_names=axis_names)
    mesh = mesh if mesh is not None else current_mesh()
    if mesh is None:
        raise MeshError("shard_map needs a mesh: pass mesh=..., or call it inside `with mesh:`")
    if out_specs is None:
        raise ArgumentTypeError(f"shard_map of {getattr(f, '__name__', 'fun')} needs out_specs "
                                "(a PartitionSpec, or a pytree of them, for its results)")
    return _ShardMapped(f, mesh, in_specs, out_specs)


def _is_spec(x):
    return x is None or isinstance(x, PartitionSpec)


def _as_spec(s):
    return PartitionSpec() if s is None else s


class _ShardMapped:
    def __init__(self, f, mesh, in_specs, out_specs):
        functools.update_wrapper(self, f)
        self.f, self.mesh, self.in_specs, self.out_specs = f, mesh, in_specs, out_specs
        self.name = getattr(f, "__name__", "fun")
        self.axes = list(mesh.shape.items())
        self._cache: dict = {}

    @api_boundary
    def __call__(self, *args):
        leaves, tree = tree_flatten(args)
        in_specs = self.in_specs
        if in_specs is None:     # JAX infers them from the arguments' shardings
            in_specs = tuple(_spec_of(a) for a in args)
        specs = [_as_spec(s) for s in broadcast_prefix(
            in_specs if isinstance(in_specs, tuple) and not isinstance(in_specs, PartitionSpec)
            else (in_specs,) * len(args), args, "shard_map in_specs", is_leaf=_is_spec)]
        shardings = [NamedSharding(self.mesh, s) for s in specs]
        for i, (x, sh) in enumerate(zip(leaves, shardings)):
            sh.check(get_aval(x).shape, f"shard_map argument leaf {i}")
        block_shapes = [sh.shard_shape(get_aval(x).shape) for x, sh in zip(leaves, shardings)]
        if type(current_trace()) is not EvalTrace or any(isinstance(x, Tracer) for x in leaves):
            return self._on_one_device(leaves, tree, specs)
        key = (tree, tuple((get_aval(x).shape, get_aval(x).dtype, get_aval(x).weak_type)
                           for x in leaves), tuple(specs), config.enable_x64, axis_env_key())
        traced = self._cache.get(key)
        if traced is None:
            traced = self._cache[key] = self._trace(tree, leaves, block_shapes)
        jaxpr, consts, out_tree, out_shardings = traced
        devices = self.mesh.flat_devices
        index_maps = [sh.devices_indices_map(get_aval(x).shape)
                      for x, sh in zip(leaves, shardings)]
        per_leaf = [spmd.blocks(x, sh, devices, lambda i, m=m: m[devices[i]])
                    for x, sh, m in zip(leaves, shardings, index_maps)]
        per_device = [[*consts, *[blk[i] for blk in per_leaf]] for i in range(len(devices))]
        outs = spmd.run(jaxpr, self.axes, devices, per_device)
        results = []
        for k, (v, sh) in enumerate(zip(jaxpr.outvars, out_shardings)):
            shape = _global_shape(v.aval.shape, sh)
            m = sh.devices_indices_map(shape)
            results.append(spmd.global_array([o[k] for o in outs], sh, devices, shape,
                                             lambda i, m=m: m[devices[i]], v.aval.weak_type))
        return tree_unflatten(out_tree, results)

    def _body(self, tree, store):
        def flat_fun(*xs):
            out = self.f(*tree_unflatten(tree, xs))
            out_leaves, store["tree"] = tree_flatten(out)
            return out_leaves
        return flat_fun

    def _out_shardings(self, out_tree, n):
        dummy = tree_unflatten(out_tree, [0] * n)
        specs = self.out_specs
        prefix = broadcast_prefix(specs, dummy, "shard_map out_specs", is_leaf=_is_spec)
        return [NamedSharding(self.mesh, _as_spec(s)) for s in prefix]

    def _trace(self, tree, leaves, block_shapes):
        store: dict = {}
        avals = [get_aval(x).update(shape=s) for x, s in zip(leaves, block_shapes)]
        jaxpr, consts = spmd.trace_per_device(self._body(tree, store), avals, self.axes,
                                              f"shard_map({self.name})")
        return jaxpr, consts, store["tree"], self._out_shardings(store["tree"],
                                                                  len(jaxpr.outvars))

    def _on_one_device(self, leaves, tree, specs):
        """The same program on one device: blocks stacked over the mesh axes, vmapped."""
        stacked = [_stack_blocks(x, s, self.mesh) for x, s in zip(leaves, specs)]
        store: dict = {}
        fn = self._body(tree, store)
        for name, _ in reversed(self.axes):
            fn = vmap(fn, axis_name=name)
        outs = fn(*stacked)
        shardings = self._out_shardings(store["tree"], len(outs))
        return tree_unflatten(store["tree"], [_join_blocks(y, sh) for y, sh in
                                              zip(outs, shardings)])


def _spec_of(x):
    sh = getattr(x, "_sharding", None)
    return sh.spec if isinstance(sh, NamedSharding) else PartitionSpec()


def _global_shape(block_shape, sharding: NamedSharding):
    return tuple(n * sharding.block_index((0,) * sharding.mesh.devices.ndim, d)[1]
                 for d, n in enumerate(block_shape))


def _stack_blocks(x, spec, mesh):
    """``x`` (global) as an array of shape (*mesh axis sizes, *block shape) whose entry at a
    device's mesh coordinates is that device's block."""
    shape = get_aval(x).shape
    names = list(mesh.axis_names)
    split_shape, where, block_dims = [], {}, []
    for d, n in enumerate(shape):
        parts = spec.names(d)
        for a in parts:
            where[a] = len(split_shape)
            split_shape.append(mesh.shape[a])
        block_dims.append(len(split_shape))
        split_shape.append(n // math.prod(mesh.shape[a] for a in parts))
    y = lax.reshape(x, tuple(split_shape))
    mesh_dims = [where[a] for a in names if a in where]
    y = lax.transpose(y, mesh_dims + block_dims)
    full = tuple(mesh.shape[a] for a in names) + tuple(split_shape[d] for d in block_dims)
    present = [i for i, a in enumerate(names) if a in where]
    dims = tuple(present) + tuple(range(len(names), len(full)))
    return lax.broadcast_in_dim(y, full, dims)


def _join_blocks(y, sharding: NamedSharding):
    """The inverse of ``_stack_blocks``: blocks (*mesh axis sizes, *block) joined by
    ``sharding``'s spec; mesh axes the spec leaves out hold copies, of which the first is kept."""
    mesh, spec = sharding.mesh, sharding.spec
    names = list(mesh.axis_names)
    shape = get_aval(y).shape
    k = len(names)
    block = shape[k:]
    used = {a for d in range(len(block)) for a in spec.names(d)}
    for i in reversed(range(k)):
        if names[i] not in used:
            y = lax.squeeze(lax.slice(y, (0,) * len(get_aval(y).shape),
                                      tuple(1 if j == i else n for j, n in
                                            enumerate(get_aval(y).shape)),
                                      (1,) * len(get_aval(y).shape)), (i,))
    kept = [a for a in names if a in used]
    perm, out_shape = [], []
    for d, n in enumerate(block):
        parts = spec.names(d)
        perm.extend(kept.index(a) for a in parts)
        perm.append(len(kept) + d)
        out_shape.append(n * math.prod(mesh.shape[a] for a in parts))
    y = lax.transpose(y, perm)
    return lax.reshape(y, tuple(out_shape))


__all__ = ["shard_map"]

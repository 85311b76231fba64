"""pmap: one copy of a function per device, each on its slice of the mapped axis.

On concrete arrays the function is traced once for one slice and run by the SPMD engine
(fnx.core.spmd), one device per slice; its collectives exchange values between devices.
Inside another transformation (jit, grad, vmap) pmap is ``vmap`` with the same axis name: the
same program, computed on one device.
"""
from __future__ import annotations

import functools

import numpy as np


from . import spmd
from .api import _normalize_axis, vmap
from .config import config
from .core import (Array, EvalTrace, Tracer, current_trace, devices as all_devices, get_aval,
                   process_count, process_index)
from .axis_env import axis_env_key
from .errors import BatchingError, MeshError, ShapeError
from .pytree import broadcast_prefix, tree_flatten, tree_map, tree_unflatten
from .sharding import PmapSharding
from .traceback_util import api_boundary


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(), global_arg_shapes=None):
    """Run ``fun`` on each device, in parallel, over the leading (or ``in_axes``) axis of its
    arguments; collectives inside name ``axis_name``.

    >>> xs = jnp.arange(4.0).reshape(1, 4)           # one row per device
    >>> fnx.pmap(lambda x: x - fnx.lax.pmean(x, 'i'), axis_name='i')(xs)
    Array([[0., 0., 0., 0.]], dtype=float32)
    """
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums)
    return _Pmapped(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices,
                    backend)


class _Pmapped:
    def __init__(self, fun, axis_name, in_axes, out_axes, static, devices, backend):
        functools.update_wrapper(self, fun)
        self.fun, self.axis_name = fun, axis_name
        self.in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self.out_axes = out_axes
        self.static = (static,) if isinstance(static, int) else tuple(static)
        self.devices, self.backend = devices, backend
        self.name = getattr(fun, "__name__", "fun")
        self._cache: dict = {}

    def _split_static(self, args):
        static = {i % len(args) for i in self.static if -len(args) <= i < len(args)}
        fun = self.fun
        if static:
            fixed = {i: args[i] for i in static}

            def fun(*dyn, **kw):
                it = iter(dyn)
                full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
                return self.fun(*full, **kw)
        in_axes = self.in_axes
        if isinstance(in_axes, tuple):
            in_axes = tuple(a for i, a in enumerate(in_axes) if i not in static)
        dyn = tuple(a for i, a in enumerate(args) if i not in static)
        key = tuple((i, args[i]) for i in sorted(static))
        return fun, in_axes, dyn, key

    @api_boundary
    def __call__(self, *args, **kwargs):
        fun, in_axes, dyn, static_key = self._split_static(args)
        leaves, tree = tree_flatten((dyn, kwargs))
        if type(current_trace()) is not EvalTrace or any(isinstance(x, Tracer) for x in leaves):
            return vmap(fun, in_axes, self.out_axes, axis_name=self.axis_name)(*dyn, **kwargs)
        if isinstance(in_axes, tuple) and len(in_axes) != len(dyn):
            raise BatchingError(f"pmap in_axes has {len(in_axes)} entries but {self.name} was "
                                f"called with {len(dyn)} positional arguments")
        prefix = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(dyn),
                  {k: 0 for k in kwargs})
        dims = broadcast_prefix(prefix, (dyn, kwargs), "pmap in_axes")
        dims = [_normalize_axis(x, d, i, self.name) for i, (x, d) in enumerate(zip(leaves, dims))]
        n = self._size(leaves, dims)
        devices, everywhere = self._devices(n)
        size = len(everywhere)          # the axis spans every process's devices
        key = (tree, tuple(_sig(x) for x in leaves), tuple(dims), static_key, n,
               tuple(id(d) for d in devices), config.enable_x64, axis_env_key())
        traced = self._cache.get(key)
        if traced is None:
            traced = self._cache[key] = self._trace(fun, tree, leaves, dims, size)
        jaxpr, consts, out_tree, out_dims = traced

        def index(d):
            return lambda i: (slice(None),) * d + (i,)
        per_leaf = [spmd.blocks(x, PmapSharding(devices, d), devices, index(d)) if d is not None
                    else [x] * n for x, d in zip(leaves, dims)]
        per_device = [[*consts, *[blk[i] for blk in per_leaf]] for i in range(n)]
        comm = ranks = None
        if size != n:
            comm = devices[0].communicator(everywhere)
            ranks = [everywhere.index(d) for d in devices]
        outs = spmd.run(jaxpr, [(self.axis_name, size)], devices, per_device, comm, ranks)
        results = []
        for k, (v, d) in enumerate(zip(jaxpr.outvars, out_dims)):
            mine = [o[k] for o in outs]
            if d is None:
                results.append(mine[0])
                continue
            shape = list(v.aval.shape)
            shape.insert(d, n)
            results.append(spmd.global_array(mine, PmapSharding(devices, d), devices, shape,
                                             index(d), v.aval.weak_type))
        return tree_unflatten(out_tree, results)

    def _size(self, leaves, dims):
        sizes = {(i, get_aval(x).shape[d]) for i, (x, d) in enumerate(zip(leaves, dims))
                 if d is not None}
        if not sizes:
            raise BatchingError(f"pmap of {self.name} needs at least one mapped argument")
        distinct = {s for _, s in sizes}
        if len(distinct) > 1:
            lines = "\n".join(f"  argument leaf {i} of shape {get_aval(leaves[i]).shape} has "
                              f"size {s} along axis {dims[i]}" for i, s in sorted(sizes))
            raise ShapeError(f"pmap got different sizes for the mapped axes of {self.name}:\n"
                             f"{lines}")
        return distinct.pop()

    def _devices(self, n):
        """(this process's devices for the ``n`` slices, the devices the axis spans): with
        several processes (fnx.distributed), each maps over its own devices and collectives
        span all of them, as in JAX."""
        pool = list(self.devices) if self.devices is not None else all_devices(self.backend)
        if process_count() > 1:
            local = [d for d in pool if getattr(d, "process_index", 0) == process_index()]
            if n != len(local):
                raise MeshError(f"pmap of {self.name} in process {process_index()} maps an "
                                f"axis of size {n} over its {len(local)} local devices; they "
                                "must be equal")
            return local, pool
        if self.devices is not None and len(pool) != n:
            raise MeshError(f"pmap of {self.name} maps an axis of size {n} over devices={pool}"
                            f" ({len(pool)} devices); they must be equal")
        if n > len(pool):
            raise MeshError(f"pmap of {self.name} maps an axis of size {n}, but only "
                            f"{len(pool)} devices are available {pool} (set "
                            "jax_num_cpu_devices, or XLA_FLAGS=--xla_force_host_platform_"
                            "device_count=N, for virtual CPU devices)")
        return pool[:n], pool[:n]

    def _trace(self, fun, tree, leaves, dims, n):
        store: dict = {}

        def flat_fun(*xs):
            dyn, kw = tree_unflatten(tree, xs)
            out = fun(*dyn, **kw)
            out_leaves, store["tree"] = tree_flatten(out)
            return out_leaves
        avals = []
        for x, d in zip(leaves, dims):
            aval = get_aval(x)
            if d is not None:
                shape = list(aval.shape)
                del shape[d]
                aval = aval.update(shape=tuple(shape))
            avals.append(aval)
        jaxpr, consts = spmd.trace_per_device(flat_fun, avals, [(self.axis_name, n)],
                                              f"pmap({self.name})")
        out_tree = store["tree"]
        out_dims = broadcast_prefix(self.out_axes, tree_unflatten(out_tree, [0] * len(
            jaxpr.outvars)), "pmap out_axes")
        out_dims = [None if d is None else d % (v.aval.ndim + 1)
                    for d, v in zip(out_dims, jaxpr.outvars)]
        return jaxpr, consts, out_tree, out_dims


def device_put_replicated(x, devices):
    """Pytree ``x`` stacked once per device along a new leading axis, slice ``i`` on
    ``devices[i]`` (pmap's layout for parameters every device holds).

    >>> params = fnx.device_put_replicated({"w": jnp.ones(2)}, fnx.local_devices()[:1])
    >>> params["w"].shape
    (1, 2)
    """

    def put(v):
        v = np.asarray(v)
        stacked = np.broadcast_to(v, (len(devices),) + v.shape)
        return _pmap_array([stacked[i] for i in range(len(devices))], devices, get_aval(v))
    return tree_map(put, x)


def device_put_sharded(shards, devices):
    """The list ``shards`` (pytrees of one structure) stacked along a new leading axis, shard
    ``i`` on ``devices[i]``.

    >>> fnx.device_put_sharded([jnp.ones(2)], fnx.local_devices()[:1]).shape
    (1, 2)
    """
    if len(shards) != len(devices):
        raise MeshError(f"device_put_sharded got {len(shards)} shards for {len(devices)} "
                        "devices")
    return tree_map(lambda *vs: _pmap_array([np.asarray(v) for v in vs], devices,
                                            get_aval(vs[0])), *shards)


def _pmap_array(blocks, devices, aval):
    per_device = [Array(d.from_numpy(np.ascontiguousarray(b, dtype=aval.dtype)), d,
                        aval.weak_type) for b, d in zip(blocks, devices)]
    shape = (len(devices),) + tuple(blocks[0].shape)
    return spmd.global_array(per_device, PmapSharding(devices, 0), devices, shape,
                             lambda i: (i,), aval.weak_type)


def _sig(x):
    aval = get_aval(x)
    return (aval.shape, aval.dtype, aval.weak_type)


__all__ = ["pmap", "device_put_replicated", "device_put_sharded"]

"""Putting arrays on devices by shardings: ``fnx.device_put`` with a sharding, ``make_mesh`` and
``with_sharding_constraint``.

A sharded array holds its global value on the sharding's first device and knows its sharding;
on GPUs each device also gets its block at once (fnx.core.spmd keeps them), so device programs
read their blocks where they are.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import core, spmd
from .errors import MeshError, ShapeError
from .pytree import broadcast_prefix, tree_flatten, tree_leaves, tree_map, tree_unflatten
from .sharding import (AxisType, Mesh, NamedSharding, PartitionSpec, Sharding,
                       SingleDeviceSharding, current_mesh)


def device_put(x, device=None, *, donate=False, may_alias=None):
    """Move the arrays in pytree ``x`` to ``device``: a device, a backend name (the default
    backend when None) or a sharding (``jax.sharding``), which lays each array out in blocks
    over its devices; ``device`` may also be a pytree prefix of these.

    >>> mesh = fnx.make_mesh((1,), ("data",))
    >>> fnx.device_put(jnp.ones((8, 2)), fnx.NamedSharding(mesh, fnx.P("data"))).sharding.spec
    P('data',)
    """
    if isinstance(device, SingleDeviceSharding):
        device = device._device
    if _is_one_target(device) and any(isinstance(v, core.Tracer) for v in tree_leaves(x)):
        # a traced value is placed by the program computing it (jit lays out its values), as
        # in JAX, where device_put inside jit or grad is the identity on values
        leaves, tree = tree_flatten(x)
        return tree_unflatten(tree, [v if isinstance(v, core.Tracer) else device_put(v, device)
                                     for v in leaves])
    if isinstance(device, Sharding):
        return tree_map(lambda v: _put_sharded(v, device), x)
    if device is None or isinstance(device, str) or hasattr(device, "impls"):
        return core.device_put(x, device)
    leaves, tree = tree_flatten(x)
    targets = broadcast_prefix(device, x, "device_put device",
                               is_leaf=lambda d: hasattr(d, "impls") or isinstance(d, Sharding))
    return tree_unflatten(tree, [device_put(v, d) for v, d in zip(leaves, targets)])


def _is_one_target(device) -> bool:
    return device is None or isinstance(device, (str, Sharding)) or hasattr(device, "impls")


def _put_sharded(v, sharding):
    """``v`` laid out by ``sharding``: the global value is checked against the sharding (every
    split dimension divides) and held by the sharding's first device."""
    aval = core.get_aval(v)
    sharding.devices_indices_map(aval.shape)      # raises ShapeError for a misfit
    target = sharding._device_list()[0]
    out = core.Array(target.cast(target.to_buffer(v, aval.dtype), aval.dtype), target,
                     aval.weak_type)
    out._sharding = sharding
    if target.platform != "cpu":      # each device gets its block now, not at every call
        spmd.place_blocks(out, sharding)
    return out


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of ``axis_shapes`` over ``devices`` (the first ``prod(axis_shapes)`` devices of
    the default backend when None).

    >>> fnx.make_mesh((1,), ("data",))
    Mesh('data': 1)
    """
    axis_shapes = tuple(int(s) for s in axis_shapes)
    need = math.prod(axis_shapes)
    pool = list(devices) if devices is not None else core.devices()
    if need != len(pool) and (devices is not None or need > len(pool)):
        raise MeshError(f"a mesh of shape {axis_shapes} needs {need} devices, but "
                        f"{len(pool)} are {'given' if devices is not None else 'available'}"
                        + ("" if devices is not None else
                           " (set jax_num_cpu_devices or XLA_FLAGS="
                           "--xla_force_host_platform_device_count=N for virtual CPU devices)"))
    return Mesh(np.array(pool[:need], dtype=object).reshape(axis_shapes), axis_names,
                axis_types)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """The arrays of pytree ``local_data`` (this process's part of a global batch) laid out by
    ``sharding``; a bare ``PartitionSpec`` means a NamedSharding over the mesh ``set_mesh`` set.
    fnx runs one process, so its local data is all the data.

    >>> mesh = fnx.make_mesh((1,), ("batch",))
    >>> x = fnx.make_array_from_process_local_data(fnx.NamedSharding(mesh, fnx.P("batch")),
    ...                                            np.ones((4, 2), np.float32))
    >>> x.shape, x.sharding.spec
    ((4, 2), P('batch',))
    """
    sharding = _over_context_mesh(sharding, "make_array_from_process_local_data")

    def one(x):
        if global_shape is not None and tuple(np.shape(x)) != tuple(global_shape):
            raise ShapeError(f"make_array_from_process_local_data: one process holds the whole "
                             f"array, but its data has shape {np.shape(x)} and global_shape "
                             f"is {tuple(global_shape)}")
        return _put_sharded(x, sharding)
    return tree_map(one, local_data)


def with_sharding_constraint(x, shardings):
    """``x`` laid out by ``shardings`` (a sharding or a pytree prefix of them); inside a traced
    program, whose values jit lays out itself, it is ``x``.

    >>> mesh = fnx.make_mesh((1,), ("i",))
    >>> lax.with_sharding_constraint(jnp.ones(4), fnx.NamedSharding(mesh, fnx.P()))
    Array([1., 1., 1., 1.], dtype=float32)
    """
    if any(isinstance(v, core.Tracer) for v in tree_leaves(x)):
        return x
    return device_put(x, shardings)


__all__ = ["device_put", "make_mesh", "with_sharding_constraint"]


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """The array of ``shape`` laid out by ``sharding``, each device's block being
    ``data_callback(index)`` for the tuple of slices ``index`` that block covers.

    >>> data = np.arange(8.0).reshape(2, 4)
    >>> s = fnx.NamedSharding(fnx.make_mesh((1,), ("x",)), fnx.P("x"))
    >>> fnx.make_array_from_callback(data.shape, s, lambda idx: data[idx])
    Array([[0., 1., 2., 3.],
           [4., 5., 6., 7.]], dtype=float32)
    """
    shape = tuple(shape)
    out = None
    for index in sharding.devices_indices_map(shape).values():
        block = np.asarray(data_callback(index))
        if out is None:
            out = np.empty(shape, dtype or block.dtype)
        out[index] = block
    return device_put(out if out is not None else np.empty(shape, dtype or np.float32),
                      sharding)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """The array of ``shape`` laid out by ``sharding`` whose block on each device is the one of
    ``arrays`` that lives there.

    >>> s = fnx.NamedSharding(fnx.make_mesh((1,), ("x",)), fnx.P())
    >>> fnx.make_array_from_single_device_arrays((2,), s, [jnp.ones(2)])
    Array([1., 1.], dtype=float32)
    """
    index_of = sharding.devices_indices_map(tuple(shape))
    devices = list(index_of)
    out = None
    for k, a in enumerate(arrays):
        device = getattr(a, "device", None)
        index = index_of.get(device, index_of[devices[k]])
        block = np.asarray(a)
        if out is None:
            out = np.empty(tuple(shape), dtype or block.dtype)
        out[index] = block
    return device_put(out, sharding)


def reshard(xs, out_shardings):
    """``xs`` laid out by ``out_shardings`` (a sharding, or a pytree prefix of shardings), as
    ``jax.reshard``.

    >>> s = fnx.NamedSharding(fnx.make_mesh((1,), ("x",)), fnx.P("x"))
    >>> fnx.reshard(jnp.ones(2), s).sharding == s
    True
    >>> with fnx.set_mesh(s.mesh):             # a bare PartitionSpec: over the mesh set
    ...     fnx.reshard(jnp.ones(2), fnx.P("x")).sharding == s
    True
    """
    out_shardings = tree_map(lambda s: _over_context_mesh(s, "reshard"), out_shardings,
                             is_leaf=lambda s: isinstance(s, (PartitionSpec, Sharding)))
    return device_put(xs, out_shardings)


def _over_context_mesh(sharding, who):
    """``sharding``, a bare ``PartitionSpec`` taken as a NamedSharding over the mesh in force."""
    if not isinstance(sharding, PartitionSpec):
        return sharding
    mesh = current_mesh()
    if mesh is None:
        raise MeshError(f"{who} was given {sharding} without a mesh: pass a NamedSharding, or "
                        f"set one with fnx.set_mesh(mesh)")
    return NamedSharding(mesh, sharding)


def _mesh_with_types(axes, axis_type, who, shardings=None):
    """``(mesh, the mesh with `axes` (all when None) of `axis_type`)`` for the mesh in force or
    the one ``shardings`` name (they must agree); None where there is neither."""
    context = current_mesh()
    named = {s.mesh for s in tree_leaves(shardings, is_leaf=lambda s: isinstance(s, Sharding))
             if isinstance(s, NamedSharding)}
    if len(named) > 1:
        raise MeshError(f"the shardings passed to {who} must share one mesh, got {named}")
    mesh = named.pop() if named else None
    if mesh is not None and context is not None and mesh != context:
        raise MeshError(f"{who}: the mesh in force, {context}, is not the shardings' mesh, "
                        f"{mesh}; set it with fnx.set_mesh")
    mesh = context or mesh
    if mesh is None:
        return None
    axes = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else tuple(axes)
    unknown = [a for a in axes if a not in mesh.axis_names]
    if unknown:
        raise MeshError(f"{who}: {unknown} are not axes of {mesh}")
    if any(mesh.axis_types[mesh.axis_names.index(a)] is AxisType.Manual for a in axes):
        raise NotImplementedError(f"{who}: a Manual mesh axis cannot become Auto or Explicit")
    types = tuple(axis_type if n in axes else t for n, t in zip(mesh.axis_names, mesh.axis_types))
    return mesh, Mesh(mesh.devices, mesh.axis_names, types)


def _sharding_argument(given, kwargs, name):
    if given is not None:
        return given
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` run with the mesh axes ``axes`` (all when None) of the mesh in force made ``Auto``
    (``jax.sharding.auto_axes``), its results laid out by ``out_sharding`` (given here or as a
    keyword of each call). fnx's sharding rules are the same for every axis type, so the
    values are ``f``'s; the axis types ``f`` sees and the results' layout are JAX's.

    >>> mesh = fnx.make_mesh((1,), ("x",), axis_types=(fnx.sharding.AxisType.Explicit,))
    >>> @fnx.sharding.auto_axes
    ... def f(x):
    ...     print(fnx.sharding.get_abstract_mesh().axis_types)
    ...     return x * 2
    >>> with fnx.set_mesh(mesh):
    ...     f(jnp.ones(2), out_sharding=fnx.P("x")).sharding.spec
    (Auto,)
    P('x',)
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def run(*args, **kwargs):
        out_sharding_ = _sharding_argument(out_sharding, kwargs, "out_sharding")
        meshes = _mesh_with_types(axes, AxisType.Auto, "auto_axes", out_sharding_)
        if meshes is None or meshes[0].axis_types == meshes[1].axis_types:
            return f(*args, **kwargs)
        with meshes[1]:
            out = f(*args, **kwargs)
        return reshard(out, out_sharding_)
    return run


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` run on its arguments laid out by ``in_sharding`` (given here or as a keyword of
    each call), with the mesh axes ``axes`` (all when None) of the mesh in force made
    ``Explicit`` (``jax.sharding.explicit_axes``); a mesh must be in force. fnx's sharding
    rules are the same for every axis type, so the values are ``f``'s.

    >>> mesh = fnx.make_mesh((1,), ("x",))
    >>> @fnx.sharding.explicit_axes(in_sharding=fnx.P("x"))
    ... def f(x):
    ...     print(fnx.sharding.get_abstract_mesh().axis_types, x.sharding.spec)
    ...     return x * 2
    >>> with fnx.set_mesh(mesh):
    ...     f(jnp.ones(2))
    (Explicit,) P('x',)
    Array([2., 2.], dtype=float32)
    """
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def run(*args, **kwargs):
        in_sharding_ = _sharding_argument(in_sharding, kwargs, "in_sharding")
        meshes = _mesh_with_types(axes, AxisType.Explicit, "explicit_axes")
        if meshes is None:
            raise MeshError("explicit_axes needs a mesh in force: enter one with "
                            "fnx.set_mesh(mesh)")
        with meshes[1]:
            return f(*reshard(args, in_sharding_), **kwargs)
    return run

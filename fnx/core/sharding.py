"""Meshes and shardings, as ``jax.sharding``: which device holds which block of an array.

A ``Mesh`` arranges devices in a grid with named axes; a ``PartitionSpec`` says, per array
dimension, which mesh axes split it (``None``: not split); a ``NamedSharding`` pairs the two.
Every sharding answers ``devices_indices_map(shape)``: the block (a tuple of slices) of the
global array each device holds.

>>> mesh = fnx.make_mesh((2,), ("batch",))          # with 2 (virtual) devices
>>> x = fnx.device_put(jnp.zeros((8, 3)), NamedSharding(mesh, P("batch")))
>>> [s.data.shape for s in x.addressable_shards]
[(4, 3), (4, 3)]
"""
from __future__ import annotations

import enum

import math

import numpy as np

from .errors import MeshError, ShapeError


class PartitionSpec(tuple):
    """Per array dimension: ``None`` (not split), a mesh axis name, or a tuple of names (split
    over their product, the first name major). Trailing dimensions left out are not split.

    >>> fnx.P("data", None)
    P('data', None)
    """

    def __new__(cls, *parts):
        return super().__new__(cls, parts)

    def __repr__(self):
        return "P" + (super().__repr__() if len(self) != 1 else f"({self[0]!r},)")   # as JAX

    def names(self, dim: int) -> tuple:
        part = self[dim] if dim < len(self) else None
        if part is None:
            return ()
        return tuple(part) if isinstance(part, (tuple, list)) else (part,)


P = PartitionSpec


class AxisType(enum.Enum):
    """How a mesh axis shards values: ``Auto`` (the compiler decides), ``Explicit`` (in the
    types) or ``Manual`` (inside shard_map). fnx records it; its sharding rules are the same
    for all three.

    >>> fnx.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,)).axis_types
    (Explicit,)
    """
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class _NamedAxes:
    """What meshes, concrete and abstract, tell of their axes: names, sizes and types."""

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    def _axes_of(self, kind):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    auto_axes = property(lambda self: self._axes_of(AxisType.Auto))
    explicit_axes = property(lambda self: self._axes_of(AxisType.Explicit))
    manual_axes = property(lambda self: self._axes_of(AxisType.Manual))
    are_all_axes_auto = property(
        lambda self: bool(self.axis_types) and self.auto_axes == self.axis_names)
    are_all_axes_explicit = property(
        lambda self: bool(self.axis_types) and self.explicit_axes == self.axis_names)
    are_all_axes_manual = property(
        lambda self: bool(self.axis_types) and self.manual_axes == self.axis_names)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh's axis names, sizes and types without its devices."""
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)


def _axis_types(axis_names, axis_types, who):
    """``axis_types`` as a tuple with one AxisType per name (Auto for all when None)."""
    if axis_types is None:
        return (AxisType.Auto,) * len(axis_names)
    if isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * len(axis_names)
    axis_types = tuple(axis_types)
    if not all(isinstance(t, AxisType) for t in axis_types):
        raise TypeError(f"axis_types passed to {who} must be fnx.sharding.AxisType members, got "
                        f"{axis_types}")
    if len(axis_types) != len(axis_names):
        raise MeshError(f"{who} needs one axis type per axis name, got axis_names="
                        f"{axis_names} and axis_types={axis_types}")
    return axis_types


class Mesh(_NamedAxes):
    """Devices in a grid whose axes have names.

    >>> Mesh(np.array(fnx.devices()[:1]).reshape(1, 1), ("data", "model"))
    Mesh('data': 1, 'model': 1)
    """

    def __init__(self, devices, axis_names, axis_types=None):
        self.devices = np.asarray(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        self.axis_names = tuple(axis_names)
        self.axis_types = _axis_types(self.axis_names, axis_types, "Mesh")
        if self.devices.ndim != len(self.axis_names):
            raise MeshError(f"a mesh of devices with shape {self.devices.shape} needs "
                            f"{self.devices.ndim} axis names, got {self.axis_names}")
        if len(set(self.axis_names)) != len(self.axis_names):
            raise MeshError(f"mesh axis names must differ, got {self.axis_names}")
        ids = [d.id for d in self.devices.flat]
        if len(set(ids)) != len(ids):
            raise MeshError(f"a mesh holds each device once, got device ids {ids}")

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.devices.shape))

    axis_sizes = property(lambda self: tuple(self.devices.shape))
    empty = property(lambda self: self.devices.size == 0)
    size = property(lambda self: self.devices.size)
    device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))
    flat_devices = property(lambda self: list(self.devices.flat))

    def __enter__(self):
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.pop()

    def __eq__(self, other):
        return isinstance(other, Mesh) and self.axis_names == other.axis_names and \
            self.devices.shape == other.devices.shape and \
            all(a is b for a, b in zip(self.devices.flat, other.devices.flat))

    def __hash__(self):
        return hash((self.axis_names, tuple(id(d) for d in self.devices.flat)))

    def __repr__(self):
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({axes})"


class AbstractMesh(_NamedAxes):
    """A mesh's axis names, sizes and types without devices (``jax.sharding.AbstractMesh``):
    what a program's shardings depend on, so that meshes of other devices share it. Asking it
    for devices, or entering it as a context, raises ValueError.

    >>> mesh = AbstractMesh((2, 4), ("data", "model"))
    >>> mesh
    AbstractMesh('data': 2, 'model': 4, axis_types=(Auto, Auto))
    >>> mesh.size, mesh.update_axis_types({"data": AxisType.Explicit}).explicit_axes
    (8, ('data',))
    """

    def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        self.axis_sizes = tuple(int(n) for n in axis_sizes)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise MeshError(f"AbstractMesh needs one size per axis name, got axis_sizes="
                            f"{self.axis_sizes} and axis_names={self.axis_names}")
        self.axis_types = _axis_types(self.axis_names, axis_types, "AbstractMesh")
        self.abstract_device = abstract_device

    shape = property(lambda self: dict(self.shape_tuple))
    size = property(lambda self: math.prod(self.axis_sizes) if self.axis_sizes else 0)
    empty = property(lambda self: self.size == 0)
    abstract_mesh = property(lambda self: self)

    def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs):
        """This mesh with the parts given replaced."""
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, **kwargs)

    def update_axis_types(self, name_to_type: dict) -> AbstractMesh:
        """This mesh with the axes named in ``name_to_type`` given those types."""
        return self.update(axis_types=tuple(name_to_type.get(n, t) for n, t in
                                            zip(self.axis_names, self.axis_types)))

    def _no_devices(what):
        def refuse(self, *args):
            raise ValueError(f"AbstractMesh does not implement {what}: it has no devices")
        return refuse

    devices = property(_no_devices("devices"))
    device_ids = property(_no_devices("device_ids"))
    local_devices = property(_no_devices("local_devices"))
    local_mesh = property(_no_devices("local_mesh"))
    is_multi_process = property(_no_devices("is_multi_process"))
    __enter__ = _no_devices("__enter__")
    __exit__ = _no_devices("__exit__")
    del _no_devices

    def _key(self):
        return self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and other._key() == self._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple) or "()"
        return f"AbstractMesh({axes}, axis_types={self.axis_types})"


_mesh_stack: list[Mesh] = []
_global_mesh: list = [None]


class _MeshSetting:
    """``set_mesh``'s result: the mesh is set already; leaving a ``with`` block restores the
    one before."""

    def __init__(self, mesh):
        self.mesh, self._before = mesh, _global_mesh[0]
        _global_mesh[0] = mesh

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _global_mesh[0] = self._before


def set_mesh(mesh: Mesh):
    """Sets ``mesh`` as the mesh that shard_map and bare ``PartitionSpec`` shardings use when
    given none (``jax.set_mesh``): for the rest of the program, or inside a ``with`` block.

    >>> with fnx.set_mesh(fnx.make_mesh((1,), ("i",))):
    ...     fnx.shard_map(lambda x: x * 2, in_specs=P("i"), out_specs=P("i"))(jnp.ones(2))
    Array([2., 2.], dtype=float32)
    """
    return _MeshSetting(mesh)


use_mesh = set_mesh


def current_mesh() -> Mesh | None:
    """The mesh of the innermost ``with mesh:`` block, else the one ``set_mesh`` set, or
    None."""
    return _mesh_stack[-1] if _mesh_stack else _global_mesh[0]


def get_mesh() -> Mesh:
    """The mesh ``set_mesh`` put in force (an empty mesh outside any).

    >>> with fnx.set_mesh(fnx.make_mesh((1,), ("i",))):
    ...     fnx.sharding.get_mesh()
    Mesh('i': 1)
    >>> fnx.sharding.get_mesh().empty
    True
    """
    return current_mesh() or Mesh(np.empty((0,), dtype=object), ("",))


get_abstract_mesh = get_mesh


class Sharding:
    """Where the blocks of an array live: ``devices_indices_map(shape)``, the base of every
    sharding.

    >>> jnp.ones((2, 3)).sharding.devices_indices_map((2, 3))
    {CpuDevice(id=0): (slice(None, None, None), slice(None, None, None))}
    """

    @property
    def device_set(self) -> set:
        return set(self._device_list())

    addressable_devices = device_set
    num_devices = property(lambda self: len(self._device_list()))

    def devices_indices_map(self, shape) -> dict:
        raise NotImplementedError

    def shard_shape(self, shape) -> tuple:
        index = next(iter(self.devices_indices_map(shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))

    @property
    def is_fully_replicated(self) -> bool:
        return self.num_devices == 1

    def is_equivalent_to(self, other, ndim: int) -> bool:
        shape = (64,) * ndim
        return self.devices_indices_map(shape) == other.devices_indices_map(shape)


class SingleDeviceSharding(Sharding):
    """The whole array on one device.

    >>> SingleDeviceSharding(fnx.devices()[0]).shard_shape((2, 3))
    (2, 3)
    """

    def __init__(self, device):
        self._device = device

    def _device_list(self):
        return [self._device]

    def devices_indices_map(self, shape):
        return {self._device: tuple(slice(None) for _ in shape)}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(id(self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"


class NamedSharding(Sharding):
    """Blocks of an array over a mesh, by a PartitionSpec.

    >>> mesh = fnx.make_mesh((1,), ("data",))
    >>> NamedSharding(mesh, P("data", None))     # rows split over 'data', replicated over the rest
    NamedSharding(mesh=Mesh('data': 1), spec=P('data', None))
    """

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec()):
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec) if isinstance(spec, (tuple, list)) else \
                PartitionSpec(spec)
        used = [n for d in range(len(spec)) for n in spec.names(d)]
        unknown = [n for n in used if n not in mesh.axis_names]
        if unknown or len(set(used)) != len(used):
            raise MeshError(f"{spec} names mesh axes {unknown or used} that "
                            f"{'are not in' if unknown else 'appear twice in'} {mesh} ")
        self.mesh, self.spec = mesh, spec

    def _device_list(self):
        return self.mesh.flat_devices

    @property
    def is_fully_replicated(self):
        return all(not self.spec.names(d) for d in range(len(self.spec)))

    def check(self, shape, what="an array"):
        """Raise ShapeError unless every split dimension of ``shape`` divides evenly."""
        if len(self.spec) > len(shape):
            raise ShapeError(f"{self.spec} has {len(self.spec)} entries, more than the rank "
                             f"of {what} of shape {tuple(shape)}")
        for d, n in enumerate(shape):
            parts = math.prod(self.mesh.shape[a] for a in self.spec.names(d))
            if n % parts:
                raise ShapeError(f"{what} of shape {tuple(shape)} cannot be split by "
                                 f"{self.spec} over {self.mesh}: dimension {d} ({n}) is not "
                                 f"a multiple of {parts}")

    def block_index(self, coords: tuple, dim: int) -> tuple[int, int]:
        """(which block, how many blocks) of dimension ``dim`` the device at ``coords`` has."""
        names = self.spec.names(dim)
        sizes = [self.mesh.shape[n] for n in names]
        at = [coords[self.mesh.axis_names.index(n)] for n in names]
        return (int(np.ravel_multi_index(at, sizes)) if names else 0), math.prod(sizes)

    def devices_indices_map(self, shape):
        self.check(shape)
        out = {}
        for coords in np.ndindex(*self.mesh.devices.shape):
            index = []
            for d, n in enumerate(shape):
                b, parts = self.block_index(coords, d)
                size = n // parts
                index.append(slice(b * size, (b + 1) * size) if parts > 1 else slice(None))
            out[self.mesh.devices[coords]] = tuple(index)
        return out

    def __eq__(self, other):
        return isinstance(other, NamedSharding) and other.mesh == self.mesh and \
            _trimmed(other.spec) == _trimmed(self.spec)

    def __hash__(self):
        return hash((self.mesh, _trimmed(self.spec)))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def _trimmed(spec):
    parts = list(spec)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


class PmapSharding(Sharding):
    """pmap's results: slice ``i`` of axis ``sharded_dim`` on device ``i``.

    >>> PmapSharding(fnx.devices()[:1]).devices_indices_map((1, 3))
    {CpuDevice(id=0): (0, slice(None, None, None))}
    """

    def __init__(self, devices, sharded_dim: int = 0):
        self.devices = list(devices)
        self.sharded_dim = sharded_dim

    def _device_list(self):
        return self.devices

    def devices_indices_map(self, shape):
        if shape[self.sharded_dim] != len(self.devices):
            raise ShapeError(f"a pmap sharding over {len(self.devices)} devices needs axis "
                             f"{self.sharded_dim} of shape {tuple(shape)} to have that size")
        out = {}
        for i, dev in enumerate(self.devices):
            index = [slice(None)] * len(shape)
            index[self.sharded_dim] = i
            out[dev] = tuple(index)
        return out

    def shard_shape(self, shape):
        return tuple(n for d, n in enumerate(shape) if d != self.sharded_dim)

    def __eq__(self, other):
        return isinstance(other, PmapSharding) and other.sharded_dim == self.sharded_dim and \
            len(other.devices) == len(self.devices) and \
            all(a is b for a, b in zip(other.devices, self.devices))

    def __hash__(self):
        return hash((self.sharded_dim, tuple(id(d) for d in self.devices)))

    def __repr__(self):
        return f"PmapSharding(devices={self.devices!r}, sharded_dim={self.sharded_dim})"


class PositionalSharding(Sharding):
    """Devices in an array whose rank is the sharded array's (JAX's older API): dimension ``d``
    is split into ``devices.shape[d]`` blocks, or held whole where ``replicate`` made it so.

    >>> PositionalSharding(fnx.devices()[:1]).reshape(1, 1)
    PositionalSharding(shape=(1, 1))
    """

    def __init__(self, devices, _split=None):
        self._devices = np.asarray(devices, dtype=object)
        self._split = tuple(_split) if _split is not None else (True,) * self._devices.ndim

    shape = property(lambda self: tuple(n if s else 1 for n, s in
                                        zip(self._devices.shape, self._split)))
    ndim = property(lambda self: self._devices.ndim)

    def reshape(self, *shape):
        return PositionalSharding(self._devices.reshape(*shape))

    def replicate(self, axis=None, keepdims=True):
        """The same devices, each holding all of dimension ``axis`` (every one when None)."""
        axes = range(self.ndim) if axis is None else [axis % self.ndim]
        return PositionalSharding(self._devices, [s and d not in axes
                                                  for d, s in enumerate(self._split)])

    def _device_list(self):
        return list(self._devices.flat)

    @property
    def is_fully_replicated(self):
        return not any(self._split)

    def devices_indices_map(self, shape):
        if len(shape) != self.ndim:
            raise ShapeError(f"a PositionalSharding of shape {self.shape} shards arrays of rank "
                             f"{self.ndim}, got shape {tuple(shape)}")
        out = {}
        for coords in np.ndindex(*self._devices.shape):
            index = []
            for d, (n, c, parts, split) in enumerate(zip(shape, coords, self._devices.shape,
                                                        self._split)):
                if split and n % parts:
                    raise ShapeError(f"an array of shape {tuple(shape)} cannot be split by a "
                                     f"PositionalSharding of shape {self.shape}")
                size = n // parts
                index.append(slice(c * size, (c + 1) * size) if split and parts > 1
                             else slice(None))
            out[self._devices[coords]] = tuple(index)
        return out

    def __repr__(self):
        return f"PositionalSharding(shape={self.shape})"


class Shard:
    """One device's block of an array: ``device``, ``index`` (slices into the global array),
    ``replica_id`` (0 for the first copy of a block) and ``data`` (an Array on ``device``).

    >>> shard = jnp.arange(3.0).addressable_shards[0]
    >>> shard.index, shard.replica_id, shard.data
    ((slice(None, None, None),), 0, Array([0., 1., 2.], dtype=float32))
    """

    def __init__(self, device, index, replica_id, data):
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data!r})")


def index_key(index):
    """A block's index as a hashable key."""
    return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


__all__ = ["AbstractMesh", "AxisType", "Shard", "set_mesh", "use_mesh", "index_key",
           "PartitionSpec", "P",
           "Mesh", "Sharding", "SingleDeviceSharding", "NamedSharding",
           "PmapSharding", "PositionalSharding", "current_mesh"]

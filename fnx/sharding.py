"""fnx.sharding: meshes and shardings, as ``jax.sharding``.

>>> from fnx.sharding import Mesh, NamedSharding, PartitionSpec as P
"""
from .core.placement import auto_axes, explicit_axes, reshard  # noqa: F401
from .core.sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, P,  # noqa: F401
                            PartitionSpec, PmapSharding, PositionalSharding, Shard, Sharding,
                            SingleDeviceSharding, get_abstract_mesh, get_mesh, set_mesh,
                            use_mesh)

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

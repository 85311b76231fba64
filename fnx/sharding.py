"""fnx.sharding: meshes and shardings, as ``jax.sharding``.

>>> from fnx.sharding import Mesh, NamedSharding, PartitionSpec as P
"""
from .core.sharding import (AxisType, Mesh, NamedSharding, P, PartitionSpec,  # noqa: F401
                            PmapSharding, PositionalSharding, Shard, Sharding,
                            SingleDeviceSharding, set_mesh, use_mesh)

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

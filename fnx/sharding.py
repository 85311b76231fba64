"""fnx.sharding: meshes and shardings, as ``jax.sharding``.

>>> from fnx.sharding import Mesh, NamedSharding, PartitionSpec as P
"""
from .core.sharding import (Mesh, NamedSharding, P, PartitionSpec, PmapSharding,  # noqa: F401
                            PositionalSharding, Shard, Sharding, SingleDeviceSharding,
                            set_mesh, use_mesh)

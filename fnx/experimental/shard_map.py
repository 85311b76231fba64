"""``fnx.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs)``, JAX's older home of
``fnx.shard_map``."""
from ..core.shard_map import shard_map  # noqa: F401

"""``fnx.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs)``, JAX's older home of
``fnx.shard_map``."""
from ..core.shard_map import shard_map  # noqa: F401

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

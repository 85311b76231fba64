"""fnx.experimental: JAX's experimental names (``shard_map``)."""
from . import shard_map  # noqa: F401

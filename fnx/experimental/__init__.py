"""fnx.experimental: JAX's experimental names that fnx provides (``io_callback``, ``shard_map``)."""
from ..core.callbacks import io_callback
from . import shard_map  # noqa: F401

__all__ = ["io_callback", "shard_map"]

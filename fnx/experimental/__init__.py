"""fnx.experimental: JAX's experimental names that fnx provides (``io_callback``)."""
from ..core.callbacks import io_callback

__all__ = ["io_callback"]

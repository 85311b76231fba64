"""fnx.experimental: JAX's experimental names that fnx provides (``io_callback``, ``shard_map``,
``ode.odeint``, ``mesh_utils``,
``checkify``, ``jet``, ``sparse``)."""
from ..core.callbacks import io_callback
from . import checkify, jet, mesh_utils, ode, pjit, shard_map, sparse  # noqa: F401

__all__ = ["checkify", "jet", "io_callback", "mesh_utils", "ode", "pjit", "shard_map", "sparse"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

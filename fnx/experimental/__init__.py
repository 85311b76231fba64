"""fnx.experimental: JAX's experimental names that fnx provides (``io_callback``, ``shard_map``,
``ode.odeint``, ``mesh_utils``,
``checkify``, ``jet``, ``sparse``, ``random.stateful_rng``, ``hijax.VJPHiPrimitive``)."""
from ..core.callbacks import io_callback
from . import (checkify, compilation_cache, hijax, jet, mesh_utils, ode, pjit,  # noqa: F401
               random, shard_map, sparse)

__all__ = ["checkify", "compilation_cache", "hijax", "jet", "io_callback", "mesh_utils", "ode",
           "pjit", "random", "shard_map", "sparse"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

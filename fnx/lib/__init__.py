"""``jax.lib``: the bridge to the compiler runtime. fnx's runtime is its own backends
(``fnx.backends``); ``xla_bridge`` answers the questions programs ask it.

>>> fnx.lib.xla_bridge.get_backend().platform in ("cpu", "gpu")
True
"""
from . import xla_bridge

__all__ = ["xla_bridge"]

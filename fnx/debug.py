"""fnx.debug: printing, logging and host callbacks from inside jit, vmap and grad, and views of
how arrays are sharded.

>>> @fnx.jit
... def f(x):
...     fnx.debug.print("x is {}", x)
...     return x * 2
"""
from .core.debugging import (NaNError, debug_callback as callback, debug_log as log,  # noqa
                             debug_print as print)
from .core.sharding_debugging import (inspect_array_sharding, visualize_array_sharding,  # noqa
                                      visualize_sharding)
from .debugger import DebuggerQuit, breakpoint  # noqa: A004

__all__ = ["print", "log", "callback", "breakpoint", "DebuggerQuit", "NaNError",
           "inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

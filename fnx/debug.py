"""fnx.debug: printing and host callbacks from inside jit, vmap and grad.

>>> @fnx.jit
... def f(x):
...     fnx.debug.print("x is {}", x)
...     return x * 2
"""
from .core.debugging import NaNError, debug_callback as callback, debug_print as print  # noqa
from .debugger import DebuggerQuit, breakpoint  # noqa: A004

__all__ = ["print", "callback", "breakpoint", "DebuggerQuit", "NaNError"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

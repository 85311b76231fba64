"""fnx.debug: printing from inside jit, vmap and grad.

>>> @fnx.jit
... def f(x):
...     fnx.debug.print("x is {}", x)
...     return x * 2
"""
from .core.debugging import NaNError, debug_print as print  # noqa: A001

__all__ = ["print", "NaNError"]

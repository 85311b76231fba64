"""``jax.stages``: the ahead-of-time stages of ``jit`` (``Traced``, ``Lowered``,
``Compiled``), and ``Wrapped``, the type of a jitted function.

>>> compiled = fnx.jit(lambda x: x + 1).lower(fnx.ShapeDtypeStruct((2,), "float32")).compile()
>>> isinstance(compiled, Compiled)
True
"""
from .core.jit import Jitted as Wrapped  # noqa: F401
from .core.stages import Compiled, Lowered, Traced  # noqa: F401

__all__ = ["Compiled", "Lowered", "Traced", "Wrapped"]

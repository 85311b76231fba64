"""fnx.experimental.pjit: ``pjit``, JAX's former name for ``jit`` with shardings (the same
function, as in JAX today).

>>> from fnx.experimental.pjit import pjit
>>> pjit(lambda x: x * 2)(3.0)
Array(6., dtype=float32, weak_type=True)
"""
from ..core.jit import jit as pjit

__all__ = ["pjit"]

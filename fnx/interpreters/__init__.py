"""JAX's rule tables for user-defined primitives (``jax.interpreters.ad``, ``batching``,
``mlir``), over fnx's primitives: a rule registered here is the primitive's own rule.

>>> from fnx.interpreters import ad
>>> ad.primitive_jvps[fnx.lax.sin_p] is fnx.lax.sin_p.jvp
True
"""
from . import ad, batching, mlir  # noqa: F401

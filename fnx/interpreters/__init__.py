"""JAX's rule tables for user-defined primitives (``jax.interpreters.ad``, ``batching``,
``mlir``), over fnx's primitives: a rule registered here is the primitive's own rule; and
``partial_eval``, fnx's own (``fnx.core.partial_eval``), for programs that import it.

>>> from fnx.interpreters import ad
>>> ad.primitive_jvps[fnx.lax.sin_p] is fnx.lax.sin_p.jvp
True
"""
from ..core import partial_eval  # noqa: F401
from . import ad, batching, mlir  # noqa: F401

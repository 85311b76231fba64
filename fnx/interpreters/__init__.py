"""``jax.interpreters``: the modules of fnx's transformations under JAX's names, for programs
that import them (``from jax.interpreters import partial_eval as pe``). Their contents are fnx's
own (``fnx.core.ad``, ``batching``, ``partial_eval``), not JAX's internal API.

>>> from fnx.interpreters import batching
>>> batching.not_mapped is None
True
"""
from ..core import ad, batching, partial_eval  # noqa: F401

__all__ = ["ad", "batching", "partial_eval"]

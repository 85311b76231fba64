"""``jax.extend``: the parts of fnx's internals that libraries build on, under JAX's names —
``core`` (primitives, jaxprs), ``linear_util``, ``backend`` and ``random``.

>>> from fnx.extend.core import Primitive
>>> Primitive("my_op").name
'my_op'
"""
from . import backend, core, linear_util, random  # noqa: F401

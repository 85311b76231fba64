"""The primitives, each defined once with all of its rules, and thin functions that bind them,
one module per kind: ``base`` (the primitives every rule is written with), ``elementwise``,
``shapes``, ``reductions``, ``indexing``, ``products``, ``sorting``, and ``composed`` (functions
with no rules of their own). Backend impl tables live in fnx/backends and fnx/cuda.
"""
from .base import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .shapes import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .composed import *  # noqa: F401,F403
from .indexing import _clip_index  # noqa: F401  (the GPU's decompositions clip indices alike)

_KIND_MODULES = {"base", "elementwise", "shapes", "reductions", "indexing", "products", "sorting",
                 "composed"}
__all__ = [n for n in dir() if not n.startswith("_") and n not in _KIND_MODULES]

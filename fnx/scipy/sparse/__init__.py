"""fnx.scipy.sparse: jax.scipy.sparse's iterative solvers (``fnx.scipy.sparse.linalg``).

>>> from fnx.scipy.sparse.linalg import cg
>>> x, info = cg(lambda v: a @ v, b)
"""
from . import linalg  # noqa: F401

__all__ = ["linalg"]

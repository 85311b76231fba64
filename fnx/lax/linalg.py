"""fnx.lax.linalg: the linear-algebra primitives' functions, with JAX's signatures.

>>> import fnx.lax.linalg as lax_linalg
>>> L = lax_linalg.cholesky(a)
"""
from ..core.linalg_prims import cholesky, lu, qr, triangular_solve  # noqa: F401

__all__ = ["cholesky", "lu", "qr", "triangular_solve"]

"""fnx.lax.linalg: the linear-algebra primitives' functions, with JAX's signatures.

>>> import fnx.lax.linalg as lax_linalg
>>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
>>> L = lax_linalg.cholesky(a)
>>> v, w = lax_linalg.eigh(a)   # eigenvectors first, as in JAX
>>> w
Array([1.4384472, 5.561553 ], dtype=float32)
"""
from ..core.linalg_prims import cholesky, eigh, lu, qr, svd, triangular_solve  # noqa: F401

__all__ = ["cholesky", "eigh", "lu", "qr", "svd", "triangular_solve"]

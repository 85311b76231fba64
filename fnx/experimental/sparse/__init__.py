"""fnx.experimental.sparse: sparse arrays, as JAX's ``jax.experimental.sparse``.

``BCOO`` (batched coordinates) and ``BCSR`` (batched compressed rows) are pytrees of arrays
that go through ``jit``, ``vmap`` (over their batch dimensions) and ``grad`` (with respect to
their data). Their operators (``@``, ``*``, ``+``, ``.T``, ``.sum``, indexing) keep sparse
results sparse, and ``sparsify`` runs a function written for dense arrays on sparse ones.

>>> from fnx.experimental import sparse
>>> M = sparse.BCOO.fromdense(jnp.array([[0., 1., 0.], [2., 0., 3.]]))
>>> M
BCOO(float32[2, 3], nse=3)
>>> (M @ jnp.array([1., 2., 3.])).tolist()
[2.0, 11.0]
>>> (2 * M).sum(0).todense()
Array([4., 2., 6.], dtype=float32)
>>> fnx.jit(lambda M, v: M.T @ v)(M, jnp.ones(2))
Array([2., 1., 3.], dtype=float32)
"""
from ._base import (CuSparseEfficiencyWarning, JAXSparse, SparseEfficiencyError,
                    SparseEfficiencyWarning)
from .ad import grad, jacfwd, jacobian, jacrev, value_and_grad
from .api import empty, eye, todense
from .bcoo import (BCOO, bcoo_dynamic_slice, bcoo_eliminate_zeros, bcoo_extract,
                   bcoo_fromdense, bcoo_multiply_dense, bcoo_multiply_sparse, bcoo_reduce_sum,
                   bcoo_reshape, bcoo_slice, bcoo_sort_indices, bcoo_squeeze,
                   bcoo_sum_duplicates, bcoo_todense, bcoo_transpose, bcoo_update_layout)
from .bcoo_dot import bcoo_dot_general, bcoo_dot_general_sampled
from .bcsr import BCSR, bcsr_dot_general, bcsr_fromdense, bcsr_todense
from .random import random_bcoo
from .transform import sparsify

__all__ = [
    "BCOO", "BCSR", "CuSparseEfficiencyWarning", "JAXSparse", "SparseEfficiencyError",
    "SparseEfficiencyWarning", "bcoo_dot_general", "bcoo_dot_general_sampled",
    "bcoo_dynamic_slice", "bcoo_eliminate_zeros", "bcoo_extract", "bcoo_fromdense",
    "bcoo_multiply_dense", "bcoo_multiply_sparse", "bcoo_reduce_sum", "bcoo_reshape",
    "bcoo_slice", "bcoo_sort_indices", "bcoo_squeeze", "bcoo_sum_duplicates", "bcoo_todense",
    "bcoo_transpose", "bcoo_update_layout", "bcsr_dot_general", "bcsr_fromdense",
    "bcsr_todense", "empty", "eye", "grad", "jacfwd", "jacobian", "jacrev", "random_bcoo",
    "sparsify", "todense", "value_and_grad",
]

from ...core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

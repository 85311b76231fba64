"""BCSR: batched compressed sparse rows (JAX's ``jax.experimental.sparse.BCSR``).

A BCSR array of shape ``batch + (rows, cols) + dense`` stores ``data`` of shape
``batch + (nse,) + dense``, column ``indices`` of shape ``batch + (nse,)`` and ``indptr`` of shape
``batch + (rows + 1,)``: the entries of row ``r`` are ``indptr[r]:indptr[r + 1]``. Its
operations go through the equivalent BCOO array.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from ... import numpy as jnp
from ...core.errors import ShapeError
from ...tree_util import register_pytree_node_class
from ._base import JAXSparse
from .bcoo import BCOO, _batch_grids, bcoo_fromdense, bcoo_sort_indices
from .bcoo_dot import bcoo_dot_general


@register_pytree_node_class
class BCSR(JAXSparse):
    """A sparse matrix (or batch of matrices) in compressed-row format, built from
    ``(data, indices, indptr)`` and its ``shape``; ``BCSR.fromdense`` builds one from a dense
    array.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCSR.fromdense(jnp.array([[0., 2.], [3., 4.]]))
    >>> M
    BCSR(float32[2, 2], nse=3)
    >>> M.indptr, M.indices
    (Array([0, 1, 3], dtype=int32), Array([1, 0, 1], dtype=int32))
    >>> (M @ jnp.ones(2)).tolist()
    [2.0, 7.0]
    """

    def __init__(self, args, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices, indptr = (jnp.asarray(a) for a in args)
        shape = tuple(operator.index(d) for d in shape)
        n_batch = indices.ndim - 1
        n_dense = data.ndim - 1 - n_batch
        if (n_dense < 0 or len(shape) != n_batch + 2 + n_dense or indptr.ndim != n_batch + 1
                or indptr.shape[-1] != shape[n_batch] + 1
                or data.shape[n_batch] != indices.shape[-1]):
            raise ShapeError(f"BCSR data {data.dtype}{list(data.shape)}, indices "
                             f"{indices.dtype}{list(indices.shape)} and indptr "
                             f"{indptr.dtype}{list(indptr.shape)} do not describe an array of "
                             f"shape {shape} (data: batch + (nse,) + dense; indices: batch + "
                             f"(nse,); indptr: batch + (rows + 1,))")
        self.data, self.indices, self.indptr = data, indices, indptr
        self._tail = shape[n_batch:]
        self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)

    @property
    def shape(self):
        return tuple(self.indices.shape[:self.n_batch]) + self._tail

    nse = property(lambda self: self.indices.shape[-1])
    dtype = property(lambda self: self.data.dtype)
    n_batch = property(lambda self: self.indices.ndim - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), (self._tail, self.indices_sorted,
                                                        self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj._tail, obj.indices_sorted, obj.unique_indices = aux
        return obj

    @classmethod
    def fromdense(cls, mat, *, nse: int | None = None, index_dtype=np.int32, n_dense: int = 0,
                  n_batch: int = 0) -> "BCSR":
        """The BCSR array of ``mat``'s nonzero entries (see ``bcsr_fromdense``).

        >>> BCSR.fromdense(jnp.eye(2)).indptr
        Array([0, 1, 2], dtype=int32)
        """
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> "BCSR":
        """The BCSR array with the entries of ``arr`` (two sparse dimensions), row by row.

        >>> BCSR.from_bcoo(BCOO.fromdense(jnp.eye(2))).indices
        Array([0, 1], dtype=int32)
        """
        if arr.n_sparse != 2:
            raise ShapeError(f"BCSR.from_bcoo needs a BCOO array with 2 sparse dimensions; got "
                             f"n_sparse={arr.n_sparse} for shape {arr.shape}")
        arr = arr if arr.indices_sorted else bcoo_sort_indices(arr)
        rows, cols = arr.indices[..., 0], arr.indices[..., 1]
        n_rows, nb = arr.shape[arr.n_batch], arr.n_batch
        grids = _batch_grids(arr.shape[:nb], arr.nse, rows.dtype)
        counts = jnp.zeros(arr.shape[:nb] + (n_rows + 1,), rows.dtype)
        counts = counts.at[tuple(grids) + (rows + 1,)].add(1, mode="drop")
        indptr = jnp.cumsum(counts, axis=-1).astype(rows.dtype)
        return cls((arr.data, cols, indptr), shape=arr.shape, indices_sorted=True,
                   unique_indices=arr.unique_indices)

    def to_bcoo(self) -> BCOO:
        """The same array as BCOO (rows read off ``indptr``; entries past ``indptr[-1]``
        become padding).

        >>> BCSR.fromdense(jnp.array([[0., 1.], [1., 0.]])).to_bcoo().indices.tolist()
        [[0, 1], [1, 0]]
        """
        nb, nse, n_rows = self.n_batch, self.nse, self._tail[0]
        grids = _batch_grids(self.shape[:nb], n_rows, self.indptr.dtype)
        marks = jnp.zeros(self.shape[:nb] + (nse + 1,), self.indptr.dtype)
        marks = marks.at[tuple(grids) + (self.indptr[..., 1:],)].add(1, mode="drop")
        rows = jnp.cumsum(marks, axis=-1)[..., :nse].astype(self.indices.dtype)
        indices = jnp.stack([rows, self.indices.astype(rows.dtype)], axis=-1)
        return BCOO((self.data, indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    def todense(self):
        """The dense array.

        >>> BCSR.fromdense(jnp.array([[0., 1.], [2., 0.]])).todense().tolist()
        [[0.0, 1.0], [2.0, 0.0]]
        """
        return self.to_bcoo().todense()

    def transpose(self, *args, **kwargs):
        raise NotImplementedError("BCSR.transpose is not supported (JAX has none either): "
                                  "transpose its to_bcoo()")

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> "BCSR":
        """The matrix with each coordinate stored once (see ``BCOO.sum_duplicates``).

        >>> M = BCSR((jnp.array([1., 2.]), jnp.array([0, 0]), jnp.array([0, 2])), shape=(1, 1))
        >>> M.sum_duplicates().data
        Array([3.], dtype=float32)
        """
        return BCSR.from_bcoo(self.to_bcoo().sum_duplicates(nse=nse, remove_zeros=remove_zeros))


def bcsr_fromdense(mat, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype=np.int32) -> BCSR:
    """The BCSR array of ``mat``'s nonzero entries (two sparse dimensions after ``n_batch``
    batch ones); ``nse`` as in ``bcoo_fromdense``.

    >>> from fnx.experimental import sparse
    >>> sparse.bcsr_fromdense(jnp.array([[1., 0.], [0., 0.]]), nse=2).indptr
    Array([0, 1, 1], dtype=int32)
    """
    mat = jnp.asarray(mat)
    if mat.ndim - n_batch - n_dense != 2:
        raise ShapeError(f"bcsr_fromdense: an array of shape {mat.shape} with n_batch={n_batch} "
                         f"and n_dense={n_dense} does not have 2 sparse dimensions")
    return BCSR.from_bcoo(bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                         index_dtype=index_dtype))


def bcsr_todense(mat: BCSR):
    """The dense array that ``mat`` stores.

    >>> from fnx.experimental import sparse
    >>> sparse.bcsr_todense(sparse.BCSR.fromdense(jnp.eye(2))).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return mat.todense()


def bcsr_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None):
    """``lax.dot_general`` with BCSR operands (computed through BCOO).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCSR.fromdense(jnp.array([[1., 0.], [0., 2.]]))
    >>> sparse.bcsr_dot_general(M, jnp.ones(2), dimension_numbers=(([1], [0]), ([], [])))
    Array([1., 2.], dtype=float32)
    """
    as_bcoo = lambda x: x.to_bcoo() if isinstance(x, BCSR) else x  # noqa: E731
    out = bcoo_dot_general(as_bcoo(lhs), as_bcoo(rhs), dimension_numbers=dimension_numbers,
                           precision=precision, preferred_element_type=preferred_element_type)
    return BCSR.from_bcoo(out) if isinstance(out, BCOO) else out

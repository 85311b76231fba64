"""Constructors and conversions over every format: ``empty``, ``eye``, ``todense``."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...tree_util import tree_map
from ._base import JAXSparse
from .bcoo import BCOO, _bound, bcoo_fromdense
from .bcsr import BCSR

_FORMATS = {"bcoo": BCOO, "bcsr": BCSR}


def _format(sparse_format):
    if sparse_format not in _FORMATS:
        raise ValueError(f"sparse_format must be one of {sorted(_FORMATS)}, got "
                         f"{sparse_format!r}")
    return _FORMATS[sparse_format]


def empty(shape, dtype=None, index_dtype="int32", sparse_format: str = "bcoo", *,
          n_batch: int = 0, n_dense: int = 0, nse: int = 0):
    """An all-zero sparse array of ``shape`` (storing ``nse`` padding entries).

    >>> from fnx.experimental import sparse
    >>> sparse.empty((2, 3))
    BCOO(float32[2, 3], nse=0)
    """
    shape = tuple(shape)
    n_sparse = len(shape) - n_batch - n_dense
    if n_sparse < 0 or n_batch < 0 or n_dense < 0 or nse < 0:
        raise ValueError(f"empty: shape={shape}, n_batch={n_batch}, n_dense={n_dense}, "
                         f"nse={nse} do not fit")
    dtype = jnp.zeros((), dtype).dtype
    batch, sparse_shape = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
    data = jnp.zeros(batch + (nse,) + shape[n_batch + n_sparse:], dtype)
    indices = jnp.broadcast_to(_bound(sparse_shape, np.dtype(index_dtype)),
                               batch + (nse, n_sparse))
    out = BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)
    return out if sparse_format == "bcoo" else _format(sparse_format).from_bcoo(out)


def eye(N: int, M: int | None = None, k: int = 0, dtype=None, index_dtype="int32",
        sparse_format: str = "bcoo", *, n_batch: int = 0, n_dense: int = 0):
    """The ``N x M`` identity (ones on diagonal ``k``) as a sparse array.

    >>> from fnx.experimental import sparse
    >>> sparse.eye(3, k=1).todense()
    Array([[0., 1., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """
    M = N if M is None else M
    fmt = _format(sparse_format)
    size = min(N, M - k) if k >= 0 else min(N + k, M)
    if size <= 0:
        return empty((N, M), dtype, index_dtype, sparse_format, n_batch=n_batch,
                     n_dense=n_dense)
    if n_batch or n_dense:
        out = bcoo_fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch, n_dense=n_dense,
                             index_dtype=index_dtype)
    else:
        diag = np.arange(size)
        indices = np.stack([diag - min(k, 0), diag + max(k, 0)], axis=1).astype(index_dtype)
        out = BCOO((jnp.ones(size, dtype), jnp.asarray(indices)), shape=(N, M),
                   indices_sorted=True, unique_indices=True)
    return out if fmt is BCOO else BCSR.from_bcoo(out)


def todense(arr):
    """Every sparse array in the pytree ``arr`` made dense (other leaves as they are).

    >>> from fnx.experimental import sparse
    >>> sparse.todense({"m": sparse.eye(2), "x": jnp.ones(1)})["m"].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return tree_map(lambda x: x.todense() if isinstance(x, JAXSparse) else x, arr,
                    is_leaf=lambda x: isinstance(x, JAXSparse))

"""Random sparse arrays (JAX's ``sparse.random_bcoo``)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ... import numpy as jnp
from ... import random
from .bcoo import BCOO, _per_batch, bcoo_sort_indices


def random_bcoo(key, shape, *, dtype=None, indices_dtype=None, nse=0.2, n_batch: int = 0,
                n_dense: int = 0, unique_indices: bool = True, sorted_indices: bool = False,
                generator=random.uniform, **kwds) -> BCOO:
    """A BCOO array of ``shape`` with ``nse`` stored elements per batch (a fraction of the
    sparse size when ``0 < nse < 1``) at random coordinates (distinct unless
    ``unique_indices=False``), their values drawn by ``generator(key, shape, dtype, **kwds)``.

    >>> from fnx.experimental import sparse
    >>> M = sparse.random_bcoo(fnx.random.key(0), (4, 5), nse=0.25)
    >>> M, int((M.todense() != 0).sum())
    (BCOO(float32[4, 5], nse=5), 5)
    """
    shape = tuple(operator.index(d) for d in shape)
    n_sparse = len(shape) - n_batch - n_dense
    if n_sparse < 0 or n_batch < 0 or n_dense < 0:
        raise ValueError(f"random_bcoo: n_batch={n_batch}, n_dense={n_dense} do not fit shape "
                         f"{shape}")
    batch, sparse_shape = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
    dense = shape[n_batch + n_sparse:]
    size = math.prod(sparse_shape)
    if 0 < nse < 1:
        nse = int(math.ceil(nse * size))
    nse = operator.index(nse)
    if unique_indices and nse > size:
        raise ValueError(f"random_bcoo: nse={nse} distinct coordinates do not fit sparse shape "
                         f"{sparse_shape}")
    indices_dtype = np.dtype(indices_dtype or np.int32)
    data_key, index_key = random.split(key)
    data = generator(data_key, batch + (nse,) + dense, dtype or jnp.zeros(()).dtype, **kwds)

    def coordinates(k):
        flat = random.choice(k, size, (nse,), replace=not unique_indices)
        cols, rest = [], flat
        for d in reversed(sparse_shape):
            cols.append(rest % d)
            rest = rest // d
        return jnp.stack(cols[::-1], axis=-1).astype(indices_dtype) if cols else \
            jnp.zeros((nse, 0), indices_dtype)
    keys = index_key
    if batch:
        keys = random.split(index_key, math.prod(batch))
        keys = keys.reshape(batch + keys.shape[1:])
    indices = _per_batch(coordinates, n_batch)(keys)
    out = BCOO((data, indices), shape=shape, unique_indices=unique_indices)
    return bcoo_sort_indices(out) if sorted_indices else out

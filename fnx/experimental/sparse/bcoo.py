"""BCOO: batched coordinate format (JAX's ``jax.experimental.sparse.BCOO``).

A BCOO array of shape ``batch + sparse + dense`` stores ``data`` of shape
``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)``: entry ``e`` of
batch ``b`` holds the block ``data[b, e]`` at sparse coordinates ``indices[b, e]``. Duplicate
coordinates add up; coordinates out of bounds mark padding and count as zero.

Every operation here is a composition of fnx operations (gathers, scatter-adds, sorts,
products), so ``jit``, ``grad`` (with respect to ``data``) and ``vmap`` go through them with no
rules of their own. The format is a pytree whose leaves are ``(data, indices)``; its batch
shape is read from the leaves, so ``vmap`` over a batch dimension hands the function a BCOO
with one batch dimension fewer, as in JAX.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Sequence

import numpy as np

from ... import lax
from ... import numpy as jnp
from ...core.api import vmap
from ...core.core import Tracer, concrete_or_error
from ...core.errors import ShapeError
from ...tree_util import register_pytree_node_class
from ._base import JAXSparse, SparseEfficiencyError, SparseEfficiencyWarning


@register_pytree_node_class
class BCOO(JAXSparse):
    """A sparse array in batched coordinate format, built from ``(data, indices)`` and its
    ``shape``; ``BCOO.fromdense`` builds one from a dense array.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[0., 2., 0.], [1., 0., 4.]]))
    >>> M
    BCOO(float32[2, 3], nse=3)
    >>> M.indices
    Array([[0, 1],
           [1, 0],
           [1, 2]], dtype=int32)
    >>> (M @ jnp.ones(3)).tolist(), (M.T @ jnp.ones(2)).tolist()
    ([2.0, 5.0], [1.0, 2.0, 4.0])
    >>> sparse.BCOO((jnp.array([1., 3.]), jnp.array([[0, 0], [1, 1]])), shape=(2, 2)).todense()
    Array([[1., 0.],
           [0., 3.]], dtype=float32)
    """

    def __init__(self, args, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices = args
        data, indices = jnp.asarray(data), jnp.asarray(indices)
        shape = tuple(operator.index(d) for d in shape)
        n_batch, n_sparse, n_dense = _validate(data, indices, shape)
        batch = shape[:n_batch]
        if data.shape[:n_batch] != batch:
            data = jnp.broadcast_to(data, batch + data.shape[n_batch:])
        if indices.shape[:n_batch] != batch:
            indices = jnp.broadcast_to(indices, batch + indices.shape[n_batch:])
        self.data, self.indices = data, indices
        self._tail = shape[n_batch:]
        self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)

    # the batch shape lives in the leaves, so that vmap can take batch dimensions away
    @property
    def shape(self) -> tuple[int, ...]:
        n_batch = self.n_batch
        batch = np.broadcast_shapes(self.data.shape[:n_batch], self.indices.shape[:n_batch])
        return tuple(batch) + self._tail

    nse = property(lambda self: self.indices.shape[-2])
    dtype = property(lambda self: self.data.dtype)
    n_batch = property(lambda self: self.indices.ndim - 2)
    n_sparse = property(lambda self: self.indices.shape[-1])
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)

    def tree_flatten(self):
        return (self.data, self.indices), (self._tail, self.indices_sorted, self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj._tail, obj.indices_sorted, obj.unique_indices = aux
        return obj

    @classmethod
    def fromdense(cls, mat, *, nse: int | None = None, index_dtype=np.int32, n_dense: int = 0,
                  n_batch: int = 0) -> "BCOO":
        """The BCOO array holding ``mat``'s nonzero entries (see ``bcoo_fromdense``).

        >>> BCOO.fromdense(jnp.array([[1., 0.], [0., 2.]]), n_batch=1).data
        Array([[1.],
               [2.]], dtype=float32)
        """
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense: int = 0,
                          n_batch: int = 0) -> "BCOO":
        """A BCOO array from a ``scipy.sparse`` matrix (converted through its COO form).

        >>> import scipy.sparse
        >>> BCOO.from_scipy_sparse(scipy.sparse.eye(2)).todense().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(index_dtype or np.int32)
        out = cls((jnp.asarray(coo.data), jnp.asarray(indices)), shape=coo.shape)
        return bcoo_update_layout(out, n_batch=n_batch, n_dense=n_dense)

    def todense(self):
        """The dense array (see ``bcoo_todense``).

        >>> BCOO((jnp.array([5.]), jnp.array([[1]])), shape=(3,)).todense()
        Array([0., 5., 0.], dtype=float32)
        """
        return bcoo_todense(self)

    def transpose(self, axes: Sequence[int] | None = None) -> "BCOO":
        """The array with its axes permuted (reversed by default), as ``jnp.transpose``.

        >>> BCOO.fromdense(jnp.array([[0., 1.], [0., 0.]])).T.todense().tolist()
        [[0.0, 0.0], [1.0, 0.0]]
        """
        perm = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        return bcoo_transpose(self, permutation=perm)

    def update_layout(self, *, n_batch: int | None = None, n_dense: int | None = None,
                      on_inefficient: str | None = "error") -> "BCOO":
        """The same array stored with ``n_batch`` batch and ``n_dense`` dense dimensions (see
        ``bcoo_update_layout``).

        >>> BCOO.fromdense(jnp.eye(2), n_batch=1).update_layout(n_batch=0).indices.tolist()
        [[0, 0], [1, 1]]
        """
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                                  on_inefficient=on_inefficient)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> "BCOO":
        """The array with each coordinate stored once, sorted; with ``remove_zeros``, stored
        zeros are dropped as well (not differentiable). ``nse`` fixes the number of stored
        elements (needed under ``jit``).

        >>> M = BCOO((jnp.array([1., 2., 0.]), jnp.array([[0], [0], [1]])), shape=(2,))
        >>> M.sum_duplicates().data, M.sum_duplicates(remove_zeros=False).data
        (Array([3.], dtype=float32), Array([3., 0.], dtype=float32))
        """
        if remove_zeros:
            return bcoo_eliminate_zeros(self, nse=nse)
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self) -> "BCOO":
        """The array with its entries sorted by coordinate (within each batch).

        >>> BCOO((jnp.array([1., 2.]), jnp.array([[1], [0]])), shape=(2,)).sort_indices().data
        Array([2., 1.], dtype=float32)
        """
        return bcoo_sort_indices(self)


# ---------------------------------------------------------------------------------------------
# Checks and helpers


def _validate(data, indices, shape):
    if indices.ndim < 2:
        raise ShapeError(f"BCOO indices must have shape batch + (nse, n_sparse); got "
                         f"indices {indices.dtype}{list(indices.shape)}")
    if not jnp.issubdtype(indices.dtype, jnp.integer):
        raise TypeError(f"BCOO indices must be integers; got {indices.dtype}")
    n_batch, (nse, n_sparse) = indices.ndim - 2, indices.shape[-2:]
    n_dense = data.ndim - 1 - n_batch
    if n_dense < 0 or n_batch + n_sparse + n_dense != len(shape):
        raise ShapeError(f"BCOO data {data.dtype}{list(data.shape)} and indices "
                         f"{indices.dtype}{list(indices.shape)} do not describe an array of "
                         f"shape {tuple(shape)} (data: batch + (nse,) + dense; indices: "
                         f"batch + (nse, n_sparse))")
    batch, dense = shape[:n_batch], shape[n_batch + n_sparse:]
    ok = (data.shape[n_batch] == nse and tuple(data.shape[n_batch + 1:]) == dense
          and all(d in (1, b) for d, b in zip(data.shape[:n_batch], batch))
          and all(i in (1, b) for i, b in zip(indices.shape[:n_batch], batch)))
    if not ok:
        raise ShapeError(f"BCOO data {data.dtype}{list(data.shape)} and indices "
                         f"{indices.dtype}{list(indices.shape)} do not match shape "
                         f"{tuple(shape)} with n_batch={n_batch}, n_sparse={n_sparse}, "
                         f"n_dense={n_dense}")
    return n_batch, n_sparse, n_dense


def _parts(mat):
    """``(batch_shape, sparse_shape, dense_shape)``."""
    nb, ns = mat.n_batch, mat.n_sparse
    return mat.shape[:nb], mat.shape[nb:nb + ns], mat.shape[nb + ns:]


def _like(mat, data, indices=None, **flags):
    """A BCOO with ``mat``'s coordinates (or ``indices``) and new ``data``."""
    same = indices is None
    indices = mat.indices if same else indices
    shape = (np.broadcast_shapes(data.shape[:indices.ndim - 2], indices.shape[:-2])
             + mat._tail[:indices.shape[-1]] + tuple(data.shape[indices.ndim - 1:]))
    flags.setdefault("indices_sorted", mat.indices_sorted if same else False)
    flags.setdefault("unique_indices", mat.unique_indices if same else False)
    return BCOO((data, indices), shape=shape, **flags)


def _per_batch(fn, n_batch):
    """``fn`` (written for one batch element) mapped over ``n_batch`` leading axes."""
    for _ in range(n_batch):
        fn = vmap(fn)
    return fn


def _batch_grids(batch_shape, nse, dtype):
    """One integer array per batch dimension, of shape ``batch + (nse,)``: each entry's
    position along that dimension."""
    full = tuple(batch_shape) + (nse,)
    return [lax.broadcasted_iota(dtype, full, d) for d in range(len(batch_shape))]


def _in_bounds(indices, sparse_shape):
    """Which entries have all coordinates inside ``sparse_shape`` (the rest is padding)."""
    bound = jnp.asarray(np.array(sparse_shape, dtype=np.int64), indices.dtype) \
        if sparse_shape else jnp.zeros((0,), indices.dtype)
    return jnp.all((indices >= 0) & (indices < bound), axis=-1)


def _expand_mask(mask, data):
    return mask.reshape(mask.shape + (1,) * (data.ndim - mask.ndim))


def _static_nse(value, what):
    return int(concrete_or_error(value, f"the number of stored elements of {what} (pass nse= "
                                        f"under jit and other transformations)"))


def _maybe_inefficient(on_inefficient, message):
    if on_inefficient == "error":
        raise SparseEfficiencyError(message + " Pass on_inefficient='warn' or None to proceed.")
    if on_inefficient == "warn":
        warnings.warn(message, SparseEfficiencyWarning, stacklevel=3)
    elif on_inefficient is not None:
        raise ValueError(f"on_inefficient must be 'error', 'warn' or None, got "
                         f"{on_inefficient!r}")


# ---------------------------------------------------------------------------------------------
# Conversions


def bcoo_fromdense(mat, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype=np.int32) -> BCOO:
    """The BCOO array of ``mat``'s nonzero entries, with ``n_batch`` leading batch and
    ``n_dense`` trailing dense dimensions. ``nse`` (the stored elements per batch) defaults to
    the largest count of nonzeros, which needs a concrete ``mat``: pass it under ``jit``;
    extra slots are padding (zero data at out-of-bounds coordinates).

    >>> from fnx.experimental import sparse
    >>> M = sparse.bcoo_fromdense(jnp.array([0., 3., 0., 4.]), nse=3)
    >>> M.data, M.indices.ravel()
    (Array([3., 4., 0.], dtype=float32), Array([1, 3, 4], dtype=int32))
    """
    mat = jnp.asarray(mat)
    n_sparse = mat.ndim - n_batch - n_dense
    if n_batch < 0 or n_dense < 0 or n_sparse < 0:
        raise ValueError(f"bcoo_fromdense: n_batch={n_batch} and n_dense={n_dense} do not fit "
                         f"an array of shape {mat.shape}")
    sparse_shape = mat.shape[n_batch:n_batch + n_sparse]
    mask = mat != 0
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(mat.ndim - n_dense, mat.ndim)))
    if nse is None:
        counts = jnp.sum(mask, axis=tuple(range(n_batch, mask.ndim)))
        nse = _static_nse(jnp.max(counts) if counts.size else jnp.zeros((), counts.dtype),
                          "bcoo_fromdense")
    nse = operator.index(nse)

    def one(m, mk):
        if n_sparse == 0:       # one block, stored once (or not at all when nse is 0)
            data = jnp.broadcast_to(m[None], (nse,) + m.shape)
            return data * (jnp.arange(nse) < 1).reshape((nse,) + (1,) * m.ndim), \
                jnp.zeros((nse, 0), index_dtype)
        coords = jnp.nonzero(mk, size=nse, fill_value=tuple(sparse_shape))
        data = m.at[coords].get(mode="fill", fill_value=0)
        return data, jnp.stack(coords, axis=-1).astype(index_dtype)
    data, indices = _per_batch(one, n_batch)(mat, mask)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_todense(mat: BCOO):
    """The dense array that ``mat`` stores (duplicates added, padding dropped).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO((jnp.array([1., 2., 7.]), jnp.array([[0], [0], [5]])), shape=(3,))
    >>> sparse.bcoo_todense(M)
    Array([3., 0., 0.], dtype=float32)
    """
    flat = _unbatched(mat)
    shape = flat.shape
    if flat.n_sparse == 0:
        return jnp.sum(flat.data, axis=0) + jnp.zeros(shape, flat.dtype)
    coords = tuple(flat.indices[:, i] for i in range(flat.n_sparse))
    return jnp.zeros(shape, flat.dtype).at[coords].add(flat.data, mode="drop")


def _unbatched(mat: BCOO) -> BCOO:
    return bcoo_update_layout(mat, n_batch=0, on_inefficient=None)


def bcoo_update_layout(mat: BCOO, *, n_batch: int | None = None, n_dense: int | None = None,
                       on_inefficient: str | None = "error") -> BCOO:
    """``mat`` stored with ``n_batch`` batch and ``n_dense`` dense dimensions. Fewer batch or
    dense dimensions cost nothing extra; more of them (of size above 1) store explicit zeros,
    which raises ``SparseEfficiencyError`` unless ``on_inefficient`` is ``"warn"`` or None.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[1., 0.], [0., 2.]]))
    >>> B = sparse.bcoo_update_layout(M, n_batch=1, on_inefficient=None)
    >>> B, bool((B.todense() == M.todense()).all())
    (BCOO(float32[2, 2], nse=2, n_batch=1), True)
    """
    nb = mat.n_batch if n_batch is None else operator.index(n_batch)
    nd = mat.n_dense if n_dense is None else operator.index(n_dense)
    if nb < 0 or nd < 0 or nb + nd > mat.ndim:
        raise ValueError(f"bcoo_update_layout: n_batch={nb}, n_dense={nd} do not fit an array "
                         f"of shape {mat.shape}")
    if nb > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch:nb]):
        _maybe_inefficient(on_inefficient, f"bcoo_update_layout: n_batch {mat.n_batch} -> {nb} "
                           f"stores {math.prod(mat.shape[mat.n_batch:nb])} times the entries.")
    if nd > mat.n_dense and any(d > 1 for d in mat.shape[mat.ndim - nd:mat.ndim - mat.n_dense]):
        _maybe_inefficient(on_inefficient, f"bcoo_update_layout: n_dense {mat.n_dense} -> {nd} "
                           f"stores dense blocks of mostly zeros.")
    if nb < mat.n_batch:
        mat = _fold_batch(mat, nb)
    if nd < mat.n_dense:
        mat = _unfold_dense(mat, nd)
    if nd > mat.n_dense:
        mat = _fold_dense(mat, nd)
    if nb > mat.n_batch:
        mat = _unfold_batch(mat, nb)
    return mat


def _fold_batch(mat, nb):
    """Batch dimensions ``nb:`` become leading sparse dimensions."""
    batch, _, dense = _parts(mat)
    kept, folded = batch[:nb], batch[nb:]
    grids = _batch_grids(folded, mat.nse, mat.indices.dtype)
    grids = [jnp.broadcast_to(g, batch + (mat.nse,)) for g in grids]
    indices = jnp.concatenate([jnp.stack(grids, axis=-1), mat.indices], axis=-1)
    nse = math.prod(folded) * mat.nse
    indices = indices.reshape(kept + (nse, indices.shape[-1]))
    data = mat.data.reshape(kept + (nse,) + dense)
    return BCOO((data, indices), shape=mat.shape,
                indices_sorted=mat.indices_sorted and not folded, unique_indices=mat.unique_indices)


def _unfold_dense(mat, nd):
    """Leading dense dimensions (all but the last ``nd``) become trailing sparse dimensions."""
    batch, _, dense = _parts(mat)
    moved, kept = dense[:len(dense) - nd], dense[len(dense) - nd:]
    k = math.prod(moved)
    data = mat.data.reshape(batch + (mat.nse * k,) + kept)
    grid = np.stack(np.unravel_index(np.arange(k), moved), axis=-1) if moved else np.zeros((1, 0))
    grid = jnp.asarray(grid.astype(np.dtype(mat.indices.dtype)))
    old = jnp.broadcast_to(mat.indices[..., :, None, :], batch + (mat.nse, k, mat.n_sparse))
    new = jnp.broadcast_to(grid, batch + (mat.nse, k, len(moved)))
    indices = jnp.concatenate([old, new], axis=-1).reshape(batch + (mat.nse * k,
                                                                    mat.n_sparse + len(moved)))
    return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def _fold_dense(mat, nd):
    """Trailing sparse dimensions become leading dense ones: each block is one-hot along them."""
    batch, sparse_shape, dense = _parts(mat)
    k = nd - mat.n_dense
    moved = sparse_shape[len(sparse_shape) - k:]
    data = mat.data
    for j, size in enumerate(moved):
        col = mat.indices[..., mat.n_sparse - k + j]
        onehot = (col[..., None] == jnp.arange(size, dtype=col.dtype))
        onehot = onehot.reshape(col.shape + (1,) * j + (size,) + (1,) * len(dense))
        data = jnp.expand_dims(data, mat.n_batch + 1 + j) * onehot.astype(data.dtype)
    indices = mat.indices[..., :mat.n_sparse - k]
    valid = _in_bounds(mat.indices[..., :mat.n_sparse - k], sparse_shape[:len(sparse_shape) - k])
    data = data * _expand_mask(valid, data).astype(data.dtype)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted)


def _unfold_batch(mat, nb):
    """Leading sparse dimensions become batch dimensions: each new batch position keeps the
    entries whose coordinates fall on it (the rest become padding there)."""
    batch, sparse_shape, dense = _parts(mat)
    k = nb - mat.n_batch
    new = sparse_shape[:k]
    grids = _batch_grids(new, mat.nse, mat.indices.dtype)        # new + (nse,)
    lead = (slice(None),) * mat.n_batch
    expand = lead + (None,) * k
    match = jnp.ones(batch + new + (mat.nse,), bool)
    for j, g in enumerate(grids):
        match = match & (mat.indices[expand + (Ellipsis, j)] == g)
    rest = sparse_shape[k:]
    fill = jnp.asarray(np.array(rest, dtype=np.int64), mat.indices.dtype) if rest else \
        jnp.zeros((0,), mat.indices.dtype)
    indices = jnp.where(match[..., None], mat.indices[expand + (Ellipsis, slice(k, None))], fill)
    data = jnp.where(_expand_mask(match, mat.data[expand]), mat.data[expand], 0)
    return BCOO((data.astype(mat.dtype), indices), shape=mat.shape,
                indices_sorted=mat.indices_sorted)


# ---------------------------------------------------------------------------------------------
# Duplicates and order


def _sort_one(data, indices):
    n = indices.shape[-1]
    if n == 0:
        return data, indices
    cols = [indices[:, i] for i in range(n)]
    *cols, perm = lax.sort((*cols, jnp.arange(indices.shape[0], dtype=indices.dtype)),
                           num_keys=n)
    return data[perm], jnp.stack(cols, axis=-1)


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """``mat`` with the entries of each batch sorted by coordinate (padding last).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO((jnp.array([1., 2.]), jnp.array([[1], [0]])), shape=(2,))
    >>> sparse.bcoo_sort_indices(M).indices.ravel()
    Array([0, 1], dtype=int32)
    """
    _, sparse_shape, _ = _parts(mat)
    valid = _in_bounds(mat.indices, sparse_shape)
    indices = jnp.where(valid[..., None], mat.indices, _bound(sparse_shape, mat.indices.dtype))
    data, indices = _per_batch(_sort_one, mat.n_batch)(mat.data, indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)


def _bound(sparse_shape, dtype):
    return jnp.asarray(np.array(sparse_shape, dtype=np.int64).reshape(len(sparse_shape)), dtype)


def _segments(indices, sparse_shape):
    """For sorted ``indices`` (padding at the bound): each entry's group of equal coordinates,
    and which groups are real entries."""
    if indices.shape[0] == 0:
        empty = jnp.zeros((0,), jnp.int32)
        return empty, empty.astype(bool)
    differs = jnp.any(indices[1:] != indices[:-1], axis=-1)
    starts = jnp.concatenate([jnp.ones((1,), bool), differs])
    segment = jnp.cumsum(starts.astype(jnp.int32)) - 1
    return segment, starts & _in_bounds(indices, sparse_shape)


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """``mat`` with each coordinate stored once (their data added), sorted. ``nse`` defaults to
    the largest count of distinct coordinates per batch, which needs concrete indices.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO((jnp.array([1., 2., 3.]), jnp.array([[0, 1], [0, 1], [1, 0]])),
    ...                 shape=(2, 2))
    >>> S = sparse.bcoo_sum_duplicates(M)
    >>> S.data, S.indices.tolist()
    (Array([3., 3.], dtype=float32), [[0, 1], [1, 0]])
    """
    _, sparse_shape, dense = _parts(mat)
    sorted_mat = bcoo_sort_indices(mat)
    if nse is None:
        count = _per_batch(lambda i: jnp.sum(_segments(i, sparse_shape)[1]),
                           mat.n_batch)(sorted_mat.indices)
        nse = _static_nse(jnp.max(count) if count.size else jnp.zeros((), jnp.int32),
                          "bcoo_sum_duplicates")
    nse = operator.index(nse)
    bound = _bound(sparse_shape, mat.indices.dtype)

    def one(data, indices):
        segment, real = _segments(indices, sparse_shape)
        valid = _in_bounds(indices, sparse_shape)
        target = jnp.where(valid, segment, nse)            # padding goes nowhere
        out_data = jnp.zeros((nse,) + dense, data.dtype).at[target].add(data, mode="drop")
        out_idx = jnp.broadcast_to(bound, (nse, len(sparse_shape)))
        out_idx = out_idx.at[target].set(indices, mode="drop")
        return out_data, out_idx
    data, indices = _per_batch(one, mat.n_batch)(sorted_mat.data, sorted_mat.indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat: BCOO, nse: int | None = None) -> BCOO:
    """``mat`` without its stored zeros, duplicates summed (see ``bcoo_sum_duplicates``).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO((jnp.array([0., 2.]), jnp.array([[0], [1]])), shape=(2,))
    >>> sparse.bcoo_eliminate_zeros(M).nse
    1
    """
    _, sparse_shape, _ = _parts(mat)
    zero = jnp.all(mat.data == 0, axis=tuple(range(mat.n_batch + 1, mat.data.ndim)))
    indices = jnp.where(zero[..., None], _bound(sparse_shape, mat.indices.dtype), mat.indices)
    return bcoo_sum_duplicates(BCOO((mat.data, indices), shape=mat.shape), nse=nse)


# ---------------------------------------------------------------------------------------------
# Structure: transpose, reshape, slices, reductions


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """``mat`` with its axes permuted. A permutation that keeps batch, sparse and dense
    dimensions among themselves moves data and coordinates only; another one first stores
    ``mat`` with no batch or dense dimensions.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.arange(6.).reshape(2, 3))
    >>> sparse.bcoo_transpose(M, permutation=(1, 0)).shape
    (3, 2)
    """
    perm = tuple(operator.index(p) % max(mat.ndim, 1) for p in permutation)
    if sorted(perm) != list(range(mat.ndim)):
        raise ValueError(f"bcoo_transpose: {tuple(permutation)} is not a permutation of the "
                         f"{mat.ndim} axes of shape {mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    groups = [perm[:nb], perm[nb:nb + ns], perm[nb + ns:]]
    if (sorted(groups[0]) != list(range(nb)) or sorted(groups[1]) != list(range(nb, nb + ns))):
        flat = bcoo_update_layout(mat, n_batch=0, n_dense=0, on_inefficient=None)
        return bcoo_transpose(flat, permutation=perm)
    data_perm = groups[0] + (nb,) + tuple(p - ns + 1 for p in groups[2])
    data = jnp.transpose(mat.data, data_perm) if data_perm != tuple(range(mat.data.ndim)) \
        else mat.data
    cols = tuple(p - nb for p in groups[1])
    indices = mat.indices
    if groups[0] != tuple(range(nb)):
        indices = jnp.transpose(indices, groups[0] + (nb, nb + 1))
    if cols != tuple(range(ns)):
        indices = indices[..., np.array(cols, dtype=np.int32)]
    shape = tuple(mat.shape[p] for p in perm)
    return BCOO((data, indices), shape=shape, unique_indices=mat.unique_indices,
                indices_sorted=mat.indices_sorted and cols == tuple(range(ns))
                and groups[0] == tuple(range(nb)))


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """The sum of ``mat`` over ``axes``, a BCOO array (of shape ``()`` when every axis goes).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[1., 0.], [2., 3.]]))
    >>> sparse.bcoo_reduce_sum(M, axes=(0,)).todense()
    Array([3., 3.], dtype=float32)
    """
    axes = sorted({operator.index(a) % max(mat.ndim, 1) for a in axes})
    if any(a < mat.n_batch for a in axes):
        mat = bcoo_update_layout(mat, n_batch=min(axes), on_inefficient=None)
    nb, ns = mat.n_batch, mat.n_sparse
    _, sparse_shape, _ = _parts(mat)
    data = mat.data
    sparse_axes = [a - nb for a in axes if nb <= a < nb + ns]
    if sparse_axes:
        valid = _in_bounds(mat.indices, sparse_shape)
        data = jnp.where(_expand_mask(valid, data), data, 0).astype(mat.dtype)
    dense_axes = tuple(a - ns + 1 for a in axes if a >= nb + ns)
    if dense_axes:
        data = jnp.sum(data, axis=dense_axes)
    keep = [i for i in range(ns) if i not in sparse_axes]
    indices = mat.indices[..., np.array(keep, dtype=np.int32)] if sparse_axes else mat.indices
    shape = tuple(d for i, d in enumerate(mat.shape) if i not in axes)
    return BCOO((data, indices), shape=shape,
                indices_sorted=mat.indices_sorted and not sparse_axes,
                unique_indices=mat.unique_indices and not sparse_axes)


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
                 sharding=None) -> BCOO:
    """``mat`` reshaped to ``new_sizes`` (row-major, as ``lax.reshape``). Batch and dense
    dimensions that stay as they are keep their layout; otherwise the result stores its
    entries with no batch or dense dimensions.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[0., 1.], [2., 0.]]))
    >>> sparse.bcoo_reshape(M, new_sizes=(4,)).todense()
    Array([0., 1., 2., 0.], dtype=float32)
    """
    if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
        mat = bcoo_transpose(mat, permutation=dimensions)
    new_sizes = tuple(operator.index(d) for d in new_sizes)
    if math.prod(new_sizes) != mat.size:
        raise ShapeError(f"bcoo_reshape: cannot reshape {mat.shape} into {new_sizes}")
    batch, sparse_shape, dense = _parts(mat)
    nb, nd = len(batch), len(dense)
    keeps = (new_sizes[:nb] == batch and len(new_sizes) >= nb + nd
             and new_sizes[len(new_sizes) - nd:] == dense)
    if not keeps:
        mat = bcoo_update_layout(mat, n_batch=0, n_dense=0, on_inefficient=None)
        batch, sparse_shape, dense, nb, nd = (), mat.shape, (), 0, 0
    new_sparse = new_sizes[nb:len(new_sizes) - nd]
    if new_sparse == sparse_shape:
        return BCOO((mat.data, mat.indices), shape=new_sizes, indices_sorted=mat.indices_sorted,
                    unique_indices=mat.unique_indices)
    valid = _in_bounds(mat.indices, sparse_shape)
    linear = jnp.zeros(mat.indices.shape[:-1], mat.indices.dtype)
    for i, size in enumerate(sparse_shape):
        linear = linear * size + mat.indices[..., i]
    cols = []
    for size in reversed(new_sparse):
        cols.append(linear % size)
        linear = linear // size
    indices = jnp.stack(cols[::-1], axis=-1) if cols else \
        jnp.zeros(mat.indices.shape[:-1] + (0,), mat.indices.dtype)
    indices = jnp.where(valid[..., None], indices, _bound(new_sparse, mat.indices.dtype))
    return BCOO((mat.data, indices), shape=new_sizes, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    """``arr`` without the given axes of size 1.

    >>> from fnx.experimental import sparse
    >>> sparse.bcoo_squeeze(sparse.BCOO.fromdense(jnp.ones((1, 2))), dimensions=(0,)).shape
    (2,)
    """
    dims = {operator.index(d) % arr.ndim for d in dimensions}
    if any(arr.shape[d] != 1 for d in dims):
        raise ShapeError(f"bcoo_squeeze: dimensions {sorted(dims)} of shape {arr.shape} are not "
                         f"all of size 1")
    return bcoo_reshape(arr, new_sizes=tuple(d for i, d in enumerate(arr.shape) if i not in dims))


def _slice_sparse(mat, starts, sizes, strides):
    """Shift and mask the sparse coordinates for a slice; the data of dropped entries is 0."""
    batch, sparse_shape, _ = _parts(mat)
    nb, ns = len(batch), mat.n_sparse
    indices, keep = mat.indices, _in_bounds(mat.indices, sparse_shape)
    cols = []
    for i in range(ns):
        start, size, stride = starts[nb + i], sizes[nb + i], strides[nb + i]
        offset = indices[..., i] - jnp.asarray(start).astype(indices.dtype)
        keep = keep & (offset >= 0) & (offset < size * stride) & (offset % stride == 0)
        cols.append(offset // stride)
    new_sparse = tuple(sizes[nb:nb + ns])
    indices = jnp.stack(cols, axis=-1) if cols else indices
    indices = jnp.where(keep[..., None], indices, _bound(new_sparse, indices.dtype))
    data = jnp.where(_expand_mask(keep, mat.data), mat.data, 0).astype(mat.dtype)
    return data, indices


def bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
               strides: Sequence[int] | None = None) -> BCOO:
    """The slice ``start_indices:limit_indices:strides`` of ``mat`` (as ``lax.slice``): batch
    and dense dimensions are sliced, entries outside the slice become padding.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.arange(6.).reshape(2, 3))
    >>> sparse.bcoo_slice(M, start_indices=(1, 0), limit_indices=(2, 2)).todense()
    Array([[3., 4.]], dtype=float32)
    """
    n = mat.ndim
    starts = tuple(operator.index(s) for s in start_indices)
    limits = tuple(operator.index(s) for s in limit_indices)
    strides = (1,) * n if strides is None else tuple(operator.index(s) for s in strides)
    if not len(starts) == len(limits) == len(strides) == n:
        raise ShapeError(f"bcoo_slice: {n} start, limit and stride values are needed for shape "
                         f"{mat.shape}")
    sizes = tuple(max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(starts, limits, strides))
    nb, ns = mat.n_batch, mat.n_sparse
    data, indices = _slice_sparse(mat, starts, sizes, strides)
    b = [slice(lo, hi, st) for lo, hi, st in zip(starts[:nb], limits[:nb], strides[:nb])]
    dense = [slice(lo, hi, st) for lo, hi, st in
             zip(starts[nb + ns:], limits[nb + ns:], strides[nb + ns:])]
    data = data[tuple(b) + (slice(None),) + tuple(dense)]
    indices = indices[tuple(b)]
    return BCOO((data, indices), shape=sizes, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def bcoo_dynamic_slice(mat: BCOO, start_indices: Sequence, slice_sizes: Sequence[int]) -> BCOO:
    """The slice of ``slice_sizes`` at (possibly traced) ``start_indices``, clamped into the
    array as ``lax.dynamic_slice`` does.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.arange(4.))
    >>> sparse.bcoo_dynamic_slice(M, (jnp.array(3),), (2,)).todense()
    Array([2., 3.], dtype=float32)
    """
    sizes = tuple(operator.index(s) for s in slice_sizes)
    if len(start_indices) != mat.ndim or len(sizes) != mat.ndim:
        raise ShapeError(f"bcoo_dynamic_slice: {mat.ndim} start indices and sizes are needed for "
                         f"shape {mat.shape}")
    starts = [jnp.clip(jnp.asarray(s), 0, d - z) for s, d, z in zip(start_indices, mat.shape,
                                                                   sizes)]
    nb, ns = mat.n_batch, mat.n_sparse
    data, indices = _slice_sparse(mat, starts, sizes, (1,) * mat.ndim)
    if nb:
        zero = jnp.zeros((), starts[0].dtype)
        data = lax.dynamic_slice(data, starts[:nb] + [zero] * (data.ndim - nb),
                                 sizes[:nb] + data.shape[nb:])
        indices = lax.dynamic_slice(indices, starts[:nb] + [zero, zero],
                                    sizes[:nb] + indices.shape[nb:])
    if mat.n_dense:
        zero = jnp.zeros((), starts[0].dtype)
        data = lax.dynamic_slice(data, [zero] * (nb + 1) + starts[nb + ns:],
                                 data.shape[:nb + 1] + sizes[nb + ns:])
    return BCOO((data, indices), shape=sizes, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


# ---------------------------------------------------------------------------------------------
# Elementwise products


def _values_at(mat: BCOO, v):
    """``v`` (broadcastable to ``mat.shape``) read at each stored entry: an array of shape
    ``batch + (nse,) + dense`` (dense dimensions of size 1 where ``v`` has them)."""
    v = jnp.asarray(v)
    if np.broadcast_shapes(v.shape, mat.shape) != mat.shape:
        raise ShapeError(f"a sparse array of shape {mat.shape} can be multiplied only by arrays "
                         f"that broadcast to its shape; got {v.dtype}{list(v.shape)}")
    v = v.reshape((1,) * (mat.ndim - v.ndim) + v.shape)
    nb, ns = mat.n_batch, mat.n_sparse
    grids = _batch_grids(mat.shape[:nb], mat.nse, mat.indices.dtype)
    coords = [g if v.shape[i] > 1 else 0 for i, g in enumerate(grids)]
    coords += [mat.indices[..., i] if v.shape[nb + i] > 1 else 0 for i in range(ns)]
    full = mat.shape[:nb] + (mat.nse,)
    coords = [jnp.broadcast_to(jnp.asarray(c, mat.indices.dtype), full) for c in coords]
    if not coords:
        return v[None]
    return v.at[tuple(coords)].get(mode="fill", fill_value=0)


def bcoo_multiply_dense(sp_mat: BCOO, v):
    """The data of the elementwise product of ``sp_mat`` and a dense ``v`` that broadcasts to
    its shape (the product keeps ``sp_mat``'s coordinates).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[0., 2.], [3., 0.]]))
    >>> sparse.bcoo_multiply_dense(M, jnp.array([10., 100.]))
    Array([200.,  30.], dtype=float32)
    """
    v = jnp.asarray(v)
    if v.ndim == 0:
        return sp_mat.data * v
    return sp_mat.data * _values_at(sp_mat, v)


def bcoo_extract(sparr: BCOO, arr, *, assume_unique: bool | None = None) -> BCOO:
    """The entries of dense ``arr`` at ``sparr``'s coordinates, as a BCOO array with those
    coordinates (each coordinate read once: duplicates are summed first unless
    ``assume_unique``).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([1., 0., 1.]))
    >>> sparse.bcoo_extract(M, jnp.array([5., 6., 7.])).data
    Array([5., 7.], dtype=float32)
    """
    arr = jnp.asarray(arr)
    if arr.shape != sparr.shape:
        raise ShapeError(f"bcoo_extract: arr {arr.dtype}{list(arr.shape)} must have the sparse "
                         f"array's shape {sparr.shape}")
    unique = sparr.unique_indices if assume_unique is None else assume_unique
    if not unique:
        sparr = bcoo_sum_duplicates(sparr, nse=sparr.nse)
    data = jnp.broadcast_to(_values_at(sparr, arr), sparr.data.shape)
    return _like(sparr, data, unique_indices=True)


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """The elementwise product of two sparse arrays of one shape, with ``lhs``'s coordinates:
    each entry of ``lhs`` times the sum of ``rhs``'s entries at its coordinate.

    >>> from fnx.experimental import sparse
    >>> a = sparse.BCOO.fromdense(jnp.array([1., 2., 0.]))
    >>> b = sparse.BCOO.fromdense(jnp.array([0., 5., 6.]))
    >>> sparse.bcoo_multiply_sparse(a, b).todense()
    Array([ 0., 10.,  0.], dtype=float32)
    """
    if lhs.shape != rhs.shape:
        raise ShapeError(f"bcoo_multiply_sparse: shapes {lhs.shape} and {rhs.shape} differ")
    dtype = jnp.result_type(lhs.dtype, rhs.dtype)
    nd = min(lhs.n_dense, rhs.n_dense)
    a = bcoo_update_layout(lhs, n_batch=0, n_dense=nd, on_inefficient=None)
    b = bcoo_update_layout(rhs, n_batch=0, n_dense=nd, on_inefficient=None)
    valid = _in_bounds(b.indices, b.shape[:b.n_sparse])
    match = jnp.all(a.indices[:, None, :] == b.indices[None, :, :], axis=-1) & valid[None, :]
    flat_b = b.data.reshape(b.nse, -1).astype(dtype)
    at_a = (match.astype(dtype) @ flat_b).reshape(a.data.shape)
    return BCOO((a.data.astype(dtype) * at_a, a.indices), shape=a.shape,
                indices_sorted=a.indices_sorted, unique_indices=a.unique_indices)

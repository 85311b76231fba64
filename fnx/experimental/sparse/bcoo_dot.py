"""``bcoo_dot_general``: products of BCOO arrays with dense ones (on either side) and with each
other, with ``lax.dot_general``'s dimension numbers.

A sparse-times-dense product reads, for each stored entry, the slice of the dense operand at
the entry's coordinates along the dimensions it pairs with (a gather), multiplies it by the
entry's dense block (one batched ``dot_general``), and adds the result into the output at the
entry's remaining coordinates (a scatter-add). All three are fnx operations, so the product is
differentiable in the sparse data and the dense operand, and batches under ``vmap``.
"""
from __future__ import annotations

import operator

from ... import lax
from ... import numpy as jnp
from ...core.errors import ShapeError
from .bcoo import BCOO, _in_bounds, _unbatched, _values_at, bcoo_update_layout


def _normalize(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(operator.index(d) for d in x) for x in (lc, rc, lb, rb))
    return (lc, rc), (lb, rb)


def _check(lhs_shape, rhs_shape, dims):
    (lc, rc), (lb, rb) = dims
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ShapeError(f"bcoo_dot_general: dimension numbers {dims} pair unequal numbers of "
                         f"dimensions")
    for l, r in list(zip(lc, rc)) + list(zip(lb, rb)):
        if not (0 <= l < len(lhs_shape) and 0 <= r < len(rhs_shape)) \
                or lhs_shape[l] != rhs_shape[r]:
            raise ShapeError(f"bcoo_dot_general: dimension {l} of lhs shape {lhs_shape} and "
                             f"dimension {r} of rhs shape {rhs_shape} must have the same size "
                             f"(dimension_numbers={dims})")


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
    """``lax.dot_general`` where either operand (or both) is a BCOO array. With one dense
    operand the result is a dense array; with two sparse ones it is a BCOO array (storing a
    product for every pair of entries).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[1., 0., 2.], [0., 3., 0.]]))
    >>> sparse.bcoo_dot_general(M, jnp.ones((3, 2)), dimension_numbers=(([1], [0]), ([], [])))
    Array([[3., 3.],
           [3., 3.]], dtype=float32)
    """
    lhs_sparse, rhs_sparse = isinstance(lhs, BCOO), isinstance(rhs, BCOO)
    if not lhs_sparse:
        lhs = jnp.asarray(lhs)
    if not rhs_sparse:
        rhs = jnp.asarray(rhs)
    dims = _normalize(dimension_numbers)
    _check(lhs.shape, rhs.shape, dims)
    dtype = jnp.result_type(lhs.dtype, rhs.dtype)
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    if lhs_sparse and rhs_sparse:
        return _sparse_sparse(lhs, rhs, dims, dtype, kw)
    if lhs_sparse:
        return _sparse_dense(lhs, rhs.astype(dtype), dims, dtype, kw)
    if rhs_sparse:
        (lc, rc), (lb, rb) = dims
        out = _sparse_dense(rhs, lhs.astype(dtype), ((rc, lc), (rb, lb)), dtype, kw)
        nb = len(lb)
        n_rhs_free = rhs.ndim - len(rc) - nb
        n_lhs_free = lhs.ndim - len(lc) - nb
        perm = (tuple(range(nb)) + tuple(range(nb + n_rhs_free, nb + n_rhs_free + n_lhs_free))
                + tuple(range(nb, nb + n_rhs_free)))
        return jnp.transpose(out, perm)
    return lax.dot_general(lhs, rhs, dims, **kw)


def _sparse_dense(lhs: BCOO, rhs, dims, dtype, kw):
    (lc, rc), (lb, rb) = dims
    mat = _unbatched(lhs)
    ns, nse = mat.n_sparse, mat.nse
    data, idx = mat.data.astype(dtype), mat.indices
    pairs = list(zip(lc, rc)) + list(zip(lb, rb))
    gathered = [(l, r) for l, r in pairs if l < ns]
    rest = [d for d in range(rhs.ndim) if d not in {r for _, r in gathered}]
    # the dense operand at each entry's coordinates: (nse, *rest) or, with no sparse
    # dimension paired, the operand itself (no per-entry copy)
    if gathered:
        rhs_t = jnp.transpose(rhs, [r for _, r in gathered] + rest)
        coords = tuple(idx[:, l] for l, _ in gathered)
        rhs_e = rhs_t.at[coords].get(mode="fill", fill_value=0)
    else:
        rhs_e = rhs
    off = 1 if gathered else 0
    pos = {r: off + i for i, r in enumerate(rest)}
    d_lc = [1 + l - ns for l, _ in zip(lc, rc) if l >= ns]
    d_rc = [pos[r] for l, r in zip(lc, rc) if l >= ns]
    dense_batch = [(l, r) for l, r in zip(lb, rb) if l >= ns]
    d_lb = ([0] if gathered else []) + [1 + l - ns for l, _ in dense_batch]
    d_rb = ([0] if gathered else []) + [pos[r] for _, r in dense_batch]
    out_e = lax.dot_general(data, rhs_e, ((d_lc, d_rc), (d_lb, d_rb)), **kw)
    if not gathered:        # the entry axis is lhs's first free axis: bring it to the front
        out_e = jnp.moveaxis(out_e, len(dense_batch), 0)
    # out_e: (nse, dense batch..., lhs dense free..., rhs free...)
    lhs_free = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rhs_free = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    labels_final = ([("b", i) for i in range(len(lb))] + [("l", d) for d in lhs_free]
                    + [("r", d) for d in rhs_free])
    sizes = dict(zip(labels_final, _out_shape(lhs.shape, rhs.shape, dims)))
    indexed = [("b", i) for i, l in enumerate(lb) if l < ns] + \
        [("l", d) for d in lhs_free if d < ns]
    columns = [lb[i] if kind == "b" else i for kind, i in indexed]
    tail = [("b", i) for i, l in enumerate(lb) if l >= ns] + \
        [("l", d) for d in lhs_free if d >= ns] + [("r", d) for d in rhs_free]
    if indexed:
        coords = tuple(idx[:, c] for c in columns)
        target = jnp.zeros(tuple(sizes[k] for k in indexed + tail), out_e.dtype)
        out_t = target.at[coords].add(out_e, mode="drop")
    else:
        valid = _in_bounds(idx, mat.shape[:ns])
        out_e = jnp.where(valid.reshape((nse,) + (1,) * (out_e.ndim - 1)), out_e, 0)
        out_t = jnp.sum(out_e, axis=0).astype(out_e.dtype)
    order = indexed + tail
    perm = [order.index(k) for k in labels_final]
    return jnp.transpose(out_t, perm) if perm != list(range(len(perm))) else out_t


def _out_shape(lhs_shape, rhs_shape, dims):
    (lc, rc), (lb, rb) = dims
    return ([lhs_shape[l] for l in lb]
            + [s for d, s in enumerate(lhs_shape) if d not in lc and d not in lb]
            + [s for d, s in enumerate(rhs_shape) if d not in rc and d not in rb])


def _sparse_sparse(lhs: BCOO, rhs: BCOO, dims, dtype, kw):
    """Every pair of entries whose paired coordinates agree contributes one output entry."""
    (lc, rc), (lb, rb) = dims
    a = bcoo_update_layout(lhs, n_batch=0, n_dense=0, on_inefficient=None)
    b = bcoo_update_layout(rhs, n_batch=0, n_dense=0, on_inefficient=None)
    ai, bi = a.indices, b.indices
    match = _in_bounds(ai, a.shape)[:, None] & _in_bounds(bi, b.shape)[None, :]
    for l, r in list(zip(lc, rc)) + list(zip(lb, rb)):
        match = match & (ai[:, l][:, None] == bi[:, r][None, :])
    product = (a.data.astype(dtype)[:, None] * b.data.astype(dtype)[None, :])
    if kw.get("preferred_element_type") is not None:
        product = product.astype(kw["preferred_element_type"])
    data = jnp.where(match, product, 0).astype(product.dtype).reshape(-1)
    n_a, n_b = a.nse, b.nse
    lhs_free = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rhs_free = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    cols = ([jnp.broadcast_to(ai[:, l][:, None], (n_a, n_b)) for l in lb]
            + [jnp.broadcast_to(ai[:, d][:, None], (n_a, n_b)) for d in lhs_free]
            + [jnp.broadcast_to(bi[:, d][None, :], (n_a, n_b)) for d in rhs_free])
    shape = tuple(_out_shape(lhs.shape, rhs.shape, dims))
    if cols:
        indices = jnp.stack(cols, axis=-1).reshape(n_a * n_b, len(cols))
    else:
        indices = jnp.zeros((n_a * n_b, 0), ai.dtype)
    return BCOO((data, indices), shape=shape)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
    """The entries of ``lax.dot_general(A, B)`` at the coordinates ``indices`` (the data of a
    BCOO array with those indices; each coordinate's value is read, not summed).

    >>> from fnx.experimental import sparse
    >>> A, B = jnp.array([[1., 2.], [3., 4.]]), jnp.eye(2)
    >>> sparse.bcoo_dot_general_sampled(A, B, jnp.array([[0, 1], [1, 0]]),
    ...                                 dimension_numbers=(([1], [0]), ([], [])))
    Array([2., 3.], dtype=float32)
    """
    out = lax.dot_general(jnp.asarray(A), jnp.asarray(B), dimension_numbers)
    indices = jnp.asarray(indices)
    n_batch, n_sparse = indices.ndim - 2, indices.shape[-1]
    probe = BCOO((jnp.zeros(indices.shape[:-1] + out.shape[n_batch + n_sparse:], out.dtype),
                  indices), shape=out.shape)
    return jnp.broadcast_to(_values_at(probe, out), probe.data.shape)


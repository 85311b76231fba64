"""Shape manipulation: reshape, transpose, concatenate, split, tile, pad, ..."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..core import dtypes, lax
from ..core.core import Tracer
from ..core.errors import ShapeError
from ._core import (asarray, astype, broadcast_to, canonicalize_axes, canonicalize_axis,
                    promote_dtypes)


def reshape(a, newshape=None, order="C", *, shape=None):
    """``a`` with a new shape; one dimension may be -1.

    >>> jnp.reshape(jnp.arange(6), (2, -1)).shape
    (2, 3)
    """
    a = asarray(a)
    newshape = shape if newshape is None else newshape
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = [int(d) for d in newshape]
    if order == "F":
        # Fortran order: the reversed shapes in C order, between two transposes
        flipped = reshape(lax.transpose(a, tuple(reversed(range(a.ndim)))),
                          tuple(reversed(newshape)))
        return lax.transpose(flipped, tuple(reversed(range(flipped.ndim))))
    if order != "C":
        raise NotImplementedError(f"reshape: order={order!r} is not supported ('C' or 'F')")
    if newshape.count(-1) > 1:
        raise ShapeError(f"can only specify one unknown dimension, got {tuple(newshape)}")
    if -1 in newshape:
        known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
        if known == 0 or a.size % known:
            raise ShapeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into "
                             f"shape {tuple(newshape)}")
        newshape[newshape.index(-1)] = a.size // known
    return lax.reshape(a, tuple(newshape))


def ravel(a, order="C"):
    """``a`` flattened, in C (row-major) or F (column-major) ``order``.

    >>> jnp.ravel(jnp.array([[1, 2], [3, 4]]))
    Array([1, 2, 3, 4], dtype=int32)
    """
    a = asarray(a)
    return reshape(a, (a.size,), order)


def transpose(a, axes=None):
    """``a`` with its axes permuted by ``axes`` (reversed when None).

    >>> jnp.transpose(jnp.ones((2, 3, 4))).shape
    (4, 3, 2)
    """
    a = asarray(a)
    perm = tuple(reversed(range(a.ndim))) if axes is None else \
        tuple(canonicalize_axis(x, a.ndim, "transpose") for x in axes)
    return lax.transpose(a, perm)


def permute_dims(a, axes):
    """``a`` with its axes permuted (the array API's name for ``transpose``).

    >>> jnp.permute_dims(jnp.ones((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return transpose(a, axes)


def matrix_transpose(a):
    """``x`` with its last two axes swapped.

    >>> jnp.matrix_transpose(jnp.ones((4, 2, 3))).shape
    (4, 3, 2)
    """
    a = asarray(a)
    return swapaxes(a, -1, -2)


def swapaxes(a, axis1, axis2):
    """``a`` with axes ``axis1`` and ``axis2`` exchanged.

    >>> jnp.swapaxes(jnp.ones((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    a = asarray(a)
    i, j = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a, source, destination):
    """``a`` with axes ``source`` moved to positions ``destination``.

    >>> jnp.moveaxis(jnp.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    a = asarray(a)
    src = canonicalize_axes(source, a.ndim, "moveaxis")
    dst = canonicalize_axes(destination, a.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


def squeeze(a, axis=None):
    """``a`` without its size-1 axes (only those in ``axis`` when given).

    >>> jnp.squeeze(jnp.ones((1, 3, 1))).shape
    (3,)
    """
    a = asarray(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, a.ndim, "squeeze")
        for ax in axes:
            if a.shape[ax] != 1:
                raise ShapeError(f"cannot squeeze axis {ax} of size {a.shape[ax]} "
                                 f"(shape {a.shape})")
    return lax.squeeze(a, axes)


def expand_dims(a, axis):
    """``a`` with size-1 axes inserted at ``axis`` (an int or a tuple).

    >>> jnp.expand_dims(jnp.ones(3), (0, 2)).shape
    (1, 3, 1)
    """
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim + (1 if isinstance(axis, int) else len(axis)),
                             "expand_dims")
    return lax.expand_dims(a, axes)


def atleast_1d(*arys):
    """Each argument as an array of at least one dimension.

    >>> jnp.atleast_1d(3.0)
    Array([3.], dtype=float32, weak_type=True)
    """
    out = [reshape(a, (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """Each argument as an array of at least two dimensions (new axes in front).

    >>> jnp.atleast_2d(jnp.arange(3)).shape
    (1, 3)
    """
    out = []
    for a in arys:
        a = asarray(a)
        out.append(lax.reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens first).

    >>> jnp.concat([jnp.zeros(2), jnp.ones(1)])
    Array([0., 0., 1.], dtype=float32)
    """
    arrs = promote_dtypes(*arrays)
    if dtype is not None:
        arrs = [astype(a, dtype) for a in arrs]
    if axis is None:
        arrs = [ravel(a) for a in arrs]
        axis = 0
    if any(a.ndim == 0 for a in arrs):
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    ax = canonicalize_axis(axis, arrs[0].ndim, "concatenate")
    return lax.concatenate(arrs, ax)


concat = concatenate


def hstack(arrays, dtype=None):
    """The arrays joined along their second axis (the first for 1-d arrays).

    >>> jnp.hstack([jnp.array([1, 2]), jnp.array([3])])
    Array([1, 2, 3], dtype=int32)
    """
    arrs = [atleast_1d(a) for a in arrays]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1, dtype)


def vstack(arrays, dtype=None):
    """The arrays joined along their first axis (1-d arrays as rows).

    >>> jnp.vstack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[1, 2],
           [3, 4]], dtype=int32)
    """
    return concatenate([atleast_2d(a) for a in arrays], 0, dtype)


def column_stack(arrays):
    """1-d arrays as the columns of a 2-d array (2-d arrays are stacked as they are).

    >>> jnp.column_stack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    arrs = [asarray(a) for a in arrays]
    arrs = [lax.reshape(a, (a.size, 1)) if a.ndim < 2 else a for a in arrs]
    return concatenate(arrs, 1)


def split(a, indices_or_sections, axis=0):
    """Split into equal sections (an int) or at the given indices.

    >>> jnp.split(jnp.arange(6), [2, 5])
    [Array([0, 1], dtype=int32), Array([2, 3, 4], dtype=int32), Array([5], dtype=int32)]
    """
    a = asarray(a)
    ax = canonicalize_axis(axis, a.ndim, "split")
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if n % k:
            raise ShapeError(f"array split does not result in an equal division: axis of size "
                             f"{n} into {k} sections")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        # slice semantics: negative indices count from the end, then clamp to [0, n]
        bounds = [0] + [builtins.min(builtins.max(int(i) + n if int(i) < 0 else int(i), 0), n)
                        for i in indices_or_sections] + [n]
    return [lax.slice_in_dim(a, s, builtins.max(s, e), 1, ax)
            for s, e in zip(bounds[:-1], bounds[1:])]


def array_split(a, indices_or_sections, axis=0):
    """``a`` split into ``indices_or_sections`` pieces along ``axis`` (the first ones one
    longer when they do not divide evenly), or at the given indices.

    >>> jnp.array_split(jnp.arange(5), 2)
    [Array([0, 1, 2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    a = asarray(a)
    if isinstance(indices_or_sections, (int, np.integer)):
        n = a.shape[canonicalize_axis(axis, a.ndim)]
        k = int(indices_or_sections)
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        indices_or_sections = np.cumsum(sizes)[:-1].tolist()
    return split(a, indices_or_sections, axis)


def tile(a, reps):
    """``a`` repeated ``reps`` times along each axis.

    >>> jnp.tile(jnp.array([1, 2]), 2)
    Array([1, 2, 1, 2], dtype=int32)
    """
    a = asarray(a)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    nd = builtins.max(a.ndim, len(reps))
    a = lax.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    reps = (1,) * (nd - len(reps)) + reps
    # broadcast to (r0, s0, r1, s1, ...) then merge pairs
    shape = [x for r, s in zip(reps, a.shape) for x in (r, s)]
    b = lax.broadcast_in_dim(a, shape, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(b, tuple(r * s for r, s in zip(reps, a.shape)))


def repeat(a, repeats, axis=None, total_repeat_length=None):
    """Repeat elements; ``repeats`` must be static (an int or a sequence of ints) unless the
    static ``total_repeat_length`` is given, which the result is cut or padded to (the last
    element repeats), as in JAX.

    >>> jnp.repeat(jnp.array([1, 2]), 2)
    Array([1, 1, 2, 2], dtype=int32)
    >>> fnx.jit(jnp.repeat, static_argnames="total_repeat_length")(
    ...     jnp.array([1, 2]), jnp.array([1, 3]), total_repeat_length=5)
    Array([1, 2, 2, 2, 2], dtype=int32)
    """
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    if total_repeat_length is not None:
        return _repeat_to_length(a, repeats, axis, operator.index(total_repeat_length))
    ax = canonicalize_axis(axis, a.ndim, "repeat")
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        shape = a.shape[:ax + 1] + (r,) + a.shape[ax + 1:]
        b = lax.broadcast_in_dim(a, shape, tuple(i for i in range(a.ndim + 1) if i != ax + 1))
        return lax.reshape(b, a.shape[:ax] + (a.shape[ax] * r,) + a.shape[ax + 1:])
    reps = np.asarray(repeats)
    if reps.shape not in ((1,), (a.shape[ax],)):
        raise ShapeError(f"repeat: {reps.shape[0]} repeats for an axis of size {a.shape[ax]}")
    idx = np.repeat(np.arange(a.shape[ax]), reps)
    return lax.take(a, asarray(idx.astype(np.int32)), ax)


def _repeat_to_length(a, repeats, axis, total):
    reps = ravel(asarray(repeats))
    if a.ndim == 0:
        if reps.shape != (1,):
            raise ValueError("repeat with a scalar `a` needs a scalar `repeats`, got shape "
                             f"{reps.shape}")
        return lax.full((total,), a, a.dtype)
    ax = canonicalize_axis(axis, a.ndim, "repeat")
    n = a.shape[ax]
    if total == 0 or n == 0:
        return lax.slice_in_dim(a, 0, 0, axis=ax) if total == 0 else a
    reps = broadcast_to(reps, (n,)).astype(dtypes.int32)
    # output position j takes element i = how many of the blocks 1..n-1 start at or before j
    starts = lax.slice_in_dim(lax.cumsum(reps, 0), 0, n - 1)
    j = lax.iota(dtypes.int32, total)
    covered = lax.le(lax.broadcast_in_dim(starts, (total, n - 1), (1,)),
                     lax.broadcast_in_dim(j, (total, n - 1), (0,)))
    idx = lax.reduce_sum(lax.convert_element_type(covered, dtypes.int32), (1,))
    return lax.take(a, idx, ax)


def flip(m, axis=None):
    """``m`` with the order of elements along ``axis`` reversed (every axis when None).

    >>> jnp.flip(jnp.arange(3))
    Array([2, 1, 0], dtype=int32)
    """
    m = asarray(m)
    return lax.rev(m, canonicalize_axes(axis, m.ndim, "flip"))


def fliplr(m):
    """``m`` with its columns (axis 1) reversed.

    >>> jnp.fliplr(jnp.array([[1, 2], [3, 4]]))
    Array([[2, 1],
           [4, 3]], dtype=int32)
    """
    return flip(m, 1)


def flipud(m):
    """``m`` with its rows (axis 0) reversed.

    >>> jnp.flipud(jnp.array([[1, 2], [3, 4]]))
    Array([[3, 4],
           [1, 2]], dtype=int32)
    """
    return flip(m, 0)


def roll(a, shift, axis=None):
    """``a`` with its elements shifted by ``shift`` along ``axis`` (of the flattened array
    when None), wrapping around.

    >>> jnp.roll(jnp.arange(4), 1)
    Array([3, 0, 1, 2], dtype=int32)
    """
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    shifts = (shift,) if np.ndim(shift) == 0 else tuple(shift)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, a.ndim, "roll")
        n = a.shape[ax]
        if n == 0:
            continue
        if isinstance(s, Tracer):     # a traced shift reads a window of the array twice over
            start = (n - lax.rem(asarray(s).astype(np.int32), np.int32(n))) % n
            a = lax.dynamic_slice_in_dim(lax.concatenate([a, a], ax), start, n, ax)
            continue
        s = int(s) % n
        if s:
            a = lax.concatenate([lax.slice_in_dim(a, n - s, n, 1, ax),
                                 lax.slice_in_dim(a, 0, n - s, 1, ax)], ax)
    return a


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the 2-D subarrays spanned by ``axis1`` and ``axis2`` (put last).

    >>> jnp.diagonal(jnp.arange(9).reshape(3, 3), offset=1)
    Array([1, 5], dtype=int32)
    """
    a = asarray(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    rows = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    cols = rows + offset
    flat = lax.reshape(a, a.shape[:-2] + (n * m,))
    lin = asarray((rows * m + cols).astype(np.int32))
    return lax.take(flat, lin, a.ndim - 2)


def diag(v, k=0):
    """The ``k``-th diagonal of a 2-d ``v``, or the 2-d array with 1-d ``v`` on its ``k``-th
    diagonal.

    >>> jnp.diag(jnp.array([1, 2]))
    Array([[1, 0],
           [0, 2]], dtype=int32)
    """
    v = asarray(v)
    if v.ndim == 1:
        n = v.shape[0] + builtins.abs(k)
        mask = asarray(np.eye(n, k=k, dtype=bool))
        from .ufuncs import where
        row = lax.pad(v, lax.full((), 0, v.dtype), [(builtins.max(k, 0), builtins.max(-k, 0), 0)])
        # column c holds row[c]: v[c - k] above the diagonal, v[c] below it
        vals = lax.broadcast_in_dim(row, (n, n), (1,))
        return where(mask, vals, lax.full((n, n), 0, v.dtype))
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError("diag expects a 1-D or 2-D input")


def tril(m, k=0):
    """``m`` with the elements above the ``k``-th diagonal zeroed.

    >>> jnp.tril(jnp.ones((3, 3), jnp.int32))
    Array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]], dtype=int32)
    """
    m = asarray(m)
    from .ufuncs import where
    mask = asarray(np.tri(m.shape[-2], m.shape[-1], k, dtype=bool))
    return where(mask, m, lax.full(m.shape, 0, m.dtype))


def triu(m, k=0):
    """``m`` with the elements below the ``k``-th diagonal zeroed.

    >>> jnp.triu(jnp.ones((3, 3), jnp.int32))
    Array([[1, 1, 1],
           [0, 1, 1],
           [0, 0, 1]], dtype=int32)
    """
    m = asarray(m)
    from .ufuncs import where
    mask = asarray(np.tri(m.shape[-2], m.shape[-1], k - 1, dtype=bool))
    return where(mask, lax.full(m.shape, 0, m.dtype), m)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-d coordinate vectors (``indexing`` "xy", NumPy's default, or
    "ij"); ``sparse=True`` keeps size-1 axes where a dense grid would repeat values.

    >>> [g.shape for g in jnp.meshgrid(jnp.arange(3), jnp.arange(2))]
    [(2, 3), (2, 3)]
    >>> [g.shape for g in jnp.meshgrid(jnp.arange(3), jnp.arange(2), sparse=True)]
    [(1, 3), (2, 1)]
    """
    if not copy:
        raise ValueError("fnx.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    xs = [asarray(x) for x in xi]
    if any(x.ndim != 1 for x in xs):
        raise ValueError("Arguments to fnx.numpy.meshgrid must be 1D, got shapes "
                         f"{[x.shape for x in xs]}")
    dims = list(range(len(xs)))
    if indexing == "xy" and len(xs) >= 2:
        dims[0], dims[1] = 1, 0
    full = [0] * len(xs)
    for x, d in zip(xs, dims):
        full[d] = x.shape[0]
    out = []
    for x, d in zip(xs, dims):
        shape = [1] * len(xs) if sparse else list(full)
        shape[d] = x.shape[0]
        out.append(lax.broadcast_in_dim(x, tuple(shape), (d,)))
    return out


def atleast_3d(*arys):
    """Views with at least three dimensions: ``(N,)`` becomes ``(1, N, 1)`` and ``(M, N)``
    becomes ``(M, N, 1)``, as in NumPy.

    >>> jnp.atleast_3d(jnp.arange(3)).shape
    (1, 3, 1)
    """
    out = []
    for a in arys:
        a = asarray(a)
        shape = {0: (1, 1, 1), 1: (1,) + a.shape + (1,), 2: a.shape + (1,)}.get(a.ndim, a.shape)
        out.append(lax.reshape(a, shape) if shape != a.shape else a)
    return out[0] if len(out) == 1 else out


def dstack(tup, dtype=None):
    """Stack arrays along the third axis (after ``atleast_3d``).

    >>> jnp.dstack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[[1, 3],
            [2, 4]]], dtype=int32)
    """
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def _split_along(a, indices_or_sections, axis, min_ndim, name):
    a = asarray(a)
    if a.ndim < min_ndim:
        raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions, got "
                         f"shape {a.shape}")
    return split(a, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """``split`` along the second axis (the first for 1-D arrays).

    >>> jnp.hsplit(jnp.arange(4), 2)
    [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32)]
    """
    a = asarray(ary)
    return _split_along(a, indices_or_sections, 1 if a.ndim > 1 else 0, 1, "hsplit")


def vsplit(ary, indices_or_sections):
    """``split`` along the first axis of an array of at least two dimensions.

    >>> [a.shape for a in jnp.vsplit(jnp.zeros((4, 2)), 2)]
    [(2, 2), (2, 2)]
    """
    return _split_along(ary, indices_or_sections, 0, 1, "vsplit")   # 1-D too, as in JAX


def dsplit(ary, indices_or_sections):
    """``split`` along the third axis of an array of at least three dimensions.

    >>> [a.shape for a in jnp.dsplit(jnp.zeros((1, 2, 4)), 2)]
    [(1, 2, 2), (1, 2, 2)]
    """
    return _split_along(ary, indices_or_sections, 2, 3, "dsplit")


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``).

    >>> len(unstack(jnp.zeros((3, 2))))
    3
    """
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("unstack requires an input of at least one dimension")
    ax = canonicalize_axis(axis, x.ndim, "unstack")
    return tuple(lax.squeeze(lax.slice_in_dim(x, i, i + 1, 1, ax), (ax,))
                 for i in range(x.shape[ax]))


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (first towards second).

    >>> jnp.rot90(jnp.asarray([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int32)
    """
    m = asarray(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got {axes}")
    if m.ndim < 2:
        raise ValueError(f"rot90: the array must be at least 2-D, got shape {m.shape}")
    a0, a1 = (canonicalize_axis(a, m.ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: axes must be different, got {axes}")
    k = int(k) % 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, (a0, a1))
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(lax.rev(m, (a1,)), perm)
    return lax.rev(lax.transpose(m, perm), (a1,))


def append(arr, values, axis=None):
    """``arr`` with ``values`` appended along ``axis`` (both flattened when None).

    >>> jnp.append(jnp.asarray([1, 2]), jnp.asarray([3]))
    Array([1, 2, 3], dtype=int32)
    """
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def _static_positions(obj, n, name):
    """``obj`` (an int, slice or sequence of ints; concrete) as an int64 NumPy array."""
    from ..core.core import concrete_or_error
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n)), False
    idx = np.asarray(concrete_or_error(obj, f"{name}'s indices (they fix the output shape)"))
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise ValueError(f"{name}: boolean index of shape {idx.shape} for an axis of "
                             f"length {n}")
        return np.nonzero(idx)[0], False
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"{name}: indices must be integers, got dtype {idx.dtype}")
    return idx.astype(np.int64), idx.ndim == 0


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the static index or indices ``obj`` along
    ``axis`` (the flattened array when None).

    >>> jnp.insert(jnp.asarray([1, 2, 3]), 1, 9)
    Array([1, 9, 2, 3], dtype=int32)
    """
    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    ax = canonicalize_axis(axis, a.ndim, "insert")
    n = a.shape[ax]
    idx, scalar = _static_positions(obj, n, "insert")
    if ((idx < -n) | (idx > n)).any():
        raise IndexError(f"insert: index {idx.tolist()} is out of bounds for axis {ax} with "
                         f"size {n}")
    idx = np.where(idx < 0, idx + n, idx).reshape(-1)
    v = asarray(values)
    v = lax.convert_element_type(v, a.dtype) if v.dtype != a.dtype else v
    if v.ndim < a.ndim:
        v = lax.reshape(v, (1,) * (a.ndim - v.ndim) + v.shape)
    if scalar:
        # NumPy: a scalar index inserts a whole block, its leading axis moved to ``axis``
        v = moveaxis(v, 0, ax)
        k = v.shape[ax]
        new = np.arange(idx[0], idx[0] + k)
    else:
        k = idx.size
        order = np.argsort(idx, kind="stable")
        new = np.empty(k, np.int64)
        new[order] = idx[order] + np.arange(k)
    v = broadcast_to(v, a.shape[:ax] + (k,) + a.shape[ax + 1:])
    src = np.empty(n + k, np.int64)
    old = np.ones(n + k, bool)
    old[new] = False
    src[old] = np.arange(n)
    src[new] = n + np.arange(k)
    joined = lax.concatenate([a, v], ax)
    return lax.take(joined, asarray(src.astype(np.int32)), ax)


def _delete_unique(a, obj, ax):
    """``a`` without the entries at the distinct, possibly traced, integer indices ``obj``: each
    kept position is found by counting the deleted ones before it, so it works under jit."""
    from .creation import arange
    from .ufuncs import clip, where
    n = a.shape[ax]
    idx = ravel(asarray(obj))
    idx = lax.sort(clip(where(idx < 0, idx + n, idx), 0, n))
    idx = idx - arange(idx.size, dtype=idx.dtype)
    keep = arange(n - idx.size, dtype=idx.dtype)
    keep = keep + (keep[None, :] >= idx[:, None]).sum(0, dtype=idx.dtype)
    return lax.take(a, keep, ax)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """``arr`` without the entries at the static index or indices ``obj`` along ``axis``; with
    ``assume_unique_indices`` integer indices may be traced (under jit), as in JAX.

    >>> jnp.delete(jnp.asarray([1, 2, 3]), 1)
    Array([1, 3], dtype=int32)
    >>> fnx.jit(lambda i: jnp.delete(jnp.arange(5), i, assume_unique_indices=True))(jnp.array([3, 0]))
    Array([1, 2, 4], dtype=int32)
    """
    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    ax = canonicalize_axis(axis, a.ndim, "delete")
    n = a.shape[ax]
    if assume_unique_indices and not isinstance(obj, (int, np.integer, slice)) and \
            dtypes.kind(asarray(obj).dtype) in "iu":
        return _delete_unique(a, obj, ax)
    idx, _ = _static_positions(obj, n, "delete")
    idx = idx.reshape(-1)
    if ((idx < -n) | (idx >= n)).any():
        raise IndexError(f"delete: index {idx.tolist()} is out of bounds for axis {ax} with "
                         f"size {n}")
    keep = np.ones(n, bool)
    keep[idx] = False
    return lax.take(a, asarray(np.nonzero(keep)[0].astype(np.int32)), ax)


def resize(a, new_shape):
    """An array of ``new_shape`` filled by repeating the flattened ``a`` cyclically.

    >>> jnp.resize(jnp.asarray([1, 2, 3]), (2, 2))
    Array([[1, 2],
           [3, 1]], dtype=int32)
    """
    a = ravel(a)
    shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else \
        tuple(int(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"resize: all elements of new_shape must be non-negative, got {shape}")
    total = int(np.prod(shape, dtype=np.int64))
    if a.size == 0 or total == 0:
        return lax.full(shape, 0, a.dtype)
    reps = -(-total // a.size)
    return lax.reshape(lax.slice_in_dim(tile(a, reps), 0, total), shape)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("builtins", "np", "lax")]

"""Shape manipulation: reshape, transpose, concatenate, split, tile, pad, ..."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import lax
from ..core.errors import ShapeError
from ._core import asarray, canonicalize_axes, canonicalize_axis, promote_dtypes


def reshape(a, newshape=None, order="C", *, shape=None):
    """``a`` with a new shape; one dimension may be -1.

    >>> reshape(arange(6), (2, -1)).shape
    (2, 3)
    """
    a = asarray(a)
    newshape = shape if newshape is None else newshape
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = [int(d) for d in newshape]
    if order != "C":
        raise NotImplementedError("only order='C' is supported")
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
    a = asarray(a)
    return lax.reshape(a, (a.size,))


def transpose(a, axes=None):
    a = asarray(a)
    perm = tuple(reversed(range(a.ndim))) if axes is None else \
        tuple(canonicalize_axis(x, a.ndim, "transpose") for x in axes)
    return lax.transpose(a, perm)


def permute_dims(a, axes):
    return transpose(a, axes)


def matrix_transpose(a):
    a = asarray(a)
    return swapaxes(a, -1, -2)


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    i, j = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a, source, destination):
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
    a = asarray(a)
    axes = canonicalize_axes(axis, a.ndim + (1 if isinstance(axis, int) else len(axis)),
                             "expand_dims")
    return lax.expand_dims(a, axes)


def atleast_1d(*arys):
    out = [reshape(a, (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        out.append(lax.reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens first)."""
    arrs = promote_dtypes(*arrays)
    if dtype is not None:
        from ._core import astype
        arrs = [astype(a, dtype) for a in arrs]
    if axis is None:
        arrs = [ravel(a) for a in arrs]
        axis = 0
    if any(a.ndim == 0 for a in arrs):
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    ax = canonicalize_axis(axis, arrs[0].ndim, "concatenate")
    return lax.concatenate(arrs, ax)


concat = concatenate


def stack(arrays, axis=0):
    """Join arrays along a new axis."""
    arrs = [asarray(a) for a in arrays]
    shapes = {a.shape for a in arrs}
    if len(shapes) != 1:
        raise ShapeError(f"all input arrays must have the same shape, got "
                         f"{', '.join(str(a.shape) for a in arrs)}")
    ax = canonicalize_axis(axis, arrs[0].ndim + 1, "stack")
    return concatenate([lax.expand_dims(a, (ax,)) for a in arrs], ax)


def hstack(arrays):
    arrs = [atleast_1d(a) for a in arrays]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1)


def vstack(arrays):
    return concatenate([atleast_2d(a) for a in arrays], 0)


def column_stack(arrays):
    arrs = [asarray(a) for a in arrays]
    arrs = [lax.reshape(a, (a.size, 1)) if a.ndim < 2 else a for a in arrs]
    return concatenate(arrs, 1)


def split(a, indices_or_sections, axis=0):
    """Split into equal sections (an int) or at the given indices."""
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
    a = asarray(a)
    if isinstance(indices_or_sections, (int, np.integer)):
        n = a.shape[canonicalize_axis(axis, a.ndim)]
        k = int(indices_or_sections)
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        indices_or_sections = np.cumsum(sizes)[:-1].tolist()
    return split(a, indices_or_sections, axis)


def tile(a, reps):
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
    """Repeat elements; ``repeats`` must be static (an int or a sequence of ints)."""
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    ax = canonicalize_axis(axis, a.ndim, "repeat")
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        shape = a.shape[:ax + 1] + (r,) + a.shape[ax + 1:]
        b = lax.broadcast_in_dim(a, shape, tuple(i for i in range(a.ndim + 1) if i != ax + 1))
        return lax.reshape(b, a.shape[:ax] + (a.shape[ax] * r,) + a.shape[ax + 1:])
    reps = np.asarray(repeats)
    idx = np.repeat(np.arange(a.shape[ax]), reps)
    return lax.take(a, asarray(idx.astype(np.int32)), ax)


def flip(m, axis=None):
    m = asarray(m)
    return lax.rev(m, canonicalize_axes(axis, m.ndim, "flip"))


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
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
        s = int(s) % n
        if s:
            a = lax.concatenate([lax.slice_in_dim(a, n - s, n, 1, ax),
                                 lax.slice_in_dim(a, 0, n - s, 1, ax)], ax)
    return a


def pad(array, pad_width, mode="constant", constant_values=0):
    """Pad with a constant (``mode='constant'``) or by repeating the edge (``'edge'``)."""
    a = asarray(array)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2)
                         if np.ndim(pad_width) else np.asarray([[pad_width, pad_width]]),
                         (a.ndim, 2)) if a.ndim else np.zeros((0, 2), np.int64)
    if (pw < 0).any():
        raise ValueError("pad widths must be non-negative")
    if mode == "constant":
        value = asarray(constant_values)
        if value.ndim:
            raise NotImplementedError("pad: constant_values must be a scalar")
        value = lax.convert_element_type(value, a.dtype)
        return lax.pad(a, value, [(int(lo), int(hi), 0) for lo, hi in pw])
    if mode == "edge":
        for ax, (lo, hi) in enumerate(pw):
            n = a.shape[ax]
            parts = []
            if lo:
                parts.append(repeat(lax.slice_in_dim(a, 0, 1, 1, ax), int(lo), ax))
            parts.append(a)
            if hi:
                parts.append(repeat(lax.slice_in_dim(a, n - 1, n, 1, ax), int(hi), ax))
            a = lax.concatenate(parts, ax)
        return a
    raise NotImplementedError(f"pad mode {mode!r}; supported: 'constant', 'edge'")


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the 2-D subarrays spanned by ``axis1`` and ``axis2`` (put last)."""
    a = asarray(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    rows = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    cols = rows + offset
    flat = lax.reshape(a, a.shape[:-2] + (n * m,))
    lin = asarray((rows * m + cols).astype(np.int32))
    return lax.take(flat, lin, a.ndim - 2)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    from .reductions import sum as sum_
    return sum_(diagonal(a, offset, axis1, axis2), -1, dtype=dtype)


def diag(v, k=0):
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
    m = asarray(m)
    from .ufuncs import where
    mask = asarray(np.tri(m.shape[-2], m.shape[-1], k, dtype=bool))
    return where(mask, m, lax.full(m.shape, 0, m.dtype))


def triu(m, k=0):
    m = asarray(m)
    from .ufuncs import where
    mask = asarray(np.tri(m.shape[-2], m.shape[-1], k - 1, dtype=bool))
    return where(mask, lax.full(m.shape, 0, m.dtype), m)


def meshgrid(*xi, indexing="xy"):
    xs = [ravel(asarray(x)) for x in xi]
    shape = [x.shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        dim = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            dim = 1 - i
        out.append(lax.broadcast_in_dim(x, tuple(shape), (dim,)))
    return out


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("builtins", "np", "lax")]

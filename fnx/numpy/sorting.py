"""Sorting and searching."""
from __future__ import annotations

import builtins

import numpy as np

from ..core import dtypes, lax
from ._core import asarray, axis_or_flat, canonicalize_axis, promote_dtypes, promote_dtypes_inexact


def sort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (the flattened array when None).

    >>> jnp.sort(jnp.array([3, 1, 2]))
    Array([1, 2, 3], dtype=int32)
    """
    a, ax = axis_or_flat(asarray(a), axis, "sort")
    out = lax.sort(a, ax)
    return lax.rev(out, (ax,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """Indices that sort ``a`` (stable).

    >>> jnp.argsort(jnp.array([3, 1, 2]))
    Array([1, 2, 0], dtype=int32)
    """
    a, ax = axis_or_flat(asarray(a), axis, "argsort")
    iota = lax.broadcasted_iota(dtypes.default_int, a.shape, ax)
    if not descending:
        return lax.sort([a, iota], ax, num_keys=1)[1]
    # reverse, sort stably ascending, reverse back: descending, and ties keep their order
    # (negating the keys would break unsigned and minimum-integer keys)
    _, perm = lax.sort([lax.rev(a, (ax,)), lax.rev(iota, (ax,))], ax, num_keys=1)
    return lax.rev(perm, (ax,))


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Indices where ``v`` would be inserted into sorted 1-D ``a`` (``a[sorter]`` where
    ``sorter`` is given); ``method`` is JAX's choice of algorithm, the same result here.

    >>> jnp.searchsorted(jnp.array([1, 3, 5]), jnp.array([2, 5]))
    Array([1, 2], dtype=int32)
    >>> jnp.searchsorted(jnp.array([5, 1, 3]), 4, sorter=jnp.array([1, 2, 0]))
    Array(2, dtype=int32)
    """
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'. "
                         "Expected one of ['left', 'right'].")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"{method!r} is an invalid value for keyword 'method'. "
                         f"Expected one of {list(_SEARCH_METHODS)}.")
    a, v = asarray(a), asarray(v)
    if a.ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if sorter is not None:
        a = a[asarray(sorter)]
    a, v = promote_dtypes(a, v)
    n = a.shape[0]
    vb = lax.broadcast_in_dim(v, v.shape + (n,), tuple(range(v.ndim)))
    ab = lax.broadcast_in_dim(a, v.shape + (n,), (v.ndim,))
    below = lax.lt(ab, vb) if side == "left" else lax.le(ab, vb)
    return lax.reduce_sum(lax.convert_element_type(below, dtypes.int32), (v.ndim,))


def lexsort(keys, axis=-1):
    """The indices that sort by the last key, then the one before it, and so on.

    >>> jnp.lexsort((jnp.array([1, 0, 2]), jnp.array([0, 0, 1])))
    Array([1, 0, 2], dtype=int32)
    """
    keys = [asarray(k) for k in keys]
    ax = canonicalize_axis(axis, keys[0].ndim, "lexsort")
    iota = lax.broadcasted_iota(dtypes.default_int, keys[0].shape, ax)
    outs = lax.sort(list(reversed(keys)) + [iota], ax, num_keys=len(keys))
    return outs[-1]


def topk(a, k):
    """The ``k`` largest values along the last axis and their indices (descending)."""
    a = asarray(a)
    idx = argsort(a, -1, descending=True)
    idx = lax.slice_in_dim(idx, 0, k, 1, a.ndim - 1)
    return lax.take_along_axis(a, idx, a.ndim - 1), idx


# ---------------------------------------------------------------------------------------------
# membership, binning and interpolation (static output shapes)


def isin(element, test_elements, assume_unique=False, invert=False):
    """Whether each element of ``element`` is in ``test_elements`` (shape of ``element``).

    >>> jnp.isin(jnp.asarray([1, 2, 3]), jnp.asarray([3, 1]))
    Array([ True, False,  True], dtype=bool)
    """
    e, t = promote_dtypes(element, test_elements)
    t = lax.reshape(t, (t.size,))
    shape = e.shape + (t.size,)
    hit = lax.eq(lax.broadcast_in_dim(e, shape, tuple(range(e.ndim))),
                 lax.broadcast_in_dim(t, shape, (e.ndim,)))
    out = lax.reduce_or(hit, (e.ndim,))
    return lax.bitwise_not(out) if invert else out


def _check_1d(name, **arrays):
    for k, v in arrays.items():
        if v.ndim != 1:
            raise ValueError(f"{name}: {k} must be 1-D, got shape {v.shape}")


def digitize(x, bins, right=False):
    """Index of the bin of ``bins`` (monotonic, 1-D) each value of ``x`` falls in, as NumPy.

    >>> jnp.digitize(jnp.asarray([0.5, 1.5, 9.0]), jnp.asarray([1.0, 2.0]))
    Array([0, 1, 2], dtype=int32)
    """
    from .ufuncs import where
    x, bins = asarray(x), asarray(bins)
    _check_1d("digitize", bins=bins)
    if bins.shape[0] == 0:
        return lax.full(x.shape, 0, dtypes.int32)
    side = "left" if right else "right"
    up = searchsorted(bins, x, side=side)
    down = lax.sub(lax.full(x.shape, bins.shape[0], dtypes.int32),
                   searchsorted(lax.rev(bins, (0,)), x, side=side))
    # the direction of ``bins`` may be traced: pick it per call, as JAX does
    increasing = lax.ge(lax.slice_in_dim(bins, bins.shape[0] - 1, bins.shape[0]),
                        lax.slice_in_dim(bins, 0, 1))
    return where(lax.reshape(increasing, ()), up, down)


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or summed ``weights``) of each non-negative integer in 1-D ``x``. Under jit give a
    static ``length``: values at or above it are dropped, negative values count in bin 0 (JAX).

    >>> jnp.bincount(jnp.asarray([0, 1, 1, 3]))
    Array([1, 2, 0, 1], dtype=int32)
    """
    from ..core.core import concrete_or_error
    from .creation import zeros
    from .ufuncs import clip, where
    x = asarray(x)
    _check_1d("bincount", x=x)
    if x.dtype == dtypes.bool_:        # booleans count as 0 and 1, as in NumPy and JAX
        x = lax.convert_element_type(x, dtypes.default_int)
    if not dtypes.is_int(x.dtype):
        raise TypeError(f"bincount: x must be an integer array, got dtype {x.dtype}")
    if length is None:
        vals = concrete_or_error(x, "bincount's argument (pass length= under jit)")
        length = builtins.max(int(minlength), int(np.max(vals)) + 1 if vals.size else 0)
    length = int(length)
    if weights is None:
        w = lax.full(x.shape, 1, dtypes.default_int)
    else:
        w = asarray(weights)
        if w.shape != x.shape:
            raise ValueError(f"bincount: weights of shape {w.shape} do not match x of shape "
                             f"{x.shape}")
    if length == 0:
        return zeros((0,), w.dtype)
    w = where(lax.lt(x, lax.full(x.shape, length, x.dtype)), w, 0)
    idx = clip(x, 0, length - 1)
    return zeros((length,), w.dtype).at[idx].add(w)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The ``bins + 1`` edges ``histogram`` uses (or ``bins`` itself given as edges).

    >>> jnp.histogram_bin_edges(jnp.array([0.0, 1.0, 4.0]), bins=4)
    Array([0., 1., 2., 3., 4.], dtype=float32)
    """
    from .creation import linspace
    from .ufuncs import where
    (a,) = promote_dtypes_inexact(a)
    if not isinstance(bins, (int, np.integer)):
        b = asarray(bins)
        _check_1d("histogram", bins=b)
        return lax.convert_element_type(b, a.dtype) if dtypes.is_int(b.dtype) else b
    if range is None:
        lo, hi = lax.reduce_min(a, tuple(builtins.range(a.ndim))), \
            lax.reduce_max(a, tuple(builtins.range(a.ndim)))
    else:
        lo, hi = (asarray(r, a.dtype) for r in range)
    # an empty range widens to a unit interval around it, as in NumPy
    same = lax.eq(lo, hi)
    lo = where(same, lax.sub(lo, lax.full((), 0.5, a.dtype)), lo)
    hi = where(same, lax.add(hi, lax.full((), 0.5, a.dtype)), hi)
    return linspace(lo, hi, int(bins) + 1)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``(hist, bin_edges)`` of the flattened ``a`` over a static number of bins; the last bin
    includes its right edge.

    >>> jnp.histogram(jnp.asarray([1.0, 2.0, 2.5, 4.0]), bins=3)[0]
    Array([1., 2., 1.], dtype=float32)
    """
    from .creation import zeros
    from .ufuncs import where
    (a,) = promote_dtypes_inexact(a)
    edges = histogram_bin_edges(a, bins, range)
    a = lax.reshape(a, (a.size,))
    nb = edges.shape[0] + 1
    idx = searchsorted(edges, a, side="right")
    last = lax.slice_in_dim(edges, edges.shape[0] - 1, edges.shape[0])
    idx = where(lax.eq(a, lax.broadcast_in_dim(lax.reshape(last, ()), a.shape, ())),
                edges.shape[0] - 1, idx)
    if weights is None:
        w = lax.full(a.shape, 1, a.dtype)   # float counts, as in JAX
    else:
        w = asarray(weights)
        w = lax.reshape(w, (w.size,))
        if w.shape != a.shape:
            raise ValueError(f"histogram: weights of shape {asarray(weights).shape} do not match "
                             f"a of size {a.size}")
    counts = zeros((nb,), w.dtype).at[idx].add(w)
    counts = lax.slice_in_dim(counts, 1, nb - 1)
    if density:
        from .reductions import diff
        c, = promote_dtypes_inexact(counts)
        widths = lax.convert_element_type(diff(edges), c.dtype)
        total = lax.reduce_sum(c, (0,))
        counts = lax.div(lax.div(c, widths), lax.broadcast_in_dim(total, c.shape, ()))
    return counts, edges


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at ``x``.

    >>> jnp.interp(jnp.asarray([0.5, 2.5]), jnp.asarray([0.0, 1.0, 3.0]), jnp.asarray([0.0, 2.0, 3.0]))
    Array([1.  , 2.75], dtype=float32)
    """
    from .shapes import concatenate
    from .ufuncs import abs as abs_, remainder, where
    x, xp, fp = promote_dtypes_inexact(x, xp, fp)
    _check_1d("interp", xp=xp, fp=fp)
    if xp.shape != fp.shape or xp.shape[0] == 0:
        raise ValueError(f"interp: xp and fp must be non-empty and of one length, got shapes "
                         f"{xp.shape} and {fp.shape}")
    if period is not None:
        period = abs_(asarray(period, x.dtype) if not hasattr(period, "dtype") else period)
        x, xp = remainder(x, period), remainder(xp, period)
        xp, fp = lax.sort([xp, fp], 0, num_keys=1)
        n = xp.shape[0]
        xp = concatenate([lax.sub(lax.slice_in_dim(xp, n - 1, n), period), xp,
                          lax.add(lax.slice_in_dim(xp, 0, 1), period)])
        fp = concatenate([lax.slice_in_dim(fp, n - 1, n), fp, lax.slice_in_dim(fp, 0, 1)])
    n = xp.shape[0]
    if n == 1:   # a single point: constant, then left/right below
        f = lax.broadcast_in_dim(lax.reshape(fp, ()), x.shape, ())
    else:
        f = _interp_inside(x, xp, fp)
    if period is None:
        first, last = lax.reshape(lax.slice_in_dim(xp, 0, 1), ()), \
            lax.reshape(lax.slice_in_dim(xp, n - 1, n), ())
        lval = lax.reshape(lax.slice_in_dim(fp, 0, 1), ()) if left is None else left
        rval = lax.reshape(lax.slice_in_dim(fp, n - 1, n), ()) if right is None else right
        f = where(lax.lt(x, lax.broadcast_in_dim(first, x.shape, ())), lval, f)
        f = where(lax.gt(x, lax.broadcast_in_dim(last, x.shape, ())), rval, f)
    return f


def _interp_inside(x, xp, fp):
    from .ufuncs import abs as abs_, where
    n = xp.shape[0]
    i = searchsorted(xp, x, side="right")
    i = lax.max_(lax.min_(i, lax.full(i.shape, n - 1, i.dtype)), lax.full(i.shape, 1, i.dtype))
    im1 = lax.sub(i, lax.full(i.shape, 1, i.dtype))
    x0, x1 = lax.take(xp, im1, 0), lax.take(xp, i, 0)
    f0, f1 = lax.take(fp, im1, 0), lax.take(fp, i, 0)
    dx = lax.sub(x1, x0)
    # repeated xp values: take the left value instead of dividing by zero (and NaN gradients)
    flat = lax.le(abs_(dx), lax.full(dx.shape, 0, dx.dtype))
    slope = lax.div(lax.sub(f1, f0), where(flat, 1, dx))
    return where(flat, f0, lax.add(f0, lax.mul(lax.sub(x, x0), slope)))

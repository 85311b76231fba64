"""The summary statistics of fnx.scipy.stats: mode, rankdata and sem, as in jax.scipy.stats
(``nan_policy`` "propagate" only, as JAX has it for mode and rankdata)."""
from __future__ import annotations

from collections import namedtuple

from .. import numpy as jnp

ModeResult = namedtuple("ModeResult", ["mode", "count"])


def _propagate_only(name, nan_policy, allowed=("propagate",)):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"{name}: illegal nan_policy {nan_policy!r}; expected one of "
                         "'propagate', 'omit', 'raise'")
    if nan_policy not in allowed:
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not implemented")


def _last_axis(a, axis):
    """``a`` with ``axis`` moved last (flattened where axis is None)."""
    a = jnp.asarray(a)
    return jnp.ravel(a) if axis is None else jnp.moveaxis(jnp.atleast_1d(a), axis, -1)


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
    """The most frequent value along ``axis`` (the smallest of equally frequent ones) and its
    count, as ``ModeResult(mode, count)``.

    >>> mode(jnp.array([1, 2, 2, 3, 3]))
    ModeResult(mode=Array(2, dtype=int32), count=Array(2, dtype=int32))
    """
    _propagate_only("mode", nan_policy)
    a = jnp.asarray(a)
    x = _last_axis(a, axis)
    # counts of equal values, pairwise: the axis is short in the uses mode has
    counts = jnp.sum(x[..., :, None] == x[..., None, :], axis=-1)
    best = jnp.max(counts, axis=-1, keepdims=True)
    big = (jnp.inf if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.iinfo(x.dtype).max)
    value = jnp.min(jnp.where(counts == best, x, big), axis=-1)
    count = best[..., 0].astype(jnp.result_type(int))
    if keepdims:
        if axis is None:
            shape = (1,) * a.ndim
        else:
            shape = list(jnp.atleast_1d(a).shape)
            shape[axis] = 1
        value, count = jnp.reshape(value, shape), jnp.reshape(count, shape)
    return ModeResult(value, count)


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
    """Ranks from 1, ties resolved by ``method``: "average", "min", "max", "dense" or
    "ordinal"; NaN everywhere along a slice holding a NaN.

    >>> rankdata(jnp.array([1, 3, 2, 3]))
    Array([1. , 3.5, 2. , 3.5], dtype=float32)
    """
    _propagate_only("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"rankdata: unknown method {method!r}")
    a = jnp.asarray(a)
    x = _last_axis(a, axis)
    dtype = jnp.result_type(float)
    order = jnp.argsort(x, axis=-1, stable=True)
    inverse = jnp.argsort(order, axis=-1, stable=True)
    if method == "ordinal":
        ranks = (inverse + 1).astype(dtype)
    else:
        below = jnp.sum(x[..., None, :] < x[..., :, None], axis=-1).astype(dtype)
        ties = jnp.sum(x[..., None, :] == x[..., :, None], axis=-1).astype(dtype)
        if method == "dense":
            # each smaller distinct value counts once: 1 / (its multiplicity) per element
            ranks = 1.0 + jnp.sum(jnp.where(x[..., None, :] < x[..., :, None],
                                            1.0 / ties[..., None, :], 0.0), axis=-1)
            ranks = jnp.round(ranks)
        else:
            ranks = {"min": below + 1.0, "max": below + ties,
                     "average": below + 0.5 * (ties + 1.0)}[method]
    ranks = jnp.where(jnp.any(jnp.isnan(x), axis=-1, keepdims=True), jnp.nan, ranks) \
        if jnp.issubdtype(x.dtype, jnp.inexact) else ranks
    return ranks if axis is None else jnp.moveaxis(ranks, -1, axis)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
    """The standard error of the mean, ``std(a, ddof=ddof) / sqrt(n)``; ``nan_policy="omit"``
    leaves NaNs out.

    >>> sem(jnp.array([1.0, 2.0, 3.0, 4.0]))
    Array(0.6454972, dtype=float32)
    """
    _propagate_only("sem", nan_policy, ("propagate", "omit"))
    a = jnp.asarray(a)
    if nan_policy == "omit":
        n = jnp.sum(~jnp.isnan(a), axis=axis, keepdims=keepdims)
        return jnp.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n)
    n = a.size if axis is None else a.shape[axis]
    return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n)


__all__ = ["mode", "rankdata", "sem", "ModeResult"]

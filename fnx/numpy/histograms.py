"""Multidimensional histograms: ``histogram2d`` and ``histogramdd`` (``histogram`` lives with
the sorting functions)."""
from __future__ import annotations

import numpy as np

from ..core.errors import ShapeError
from ._core import promote_dtypes_inexact, stack
from .indexing import ix_, ravel_multi_index, where
from .reductions import diff
from .sorting import bincount, histogram_bin_edges, searchsorted

__all__ = ["histogram2d", "histogramdd"]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The histogram of ``N`` points in ``D`` dimensions (``sample`` of shape ``(N, D)``), with
    ``bins`` a count or edges per dimension; ``(hist, [edges per dimension])``.

    >>> hist, edges = jnp.histogramdd(jnp.array([[0.0, 0.0], [1.0, 1.0]]), bins=2)
    >>> hist
    Array([[1, 0],
           [0, 1]], dtype=int32)
    """
    sample, = promote_dtypes_inexact(sample)
    if sample.ndim != 2:
        raise ShapeError(f"histogramdd: sample must be 2-D (points, dimensions), got shape "
                         f"{sample.shape}")
    n_dims = sample.shape[1]
    if isinstance(bins, (int, np.integer)):
        bins = [int(bins)] * n_dims
    elif len(bins) != n_dims:
        raise ValueError(f"histogramdd: got {len(bins)} bin specifications for {n_dims} "
                         f"dimensions")
    ranges = [None] * n_dims if range is None else list(range)
    if len(ranges) != n_dims:
        raise ValueError(f"histogramdd: got {len(ranges)} ranges for {n_dims} dimensions")
    edges, positions = [], []
    for d in np.arange(n_dims):
        column = sample[:, int(d)]
        e = histogram_bin_edges(column, bins[d], ranges[d])
        index = searchsorted(e, column, side="right")
        positions.append(where(column == e[-1], index - 1, index))   # the last bin is closed
        edges.append(e)
    shape = tuple(e.shape[0] + 1 for e in edges)          # with under- and overflow bins
    flat = ravel_multi_index(tuple(positions), shape, mode="clip")
    counts = bincount(flat, weights, length=int(np.prod(shape)))
    hist = counts.reshape(shape)[(slice(1, -1),) * n_dims]
    if density:
        hist = hist / hist.sum()
        for width in ix_(*[diff(e) for e in edges]):
            hist = hist / width
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The 2-D histogram of points ``(x, y)``: ``(hist, x_edges, y_edges)``.

    >>> jnp.histogram2d(jnp.array([0.0, 1.0]), jnp.array([0.0, 1.0]), bins=2)[0]
    Array([[1, 0],
           [0, 1]], dtype=int32)
    """
    x, y = promote_dtypes_inexact(x, y)
    if isinstance(bins, (int, np.integer)) or np.ndim(bins) == 1 and len(bins) != 2:
        bins = [bins, bins]
    hist, edges = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]

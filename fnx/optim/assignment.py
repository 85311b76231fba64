"""fnx.optim.assignment: the linear assignment problem (optax.assignment), solved by the
Hungarian algorithm in ``lax`` loops, so it runs under ``jit`` and ``vmap``.

Given an ``n x m`` cost matrix, pick ``min(n, m)`` (row, column) pairs, no row or column twice,
with the least total cost.

>>> cost = jnp.array([[8, 4, 7], [5, 2, 3], [9, 6, 7], [9, 4, 8]])
>>> i, j = hungarian_algorithm(cost)
>>> print(cost[i, j].sum())
15
"""
from __future__ import annotations

from .. import numpy as jnp
from ..core.control_flow import fori_loop, scan, while_loop
from ..core.lax.composed import top_k
from ..core.pytree import tree_map


def _empty():
    return jnp.zeros(0, int), jnp.zeros(0, int)


def hungarian_algorithm(cost_matrix):
    """The least-cost assignment ``(i, j)`` of rows to columns (``cost_matrix[i, j].sum()`` is
    its cost), by shortest augmenting paths with row and column potentials, one row at a time
    (the formulation of the Scenic library, as optax has it).

    >>> cost = jnp.array([[90, 80, 75, 70], [35, 85, 55, 65], [125, 95, 90, 95],
    ...                   [45, 110, 95, 115], [50, 100, 90, 100]])
    >>> i, j = hungarian_algorithm(cost)
    >>> print(cost[i, j].sum(), i, j)
    265 [0 1 2 3] [3 2 1 0]
    """
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return _empty()
    transpose = cost_matrix.shape[0] > cost_matrix.shape[1]
    if transpose:
        cost_matrix = cost_matrix.T
    rows, cols = cost_matrix.shape
    # 1-based: column 0 and row 0 are the virtual start of every search; u[rows + 1] is a sink
    # that absorbs the potential updates of unused columns
    u = jnp.zeros(rows + 2)
    v = jnp.zeros(cols + 1)
    parent = jnp.zeros(cols + 1, int)      # the row (1-based) matched to each column

    def add_row(carry, row):
        u, v, parent = carry
        parent = parent.at[0].set(row + 1)

        def search(state):
            u, v, used, minv, path, col = state
            used = used.at[col].set(True)
            free = ~used[1:]
            reduced = cost_matrix[parent[col] - 1, :] - u[parent[col]] - v[1:]
            reduced = jnp.where(free, reduced, jnp.inf)
            path = jnp.where(reduced < minv, col, path)
            minv = jnp.where(reduced < minv, reduced, minv)
            col = jnp.argmin(jnp.where(free, minv, jnp.inf)) + 1
            delta = minv.min(where=free, initial=jnp.inf)
            u = u.at[jnp.where(used, parent, rows + 1)].add(delta)
            v = jnp.where(used, v - delta, v)
            minv = jnp.where(free, minv - delta, minv)
            return u, v, used, minv, path, col

        state = (u, v, jnp.zeros(cols + 1, bool), jnp.full(cols, jnp.inf),
                 jnp.zeros(cols, int), 0)
        u, v, _, _, path, col = while_loop(lambda s: parent[s[-1]] != 0, search, state)

        def back(state):
            parent, col = state
            prev = path[col - 1]
            return parent.at[col].set(parent[prev]), prev
        parent, _ = while_loop(lambda s: s[1] != 0, back, (parent, col))
        return (u, v, parent), None

    (u, v, parent), _ = scan(add_row, (u, v, parent), jnp.arange(rows))
    if rows == cols:
        parent, indices = parent[1:], jnp.arange(rows)
    else:
        parent, indices = top_k(parent[1:], rows)
    parent = parent - 1
    return (indices, parent) if transpose else (parent, indices)


def base_hungarian_algorithm(cost_matrix):
    """The least-cost assignment ``(i, j)`` by Crouse's shortest augmenting path algorithm
    (IEEE TAES 2016, the pseudocode SciPy's ``linear_sum_assignment`` follows); the same
    answer as :func:`hungarian_algorithm` up to ties, by a longer program.

    >>> cost = jnp.array([[8, 4, 7], [5, 2, 3], [9, 6, 7], [9, 4, 8]])
    >>> i, j = base_hungarian_algorithm(cost)
    >>> print(cost[i, j].sum(), i, j)
    15 [0 1 3] [0 2 1]
    """
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return _empty()
    transpose = cost_matrix.shape[1] < cost_matrix.shape[0]
    if transpose:
        cost_matrix = cost_matrix.T
    costs = cost_matrix.astype(float)
    rows, cols = costs.shape
    u = jnp.zeros(rows, costs.dtype)
    v = jnp.zeros(cols, costs.dtype)
    path = jnp.full(cols, -1)
    col4row = jnp.full(rows, -1)
    row4col = jnp.full(cols, -1)

    def augment_from(current_row, carry):
        u, v, path, row4col, col4row = carry
        sink, min_value, sr, sc, spc, path = _shortest_augmenting_path(
            costs, u, v, path, row4col, current_row)
        u = u.at[current_row].add(min_value)
        others = sr & (jnp.arange(rows) != current_row)
        u = jnp.where(others, u + min_value - spc[col4row], u)
        v = jnp.where(sc, v + spc - min_value, v)

        def flip(state):
            sink, row4col, col4row, _ = state
            i = path[sink]
            row4col = row4col.at[sink].set(i)
            col4row, sink = col4row.at[i].set(sink), col4row[i]
            return sink, row4col, col4row, i == current_row
        _, row4col, col4row, _ = while_loop(lambda s: ~s[-1], flip,
                                            (sink, row4col, col4row, False))
        return u, v, path, row4col, col4row

    *_, col4row = fori_loop(0, rows, augment_from, (u, v, path, row4col, col4row))
    if transpose:
        order = col4row.argsort()
        return col4row[order], order
    return jnp.arange(rows), col4row


def _shortest_augmenting_path(costs, u, v, path, row4col, start_row):
    """Dijkstra over the reduced costs from ``start_row`` until a free column is reached:
    ``(sink, min_value, rows seen, columns seen, shortest path costs, path)``; sink -1 when
    the costs are infeasible."""
    cols = costs.shape[1]

    def relax(it, state):
        remaining, min_value, i, spc, path, lowest, index = state
        j = remaining[it]
        r = min_value + costs[i, j] - u[i] - v[j]
        path = path.at[j].set(jnp.where(r < spc[j], i, path[j]))
        spc = spc.at[j].min(r)
        index = jnp.where((spc[j] < lowest) | ((spc[j] == lowest) & (row4col[j] == -1)),
                          it, index)
        return remaining, min_value, i, spc, path, jnp.minimum(lowest, spc[j]), index

    def step(state):
        path, current_row, min_value, num_remaining, remaining, sr, sc, spc, sink = state
        sr = sr.at[current_row].set(True)
        remaining, _, _, spc, path, lowest, index = fori_loop(
            0, num_remaining, relax, (remaining, min_value, current_row, spc, path, jnp.inf, -1))
        min_value = lowest
        sink = jnp.where(min_value == jnp.inf, -1, sink)    # infeasible costs

        j = remaining[index]
        free = row4col[j] == -1
        found = (remaining.at[index].set(remaining[num_remaining - 1]), jnp.where(free, j, sink),
                 jnp.where(free, current_row, row4col[j]), sc.at[j].set(True), num_remaining - 1)
        kept = (remaining, sink, current_row, sc, num_remaining)
        remaining, sink, current_row, sc, num_remaining = tree_map(
            lambda a, b: jnp.where(sink == -1, a, b), found, kept)
        return path, current_row, min_value, num_remaining, remaining, sr, sc, spc, sink

    init = (path, start_row, 0.0, cols, jnp.arange(cols)[::-1], jnp.zeros(costs.shape[0], bool),
            jnp.zeros(cols, bool), jnp.full(cols, jnp.inf), -1)
    path, _, min_value, _, _, sr, sc, spc, sink = while_loop(lambda s: s[-1] == -1, step, init)
    return sink, min_value, sr, sc, spc, path


__all__ = ["base_hungarian_algorithm", "hungarian_algorithm"]

"""Looking at how arrays are laid out over devices: ``inspect_array_sharding`` hands a value's
sharding to a callback, ``visualize_sharding`` draws a sharding's blocks as a text table.

A concrete array reports its own sharding at once. Under ``vmap`` and ``grad`` the value under
the transformation (the batched array, the primal) is inspected, as JAX's rules do. Inside
``jit`` the callback runs while the function is traced, once per compilation, as JAX runs it
while compiling; fnx computes a jitted function's values on one device, whose sharding it
reports.
"""
from __future__ import annotations

import sys

from .core import Array, Tracer, get_backend
from .pytree import tree_leaves
from .sharding import SingleDeviceSharding


def _sharding_of(value):
    """The sharding of ``value``, looking through vmap's and jvp's tracers to the value they
    carry; a staged value is computed on the default device."""
    while isinstance(value, Tracer):
        inner = getattr(value, "primal", None)
        if inner is None:
            inner = getattr(value, "val", None)
        if inner is None:
            return SingleDeviceSharding(get_backend())
        value = inner
    if isinstance(value, Array):
        return value.sharding
    return SingleDeviceSharding(get_backend())


def inspect_array_sharding(value, *, callback) -> None:
    """Calls ``callback(sharding)`` with the sharding of each array in the pytree ``value``:
    at once for concrete arrays, while tracing inside ``jit``.

    >>> seen = []
    >>> fnx.debug.inspect_array_sharding({"w": jnp.ones(4)}, callback=seen.append)
    >>> seen
    [SingleDeviceSharding(device=CpuDevice(id=0))]
    """
    for leaf in tree_leaves(value):
        callback(_sharding_of(leaf))


def visualize_array_sharding(arr, **kwargs) -> None:
    """Prints the blocks of ``arr`` (1-D or 2-D) and the devices holding each, as
    :func:`visualize_sharding` draws them.

    >>> fnx.debug.visualize_array_sharding(jnp.ones(4))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    <BLANKLINE>
    """
    inspect_array_sharding(
        arr, callback=lambda sharding: visualize_sharding(arr.shape, sharding, **kwargs))


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map=None) -> None:
    """Prints which devices hold which block of an array of ``shape`` (1-D or 2-D) laid out
    by ``sharding``: a text table with one cell per block, sized like the block, naming its
    devices (``CPU 0,1`` for a block two devices hold). JAX draws it with ``rich``; fnx draws
    the same table in plain text, so ``use_color`` and ``color_map`` change nothing.

    >>> mesh = fnx.make_mesh((1,), ("x",))
    >>> fnx.debug.visualize_sharding((4, 4), fnx.NamedSharding(mesh, fnx.P("x")))
    ┌───────────────────────┐
    │                       │
    │                       │
    │                       │
    │                       │
    │         CPU 0         │
    │                       │
    │                       │
    │                       │
    │                       │
    └───────────────────────┘
    <BLANKLINE>
    """
    del use_color, color_map
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_sharding only works for shapes with 1 and 2 dimensions, "
                         f"got {shape}")
    blocks: dict = {}        # (row, column) of a block -> (its fraction of height, width, ids)
    kind = None
    for device, index in sharding.devices_indices_map(shape).items():
        kind = kind or getattr(device, "platform", "device").upper()
        spans = [_span(s, n) for s, n in zip(index, shape)]
        if len(shape) == 1:
            spans = [(0, None)] + spans
        (row, height), (col, width) = spans
        entry = blocks.setdefault((row, col), (height, width, set()))
        entry[2].add(device.id)
    rows = 1 + max(r for r, _ in blocks)
    cols = 1 + max(c for _, c in blocks)
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    texts, widths, heights = {}, [0] * cols, [1] * rows
    for (r, c), (height, width, ids) in blocks.items():
        text = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        # the cell sizes JAX's table gives (a unit of height is 2.5 characters wide), less
        # the borders, and never narrower than the text
        cell_width = min(max(int(width * base_width * 2.5), min_width), max_width)
        widths[c] = max(widths[c], cell_width - 2, len(text))
        if height is not None:
            top, rem = divmod(int(height * base_height) - 2, 2)
            heights[r] = max(heights[r], 1 + max(top, 0) + max(top + rem, 0))
        texts[r, c] = text
    sys.stdout.write(_table(texts, widths, heights) + "\n\n")


def _span(index, n):
    """(which block, its fraction of the dimension) of one dimension's index."""
    if isinstance(index, int):
        index = slice(index, index + 1)
    start, stop, _ = index.indices(n)
    size = stop - start
    return (start // size if size else 0), (size / n if n else 1.0)


def _table(texts, widths, heights):
    """A box-drawn table: one line per line of each row, the text centred in its cell."""
    def rule(left, mid, right):
        return left + mid.join("─" * w for w in widths) + right
    lines = [rule("┌", "┬", "┐")]
    for r, height in enumerate(heights):
        middle = (height - 1) // 2
        for line in range(height):
            cells = [(texts.get((r, c), "") if line == middle else "").center(w)
                     for c, w in enumerate(widths)]
            lines.append("│" + "│".join(cells) + "│")
        lines.append(rule("├", "┼", "┤") if r + 1 < len(heights) else rule("└", "┴", "┘"))
    return "\n".join(lines)

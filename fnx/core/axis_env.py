"""The named axes in scope: the axis environment while functions are traced, and the device a
device program runs as.

``vmap(axis_name=...)``, pmap and shard_map bind names (with their sizes) while they trace a
function; collectives look them up (fnx.core.collectives). The SPMD engine (fnx.core.spmd) runs
each device's program with a ``DeviceContext`` saying where the device sits in its mesh, which
the backends' collective impls read.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from .errors import AxisNameError


class _AxisEnv(threading.local):
    def __init__(self):
        self.frames: list[tuple[str, int]] = []
        self.device = None          # the DeviceContext of the device program this thread runs


_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(frames):
    """Bind the named axes ``frames`` (pairs ``(name, size)``) inside the block."""
    frames = [(n, int(s)) for n, s in frames if n is not None]
    _env.frames.extend(frames)
    try:
        yield
    finally:
        del _env.frames[len(_env.frames) - len(frames):]


def axis_env_key() -> tuple:
    """The bound axes, as part of a cache key (a traced program depends on their sizes)."""
    return tuple(_env.frames)


def names_of(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def axis_size(axis_name) -> int:
    """The size of the named axis (the product of the sizes for a tuple of names).

    >>> fnx.vmap(lambda x: x * fnx.lax.axis_size('i'), axis_name='i')(jnp.ones(3))
    Array([3., 3., 3.], dtype=float32)
    """
    size = 1
    for name in names_of(axis_name):
        for bound, n in reversed(_env.frames):
            if bound == name:
                size *= n
                break
        else:
            bound = sorted({b for b, _ in _env.frames})
            raise AxisNameError(
                f"unbound axis name: {name!r}. A collective names an axis that an enclosing "
                f"vmap(axis_name=...), pmap(axis_name=...) or shard_map mesh binds; bound "
                f"here: {bound or 'none'}")
    return size


class DeviceContext:
    """What a device's program needs to run its collectives: the mesh axes ``(name, size)``
    in order, this device's coordinates along them, and ``comm``, the backend's communicator
    over all the program's devices (rank = row-major position in the mesh)."""

    def __init__(self, axes, coords, comm):
        self.axes = tuple(axes)
        self.coords = tuple(coords)
        self.comm = comm
        self.rank = int(np.ravel_multi_index(self.coords, [s for _, s in self.axes])) \
            if self.axes else 0
        self._groups: dict = {}

    def group(self, names) -> list[int]:
        """The ranks that share this device's coordinates on every axis outside ``names``,
        in the row-major order of their coordinates along ``names``."""
        names = names_of(names)
        found = self._groups.get(names)
        if found is None:
            found = self._groups[names] = self._group(names)
        return found

    def _group(self, names) -> list[int]:
        for n in names:
            if n not in dict(self.axes):
                raise AxisNameError(f"unbound axis name: {n!r}; this device program binds "
                                    f"{[a for a, _ in self.axes]}")
        sizes = [s for _, s in self.axes]
        ranks = []
        for combo in np.ndindex(*[dict(self.axes)[n] for n in names]):
            coords = list(self.coords)
            for n, c in zip(names, combo):
                coords[[a for a, _ in self.axes].index(n)] = c
            ranks.append(int(np.ravel_multi_index(coords, sizes)))
        return ranks

    def index(self, names) -> int:
        """This device's position in ``group(names)``."""
        return self.group(names).index(self.rank)


@contextlib.contextmanager
def device_context(ctx: DeviceContext):
    """Run the block as the program of the device ``ctx`` describes (the SPMD engine)."""
    prev, _env.device = _env.device, ctx
    try:
        yield ctx
    finally:
        _env.device = prev


def current_device() -> DeviceContext:
    """The device context of this thread's device program (backends' collective impls)."""
    if _env.device is None:
        raise AxisNameError("a collective ran outside a device program: its axis is bound by "
                            "no pmap, shard_map or vmap(axis_name=...)")
    return _env.device


__all__ = ["extend_axis_env", "axis_env_key", "axis_size", "DeviceContext", "device_context",
           "current_device"]

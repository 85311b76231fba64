"""Virtual CPU devices and the collectives between them.

Every virtual device's program runs in a thread of this process (fnx.core.spmd); a collective
is one rendezvous of all of them: each device leaves its operand in a slot, waits for the
others, computes its own result from its group's operands, and waits again before the slots
are reused, so no device reads an operand its owner has moved on from.
"""
from __future__ import annotations

import os
import re
import threading

import numpy as np

from ..core import collectives as C
from ..core.config import config
from ..core.errors import ShapeError

_FLAG = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def cpu_device_count() -> int:
    """``jax_num_cpu_devices`` when set, else XLA_FLAGS' host device count, else 1."""
    if config.num_cpu_devices != -1:
        return config.num_cpu_devices
    m = _FLAG.search(os.environ.get("XLA_FLAGS", ""))
    return int(m.group(1)) if m else 1


class HostCommunicator:
    """A rendezvous of ``size`` device threads (rank = position among the devices)."""

    def __init__(self, device_ids):
        self.device_ids = device_ids
        self.size = len(device_ids)
        self._slots: list = [None] * self.size
        self._barrier = threading.Barrier(self.size)

    def exchange(self, rank: int, value, group: list[int], combine):
        """``combine([values of the group's ranks, in group order])``, computed by ``rank``
        while every operand is still in place."""
        self._slots[rank] = value
        self._barrier.wait()
        try:
            vals = [self._slots[r] for r in group]
            _check_alike(vals, group, self.device_ids)
            return combine(vals)
        finally:
            self._barrier.wait()

    def abort(self):
        """Release the other devices' threads (one device failed): they raise
        ``BrokenBarrierError``."""
        self._barrier.abort()


def communicator(device_ids) -> HostCommunicator:
    return HostCommunicator(device_ids)


def _check_alike(vals, group, device_ids):
    first = vals[0]
    if all(v.shape == first.shape and v.dtype == first.dtype for v in vals):
        return
    listing = ", ".join(f"CpuDevice(id={device_ids[r]}): {v.dtype.name}{list(v.shape)}"
                        for r, v in zip(group, vals))
    raise ShapeError(f"a collective got operands of different shapes or dtypes on the devices "
                     f"of its group: {listing}")


def _run(x, axes, combine):
    ctx = C.current_device()
    group = ctx.group(axes)
    return ctx.comm.exchange(ctx.rank, np.asarray(x), group,
                             lambda vals: combine(vals, group.index(ctx.rank)))


def _reduce(ufunc):
    def impl(x, *, axes):
        return _run(x, axes, lambda vals, me: ufunc.reduce(np.stack(vals), axis=0))
    return impl


def _all_gather(x, *, axes, axis_size, axis, tiled):
    join = np.concatenate if tiled else np.stack
    return _run(x, axes, lambda vals, me: join(vals, axis=axis))


def _psum_scatter(x, *, axes, axis_size, axis, tiled):
    def combine(vals, me):
        total = np.sum(np.stack(vals), axis=0, dtype=vals[0].dtype)
        block = np.split(total, axis_size, axis=axis)[me]
        return np.array(block if tiled else np.squeeze(block, axis))
    return _run(x, axes, combine)


def _ppermute(x, *, axes, perm):
    def combine(vals, me):
        src = [s for s, d in perm if d == me]
        return np.array(vals[src[0]]) if src else np.zeros_like(vals[me])
    return _run(x, axes, combine)


def _all_to_all(x, *, axes, axis_size, split_axis, concat_axis):
    def combine(vals, me):
        return np.concatenate([np.split(v, axis_size, axis=split_axis)[me] for v in vals],
                              axis=concat_axis)
    return _run(x, axes, combine)


def _axis_index(*, axes):
    return np.asarray(C.current_device().index(axes), np.int32)


impls = {
    C.psum_p: _reduce(np.add), C.pmax_p: _reduce(np.maximum), C.pmin_p: _reduce(np.minimum),
    C.all_gather_p: _all_gather, C.psum_scatter_p: _psum_scatter, C.ppermute_p: _ppermute,
    C.all_to_all_p: _all_to_all, C.axis_index_p: _axis_index,
}

__all__ = ["cpu_device_count", "HostCommunicator", "communicator", "impls"]

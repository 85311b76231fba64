"""Collectives on GPUs through NCCL (CuPy's ``cupy.cuda.nccl``).

A device program (fnx.core.spmd) runs each collective as an NCCL call on the stream its step
runs on, so a jitted device program captures its all-reduces into its CUDA graph like any other
launch (NCCL >= 2.9); results are allocated before the call, from the graph's pool during a
capture. Communicators are made once per group of devices (the devices that share every mesh
coordinate but the collective's axes) and kept: inside one process with ``ncclCommInitAll``,
across processes (fnx.distributed) with a unique id that process 0 publishes in the TCP store.

NVLink multicast (NVLS) stays off: ``NCCL_NVLS_ENABLE=0`` is set before NCCL starts, as the
machines fnx runs on require (set ``FNX_NCCL_NVLS=1`` to leave NCCL's default).
"""
from __future__ import annotations

import os
import threading

import numpy as np

from ..core import collectives as C, dtypes
from ..core.errors import ShapeError

if os.environ.get("FNX_NCCL_NVLS") != "1":
    os.environ["NCCL_NVLS_ENABLE"] = "0"


def _nccl():
    from cupy.cuda import nccl
    return nccl


# NCCL's data type enum (nccl.h): bfloat16 is 9 from NCCL 2.10
_DTYPES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int32): 2,
           np.dtype(np.uint32): 3, np.dtype(np.int64): 4, np.dtype(np.uint64): 5,
           np.dtype(np.float16): 6, np.dtype(np.float32): 7, np.dtype(np.float64): 8,
           np.dtype(np.bool_): 1}
_SUM, _PROD, _MAX, _MIN = 0, 1, 2, 3


def nccl_dtype(dtype) -> int:
    dtype = np.dtype(dtype)
    if dtype == dtypes.bfloat16:
        return 9
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ShapeError(f"NCCL has no type for {dtype.name} (collectives on GPUs take real "
                         "floating-point, integer and boolean arrays)") from None


class NcclGroup:
    """The NCCL communicators of a program's devices: one per device for each group of devices
    a collective spans, made when first needed. ``devices`` are the program's devices in mesh
    order (remote ones, in other processes, included); ``store`` the TCP store when the mesh
    spans processes."""

    def __init__(self, devices, store=None, process_index=0):
        self.devices = list(devices)
        self.store = store
        self.process_index = process_index
        self._comms: dict = {}          # (group ranks) -> {rank: NcclCommunicator}
        self._lock = threading.Lock()
        self._made = threading.Condition(self._lock)

    def comm(self, group: tuple, rank: int):
        """This rank's communicator among the ranks ``group``."""
        with self._lock:
            made = self._comms.get(group)
            if made is None:
                made = self._comms[group] = self._make(group)
            return made[rank]

    def _make(self, group):
        nccl = _nccl()
        local = [r for r in group if getattr(self.devices[r], "process_index", 0)
                 == self.process_index]
        if self.store is None:        # every device in this process
            comms = nccl.NcclCommunicator.initAll([self.devices[r].cuda_id for r in group])
            return dict(zip(group, comms))
        import cupy as cp
        key = "nccl-id/" + ",".join(map(str, group))
        if local and local[0] == group[0]:
            self.store.set(key, list(nccl.get_unique_id()))
        uid = tuple(self.store.get(key))
        comms = {}
        nccl.groupStart()
        try:
            for r in local:
                with cp.cuda.Device(self.devices[r].cuda_id):
                    comms[r] = nccl.NcclCommunicator(len(group), uid, group.index(r))
        finally:
            nccl.groupEnd()
        return comms

    def abort(self):
        """A device failed: its peers would wait in NCCL for ever, so the group is dropped
        (the next program makes new communicators)."""
        with self._lock:
            for made in self._comms.values():
                for c in made.values():
                    try:
                        c.abort()
                    except Exception:   # noqa: BLE001  (aborting is best effort)
                        pass
            self._comms.clear()


def _setup(axes):
    import cupy as cp
    ctx = C.current_device()
    group = tuple(ctx.group(axes))
    return ctx, group, ctx.comm.comm(group, ctx.rank), cp.cuda.get_current_stream().ptr


def _dense(x):
    """``x`` as a dense device array; a host scalar (a literal operand) by a fill kernel, since
    a copy from the host cannot be captured."""
    import cupy as cp
    if not isinstance(x, cp.ndarray):
        return cp.full(np.shape(x), x, np.asarray(x).dtype)
    return x if x.flags.c_contiguous else cp.ascontiguousarray(x)


def _reduce(op):
    def impl(x, *, axes):
        import cupy as cp
        ctx, group, comm, stream = _setup(axes)
        x = _dense(x)
        out = cp.empty_like(x)
        comm.allReduce(x.data.ptr, out.data.ptr, x.size, nccl_dtype(x.dtype), op, stream)
        return out
    return impl


def _all_gather(x, *, axes, axis_size, axis, tiled):
    import cupy as cp
    ctx, group, comm, stream = _setup(axes)
    x = _dense(x)
    out = cp.empty((axis_size,) + x.shape, x.dtype)
    comm.allGather(x.data.ptr, out.data.ptr, x.size, nccl_dtype(x.dtype), stream)
    out = cp.moveaxis(out, 0, axis)
    if tiled:
        shape = list(x.shape)
        shape[axis] *= axis_size
        out = out.reshape(shape)
    return _dense(out)


def _psum_scatter(x, *, axes, axis_size, axis, tiled):
    import cupy as cp
    ctx, group, comm, stream = _setup(axes)
    x = _dense(x)
    shape = list(x.shape)
    blocks = shape[:axis] + [axis_size, shape[axis] // axis_size] + shape[axis + 1:]
    send = _dense(cp.moveaxis(x.reshape(blocks), axis, 0))     # block k contiguous, k-th
    out = cp.empty(send.shape[1:], x.dtype)
    comm.reduceScatter(send.data.ptr, out.data.ptr, out.size, nccl_dtype(x.dtype), _SUM,
                       stream)
    return out if tiled else out.reshape([n for d, n in enumerate(out.shape) if d != axis])


def _ppermute(x, *, axes, perm):
    import cupy as cp
    nccl = _nccl()
    ctx, group, comm, stream = _setup(axes)
    me = group.index(ctx.rank)
    x = _dense(x)
    out = cp.zeros_like(x)
    dt = nccl_dtype(x.dtype)
    nccl.groupStart()
    try:
        for s, d in perm:
            if s == me:
                comm.send(x.data.ptr, x.size, dt, d, stream)
            if d == me:
                comm.recv(out.data.ptr, out.size, dt, s, stream)
    finally:
        nccl.groupEnd()
    return out


def _all_to_all(x, *, axes, axis_size, split_axis, concat_axis):
    import cupy as cp
    nccl = _nccl()
    ctx, group, comm, stream = _setup(axes)
    x = _dense(x)
    chunks = [_dense(c) for c in cp.split(x, axis_size, axis=split_axis)]
    got = [cp.empty_like(chunks[0]) for _ in range(axis_size)]
    dt = nccl_dtype(x.dtype)
    nccl.groupStart()
    try:
        for peer in range(axis_size):
            comm.send(chunks[peer].data.ptr, chunks[peer].size, dt, peer, stream)
            comm.recv(got[peer].data.ptr, got[peer].size, dt, peer, stream)
    finally:
        nccl.groupEnd()
    return cp.concatenate(got, axis=concat_axis)


def _axis_index(*, axes):
    import cupy as cp
    return cp.full((), C.current_device().index(axes), np.int32)   # a fill: capture-safe


def impls():
    """The collectives' GPU impls (the GPU backend's table adds them)."""
    return {C.psum_p: _reduce(_SUM), C.pmax_p: _reduce(_MAX), C.pmin_p: _reduce(_MIN),
            C.all_gather_p: _all_gather, C.psum_scatter_p: _psum_scatter,
            C.ppermute_p: _ppermute, C.all_to_all_p: _all_to_all, C.axis_index_p: _axis_index}


_groups: dict = {}
_groups_lock = threading.Lock()


def group_for(devices, store=None, process_index=0) -> NcclGroup:
    """The (cached) NCCL group of this device set: communicators are expensive to make."""
    key = tuple((getattr(d, "process_index", 0), d.id) for d in devices)
    with _groups_lock:
        g = _groups.get(key)
        if g is None:
            g = _groups[key] = NcclGroup(devices, store, process_index)
        return g


__all__ = ["NcclGroup", "group_for", "impls", "nccl_dtype"]

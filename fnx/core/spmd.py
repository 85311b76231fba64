"""The SPMD engine: one traced program, run by every device of a mesh on its own block.

pmap and shard_map trace the per-device function once (its collectives name mesh axes), compile
it for each device, and run the copies side by side, one thread per device; a device's
collectives reach the others through the backend's communicator (memory on virtual CPU
devices, NCCL on GPUs). A failing device releases the others, and the first real error is
raised in the caller's thread, at the caller's line.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

from .axis_env import DeviceContext, device_context, extend_axis_env
from .config import config
from .core import Array
from .errors import FnxError, user_frame
from .jaxpr import jaxpr_with_consts_as_args
from .partial_eval import trace_to_jaxpr
from .passes import optimize

_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_pools: dict[int, ThreadPoolExecutor] = {}
_pool_lock = threading.Lock()


def trace_per_device(flat_fun, block_avals, axes, description):
    """``(jaxpr, consts)`` of ``flat_fun`` on one device's blocks, with the mesh ``axes``
    (pairs ``(name, size)``) bound for its collectives."""
    with extend_axis_env(axes):
        closed = trace_to_jaxpr(flat_fun, block_avals, description=description)
    jaxpr = jaxpr_with_consts_as_args(closed)
    if config.jit_optimize:
        jaxpr = optimize(jaxpr)
    return jaxpr, closed.consts


def _executable(jaxpr, device):
    """``jaxpr`` compiled for ``device`` (each device thread compiles its own, in parallel)."""
    with _pool_lock:
        per_device = _programs.setdefault(jaxpr, {})
        exe = per_device.get(id(device))
    if exe is None:
        exe = device.compile(jaxpr, [])
        with _pool_lock:
            exe = per_device.setdefault(id(device), exe)
    return exe


def _pool(n: int) -> ThreadPoolExecutor:
    with _pool_lock:
        pool = _pools.get(n)
        if pool is None:
            pool = _pools[n] = ThreadPoolExecutor(n, thread_name_prefix="fnx-device")
        return pool


def run(jaxpr, axes, devices, blocks, comm=None, ranks=None):
    """Run ``jaxpr`` on every device of ``devices`` (the mesh's devices in row-major order, one
    per combination of the ``axes`` coordinates): ``blocks[i]`` are device ``i``'s arguments
    (Arrays or host values). Returns each device's results as Arrays on that device.

    ``comm`` and ``ranks`` (this process's devices' positions in the mesh) are given when the
    mesh spans several processes (fnx.distributed); by default every device is local."""
    import numpy as np
    sizes = [s for _, s in axes]
    ranks = list(range(len(devices))) if ranks is None else ranks
    comm = comm if comm is not None else devices[0].communicator(devices)
    invars = jaxpr.invars
    caller = user_frame()
    # No device starts running before every device has compiled: a device waiting in a
    # collective for a peer that is still compiling keeps its GPU busy, and compiling may
    # synchronise with that GPU (reading a constant back), which would then wait for ever.
    compiled = threading.Barrier(len(devices))

    def one(i):
        dev = devices[i]
        coords = np.unravel_index(ranks[i], sizes) if sizes else ()
        with dev.scope(), device_context(DeviceContext(axes, coords, comm)):
            try:
                exe = _executable(jaxpr, dev)
                compiled.wait()
                bufs = [dev.cast(dev.to_buffer(b, v.aval.dtype), v.aval.dtype)
                        for b, v in zip(blocks[i], invars)]
                outs = exe(*bufs)
            except threading.BrokenBarrierError:
                raise
            except BaseException:
                compiled.abort()   # the other devices would wait for this one for ever
                comm.abort()
                raise
            return [Array(dev.cast(o, v.aval.dtype), dev, v.aval.weak_type)
                    for o, v in zip(outs, jaxpr.outvars)]

    if len(devices) == 1:
        try:
            return [one(0)]
        except FnxError as e:
            raise _at(e, caller) from None
    futures = [_pool(len(devices)).submit(one, i) for i in range(len(devices))]
    results, errors = [], []
    for f in futures:
        try:
            results.append(f.result())
        except threading.BrokenBarrierError as e:
            errors.append((1, e))
        except BaseException as e:   # noqa: BLE001  (re-raised below)
            errors.append((0, e))
    if errors:
        first = min(errors, key=lambda pe: pe[0])[1]
        if isinstance(first, FnxError):
            raise _at(first, caller) from None
        raise first
    return results


def _at(error: FnxError, caller):
    """``error`` again, pointing at the caller's line (a device thread has no user frames)."""
    if error.source is not None:
        return error
    try:
        return type(error)(str(error).split("\n  at ")[0], source=caller)
    except TypeError:     # an error class with a signature of its own
        return error


# ---------------------------------------------------------------------------------------------
# Blocks: each device's part of a global array, kept on the devices between calls

# Array -> (sharding, [each device's block buffer]): the blocks a sharded array already has on
# its devices (results of a device program, or device_put with a sharding), so that the next
# program reads them where they are instead of cutting the global value again
# (arrays are unhashable, so the table is keyed by id and entries leave with their array)
_resident: dict = {}


def remember_blocks(array, sharding, bufs) -> None:
    key = id(array)
    _resident[key] = (weakref.ref(array, lambda _: _resident.pop(key, None)), sharding,
                      list(bufs))


def place_blocks(x, sharding) -> None:
    """Copy each block of ``x`` to the device ``sharding`` puts it on, and remember them."""
    import numpy as np
    index = sharding.devices_indices_map(x.shape)
    host = x._backend.to_numpy(x._value)
    bufs = []
    for d, where in index.items():
        with d.scope():       # a dense copy: generated kernels read blocks as row-major
            bufs.append(d.from_numpy(np.ascontiguousarray(host[where])))
    remember_blocks(x, sharding, bufs)


def blocks(x, sharding, devices, index_of):
    """Device ``i``'s block of ``x`` for each of ``devices``: ``index_of(i)`` is the block's
    index into the global value. Blocks ``x`` already holds under ``sharding`` are reused."""
    held = _resident.get(id(x)) if type(x) is Array else None
    if held is not None and held[0]() is x and held[1] == sharding \
            and len(held[2]) == len(devices) and not x.is_deleted():
        return [Array(b, d, x.weak_type) for b, d in zip(held[2], devices)]
    if type(x) is Array:
        src = x._backend
        return [Array(x._value[index_of(i)], src, x.weak_type) for i in range(len(devices))]
    import numpy as np
    host = np.asarray(x)
    return [host[index_of(i)] for i in range(len(devices))]


def global_array(per_device, sharding, devices, shape, index_of, weak):
    """The global Array whose blocks are ``per_device`` (Arrays on ``devices``); a block that
    is the whole array (replicated) is taken as it is, without a copy."""
    first = per_device[0]
    if tuple(first.shape) == tuple(shape):
        out = Array(first._value, first._backend, weak)
    else:
        import numpy as np
        dev = devices[0]
        with dev.scope():     # on the first device; GPUs copy the blocks peer to peer
            bufs = [dev.to_buffer(b, b.dtype) for b in per_device]
            like = bufs[0] if not isinstance(bufs[0], np.generic) else None
            whole = np.empty(shape, first.dtype, like=like)     # NumPy or CuPy
            for i in reversed(range(len(bufs))):    # copies of a block: the first one's kept
                whole[index_of(i)] = bufs[i]
        out = Array(whole, dev, weak)
    out._sharding = sharding
    remember_blocks(out, sharding, [b._value for b in per_device])
    return out


__all__ = ["trace_per_device", "run", "blocks", "global_array", "place_blocks",
           "remember_blocks"]

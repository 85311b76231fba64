"""The GPU backend for eager execution: every primitive on CuPy arrays.

Most NumPy impls run unchanged on CuPy arrays through NumPy's dispatch protocols
(``__array_ufunc__`` / ``__array_function__``); the ones that create host arrays are overridden
here. Imported only when the GPU path is used.
"""
from __future__ import annotations

import numpy as np

import cupy as cp

from ..core import lax
from ..core.convolution import conv_general_dilated_p, im2col
from ..core.core import (Array, Device, get_backend, global_devices, process_index,
                         process_store)
from ..core.interop import host_view, is_foreign_array, on_gpu
from ..cuda import cudnn, nccl, scatter, solver
from ..cuda.gemm_table import matmul_precision
from . import numpy_backend
from .decomposed import decomposed_impl


def _erf(x):
    from cupyx.scipy.special import erf
    return erf(x)


def _iota(*, dtype, shape, dimension):
    idx = cp.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return cp.ascontiguousarray(cp.broadcast_to(idx.reshape(view), shape))


def _scatter(x, idx, upd, *, axis, mode):
    if scatter.ordered(mode) and scatter.supported(x.dtype, mode):
        return scatter.scatter(x, idx, upd, axis=axis, mode=mode, in_order=True)
    flat_idx = idx.reshape(-1)
    n = x.shape[axis]
    keep = None
    if mode == "set":
        # fancy assignment with repeated positions keeps an arbitrary update; NumPy (and fnx)
        # keep the last: every other update goes to the spare element
        order = cp.arange(flat_idx.size)
        in_range = (flat_idx >= 0) & (flat_idx < n)
        last = cp.full(n + 1, -1, dtype=order.dtype)
        cp.maximum.at(last, cp.where(in_range, flat_idx, n), order)
        keep = last[cp.where(in_range, flat_idx, n)] == order
    lin = numpy_backend.scatter_positions(cp, x.shape, flat_idx, axis, keep)
    out = cp.empty(x.size + 1, x.dtype)        # the last element takes dropped updates
    out[:-1] = x.reshape(-1)
    u = upd.reshape(lin.shape)
    if mode == "set":
        out[lin] = u
    elif mode == "add":
        cp.add.at(out, lin, u)
    else:
        # CuPy has no multiplicative scatter, and its min/max scatters round float64 through
        # float32: these (rare) updates run on the host, exactly
        host = cp.asnumpy(out)
        ufunc = {"mul": np.multiply, "min": np.minimum, "max": np.maximum}[mode]
        ufunc.at(host, cp.asnumpy(lin), cp.asnumpy(u))
        out = cp.asarray(host)
    return out[:-1].reshape(x.shape)


def upload(host) -> "cp.ndarray":
    """A device copy of host array ``host`` by one plain memcpy: ``cp.asarray`` may launch (and
    on a fresh machine compile) a kernel, which jit's tracing, folding constants on the host,
    must not wait for."""
    host = np.asarray(host, order="C")       # (ascontiguousarray would make 0-d arrays 1-d)
    out = cp.empty(host.shape, host.dtype)
    if host.size:
        out.set(host)
    return out


def _sort(*operands, dimension, num_keys):
    if num_keys == 1:
        perm = cp.argsort(operands[0], axis=dimension)   # CuPy's argsort is a stable radix sort
    else:
        moved = [cp.moveaxis(k, dimension, -1) for k in operands[:num_keys]]
        rows = [m.reshape(-1, m.shape[-1]) for m in moved]
        perm = cp.stack([cp.lexsort(cp.stack([r[i] for r in reversed(rows)]))
                         for i in range(rows[0].shape[0])])
        perm = cp.moveaxis(perm.reshape(moved[0].shape), -1, dimension)
    return [cp.take_along_axis(o, perm, axis=dimension) for o in operands]


def _dense(x):
    return x if x.flags.c_contiguous else cp.ascontiguousarray(x)


def _select_n(which, *cases):
    if len(cases) == 1:
        return cases[0]
    if which.dtype == np.bool_:
        return cp.where(which, cases[1], cases[0])
    out = cases[0]
    for i, c in enumerate(cases[1:], 1):
        out = cp.where(which == i, c, out)
    return out


_OVERRIDES = {
    lax.erf_p: _erf, lax.iota_p: _iota,
    lax.pad_p: lambda x, v, **p: numpy_backend._pad(x, v, xp=cp, **p), lax.scatter_p: _scatter,
    lax.sort_p: _sort, lax.select_n_p: _select_n,
    lax.take_p: lambda x, idx, *, axis: cp.take(x, cp.clip(idx, 0, x.shape[axis] - 1), axis),
    lax.broadcast_in_dim_p: lambda x, **p: _dense(cp.asarray(   # x may be a host scalar
        numpy_backend.impls[lax.broadcast_in_dim_p](x, **p))),
    # cholesky, triangular_solve, lu, qr, eigh, svd: fnx's cuSOLVER/cuBLAS binding, which (unlike
    # cupy.linalg) never syncs and runs inside a captured CUDA graph
    **solver.impls(),
    # psum, all_gather, ...: NCCL on the step's stream (captured into the program's graph)
    **nccl.impls(),
}
# CuPy 14 holds bfloat16 (ml_dtypes') and its ufuncs take it, but its sort and where do not:
# these run in float32 too, as do the overrides of the CPU backend's own list (cupyx's erf)
_CUPY_LACKS_BFLOAT16 = frozenset({lax.sort_p, lax.select_n_p})
for _p in _CUPY_LACKS_BFLOAT16 | (numpy_backend.COMPUTED_IN_FLOAT32 & _OVERRIDES.keys()):
    _OVERRIDES[_p] = numpy_backend.computed_in_float32(_OVERRIDES[_p])


class CupyBackend:
    """Arrays on one CUDA device, each op a CuPy call (jit lowers to fused kernels instead)."""
    name = "gpu"
    platform = "gpu"
    supports_donation = True     # compiled programs write results into donated buffers

    device_kind = "gpu"
    process_index = 0

    def __init__(self, device_id: int = 0):
        self.id = device_id          # the device's id in the program (all processes' devices)
        self.cuda_id = device_id     # its CUDA ordinal in this process
        self.impls = _LazyTable()

    def devices(self) -> list:
        """Every GPU of the program: this process's, and other processes' once
        fnx.distributed has joined them."""
        joined = global_devices("gpu")
        return joined if joined is not None else local_gpus()

    def communicator(self, devices):
        """NCCL communicators among ``devices`` (fnx.cuda.nccl)."""
        remote = any(getattr(d, "process_index", 0) != process_index() for d in devices)
        if remote and process_store() is None:
            raise RuntimeError("collectives across processes need fnx.distributed.initialize")
        return nccl.group_for(devices, process_store() if remote else None, process_index())

    def scope(self):
        """Work inside runs on this GPU (its current device)."""
        return cp.cuda.Device(self.cuda_id)

    def to_buffer(self, x, dtype):
        if type(x) is Array:
            if x._backend is self:
                return x._value
            if isinstance(x._backend, CupyBackend):     # another GPU: a peer copy
                with cp.cuda.Device(self.cuda_id):
                    return cp.array(x._value, copy=True)
            return upload(x._backend.to_numpy(x._value))
        if isinstance(x, cp.ndarray):
            return x
        if is_foreign_array(x):
            # another library's array (torch, JAX): a private copy, device to device if it
            # lives on a GPU, so a later write by its owner changes no fnx array
            if on_gpu(x):
                with cp.cuda.Device(self.cuda_id):      # onto this GPU, a peer copy if need be
                    return cp.array(x, dtype=dtype, copy=True)
            return upload(np.asarray(host_view(x), dtype=dtype))
        if np.ndim(x) == 0:
            return np.dtype(dtype).type(x)      # scalars ride along as kernel arguments
        return upload(np.asarray(x, dtype=dtype))

    def cast(self, buf, dtype):
        if isinstance(buf, cp.ndarray):
            return buf if buf.dtype == dtype else buf.astype(dtype)
        return upload(np.asarray(buf, dtype=dtype))

    def to_numpy(self, buf):
        return cp.asnumpy(buf)

    def from_numpy(self, x):
        return upload(x)

    def synchronize(self, buf):
        cp.cuda.get_current_stream().synchronize()

    def import_dlpack(self, x, copy):
        """A buffer of GPU DLPack producer ``x``: its memory itself only with ``copy=False``."""
        buf = cp.from_dlpack(x)
        if copy is False:
            return buf
        with cp.cuda.Device(self.cuda_id):
            return buf.copy()

    def export_dlpack(self, buf, *, stream=None, max_version=None, dl_device=None, copy=None):
        # CuPy arrays cannot be flagged read-only: the consumer shares fnx's memory, as JAX's
        # GPU arrays share theirs (writing to it is the consumer's error)
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        return buf.__dlpack__(stream=stream, **kwargs)

    def dlpack_device(self, buf):
        return tuple(buf.__dlpack_device__())

    def cuda_array_interface(self, buf):
        """CuPy's interface for ``buf`` with its data marked read-only, as JAX marks its own.
        The work writing ``buf`` may be on any of fnx's streams: it is finished first, so the
        consumer needs no stream to wait on."""
        buf.device.synchronize()
        cai = dict(buf.__cuda_array_interface__)
        cai["data"] = (cai["data"][0], True)
        cai["stream"] = None
        cai["version"] = 3
        return cai

    def compile(self, jaxpr, consts, donated=()):
        """Lower ``jaxpr`` to fused kernels and cuBLAS calls, replayed as one CUDA graph from
        the second call on: ``executable(*buffers) -> list of buffers``. Results paired with
        ``donated`` argument positions are written into those arguments' buffers.

        Generated kernels have no complex types: a program with complex values runs each
        equation as an eager CuPy call instead (fnx.backends.eager), donating nothing."""
        from .eager import EagerProgram, uses_complex
        if uses_complex(jaxpr):
            return EagerProgram(jaxpr, consts, self, "complex values: eager CuPy calls")
        from ..cuda.lowering import lower
        from ..cuda.graph import GraphExecutable
        return GraphExecutable(lower(jaxpr, consts, self, donated))

    def fusion_groups(self, jaxpr):
        """The launches ``jaxpr`` is lowered as (fnx.cuda.plan)."""
        from ..cuda.plan import fusion_groups
        return fusion_groups(jaxpr)

    def pp_fusion_groups(self, jaxpr, groups, namer=None):
        from ..cuda.plan import pp_fusion_groups
        return pp_fusion_groups(jaxpr, groups, namer)

    def __repr__(self):
        return f"CudaDevice(id={self.id})"

    def __str__(self):      # as JAX prints a device: platform and id
        return f"cuda:{self.id}"


class _LazyTable(dict):
    """The NumPy impls (dispatching to CuPy) with GPU-specific overrides; new primitives added
    to the NumPy table later are picked up too."""

    def get(self, prim, default=None):
        if prim in _OVERRIDES:
            return _OVERRIDES[prim]
        return numpy_backend.impls.get(prim, default)

    def __contains__(self, prim):
        return prim in _OVERRIDES or prim in numpy_backend.impls


_im2col = decomposed_impl(im2col, _LazyTable(), cp)


def _conv_general_dilated(lhs, rhs, *, precision=None, **params):
    """A convolution on cuDNN where it takes it (compiled programs choose the same way, in
    fnx.cuda.decompose), else im2col on CuPy arrays."""
    if cudnn.takes(lhs, rhs, params):
        return cudnn.conv_general_dilated(lhs, rhs, precision=matmul_precision(precision),
                                          **params)
    return _im2col(lhs, rhs, precision=precision, **params)


_OVERRIDES[conv_general_dilated_p] = _conv_general_dilated


_local_gpus: list = []


def local_gpus() -> list:
    """One backend per GPU this process sees; the first is the default one."""
    if not _local_gpus:
        first = get_backend("gpu")
        _local_gpus.append(first)
        _local_gpus.extend(CupyBackend(i) for i in range(1, cp.cuda.runtime.getDeviceCount()))
    return list(_local_gpus)


def gpu_available() -> bool:
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


Device.register(CupyBackend)

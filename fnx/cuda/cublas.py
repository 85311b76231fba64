"""fnx's own cuBLAS binding (ctypes), usable while a stream is being captured into a CUDA graph.

CuPy's cuBLAS wrappers refuse to run during stream capture (they rebind the handle's stream
first), so fnx keeps a private handle whose stream and workspace are bound once, up front, and
calls ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` directly. Row-major products map onto
column-major cuBLAS by swapping the operands: ``C = A @ B`` is ``C^T = B^T @ A^T``.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..core.dtypes import bfloat16
from .libpaths import loaded

# cudaDataType and cublasComputeType values from the CUDA headers; 16-bit operands compute in
# float32 (compute_type), so a bfloat16 product accumulates in float32 as in JAX
_CUDA_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
              bfloat16: 14}
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _COMPUTE_64F = 68, 77, 70
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT_ALGO = -1
WORKSPACE_BYTES = 32 * 1024 * 1024


@functools.lru_cache(maxsize=None)
def _lib():
    import cupy as cp
    cp.cuda.device.get_cublas_handle()   # makes CuPy load libcublas into this process
    path = loaded("libcublas.so")     # not libcublasLt: its name starts differently
    if path is None:
        raise RuntimeError("could not find the libcublas loaded by CuPy")
    lib = ctypes.CDLL(path)
    for fn in ("cublasCreate_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2",
               "cublasGemmEx", "cublasGemmStridedBatchedEx", "cublasStrsm_v2",
               "cublasDtrsm_v2", "cublasStrsmBatched", "cublasDtrsmBatched",
               "cublasGemmBatchedEx", "cublasSgetrfBatched", "cublasDgetrfBatched"):
        getattr(lib, fn).restype = ctypes.c_int
    return lib


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


class Handle:
    """A cuBLAS handle bound to one stream and a workspace."""

    def __init__(self, stream_ptr: int, workspace=None):
        lib = _lib()
        self.ptr = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(self.ptr)), "cublasCreate")
        self.stream_ptr = stream_ptr
        _check(lib.cublasSetStream_v2(self.ptr, ctypes.c_void_p(stream_ptr)), "cublasSetStream")
        self.workspace_ptr = None
        if workspace is not None:
            self.bind(workspace)

    def bind(self, workspace) -> None:
        """Use ``workspace`` (``WORKSPACE_BYTES`` of device memory) from now on. The handle
        keeps its address only: whoever bound it keeps it alive."""
        if workspace.data.ptr != self.workspace_ptr:
            _check(_lib().cublasSetWorkspace_v2(self.ptr, ctypes.c_void_p(workspace.data.ptr),
                                                ctypes.c_size_t(WORKSPACE_BYTES)),
                   "cublasSetWorkspace")
            self.workspace_ptr = workspace.data.ptr


def handle_for(stream_ptr: int, concurrent: bool = False) -> Handle:
    """One handle per stream of the current device (each device's default stream is 0), created
    the first time the stream is used, which is the eager warm-up run, never during capture.

    Every stream's handle but a ``concurrent`` one shares the device's one workspace: their
    work is ordered (graphs replay and eager calls run on the caller's stream, and the host
    waits around timing runs), so 32 MiB serves them all. A stream whose launches may overlap
    another's (``concurrent``: fnx's side streams) gets no workspace here: the program running
    on it binds one of its own (``Program.run``), which lives only as long as that program
    uses side streams."""
    import cupy as cp
    key = (cp.cuda.runtime.getDevice(), stream_ptr)
    handle = _HANDLES.get(key)
    if handle is None:
        handle = _HANDLES[key] = Handle(
            stream_ptr, None if concurrent else _shared_workspace(key[0]))
    return handle


_HANDLES: dict = {}      # (device, stream) -> its handle


@functools.lru_cache(maxsize=None)
def _shared_workspace(device: int):
    import cupy as cp
    return cp.empty(WORKSPACE_BYTES, dtype=np.uint8)


def _scalars(dtype, alpha=1.0, beta=0.0):
    if dtype == np.float64:
        return ctypes.c_double(alpha), ctypes.c_double(beta)
    return ctypes.c_float(alpha), ctypes.c_float(beta)


def compute_type(dtype, precision: str) -> int:
    if dtype == np.float64:
        return _COMPUTE_64F
    if dtype == np.float32 and precision == "tensorfloat32":
        return _COMPUTE_32F_FAST_TF32
    return _COMPUTE_32F


def matmul_into(out, a, b, trans_a: bool, trans_b: bool, precision: str = "highest",
                batch: int = 1, alpha: float = 1.0, beta: float = 0.0):
    """``out[m,n] = alpha * op(a) @ op(b) + beta * out`` for row-major contiguous buffers
    (batched along a leading axis when ``batch > 1``); ``trans_a`` means ``a`` is stored as
    (k, m)."""
    import cupy as cp
    dtype = np.dtype(a.dtype)
    m, n = out.shape[-2], out.shape[-1]
    k = a.shape[-2] if trans_a else a.shape[-1]
    lda = a.shape[-1]
    ldb = b.shape[-1]
    h = handle_for(cp.cuda.get_current_stream().ptr)
    alpha, beta = _scalars(dtype, alpha, beta)
    ct = _CUDA_TYPE[dtype]
    out_ct = _CUDA_TYPE[np.dtype(out.dtype)]
    comp = compute_type(dtype, precision)
    lib = _lib()
    # column-major view: C^T (n x m) = op(B)^T (n x k) @ op(A)^T (k x m)
    args = (h.ptr, _OP_T if trans_b else _OP_N, _OP_T if trans_a else _OP_N, n, m, k,
            ctypes.byref(alpha), ctypes.c_void_p(b.data.ptr), ct, ldb,
            ctypes.c_void_p(a.data.ptr), ct, lda, ctypes.byref(beta),
            ctypes.c_void_p(out.data.ptr), out_ct, n)
    if batch == 1:
        status = lib.cublasGemmEx(*args, comp, _GEMM_DEFAULT_ALGO)
    else:
        stride_a = ctypes.c_longlong(a.shape[-2] * a.shape[-1] if a.ndim == 3 else 0)
        stride_b = ctypes.c_longlong(b.shape[-2] * b.shape[-1] if b.ndim == 3 else 0)
        stride_c = ctypes.c_longlong(m * n)
        status = lib.cublasGemmStridedBatchedEx(
            h.ptr, args[1], args[2], n, m, k, ctypes.byref(alpha),
            ctypes.c_void_p(b.data.ptr), ct, ldb, stride_b,
            ctypes.c_void_p(a.data.ptr), ct, lda, stride_a, ctypes.byref(beta),
            ctypes.c_void_p(out.data.ptr), out_ct, n, stride_c, batch, comp, _GEMM_DEFAULT_ALGO)
    _check(status, "cublasGemmEx")
    return out


_TRSM = {np.dtype(np.float32): "cublasStrsm_v2", np.dtype(np.float64): "cublasDtrsm_v2"}


def trsm(dtype, side: int, uplo: int, trans: int, diag: int, m: int, n: int, a_ptr: int,
         lda: int, b_ptr: int, ldb: int):
    """Column-major ``op(A) X = B`` (side 0, left) or ``X op(A) = B`` (side 1), X overwriting
    the m x n matrix B, on the current stream's handle (cuBLAS's enum values: uplo 0 lower /
    1 upper, trans 0 N / 1 T, diag 0 non-unit / 1 unit)."""
    import cupy as cp
    dtype = np.dtype(dtype)
    h = handle_for(cp.cuda.get_current_stream().ptr)
    alpha, _ = _scalars(dtype, 1.0)
    fn = getattr(_lib(), _TRSM[dtype])
    _check(fn(h.ptr, side, uplo, trans, diag, m, n, ctypes.byref(alpha), ctypes.c_void_p(a_ptr),
              lda, ctypes.c_void_p(b_ptr), ldb), _TRSM[dtype])


_TRSM_BATCHED = {np.dtype(np.float32): "cublasStrsmBatched",
                 np.dtype(np.float64): "cublasDtrsmBatched"}


def trsm_batched(dtype, side: int, uplo: int, trans: int, diag: int, m: int, n: int,
                 a_ptrs: int, lda: int, b_ptrs: int, ldb: int, count: int):
    """:func:`trsm` over ``count`` problems in one call: ``a_ptrs`` and ``b_ptrs`` are device
    arrays of the matrices' addresses."""
    import cupy as cp
    dtype = np.dtype(dtype)
    h = handle_for(cp.cuda.get_current_stream().ptr)
    alpha, _ = _scalars(dtype, 1.0)
    fn = getattr(_lib(), _TRSM_BATCHED[dtype])
    _check(fn(h.ptr, side, uplo, trans, diag, m, n, ctypes.byref(alpha),
              ctypes.c_void_p(a_ptrs), lda, ctypes.c_void_p(b_ptrs), ldb, count),
           _TRSM_BATCHED[dtype])


_GETRF_BATCHED = {np.dtype(np.float32): "cublasSgetrfBatched",
                  np.dtype(np.float64): "cublasDgetrfBatched"}


def getrf_batched(dtype, n: int, a_ptrs: int, lda: int, ipiv_ptr: int, info_ptr: int,
                  count: int):
    """LU factorisations with partial pivoting of ``count`` column-major n x n matrices, in
    place, in one call (``a_ptrs``: a device array of their addresses); LAPACK's 1-based
    pivots at ``ipiv_ptr`` (n per matrix) and each one's info at ``info_ptr``."""
    import cupy as cp
    dtype = np.dtype(dtype)
    h = handle_for(cp.cuda.get_current_stream().ptr)
    fn = getattr(_lib(), _GETRF_BATCHED[dtype])
    _check(fn(h.ptr, n, ctypes.c_void_p(a_ptrs), lda, ctypes.c_void_p(ipiv_ptr),
              ctypes.c_void_p(info_ptr), count), _GETRF_BATCHED[dtype])


# The pointers of each batch member of a product whose batch axes are not its operands' leading
# ones (attention's per-head products read (batch, seq, heads, dim) buffers): written on the
# device by a kernel whose parameters hold the base pointers and byte strides, so a captured
# graph replays it, then read by cublasGemmBatchedEx. Up to BATCH_DIMS batch axes.
BATCH_DIMS = 4
_BATCH_MAP = np.dtype([("base", np.uint64, (3,)), ("n", np.int64, (BATCH_DIMS,)),
                       ("s", np.int64, (2, BATCH_DIMS)), ("c", np.int64), ("dims", np.int32)],
                      align=True)
POINTERS_UNIT = (f"""
struct fnx_batch_map {{ unsigned long long base[3]; long long n[{BATCH_DIMS}];
                       long long s[2][{BATCH_DIMS}]; long long c; int dims; }};
extern "C" __global__ void fnx_gemm_pointers(const __grid_constant__ fnx_batch_map m,
                                             unsigned long long* ptrs, long long count) {{
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {{
    long long rest = i, a = 0, b = 0;
    for (int d = m.dims - 1; d >= 0; --d) {{
      const long long q = rest % m.n[d];
      rest /= m.n[d];
      a += q * m.s[0][d];
      b += q * m.s[1][d];
    }}
    ptrs[i] = m.base[0] + a;
    ptrs[count + i] = m.base[1] + b;
    ptrs[2 * count + i] = m.base[2] + i * m.c;
  }}
}}
""", "fnx_gemm_pointers")


def batched_matmul_into(out, k, a, a_batch, a_ld, trans_a, b, b_batch, b_ld, trans_b,
                        batch_shape, precision: str = "highest"):
    """``out[i] = op(A_i) @ op(B_i)`` over ``k`` terms for each member ``i`` of ``batch_shape``
    (row-major order), ``out`` a contiguous (count, m, n) buffer. ``A_i`` starts at ``a``'s
    data plus the byte offsets ``a_batch[d] * i_d`` and is a row-major matrix with leading
    dimension ``a_ld`` (elements), stored transposed where ``trans_a``; the same for ``B_i``."""
    import cupy as cp
    from .compile import kernel
    dtype = np.dtype(a.dtype)
    count, m, n = out.shape
    dims = len(batch_shape)
    bmap = np.zeros(1, _BATCH_MAP)
    bmap["base"][0] = (b.data.ptr, a.data.ptr, out.data.ptr)   # cuBLAS's A is our B
    bmap["n"][0, :dims] = batch_shape
    bmap["s"][0, 0, :dims] = b_batch
    bmap["s"][0, 1, :dims] = a_batch
    bmap["c"] = m * n * out.dtype.itemsize
    bmap["dims"] = dims
    ptrs = cp.empty(3 * count, np.uint64)
    kernel(*POINTERS_UNIT)((int(min(-(-count // 128), 1024)),), (128,),
                           (bmap, ptrs, np.int64(count)))
    h = handle_for(cp.cuda.get_current_stream().ptr)
    alpha, beta = _scalars(dtype)
    ct, out_ct = _CUDA_TYPE[dtype], _CUDA_TYPE[np.dtype(out.dtype)]
    p = ptrs.data.ptr
    # column-major view, as in matmul_into: C_i^T = op(B_i)^T op(A_i)^T
    status = _lib().cublasGemmBatchedEx(
        h.ptr, _OP_T if trans_b else _OP_N, _OP_T if trans_a else _OP_N, n, m, k,
        ctypes.byref(alpha), ctypes.c_void_p(p), ct, b_ld,
        ctypes.c_void_p(p + 8 * count), ct, a_ld, ctypes.byref(beta),
        ctypes.c_void_p(p + 16 * count), out_ct, n, count, compute_type(dtype, precision),
        _GEMM_DEFAULT_ALGO)
    _check(status, "cublasGemmBatchedEx")
    return out

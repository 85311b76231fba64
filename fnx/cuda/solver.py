"""fnx's own cuSOLVER binding (ctypes): the linear-algebra primitives on the GPU, usable while a
stream is being captured into a CUDA graph.

CuPy's cuSOLVER and cuBLAS wrappers refuse to run during stream capture, and its Cholesky reads
``info`` back to the host. The impls here take CuPy arrays (any leading batch dims) and return
new ones, exactly as fnx/backends/numpy_linalg.py does, using only

- cuSOLVER Dn calls (potrf, potrfBatched, getrf, geqrf, orgqr, syevd, gesvd) on a private handle
  bound once to the current stream (:func:`handle_for`), and cuBLAS trsm (batched too) on fnx's
  own handle (fnx.cuda.cublas);
- ``cupy.empty``/``cupy.zeros`` allocations and CuPy kernel launches (small RawKernels: strided
  copies with triangle masks and NaN fills, a non-finite check, LU's permutation, the address
  arrays of the batched calls).

Nothing is copied between host and device and nothing synchronises: a batched Cholesky or
triangular solve is one call over an array of addresses a kernel writes, other batches a loop
over pointers computed on the host from the base pointer, workspace sizes come from the
``*_bufferSize`` host queries (cached per shape, so a capture repeats the eager call's sizes),
and failures are reported as JAX does, by NaN factors (a kernel reads ``info`` on the device).

Row-major arrays are column-major matrices transposed: ``x`` (m, n) in C order is ``x^T``
(n x m, leading dimension n) to cuSOLVER and cuBLAS. Where the transposed problem is the same
problem (Cholesky and eigh read the other triangle; a wide SVD is the SVD of ``x^T``; trsm
swaps its side) only the flags change; elsewhere (LU, QR, a tall SVD) a kernel writes a
column-major copy first.

The layout logic talks to the GPU through :class:`_CudaDevice` only, so the tests can run it on
the CPU against an emulation of the same calls with LAPACK (tests/test_gpu_linalg.py).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from .libpaths import loaded

# cublasFillMode_t, cublasSideMode_t, cublasOperation_t, cublasDiagType_t, cusolverEigMode_t
LOWER, UPPER = 0, 1
SIDE_LEFT, SIDE_RIGHT = 0, 1
OP_N, OP_T = 0, 1
DIAG_NON_UNIT, DIAG_UNIT = 0, 1
EIG_MODE_NOVECTOR, EIG_MODE_VECTOR = 0, 1

# the triangle a copy keeps (the rest is zero), and what it writes for a matrix flagged bad
TRI_ALL, TRI_UPPER, TRI_LOWER = 0, 1, 2
FILL_NONE, FILL_ZERO, FILL_NAN = 0, 1, 2

_PREFIX = {np.dtype(np.float32): "S", np.dtype(np.float64): "D"}

_P, _I = ctypes.c_void_p, ctypes.c_int
# argument types after the handle (a pointer) of cusolverDn<t><routine>, from cusolverDn.h
_SIGNATURES = {
    "potrf_bufferSize": [_I, _I, _P, _I, _P],
    "potrf": [_I, _I, _P, _I, _P, _I, _P],
    "potrfBatched": [_I, _I, _P, _I, _P, _I],
    "getrf_bufferSize": [_I, _I, _P, _I, _P],
    "getrf": [_I, _I, _P, _I, _P, _P, _P],
    "geqrf_bufferSize": [_I, _I, _P, _I, _P],
    "geqrf": [_I, _I, _P, _I, _P, _P, _I, _P],
    "orgqr_bufferSize": [_I, _I, _I, _P, _I, _P, _P],
    "orgqr": [_I, _I, _I, _P, _I, _P, _P, _I, _P],
    "syevd_bufferSize": [_I, _I, _I, _P, _I, _P, _P],
    "syevd": [_I, _I, _I, _P, _I, _P, _P, _I, _P],
    "gesvd_bufferSize": [_I, _I, _P],
    "gesvd": [ctypes.c_byte, ctypes.c_byte, _I, _I, _P, _I, _P, _P, _I, _P, _I, _P, _I, _P,
              _P],
}


def supported(*xs) -> bool:
    """float32/float64 operands with at least one element (others keep the generic impls)."""
    return all(np.dtype(x.dtype) in _PREFIX and x.size > 0 for x in xs) and \
        len({np.dtype(x.dtype) for x in xs}) == 1


# ---------------------------------------------------------------------------------------------
# the library and its handles


def _library_path():
    """The libcusolver CuPy uses (made to load it first), else the one cuda.pathfinder finds."""
    path = loaded("libcusolver.so")
    if path is None:
        try:
            import cupy as cp
            cp.cuda.device.get_cusolver_handle()
        except Exception:
            pass
        path = loaded("libcusolver.so")
    if path is None:
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib
            path = load_nvidia_dynamic_lib("cusolver").abs_path
        except Exception:
            path = None
    if path is None:
        raise RuntimeError("could not find libcusolver (neither loaded by CuPy nor found by "
                           "cuda.pathfinder)")
    return path


@functools.lru_cache(maxsize=None)
def _lib():
    lib = ctypes.CDLL(_library_path())
    lib.cusolverDnCreate.argtypes = [_P]
    lib.cusolverDnSetStream.argtypes = [_P, _P]
    for fn in ("cusolverDnCreate", "cusolverDnSetStream"):
        getattr(lib, fn).restype = ctypes.c_int
    for routine, args in _SIGNATURES.items():
        for prefix in _PREFIX.values():
            fn = getattr(lib, f"cusolverDn{prefix}{routine}")
            fn.argtypes = [_P] + args
            fn.restype = ctypes.c_int
    return lib


_CUDA_R = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}      # cudaDataType_t
_L, _S = ctypes.c_int64, ctypes.c_size_t
_EXTRA: dict = {}        # what a batched routine keeps: its parameters object, workspace sizes


def has_batched_eigen() -> bool:
    """Whether this cuSOLVER has ``cusolverDnXsyevBatched`` (CUDA 12.6 update 2 and later)."""
    return hasattr(_lib(), "cusolverDnXsyevBatched")


def _params(kind):
    """One cuSOLVER parameters object per kind ("x": cusolverDnParams, "gesvdj")."""
    obj = _EXTRA.get(("params", kind))
    if obj is None:
        obj = ctypes.c_void_p()
        create = {"x": "cusolverDnCreateParams", "gesvdj": "cusolverDnCreateGesvdjInfo"}[kind]
        _check(getattr(_lib(), create)(ctypes.byref(obj)), create)
        _EXTRA[("params", kind)] = obj
    return obj


def _workspace(key, query):
    """A workspace size from its host query, once per key (a capture repeats the eager call's
    sizes)."""
    size = _EXTRA.get(key)
    if size is None:
        size = _EXTRA[key] = query()
    return size


def _x_call(handle, routine, dtype, uplo, n, a, lda, w, info, nb):
    import cupy as cp
    lib, t, params = _lib(), _CUDA_R[np.dtype(dtype)], _params("x")
    head = (ctypes.c_void_p(handle), params, _I(EIG_MODE_VECTOR), _I(uplo), _L(n), _I(t),
            _P(a), _L(lda), _I(t), _P(w), _I(t))

    def query():
        dev, host = _S(), _S()
        _check(lib.cusolverDnXsyevBatched_bufferSize(*head, ctypes.byref(dev),
                                                      ctypes.byref(host), _L(nb)),
               "cusolverDnXsyevBatched_bufferSize")
        return dev.value, host.value
    dev_bytes, host_bytes = _workspace((routine, np.dtype(dtype).char, uplo, n, lda, nb), query)
    if host_bytes:
        _refuse_capture("XsyevBatched with a host workspace")
    work = cp.empty((max(dev_bytes, 1),), np.uint8)
    host = (ctypes.c_char * max(host_bytes, 1))()
    _check(lib.cusolverDnXsyevBatched(*head, _P(work.data.ptr), _S(dev_bytes),
                                      ctypes.cast(host, _P), _S(host_bytes), _P(info), _L(nb)),
           "cusolverDnXsyevBatched")
    return work, host          # kept by the caller until the call is enqueued


def _gesvdj_batched(handle, dtype, m, n, a, s, u, v, info, nb):
    import cupy as cp
    lib, prefix, params = _lib(), _PREFIX[np.dtype(dtype)], _params("gesvdj")
    args = (ctypes.c_void_p(handle), _I(EIG_MODE_VECTOR), _I(m), _I(n), _P(a), _I(m), _P(s),
            _P(u), _I(m), _P(v), _I(n))

    def query():
        lwork = _I()
        fn = getattr(lib, f"cusolverDn{prefix}gesvdjBatched_bufferSize")
        _check(fn(*args, ctypes.byref(lwork), params, _I(nb)), "gesvdjBatched_bufferSize")
        return lwork.value
    lwork = _workspace(("gesvdjBatched", prefix, m, n, nb), query)
    work = cp.empty((max(lwork, 1),), dtype)
    fn = getattr(lib, f"cusolverDn{prefix}gesvdjBatched")
    _check(fn(*args, _P(work.data.ptr), _I(lwork), _P(info), params, _I(nb)),
           "cusolverDngesvdjBatched")
    return work


def _gesvda_batched(handle, dtype, vectors, m, n, a, s, u, v, info, nb):
    import cupy as cp
    lib, prefix = _lib(), _PREFIX[np.dtype(dtype)]
    jobz = EIG_MODE_VECTOR if vectors else EIG_MODE_NOVECTOR
    args = (ctypes.c_void_p(handle), _I(jobz), _I(n), _I(m), _I(n), _P(a), _I(m), _L(m * n),
            _P(s), _L(n), _P(u), _I(m), _L(m * n), _P(v), _I(n), _L(n * n))

    def query():
        lwork = _I()
        fn = getattr(lib, f"cusolverDn{prefix}gesvdaStridedBatched_bufferSize")
        _check(fn(*args, ctypes.byref(lwork), _I(nb)), "gesvdaStridedBatched_bufferSize")
        return lwork.value
    lwork = _workspace(("gesvda", prefix, jobz, m, n, nb), query)
    work = cp.empty((max(lwork, 1),), dtype)
    fn = getattr(lib, f"cusolverDn{prefix}gesvdaStridedBatched")
    # no residual norms: they are written to host memory
    _check(fn(*args, _P(work.data.ptr), _I(lwork), _P(info), None, _I(nb)),
           "cusolverDngesvdaStridedBatched")
    return work


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed with cuSOLVER status {status}")


class Handle:
    """A cuSOLVER Dn handle bound to one stream."""

    def __init__(self, stream_ptr: int):
        lib = _lib()
        self.ptr = ctypes.c_void_p()
        _check(lib.cusolverDnCreate(ctypes.byref(self.ptr)), "cusolverDnCreate")
        self.stream_ptr = stream_ptr
        _check(lib.cusolverDnSetStream(self.ptr, ctypes.c_void_p(stream_ptr)),
               "cusolverDnSetStream")


_HANDLES: dict = {}
_USED = False     # whether a solver impl has run in this process (see prepare_stream)


def _capturing(stream_ptr: int) -> bool:
    import cupy as cp
    try:
        return cp.cuda.runtime.streamIsCapturing(stream_ptr) != 0
    except Exception:           # (no such query in this CuPy, or the legacy stream)
        current = cp.cuda.get_current_stream()
        try:
            return current.ptr == stream_ptr and bool(current.is_capturing())
        except Exception:
            return False


def handle_for(stream_ptr: int) -> Handle:
    """One handle per stream (of the current device), created the first time the stream is
    used. Creating one is not allowed while the stream captures a graph: call this (or
    :func:`prepare_stream`) for a capture stream before ``begin_capture``, next to
    ``cublas.handle_for``."""
    import cupy as cp
    key = (cp.cuda.Device().id, stream_ptr)
    h = _HANDLES.get(key)
    if h is None:
        if _capturing(stream_ptr):
            raise RuntimeError(
                f"no cuSOLVER handle for stream {stream_ptr:#x}, which is capturing a graph: "
                "fnx.cuda.solver.handle_for(stream.ptr) must run before capture begins")
        h = _HANDLES[key] = Handle(stream_ptr)
    return h


def prepare_stream(stream_ptr: int) -> None:
    """:func:`handle_for` when this process has run a GPU linear-algebra impl, else nothing: a
    jitted program's first call runs eagerly, so any program with linear algebra has run one
    before its graph is captured, and programs without it never load libcusolver."""
    if _USED:
        handle_for(stream_ptr)


# ---------------------------------------------------------------------------------------------
# the device operations the impls use


_HELPERS = r"""
__device__ __forceinline__ float fnx_nan(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double fnx_nan(double) {
  return __longlong_as_double(0x7ff8000000000000LL);
}
__device__ __forceinline__ bool fnx_finite(float v) {
  return (__float_as_int(v) & 0x7f800000) != 0x7f800000;
}
__device__ __forceinline__ bool fnx_finite(double v) {
  return (__double_as_longlong(v) & 0x7ff0000000000000LL) != 0x7ff0000000000000LL;
}
"""

# each source holds one kernel (T: the element type), so the kernels compile as units of
# fnx.cuda.compile: together with the program's own, in its compiling processes
_SOURCES = {
    "fnx_gather": r"""
// dst[b*db + r*dr + c*dc] = src[b*sb + r*sr + c*sc] over (nb, rows, cols); a matrix whose
// bad[b] is nonzero gets zeros (fill 1) or NaNs (fill 2); tri 1 / 2 keeps the upper / lower
// triangle (c >= r / c <= r) and writes zeros elsewhere, after the fill
extern "C" __global__ void fnx_gather(const T* src, T* dst, long long nb, long long rows,
                                      long long cols, long long sb, long long sr, long long sc,
                                      long long db, long long dr, long long dc,
                                      int tri, const int* bad, int fill) {
  long long total = nb * rows * cols;
  long long step = (long long)gridDim.x * blockDim.x;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {
    long long c = t % cols;
    long long r = (t / cols) % rows;
    long long b = t / (cols * rows);
    T v;
    if (fill != 0 && bad[b] != 0) {
      v = fill == 1 ? T(0) : fnx_nan(T(0));
    } else {
      v = src[b * sb + r * sr + c * sc];
    }
    if ((tri == 1 && c < r) || (tri == 2 && c > r)) v = T(0);
    dst[b * db + r * dr + c * dc] = v;
  }
}
""",
    "fnx_nonfinite": r"""
// flag[b] = 1 if matrix b (rows x cols, dense) holds a NaN or inf in its triangle tri
extern "C" __global__ void fnx_nonfinite(const T* src, int* flag, long long rows,
                                         long long cols, int tri) {
  const T* m = src + (long long)blockIdx.x * rows * cols;
  int bad = 0;
  for (long long t = threadIdx.x; t < rows * cols; t += blockDim.x) {
    long long r = t / cols, c = t % cols;
    if ((tri == 1 && c < r) || (tri == 2 && c > r)) continue;
    if (!fnx_finite(m[t])) bad = 1;
  }
  bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) flag[blockIdx.x] = bad;
}
""",
    "fnx_pointers": r"""
// out[b] = base + b * stride: the matrices' addresses, for the batched library calls
extern "C" __global__ void fnx_pointers(unsigned long long base, long long stride,
                                        unsigned long long* out, long long nb) {
  long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b < nb) out[b] = base + (unsigned long long)(b * stride);
}
""",
    "fnx_lu_perm": r"""
// getrf's 1-based pivots -> 0-based pivots and the row permutation they apply (LAPACK's
// sequence of row swaps), one thread per matrix
extern "C" __global__ void fnx_lu_perm(const int* ipiv, int* pivots, int* perm,
                                       long long nb, long long k, long long m) {
  long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= nb) return;
  const int* p = ipiv + b * k;
  int* q = pivots + b * k;
  int* out = perm + b * m;
  for (long long i = 0; i < m; ++i) out[i] = (int)i;
  for (long long j = 0; j < k; ++j) {
    long long pj = (long long)p[j] - 1;
    if (pj < 0 || pj >= m) pj = j;      // never read outside the row (NaN inputs)
    q[j] = (int)pj;
    int t = out[j];
    out[j] = out[pj];
    out[pj] = t;
  }
}
""",
}
_TYPED = ("fnx_gather", "fnx_nonfinite")


@functools.lru_cache(maxsize=None)
def _unit(name, ctype="float"):
    """``(source, name)`` of kernel ``name`` over elements of C type ``ctype`` (one string per
    kernel, so a launch looks its kernel up without building or hashing a new source)."""
    head = f"typedef {ctype} T;\n" + _HELPERS if name in _TYPED else ""
    return (head + _SOURCES[name], name)


def units():
    """The impls' kernels, as units a lowered program compiles with its own."""
    return [_unit(n, t) for n in _TYPED for t in ("float", "double")] + \
        [_unit(n) for n in _SOURCES if n not in _TYPED]


def _kernel(name, ctype="float"):
    from .compile import kernel
    return kernel(*_unit(name, ctype))


_CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_BUFFER_SIZES: dict = {}


class _CudaDevice:
    """What the impls need from the GPU: CuPy allocations and kernels, the current stream's
    cuSOLVER and cuBLAS handles, and the library calls."""

    def __init__(self):
        import cupy as cp
        self.cp = cp

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype)

    def zeros(self, shape, dtype):
        return self.cp.zeros(shape, dtype)

    def dense(self, x):
        if x.flags.c_contiguous:
            return x
        out = self.cp.empty(x.shape, x.dtype)
        self.cp.copyto(out, x)
        return out

    def ptr(self, a) -> int:
        return a.data.ptr

    def handle(self) -> int:
        return handle_for(self.cp.cuda.get_current_stream().ptr).ptr.value

    def buffer_size(self, routine, dtype, *args) -> int:
        """``cusolverDn<t><routine>_bufferSize`` (a host query), cached per arguments other
        than pointers, so a capture repeats the sizes its eager run got."""
        kinds = _SIGNATURES[routine + "_bufferSize"]
        key = (routine, np.dtype(dtype).char) + tuple(
            None if kind is _P else a for kind, a in zip(kinds, args))
        size = _BUFFER_SIZES.get(key)
        if size is None:
            lwork = ctypes.c_int(0)
            fn = getattr(_lib(), f"cusolverDn{_PREFIX[np.dtype(dtype)]}{routine}_bufferSize")
            _check(fn(self.handle(), *args, ctypes.byref(lwork)), f"{routine}_bufferSize")
            size = _BUFFER_SIZES[key] = lwork.value
        return size

    def solver(self, routine, dtype, *args):
        fn = getattr(_lib(), f"cusolverDn{_PREFIX[np.dtype(dtype)]}{routine}")
        _check(fn(self.handle(), *args), f"cusolverDn{routine}")

    def syev_batched(self, dtype, uplo, n, a, lda, w, info, nb):
        """Eigen-decompositions of ``nb`` column-major n x n matrices at ``a`` (stride n*lda)
        in place, eigenvalues ascending at ``w`` (stride n): ``cusolverDnXsyevBatched``, one
        call for the batch that launches only (no host workspace, nothing synchronises)."""
        return _x_call(self.handle(), "XsyevBatched", dtype, uplo, n, a, lda, w, info, nb)

    def gesvdj_batched(self, dtype, m, n, a, s, u, v, info, nb):
        """SVDs of ``nb`` column-major m x n matrices (m, n <= 32, lda = m) by Jacobi
        rotations: ``S`` (stride min(m, n)), full ``U`` (m x m) and ``V`` (n x n), all dense."""
        return _gesvdj_batched(self.handle(), dtype, m, n, a, s, u, v, info, nb)

    def gesvda_batched(self, dtype, vectors, m, n, a, s, u, v, info, nb):
        """Thin SVDs of ``nb`` column-major m x n matrices, m >= n, lda = m: ``S`` (n),
        ``U`` (m x n) and ``V`` (n x n) at strides of their sizes."""
        return _gesvda_batched(self.handle(), dtype, vectors, m, n, a, s, u, v, info, nb)

    def trsm(self, dtype, side, uplo, trans, diag, m, n, a_ptr, lda, b_ptr, ldb):
        from . import cublas
        cublas.trsm(dtype, side, uplo, trans, diag, m, n, a_ptr, lda, b_ptr, ldb)

    def trsm_batched(self, dtype, side, uplo, trans, diag, m, n, a_ptrs, lda, b_ptrs, ldb,
                     count):
        from . import cublas
        cublas.trsm_batched(dtype, side, uplo, trans, diag, m, n, a_ptrs, lda, b_ptrs, ldb,
                            count)

    def getrf_batched(self, dtype, n, a_ptrs, lda, ipiv_ptr, info_ptr, count):
        from . import cublas
        cublas.getrf_batched(dtype, n, a_ptrs, lda, ipiv_ptr, info_ptr, count)

    def pointers(self, base: int, stride: int, nb: int):
        """A device array of the ``nb`` addresses ``base + b * stride`` (written by a kernel:
        no copy from the host, so a graph can capture it)."""
        out = self.cp.empty((nb,), np.uint64)
        _kernel("fnx_pointers")(((nb + 127) // 128,), (128,), (
            np.uint64(base), np.int64(stride), out, np.int64(nb)))
        return out

    def gather(self, src, dst, nb, rows, cols, src_strides, dst_strides=None, tri=TRI_ALL,
               bad=None, fill=FILL_NONE):
        total = nb * rows * cols
        if total == 0:
            return dst
        if dst_strides is None:
            dst_strides = (rows * cols, cols, 1)
        fn = _kernel("fnx_gather", _CTYPE[np.dtype(src.dtype)])
        block = 256
        grid = min((total + block - 1) // block, 8192)
        fn((grid,), (block,), (src, dst, nb, rows, cols, *src_strides, *dst_strides,
                               np.int32(tri), src if bad is None else bad, np.int32(fill)))
        return dst

    def nonfinite(self, src, nb, rows, cols, tri=TRI_ALL):
        flag = self.cp.empty((nb,), np.int32)
        fn = _kernel("fnx_nonfinite", _CTYPE[np.dtype(src.dtype)])
        fn((nb,), (256,), (src, flag, rows, cols, np.int32(tri)))
        return flag

    def either(self, a, b):
        return self.cp.bitwise_or(a, b)

    def lu_perm(self, ipiv, nb, k, m):
        pivots = self.cp.empty((nb, k), np.int32)
        perm = self.cp.empty((nb, m), np.int32)
        block = 128
        _kernel("fnx_lu_perm")(((nb + block - 1) // block,), (block,),
                               (ipiv, pivots, perm, nb, k, m))
        return pivots, perm


_DEVICE = None


def _device():
    """The GPU, once the current stream has its handle (refused before any stream work when the
    stream is capturing without one)."""
    global _DEVICE, _USED
    _USED = True
    if _DEVICE is None:
        _DEVICE = _CudaDevice()
    _DEVICE.handle()
    return _DEVICE


class CaptureUnsupported(NotImplementedError):
    """A routine that cannot run while a stream is captured into a CUDA graph."""


def _refuse_capture(what):
    """cuSOLVER's syevd and gesvd synchronise inside (measured on CUDA 13: a capture fails
    and leaves the handle's later calls failing), so they refuse a capturing stream before
    touching it: the program then runs its launches without a graph, and says why."""
    import cupy as cp
    if cp.cuda.get_current_stream().is_capturing():
        raise CaptureUnsupported(f"cuSOLVER's {what} synchronises inside; it cannot be "
                                 "captured into a CUDA graph")


def _fallback(name):
    from ..backends import numpy_linalg
    return getattr(numpy_linalg, name)


def _nb(shape) -> int:
    return int(np.prod(shape[:-2], dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# triangular_solve: cuBLAS trsm


def trsm_plan(left_side, lower, transpose_a, unit_diagonal, b_rows, b_cols):
    """cuBLAS (column-major) trsm arguments ``(side, uplo, trans, diag, m, n, ldb)`` that solve
    the row-major problem in a column-major copy of ``b`` (r, c), for ``a`` of size ``a_n``
    (``lda = a_n``).

    The buffer of row-major ``a`` is ``A' = a^T`` to cuBLAS, so ``op(a) = op'(A')`` with the
    transpose flag flipped, and its triangle is the other one; the side and the diagonal stay.
    (cuBLAS solves this way, the side kept, 5-27% faster than as a right-side solve on the
    row-major ``b`` itself, measured on an H100.)
    """
    side = SIDE_LEFT if left_side else SIDE_RIGHT
    uplo = UPPER if lower else LOWER
    trans = OP_N if transpose_a else OP_T
    diag = DIAG_UNIT if unit_diagonal else DIAG_NON_UNIT
    return side, uplo, trans, diag, b_rows, b_cols, b_rows


def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal,
                     _dev=None):
    if not supported(a, b):
        return _fallback("triangular_solve")(
            a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
            conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    dev = _dev or _device()
    dtype = np.dtype(b.dtype)
    isz = dtype.itemsize
    an = a.shape[-1]
    r, c = b.shape[-2:]
    nb = _nb(b.shape)
    a = dev.dense(a)
    x = dev.empty(b.shape[:-2] + (c, r), dtype)
    dev.gather(dev.dense(b), x, nb, c, r, (r * c, 1, c))      # x[., j, i] = b[., i, j]
    side, uplo, trans, diag, m, n, ldb = trsm_plan(left_side, lower, transpose_a,
                                                   unit_diagonal, r, c)
    pa, px = dev.ptr(a), dev.ptr(x)
    if nb > 1:      # one call for the batch
        a_ptrs = dev.pointers(pa, an * an * isz, nb)
        x_ptrs = dev.pointers(px, r * c * isz, nb)
        dev.trsm_batched(dtype, side, uplo, trans, diag, m, n, dev.ptr(a_ptrs), an,
                         dev.ptr(x_ptrs), ldb, nb)
    else:
        dev.trsm(dtype, side, uplo, trans, diag, m, n, pa, an, px, ldb)
    out = dev.empty(b.shape, dtype)
    dev.gather(x, out, nb, r, c, (r * c, 1, r))                # out[., i, j] = x[., j, i]
    return out


# ---------------------------------------------------------------------------------------------
# cholesky: potrf


def cholesky(x, _dev=None):
    """Lower factor, reading the lower triangle; NaN in the lower triangle (zeros above, as the
    CPU impl) for the matrices that are not positive definite."""
    if not supported(x):
        return _fallback("cholesky")(x)
    dev = _dev or _device()
    dtype = np.dtype(x.dtype)
    isz = dtype.itemsize
    n = x.shape[-1]
    nb = _nb(x.shape)
    # cuSOLVER factors a column-major lower triangle two to three times faster than an upper one
    # (H100: 162 against 306 us at order 512, 330 against 742 at 1024), so the input goes in
    # transposed, a[b, r, c] = x[b, c, r]: column-major, that is x itself, lower triangle read
    a = dev.empty(x.shape, dtype)
    dev.gather(dev.dense(x), a, nb, n, n, (n * n, 1, n))
    info = dev.empty((nb,), np.int32)
    pa, pi = dev.ptr(a), dev.ptr(info)
    if nb > 1:      # one call for the batch
        ptrs = dev.pointers(pa, n * n * isz, nb)
        dev.solver("potrfBatched", dtype, LOWER, n, dev.ptr(ptrs), n, pi, nb)
    else:
        lwork = dev.buffer_size("potrf", dtype, LOWER, n, pa, n)
        work = dev.empty((max(lwork, 1),), dtype)
        dev.solver("potrf", dtype, LOWER, n, pa, n, dev.ptr(work), lwork, pi)
    out = dev.empty(x.shape, dtype)
    # out[b, r, c] = L[r, c] = a[b, c, r]
    dev.gather(a, out, nb, n, n, (n * n, 1, n), tri=TRI_LOWER, bad=info, fill=FILL_NAN)
    return out


# ---------------------------------------------------------------------------------------------
# lu: getrf


def _column_major_copy(dev, x, nb, m, n, bad=None):
    """Buffer (..., n, m) holding ``x`` (..., m, n) column-major (leading dimension m)."""
    a = dev.empty(x.shape[:-2] + (n, m), x.dtype)
    # a[b, r, c] = x[b, c, r]
    dev.gather(dev.dense(x), a, nb, n, m, (m * n, 1, n), bad=bad,
               fill=FILL_NONE if bad is None else FILL_ZERO)
    return a


# square matrices up to this size factor in one cuBLAS call per batch (getrfBatched), larger
# ones one cuSOLVER call each (a batch of 4096 16 x 16 systems: one launch instead of 4096)
_BATCHED_LU_MAX = 128


def lu(x, _dev=None):
    """``[lu, pivots, permutation]`` as numpy_linalg.lu: LAPACK's packed factors, 0-based
    pivots (int32) and the row permutation (int32). Singular matrices factor without error."""
    if not supported(x):
        return list(_fallback("lu")(x))
    dev = _dev or _device()
    dtype = np.dtype(x.dtype)
    isz = dtype.itemsize
    m, n = x.shape[-2:]
    k = min(m, n)
    nb = _nb(x.shape)
    batch = x.shape[:-2]
    a = _column_major_copy(dev, x, nb, m, n)
    lwork = dev.buffer_size("getrf", dtype, m, n, dev.ptr(a), m)
    work = dev.empty((max(lwork, 1),), dtype)
    ipiv = dev.empty((nb, k), np.int32)
    info = dev.empty((nb,), np.int32)
    pa, pw, pp, pi = dev.ptr(a), dev.ptr(work), dev.ptr(ipiv), dev.ptr(info)
    if m == n and 1 < nb and n <= _BATCHED_LU_MAX:
        dev.getrf_batched(dtype, n, dev.ptr(dev.pointers(pa, m * n * isz, nb)), m, pp, pi, nb)
    else:
        for i in range(nb):
            dev.solver("getrf", dtype, m, n, pa + i * m * n * isz, m, pw, pp + 4 * i * k,
                       pi + 4 * i)
    out = dev.empty(x.shape, dtype)
    dev.gather(a, out, nb, m, n, (m * n, 1, m))       # out[b, i, j] = A[i, j] = a[b, j, i]
    pivots, perm = dev.lu_perm(ipiv, nb, k, m)
    return [out, pivots.reshape(batch + (k,)), perm.reshape(batch + (m,))]


# ---------------------------------------------------------------------------------------------
# qr: geqrf + orgqr


def qr(x, *, full_matrices, _dev=None):
    """``[q, r]``: q (m, m) and r (m, n) when ``full_matrices``, else (m, k) and (k, n)."""
    if not supported(x):
        return _fallback("qr")(x, full_matrices=full_matrices)
    dev = _dev or _device()
    dtype = np.dtype(x.dtype)
    isz = dtype.itemsize
    m, n = x.shape[-2:]
    k = min(m, n)
    kq = m if full_matrices else k
    nb = _nb(x.shape)
    batch = x.shape[:-2]
    a = _column_major_copy(dev, x, nb, m, n)
    tau = dev.empty((nb, max(k, 1)), dtype)
    info = dev.empty((1,), np.int32)        # geqrf's and orgqr's only report bad arguments
    lwork = dev.buffer_size("geqrf", dtype, m, n, dev.ptr(a), m)
    work = dev.empty((max(lwork, 1),), dtype)
    pa, pt, pw, pi = dev.ptr(a), dev.ptr(tau), dev.ptr(work), dev.ptr(info)
    tstep = max(k, 1) * isz
    for i in range(nb):
        dev.solver("geqrf", dtype, m, n, pa + i * m * n * isz, m, pt + i * tstep, pw, lwork,
                   pi)
    r = dev.empty(batch + (kq, n), dtype)
    dev.gather(a, r, nb, kq, n, (m * n, 1, m), tri=TRI_UPPER)    # r[b, i, j] = A[i, j]
    if kq <= n:            # Q's columns fit in a's: orgqr in place
        qbuf, qstep = a, m * n
    else:                  # full Q of a tall x: m x m, the k = n reflectors first
        qbuf, qstep = dev.zeros(batch + (m, m), dtype), m * m
        dev.gather(a, qbuf, nb, 1, m * n, (m * n, 0, 1), (m * m, 0, 1))
    lwork = dev.buffer_size("orgqr", dtype, m, kq, k, dev.ptr(qbuf), m, pt)
    work = dev.empty((max(lwork, 1),), dtype)
    pq, pw = dev.ptr(qbuf), dev.ptr(work)
    for i in range(nb):
        dev.solver("orgqr", dtype, m, kq, k, pq + i * qstep * isz, m, pt + i * tstep, pw, lwork,
                   pi)
    q = dev.empty(batch + (m, kq), dtype)
    dev.gather(qbuf, q, nb, m, kq, (qstep, 1, m))      # q[b, i, j] = Q[i, j]
    return [q, r]


# ---------------------------------------------------------------------------------------------
# eigh: XsyevBatched (syevd where this cuSOLVER lacks it)


def eigh(x, *, lower, _dev=None):
    """``[v, w]``: eigenvectors in v's columns, eigenvalues ascending; NaN for the matrices
    whose read triangle is not finite (or that did not converge)."""
    if not supported(x):
        return _fallback("eigh")(x, lower=lower)
    batched = _dev.batched_eigen if _dev is not None else has_batched_eigen()
    if _dev is None and not batched:
        _refuse_capture("syevd")
    dev = _dev or _device()
    dtype = np.dtype(x.dtype)
    isz = dtype.itemsize
    n = x.shape[-1]
    nb = _nb(x.shape)
    xs = dev.dense(x)
    flag = dev.nonfinite(xs, nb, n, n, TRI_LOWER if lower else TRI_UPPER)
    a = dev.empty(x.shape, dtype)
    dev.gather(xs, a, nb, n, n, (n * n, n, 1), bad=flag, fill=FILL_ZERO)
    uplo = UPPER if lower else LOWER      # the row-major lower triangle is column-major upper
    w = dev.empty(x.shape[:-1], dtype)
    info = dev.empty((nb,), np.int32)
    pa, pwv, pi = dev.ptr(a), dev.ptr(w), dev.ptr(info)
    if batched:
        dev.syev_batched(dtype, uplo, n, pa, n, pwv, pi, nb)
    else:
        lwork = dev.buffer_size("syevd", dtype, EIG_MODE_VECTOR, uplo, n, pa, n, pwv)
        work = dev.empty((max(lwork, 1),), dtype)
        for i in range(nb):
            dev.solver("syevd", dtype, EIG_MODE_VECTOR, uplo, n, pa + i * n * n * isz, n,
                       pwv + i * n * isz, dev.ptr(work), lwork, pi + 4 * i)
    bad = dev.either(flag, info)
    v = dev.empty(x.shape, dtype)
    dev.gather(a, v, nb, n, n, (n * n, 1, n), bad=bad, fill=FILL_NAN)   # v[b,i,j] = V[i, j]
    w_out = dev.empty(x.shape[:-1], dtype)
    dev.gather(w, w_out, nb, 1, n, (n, 0, 1), bad=bad, fill=FILL_NAN)
    return [v, w_out]


# ---------------------------------------------------------------------------------------------
# svd: gesvdjBatched (up to 32 x 32), gesvdaStridedBatched (thin), gesvd (the rest)

JACOBI_MAX = 32         # gesvdjBatched's largest matrix side


def svd_method(m, n, full_matrices, compute_uv, dtype=np.float32):
    """Which routine an (m, n) SVD uses: "gesvdj" (small, any outputs), "gesvda" (one batched
    call: the thin factors, which are the full ones for a square matrix) or "gesvd" (it
    synchronises, so never in a graph): for a full basis of a non-square matrix's larger side,
    and for float64, where gesvda's factors are orthogonal to about 1e-7 only (measured on
    CUDA 13), not to float64's precision."""
    if max(m, n) <= JACOBI_MAX:
        return "gesvdj"
    if compute_uv and full_matrices and m != n or np.dtype(dtype) == np.float64:
        return "gesvd"
    return "gesvda"


def svd_plan(m, n, full_matrices, compute_uv):
    """How a row-major (m, n) SVD maps onto gesvd of a column-major gm x gn matrix, gm >= gn:
    ``(transpose_input, gm, gn, job, u_cols)``. A wide (or square) ``x`` needs no copy in: its
    buffer is ``x^T`` (n x m) column-major, and ``x^T = U' S V'^T`` gives ``u = V'`` and
    ``vh = U'^T``, which are the row-major readings of the VT and U buffers. A tall ``x`` is
    copied column-major, and gesvd's U and VT are transposed back."""
    wide = n >= m
    gm, gn = (n, m) if wide else (m, n)
    job = ord("N") if not compute_uv else ord("A") if full_matrices else ord("S")
    u_cols = gm if full_matrices else gn
    return (not wide, gm, gn, job, u_cols)


def svd(x, *, full_matrices, compute_uv, _dev=None):
    """``[s, u, vh]`` (or ``[s]``), s descending; NaN for the matrices that hold a NaN or inf
    (or that did not converge)."""
    if not supported(x):
        return _fallback("svd")(x, full_matrices=full_matrices, compute_uv=compute_uv)
    m, n = x.shape[-2:]
    method = svd_method(m, n, full_matrices, compute_uv, x.dtype)
    if _dev is None and method == "gesvd":
        _refuse_capture("gesvd")
    dev = _dev or _device()
    xs = dev.dense(x)
    flag = dev.nonfinite(xs, _nb(x.shape), m, n)
    impl = {"gesvdj": _svd_jacobi, "gesvda": _svd_thin, "gesvd": _svd_general}[method]
    return impl(dev, xs, flag, full_matrices, compute_uv)


def _svd_input(dev, xs, flag, transpose_in):
    """The column-major matrix the library factors: ``x^T`` (x's own buffer, copied with the
    bad matrices zeroed) or, for ``transpose_in``, ``x`` (a column-major copy)."""
    m, n = xs.shape[-2:]
    nb = _nb(xs.shape)
    if transpose_in:
        return _column_major_copy(dev, xs, nb, m, n, bad=flag)
    a = dev.empty(xs.shape, xs.dtype)
    dev.gather(xs, a, nb, m, n, (m * n, n, 1), bad=flag, fill=FILL_ZERO)
    return a


def _svd_outputs(dev, x_shape, dtype, bad, s, k, u_read=None, vh_read=None):
    """``[s, u, vh]`` from the library's buffers, NaN for the bad matrices: ``u_read`` and
    ``vh_read`` are ``(buffer, (rows, cols), (batch, row, column) strides)``."""
    nb = _nb(x_shape)
    batch = x_shape[:-2]
    s_out = dev.empty(batch + (k,), dtype)
    dev.gather(s, s_out, nb, 1, k, (s.shape[-1], 0, 1), bad=bad, fill=FILL_NAN)
    if u_read is None:
        return [s_out]
    outs = [s_out]
    for src, shape, strides in (u_read, vh_read):
        out = dev.empty(batch + shape, dtype)
        dev.gather(src, out, nb, *shape, strides, bad=bad, fill=FILL_NAN)
        outs.append(out)
    return outs


def _svd_jacobi(dev, xs, flag, full_matrices, compute_uv):
    """gesvdjBatched of ``G = x^T`` (gm = n rows, gn = m columns): ``x = V_G S U_G^T``, so
    ``u = V_G`` and ``vh = U_G^T``, read from the full factors."""
    dtype = np.dtype(xs.dtype)
    m, n = xs.shape[-2:]
    k = min(m, n)
    nb = _nb(xs.shape)
    batch = xs.shape[:-2]
    a = _svd_input(dev, xs, flag, transpose_in=False)
    s = dev.empty(batch + (k,), dtype)
    ug = dev.empty(batch + (n, n), dtype)        # U_G: gm x gm
    vg = dev.empty(batch + (m, m), dtype)        # V_G: gn x gn
    info = dev.empty((nb,), np.int32)
    dev.gesvdj_batched(dtype, n, m, dev.ptr(a), dev.ptr(s), dev.ptr(ug), dev.ptr(vg),
                       dev.ptr(info), nb)
    bad = dev.either(flag, info)
    if not compute_uv:
        return _svd_outputs(dev, xs.shape, dtype, bad, s, k)
    uk, vk = (m, n) if full_matrices else (k, k)
    return _svd_outputs(dev, xs.shape, dtype, bad, s, k,
                        (vg, (m, uk), (m * m, 1, m)),       # u[i, j] = V_G[i, j]
                        (ug, (vk, n), (n * n, n, 1)))       # vh[i, j] = U_G[j, i]


def _svd_thin(dev, xs, flag, full_matrices, compute_uv):
    """gesvdaStridedBatched, which needs rows >= columns: a wide ``x`` factors ``G = x^T``
    (its own buffer) with ``u = V_G``, ``vh = U_G^T``; a tall one a column-major copy, with
    ``u = U_G``, ``vh = V_G^T``."""
    dtype = np.dtype(xs.dtype)
    m, n = xs.shape[-2:]
    k = min(m, n)
    nb = _nb(xs.shape)
    batch = xs.shape[:-2]
    tall = m > n
    gm, gn = (m, n) if tall else (n, m)
    a = _svd_input(dev, xs, flag, transpose_in=tall)
    s = dev.empty(batch + (gn,), dtype)
    ug = dev.empty(batch + (gn, gm), dtype)      # U_G: gm x gn, column-major
    vg = dev.empty(batch + (gn, gn), dtype)      # V_G: gn x gn
    info = dev.empty((nb,), np.int32)
    dev.gesvda_batched(dtype, compute_uv, gm, gn, dev.ptr(a), dev.ptr(s), dev.ptr(ug),
                       dev.ptr(vg), dev.ptr(info), nb)
    bad = dev.either(flag, info)
    if not compute_uv:
        return _svd_outputs(dev, xs.shape, dtype, bad, s, k)
    if tall:
        return _svd_outputs(dev, xs.shape, dtype, bad, s, k,
                            (ug, (m, k), (gm * gn, 1, gm)),     # u[i, j] = U_G[i, j]
                            (vg, (k, n), (gn * gn, gn, 1)))     # vh[i, j] = V_G[j, i]
    return _svd_outputs(dev, xs.shape, dtype, bad, s, k,
                        (vg, (m, k), (gn * gn, 1, gn)),         # u[i, j] = V_G[i, j]
                        (ug, (k, n), (gm * gn, gm, 1)))         # vh[i, j] = U_G[j, i]


def _svd_general(dev, xs, flag, full_matrices, compute_uv):
    """gesvd, one call per matrix (see :func:`svd_plan`)."""
    dtype = np.dtype(xs.dtype)
    isz = dtype.itemsize
    m, n = xs.shape[-2:]
    k = min(m, n)
    nb = _nb(xs.shape)
    batch = xs.shape[:-2]
    transpose_in, gm, gn, job, u_cols = svd_plan(m, n, full_matrices, compute_uv)
    a = _svd_input(dev, xs, flag, transpose_in)
    s = dev.empty(batch + (k,), dtype)
    info = dev.empty((nb,), np.int32)
    rwork = dev.empty((max(k, 1),), dtype)
    lwork = dev.buffer_size("gesvd", dtype, gm, gn)
    work = dev.empty((max(lwork, 1),), dtype)
    if compute_uv:
        ug = dev.empty(batch + (u_cols, gm), dtype)      # U': gm x u_cols, ldu = gm
        vg = dev.empty(batch + (gn, gn), dtype)          # V'^T: gn x gn, ldvt = gn
        pu, pv = dev.ptr(ug), dev.ptr(vg)
    pa, ps, pi, pr, pw = dev.ptr(a), dev.ptr(s), dev.ptr(info), dev.ptr(rwork), dev.ptr(work)
    for i in range(nb):
        dev.solver("gesvd", dtype, job, job, gm, gn, pa + i * m * n * isz, gm,
                   ps + i * k * isz,
                   pu + i * u_cols * gm * isz if compute_uv else None, gm,
                   pv + i * gn * gn * isz if compute_uv else None, gn,
                   pw, lwork, pr, pi + 4 * i)
    bad = dev.either(flag, info)
    if not compute_uv:
        return _svd_outputs(dev, xs.shape, dtype, bad, s, k)
    uk = m if full_matrices else k
    vk = n if full_matrices else k
    if transpose_in:       # tall: u = U' (m x u_cols), vh = V'^T (n x n), both column-major
        return _svd_outputs(dev, xs.shape, dtype, bad, s, k,
                            (ug, (m, uk), (u_cols * gm, 1, gm)),
                            (vg, (n, n), (gn * gn, 1, gn)))
    # wide: u = V' (the VT buffer read row-major), vh = U'^T (the U one)
    return _svd_outputs(dev, xs.shape, dtype, bad, s, k,
                        (vg, (m, m), (gn * gn, gn, 1)),
                        (ug, (vk, n), (u_cols * gm, gm, 1)))


def impls():
    """The GPU table entries: primitive -> impl (for fnx.backends.cupy_backend)."""
    from ..core import linalg_prims as P
    return {P.triangular_solve_p: triangular_solve, P.cholesky_p: cholesky, P.lu_p: lu,
            P.qr_p: qr, P.eigh_p: eigh, P.svd_p: svd}

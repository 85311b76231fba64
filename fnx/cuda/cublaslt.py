"""cuBLASLt through ctypes: GEMMs with a chosen algorithm and fused bias/activation epilogues.

cuBLASLt's heuristic offers several algorithms per problem; ``fnx.cuda.gemm_table`` times them
and keeps the fastest. A plan (descriptors + algorithm) is built once per problem and replayed
with new pointers, so a call is one ``cublasLtMatmul`` (capturable into a CUDA graph).
Row-major ``C = A @ B`` is column-major ``C^T = B^T @ A^T``, as in fnx.cuda.cublas.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from .cublas import WORKSPACE_BYTES, _CUDA_TYPE, _lib as cublas_lib, compute_type, handle_for

_DESC_TRANSA, _DESC_TRANSB, _DESC_EPILOGUE, _DESC_BIAS_POINTER = 3, 4, 7, 8
_DESC_AUX_POINTER, _DESC_AUX_LD, _DESC_BIAS_DATA_TYPE = 11, 12, 26
_LAYOUT_BATCH_COUNT, _LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
_PREF_MAX_WORKSPACE_BYTES = 1
EPILOGUES = {"none": 1, "relu": 2, "bias": 4, "relu_bias": 6, "gelu": 32, "gelu_bias": 36,
             # with an auxiliary matrix: the forward writes ReLU's bitmask (GELU's input),
             # the backward reads it and also writes the bias gradient
             "relu_aux_bias": 134, "drelu_bgrad": 152, "gelu_aux_bias": 164, "dgelu_bgrad": 208}
_CUDA_R_32F = 0


class _HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace_size", ctypes.c_size_t),
                ("state", ctypes.c_int), ("waves_count", ctypes.c_float),
                ("reserved", ctypes.c_int * 4)]


@functools.lru_cache(maxsize=None)
def _lib():
    cublas_lib()       # libcublas brings libcublasLt into the process
    with open("/proc/self/maps") as fh:
        paths = {line.split()[-1] for line in fh if "libcublasLt.so" in line}
    if not paths:
        raise RuntimeError("could not find libcublasLt in this process")
    lib = ctypes.CDLL(sorted(paths)[0])
    for fn in ("cublasLtCreate", "cublasLtMatmulDescCreate", "cublasLtMatmulDescSetAttribute",
               "cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutSetAttribute",
               "cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceSetAttribute",
               "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmul"):
        getattr(lib, fn).restype = ctypes.c_int
    lib.cublasLtMatrixLayoutCreate.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                               ctypes.c_uint64, ctypes.c_int64]
    return lib


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLASLt status {status}")


def _handle():
    """The current device's cuBLASLt handle (a handle holds resources on the device it was
    created on)."""
    import cupy as cp
    return _device_handle(cp.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _device_handle(device: int):
    h = ctypes.c_void_p()
    _check(_lib().cublasLtCreate(ctypes.byref(h)), "cublasLtCreate")
    return h


def _set(setter, obj, attr, value):
    _check(setter(obj, attr, ctypes.byref(value), ctypes.sizeof(value)), "set attribute")


def _layout(dtype, rows, cols, ld, batch, stride):
    lay = ctypes.c_void_p()
    lib = _lib()
    _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), _CUDA_TYPE[dtype], rows, cols, ld),
           "cublasLtMatrixLayoutCreate")
    if batch > 1:
        _set(lib.cublasLtMatrixLayoutSetAttribute, lay, _LAYOUT_BATCH_COUNT, ctypes.c_int32(batch))
        _set(lib.cublasLtMatrixLayoutSetAttribute, lay, _LAYOUT_STRIDED_BATCH_OFFSET,
             ctypes.c_int64(stride))
    return lay


def aux_ld(n: int, epilogue: str) -> int:
    """Leading dimension of an epilogue's auxiliary matrix for ``n`` output columns: in bits
    for ReLU's bitmask (a multiple of 128), in elements for GELU's input (a multiple of 8)."""
    return -(-n // 128) * 128 if "relu" in epilogue else -(-n // 8) * 8


def aux_shape(m: int, n: int, epilogue: str, dtype) -> tuple:
    """``(shape, dtype)`` of the auxiliary matrix of an ``m x n`` result, in row-major terms:
    row ``i`` holds output row ``i``'s mask bits (bytes) or GELU inputs."""
    ld = aux_ld(n, epilogue)
    return ((m, ld // 8), np.dtype(np.uint8)) if "relu" in epilogue else \
        ((m, ld), np.dtype(dtype))


class Plan:
    """One GEMM problem: ``out[b] = epilogue(op(a[b]) @ op(b[b]) (+ bias))`` in row-major terms,
    with every algorithm cuBLASLt's heuristic offers for it (``len(plan.algos)``)."""

    def __init__(self, m, n, k, trans_a, trans_b, dtype, out_dtype, precision, batch=1,
                 a_batched=True, b_batched=True, epilogue="none", max_algos=8):
        lib = _lib()
        self.dtype = dtype = np.dtype(dtype)
        out_dtype = np.dtype(out_dtype)
        self.epilogue = epilogue
        self.desc = ctypes.c_void_p()
        scale = 1 if dtype == np.float64 else _CUDA_R_32F
        _check(lib.cublasLtMatmulDescCreate(ctypes.byref(self.desc),
                                            compute_type(dtype, precision), scale),
               "cublasLtMatmulDescCreate")
        setd = lib.cublasLtMatmulDescSetAttribute
        # column-major view: C^T (n x m) = op(B)^T (n x k) @ op(A)^T (k x m)
        _set(setd, self.desc, _DESC_TRANSA, ctypes.c_int32(1 if trans_b else 0))
        _set(setd, self.desc, _DESC_TRANSB, ctypes.c_int32(1 if trans_a else 0))
        if epilogue != "none":
            _set(setd, self.desc, _DESC_EPILOGUE, ctypes.c_int32(EPILOGUES[epilogue]))
        has_bias = "bias" in epilogue or "bgrad" in epilogue
        has_aux = "aux" in epilogue or epilogue.startswith("d")
        if has_bias:
            _set(setd, self.desc, _DESC_BIAS_DATA_TYPE, ctypes.c_int32(_CUDA_TYPE[out_dtype]))
        if has_aux:
            _set(setd, self.desc, _DESC_AUX_LD, ctypes.c_int64(aux_ld(n, epilogue)))
        b_rows, b_cols = (k, n) if trans_b else (n, k)
        a_rows, a_cols = (m, k) if trans_a else (k, m)
        self.b_layout = _layout(dtype, b_rows, b_cols, b_rows, batch, n * k if b_batched else 0)
        self.a_layout = _layout(dtype, a_rows, a_cols, a_rows, batch, m * k if a_batched else 0)
        self.c_layout = _layout(out_dtype, n, m, n, batch, m * n)
        pref = ctypes.c_void_p()
        _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "preference")
        _set(lib.cublasLtMatmulPreferenceSetAttribute, pref, _PREF_MAX_WORKSPACE_BYTES,
             ctypes.c_uint64(WORKSPACE_BYTES))
        results = (_HeuristicResult * max_algos)()
        count = ctypes.c_int(0)
        # the heuristic checks the alignment of the bias and auxiliary pointers
        if has_bias:
            _set(setd, self.desc, _DESC_BIAS_POINTER, ctypes.c_void_p(256))
        if has_aux:
            _set(setd, self.desc, _DESC_AUX_POINTER, ctypes.c_void_p(256))
        status = lib.cublasLtMatmulAlgoGetHeuristic(
            _handle(), self.desc, self.b_layout, self.a_layout, self.c_layout, self.c_layout,
            pref, max_algos, results, ctypes.byref(count))
        self.algos = [results[i] for i in range(count.value) if results[i].state == 0] \
            if status == 0 else []

    def __call__(self, out, a, b, algo: int = 0, bias=None, c=None, alpha=1.0, beta=0.0,
                 aux=None):
        """``out = epilogue(alpha * op(a) @ op(b) + beta * c (+ bias))``. ``aux``: the
        auxiliary matrix (``aux_shape``) the epilogue writes (forward) or reads (backward);
        ``bias``: the bias gradient a ``*_bgrad`` epilogue writes."""
        import cupy as cp
        lib = _lib()
        stream = cp.cuda.get_current_stream()
        ws = handle_for(stream.ptr).workspace_ptr
        if bias is not None:
            _set(lib.cublasLtMatmulDescSetAttribute, self.desc, _DESC_BIAS_POINTER,
                 ctypes.c_void_p(bias.data.ptr))
        if aux is not None:
            _set(lib.cublasLtMatmulDescSetAttribute, self.desc, _DESC_AUX_POINTER,
                 ctypes.c_void_p(aux.data.ptr))
        r = self.algos[algo]
        scalar = ctypes.c_double if self.dtype == np.float64 else ctypes.c_float
        c = out if c is None else c
        _check(lib.cublasLtMatmul(
            _handle(), self.desc, ctypes.byref(scalar(alpha)), ctypes.c_void_p(b.data.ptr),
            self.b_layout, ctypes.c_void_p(a.data.ptr), self.a_layout, ctypes.byref(scalar(beta)),
            ctypes.c_void_p(c.data.ptr), self.c_layout, ctypes.c_void_p(out.data.ptr),
            self.c_layout, ctypes.byref(r.algo), ctypes.c_void_p(ws),
            ctypes.c_size_t(WORKSPACE_BYTES), ctypes.c_void_p(stream.ptr)), "cublasLtMatmul")
        return out

"""Many device-to-device copies in one kernel launch.

Replaying a CUDA graph means copying every input into the graph's static buffers and every
output out to a fresh array; one generated kernel per executable does all of them, so the host
pays one launch instead of one per buffer. Pointers travel as kernel arguments (nothing is
uploaded per call). ``concatenate`` is copies too: each operand into its slice of the result.
"""
from __future__ import annotations

import numpy as np

from .elementwise import _compile


def dense(x):
    """``x`` as a C-contiguous buffer, keeping its shape: ``x`` itself if it is one, else a copy
    by fnx's strided-copy kernel where the view folds into ``STRIDED_DIMS`` dimensions, else
    CuPy's copy. (CuPy compiles its copy kernel per dtype and rank, in line: up to a quarter
    of a second of a first call.)"""
    if x.flags.c_contiguous:
        return x
    import cupy as cp
    dims = _folded(x)
    if dims is None:
        return cp.ascontiguousarray(x)
    out = cp.empty(x.shape, x.dtype)
    view = np.zeros(1, _VIEW)
    view["total"] = x.size
    view["dims"] = len(dims)
    view["n"][0, :len(dims)], view["s"][0, :len(dims)] = zip(*dims)
    blocks = int(min(max(1, -(-x.size // 256)), 8192))
    from .compile import kernel
    kernel(*STRIDED_UNITS[(1, 2, 4, 8).index(x.dtype.itemsize)])(
        (blocks,), (256,), (x, out, view))
    return out


STRIDED_DIMS = 6
_VIEW = np.dtype([("total", np.uint32), ("dims", np.int32), ("n", np.uint32, (STRIDED_DIMS,)),
                  ("s", np.int64, (STRIDED_DIMS,))], align=True)


def _folded(x):
    """``[(size, element stride)]`` reading ``x`` in C order, with dimensions that are
    consecutive in memory merged and size-1 ones dropped; None where more than ``STRIDED_DIMS``
    remain, the view spans 2**31 elements or more (the kernel counts in 32 bits), a stride is
    not whole elements, or the dtype is not 1, 2, 4 or 8 bytes."""
    isz = x.dtype.itemsize
    if isz not in (1, 2, 4, 8) or any(st % isz for st in x.strides) or x.size >= 2**31:
        return None
    dims: list = []
    for n, st in zip(x.shape, x.strides):
        if n == 1:
            continue
        st //= isz
        if dims and dims[-1][1] == st * n:
            dims[-1] = (dims[-1][0] * n, st)
        else:
            dims.append((n, st))
    if len(dims) > STRIDED_DIMS:
        return None
    return dims or [(1, 0)]


# a C-order copy of a strided view folded into ``dims`` dimensions (sizes n, element strides
# s), passed by value as one parameter; one kernel (and program) per element size
def _strided_source(itemsize: int) -> str:
    t = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int",
         8: "unsigned long long"}[itemsize]
    return (
        f"struct fnx_view {{ unsigned total; int dims; unsigned n[{STRIDED_DIMS}]; "
        f"long long s[{STRIDED_DIMS}]; }};\n"
        f'extern "C" __global__ void fnx_strided_copy_{itemsize}(const {t}* src, {t}* dst, '
        "const __grid_constant__ fnx_view v) {\n"
        "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < v.total;\n"
        "       i += gridDim.x * blockDim.x) {\n"
        "    unsigned r = i;\n"
        "    long long off = 0;\n"
        "    for (int d = v.dims - 1; d > 0; --d) {\n"
        "      const unsigned q = r / v.n[d];\n"
        "      off += (long long)(r - q * v.n[d]) * v.s[d];\n"
        "      r = q;\n"
        "    }\n"
        "    dst[i] = src[off + (long long)r * v.s[0]];\n"
        "  }\n}\n")


STRIDED_UNITS = [(_strided_source(n), f"fnx_strided_copy_{n}") for n in (1, 2, 4, 8)]


# One kernel for every list of copies: the pointers and sizes travel by value as a table in the
# kernel's parameters (__grid_constant__, so the table is read in place), one row of blocks per
# buffer. A kernel generated per list of sizes took NVRTC 1.5 s for a program's 78 buffers.
SLOTS = 128
_NAME = "fnx_copy_table"
SOURCE = f"""
struct fnx_copy_list {{
  const unsigned char* src[{SLOTS}];
  unsigned char* dst[{SLOTS}];
  unsigned long long nbytes[{SLOTS}];
}};
extern "C" __global__ void {_NAME}(const __grid_constant__ fnx_copy_list t) {{
  const unsigned char* s = t.src[blockIdx.y];
  unsigned char* d = t.dst[blockIdx.y];
  const unsigned long long n = t.nbytes[blockIdx.y];
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long done = 0;
  if ((((unsigned long long)s | (unsigned long long)d) & 15) == 0) {{
    const unsigned long long words = n >> 4;
    for (unsigned long long i = tid; i < words; i += stride)
      ((uint4*)d)[i] = ((const uint4*)s)[i];
    done = words << 4;
  }}
  for (unsigned long long i = done + tid; i < n; i += stride) d[i] = s[i];
}}
"""
UNIT = (SOURCE, _NAME)
_TABLE = np.dtype([("src", np.uint64, (SLOTS,)), ("dst", np.uint64, (SLOTS,)),
                   ("nbytes", np.uint64, (SLOTS,))])


class MultiCopy:
    """``copy(srcs, dsts)`` of dense buffers of fixed sizes (bytes), in one launch per
    ``SLOTS`` buffers."""

    def __init__(self, sizes):
        self.sizes = list(sizes)
        self._tables = []
        for at in range(0, len(self.sizes), SLOTS):
            part = self.sizes[at:at + SLOTS]
            table = np.zeros(1, _TABLE)
            table["nbytes"][0, :len(part)] = part
            blocks = min(max(1, -(-max(part) // 4096)), 512)
            self._tables.append((at, len(part), table, (blocks, len(part))))

    def __call__(self, srcs, dsts):
        if len(self.sizes) == 1:     # one buffer: a plain copy costs the host less than a launch
            copy_into(dsts[0], srcs[0])
            return
        for at, count, table, grid in self._tables:
            table["src"][0, :count] = [a.data.ptr for a in srcs[at:at + count]]
            table["dst"][0, :count] = [a.data.ptr for a in dsts[at:at + count]]
            _compile(SOURCE, _NAME)(grid, (256,), (table,))


def copy_into(dst, src):
    """``dst[...] = src`` on the current stream: one device-to-device memcpy where both are
    dense with one dtype (CuPy's copy is a kernel, which a fresh machine must compile first)."""
    import cupy as cp
    if dst.dtype == src.dtype and dst.shape == src.shape and dst.flags.c_contiguous and \
            src.flags.c_contiguous:
        if dst.data.ptr != src.data.ptr and dst.nbytes:
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, dst.nbytes,
                                        cp.cuda.runtime.memcpyDeviceToDevice,
                                        cp.cuda.get_current_stream().ptr)
    else:
        cp.copyto(dst, src)


def dense_copy(a):
    """A new C-contiguous copy of device array ``a`` (see :func:`copy_into`)."""
    import cupy as cp
    out = cp.empty(a.shape, a.dtype)
    copy_into(out, a)
    return out


def fresh_outputs(metas, align: int = 256):
    """New arrays for ``metas = [(shape, dtype)]`` carved from one allocation."""
    import cupy as cp
    if len(metas) == 1:
        return [cp.empty(*metas[0])]
    offsets, total = [], 0
    for shape, dtype in metas:
        offsets.append(total)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        total += -(-max(nbytes, 1) // align) * align
    block = cp.empty(max(total, 1), dtype=np.uint8)
    return [cp.ndarray(shape, dtype, memptr=block.data + off)
            for (shape, dtype), off in zip(metas, offsets)]


def concatenate(*xs, dimension):
    """``xs`` joined along ``dimension``: one copy kernel per operand into its slice of the
    result (CuPy's own concatenate of many operands copies a table of pointers from the host,
    which a graph cannot capture)."""
    import cupy as cp
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    out = cp.empty(shape, cp.result_type(*xs))
    start = 0
    for x in xs:
        size = x.shape[dimension]
        out[(slice(None),) * dimension + (slice(start, start + size),)] = x
        start += size
    return out

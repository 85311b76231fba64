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
    """``x`` as a C-contiguous buffer, keeping its shape (CuPy's ascontiguousarray would turn a
    0-d array into a 1-d one)."""
    import cupy as cp
    return x if x.flags.c_contiguous else cp.ascontiguousarray(x)


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

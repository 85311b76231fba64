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


def _word(nbytes: int):
    if nbytes % 16 == 0:
        return "uint4", 16
    if nbytes % 4 == 0:
        return "unsigned int", 4
    return "unsigned char", 1


class MultiCopy:
    """``copy(srcs, dsts)`` for a fixed list of buffer sizes (bytes)."""

    def __init__(self, sizes):
        self.sizes = list(sizes)
        words = [_word(n) for n in self.sizes]
        self.aligns = [w for _, w in words]
        params, body = [], []
        for k, ((t, w), n) in enumerate(zip(words, self.sizes)):
            params.append(f"const {t}* __restrict__ s{k}, {t}* __restrict__ d{k}")
            body.append(f"  for (long long i = tid; i < {n // w}LL; i += stride) d{k}[i] = s{k}[i];")
        self.name = f"fnx_copy_{len(self.sizes)}"
        self.source = (f'extern "C" __global__ void {self.name}({", ".join(params)}) {{\n'
                       "  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                       "  const long long stride = (long long)gridDim.x * blockDim.x;\n"
                       + "\n".join(body) + "\n}\n")
        self.grid = (int(min(max(1, -(-max(n // w for n, w in zip(self.sizes, self.aligns))
                                        // 256)), 1024)),) if self.sizes else (1,)
        self.block = (256,)
        self._kernel = _compile(self.source, self.name) if len(self.sizes) > 1 else None

    def aligned(self, arrays) -> bool:
        return all(a.data.ptr % w == 0 for a, w in zip(arrays, self.aligns))

    def __call__(self, srcs, dsts):
        if not self.sizes:
            return
        if len(self.sizes) == 1:     # one buffer: a plain copy costs the host less than a launch
            copy_into(dsts[0], srcs[0])
            return
        args = []
        for s, d in zip(srcs, dsts):
            args += [s, d]
        self._kernel(self.grid, self.block, tuple(args))


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

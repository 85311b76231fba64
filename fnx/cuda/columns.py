"""Generated column reductions: an elementwise chain over (rows, cols) ending in a sum over the
leading axes, as one kernel.

The backward pass of a dense layer is such a group: the activation's derivative times the
incoming gradient (needed whole, by the next products) and its sum over the batch (the bias
gradient). One block covers 32 columns; its threads walk the rows, so each warp reads 128
contiguous bytes per row, and the chain's values are written as they are computed. Few columns
(a convolution's bias gradient sums 131072 rows of 32) would leave the GPU nearly idle, so the
rows are also split over ``gridDim.y`` blocks: each writes its partial sums to a scratch buffer,
and the last block of a column group to finish (a ticket counter) adds them in split order,
so the result does not depend on which block ran first. A product
over a few terms (``fnx.cuda.fusion.small_product``, the gradient back through a classifier
head) may open the chain: each element is a short dot, and a thread's column stays fixed, so
its loads of the second operand can leave the row loop.
"""
from __future__ import annotations

import numpy as np

from .elementwise import C_TYPES, FusedKernel, _compile, compute_type, headers, store_value

ROW_LANES = 32


class ColumnKernel:
    """``eqns`` = an elementwise chain (possibly empty) and, last, its sum over leading axes."""

    def __init__(self, eqns, inputs, outputs, shape):
        *chain, self.reduce = eqns
        self.eqns, self.inputs, self.outputs = eqns, inputs, outputs
        self.shape = tuple(shape)
        k = len(self.reduce.params["axes"])
        self.rows = int(np.prod(self.shape[:k], dtype=np.int64))
        self.cols = int(np.prod(self.shape[k:], dtype=np.int64))
        self.size = self.rows * self.cols
        self.shared_bytes = 0
        self.summed = self.reduce.invars[0]
        chain_outputs = [v for v in outputs if v is not self.reduce.outvars[0]]
        self.outputs = chain_outputs + [self.reduce.outvars[0]]    # the kernel's argument order
        self.chain = FusedKernel(chain, inputs, chain_outputs, shape, also_read=[self.summed])
        self.source, self.name = self._generate()
        self._kernel = None

    def _generate(self):
        one_row_axis = len(self.shape) == 2 and self.rows == self.shape[0]
        body = self.chain.body(coords=("r", "c") if one_row_axis else None)
        x = self.chain.names[self.summed]
        out = self.reduce.outvars[0]
        acc_t = compute_type(out.aval.dtype)
        params = [f"{d} {n}" for d, n in self.chain.params()]
        params.append(f"{C_TYPES[out.aval.dtype.name]}* __restrict__ sum_out")
        name = "fnx_colsum_" + "_".join(e.primitive.name for e in self.eqns[:-1])[:60]
        store = store_value(out.aval.dtype, "s")
        src = (
            headers(self.chain.value_dtypes() | {out.aval.dtype}) +
            f'extern "C" __global__ void __launch_bounds__({32 * ROW_LANES}) '
            f'{name}({", ".join(params)}, {acc_t}* __restrict__ partial, '
            "unsigned int* __restrict__ tickets) {\n"
            "  const long long c = blockIdx.x * 32LL + threadIdx.x;\n"
            f"  {acc_t} acc = 0;\n"
            f"  if (c < {self.cols}LL) {{\n"
            f"    for (long long r = blockIdx.y * {ROW_LANES}LL + threadIdx.y; r < {self.rows}LL;"
            f" r += {ROW_LANES}LL * gridDim.y) {{\n"
            f"      const long long i = r * {self.cols}LL + c;\n"
            f"{body}\n"
            f"      acc += {x};\n"
            "    }\n"
            "  }\n"
            f"  __shared__ {acc_t} part[{ROW_LANES}][33];\n"
            "  __shared__ bool last;\n"
            "  part[threadIdx.y][threadIdx.x] = acc;\n"
            "  __syncthreads();\n"
            f"  {acc_t} s = 0;\n"
            "  if (threadIdx.y == 0) {\n"
            f"    for (int k = 0; k < {ROW_LANES}; ++k) s += part[k][threadIdx.x];\n"
            "  }\n"
            "  if (gridDim.y == 1) {\n"
            f"    if (threadIdx.y == 0 && c < {self.cols}LL) sum_out[c] = {store};\n"
            "    return;\n"
            "  }\n"
            "  if (threadIdx.y == 0) {\n"
            f"    if (c < {self.cols}LL) partial[blockIdx.y * {self.cols}LL + c] = s;\n"
            "    __threadfence();\n"
            "  }\n"
            "  __syncthreads();\n"
            "  if (threadIdx.x == 0 && threadIdx.y == 0)\n"
            "    last = atomicAdd(&tickets[blockIdx.x], 1u) == gridDim.y - 1;\n"
            "  __syncthreads();\n"
            "  if (!last || threadIdx.y != 0) return;\n"
            "  __threadfence();\n"
            f"  if (c < {self.cols}LL) {{\n"
            "    s = 0;\n"
            f"    for (unsigned int k = 0; k < gridDim.y; ++k) s += partial[k * {self.cols}LL + c];\n"
            f"    sum_out[c] = {store};\n"
            "  }\n"
            "  if (threadIdx.x == 0) tickets[blockIdx.x] = 0;   // ready for the next launch\n"
            "}\n")
        return src, name

    def kernel(self):
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
        return self._kernel

    def extra_args(self):
        """The scratch the split rows need: partial sums and one ticket per column group (zero,
        and left at zero by the last block, so replays reuse them)."""
        import cupy as cp
        groups, splits = self._grid
        if splits == 1:
            return (np.intp(0), np.intp(0))
        acc = np.float64 if self.reduce.outvars[0].aval.dtype == np.float64 else np.float32
        return (cp.empty(splits * self.cols, acc), cp.zeros(groups, np.uint32))

    def launch_config(self, sm_count: int):
        groups = max(1, -(-self.cols // 32))
        # enough blocks to fill the GPU twice over, each thread summing at least 16 rows
        splits = int(max(1, min(self.rows // (ROW_LANES * 16), (2 * sm_count) // groups, 1024)))
        self._grid = (groups, splits)
        return (groups, splits), (32, ROW_LANES)

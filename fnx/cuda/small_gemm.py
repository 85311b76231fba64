"""Generated kernels for products too thin for cuBLAS's tiles: a handful of output columns (a
classifier's logits and their gradients), where a tiled GEMM runs a few blocks down a long K loop.

Two shapes of work, offered to fnx.cuda.gemm_table as candidates and timed against cuBLAS:
``warp_rows`` gives each output row to one warp whose lanes split K (N <= 16 outputs per row, kept
in registers); ``thread_outputs`` gives each output element to one thread (small K).
"""
from __future__ import annotations

import numpy as np

from .elementwise import C_TYPES, _compile

MAX_WARP_COLS = 16
MAX_THREAD_K = 1024


def _at(name, trans, rows, cols, r, c):
    """Element (r, c) of a (rows, cols) operand stored row-major, or transposed."""
    return f"{name}[(long long)({c}) * {rows} + ({r})]" if trans else \
        f"{name}[(long long)({r}) * {cols} + ({c})]"


class SmallGemm:
    def __init__(self, kind, m, n, k, trans_a, trans_b, dtype):
        self.kind, self.m, self.n, self.k = kind, m, n, k
        t = C_TYPES[np.dtype(dtype).name]
        a = _at("A", trans_a, m, k, "row", "kk")
        b = _at("B", trans_b, k, n, "kk", "col")
        name = f"fnx_{kind}_{m}x{n}x{k}_{int(trans_a)}{int(trans_b)}"
        if kind == "warp_rows":
            b_cols = "\n".join(f"      acc[{j}] += av * "
                               + _at("B", trans_b, k, n, "kk", str(j)) + ";" for j in range(n))
            body = (
                "  const long long row = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
                "  const int lane = threadIdx.x & 31;\n"
                f"  if (row >= {m}) return;\n"
                f"  {t} acc[{n}];\n"
                f"  for (int j = 0; j < {n}; ++j) acc[j] = 0;\n"
                f"  for (int kk = lane; kk < {k}; kk += 32) {{\n"
                f"    const {t} av = {a};\n"
                f"{b_cols}\n"
                "  }\n"
                f"  for (int j = 0; j < {n}; ++j) {{\n"
                f"    {t} v = acc[j];\n"
                "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
                f"    if (lane == j) C[row * {n} + j] = v;\n"
                "  }\n")
            self.grid, self.block = (-(-m * 32 // 128),), (128,)
        else:
            body = (
                "  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                f"  if (t >= {m * n}LL) return;\n"
                f"  const long long row = t / {n}, col = t % {n};\n"
                f"  {t} acc = 0;\n"
                f"  for (int kk = 0; kk < {k}; ++kk) acc += {a} * {b};\n"
                "  C[t] = acc;\n")
            self.grid, self.block = (-(-m * n // 128),), (128,)
        self.source = (f'extern "C" __global__ void {name}(const {t}* __restrict__ A, '
                       f"const {t}* __restrict__ B, {t}* __restrict__ C) {{\n{body}}}\n")
        self.name = name
        self._kernel = None

    @staticmethod
    def candidates(m, n, k, dtype, batch):
        if batch != 1 or np.dtype(dtype) not in (np.float32, np.float64):
            return []
        kinds = []
        if n <= MAX_WARP_COLS:
            kinds.append("warp_rows")
        if k <= MAX_THREAD_K and m * n <= (1 << 20):
            kinds.append("thread_outputs")
        return kinds

    def __call__(self, out, a, b):
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
        self._kernel(self.grid, self.block, (a, b, out))
        return out

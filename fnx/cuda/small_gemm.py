"""Generated kernels for products too thin for cuBLAS's tiles (a classifier's handful of logits
and their gradients, where a tiled GEMM runs a few blocks down a long K loop), each with an
epilogue that finishes the result in registers (a bias and activation, or a gradient step).

Offered to fnx.cuda.gemm_table as candidates and timed against cuBLAS and cuBLASLt:

- ``warp_rows``: one warp per output row, its lanes splitting K (N <= 16 outputs per row);
- ``thread_outputs``: one thread per output element (small K).

An :class:`Epilogue` is C code run once per output with ``acc`` (the product's value), ``row``,
``col`` and the linear index ``i`` in scope; it writes ``C[i]``.
"""
from __future__ import annotations

import numpy as np

from .elementwise import C_TYPES, _compile

MAX_WARP_COLS = 16
MAX_THREAD_K = 32        # beyond this, cuBLAS's tiles always won when timed


class Epilogue:
    """``store``: C statements writing ``C[i]`` from ``acc``; ``params``: the extra pointer
    parameters they read, ``[(declaration, name)]``, passed after the output when called."""

    def __init__(self, key: str, store: str, params=()):
        self.key, self.store, self.params = key, store, list(params)


PLAIN = Epilogue("plain", "C[i] = acc;")


def bias_act(name: str, activation: str, t: str) -> Epilogue:
    """``C = act(acc + bias[col])``; ``activation`` (called ``name``) is a C expression of
    ``v``."""
    return Epilogue(f"bias_{name}",
                    f"{{ const {t} v = acc + bias[col]; C[i] = {activation}; }}",
                    [(f"const {t}* __restrict__", "bias")])


def dense_epilogue(act: str, dtype) -> Epilogue:
    """A dense layer's bias and activation (``fnx.cuda.epilogue.activation_c``'s names)."""
    from .epilogue import act_name, activation_c
    return bias_act(act_name(act), activation_c(act), C_TYPES[np.dtype(dtype).name])


def update(alpha: float, t: str) -> Epilogue:
    """``C = P + alpha * acc``; ``C`` may be ``P`` itself (each element is read, then written,
    by the same thread)."""
    return Epilogue(f"update{alpha!r}".replace(".", "p").replace("-", "m"),
                    f"C[i] = P[i] + ({t})({alpha!r}) * acc;", [(f"const {t}*", "P")])


def _at(name, trans, rows, cols, r, c):
    """Element (r, c) of a (rows, cols) operand stored row-major, or transposed."""
    return f"{name}[(long long)({c}) * {rows} + ({r})]" if trans else \
        f"{name}[(long long)({r}) * {cols} + ({c})]"


class SmallGemm:
    """``C = epilogue(op(A) @ op(B))`` for one problem, as one generated kernel."""

    def __init__(self, kind, m, n, k, trans_a, trans_b, dtype, epilogue: Epilogue = PLAIN):
        self.kind, self.m, self.n, self.k = kind, m, n, k
        t = C_TYPES[np.dtype(dtype).name]
        a = _at("A", trans_a, m, k, "row", "kk")
        b = _at("B", trans_b, k, n, "kk", "col")
        name = f"fnx_{kind}_{m}x{n}x{k}_{int(trans_a)}{int(trans_b)}_{epilogue.key}"
        if kind == "warp_rows":
            b_cols = "\n".join(f"      sum[{j}] += av * "
                               + _at("B", trans_b, k, n, "kk", str(j)) + ";" for j in range(n))
            body = (
                "  const long long row = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
                "  const int lane = threadIdx.x & 31;\n"
                f"  if (row >= {m}) return;\n"
                f"  {t} sum[{n}];\n"
                f"  for (int j = 0; j < {n}; ++j) sum[j] = 0;\n"
                f"  for (int kk = lane; kk < {k}; kk += 32) {{\n"
                f"    const {t} av = {a};\n"
                f"{b_cols}\n"
                "  }\n"
                f"  for (int col = 0; col < {n}; ++col) {{\n"
                f"    {t} acc = sum[col];\n"
                "    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);\n"
                f"    if (lane == col) {{ const long long i = row * {n} + col; {epilogue.store} }}\n"
                "  }\n")
            self.grid, self.block = (-(-m * 32 // 128),), (128,)
        else:
            body = (
                "  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                f"  if (i >= {m * n}LL) return;\n"
                f"  const long long row = i / {n}, col = i % {n};\n"
                f"  {t} acc = 0;\n"
                f"  for (int kk = 0; kk < {k}; ++kk) acc += {a} * {b};\n"
                f"  {epilogue.store}\n")
            self.grid, self.block = (-(-m * n // 128),), (128,)
        extra = "".join(f", {d} {p}" for d, p in epilogue.params)
        self.source = (f'extern "C" __global__ void {name}('
                       f"const {t}* __restrict__ A, const {t}* __restrict__ B, {t}* C{extra}) "
                       f"{{\n{body}}}\n")
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

    def __call__(self, out, a, b, *extra):
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
        self._kernel(self.grid, self.block, (a, b, out) + extra)
        return out

"""Generated row kernels: elementwise chains mixed with reductions over the last axis.

Softmax, log-softmax, logsumexp, cross-entropy and layer norm are, in a jaxpr, elementwise
equations over a (rows, C) space, reductions over C, and broadcasts of per-row values back.
Such a group becomes one kernel with one thread block per row: the row is read once into
registers, reductions are block reductions, and only the values used later are written.
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.jaxpr import Literal, Var
from ..core.passes import row_kind
from .elementwise import C_TYPES, _literal, emit

SHARED_LIMIT = 192 * 1024   # bytes of a row kept on chip (H100: 227 KiB per block)
REDUCTIONS = {lax.reduce_sum_p: ("SumOp", "0"), lax.reduce_max_p: ("MaxOp", "(-1.0 / 0.0)"),
              lax.reduce_min_p: ("MinOp", "(1.0 / 0.0)")}

_PRELUDE = r"""
#include <cuda_fp16.h>
struct SumOp { __device__ float operator()(float a, float b) const { return a + b; }
               __device__ double operator()(double a, double b) const { return a + b; } };
struct MaxOp { template <class T> __device__ T operator()(T a, T b) const {
                 return (isnan(a) || a > b) ? a : b; } };
struct MinOp { template <class T> __device__ T operator()(T a, T b) const {
                 return (isnan(a) || a < b) ? a : b; } };
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T* shm) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  T r = shm[0];
  for (int w = 1; w < nw; ++w) r = op(r, shm[w]);
  return r;
}
"""


def _aligned(nbytes: int) -> int:
    return -(-nbytes // 16) * 16


class RowKernel:
    """One block per row over ``shape = (..., C)``; ``inputs``/``outputs`` as in FusedKernel.

    Row-shaped values are not kept in registers: each reduction (and the final write) loops over
    the row and recomputes the elementwise chain from the inputs, whose second and later reads
    hit L2. That keeps register use flat for any row length."""

    def __init__(self, eqns, inputs, outputs, shape):
        self.eqns, self.inputs, self.outputs = eqns, inputs, outputs
        self.shape = tuple(shape)
        self.cols = shape[-1]
        self.rows = int(np.prod(shape[:-1], dtype=np.int64))
        self.block = min(512, max(32, -(-self.cols // 32) * 32))
        row_inputs = [v for v in inputs if row_kind(v.aval.shape, shape) == "row"]
        need = sum(_aligned(self.cols * v.aval.dtype.itemsize) for v in row_inputs)
        # rows that fit are staged in shared memory, so HBM is read once however many passes
        self.shared_bytes = need if 0 < need <= SHARED_LIMIT else 0
        self.source, self.name = self._generate()
        self._kernel = None

    def _generate(self):
        shape = self.shape
        kinds, names, lines, row_stmts = {}, {}, [], []
        params = [f"const {C_TYPES[v.aval.dtype.name]}* __restrict__ in{k}"
                  for k, v in enumerate(self.inputs)]
        params += [f"{C_TYPES[v.aval.dtype.name]}* __restrict__ out{k}"
                   for k, v in enumerate(self.outputs)]
        ct = {v: C_TYPES[v.aval.dtype.name] for e in self.eqns for v in e.outvars}

        def loop(tail):
            body = " ".join(row_stmts + [tail])
            lines.append(f"  for (long long c = threadIdx.x; c < {self.cols}LL; c += {self.block})"
                         f" {{ {body} }}")

        offset, staged = 0, []
        for k, v in enumerate(self.inputs):
            kind = kinds[v] = row_kind(v.aval.shape, shape)
            t = C_TYPES[v.aval.dtype.name]
            names[v] = f"x{k}"
            if kind == "row" and self.shared_bytes:
                lines.append(f"  {t}* s{k} = reinterpret_cast<{t}*>(smem + {offset});")
                staged.append(f"s{k}[c] = in{k}[row * {self.cols}LL + c];")
                row_stmts.append(f"const {t} x{k} = s{k}[c];")
                offset += _aligned(self.cols * v.aval.dtype.itemsize)
            elif kind == "row":
                row_stmts.append(f"const {t} x{k} = in{k}[row * {self.cols}LL + c];")
            else:
                lines.append(f"  const {t} x{k} = in{k}[{'row' if kind == 'per_row' else 0}];")

        if staged:
            lines.append(f"  for (long long c = threadIdx.x; c < {self.cols}LL; c += {self.block})"
                         f" {{ {' '.join(staged)} }}")
            lines.append("  __syncthreads();")

        def ref(v):
            return _literal(v) if isinstance(v, Literal) else names[v]

        for n, e in enumerate(self.eqns):
            out, p = e.outvars[0], e.primitive
            kind = row_kind(out.aval.shape, shape)
            t, name = ct[out], f"t{n}"
            if p in REDUCTIONS:
                op, ident = REDUCTIONS[p]
                lines.append(f"  {t} {name}_p = {ident};")
                loop(f"{name}_p = {op}()({name}_p, {ref(e.invars[0])});")
                lines.append(f"  const {t} {name} = block_reduce<{t}>({name}_p, {op}(), "
                             f"reinterpret_cast<{t}*>(shm));")
                names[out], kinds[out] = name, "per_row"
                continue
            if p in (lax.reshape_p, lax.broadcast_in_dim_p):
                # a per-row (or scalar) value seen in another shape: the same register
                names[out] = ref(e.invars[0])
                kinds[out] = kind if kind != "row" else "per_row"
                continue
            row_valued = any(isinstance(v, Var) and kinds.get(v) == "row" for v in e.invars)
            args = [ref(v) for v in e.invars]
            dt = e.invars[-1].aval.dtype if e.invars else out.aval.dtype
            if p is lax.iota_p:
                d = e.params["dimension"]
                if d == len(shape) - 1:
                    expr, row_valued = f"(({t})c)", True
                else:
                    stride = int(np.prod(shape[d + 1:-1], dtype=np.int64))
                    expr = f"(({t})((row / {stride}LL) % {shape[d]}LL))"
            else:
                expr = emit(p, args, dt, t, e.params)
            stmt = f"const {t} {name} = {expr};"
            if row_valued:
                row_stmts.append(stmt)
                kinds[out] = "row"
            else:
                lines.append("  " + stmt)
                kinds[out] = "per_row"
            names[out] = name
        writes = []
        for k, v in enumerate(self.outputs):
            kind = row_kind(v.aval.shape, shape)
            if kind == "row":
                writes.append(f"out{k}[row * {self.cols}LL + c] = {names[v]};")
            elif kind == "per_row":
                lines.append(f"  if (threadIdx.x == 0) out{k}[row] = {names[v]};")
            else:
                lines.append(f"  if (threadIdx.x == 0 && row == 0) out{k}[0] = {names[v]};")
        if writes:
            loop(" ".join(writes))
        name = "fnx_rows_" + "_".join(e.primitive.name for e in self.eqns if
                                      e.primitive in REDUCTIONS)[:60]
        body = "\n".join(lines)
        src = (_PRELUDE + f'extern "C" __global__ void __launch_bounds__({self.block}) '
               f'{name}({", ".join(params)}) {{\n'
               "  __shared__ double shm[32];\n"
               "  extern __shared__ __align__(16) unsigned char smem[];\n"
               "  const long long row = blockIdx.x;\n"
               f"{body}\n}}\n")
        return src, name

    def kernel(self):
        if self._kernel is None:
            from .elementwise import _compile
            self._kernel = _compile(self.source, self.name)
            if self.shared_bytes > 48 * 1024:
                self._kernel.max_dynamic_shared_size_bytes = self.shared_bytes
        return self._kernel

    def extra_args(self):
        return ()

    def launch_config(self, sm_count: int):
        return (max(1, self.rows),), (self.block,)

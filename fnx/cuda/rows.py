"""Generated row kernels: elementwise chains mixed with reductions over the last axis.

Softmax, log-softmax, logsumexp, cross-entropy and layer norm are, in a jaxpr, elementwise
equations over a (rows, C) space, reductions over C, and broadcasts of per-row values back.
Such a group becomes one kernel that reads each row once and writes only the values used later.

A row is split over a thread-block cluster of up to 8 blocks (Hopper), each holding its share in
registers, loaded with 16-byte accesses: blocks stay small, several fit on a multiprocessor, and
one block's loads overlap another's arithmetic. Per-row reductions combine the blocks' partial
values through distributed shared memory. A row too long for the registers of a cluster is
looped over instead (staged in shared memory where it fits).

A narrow product right before the group (a classifier's logits before its softmax, see
``joins_rows``) is computed by the kernel itself, each block making its row of it first.

A reduction of the per-row results to one value (the mean loss over a batch) stays in the same
launch: each row leaves its value in a scratch buffer, and the last row to finish, found with an
atomic counter, combines them in row order and resets the counter for the next launch (so a
replayed CUDA graph finds it at zero).
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.jaxpr import Literal, Var
from .fusion import column_broadcast, row_kind, row_total
from .compile import compute_capability
from .elementwise import C_TYPES, _compile, _literal, emit

MAX_CLUSTER = 8             # blocks a row may be split over (8: the portable cluster size)
REGISTER_WORDS = 64         # 32-bit registers per thread that hold a row's input elements
MOST_PER_THREAD = 32        # row elements per thread (H100, (4096, 32768) softmax and
                            # cross-entropy: 32 a thread ran at 0.83-0.87x of a copy, 16 at 0.91-1.02x)
SHARED_LIMIT = 192 * 1024   # bytes of a looped-over row kept on chip (H100: 227 KiB per block)
# a narrow product the row kernel computes itself (a classifier's logits): its columns, and its
# flops (every row re-reads the right operand, so only small ones)
ROW_PRODUCT_COLUMNS = 16
ROW_PRODUCT_FLOPS = 1 << 22
REDUCTIONS = {lax.reduce_sum_p: ("SumOp", "0"), lax.reduce_max_p: ("MaxOp", "(-1.0 / 0.0)"),
              lax.reduce_min_p: ("MinOp", "(1.0 / 0.0)")}
# argmin/argmax: a (value, column) pair reduced with NumPy's order (the first NaN, else the
# first extreme value)
ARG_REDUCTIONS = {lax.argmin_p: ("ArgMinOp", "(1.0 / 0.0)"),
                  lax.argmax_p: ("ArgMaxOp", "(-1.0 / 0.0)")}
# the step combining a thread's own elements, which come in column order
_ARG_NEXT = {lax.argmin_p: "ArgMinNext", lax.argmax_p: "ArgMaxNext"}
_ARG_OF = {lax.reduce_min_p: lax.argmin_p, lax.reduce_max_p: lax.argmax_p}
WARP_ROWS = 4               # warps per block when a warp (or part of one) holds a row

_PRELUDE = r"""
#include <cuda_fp16.h>
struct SumOp { __device__ float operator()(float a, float b) const { return a + b; }
               __device__ double operator()(double a, double b) const { return a + b; } };
struct MaxOp { template <class T> __device__ T operator()(T a, T b) const {
                 return (isnan(a) || a > b) ? a : b; } };
struct MinOp { template <class T> __device__ T operator()(T a, T b) const {
                 return (isnan(a) || a < b) ? a : b; } };
template <class T> struct Arg { T v; int i; };
template <class T> __device__ __forceinline__ bool first_nan(const Arg<T>& b, const Arg<T>& a) {
  return isnan(b.v) && (!isnan(a.v) || b.i < a.i);
}
struct ArgMinOp { template <class T> __device__ Arg<T> operator()(Arg<T> a, Arg<T> b) const {
  return (b.v < a.v || (b.v == a.v && b.i < a.i) || first_nan(b, a)) ? b : a; } };
struct ArgMaxOp { template <class T> __device__ Arg<T> operator()(Arg<T> a, Arg<T> b) const {
  return (b.v > a.v || (b.v == a.v && b.i < a.i) || first_nan(b, a)) ? b : a; } };
// a thread's own elements come in column order: b is later than a, so a tie keeps a
struct ArgMinNext { template <class T> __device__ Arg<T> operator()(Arg<T> a, Arg<T> b) const {
  return (b.v < a.v || (isnan(b.v) && !isnan(a.v)) || a.i == 0x7fffffff) ? b : a; } };
struct ArgMaxNext { template <class T> __device__ Arg<T> operator()(Arg<T> a, Arg<T> b) const {
  return (b.v > a.v || (isnan(b.v) && !isnan(a.v)) || a.i == 0x7fffffff) ? b : a; } };
template <class T> __device__ __forceinline__ T shfl_xor(T v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
template <class T> __device__ __forceinline__ Arg<T> shfl_xor(Arg<T> a, int o) {
  a.v = __shfl_xor_sync(0xffffffffu, a.v, o);
  a.i = __shfl_xor_sync(0xffffffffu, a.i, o);
  return a;
}
template <class T, int W> struct alignas(sizeof(T) * W) Vec { T v[W]; };
template <int B> struct Raw;
template <> struct Raw<16> { typedef uint4 type; };
template <> struct Raw<8> { typedef uint2 type; };
template <> struct Raw<4> { typedef unsigned int type; };
template <> struct Raw<2> { typedef unsigned short type; };
template <> struct Raw<1> { typedef unsigned char type; };
// through an intrinsic: a plain store of a Vec is sometimes split into single stores
template <class T, int W> __device__ __forceinline__ void store_vec(T* p, const Vec<T, W>& v) {
  typedef typename Raw<sizeof(T) * W>::type R;
  __stwb(reinterpret_cast<R*>(p), *reinterpret_cast<const R*>(&v));
}
// over the G lanes (a power of two, at most 32) that hold one row
template <int G, class T, class Op>
__device__ __forceinline__ T lanes_reduce(T v, Op op) {
  for (int o = G / 2; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  return v;
}
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T* shm) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  T r = shm[0];
  for (int w = 1; w < nw; ++w) r = op(r, shm[w]);
  return r;
}
"""

# every block of the cluster reads every block's value in the same order, so all of them hold the
# same (bit-identical) row value; each reduction has its own slot, so no slot is overwritten while
# a peer may still read it, and the arrive/wait pair at the end keeps each block's shared memory
# alive until its peers are done reading it. Written in PTX: including <cooperative_groups.h>
# for the same three operations cost NVRTC over a second per program (H100 host).
_CLUSTER = r"""
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.aligned;\n" : : : "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;\n" : : : "memory");
}
// the value at ``slot`` in the shared memory of the cluster's block ``rank``
template <class T> __device__ __forceinline__ T peer_value(const T* slot, unsigned rank) {
  static_assert(sizeof(T) == 16 || sizeof(T) == 8 || sizeof(T) == 4 || sizeof(T) == 1,
                "a row value's type");
  unsigned local, remote;
  asm volatile("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }"
               : "=r"(local) : "l"(slot));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  T out;
  if (sizeof(T) == 16) {
    unsigned long long w[2];
    asm volatile("ld.shared::cluster.v2.b64 {%0, %1}, [%2];"
                 : "=l"(w[0]), "=l"(w[1]) : "r"(remote) : "memory");
    memcpy(&out, w, sizeof(T));
  } else if (sizeof(T) == 8) {
    unsigned long long w;
    asm volatile("ld.shared::cluster.b64 %0, [%1];" : "=l"(w) : "r"(remote) : "memory");
    memcpy(&out, &w, sizeof(T));
  } else if (sizeof(T) == 4) {
    unsigned w;
    asm volatile("ld.shared::cluster.b32 %0, [%1];" : "=r"(w) : "r"(remote) : "memory");
    memcpy(&out, &w, sizeof(T));
  } else {
    unsigned w;
    asm volatile("ld.shared::cluster.u8 %0, [%1];" : "=r"(w) : "r"(remote) : "memory");
    const unsigned char b = (unsigned char)w;
    memcpy(&out, &b, 1);
  }
  return out;
}
template <int K, class T, class Op>
__device__ T cluster_reduce(T v, Op op, T* slot) {
  if (threadIdx.x == 0) *slot = v;
  cluster_arrive();
  cluster_wait();
  T r = peer_value(slot, 0);
  for (int q = 1; q < K; ++q) r = op(r, peer_value(slot, q));
  return r;
}
"""


def _aligned(nbytes: int) -> int:
    return -(-nbytes // 16) * 16


def _round32(n: int) -> int:
    return max(32, -(-n // 32) * 32)


def max_cluster() -> int:
    """Blocks one row may be split over: clusters need compute capability 9.0."""
    return MAX_CLUSTER if compute_capability() >= 90 else 1


def register_plan(cols, input_sizes, value_sizes, clusters):
    """``(cluster, block, width, vectors)`` holding a row of ``cols`` elements in registers:
    ``cluster`` blocks of ``block`` threads, each thread ``vectors`` accesses of ``width``
    elements per row input; None when the row does not fit. ``input_sizes``: the row inputs'
    item sizes; ``value_sizes``: those of every row-shaped value read or written."""
    widest = max(value_sizes, default=4)
    width = 16 // widest if cols % (16 // widest) == 0 else 1
    words = max(1, sum(input_sizes) // 4)
    most = max(width, min(MOST_PER_THREAD, REGISTER_WORDS // words) // width * width)
    for per_thread in sorted({min(16, most), most}, reverse=True):
        for cap in (256, 512, 1024):
            cluster = -(-cols // (cap * per_thread))
            if cluster <= clusters:
                block = _round32(-(-cols // (cluster * per_thread)))
                return cluster, block, width, -(-cols // (cluster * block * width))
    return None


def joins_rows(eqn, space) -> bool:
    """Whether product ``eqn`` (a ``dot_general`` or a dense layer) makes the row space
    ``(rows, C)`` of the row group after it with few columns and little work: the group's
    kernel then computes each row of it first (a classifier's logits, right before its
    softmax), instead of a GEMM launch ahead of it."""
    from .epilogue import dense_p, product_layout
    if eqn.primitive is lax.dot_general_p:
        (lc, _), (lb, rb) = eqn.params["dimension_numbers"]
        if lb or rb or len(lc) != 1:
            return False
    elif eqn.primitive is not dense_p:
        return False
    x, w = eqn.invars[:2]
    out = eqn.outvars[0].aval
    if not all(isinstance(v, Var) for v in eqn.invars) or len(space) != 2 \
            or tuple(out.shape) != tuple(space) or x.aval.ndim != 2 or w.aval.ndim != 2 \
            or not x.aval.dtype == w.aval.dtype == out.dtype \
            or out.dtype.name not in ("float32", "float64"):
        return False
    (m, c), k = space, product_layout(eqn)[4]
    return c <= ROW_PRODUCT_COLUMNS and 2 * m * c * k <= ROW_PRODUCT_FLOPS


class RowKernel:
    """``shape = (..., C)``; ``inputs``/``outputs`` as in FusedKernel. ``eqns`` may end with
    reductions of per-row values to single values and scalar arithmetic on those
    (fnx.cuda.fusion.row_total)."""

    def __init__(self, eqns, inputs, outputs, shape):
        self.eqns, self.inputs, self.outputs = eqns, inputs, outputs
        self.shape = tuple(shape)
        self.cols = shape[-1]
        self.rows = int(np.prod(shape[:-1], dtype=np.int64))
        # a product leading the group (joins_rows): each row of it is made in the kernel
        self.product = eqns[0] if eqns and joins_rows(eqns[0], shape) else None
        # inputs broadcast along the columns (fnx.cuda.fusion.column_broadcast)
        self.columns = {e.invars[0] for e in eqns if column_broadcast(e, shape)}
        row_inputs = [v for v in inputs if self.kind_of(v) in ("row", "col")]
        if self.product is not None:
            row_inputs.append(self.product.outvars[0])
        row_values = row_inputs + [v for v in outputs if row_kind(v.aval.shape, shape) == "row"]
        plan = register_plan(self.cols, [v.aval.dtype.itemsize for v in row_inputs],
                             [v.aval.dtype.itemsize for v in row_values], max_cluster())
        assert self.product is None or (plan is not None and plan[0] == 1), plan
        self.in_registers = plan is not None
        if plan is None:
            self.cluster = min(max_cluster(), -(-self.cols // (1024 * 16)))
            self.block, self.width, self.vectors = 1024, 1, 0
            self.chunk = -(-self.cols // self.cluster)
            need = sum(_aligned(self.chunk * v.aval.dtype.itemsize) for v in row_inputs)
            # a share of the row that fits is staged in shared memory, so HBM is read once
            self.shared_bytes = need if 0 < need <= SHARED_LIMIT else 0
        else:
            self.cluster, self.block, self.width, self.vectors = plan
            self.chunk = self.block * self.width * self.vectors
            self.shared_bytes = 0
        # a row that one warp holds: each block takes several rows, a warp each, and loops over
        # them (reductions are warp shuffles alone, and a total counts blocks, not rows)
        self.warp_rows = (self.in_registers and self.cluster == 1 and self.block == 32
                          and self.product is None)
        if self.warp_rows:
            self.block = self._lanes_per_row()
            self.chunk = self.block * self.width * self.vectors
        self.threads = 32 * WARP_ROWS if self.warp_rows else self.block
        self.totals = [e for e in eqns if row_total(e, shape)]
        self.source, self.name = self._generate()
        self._kernel = None
        self._scratch = None

    def _lanes_per_row(self) -> int:
        """Lanes of a warp that hold one row: a narrow row (a classifier's 10 or 16 logits)
        takes the fewest that cover it, so a warp holds several rows and its shuffles are
        fewer; where the rows do not split evenly among a warp's groups (their loop would then
        diverge around the shuffles) a row keeps the whole warp."""
        per_lane = self.width * self.vectors
        lanes = 1 << max(0, (-(-self.cols // per_lane) - 1).bit_length())
        return lanes if lanes < 32 and self.rows % (32 // lanes) == 0 else 32

    def kind_of(self, v) -> str | None:
        """An input's kind: 'col' for one value per column, else fnx.cuda.fusion.row_kind's."""
        return "col" if v in self.columns else row_kind(v.aval.shape, self.shape)

    def _offset(self, k) -> str:
        """Where row input ``k``'s current row starts (a column input has one row)."""
        return f"row * {self.cols}LL + " if self.kind_of(self.inputs[k]) == "row" else ""

    # -- code generation

    def _generate(self):
        shape, K, T, W = self.shape, self.cluster, self.block, self.width
        C, V = self.cols, self.width * self.vectors
        kinds, names, lines, row_stmts, tail = {}, {}, [], [], []
        params = [f"const {C_TYPES[v.aval.dtype.name]}* __restrict__ in{k}"
                  for k, v in enumerate(self.inputs)]
        params += [f"{C_TYPES[v.aval.dtype.name]}* __restrict__ out{k}"
                   for k, v in enumerate(self.outputs)]
        params += [f"{C_TYPES[e.outvars[0].aval.dtype.name]}* __restrict__ part{n}"
                   for n, e in enumerate(self.totals)]
        if self.totals:
            params.append("unsigned int* __restrict__ counter")
        ct = {v: C_TYPES[v.aval.dtype.name] for e in self.eqns for v in e.outvars}
        row_inputs = [(k, v) for k, v in enumerate(self.inputs)
                      if self.kind_of(v) in ("row", "col")]
        full = K * self.chunk == C
        warp = self.warp_rows
        lead = "lane == 0" if warp else "threadIdx.x == 0"

        def reduced(t, value, op):
            if warp:
                return f"lanes_reduce<{T}>({value}, {op}())"
            return f"block_reduce<{t}>({value}, {op}(), reinterpret_cast<{t}*>(shm))"    # every thread's elements lie inside the row: no bounds checks

        def element_loop(body):
            """Statements running ``body`` on each of this thread's elements of the row, with
            ``c`` its column and ``x<k>`` the row inputs' values there."""
            stmts = " ".join([reads[k] for k, _ in row_inputs] + row_stmts + body)
            if self.in_registers:
                guard = "{" if full else f"if (c < {C}LL) {{"
                return (f"  #pragma unroll\n  for (int e = 0; e < {V}; ++e) {{ const long long c ="
                        f" col0 + (e / {W}) * {T * W}LL + (e % {W}); {guard} {stmts} }} }}")
            return (f"  for (long long c = c_begin + threadIdx.x; c < c_end; c += {T}) "
                    f"{{ {stmts} }}")

        head, reads = [], {}
        if self.in_registers:
            head.append(f"  const long long col0 = rank * {self.chunk}LL + tid * {W}LL;")
            head += self._register_loads(row_inputs, full)
            for k, v in row_inputs:
                reads[k] = f"const {C_TYPES[v.aval.dtype.name]} x{k} = r{k}[e];"
        else:
            head.append(f"  const long long c_begin = rank * {self.chunk}LL;")
            head.append(f"  const long long c_end = min({C}LL, c_begin + {self.chunk}LL);")
            offset, staged = 0, []
            for k, v in row_inputs:
                t = C_TYPES[v.aval.dtype.name]
                if self.shared_bytes:
                    head.append(f"  {t}* s{k} = reinterpret_cast<{t}*>(smem + {offset});")
                    staged.append(f"s{k}[c - c_begin] = in{k}[{self._offset(k)}c];")
                    reads[k] = f"const {t} x{k} = s{k}[c - c_begin];"
                    offset += _aligned(self.chunk * v.aval.dtype.itemsize)
                else:
                    reads[k] = f"const {t} x{k} = in{k}[{self._offset(k)}c];"
            if staged:
                head.append(f"  for (long long c = c_begin + threadIdx.x; c < c_end; c += {T})"
                            f" {{ {' '.join(staged)} }}")
                head.append("  __syncthreads();")
        eqns = self.eqns
        if self.product is not None:
            head += self._product_rows()
            z = self.product.outvars[0]
            names[z], kinds[z] = "pz", "row"
            row_stmts.append(f"const {C_TYPES[z.aval.dtype.name]} pz = prod_row[c];")
            eqns = eqns[1:]
        read_by_group = {v for e in eqns for v in e.invars}
        for k, v in enumerate(self.inputs):
            names[v] = f"x{k}"
            kind = kinds[v] = self.kind_of(v)
            if v not in read_by_group:      # the product's operands only
                continue
            if kind not in ("row", "col"):
                t = C_TYPES[v.aval.dtype.name]
                head.append(f"  const {t} x{k} = in{k}[{'row' if kind == 'per_row' else 0}];")

        def ref(v):
            return _literal(v) if isinstance(v, Literal) else names[v]

        before, after = [], []  # a block's statements before and after its rows (warp_rows)
        in_tail = set()        # values computed only by the last block, after every row is done
        # (operand, argmin/argmax) -> the reduced (value, column) pair's name: the min/max of
        # the same operand is that pair's value (NaN included), not a second reduction
        arg_pairs: dict = {}
        totals = {id(e): n for n, e in enumerate(self.totals)}
        for n, e in enumerate(eqns):
            out, p = e.outvars[0], e.primitive
            kind = row_kind(out.aval.shape, shape)
            t, name = ct[out], f"t{n}"
            if id(e) in totals:
                op, ident = REDUCTIONS[p]
                part = f"part{totals[id(e)]}"
                if warp:    # each block combines its own rows first, in a fixed order
                    before.append(f"  {t} {name}_acc = {ident};")
                    lines.append(f"  {name}_acc = {op}()({name}_acc, {ref(e.invars[0])});")
                    after.append(f"  {{ const {t} v = block_reduce<{t}>(lane == 0 ? {name}_acc"
                                 f" : ({t}){ident}, {op}(), reinterpret_cast<{t}*>(shm));")
                    after.append(f"    if (threadIdx.x == 0) {part}[blockIdx.x] = v; }}")
                    parts = "(long long)gridDim.x"
                else:
                    lines.append(f"  if ({lead} && rank == 0) {part}[row] = "
                                 f"{ref(e.invars[0])};")
                    parts = f"{self.rows}LL"
                tail.append(f"  {t} {name}_p = {ident};")
                # in order, through L2 (another multiprocessor wrote them)
                tail.append(f"  for (long long r = threadIdx.x; r < {parts}; "
                            f"r += {self.threads}) "
                            f"{name}_p = {op}()({name}_p, __ldcg({part} + r));")
                tail.append(f"  const {t} {name} = block_reduce<{t}>({name}_p, {op}(), "
                            f"reinterpret_cast<{t}*>(shm));")
                names[out], kinds[out] = name, "scalar"
                in_tail.add(out)
                continue
            pair = arg_pairs.get((e.invars[0], _ARG_OF[p])) if p in _ARG_OF else None
            if pair is not None:
                lines.append(f"  const {t} {name} = ({t}){pair}.v;")
                names[out], kinds[out] = name, "per_row"
                continue
            if p in REDUCTIONS or p in ARG_REDUCTIONS:
                x = ref(e.invars[0])
                if p in REDUCTIONS:         # (acc type, its identity, an element, the result)
                    op, ident = REDUCTIONS[p]
                    a, start, item, result = t, ident, x, "{}"
                else:                        # a (value, column) pair
                    op, ident = ARG_REDUCTIONS[p]
                    a = f"Arg<{C_TYPES[e.invars[0].aval.dtype.name]}>"
                    start, item = f"{{{ident}, 0x7fffffff}}", f"{a}{{{x}, (int)c}}"
                    result = f"({t}){name}_r.i"
                    arg_pairs[(e.invars[0], p)] = f"{name}_r"
                lines.append(f"  {a} {name}_p = {start};")
                step = _ARG_NEXT.get(p, op)
                lines.append(element_loop([f"{name}_p = {step}()({name}_p, {item});"]))
                value = reduced(a, f"{name}_p", op)
                if K > 1:
                    lines.append(f"  __shared__ {a} {name}_slot;")
                    value = f"cluster_reduce<{K}>({value}, {op}(), &{name}_slot)"
                if p in ARG_REDUCTIONS:
                    lines.append(f"  const {a} {name}_r = {value};")
                lines.append(f"  const {t} {name} = {result.format(value)};")
                names[out], kinds[out] = name, "per_row"
                continue
            after_total = bool(in_tail)
            if column_broadcast(e, shape):      # loaded along the row as it is
                names[out], kinds[out] = ref(e.invars[0]), "row"
                continue
            if p in (lax.reshape_p, lax.broadcast_in_dim_p):
                # a per-row (or scalar) value seen in another shape: the same register
                names[out] = ref(e.invars[0])
                kinds[out] = kind if kind != "row" else "per_row"
                if after_total:
                    in_tail.add(out)
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
            elif after_total:
                tail.append("  " + stmt)
                kinds[out] = "scalar"
                in_tail.add(out)
            else:
                lines.append("  " + stmt)
                kinds[out] = "per_row"
            names[out] = name
        row_writes = []
        for k, v in enumerate(self.outputs):
            kind = row_kind(v.aval.shape, shape)
            if v in in_tail:
                tail.append(f"  if (threadIdx.x == 0) out{k}[0] = {names[v]};")
            elif kind == "row":
                row_writes.append((k, v))
            elif kind == "per_row":
                lines.append(f"  if ({lead} && rank == 0) out{k}[row] = {names[v]};")
            else:
                lines.append(f"  if ({lead} && rank == 0 && row == 0) "
                             f"out{k}[0] = {names[v]};")
        if K > 1:
            lines.append("  cluster_arrive();   // this block reads no peer's shared memory again")
        if row_writes:
            if self.in_registers and W > 1:
                lines += self._vector_writes(row_writes, names, reads, row_inputs, row_stmts, full)
            loop = element_loop([f"out{k}[row * {C}LL + c] = {names[v]};"
                                 for k, v in row_writes])
            lines.append(f"  else {{\n{loop}\n  }}" if self.in_registers and W > 1 else loop)
        finish = self._last_block(tail) if self.totals else []
        if K > 1:
            finish.append("  cluster_wait();")
        name = "fnx_rows_" + "_".join(e.primitive.name for e in self.eqns if e.primitive
                                      in REDUCTIONS or e.primitive in ARG_REDUCTIONS)[:60]
        if warp:        # this warp's rows, in turn
            R = self.threads // T      # rows a block holds at once
            rows = ["  const int rank = 0;",
                    f"  const int lane = threadIdx.x & {T - 1}, tid = lane;",
                    *before,
                    f"  for (long long row = blockIdx.x * {R}LL + threadIdx.x / {T}; "
                    f"row < {self.rows}LL; row += (long long)gridDim.x * {R}) {{",
                    *head, *lines, "  }", *after]
        else:
            rows = [f"  const long long row = blockIdx.x / {K};",
                    f"  const int rank = blockIdx.x % {K};", "  const int tid = threadIdx.x;",
                    *head, *lines]
        body = "\n".join(rows + finish)
        cluster = f"__cluster_dims__({K}, 1, 1) " if K > 1 else ""
        src = (_PRELUDE + (_CLUSTER if K > 1 else "")
               + f'extern "C" __global__ void {cluster}__launch_bounds__({self.threads}) '
               f'{name}({", ".join(params)}) {{\n'
               "  __shared__ double shm[64];\n"      # 32 warps' values of up to 16 bytes
               "  extern __shared__ __align__(16) unsigned char smem[];\n"
               f"{body}\n}}\n")
        return src, name

    def _product_rows(self):
        """Statements putting this row of the leading product (its activation applied, for a
        dense layer) into ``prod_row``: each thread sums every T-th term for all C columns,
        and thread c adds up column c's partial sums."""
        from .epilogue import activation_c, dense_p, product_layout
        e, C, T = self.product, self.cols, self.block
        ta, tb, _, _, K = product_layout(e)
        t = C_TYPES[e.outvars[0].aval.dtype.name]
        x, w = (f"in{self.inputs.index(v)}" for v in e.invars[:2])
        a = f"{x}[k * {self.rows}LL + row]" if ta else f"{x}[row * {K}LL + k]"
        b = f"{w}[c * {K}LL + k]" if tb else f"{w}[k * {C}LL + c]"
        finish = []
        if e.primitive is dense_p:
            finish = [f"    v += in{self.inputs.index(e.invars[2])}[threadIdx.x];",
                      f"    v = {activation_c(e.params['act'])};"]
        return [f"  __shared__ {t} prod_part[{C * (T + 1)}];",     # padded: no bank conflicts
                f"  __shared__ {t} prod_row[{C}];",
                f"  {{ {t} acc[{C}];",
                f"    #pragma unroll\n    for (int c = 0; c < {C}; ++c) acc[c] = ({t})0;",
                # a few terms' loads in flight at once: the loop is bound by L2 latency
                f"    #pragma unroll 4\n"
                f"    for (long long k = threadIdx.x; k < {K}LL; k += {T}) {{",
                f"      const {t} a = {a};",
                f"      #pragma unroll\n      for (int c = 0; c < {C}; ++c) acc[c] += a * {b};",
                "    }",
                f"    #pragma unroll\n    for (int c = 0; c < {C}; ++c) "
                f"prod_part[c * {T + 1} + threadIdx.x] = acc[c];",
                "  }",
                "  __syncthreads();",
                f"  if (threadIdx.x < {C}) {{",
                f"    {t} v = prod_part[threadIdx.x * {T + 1}];",
                f"    for (int j = 1; j < {T}; ++j) v += prod_part[threadIdx.x * {T + 1} + j];",
                *finish,
                "    prod_row[threadIdx.x] = v;",
                "  }",
                "  __syncthreads();"]

    def _alignment_test(self):
        """A C condition: every row buffer allows ``width``-element accesses."""
        shape, W = self.shape, self.width
        tests = [f"(reinterpret_cast<unsigned long long>({p}{k}) % {W * v.aval.dtype.itemsize}"
                 " == 0)" for p, vs in (("in", self.inputs), ("out", self.outputs))
                 for k, v in enumerate(vs) if row_kind(v.aval.shape, shape) == "row"
                 or (p == "in" and self.kind_of(v) == "col")]
        return " && ".join(tests) or "true"

    def _register_loads(self, row_inputs, full):
        """Each row input's elements of this thread into ``r<k>[V]``: ``width``-element vector
        loads where every buffer is aligned for them, else single loads."""
        C, T, W, J = self.cols, self.block, self.width, self.vectors
        V = W * J
        lines = [f"  {C_TYPES[v.aval.dtype.name]} r{k}[{V}];" for k, v in row_inputs]
        single = [f"r{k}[e] = c < {C}LL ? in{k}[{self._offset(k)}c] : "
                  f"({C_TYPES[v.aval.dtype.name]})0;" for k, v in row_inputs]
        single_loop = (f"#pragma unroll\n  for (int e = 0; e < {V}; ++e) {{ const long long c = "
                       f"col0 + (e / {W}) * {T * W}LL + (e % {W}); {' '.join(single)} }}")
        if W > 1:       # read by the vector writes too, also where no row input is loaded
            lines.append(f"  const bool vectors = {self._alignment_test()};")
        if not row_inputs:
            return lines
        if W == 1:
            return lines + ["  " + single_loop]
        vec = []
        for k, v in row_inputs:
            t = C_TYPES[v.aval.dtype.name]
            load = (f"const Vec<{t}, {W}> q{k} = *reinterpret_cast<const Vec<{t}, {W}>*>"
                    f"(in{k} + {self._offset(k)}cj);\n      #pragma unroll\n"
                    f"      for (int w = 0; w < {W}; ++w) r{k}[j * {W} + w] = q{k}.v[w];")
            if not full:
                load = (f"if (cj < {C}LL) {{ {load} }} else {{ for (int w = 0; w < {W}; ++w) "
                        f"r{k}[j * {W} + w] = ({t})0; }}")
            vec.append(load)
        lines.append(f"  if (vectors) {{\n    #pragma unroll\n    for (int j = 0; j < {J}; ++j) "
                     f"{{\n      const long long cj = col0 + j * {T * W}LL;\n      "
                     + "\n      ".join(vec) + "\n    }\n  } else {\n  " + single_loop + "\n  }")
        return lines

    def _vector_writes(self, row_writes, names, reads, row_inputs, row_stmts, full):
        """Row outputs stored ``width`` elements at a time (when aligned; the element loop that
        follows, after an ``else``, stores them one by one otherwise)."""
        C, T, W, J = self.cols, self.block, self.width, self.vectors
        decls = " ".join(f"Vec<{C_TYPES[v.aval.dtype.name]}, {W}> o{k};" for k, v in row_writes)
        fills = " ".join(f"o{k}.v[w] = {names[v]};" for k, v in row_writes)
        stores = " ".join(f"store_vec(out{k} + row * {C}LL + cj, o{k});" for k, _ in row_writes)
        element = " ".join([reads[k] for k, _ in row_inputs] + row_stmts)
        guard = "{" if full else f"if (cj < {C}LL) {{"
        return [f"  if (vectors) {{\n    #pragma unroll\n    for (int j = 0; j < {J}; ++j) {{\n"
                f"      const long long cj = col0 + j * {T * W}LL; {guard} {decls}\n"
                f"      #pragma unroll\n      for (int w = 0; w < {W}; ++w) {{ const int e = "
                f"j * {W} + w; const long long c = cj + w; {element} {fills} }}\n"
                f"      {stores} }}\n    }}\n  }}"]

    def _last_block(self, tail):
        """The last block to finish its rows combines the rows' values (``tail``) and resets
        the counter."""
        if self.warp_rows:      # every warp wrote rows' values: each publishes its own
            fence, blocks = ["  __threadfence();"], "gridDim.x - 1u"
        else:
            fence, blocks = [], f"{self.rows - 1}u"
        return ["  __shared__ bool last_block;",
                *fence,
                "  __syncthreads();",
                "  if (threadIdx.x == 0) {",
                "    bool last = false;",
                "    if (rank == 0) {   // its rows' values are written: publish them, then count",
                "      __threadfence();",
                f"      last = atomicAdd(counter, 1u) == {blocks};",
                "    }",
                "    last_block = last;",
                "  }",
                "  __syncthreads();",
                "  if (last_block) {",
                "    __threadfence();",
                *("  " + line for line in tail),
                "    if (threadIdx.x == 0) *counter = 0u;",
                "  }"]

    # -- launching

    def kernel(self):
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
            if self.shared_bytes > 48 * 1024:
                self._kernel.max_dynamic_shared_size_bytes = self.shared_bytes
        return self._kernel

    def extra_args(self):
        """The per-row scratch of each reduction over rows, and the counter the last block is
        found with (zeroed here once; every launch leaves it at zero)."""
        if not self.totals:
            return ()
        if self._scratch is None:
            import cupy as cp
            parts = [cp.empty(max(1, self.rows), e.outvars[0].aval.dtype) for e in self.totals]
            counter = cp.zeros(1, np.uint32)
            cp.cuda.get_current_stream().synchronize()
            self._scratch = (*parts, counter)
        return self._scratch

    def launch_config(self, sm_count: int):
        if self.warp_rows:      # enough blocks to fill every multiprocessor; they loop
            blocks = -(-max(1, self.rows) // (self.threads // self.block))
            return (min(blocks, sm_count * (2048 // self.threads)),), (self.threads,)
        return (max(1, self.rows) * self.cluster,), (self.block,)

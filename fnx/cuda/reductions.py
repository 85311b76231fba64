"""Generated reductions over any axes: sum, product, max, min, and, or, argmax and argmin.

The input is seen as (kept, reduced) index spaces over its dimensions (neighbouring dimensions of
the same kind merged), each output element the reduction of its ``R`` inputs. Threads run along
whichever space holds the innermost dimension, so a warp's loads are contiguous: along the
reduced one for a last-axes reduction, along the kept one for a sum over a middle or leading
axis. Each input element is read once.

When there are too few outputs to fill the GPU (a sum over every axis, an argmax of a few long
columns), the reduced space is split over several blocks per output. Each block leaves its
partial result in a scratch buffer, and the last block to finish, found with an atomic counter,
combines them in a fixed order (so results do not depend on timing) and resets the counter for
the next launch, which a replayed CUDA graph relies on.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core import dtypes, lax
from ..core.jaxpr import Var
from .fusion import GENERATED_REDUCTIONS, SMALL_TOTAL
from .elementwise import C_TYPES, FusedKernel, _compile, compute_type, headers, store_value

THREADS = 256
MAX_PARTIALS = 1 << 16       # split partial results the last block combines
ELEMENTS_PER_THREAD = 16     # the least work per thread worth splitting a reduction for
_ARG = {lax.argmax_p: ">", lax.argmin_p: "<"}
_OPS = {lax.reduce_sum_p: "sum", lax.reduce_prod_p: "prod", lax.reduce_max_p: "max",
        lax.reduce_min_p: "min", lax.reduce_and_p: "and", lax.reduce_or_p: "or"}
assert set(_OPS) | set(_ARG) == GENERATED_REDUCTIONS


@functools.lru_cache(maxsize=None)
def _sm_count() -> int:
    import cupy as cp
    return cp.cuda.Device().attributes["MultiProcessorCount"]


def reduces(eqn) -> bool:
    """Whether ``eqn`` is a reduction this module generates a kernel for."""
    if eqn.primitive not in GENERATED_REDUCTIONS:
        return False
    x, y = eqn.invars[0], eqn.outvars[0]
    return (isinstance(x, Var) and x.aval.dtype.name in C_TYPES
            and y.aval.dtype.name in C_TYPES and x.aval.size > 0 and y.aval.size > 0)


def split_over_blocks(group, sm_count: int) -> bool:
    """Whether a row group is better run here: one reduction of rows too few to fill a GPU of
    ``sm_count`` multiprocessors and long enough to split (a sum over a long vector), which the
    row kernel would give one cluster per row."""
    if len(group) != 1 or not reduces(group[0]):
        return False
    shape = group[0].invars[0].aval.shape
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return rows < sm_count and shape[-1] > SMALL_TOTAL


def _accumulator(dtype) -> np.dtype:
    """The dtype values of ``dtype`` are combined in: floats as they compute, narrow integers
    and booleans as 32-bit integers (a narrow sum wraps the same when cast back)."""
    kind = dtypes.kind(dtype)
    if kind == "f":
        return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)
    if kind == "b":
        return np.dtype(np.int32)
    if np.dtype(dtype).itemsize < 4:
        return np.dtype(np.uint32 if kind == "u" else np.int32)
    return np.dtype(dtype)


def _c_number(value, dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if np.isinf(value):
            return f"(({C_TYPES[dtype.name]})({'-' if value < 0 else ''}1.0 / 0.0))"
        return f"(({C_TYPES[dtype.name]}){float(value)!r})"
    if dtype.kind == "u":
        return f"(({C_TYPES[dtype.name]}){int(value)}ULL)"
    if int(value) == np.iinfo(np.int64).min:
        return "((long long)(-9223372036854775807LL - 1))"
    return f"(({C_TYPES[dtype.name]}){int(value)}LL)"


def _lowest(acc):
    return -np.inf if acc.kind == "f" else np.iinfo(acc).min


def _highest(acc):
    return np.inf if acc.kind == "f" else np.iinfo(acc).max


def merged_dims(shape, axes):
    """``[(size, stride, reduced)]``: the dimensions of a row-major ``shape``, those of size 1
    dropped and neighbours of the same kind merged."""
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    dims = []
    for d, (n, s) in enumerate(zip(shape, reversed(strides))):
        if n == 1:
            continue
        red = d in axes
        if dims and dims[-1][2] == red:
            dims[-1] = (dims[-1][0] * n, s, red)
        else:
            dims.append((n, s, red))
    return dims


def offset_expr(index: str, dims) -> str:
    """The C expression of the memory offset of element ``index`` of the row-major index space
    ``dims = [(size, stride)]``."""
    terms, inner = [], 1
    for k in reversed(range(len(dims))):
        n, s = dims[k]
        coord = index if inner == 1 else f"({index} / {inner}LL)"
        if k > 0:
            coord = f"({coord} % {n}LL)"
        terms.append(coord if s == 1 else f"{coord} * {s}LL")
        inner *= n
    return " + ".join(reversed(terms)) or "0"


class ReduceKernel:
    """A reduction equation, last in ``eqns``, as one launch; the elementwise chain before it
    (possibly empty) is computed at each element the reduction reads, so its operand is never
    written out (a per-example gradient's norm reads the example's two factors, not their
    outer product)."""

    def __init__(self, eqns, inputs, outputs, shape):
        *chain, self.eqn = eqns
        self.eqns, self.inputs = eqns, inputs
        self.operand = self.eqn.invars[0]
        chain_outputs = [v for v in outputs if v is not self.eqn.outvars[0]]
        self.outputs = chain_outputs + [self.eqn.outvars[0]]     # the kernel's argument order
        self.chain = FusedKernel(chain, inputs, chain_outputs, shape, also_read=[self.operand])
        self.shape = tuple(shape)
        self.shared_bytes = 0
        p = self.eqn.primitive
        axes = (self.eqn.params["axis"],) if p in _ARG else tuple(self.eqn.params["axes"])
        dims = merged_dims(self.shape, axes)
        self.kept = [(n, s) for n, s, red in dims if not red]
        self.reduced = [(n, s) for n, s, red in dims if red]
        self.n_out = int(np.prod([n for n, _ in self.kept], dtype=np.int64))
        self.n_red = int(np.prod([n for n, _ in self.reduced], dtype=np.int64))
        # threads along the reduced space when it holds the innermost dimension
        self.along_reduced = not self.kept or bool(dims and dims[-1][2])
        if self.along_reduced:
            self.lanes_r = 32 if self.n_red <= 2048 else THREADS
            self.lanes_o = THREADS // self.lanes_r
        else:
            self.lanes_o, self.lanes_r = 32, THREADS // 32
        blocks = -(-self.n_out // self.lanes_o)
        split = 1
        if blocks < 2 * _sm_count():
            split = min(-(-4 * _sm_count() // blocks),
                        -(-self.n_red // (self.lanes_r * ELEMENTS_PER_THREAD)),
                        MAX_PARTIALS // self.n_out, 65535)
        self.chunk = -(-self.n_red // max(1, split))
        self.split = -(-self.n_red // self.chunk)
        self.grid = (blocks, self.split)
        self.acc = _accumulator(self.operand.aval.dtype)
        self.source, self.name = self._generate()
        self._kernel = None
        self._scratch = None

    # -- code generation

    def _combine(self):
        """C helpers: ``combine`` (or, for argmax/argmin, ``better``) and the identity."""
        p, A, acc = self.eqn.primitive, C_TYPES[self.acc.name], self.acc
        floating = acc.kind == "f"
        if p in _ARG:
            cmp = _ARG[p]
            nan = " || (isnan(v) && (!isnan(bv) || i < bi))" if floating else ""
            ident = _c_number(_lowest(acc) if cmp == ">" else _highest(acc), acc)
            return (f"__device__ __forceinline__ bool better({A} v, long long i, {A} bv, "
                    f"long long bi) {{\n  return v {cmp} bv || (v == bv && i < bi){nan};\n}}\n",
                    ident)
        op = _OPS[p]
        if op in ("max", "min"):
            cmp = ">" if op == "max" else "<"
            expr = f"(isnan(a) || a {cmp} b) ? a : b" if floating else f"a {cmp} b ? a : b"
            ident = _c_number(_lowest(acc) if op == "max" else _highest(acc), acc)
        else:
            # and/or: logical for booleans, bitwise for integers (XLA's)
            logical = self.eqn.invars[0].aval.dtype == np.bool_
            expr = {"sum": "a + b", "prod": "a * b", "and": "a && b" if logical else "a & b",
                    "or": "a || b" if logical else "a | b"}[op]
            every_bit = np.iinfo(acc).max if acc.kind == "u" else -1
            ident = _c_number({"prod": 1, "and": 1 if logical else every_bit}.get(op, 0), acc)
        return (f"__device__ __forceinline__ {A} combine({A} a, {A} b) {{ return {expr}; }}\n",
                ident)

    def _generate(self):
        y = self.eqn.outvars[0]
        A = C_TYPES[self.acc.name]
        arg = self.eqn.primitive in _ARG
        helpers, ident = self._combine()
        LO, LR, O, R = self.lanes_o, self.lanes_r, self.n_out, self.n_red
        # element i of the operand: the chain's statements (loads alone, without one)
        body = self.chain.body()
        x = self.chain.names[self.operand]
        params = [f"{d} {n}" for d, n in self.chain.params()]
        params.append(f"{C_TYPES[y.aval.dtype.name]}* __restrict__ out")
        if self.split > 1:
            params.append(f"{A}* __restrict__ part_v")
            if arg:
                params.append("long long* __restrict__ part_i")
            params.append("unsigned int* __restrict__ counter")

        def fold(v, i, ov, oi):
            """Statements folding the (value, index) ``ov, oi`` into ``v, i``."""
            if arg:
                return f"if (better({ov}, {oi}, {v}, {i})) {{ {v} = {ov}; {i} = {oi}; }}"
            return f"{v} = combine({v}, {ov});"

        def store(v, i):
            if arg:
                return f"({C_TYPES[y.aval.dtype.name]}){i}"
            return store_value(y.aval.dtype, f"({compute_type(y.aval.dtype)}){v}")

        if self.along_reduced:
            lanes = f"  const int lane_r = threadIdx.x % {LR}, lane_o = threadIdx.x / {LR};"
        else:
            lanes = f"  const int lane_o = threadIdx.x % {LO}, lane_r = threadIdx.x / {LO};"
        lines = [
            lanes,
            f"  const long long o = (long long)blockIdx.x * {LO} + lane_o;",
            f"  const long long r_begin = (long long)blockIdx.y * {self.chunk}LL;",
            f"  const long long r_end = min({R}LL, r_begin + {self.chunk}LL);",
            f"  {A} v = {ident};",
            "  long long vi = 0x7fffffffffffffffLL;" if arg else "",
            f"  if (o < {O}LL) {{",
            "    const long long base = kept_offset(o);",
            "    #pragma unroll 4",
            f"    for (long long r = r_begin + lane_r; r < r_end; r += {LR}) {{",
            "      const long long i = base + reduced_offset(r);",
            body,
            f"      const {A} e = ({A})({x});",
            "      " + fold("v", "vi", "e", "r"),
            "    }",
            "  }"]
        # combine the lanes of one output into its lane_r == 0
        if self.along_reduced:
            lines += ["  #pragma unroll",
                      "  for (int k = 16; k > 0; k >>= 1) {",
                      f"    const {A} ov = __shfl_xor_sync(0xffffffffu, v, k);",
                      "    const long long oi = __shfl_xor_sync(0xffffffffu, vi, k);" if arg
                      else "",
                      "    " + fold("v", "vi", "ov", "oi"),
                      "  }"]
            if LR > 32:
                lines += [f"  __shared__ {A} sv[{LR // 32}];",
                          f"  __shared__ long long si[{LR // 32}];" if arg else "",
                          "  if ((threadIdx.x & 31) == 0) {",
                          "    sv[threadIdx.x >> 5] = v;",
                          "    si[threadIdx.x >> 5] = vi;" if arg else "",
                          "  }",
                          "  __syncthreads();",
                          "  if (threadIdx.x == 0)",
                          f"    for (int w = 1; w < {LR // 32}; ++w) {{ "
                          + fold("v", "vi", "sv[w]", "si[w]" if arg else "0") + " }"]
        else:
            lines += [f"  __shared__ {A} sv[{LR}][{LO}];",
                      f"  __shared__ long long si[{LR}][{LO}];" if arg else "",
                      "  sv[lane_r][lane_o] = v;",
                      "  si[lane_r][lane_o] = vi;" if arg else "",
                      "  __syncthreads();",
                      "  if (lane_r == 0)",
                      f"    for (int k = 1; k < {LR}; ++k) {{ "
                      + fold("v", "vi", "sv[k][lane_o]", "si[k][lane_o]" if arg else "0")
                      + " }"]
        if self.split == 1:
            lines.append(f"  if (lane_r == 0 && o < {O}LL) out[o] = {store('v', 'vi')};")
        else:
            lines += self._combine_splits(fold, store, ident, arg)
        name = f"fnx_reduce_{self.eqn.primitive.name}"
        kept = offset_expr("o", self.kept)
        reduced = offset_expr("r", self.reduced)
        src = (headers(self.chain.value_dtypes() | {y.aval.dtype}) + helpers
               + f"__device__ __forceinline__ long long kept_offset(long long o) "
               f"{{ return {kept}; }}\n"
               f"__device__ __forceinline__ long long reduced_offset(long long r) "
               f"{{ return {reduced}; }}\n"
               f'extern "C" __global__ void __launch_bounds__({THREADS}) '
               f'{name}({", ".join(params)}) {{\n'
               + "\n".join(s for s in lines if s) + "\n}\n")
        return src, name

    def _combine_splits(self, fold, store, ident, arg):
        """Each block's partial results into the scratch buffer; the last block to finish
        combines them, split by split, and resets the counter."""
        O, S, A = self.n_out, self.split, C_TYPES[self.acc.name]
        return [
            f"  if (lane_r == 0 && o < {O}LL) {{",
            f"    part_v[blockIdx.y * {O}LL + o] = v;",
            f"    part_i[blockIdx.y * {O}LL + o] = vi;" if arg else "",
            "  }",
            "  __threadfence();   // the partials reach L2 before this block is counted",
            "  __shared__ bool last_block;",
            "  __syncthreads();",
            "  if (threadIdx.x == 0)",
            "    last_block = atomicAdd(counter, 1u) == gridDim.x * gridDim.y - 1;",
            "  __syncthreads();",
            "  if (!last_block) return;",
            "  __threadfence();",
            f"  for (long long q = threadIdx.x; q < {O}LL; q += {THREADS}) {{",
            f"    {A} a = {ident};",
            "    long long ai = 0x7fffffffffffffffLL;" if arg else "",
            f"    for (int s = 0; s < {S}; ++s) {{",
            f"      const {A} pv = __ldcg(part_v + s * {O}LL + q);",
            f"      const long long pi = __ldcg(part_i + s * {O}LL + q);" if arg else "",
            "      " + fold("a", "ai", "pv", "pi"),
            "    }",
            f"    out[q] = {store('a', 'ai')};",
            "  }",
            "  if (threadIdx.x == 0) *counter = 0u;"]

    # -- launching

    def kernel(self):
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
        return self._kernel

    def extra_args(self):
        """The split partials and the counter (zeroed here once; every launch leaves it at
        zero)."""
        if self.split == 1:
            return ()
        if self._scratch is None:
            import cupy as cp
            n = self.n_out * self.split
            scratch = [cp.empty(n, self.acc)]
            if self.eqn.primitive in _ARG:
                scratch.append(cp.empty(n, np.int64))
            scratch.append(cp.zeros(1, np.uint32))
            cp.cuda.get_current_stream().synchronize()
            self._scratch = tuple(scratch)
        return self._scratch

    def launch_config(self, sm_count: int):
        return self.grid, (THREADS,)

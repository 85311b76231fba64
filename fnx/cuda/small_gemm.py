"""Generated kernels for products too thin for cuBLAS's tiles (a classifier's handful of logits
and their gradients, where a tiled GEMM runs a few blocks down a long K loop), each with an
epilogue that finishes the result in registers (a bias and activation, or a gradient step).

Offered to fnx.cuda.gemm_table as candidates and timed against cuBLAS and cuBLASLt. For
``N <= 16`` outputs per row:

- ``vec_block<R>``: a block sweeps K once for ``R`` rows, reading A and B 16 bytes at a time, so
  each piece of B it loads serves all ``R`` rows (float32, A not transposed, ``K % 4 == 0``);
- ``warp_rows``: one warp per output row, lanes splitting K one element at a time (any layout);
- ``col_threads<G>``: A transposed (stored K x M, as in a weight gradient ``x^T @ g``): one
  thread per output row, so each warp reads 32 consecutive elements of A's rows, with ``G``
  warps splitting K and meeting in shared memory.

For small K:

- ``outer<R>``: ``K <= 16``, ``N % 4 == 0``: each thread keeps op(B)'s K x 4 block for four output
  columns in registers and runs down ``R`` rows, storing four outputs at a time (``g @ w^T``);
- ``thread_outputs``: one thread per output element.

For float32 products too short to fill the GPU, ``tiles<bm>x<bn>x<split>[x<rows per thread>]``
(fnx.cuda.split_gemm): tiles with K split over a thread-block cluster.

The kernels that load or store 16 bytes at a time (``vec_block``, ``outer``, and ``tiles`` where
a row length allows it) refuse buffers that are not 16-byte aligned, and the gemm table then
runs cuBLAS instead, so a choice cached for a shape holds for any buffers.

An :class:`Epilogue` is C code run once per output with ``acc`` (the product's value), ``row``,
``col`` and the linear index ``i`` in scope; it writes ``C[i]``.
"""
from __future__ import annotations

import re

import numpy as np

from .elementwise import C_TYPES, _compile
from .split_gemm import split_candidates, split_tiles, vector_alignment

MAX_ROW_COLS = 16
MAX_OUTER_K = 16
MAX_THREAD_K = 32        # beyond this, cuBLAS's tiles always won when timed
_BLOCK = 128


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


def _float4(pointer, index):
    """The 16-byte load of four floats at ``pointer + index``."""
    return f"*reinterpret_cast<const float4*>({pointer} + ({index}))"


_XYZW = "xyzw"


def _warp_sums(n):
    """Every lane ends with the warp's total of each ``sum[j]``."""
    return (f"  for (int j = 0; j < {n}; ++j)\n"
            "    for (int o = 16; o > 0; o >>= 1) sum[j] += __shfl_xor_sync(0xffffffffu, sum[j], o);\n")


def _warp_rows(m, n, k, ta, tb, t, ep):
    b_cols = "\n".join(f"      sum[{j}] += av * " + _at("B", tb, k, n, "kk", str(j)) + ";"
                       for j in range(n))
    body = (
        "  const long long row = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;\n"
        "  const int lane = threadIdx.x & 31;\n"
        f"  if (row >= {m}) return;\n"
        f"  {t} sum[{n}];\n"
        f"  for (int j = 0; j < {n}; ++j) sum[j] = 0;\n"
        f"  for (int kk = lane; kk < {k}; kk += 32) {{\n"
        f"    const {t} av = {_at('A', ta, m, k, 'row', 'kk')};\n"
        f"{b_cols}\n"
        "  }\n" + _warp_sums(n) +
        f"  for (int col = 0; col < {n}; ++col)\n"
        f"    if (lane == col) {{ const {t} acc = sum[col]; const long long i = row * {n} + col; "
        f"{ep.store} }}\n")
    return body, (-(-m * 32 // _BLOCK),), (_BLOCK,)


_STAGE_BYTES = 40 * 1024


def _staged(base, floats, limit, per_lane):
    """C statements that copy a warp's ``floats`` consecutive floats of B, from ``base``, into
    its slice of shared memory ``stage`` with coalesced 16-byte loads (zeros at and past
    ``limit``), then give each lane its own ``per_lane`` consecutive float4s as ``b0, b1, ...``.
    Read directly, those lane-strided 16-byte pieces would each touch a different cache line."""
    return (
        f"    for (int q = lane * 4; q < {floats}; q += 128) {{\n"
        f"      const long long g = {base} + q;\n"
        "      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);\n"
        f"      if (g < {limit}) v = {_float4('B', 'g')};\n"
        "      *reinterpret_cast<float4*>(&stage[warp][q]) = v;\n"
        "    }\n"
        "    __syncwarp();\n"
        f"    const float4* mine = reinterpret_cast<const float4*>(&stage[warp][lane * {4 * per_lane}]);\n"
        + "".join(f"    const float4 b{u} = mine[{u}];\n" for u in range(per_lane)) +
        "    __syncwarp();\n")


def _scatter_sums(total):
    """C statements that sum ``sum[0..total)`` (``total`` a multiple of 32) over the warp's
    lanes, leaving lane ``L`` the totals of ``sum[L * total / 32 ...]``, which it stores to
    ``partial[warp]``: at each step a lane keeps half of its values and hands the other half
    to its partner, so the warp makes ``total`` shuffles in all instead of ``5 * total``."""
    lines, count = [], total
    for offset in (16, 8, 4, 2, 1):
        half = count // 2
        lines.append(
            f"  {{ const bool up = lane & {offset};\n"
            "#pragma unroll\n"
            f"    for (int j = 0; j < {half}; ++j) {{\n"
            f"      const float give = up ? sum[j] : sum[j + {half}], "
            f"keep = up ? sum[j + {half}] : sum[j];\n"
            f"      sum[j] = keep + __shfl_xor_sync(0xffffffffu, give, {offset});\n"
            "    }\n  }\n")
        count = half
    lines.append("#pragma unroll\n"
                 f"  for (int j = 0; j < {count}; ++j) partial[warp][lane * {count} + j] = sum[j];\n")
    return "".join(lines)


def _vec_block(m, n, k, ta, tb, t, ep, rows):
    """A block of threads sweeps K once for ``rows`` rows, each lane taking four consecutive
    k at a time: every piece of B a thread loads serves all the rows, and A is read 16 bytes
    at a time; the threads' sums meet in shared memory."""
    warps = max(1, min(8, -(-k // 128), _STAGE_BYTES // (512 * n)))
    threads = 32 * warps
    if tb:      # B stored (n, k): a float4 of each of its rows, coalesced across the warp
        b_loads = "".join(f"    const float4 b{j} = active ? "
                          + _float4("B", f"(long long){j} * {k} + kk")
                          + " : make_float4(0.f, 0.f, 0.f, 0.f);\n" for j in range(n))
        stage = ""

        def b(s, j):
            return f"b{j}.{_XYZW[s]}"
    else:       # B stored (k, n): the warp's rows of B are 4n floats a lane, consecutive
        b_loads = _staged("(long long)kb * " + str(n), 128 * n, k * n, n)
        stage = f"  __shared__ __align__(16) float stage[{warps}][{128 * n}];\n"

        def b(s, j):
            return f"b{(s * n + j) // 4}.{_XYZW[(s * n + j) % 4]}"
    a_loads = "".join(
        f"    const float4 a{r} = active && row0 + {r} < {m} ? "
        + _float4("A", f"(row0 + {r}) * {k} + kk")
        + " : make_float4(0.f, 0.f, 0.f, 0.f);\n" for r in range(rows))
    fmas = "".join(f"    sum[{r * n + j}] += "
                   + " + ".join(f"a{r}.{_XYZW[s]} * {b(s, j)}" for s in range(4)) + ";\n"
                   for r in range(rows) for j in range(n))
    total = rows * n
    padded = -(-total // 32) * 32
    body = (
        f"  __shared__ float partial[{warps}][{padded}];\n" + stage +
        "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
        f"  const long long row0 = blockIdx.x * {rows}LL;\n"
        f"  float sum[{padded}];\n"
        "#pragma unroll\n"
        f"  for (int e = 0; e < {padded}; ++e) sum[e] = 0;\n"
        f"  for (int kb = warp * 128; kb < {k}; kb += {128 * warps}) {{\n"
        "    const int kk = kb + lane * 4;\n"
        f"    const bool active = kk < {k};\n"
        + a_loads + b_loads + fmas +
        "  }\n"
        + _scatter_sums(padded) +
        "  __syncthreads();\n"
        f"  for (int e = threadIdx.x; e < {total}; e += {threads}) {{\n"
        f"    const long long row = row0 + e / {n};\n"
        f"    const int col = e % {n};\n"
        f"    if (row >= {m}) continue;\n"
        "    float acc = 0;\n"
        f"    for (int w = 0; w < {warps}; ++w) acc += partial[w][e];\n"
        f"    const long long i = row * {n} + col; {ep.store}\n"
        "  }\n")
    return body, (-(-m // rows),), (threads,)


def _column_groups(n, itemsize):
    """Warps splitting K in ``col_threads``: as many as its shared memory allows, up to 32."""
    groups = 8
    while groups < 32 and 2 * groups * n * 33 * itemsize <= 48 * 1024:
        groups *= 2
    return groups


def _col_threads(m, n, k, ta, tb, t, ep, groups):
    b = _at("B", tb, k, n, "kk", "{j}")
    body = (
        f"  __shared__ {t} partial[{groups}][{n}][33];\n"
        "  const int lane = threadIdx.x & 31, group = threadIdx.x >> 5;\n"
        "  const long long row0 = blockIdx.x * 32LL;\n"
        f"  {t} sum[{n}];\n"
        f"  for (int j = 0; j < {n}; ++j) sum[j] = 0;\n"
        f"  if (row0 + lane < {m}) {{\n"
        "#pragma unroll 8\n"
        f"    for (int kk = group; kk < {k}; kk += {groups}) {{\n"
        f"      const {t} av = A[(long long)kk * {m} + row0 + lane];\n"
        + "".join(f"      sum[{j}] += av * {b.format(j=j)};\n" for j in range(n)) +
        "    }\n"
        "  }\n"
        f"  for (int j = 0; j < {n}; ++j) partial[group][j][lane] = sum[j];\n"
        "  __syncthreads();\n"
        f"  for (int o = threadIdx.x; o < {32 * n}; o += {32 * groups}) {{\n"
        "    const int r = o & 31, col = o >> 5;\n"
        "    const long long row = row0 + r;\n"
        f"    if (row >= {m}) continue;\n"
        f"    {t} acc = 0;\n"
        f"    for (int p = 0; p < {groups}; ++p) acc += partial[p][col][r];\n"
        f"    const long long i = row * {n} + col; {ep.store}\n"
        "  }\n")
    return body, (-(-m // 32),), (32 * groups,)


def _outer(m, n, k, ta, tb, t, ep, rows):
    """Each thread keeps op(B)'s k x 4 block for four output columns in registers and runs
    down ``rows`` rows, storing four outputs at a time."""
    if tb:      # B stored (n, k): columns c0..c0+3 of op(B) are 4k consecutive floats
        stage = f"  __shared__ __align__(16) float stage[{_BLOCK // 32}][{128 * k}];\n"
        loads = _staged(f"(blockIdx.x * {_BLOCK}LL + warp * 32) * {4 * k}", 128 * k, n * k, k)

        def b(s, kk):
            e = s * k + kk
            return f"b{e // 4}.{_XYZW[e % 4]}"
    else:       # B stored (k, n): one float4 of each of its rows
        stage = ""
        loads = "".join(f"  const float4 b{kk} = {_float4('B', f'(long long){kk} * {n} + c0')};\n"
                        for kk in range(k))

        def b(s, kk):
            return f"b{kk}.{_XYZW[s]}"
    a = _at("A", ta, m, k, "row", "{kk}")
    # the epilogue's statements, each writing one of the four outputs to a register
    stores = "".join(f"      {{ const long long col = c0 + {s}, i = row * {n} + col; "
                     f"const float acc = " + " + ".join(f"a{kk} * {b(s, kk)}" for kk in range(k))
                     + "; " + ep.store.replace("C[i] =", f"r{s} =") + " }\n" for s in range(4))
    body = (
        stage +
        "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
        f"  const long long c0 = (blockIdx.x * {_BLOCK}LL + threadIdx.x) * 4;\n"
        + loads +
        f"  if (c0 >= {n}) return;\n"
        "#pragma unroll 2\n"
        f"  for (int rr = 0; rr < {rows}; ++rr) {{\n"
        f"    const long long row = blockIdx.y * {rows}LL + rr;\n"
        f"    if (row >= {m}) return;\n"
        + "".join(f"    const float a{kk} = {a.format(kk=kk)};\n" for kk in range(k)) +
        "    float r0, r1, r2, r3;\n"
        + stores +
        f"    *reinterpret_cast<float4*>(C + row * {n} + c0) = make_float4(r0, r1, r2, r3);\n"
        "  }\n")
    return body, (-(-n // (4 * _BLOCK)), -(-m // rows)), (_BLOCK,)


def _thread_outputs(m, n, k, ta, tb, t, ep):
    body = (
        "  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
        f"  if (i >= {m * n}LL) return;\n"
        f"  const long long row = i / {n}, col = i % {n};\n"
        f"  {t} acc = 0;\n"
        f"  for (int kk = 0; kk < {k}; ++kk) acc += {_at('A', ta, m, k, 'row', 'kk')} * "
        f"{_at('B', tb, k, n, 'kk', 'col')};\n"
        f"  {ep.store}\n")
    return body, (-(-m * n // _BLOCK),), (_BLOCK,)


# kind name (numbers at its end, joined by "x", are the kernel's parameters) -> generator of
# (body, grid, block) or (body, grid, block, the kernel's attributes)
KINDS = {"warp_rows": _warp_rows, "vec_block": _vec_block, "col_threads": _col_threads,
         "outer": _outer, "thread_outputs": _thread_outputs, "tiles": split_tiles}


def _split_kind(kind):
    base, numbers = re.fullmatch(r"([a-z_]+?)((?:\d+x)*\d+)?", kind).groups()
    return KINDS[base], tuple(int(v) for v in numbers.split("x")) if numbers else ()


class SmallGemm:
    """``C = epilogue(op(A) @ op(B))`` for one problem, as one generated kernel."""

    def __init__(self, kind, m, n, k, trans_a, trans_b, dtype, epilogue: Epilogue = PLAIN):
        self.kind, self.m, self.n, self.k, self.trans = kind, m, n, k, (trans_a, trans_b)
        t = C_TYPES[np.dtype(dtype).name]
        name = f"fnx_{kind}_{m}x{n}x{k}_{int(trans_a)}{int(trans_b)}_{epilogue.key}"
        generate, params = _split_kind(kind)
        body, self.grid, self.block, *attributes = generate(m, n, k, trans_a, trans_b, t,
                                                            epilogue, *params)
        extra = "".join(f", {d} {p}" for d, p in epilogue.params)
        self.source = (f'extern "C" __global__ void {"".join(attributes)}{name}('
                       f"const {t}* __restrict__ A, const {t}* __restrict__ B, {t}* C{extra}) "
                       f"{{\n{body}}}\n")
        self.name = name
        self._kernel = None

    @staticmethod
    def candidates(m, n, k, dtype, batch, trans_a=False):
        """The kinds that can run this problem (and have a chance against cuBLAS): one
        configuration of each kernel, the one that timed best for such shapes on an H100."""
        dtype = np.dtype(dtype)
        if batch != 1 or dtype not in (np.float32, np.float64):
            return []
        f32 = dtype == np.float32
        kinds = []
        if n <= MAX_ROW_COLS:
            if trans_a:
                kinds.append(f"col_threads{_column_groups(n, dtype.itemsize)}")
            elif f32 and k % 4 == 0:
                # enough rows a block that each B piece serves many, enough blocks for the SMs
                rows = 8 if m >= 8 * 128 and n <= 10 else 4 if m >= 4 * 128 else 2
                kinds.append(f"vec_block{rows}")
            else:
                kinds.append("warp_rows")
        if f32 and k <= MAX_OUTER_K and n % 4 == 0:
            kinds.append("outer4")
        if k <= MAX_THREAD_K and m * n <= (1 << 20):
            kinds.append("thread_outputs")
        if f32:
            from .compile import compute_capability
            kinds += split_candidates(m, n, k, compute_capability())
        return kinds

    @property
    def loads_vectors(self) -> bool:
        if self.kind.startswith("tiles"):
            return vector_alignment(self.m, self.n, self.trans[0])
        return self.kind.startswith(("vec_block", "outer"))

    def __call__(self, out, a, b, *extra):
        """Launch on the current stream; raises :class:`Misaligned` (before launching) if the
        kernel loads 16 bytes at a time and a buffer does not allow it."""
        if self.loads_vectors and (a.data.ptr | b.data.ptr | out.data.ptr) % 16:
            raise Misaligned(f"{self.name} needs 16-byte aligned buffers")
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
        self._kernel(self.grid, self.block, (a, b, out) + extra)
        return out


class Misaligned(ValueError):
    """A generated GEMM that reads 16 bytes at a time was given a buffer that is not aligned
    for it (a view into an array): the caller runs another candidate."""

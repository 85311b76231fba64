"""A tiled float32 GEMM with K split over a thread-block cluster, for products too short for
cuBLAS to fill the GPU: a 128-row batch's layer (128 x 512 outputs) is 16 of cuBLAS's tiles, so
16 of an H100's 132 multiprocessors run the whole K loop while the rest wait.

Here each ``bm x bn`` tile of the output is computed by a cluster of ``split`` blocks (Hopper),
each block taking its share of K through a pipeline of shared-memory stages filled by
asynchronous copies. Each block then sends every slice of its partial tile to the block that
finishes that slice, storing it into that block's shared memory (distributed shared memory: no
workspace in device memory, no atomics, no second kernel); after one cluster barrier, each block
adds up the slices it received and finishes them with the epilogue. With ``split = 1`` it is a
plain tiled GEMM that finishes its tile from registers.

Offered to fnx.cuda.gemm_table through fnx.cuda.small_gemm as ``tiles<bm>x<bn>x<split>`` and
timed against cuBLAS and cuBLASLt like every generated candidate.
"""
from __future__ import annotations

BK = 16          # K per shared-memory stage
STAGES = 4       # shared-memory stages at most: the copies of three in flight while one is used
_PAD = 4         # floats added to each shared-memory row: fewer bank conflicts, 16-byte aligned
_SHARED_FLOATS = 48 * 1024 // 4     # static shared memory a block may have
MAX_FLOPS = 1 << 30     # a problem this big fills the GPU with cuBLAS's own tiles
# K is split when there are fewer than FEW tiles of 32 x 32 outputs, into up to MAX_SPLIT parts
# (the portable cluster size), as long as there are at most FILL blocks and each takes at least
# MIN_CHUNK of K (timed on an H100: a 128 x 512 layer's tiles ran fastest split 8 ways, a
# 784 x 512 x 128 weight gradient's whole)
FEW, MAX_SPLIT, FILL, MIN_CHUNK = 128, 8, 512, 64


class _Operand:
    """How the threads of a block copy one operand's tiles into shared memory: ``name``'s
    (tile_r x tile_c) tile of op(X), an (rows x cols) matrix stored row-major or, if ``trans``,
    transposed, at (r0, c0); the tile axis ``k_axis`` (0 or 1) runs along K. Shared memory keeps
    K as the first index, so a tile whose stored rows run along the other axis is copied 16
    bytes at a time (when the matrix allows it) and the other kind one float at a time."""

    def __init__(self, name, trans, rows, cols, tile_r, tile_c, r0, c0, k_axis, threads):
        self.name = name
        contiguous = 0 if trans else 1          # the tile axis running along stored rows
        inner = (tile_r, tile_c)[1 - k_axis]    # the tile's extent off K: shared-memory rows
        along = (rows, cols)[contiguous]
        self.width = 4 if contiguous != k_axis and along % 4 == 0 and inner % 4 == 0 else 1
        self.inner_padded = inner + _PAD
        self.stride_k = ((1, rows) if trans else (cols, 1))[k_axis]     # in memory, per step of K
        pieces = tile_r * tile_c // self.width
        if pieces % threads:
            raise ValueError(f"{threads} threads do not share a {tile_r} x {tile_c} tile evenly")
        self.copies = []
        for p in range(pieces // threads):
            e = f"(threadIdx.x + {p * threads})"
            # consecutive threads take consecutive pieces along the stored rows
            if contiguous == 0:
                per = tile_r // self.width
                r, c = f"{e} % {per} * {self.width}", f"{e} / {per}"
            else:
                per = tile_c // self.width
                r, c = f"{e} / {per}", f"{e} % {per} * {self.width}"
            kk, off = (r, c) if k_axis == 0 else (c, r)
            off_start, off_limit = (c0, cols) if k_axis == 0 else (r0, rows)
            address = f"(long long)({c0} + {c}) * {rows} + {r0} + {r}" if trans else \
                f"(long long)({r0} + {r}) * {cols} + {c0} + {c}"
            self.copies.append((kk, off, off_start, off_limit, address))

    def prepare(self):
        """Statements run once: each copy's source, its K offset in the tile, whether it lies
        inside the matrix, and its shared-memory offset within a stage."""
        lines = []
        for p, (kk, off, off_start, off_limit, address) in enumerate(self.copies):
            v = f"{self.name}{p}"
            lines.append(
                f"  const int {v}_kk = {kk}, {v}_off = {off};\n"
                f"  const bool {v}_in = {off_start} + {v}_off < {off_limit};\n"
                f"  const float* {v}_src = {v}_in ? {self.name} + {address} : {self.name};\n"
                f"  const unsigned {v}_to = {self.name}_base + "
                f"({v}_kk * {self.inner_padded} + {v}_off) * 4;\n")
        return "".join(lines)

    def issue(self):
        """Statements starting the copies of the tile of K offset ``kb`` into stage ``slot``
        (zeros past the matrix and past ``k_end``)."""
        bytes_ = 4 * self.width
        stage = BK * self.inner_padded * 4  # bytes
        lines = []
        for p in range(len(self.copies)):
            v = f"{self.name}{p}"
            lines.append(
                f"      {{ const bool in = {v}_in && kb + {v}_kk < k_end;\n"
                f'        asm volatile("cp.async.ca.shared.global [%0], [%1], {bytes_}, %2;\\n" '
                f':: "r"({v}_to + slot * {stage}), '
                f'"l"(in ? {v}_src + (long long)(kb - k_begin) * {self.stride_k} : {self.name}), '
                f'"r"(in ? {bytes_} : 0)); }}\n')
        return "".join(lines)


def split_tiles(m, n, k, trans_a, trans_b, t, ep, bm, bn, split, tm=4):
    """``(body, grid, block, attributes)`` of the kernel computing ``ep(op(A) @ op(B))`` with
    ``bm x bn`` output tiles, K split over clusters of ``split`` blocks, each thread making a
    ``tm x 4`` block of outputs."""
    if t != "float":
        raise ValueError("split_tiles makes float32 kernels only")
    if split > 1 and bm % split:
        raise ValueError(f"a {bm}-row tile does not split into {split} blocks' rows")
    tx_count, ty_count = bn // 4, bm // tm
    threads = tx_count * ty_count
    tiles_n = -(-n // bn)
    tiles = -(-m // bm) * tiles_n
    chunk = -(-k // split)
    # A's tile: (bm rows x BK of K) of op(A) (m x k); B's: (BK of K x bn cols) of op(B) (k x n)
    a = _Operand("A", trans_a, m, k, bm, BK, "row0", "k_begin", 1, threads)
    b = _Operand("B", trans_b, k, n, BK, bn, "k_begin", "col0", 0, threads)
    # the blocks of a cluster receive each other's partial rows in a buffer of their own, next
    # to the stages (as many as fit beside it in static shared memory)
    received = bm * (bn + _PAD) if split > 1 else 0
    per_stage = BK * (bm + bn + 2 * _PAD)
    stages = max(2, min(STAGES, (_SHARED_FLOATS - received) // per_stage))
    a_floats, b_floats = stages * BK * (bm + _PAD), stages * BK * (bn + _PAD)
    fmas = "".join(f"        acc[{i}][{j}] += a{i // 4}.{'xyzw'[i % 4]} * b.{'xyzw'[j]};\n"
                   for i in range(tm) for j in range(4))
    a_reads = "".join(f"      const float4 a{q} = *reinterpret_cast<const float4*>"
                      f"(&A_s[slot][kk][ty * {tm} + {4 * q}]);\n" for q in range(tm // 4))
    body = [
        # the stages' tiles of A and B, then the partial rows the cluster's blocks send here
        f"  __shared__ __align__(16) float shared[{a_floats + b_floats + received}];\n"
        f"  float (*A_s)[{BK}][{bm + _PAD}] = "
        f"reinterpret_cast<float (*)[{BK}][{bm + _PAD}]>(shared);\n"
        f"  float (*B_s)[{BK}][{bn + _PAD}] = "
        f"reinterpret_cast<float (*)[{BK}][{bn + _PAD}]>(shared + {a_floats});\n"
        "  const unsigned A_base = (unsigned)__cvta_generic_to_shared(shared);\n"
        f"  const unsigned B_base = A_base + {a_floats * 4};\n"
        f"  const int tile = blockIdx.x / {split}, part = blockIdx.x % {split};\n"
        f"  const int row0 = tile / {tiles_n} * {bm}, col0 = tile % {tiles_n} * {bn};\n"
        f"  const int tx = threadIdx.x % {tx_count}, ty = threadIdx.x / {tx_count};\n"
        f"  const int k_begin = part * {chunk};\n"
        f"  const int k_end = min({k}, k_begin + {chunk});\n"
        f"  const int steps = k_end > k_begin ? (k_end - k_begin + {BK - 1}) / {BK} : 0;\n"
        + a.prepare() + b.prepare() +
        f"  float acc[{tm}][4] = {{}};\n"
        # the copies of stages - 1 steps are in flight while a step is computed
        f"  for (int s = 0; s < {stages - 1}; ++s) {{\n"
        f"    if (s < steps) {{ const int slot = s, kb = k_begin + s * {BK};\n"
        + a.issue() + b.issue() +
        "    }\n"
        '    asm volatile("cp.async.commit_group;\\n" ::);\n'
        "  }\n"
        "  for (int step = 0; step < steps; ++step) {\n"
        f'    asm volatile("cp.async.wait_group {stages - 2};\\n" ::);\n'
        "    __syncthreads();\n"
        f"    if (step + {stages - 1} < steps) {{\n"
        f"      const int slot = (step + {stages - 1}) % {stages}, "
        f"kb = k_begin + (step + {stages - 1}) * {BK};\n"
        + a.issue() + b.issue() +
        "    }\n"
        '    asm volatile("cp.async.commit_group;\\n" ::);\n'
        f"    const int slot = step % {stages};\n"
        "#pragma unroll\n"
        f"    for (int kk = 0; kk < {BK}; ++kk) {{\n"
        + a_reads +
        "      const float4 b = *reinterpret_cast<const float4*>(&B_s[slot][kk][tx * 4]);\n"
        + fmas +
        "    }\n"
        "  }\n"]

    vector_store = n % 4 == 0 and ep.store.count("C[i] =") == 1

    def finish(groups):
        """The epilogue of ``groups = [(values, row, col)]``: four outputs each, ``values`` at
        (row, col ... col + 3). Where rows allow, each group's results are stored 16 bytes at
        a time, after every group's inputs (a parameter update's old values) are read: the
        stores may alias them, so reads placed after a store would wait for it."""
        if not vector_store:
            return "".join(
                f"  {{ const float value = {value};\n"
                f"    const long long row = {row}, col = {col} + {j};\n"
                f"    if (row < {m} && col < {n}) {{ const long long i = row * {n} + col; "
                f"const float acc = value; {ep.store} }} }}\n"
                for values, row, col in groups for j, value in enumerate(values))
        lines = []
        for g, (values, row, col) in enumerate(groups):
            lines.append(f"  const long long out_row{g} = {row}, out_col{g} = {col};\n"
                         f"  const float got{g}[4] = {{{', '.join(values)}}};\n"
                         f"  float out{g}[4];\n"
                         f"  const bool out_in{g} = out_row{g} < {m} && out_col{g} < {n};\n"
                         f"  if (out_in{g}) {{\n")
            for j in range(4):
                store = ep.store.replace("C[i] =", f"out{g}[{j}] =")
                lines.append(f"    {{ const long long row = out_row{g}, col = out_col{g} + {j}, "
                             f"i = row * {n} + col; const float acc = got{g}[{j}]; {store} }}\n")
            lines.append("  }\n")
        for g in range(len(groups)):
            lines.append(f"  if (out_in{g}) *reinterpret_cast<float4*>(C + out_row{g} * {n} "
                         f"+ out_col{g}) = make_float4(out{g}[0], out{g}[1], out{g}[2], "
                         f"out{g}[3]);\n")
        return "".join(lines)

    if split == 1:
        body.append(finish([([f"acc[{u}][{v}]" for v in range(4)], f"row0 + ty * {tm} + {u}",
                             "col0 + tx * 4") for u in range(tm)]))
        return "".join(body), (tiles,), (threads,), ""
    rows_each = bm // split
    quads = rows_each * bn // 4
    # a block may store into another's shared memory only once that one has started: every
    # block signals it on entry (the wait, before the stores, has long been met by then)
    body.insert(0, '  asm volatile("barrier.cluster.arrive.relaxed.aligned;\\n" : : : "memory");\n')
    body.append(
        '  asm volatile("barrier.cluster.wait.aligned;\\n" : : : "memory");\n'
        f"  float (*received)[{rows_each}][{bn + _PAD}] = reinterpret_cast<"
        f"float (*)[{rows_each}][{bn + _PAD}]>(shared + {a_floats + b_floats});\n"
        # each of this block's partial rows goes to the block that finishes it, into the slot
        # of this block's part (remote stores: nothing waits for a reply)
        "#pragma unroll\n"
        f"  for (int u = 0; u < {tm}; ++u) {{\n"
        f"    const int r = ty * {tm} + u;\n"
        f"    float* local = &received[part][r % {rows_each}][tx * 4];\n"
        "    float* remote;\n"
        f'    asm("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(local), "r"(r / {rows_each}));\n'
        "    *reinterpret_cast<float4*>(remote) =\n"
        "        make_float4(acc[u][0], acc[u][1], acc[u][2], acc[u][3]);\n"
        "  }\n"
        # every block's rows have arrived once all have passed the barrier (release, acquire);
        # no block writes into another after it, so a block may leave as soon as it is done
        '  asm volatile("barrier.cluster.arrive.aligned;\\n" : : : "memory");\n'
        '  asm volatile("barrier.cluster.wait.aligned;\\n" : : : "memory");\n'
        f"  for (int e = threadIdx.x; e < {quads}; e += {threads}) {{\n"
        f"    const int r = e / {bn // 4}, c = e % {bn // 4} * 4;\n"
        "    float4 s = *reinterpret_cast<const float4*>(&received[0][r][c]);\n"
        "#pragma unroll\n"
        f"    for (int q = 1; q < {split}; ++q) {{\n"
        "      const float4 v = *reinterpret_cast<const float4*>(&received[q][r][c]);\n"
        "      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;\n"
        "    }\n"
        + finish([([f"s.{c}" for c in "xyzw"], f"row0 + part * {rows_each} + r", "col0 + c")]) +
        "  }\n")
    return "".join(body), (tiles * split,), (threads,), f"__cluster_dims__({split}, 1, 1) "


def split_candidates(m, n, k, capability: int) -> list:
    """The configurations offered for a float32 problem on a device of compute ``capability``:
    none for a big problem (cuBLAS's tiles fill the GPU), a thin one (fnx.cuda.small_gemm's
    kernels) or a device without asynchronous copies (8.0); K split 2 to 8 ways where 32 x 32
    tiles are too few to fill the GPU (clusters: 9.0), whole-K tiles where they are many."""
    if capability < 80 or 2.0 * m * n * k >= MAX_FLOPS or n < 32 or m < 32 or k < 32:
        return []
    tiles = -(-m // 32) * -(-n // 32)
    split, most = 1, MAX_SPLIT if capability >= 90 else 1
    while tiles < FEW and split < most and tiles * split * 2 <= FILL \
            and k // (2 * split) >= MIN_CHUNK:
        split *= 2
    if split == 1:
        return ["tiles64x64x1x8", "tiles32x32x1"]
    return [f"tiles32x32x{split}", f"tiles32x64x{split}"]


def vector_alignment(m, n, trans_a) -> bool:
    """Whether the kernel reads or writes some operand 16 bytes at a time (its buffers must then
    be 16-byte aligned)."""
    return n % 4 == 0 or (trans_a and m % 4 == 0)

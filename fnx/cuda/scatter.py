"""``scatter`` on the GPU as generated kernels that a CUDA graph can capture.

One thread per update element. ``add`` is one atomic add; ``mul``, ``min`` and ``max`` are an
atomic compare-and-swap loop over the element's bits (NaN propagates, as NumPy's ``ufunc.at``);
``set`` keeps the last update of each index, as NumPy's fancy assignment does: a first kernel
takes the largest update position per index with an atomic max, and only those are written.
An update whose index is out of range is dropped (XLA's rule, as the CPU backend does). Types
without the atomics this needs (16-bit floats, 8- and 16-bit integers, bool) are not
``supported``: they run the eager implementation.

With ``config.gpu_deterministic_ops`` on, ``add`` and ``mul`` combine in index order instead
(``_ORDERED``): the update positions are sorted by target (a stable sort), and one thread per
result element finds its run of positions by binary search and combines them in order, starting
from the element's value: the same bits on every run, and the same as NumPy's ``ufunc.at``.

Many updates added into a small result (a segment sum over few segments: k-means' per-cluster
sums and counts) would make every thread wait on the same few addresses: there each block adds
its share into a private copy of the result in shared memory first, then adds that copy into
the result, one atomic per element per block (``_private``: on an H100, k-means' counts took
5.5 µs instead of 22; its (256, 64) sums 24 µs instead of 26, and 35 µs with one block per SM).
"""
from __future__ import annotations

import functools

import numpy as np

from .compile import kernel as compiled
from .copies import dense_copy
from .elementwise import C_TYPES

_BITS = {"float": "unsigned int", "int": "unsigned int", "unsigned int": "unsigned int",
         "double": "unsigned long long", "long long": "unsigned long long",
         "unsigned long long": "unsigned long long"}

_COMBINE = {
    "add": "cur + v",       # (computed by atomicAdd)
    "mul": "cur * v",
    "min": "(cur < v || cur != cur) ? cur : v",
    "max": "(cur > v || cur != cur) ? cur : v",
}

_INDEX = r"""
__device__ __forceinline__ long long target(const {I}* idx, long long j, long long n_axis) {{
    long long t = (long long)idx[j];
    return t < 0 || t >= n_axis ? -1 : t;     // out of range: the update is dropped
}}
"""

_PRIVATE = _INDEX + r"""
extern "C" __global__ void __launch_bounds__({THREADS}, 2)
fnx_scatter_private(const {T}* upd, const {I}* idx, {T}* out, long long pre, long long n_idx,
                    long long n_axis, long long post) {{
    extern __shared__ unsigned char raw[];
    {T}* acc = ({T}*)raw;
    const {L} size = pre * n_axis * post, total = pre * n_idx * post;
    for ({L} i = threadIdx.x; i < size; i += blockDim.x) acc[i] = 0;
    __syncthreads();
    if (blockDim.x % post == 0) {{
        // each thread keeps one column q and its rows advance by a constant: no division
        // per element (a 64-bit one costs more than the atomic)
        const {L} q = threadIdx.x % post, per_block = blockDim.x / post;
        for ({L} r = blockIdx.x * per_block + threadIdx.x / post; r < pre * n_idx;
             r += ({L})gridDim.x * per_block) {{
            const {L} j = pre == 1 ? r : r % ({L})n_idx, p = pre == 1 ? 0 : r / ({L})n_idx;
            long long t = target(idx, j, n_axis);
            if (t >= 0) atomicAdd(({W}*)(acc + (p * n_axis + t) * post + q),
                                  ({W})upd[r * post + q]);
        }}
    }} else {{
        for ({L} e = blockIdx.x * ({L})blockDim.x + threadIdx.x; e < total;
             e += ({L})gridDim.x * blockDim.x) {{
            {L} q = e % ({L})post, j = (e / ({L})post) % ({L})n_idx,
                p = e / ({L})(post * n_idx);
            long long t = target(idx, j, n_axis);
            if (t >= 0) atomicAdd(({W}*)(acc + (p * n_axis + t) * post + q), ({W})upd[e]);
        }}
    }}
    __syncthreads();
    for ({L} i = threadIdx.x; i < size; i += blockDim.x)
        if (acc[i] != 0) atomicAdd(({W}*)(out + i), ({W})acc[i]);
}}
"""

_ORDERED = r"""
extern "C" __global__ void fnx_scatter_ordered(const {T}* upd, const {I}* idx,
                                               const long long* order, {T}* out, long long pre,
                                               long long n_idx, long long n_axis, long long post) {{
    // order: the update positions sorted by index (stably), so a target's updates are a run
    const long long size = pre * n_axis * post;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < size;
         e += (long long)gridDim.x * blockDim.x) {{
        const long long q = e % post, t = (e / post) % n_axis, p = e / (post * n_axis);
        long long lo = 0, hi = n_idx;           // the first position whose index is >= t
        while (lo < hi) {{
            long long mid = (lo + hi) / 2;
            if ((long long)idx[order[mid]] < t) lo = mid + 1; else hi = mid;
        }}
        {T} acc = out[e];
        for (long long k = lo; k < n_idx && (long long)idx[order[k]] == t; ++k)
            acc = acc {op} upd[(p * n_idx + order[k]) * post + q];
        out[e] = acc;
    }}
}}
"""

_SCATTER = _INDEX + r"""
extern "C" __global__ void fnx_scatter(const {T}* upd, const {I}* idx, const long long* winner,
                                       {T}* out, long long pre, long long n_idx,
                                       long long n_axis, long long post) {{
    long long total = pre * n_idx * post;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {{
        long long q = e % post, j = (e / post) % n_idx, p = e / (post * n_idx);
        long long t = target(idx, j, n_axis);
        if (t < 0) continue;
        {T}* dst = out + (p * n_axis + t) * post + q;
        {T} v = upd[e];
        {apply}
    }}
}}
"""

# the update of one element: the last update's write (set), an atomic add, or a
# compare-and-swap loop over its bits
_SET = "if (winner[t] == j) *dst = v;"
_ATOMIC_ADD = "atomicAdd(({W}*)dst, ({W})v);"
_CAS_LOOP = """{W}* word = ({W}*)dst;
        {W} seen = *word, assumed;
        do {{
            assumed = seen;
            {T} cur;
            memcpy(&cur, &assumed, sizeof({T}));
            {T} next = {combine};
            {W} bits;
            memcpy(&bits, &next, sizeof({T}));
            seen = atomicCAS(word, assumed, bits);
        }} while (seen != assumed);"""

_WINNERS = _INDEX + r"""
extern "C" __global__ void fnx_scatter_winners(const {I}* idx, long long* winner,
                                               long long n_idx, long long n_axis) {{
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n_idx;
         j += (long long)gridDim.x * blockDim.x) {{
        long long t = target(idx, j, n_axis);
        if (t >= 0) atomicMax(winner + t, j);
    }}
}}
"""


_PRIVATE_BYTES = 96 * 1024      # two blocks' copies fit an SM's shared memory (H100: 227 KB)
_PRIVATE_THREADS = 1024        # two such blocks fill an SM (H100: 21.4 -> 15.9 µs, k-means)


def _private(dtype, mode, size, n_updates) -> bool:
    """Whether a scatter adds through per-block copies of its result: many updates into a
    result that fits in shared memory."""
    return (mode == "add" and n_updates >= 4 * size
            and 0 < size * np.dtype(dtype).itemsize <= _PRIVATE_BYTES)


def ordered(mode) -> bool:
    """Whether a scatter of ``mode`` combines in index order (``config.gpu_deterministic_ops``)."""
    from ..core.config import config
    return mode in ("add", "mul") and config.gpu_deterministic_ops


def _launch(unit, total, args, threads=256, shared=0, per_sm=8):
    import cupy as cp
    if total:
        blocks = int(min((total + threads - 1) // threads, cp.cuda.Device().attributes[
            "MultiProcessorCount"] * per_sm))
        k = compiled(*unit)
        if shared > 48 * 1024 and k.max_dynamic_shared_size_bytes < shared:
            k.max_dynamic_shared_size_bytes = shared
        k((blocks,), (threads,), args, shared_mem=shared)


@functools.lru_cache(maxsize=None)     # asked again by every eager call of the scatter
def units(dtype, idx_dtype, mode, size=0, n_updates=0, in_order=False):
    """``((source, name), ...)`` of the kernels a scatter of ``n_updates`` elements into a result of
    ``size`` elements runs: its update, then for ``set`` the kernel finding each index's last
    update (compiled with the program's other kernels); ``in_order``: combined in index order."""
    t, i = C_TYPES[np.dtype(dtype).name], C_TYPES[np.dtype(idx_dtype).name]
    if in_order:
        return ((_ORDERED.format(T=t, I=i, op="+" if mode == "add" else "*"),
                 "fnx_scatter_ordered"),)
    added = t if t in ("float", "double") else _BITS[t]   # integers add in two's complement
    if _private(dtype, mode, size, n_updates):
        index = "unsigned int" if max(size, n_updates) < 2 ** 31 else "long long"
        return ((_PRIVATE.format(T=t, I=i, L=index, W=added, THREADS=_PRIVATE_THREADS),
                 "fnx_scatter_private"),)
    if mode == "set":
        apply = _SET
    elif mode == "add":
        apply = _ATOMIC_ADD.format(W=added)
    else:
        apply = _CAS_LOOP.format(T=t, W=_BITS[t], combine=_COMBINE[mode])
    update = (_SCATTER.format(T=t, I=i, apply=apply), "fnx_scatter")
    return (update,) + (((_WINNERS.format(I=i), "fnx_scatter_winners"),) if mode == "set" else ())


def supported(dtype, mode) -> bool:
    """Whether ``scatter`` has kernels for operands of ``dtype`` and this ``mode``."""
    return C_TYPES.get(np.dtype(dtype).name) in _BITS and (mode in _COMBINE or mode == "set")


def scatter(x, idx, upd, *, axis, mode, in_order=None):
    """``x`` with ``upd`` scattered into it along ``axis`` at ``idx`` (``mode``: set, add, mul,
    min, max); ``supported(x.dtype, mode)`` must hold. ``in_order``: combine each element's
    updates in index order (None: as ``ordered(mode)`` says)."""
    import cupy as cp
    pre = int(np.prod(x.shape[:axis], dtype=np.int64))
    post = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    n_axis, n_idx = x.shape[axis], idx.size
    out = dense_copy(x)
    idx, upd = cp.ascontiguousarray(idx).reshape(-1), cp.ascontiguousarray(upd)
    dims = (np.int64(pre), np.int64(n_idx), np.int64(n_axis), np.int64(post))
    in_order = ordered(mode) if in_order is None else in_order
    (update, name), *winners = units(x.dtype, idx.dtype, mode, x.size, upd.size, in_order)
    if in_order:
        order = cp.argsort(idx).astype(np.int64, copy=False)   # (a stable radix sort)
        _launch((update, name), x.size, (upd, idx, order, out) + dims)
        return out
    if name == "fnx_scatter_private":
        shared = x.size * x.dtype.itemsize
        _launch((update, name), upd.size, (upd, idx, out) + dims, threads=_PRIVATE_THREADS,
                shared=shared, per_sm=2)
        return out
    winner = idx     # (set's alone reads it)
    if winners:
        winner = cp.full(n_axis, -1, np.int64)
        _launch(winners[0], n_idx, (idx, winner, np.int64(n_idx), np.int64(n_axis)))
    _launch((update, name), pre * n_idx * post, (upd, idx, winner, out) + dims)
    return out

"""Lowering a jaxpr onto the GPU: a flat list of steps over numbered buffer slots.

Chains of elementwise equations become one generated kernel each (fnx.cuda.elementwise), as do
row groups (fnx.cuda.rows), chains ending in a sum over leading axes (fnx.cuda.columns) and runs of
independent chains (one multi-tensor launch); dot_general goes to the fastest cuBLAS or cuBLASLt
kernel for its problem (fnx.cuda.gemm_table); every other primitive runs through the GPU
backend's eager impl table, so lowering never fails for lack of a kernel.
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.jaxpr import Jaxpr, Literal, Var
from . import gemm_table
from .columns import ColumnKernel, leading_sum
from .decompose import decompose
from .epilogue import dense_p, fuse_dense_epilogues
from .elementwise import FusedKernel, MultiKernel, is_fusible
from .rows import RowKernel, find_row_group


def _matmul_precision(precision):
    """The precision a product is lowered with, fixed when the jaxpr is lowered (as in JAX)."""
    if precision is not None:
        return str(precision)
    try:
        from ..core.config import config
    except ImportError:
        return "highest"
    return getattr(config, "default_matmul_precision", None) or "highest"


def dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    """dot_general on cuBLAS: operands whose layout is (batch, rows, cols) or its transpose in the
    last two axes go without copies; other layouts are made contiguous first."""
    import cupy as cp
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    if lhs.dtype not in (np.float16, np.float32, np.float64):
        # integer products: the generic path (NumPy's impl dispatching to CuPy)
        from ..backends.numpy_backend import _dot_general
        return _dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                            preferred_element_type=preferred_element_type)
    bshape = tuple(lhs.shape[i] for i in lb)
    B = int(np.prod(bshape, dtype=np.int64))
    M = int(np.prod([lhs.shape[i] for i in lfree], dtype=np.int64))
    N = int(np.prod([rhs.shape[i] for i in rfree], dtype=np.int64))
    K = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    a, trans_a = _as_matrix(lhs, list(lb), lfree, list(lc), B, M, K)
    b, trans_b = _as_matrix(rhs, list(rb), list(rc), rfree, B, K, N)
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    out = cp.empty((B, M, N) if lb else (M, N), dtype=out_dtype)
    gemm_table.matmul_into(out, a if lb else a.reshape(a.shape[-2:]),
                       b if lb else b.reshape(b.shape[-2:]), trans_a, trans_b,
                       precision if precision in ("highest", "tensorfloat32")
                       else _matmul_precision(precision), batch=B if lb else 1)
    return out.reshape(bshape + tuple(lhs.shape[i] for i in lfree)
                       + tuple(rhs.shape[i] for i in rfree))


def _as_matrix(x, batch, first, second, B, R, C):
    """``x`` as a contiguous (B, R, C) buffer, or (B, C, R) with a transpose flag."""
    import cupy as cp
    perm = batch + first + second
    if perm == list(range(x.ndim)) and x.flags.c_contiguous:
        return x.reshape(B, R, C), False
    perm_t = batch + second + first
    if perm_t == list(range(x.ndim)) and x.flags.c_contiguous:
        return x.reshape(B, C, R), True
    return cp.ascontiguousarray(x.transpose(perm)).reshape(B, R, C), False


def buffer_sharing(eqns) -> dict:
    """var -> the vars whose buffers it may share memory with. Generated kernels and cuBLAS
    write fresh buffers; an eager impl may return a view of (or the same buffer as) any of its
    inputs, so its results share their inputs' buffers."""
    shares: dict = {}
    for e in eqns:
        if is_fusible(e) or e.primitive in (lax.dot_general_p, dense_p):
            continue
        roots = set()
        for v in e.invars:
            if isinstance(v, Var):
                roots |= shares.get(v, {v})
        for v in e.outvars:
            shares[v] = roots | {v}
    return shares


def pair_donations(jaxpr: Jaxpr, donated) -> dict:
    """Which results go into which donated arguments' buffers, ``{output: argument}``: each
    donated argument takes the first unpaired output of its shape and dtype (JAX's rule). An
    argument that is itself returned is left alone."""
    pairs: dict = {}
    for i in donated:
        u = jaxpr.invars[i]
        if u in jaxpr.outvars:
            continue
        for j, v in enumerate(jaxpr.outvars):
            if j not in pairs and isinstance(v, Var) and v.aval.shape == u.aval.shape \
                    and v.aval.dtype == u.aval.dtype:
                pairs[j] = i
                break
    return pairs


def dense(x):
    """``x`` as a C-contiguous buffer, keeping its shape (CuPy's ascontiguousarray would turn a
    0-d array into a 1-d one)."""
    import cupy as cp
    return x if x.flags.c_contiguous else cp.ascontiguousarray(x)


def fold_transposed_products(jaxpr: Jaxpr):
    """``transpose(dot_general(a, b))`` of a 2-D product is ``dot_general(b, a)``: the backward
    pass of a dense layer writes its weight gradient this way, and folding the transpose into
    the product saves a copy kernel per layer."""
    n_uses: dict = {}
    for e in jaxpr.eqns:
        for v in e.invars:
            if isinstance(v, Var):
                n_uses[v] = n_uses.get(v, 0) + 1
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            n_uses[v] = n_uses.get(v, 0) + 1
    producer = {}
    folded, dropped = {}, set()
    for k, e in enumerate(jaxpr.eqns):
        if e.primitive is lax.dot_general_p:
            producer[e.outvars[0]] = k
        elif (e.primitive is lax.transpose_p and e.params["permutation"] == (1, 0)
              and e.invars[0] in producer and n_uses.get(e.invars[0]) == 1):
            d = jaxpr.eqns[producer[e.invars[0]]]
            (lc, rc), (lb, rb) = d.params["dimension_numbers"]
            if lb or rb:
                continue
            params = dict(d.params, dimension_numbers=((rc, lc), ((), ())))
            folded[producer[e.invars[0]]] = d.replace(invars=[d.invars[1], d.invars[0]],
                                                      outvars=list(e.outvars), params=params)
            dropped.add(k)
    return [folded.get(k, e) for k, e in enumerate(jaxpr.eqns) if k not in dropped]


class GpuExecutable:
    """A lowered jaxpr: ``executable(*args) -> list of CuPy arrays``."""

    def __init__(self, jaxpr: Jaxpr, consts, backend, donated=()):
        import cupy as cp
        self.backend = backend
        self.jaxpr, self.const_values = jaxpr, consts
        self.sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.consts = [backend.to_buffer(c, np.dtype(v.aval.dtype))
                       for c, v in zip(consts, jaxpr.constvars)]
        self.slot: dict = {}
        for v in jaxpr.constvars + jaxpr.invars:
            self._slot_of(v)
        self._written_in_place: set = set()
        self.steps = []
        self.labels = []         # one line per launch, for describe() and profile()
        self.kernels = []
        eqns = fuse_dense_epilogues(decompose(fold_transposed_products(jaxpr)), jaxpr.outvars)
        uses = self._uses(eqns, jaxpr.outvars)
        # results written into donated argument buffers: output position -> argument position
        self._shares = buffer_sharing(eqns)
        self.alias = {j: i for j, i in pair_donations(jaxpr, donated).items()
                      if not any(jaxpr.invars[i] in self._shares.get(w, ()) for w in
                                 jaxpr.outvars if isinstance(w, Var) and w is not jaxpr.invars[i])}
        self._write_into = {jaxpr.outvars[j]: jaxpr.invars[i] for j, i in self.alias.items()}
        self.in_place = 0       # aliased results a kernel writes directly, without a copy
        i = 0
        pending: list = []      # independent elementwise kernels waiting to share a launch
        pending_outs: set = set()
        pending_reads: set = set()
        targets = set(self._write_into.values())

        def flush():
            if pending:
                self._add_kernels(pending)
                pending.clear()
                pending_outs.clear()
                pending_reads.clear()
        while i < len(eqns):
            row_group = find_row_group(eqns, i)
            if row_group is not None:
                flush()
                group, shape, i = row_group
                self._add_kernels([self._plan_fused(group, shape, uses, i, RowKernel)])
                continue
            group, shape = [], None
            while i < len(eqns) and is_fusible(eqns[i]):
                e = eqns[i]
                out_shape = e.outvars[0].aval.shape
                produced = {v for g in group for v in g.outvars}
                if e.primitive is lax.broadcast_in_dim_p and e.invars[0] in produced:
                    break   # broadcasting an intermediate needs another iteration shape
                if shape is None or out_shape == shape or out_shape == ():
                    shape = out_shape if shape is None or shape == () else shape
                    group.append(e)
                    i += 1
                else:
                    break
            if i < len(eqns) and leading_sum(eqns[i], shape if group else None):
                flush()
                col_shape = eqns[i].invars[0].aval.shape
                self._add_kernels([self._plan_fused(group + [eqns[i]], col_shape, uses, i + 1,
                                                    ColumnKernel)])
                i += 1
                continue
            if group:
                reads = {v for e in group for v in e.invars if isinstance(v, Var)}
                # a kernel reading another's results, or possibly overwriting (donated) buffers
                # another reads, must not run in the same launch
                if reads & pending_outs or reads & targets & pending_reads:
                    flush()
                part = self._plan_fused(group, shape, uses, i)
                if part[2]:     # a chain none of whose values are used later needs no launch
                    pending.append(part)
                pending_outs.update(v for e in group for v in e.outvars)
                pending_reads.update(reads)
                continue    # the next equation may start a row or column group
            flush()
            self._add_generic(eqns[i])
            i += 1
        flush()
        for v, u in self._write_into.items():
            if v not in self._written_in_place:
                self._add_copy(v, u)
        self.out_slots = [(None, v.val) if isinstance(v, Literal) else
                          (self._slot_of(self._write_into.get(v, v)), None)
                          for v in jaxpr.outvars]
        self.n_slots = len(self.slot)
        self.num_launches = len(self.steps)

    def _slot_of(self, v):
        s = self.slot.get(v)
        if s is None:
            s = self.slot[v] = len(self.slot)
        return s

    @staticmethod
    def _uses(eqns, outvars):
        """var -> index of the last equation reading it (len(eqns) for program outputs)."""
        last = {}
        for k, e in enumerate(eqns):
            for v in e.invars:
                if isinstance(v, Var):
                    last[v] = max(last.get(v, -1), k)
        for v in outvars:
            if isinstance(v, Var):
                last[v] = len(eqns)
        return last

    def _in_place_target(self, v, inputs, shape, uses, start, end):
        """The donated argument whose buffer a fused kernel may write ``v`` into: one it reads
        elementwise at the same index, for the last time, with no view of it read later."""
        u = self._write_into.get(v)
        if u is None or u not in inputs or tuple(u.aval.shape) != tuple(shape) \
                or uses.get(u, -1) >= end:
            return None
        if any(u in roots and w is not u and uses.get(w, -1) >= start
               for w, roots in self._shares.items()):
            return None
        return u

    def _add_copy(self, v, u):
        src, dst = self._slot_of(v), self._slot_of(u)

        def run(env):
            import cupy as cp
            cp.copyto(env[dst], env[src])
        self.steps.append(run)
        self.labels.append(f"copy into donated {u.aval.str_short()}")

    def _plan_fused(self, group, shape, uses, end, kernel_class=FusedKernel):
        """A generated kernel for ``group`` (equations ending at index ``end``), with where its
        inputs come from and where its outputs go."""
        produced = [v for e in group for v in e.outvars]
        produced_set = set(produced)
        inputs = []
        for e in group:
            for v in e.invars:
                if isinstance(v, Var) and v not in produced_set and v not in inputs:
                    inputs.append(v)
        outputs = [v for v in produced if uses.get(v, -1) >= end]
        kernel = kernel_class(group, inputs, outputs, shape)
        outputs = kernel.outputs
        # (shape, dtype, slot of the donated buffer to write into or None)
        out_meta = []
        for v in outputs:
            u = self._in_place_target(v, inputs, shape, uses, end - len(group), end) \
                if kernel_class is FusedKernel else None
            if u is not None:
                self._written_in_place.add(v)
                self.in_place += 1
            out_meta.append((v.aval.shape, v.aval.dtype, None if u is None else self._slot_of(u)))
        kind = {RowKernel: "rows", ColumnKernel: "columns"}.get(kernel_class, "fused")
        label = f"{kind}[{','.join(map(str, shape))}]: " + " -> ".join(e.primitive.name
                                                                      for e in group)
        return (kernel, [self._slot_of(v) for v in inputs], [self._slot_of(v) for v in outputs],
                out_meta, label)

    def _add_kernels(self, parts):
        """One launch for the planned kernels: the kernel itself, or a MultiKernel of several
        independent ones."""
        if len(parts) == 1:
            kernel, in_slots, out_slots, out_meta, label = parts[0]
        else:
            kernel = MultiKernel([p[0] for p in parts])
            in_slots, out_slots, out_meta = [], [], []
            for _, ins, outs, meta, _ in parts:
                in_slots += ins
                out_slots += outs
                out_meta += meta
            label = f"multi[{len(parts)}]: " + " | ".join(p[4] for p in parts)
            # the kernel's arguments are each part's inputs then outputs, in turn
            order = []
            for _, ins, outs, _, _ in parts:
                order += [("in", s) for s in ins] + [("out", s) for s in outs]
        self.kernels.append(kernel)
        grid, block = kernel.launch_config(self.sm_count)
        extra = kernel.extra_args()
        if len(parts) == 1:
            def run(env):
                import cupy as cp
                outs = [cp.empty(s, d) if into is None else env[into] for s, d, into in out_meta]
                kernel.kernel()(grid, block, tuple(env[s] for s in in_slots) + tuple(outs)
                                + extra, shared_mem=kernel.shared_bytes)
                for s, o in zip(out_slots, outs):
                    env[s] = o
        else:
            metas = iter(out_meta)
            order = [(kind, s, next(metas) if kind == "out" else None) for kind, s in order]

            def run(env):
                import cupy as cp
                args = []
                for kind, s, meta in order:
                    if kind == "in":
                        args.append(env[s])
                    else:
                        shape, dtype, into = meta
                        env[s] = cp.empty(shape, dtype) if into is None else env[into]
                        args.append(env[s])
                kernel.kernel()(grid, block, tuple(args) + extra)
        self.steps.append(run)
        self.labels.append(label)

    def _add_generic(self, eqn):
        impls = self.backend.impls
        p = eqn.primitive
        if p is lax.dot_general_p:
            fn = dot_general
            params = dict(eqn.params, precision=_matmul_precision(eqn.params.get("precision")))
        elif p is dense_p:
            from .epilogue import dense as fn
        elif p.impl is not None:
            fn = None
        else:
            fn = impls.get(p)
        reads = [(None, self.backend.to_buffer(v.val, v.aval.dtype)) if isinstance(v, Literal)
                 else (self._slot_of(v), None) for v in eqn.invars]
        writes = [self._slot_of(v) for v in eqn.outvars]
        params = params if p is lax.dot_general_p else eqn.params
        multiple = p.multiple_results
        dtypes_out = [v.aval.dtype for v in eqn.outvars]
        backend = self.backend

        def run(env):
            args = [env[s] if s is not None else c for s, c in reads]
            if fn is None:   # higher-order primitives interpret their own jaxprs
                from ..core.core import Array
                wrapped = [Array(a, backend) if not np.isscalar(a) else a for a in args]
                outs = p.bind(*wrapped, **params)
                outs = [o._value for o in (outs if multiple else [outs])]
            else:
                outs = fn(*args, **params)
                outs = outs if multiple else [outs]
            for s, o, dt in zip(writes, outs, dtypes_out):
                # generated kernels index buffers as dense row-major: no strided views
                env[s] = dense(backend.cast(o, dt))
        self.steps.append(run)
        self.labels.append(f"{p.name}: " + ", ".join(
            f"{v.aval.dtype.name}{list(v.aval.shape)}" for v in eqn.invars))

    def __call__(self, *args):
        return self.run(*args)[0]

    def run(self, *args):
        """``(outputs, env)``: env holds every buffer the launches touched (a CUDA graph
        captured from this run must keep them alive)."""
        env = [None] * self.n_slots
        env[:len(self.consts)] = self.consts
        env[len(self.consts):len(self.consts) + len(args)] = [dense(a) for a in args]
        for step in self.steps:
            step(env)
        outs = [env[s] if s is not None else self.backend.cast(lit, np.asarray(lit).dtype)
                for s, lit in self.out_slots]
        return outs, env

    def describe(self) -> str:
        """The lowered program: one line per launch, fused kernels with their equations."""
        lines = [f"{self.num_launches} launches, {len(self.kernels)} fused kernels"]
        lines += [f"  {label}" for label in self.labels]
        return "\n".join(lines)

    def profile(self, *args, repeats: int = 100):
        """``[(label, microseconds)]``: each launch's GPU time, measured by capturing it alone
        into a CUDA graph and replaying it ``repeats`` times (no host overhead in the figure)."""
        import cupy as cp
        from .cublas import handle_for
        stream = cp.cuda.Stream(non_blocking=True)
        handle_for(stream.ptr)
        env = [None] * self.n_slots
        env[:len(self.consts)] = self.consts
        env[len(self.consts):len(self.consts) + len(args)] = [dense(a) for a in args]
        keep, times = [], []
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        with stream:
            for step, label in zip(self.steps, self.labels):
                pool = cp.cuda.MemoryPool()
                with cp.cuda.using_allocator(pool.malloc):
                    stream.begin_capture()
                    try:
                        step(env)
                    finally:
                        graph = stream.end_capture()
                graph.launch(stream)
                start.record(stream)
                for _ in range(repeats):
                    graph.launch(stream)
                stop.record(stream)
                stop.synchronize()
                times.append((label, cp.cuda.get_elapsed_time(start, stop) * 1e3 / repeats))
                keep.append((graph, pool))
        return times

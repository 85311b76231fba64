"""Lowering a jaxpr onto the GPU: a flat list of steps over numbered buffer slots, run by
fnx.cuda.program.

The launches come from the one fusion walk (fnx.cuda.plan): each generated kernel of the plan
becomes a step (fnx.cuda.elementwise, rows, columns, reductions; several independent ones in
one multi-tensor launch); dot_general goes to the fastest cuBLAS or cuBLASLt kernel for its
problem (fnx.cuda.gemm_table); control flow lowers its bodies as programs of their own
(fnx.cuda.control); every other primitive runs through the GPU backend's eager impl table, so
lowering never fails for lack of a kernel.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import collectives, dtypes, lax
from ..core.convolution import conv_general_dilated_p
from ..core.jaxpr import Jaxpr, Literal, Var
from . import copies, cublas, cudnn, gemm_table, scatter, solver
from .gemm_table import matmul_precision
from .fusion import MOVEMENT, is_fusible
from .columns import ColumnKernel
from .compile import compile_together
from .copies import concatenate, copy_into, dense
from .control import lowering as control_lowering
from .epilogue import bias_act_source, dense_p, gemm_update_p
from .elementwise import FusedKernel, MultiKernel
from .plan import plan, readers, rewrite
from .reductions import ReduceKernel
from .rows import RowKernel
from .program import Program, Source
from .streams import Access, schedule


def dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    """dot_general on cuBLAS: operands whose layout is (batch, rows, cols) or its transpose in the
    last two axes go without copies; other layouts are made contiguous first."""
    import cupy as cp
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    if lhs.dtype not in (np.float16, dtypes.bfloat16, np.float32, np.float64):
        # integer products: the generic path (NumPy's impl dispatching to CuPy)
        from ..backends.numpy_backend import _dot_general
        return _dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                            preferred_element_type=preferred_element_type)
    bshape = tuple(lhs.shape[i] for i in lb)
    B = int(np.prod(bshape, dtype=np.int64))
    M = int(np.prod([lhs.shape[i] for i in lfree], dtype=np.int64))
    N = int(np.prod([rhs.shape[i] for i in rfree], dtype=np.int64))
    K = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    out = cp.empty((B, M, N) if lb else (M, N), dtype=out_dtype)
    precision = precision if precision in ("highest", "tensorfloat32") \
        else matmul_precision(precision)
    shape = bshape + tuple(lhs.shape[i] for i in lfree) + tuple(rhs.shape[i] for i in rfree)
    if lb and not (_copy_free(lhs, list(lb), lfree, list(lc))
                   and _copy_free(rhs, list(rb), list(rc), rfree)):
        # batch axes inside the operands (attention's heads): each member's matrices in place
        la, ra = _batch_member(lhs, lb, lfree, lc), _batch_member(rhs, rb, rc, rfree)
        if la and ra and len(lb) <= cublas.BATCH_DIMS and lhs.dtype == rhs.dtype:
            cublas.batched_matmul_into(out, K, lhs, *la, rhs, *ra, bshape, precision)
            return out.reshape(shape)
    a, trans_a = _as_matrix(lhs, list(lb), lfree, list(lc), B, M, K)
    b, trans_b = _as_matrix(rhs, list(rb), list(rc), rfree, B, K, N)
    gemm_table.matmul_into(out, a if lb else a.reshape(a.shape[-2:]),
                           b if lb else b.reshape(b.shape[-2:]), trans_a, trans_b, precision,
                           batch=B if lb else 1)
    return out.reshape(shape)


def _copy_free(x, batch, first, second) -> bool:
    """Whether ``_as_matrix`` takes ``x`` as it is."""
    return x.flags.c_contiguous and (batch + first + second == list(range(x.ndim))
                                     or batch + second + first == list(range(x.ndim)))


def _batch_member(x, batch, rows, cols):
    """``(byte strides of the batch axes, leading dimension, transposed)`` of the matrices over
    one row and one column axis that a C-contiguous ``x`` holds per batch member, one of the
    two axes being its last; None for other layouts."""
    if not x.flags.c_contiguous or len(rows) != 1 or len(cols) != 1:
        return None
    (r,), (c,) = rows, cols
    strides = [x.strides[d] for d in batch]
    if c == x.ndim - 1:
        return strides, x.strides[r] // x.itemsize, False
    if r == x.ndim - 1:
        return strides, x.strides[c] // x.itemsize, True
    return None


def _as_matrix(x, batch, first, second, B, R, C):
    """``x`` as a contiguous (B, R, C) buffer, or (B, C, R) with a transpose flag."""
    if x.flags.c_contiguous and batch + first + second == list(range(x.ndim)):
        return x.reshape(B, R, C), False
    if x.flags.c_contiguous and batch + second + first == list(range(x.ndim)):
        return x.reshape(B, C, R), True
    return dense(x.transpose(batch + first + second)).reshape(B, R, C), False


def buffer_sharing(eqns) -> dict:
    """var -> the vars whose buffers it may share memory with. Generated kernels and cuBLAS
    write fresh buffers; an eager impl may return a view of (or the same buffer as) any of its
    inputs, so its results share their inputs' buffers."""
    shares: dict = {}
    for e in eqns:
        if is_fusible(e) or e.primitive in (lax.dot_general_p, dense_p, gemm_update_p):
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
    argument that is itself returned is left alone, and so is a scalar: writing one in place
    saves nothing, and it would pair with whatever scalar comes first (a loss the caller keeps
    while passing its step counter back)."""
    pairs: dict = {}
    for i in donated:
        u = jaxpr.invars[i]
        if u in jaxpr.outvars or not u.aval.shape:
            continue
        for j, v in enumerate(jaxpr.outvars):
            if j not in pairs and isinstance(v, Var) and v.aval.shape == u.aval.shape \
                    and v.aval.dtype == u.aval.dtype:
                pairs[j] = i
                break
    return pairs


def _fallback_sources(e):
    """``[(source, name)]`` of the kernel a dense layer's unfused candidate (cuBLAS, then bias and
    activation) runs, compiled with the program's own: a first call times that candidate. The
    generated GEMM candidates are not: the first call leaves them out, and they compile after
    it (fnx.cuda.gemm_table.impatient)."""
    if e.primitive is not dense_p:
        return []
    return [bias_act_source(e.params["act"], np.dtype(e.invars[0].aval.dtype))]


_KERNELS = {"fused": FusedKernel, "rows": RowKernel, "columns": ColumnKernel,
            "reduce": ReduceKernel}


def lower(jaxpr: Jaxpr, consts, backend, donated=(), depth=0, outputs_into=None) -> Program:
    """``jaxpr`` lowered onto the GPU as a :class:`~fnx.cuda.program.Program`. Results paired with
    ``donated`` arguments (JAX's rule), or as ``outputs_into`` says (``{output: argument}``), are
    written into those arguments' buffers. ``depth``: how deep inside control-flow bodies
    (fnx.cuda.control); the outermost program compiles every kernel, its bodies' included."""
    return _Lowering(jaxpr, consts, backend, donated, depth, outputs_into).program


class _Lowering:
    """The state of one lowering: which slot each variable has, the steps so far with the
    slots each reads and writes, and which results go into donated buffers."""

    def __init__(self, jaxpr: Jaxpr, consts, backend, donated, depth, outputs_into):
        import cupy as cp
        self.backend = backend
        self.depth = depth
        self.nested: dict = {}      # step -> its control-flow lowering
        self.units: list = []       # (source, name) of every generated kernel it launches
        self._has_collectives = any(e.primitive in collectives.ALL for e in jaxpr.eqns)
        self.sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.slot: dict = {}
        for v in jaxpr.constvars + jaxpr.invars:
            self._slot_of(v)
        self._written_in_place: set = set()
        self.steps = []
        self.labels = []         # one line per launch, for describe() and profile()
        self.kernels = []
        eqns = rewrite(jaxpr)
        cudnn.prepare_plans([e for e in eqns if e.primitive is conv_general_dilated_p])
        # results written into donated argument buffers: output position -> argument position
        self._shares = buffer_sharing(eqns)
        pairs = pair_donations(jaxpr, donated) if outputs_into is None else outputs_into
        self.alias = {j: i for j, i in pairs.items()
                      if not any(jaxpr.invars[i] in self._shares.get(w, ()) for w in
                                 jaxpr.outvars if isinstance(w, Var) and w is not jaxpr.invars[i])}
        self._write_into = {jaxpr.outvars[j]: jaxpr.invars[i] for j, i in self.alias.items()}
        self.in_place = 0       # aliased results a kernel writes directly, without a copy
        self.accesses = []       # per step: the slots it reads, makes and writes in place
        self._readers = readers(eqns, jaxpr.outvars)
        self._launch_of: dict = {}      # step -> a generated kernel's launch (lt_backward)
        fallback_units = []
        for launch in plan(eqns, jaxpr.outvars, self.sm_count):
            if launch.kind == "kernels":
                self._add_kernels([self._plan_part(part, eqns) for part in launch.parts])
                continue
            eqn = eqns[launch.eqn]
            if launch.kind == "gradient_step":
                self._add_gradient_step(eqn, launch.eqn)
            elif launch.kind == "control":
                self._add_control(eqn, control_lowering(eqn))
            else:
                fallback_units += _fallback_sources(eqn)
                self._add_generic(eqn)
        choices = self._lt_backward(eqns, jaxpr.outvars)
        for v, u in self._write_into.items():
            if v not in self._written_in_place:
                self._add_copy(v, u)
        out_slots = [(None, v.val) if isinstance(v, Literal) else
                     (self._slot_of(self._write_into.get(v, v)), None) for v in jaxpr.outvars]
        schedule_, single = self._plan_streams(jaxpr)
        # the kernels of this program and of its control-flow bodies, compiled together by
        # the outermost program (NVRTC's cost is mostly per program, not per kernel)
        self.units += [(k.source, k.name) for k in self.kernels] + fallback_units
        for lowering in self.nested.values():
            self.units += [u for body in lowering.bodies for u in body.exe.units]
        if not depth:
            # with the copy kernels a captured graph's calls and strided operands use
            compile_together(self.units + [copies.UNIT] + copies.STRIDED_UNITS)
        self.program = Program(
            source=Source(jaxpr, consts, backend),
            consts=[backend.to_buffer(c, np.dtype(v.aval.dtype))
                    for c, v in zip(consts, jaxpr.constvars)],
            n_slots=len(self.slot), steps=self.steps, labels=self.labels, out_slots=out_slots,
            schedule=schedule_, single=single, alias=self.alias, in_place=self.in_place,
            nested=self.nested, choices=choices, kernels=self.kernels, units=self.units)

    def _lt_backward(self, eqns, outvars):
        """The layers whose backward pass may run one of cuBLASLt's epilogues instead
        (fnx.cuda.lt_backward), with the launches that choice replaces wrapped to run either
        path."""
        from .lt_backward import GeluBackward, ReluPair, find, find_gelu
        writer = {}
        for k, access in enumerate(self.accesses):
            for s in access.writes:
                writer.setdefault(s, k)

        def column_of(product_out, reads, gz, db):
            """(product step, column step, the column kernel's launch) if the column kernel
            reads exactly ``reads`` and writes at most ``gz`` and ``db``; else None."""
            steps = [writer.get(self.slot.get(v)) for v in (product_out, db)]
            column = self._launch_of.get(steps[1])
            slots = {self.slot.get(v) for v in reads}
            if None in steps or column is None or set(column[3]) != slots \
                    or not set(column[4]) <= {self.slot.get(gz), self.slot.get(db)} \
                    or writer.get(self.slot.get(gz), steps[1]) != steps[1] \
                    or self._write_into.get(gz) is not None:
                return None
            return steps[0], steps[1], column
        chosen = []
        for match in find(eqns, outvars):
            found = column_of(match.product.outvars[0], (match.dense.outvars[0],
                                                          match.product.outvars[0]),
                              match.select.outvars[0], match.total.outvars[0])
            forward = writer.get(self.slot.get(match.dense.outvars[0]))
            if found is None or forward is None:
                continue
            product, col, launch = found
            pair = ReluPair(match, self._slot_of, matmul_precision, launch)
            self.steps[forward] = pair.forward(self.steps[forward])
            self.steps[product] = pair.product(self.steps[product])
            self.steps[col] = pair.column(self.steps[col])
            chosen.append(pair)
        for match in find_gelu(eqns, outvars):
            if matmul_precision(match.product.params.get("precision")) != "tensorfloat32":
                continue        # cuBLASLt's GELU derivative is not float32-exact
            found = column_of(match.product.outvars[0], (match.product.outvars[0], match.z),
                              match.total.invars[0], match.total.outvars[0])
            if found is None:
                continue
            product, col, launch = found
            grad = GeluBackward(match, self._slot_of, matmul_precision, launch)
            self.steps[product] = grad.product(self.steps[product])
            self.steps[col] = grad.column(self.steps[col])
            chosen.append(grad)
        return chosen

    def _push(self, run, label, reads, writes, in_place=()):
        self.steps.append(run)
        self.labels.append(label)
        self.accesses.append(Access(frozenset(reads), frozenset(writes), frozenset(in_place)))

    def _plan_streams(self, jaxpr):
        """Which steps run on side streams, and when each slot is dropped so its memory goes
        back to the pool for later steps (inside a captured graph, the graph's own pool is the
        arena, reused in stream order); see fnx.cuda.streams."""
        from ..core.config import config
        kept = {self._slot_of(v) for v in jaxpr.constvars + jaxpr.invars}
        kept |= {self._slot_of(v) for v in jaxpr.outvars if isinstance(v, Var)}
        var_of = {s: v for v, s in self.slot.items()}
        views: dict = {}
        for w, roots in self._shares.items():
            for r in roots:
                if r in self.slot and w in self.slot:
                    views.setdefault(self.slot[r], {self.slot[r]}).add(self.slot[w])

        def views_of(s):
            return views.get(s, {s}) if s in var_of else {s}
        single = schedule(self.accesses, views_of, kept, 0)
        if self.nested or self._has_collectives:
            # control flow captures its bodies on streams of its own; NCCL calls on one
            # communicator must not run concurrently from two streams, so a program with
            # collectives keeps every step on one stream
            return single, single
        side = schedule(self.accesses, views_of, kept, config.gpu_side_streams)
        return (side if side.side_steps else single), single

    def _slot_of(self, v):
        s = self.slot.get(v)
        if s is None:
            s = self.slot[v] = len(self.slot)
        return s

    def _may_overwrite(self, u, positions, start):
        """Whether a kernel made of the equations at ``positions`` (of a run starting at
        ``start``) may write into donated argument ``u``'s buffer: it is u's only reader from
        ``start`` on, and no view of u is read from there on; or nothing reads u at all (a
        buffer given for results only: a scan step's rows of its stacked results)."""
        if not self._readers.get(u):
            return True
        later = {r for r in self._readers.get(u, ()) if r >= start}
        if not later or not later <= positions:     # earlier readers have run by now
            return False
        return not any(u in roots and w is not u and
                       any(r >= start for r in self._readers.get(w, ()))
                       for w, roots in self._shares.items())

    def _add_copy(self, v, u):
        src, dst = self._slot_of(v), self._slot_of(u)

        def run(env):
            copy_into(env[dst], env[src])
        self._push(run, f"copy into donated {u.aval.str_short()}", [src], [], [dst])

    def _plan_fused(self, group, shape, outputs, kernel_class=FusedKernel, overwrite=None):
        """A generated kernel for ``group`` writing ``outputs``, with where its inputs come from
        and where its outputs go; ``overwrite(u)`` says whether an output paired with donated
        argument ``u`` may be written straight into u's buffer."""
        produced = {v for e in group for v in e.outvars}
        inputs = []
        for e in group:
            for v in e.invars:
                if isinstance(v, Var) and v not in produced and v not in inputs:
                    inputs.append(v)
        kernel = kernel_class(group, inputs, outputs, shape)
        outputs = kernel.outputs
        # (shape, dtype, slot of the donated buffer to write into or None)
        out_meta = []
        for v in outputs:
            u = self._write_into.get(v)
            if u is not None and overwrite is not None \
                    and (u in inputs or not self._readers.get(u)) \
                    and tuple(u.aval.shape) == tuple(shape) and overwrite(u) \
                    and not any(u in e.invars and (e.primitive in MOVEMENT or tuple(
                        e.outvars[0].aval.shape) not in (tuple(shape), ())) for e in group):
                # (data movement, and what it computes at the indices it maps to, read u at
                # other elements than the thread writes)
                self._written_in_place.add(v)
                self.in_place += 1
            else:
                u = None
            out_meta.append((v.aval.shape, v.aval.dtype, None if u is None else self._slot_of(u)))
        kind = {RowKernel: "rows", ColumnKernel: "columns",
                ReduceKernel: "reduce"}.get(kernel_class, "fused")
        label = f"{kind}[{','.join(map(str, shape))}]: " + " -> ".join(e.primitive.name
                                                                      for e in group)
        return (kernel, [self._slot_of(v) for v in inputs], [self._slot_of(v) for v in outputs],
                out_meta, label)

    def _plan_part(self, part, eqns):
        """``_plan_fused`` of one kernel of the plan; a kernel of an elementwise run may write
        straight into a donated buffer that nothing reads after it."""
        positions = set(part.eqns)
        overwrite = None if part.start is None else \
            (lambda u: self._may_overwrite(u, positions, part.start))
        return self._plan_fused([eqns[k] for k in part.eqns], part.shape, list(part.outputs),
                                _KERNELS[part.kind], overwrite=overwrite)

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
            self._launch_of[len(self.steps)] = (kernel, grid, block, in_slots, out_slots, extra,
                                                kernel.shared_bytes)
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
        self._push(run, label, in_slots, out_slots,
                   [into for _, _, into in out_meta if into is not None])

    def _add_gradient_step(self, eqn, index):
        """``p + alpha * op(x) @ op(w)`` on the gemm table, written straight into ``p``'s buffer
        when ``p`` is donated to this result and read by nothing later."""
        x, w, p = eqn.invars
        out = eqn.outvars[0]
        in_place = self._write_into.get(out) is p and self._may_overwrite(p, {index}, index)
        if in_place:
            self._written_in_place.add(out)
            self.in_place += 1
        xs, ws, ps, os_ = (self._slot_of(v) for v in (x, w, p, out))
        prm = eqn.params
        precision = matmul_precision(prm["precision"])

        def run(env):
            import cupy as cp
            target = env[ps] if in_place else cp.empty(out.aval.shape, out.aval.dtype)
            gemm_table.update_into(target, dense(env[xs]), dense(env[ws]), dense(env[ps]),
                                   prm["alpha"], prm["trans_a"], prm["trans_b"], precision)
            env[os_] = target
        self._push(run, f"gemm_update: {x.aval.str_short()}, {w.aval.str_short()} into "
                        f"{p.aval.str_short()}" + (" in place" if in_place else ""),
                   [xs, ws, ps], [os_], [ps] if in_place else [])

    def _program(self, jaxpr, depth, outputs_into=None):
        """A body of this program's control flow, lowered as a program of its own."""
        return lower(jaxpr, [], self.backend, depth=depth, outputs_into=outputs_into)

    def _add_control(self, eqn, lowering_class):
        """Control flow or a call: its bodies lowered as programs of their own
        (fnx.cuda.control), run inside this program's launches and graph."""
        lowering = lowering_class(eqn, self._program, self.depth)
        reads = [(None, self.backend.to_buffer(v.val, v.aval.dtype)) if isinstance(v, Literal)
                 else (self._slot_of(v), None) for v in eqn.invars]
        writes = [self._slot_of(v) for v in eqn.outvars]

        def run(env):
            outs = lowering(*[env[s] if s is not None else c for s, c in reads])
            for s, o in zip(writes, outs):
                env[s] = dense(o)
        self.nested[len(self.steps)] = lowering
        self._push(run, f"{eqn.primitive.name}: " + ", ".join(
            f"{v.aval.dtype.name}{list(v.aval.shape)}" for v in eqn.invars),
            [s for s, _ in reads if s is not None], writes)

    def _add_generic(self, eqn):
        impls = self.backend.impls
        p = eqn.primitive
        params = eqn.params
        if p is lax.dot_general_p:
            fn = dot_general
            params = dict(eqn.params, precision=matmul_precision(eqn.params.get("precision")))
            (_, _), (lb, rb) = eqn.params["dimension_numbers"]
            if list(lb) + list(rb) != list(range(len(lb))) * 2:
                self.units.append(cublas.POINTERS_UNIT)
        elif p is conv_general_dilated_p:     # fnx.cuda.decompose left those cuDNN runs
            fn = cudnn.conv_general_dilated
            params = dict(eqn.params, precision=matmul_precision(eqn.params.get("precision")))
        elif p is dense_p:
            fn = gemm_table.dense_layer
        elif p is lax.scatter_p and scatter.supported(eqn.invars[0].aval.dtype,
                                                      eqn.params["mode"]):
            fn = scatter.scatter
            x, idx, upd = (v.aval for v in eqn.invars)
            params = dict(eqn.params, in_order=scatter.ordered(eqn.params["mode"]))
            self.units += scatter.units(x.dtype, idx.dtype, eqn.params["mode"],
                                        math.prod(x.shape), math.prod(upd.shape),
                                        params["in_order"])
        elif p is lax.concatenate_p:
            fn = concatenate
        elif p in solver.impls():
            self.units += solver.units()
            fn = impls.get(p)
        elif p.impl is not None:
            fn = None
        else:
            fn = impls.get(p)
        reads = [(None, self.backend.to_buffer(v.val, v.aval.dtype)) if isinstance(v, Literal)
                 else (self._slot_of(v), None) for v in eqn.invars]
        writes = [self._slot_of(v) for v in eqn.outvars]
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
        self._push(run, f"{p.name}: " + ", ".join(
            f"{v.aval.dtype.name}{list(v.aval.shape)}" for v in eqn.invars),
            [s for s, _ in reads if s is not None], writes)

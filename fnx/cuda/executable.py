"""Lowering a jaxpr onto the GPU: a flat list of steps over numbered buffer slots.

Chains of elementwise equations become one generated kernel each (fnx.cuda.elementwise), as do
row groups (fnx.cuda.rows), chains ending in a sum over leading axes (fnx.cuda.columns), other
reductions (fnx.cuda.reductions) and runs of independent chains (one multi-tensor launch);
dot_general goes to the fastest cuBLAS or cuBLASLt kernel for its problem (fnx.cuda.gemm_table);
every other primitive runs through the GPU backend's eager impl table, so lowering never fails
for lack of a kernel.
"""
from __future__ import annotations

import numpy as np

from ..core import collectives, dtypes, lax
from ..core.convolution import conv_general_dilated_p
from ..core.jaxpr import Jaxpr, Literal, Var, dce_jaxpr
from . import cudnn, gemm_table, scatter, solver
from .gemm_table import matmul_precision
from .fusion import (MOVEMENT, is_fusible, leading_sum, recompute_residuals,
                           row_group, run_end)
from .columns import ColumnKernel
from .compile import compile_together
from . import copies
from .copies import concatenate, copy_into, dense
from .control import lowering as control_lowering, on_device
from .decompose import decompose
from .epilogue import (bias_act_source, dense_p, fuse_dense_epilogues, fuse_gradient_steps,
                       gemm_update_p)
from .elementwise import FusedKernel, MultiKernel
from .reductions import ReduceKernel, reduces, split_over_blocks
from .rows import RowKernel, joins_rows
from .streams import Access, schedule, side_streams


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
    a, trans_a = _as_matrix(lhs, list(lb), lfree, list(lc), B, M, K)
    b, trans_b = _as_matrix(rhs, list(rb), list(rc), rfree, B, K, N)
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    out = cp.empty((B, M, N) if lb else (M, N), dtype=out_dtype)
    gemm_table.matmul_into(out, a if lb else a.reshape(a.shape[-2:]),
                       b if lb else b.reshape(b.shape[-2:]), trans_a, trans_b,
                       precision if precision in ("highest", "tensorfloat32")
                       else matmul_precision(precision), batch=B if lb else 1)
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


def _fallback_sources(e):
    """``[(source, name)]`` of the kernel a dense layer's unfused candidate (cuBLAS, then bias and
    activation) runs, compiled with the program's own: a first call times that candidate. The
    generated GEMM candidates are not: the first call leaves them out, and they compile after
    it (fnx.cuda.gemm_table.impatient)."""
    if e.primitive is not dense_p:
        return []
    return [bias_act_source(e.params["act"], np.dtype(e.invars[0].aval.dtype))]


class GpuExecutable:
    """A lowered jaxpr: ``executable(*args) -> list of CuPy arrays``. Results paired with
    ``donated`` arguments (JAX's rule), or as ``outputs_into`` says (``{output: argument}``),
    are written into those arguments' buffers."""

    def __init__(self, jaxpr: Jaxpr, consts, backend, donated=(), depth=0, outputs_into=None):
        import cupy as cp
        self.backend = backend
        self.depth = depth          # how deep inside control-flow bodies (fnx.cuda.control)
        self.nested: dict = {}      # step -> its control-flow lowering
        self.units: list = []       # (source, name) of every generated kernel it launches
        self.jaxpr, self.const_values = jaxpr, consts
        self._has_collectives = any(e.primitive in collectives.ALL for e in jaxpr.eqns)
        self.sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.consts = [backend.to_buffer(c, np.dtype(v.aval.dtype))
                       for c, v in zip(consts, jaxpr.constvars)]
        self.slot: dict = {}
        for v in jaxpr.constvars + jaxpr.invars:
            self._slot_of(v)
        self._written_in_place: set = set()
        self.steps = []
        self.labels = []         # one line per launch, for describe() and profile()
        self._at = 0             # the launch running (named when one fails)
        self.kernels = []
        eqns = decompose(fold_transposed_products(jaxpr))
        cudnn.prepare_plans([e for e in eqns if e.primitive is conv_general_dilated_p])
        eqns = fuse_gradient_steps(fuse_dense_epilogues(eqns, jaxpr.outvars), jaxpr.outvars)
        eqns = recompute_residuals(eqns, jaxpr.outvars)
        # what the fused layers left unread (an activation's constant operands)
        eqns = dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns))[0].eqns
        # results written into donated argument buffers: output position -> argument position
        self._shares = buffer_sharing(eqns)
        pairs = pair_donations(jaxpr, donated) if outputs_into is None else outputs_into
        self.alias = {j: i for j, i in pairs.items()
                      if not any(jaxpr.invars[i] in self._shares.get(w, ()) for w in
                                 jaxpr.outvars if isinstance(w, Var) and w is not jaxpr.invars[i])}
        self._write_into = {jaxpr.outvars[j]: jaxpr.invars[i] for j, i in self.alias.items()}
        self.in_place = 0       # aliased results a kernel writes directly, without a copy
        self.accesses = []       # per step: the slots it reads, makes and writes in place
        self._readers = self._reader_positions(eqns, jaxpr.outvars)
        self._launch_of: dict = {}      # step -> a generated kernel's launch (lt_backward)
        self._position = {id(e): k for k, e in enumerate(eqns)}
        i, fallback_units = 0, []
        while i < len(eqns):
            found = row_group(eqns, i)
            if found is None and i + 1 < len(eqns) \
                    and eqns[i].primitive in (lax.dot_general_p, dense_p):
                # a narrow product right before a row group over it: made in that kernel
                found = row_group(eqns, i + 1)
                if found is not None and not joins_rows(eqns[i], found[1]):
                    found = None
            if found is not None and not split_over_blocks(eqns[i:found[0]]):
                end, shape = found
                group, i = eqns[i:end], end
                self._add_kernels([self._plan_fused(group, shape, self._needed(group),
                                                    RowKernel)])
                continue
            j = run_end(eqns, i)
            if j == i:
                fallback_units += _fallback_sources(eqns[i])
                if leading_sum(eqns[i], None):
                    self._add_kernels([self._plan_fused(
                        [eqns[i]], eqns[i].invars[0].aval.shape, self._needed([eqns[i]]),
                        ColumnKernel)])
                elif eqns[i].primitive is gemm_update_p:
                    self._add_gradient_step(eqns[i], i)
                elif reduces(eqns[i]):
                    self._add_kernels([self._plan_fused(
                        [eqns[i]], eqns[i].invars[0].aval.shape, [], ReduceKernel)])
                elif control_lowering(eqns[i]) is not None:
                    self._add_control(eqns[i], control_lowering(eqns[i]))
                else:
                    self._add_generic(eqns[i])
                i += 1
                continue
            i = self._add_elementwise_run(eqns, i, j)
        self.lt_backward = self._lt_backward(eqns, jaxpr.outvars)
        for v, u in self._write_into.items():
            if v not in self._written_in_place:
                self._add_copy(v, u)
        self.out_slots = [(None, v.val) if isinstance(v, Literal) else
                          (self._slot_of(self._write_into.get(v, v)), None)
                          for v in jaxpr.outvars]
        self.n_slots = len(self.slot)
        self.num_launches = len(self.steps)
        # with side streams where the program has independent steps, and on one stream: a
        # captured graph keeps whichever replays faster (fnx.cuda.graph)
        self.schedule, self.single = self._plan_streams(jaxpr)
        self._events = [cp.cuda.Event(block=False, disable_timing=True)
                        for _ in range(self.schedule.n_events)]
        # the kernels of this program and of its control-flow bodies, compiled together by
        # the outermost program (NVRTC's cost is mostly per program, not per kernel)
        self.units += [(k.source, k.name) for k in self.kernels] + fallback_units
        for lowering in self.nested.values():
            self.units += [u for body in lowering.bodies for u in body.exe.units]
        if not depth:
            # with the copy kernel a captured graph's calls use
            compile_together(self.units + [copies.UNIT])

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

    @staticmethod
    def _reader_positions(eqns, outvars):
        """var -> indices of the equations reading it (len(eqns) for a program output)."""
        readers: dict = {}
        for k, e in enumerate(eqns):
            for v in e.invars:
                if isinstance(v, Var):
                    readers.setdefault(v, set()).add(k)
        for v in outvars:
            if isinstance(v, Var):
                readers.setdefault(v, set()).add(len(eqns))
        return readers

    def _needed(self, group, positions=None):
        """The values ``group`` makes that something outside it reads. ``positions`` are the
        group's equation indices (by default read off the equations themselves)."""
        if positions is None:
            positions = {self._position[id(e)] for e in group}
        return [v for e in group for v in e.outvars
                if self._readers.get(v, set()) - positions]

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
                    and not any(e.primitive in MOVEMENT and u in e.invars for e in group):
                # (data movement reads u at other elements than the thread writes)
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

    def _add_elementwise_run(self, eqns, i, j) -> int:
        """Lower the elementwise equations ``eqns[i:j]``: one kernel per iteration shape (scalar
        equations are recomputed inside every kernel that needs them), and kernels that do not
        read each other's results share one launch. A sum over leading axes right after the
        run joins the kernel that makes its operand. Returns where lowering goes on."""
        run = list(range(i, j))
        shape_of = {k: tuple(eqns[k].outvars[0].aval.shape) for k in run}
        made_at = {v: k for k in run for v in eqns[k].outvars}
        members: dict = {}
        for k in run:
            if shape_of[k] != ():
                members.setdefault(shape_of[k], set()).add(k)

        def with_scalar_deps(ks):
            todo, acc = list(ks), set(ks)
            while todo:
                for v in eqns[todo.pop()].invars:
                    k = made_at.get(v)
                    if k is not None and shape_of[k] == () and k not in acc:
                        acc.add(k)
                        todo.append(k)
            return acc
        classes = {shape: with_scalar_deps(ks) for shape, ks in members.items()}
        covered = set().union(*classes.values()) if classes else set()
        left = [k for k in run if k not in covered]
        if left:
            classes[()] = with_scalar_deps(left)
        owner: dict = {}            # an equation in several kernels is written by the first
        for shape, ks in classes.items():
            for k in ks:
                owner.setdefault(k, shape)
        deps = {shape: {owner[made_at[v]] for k in ks for v in eqns[k].invars
                        if v in made_at and made_at[v] not in ks} for shape, ks in classes.items()}
        level: dict = {}

        def level_of(shape):
            if shape not in level:
                level[shape] = 1 + max((level_of(d) for d in deps[shape]), default=-1)
            return level[shape]
        for shape in classes:
            level_of(shape)
        # a leading-axes sum of a value one (final) kernel makes becomes that kernel's epilogue
        column = None
        if j < len(eqns) and leading_sum(eqns[j], None):
            src = made_at.get(eqns[j].invars[0])
            shape = tuple(eqns[j].invars[0].aval.shape)
            # (not over data movement: a column kernel has few threads, each running the
            # whole chain for many rows, where index arithmetic costs more than a load)
            if src is not None and owner[src] == shape and shape in classes and \
                    not any(shape in d for d in deps.values()) and \
                    not any(eqns[k].primitive in MOVEMENT for k in classes[shape]):
                column = shape
        last = max(level.values())
        for lvl in range(last + 1):
            # a step's cursor promises that every equation before it is done: inside the run
            # that holds only once the last level has run
            parts = []
            for shape, ks in classes.items():
                if level[shape] != lvl:
                    continue
                order = sorted(ks)
                group = [eqns[k] for k in order]
                mine = {k for k in ks if owner[k] == shape}
                outputs = [v for k in order if k in mine for v in eqns[k].outvars
                           if self._readers.get(v, set()) - ks]
                if shape == column:
                    self._add_kernels([self._plan_fused(group + [eqns[j]], shape, [
                        v for v in outputs if self._readers[v] != {j}] + [eqns[j].outvars[0]],
                        ColumnKernel)])
                    continue
                if not outputs:
                    continue    # nothing it makes is read: no launch
                positions = set(ks)
                parts.append(self._plan_fused(
                    group, shape, outputs, FusedKernel,
                    overwrite=lambda u, positions=positions: self._may_overwrite(u, positions, i)))
            if parts:
                self._add_kernels(parts)
        return j + (column is not None)

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
        return GpuExecutable(jaxpr, [], self.backend, depth=depth, outputs_into=outputs_into)

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
        if p is lax.dot_general_p:
            fn = dot_general
            params = dict(eqn.params, precision=matmul_precision(eqn.params.get("precision")))
        elif p is conv_general_dilated_p:     # fnx.cuda.decompose left those cuDNN runs
            fn = cudnn.conv_general_dilated
            params = dict(eqn.params, precision=matmul_precision(eqn.params.get("precision")))
        elif p is dense_p:
            fn = gemm_table.dense_layer
        elif p is lax.scatter_p and scatter.supported(eqn.invars[0].aval.dtype,
                                                      eqn.params["mode"]):
            fn = scatter.scatter
            self.units += scatter.units(eqn.invars[0].aval.dtype, eqn.invars[1].aval.dtype,
                                        eqn.params["mode"])
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
        params = params if p in (lax.dot_general_p, conv_general_dilated_p) else eqn.params
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

    def __call__(self, *args):
        return self.run(*args)[0]

    def run(self, *args, sched=None):
        """``(outputs, env)``: env holds every buffer the launches touched (a CUDA graph
        captured from this run must keep them alive). ``sched``: ``self.schedule`` (by default)
        or ``self.single``."""
        env = [None] * self.n_slots
        env[:len(self.consts)] = self.consts
        env[len(self.consts):len(self.consts) + len(args)] = [dense(a) for a in args]
        sched = self.schedule if sched is None else sched
        try:
            if sched.side_steps:
                self._run_streams(env, sched)
            else:
                for launch in sched.launches:
                    self._at = launch.step
                    self.steps[launch.step](env)
                    for s in launch.frees:
                        env[s] = None
        except Exception as e:      # say which launch failed (a capture's reason shows it)
            # the innermost program names its launch (a loop body's, not the loop's)
            if hasattr(e, "add_note") and not any(
                    n.startswith("in launch ") for n in getattr(e, "__notes__", ())):
                e.add_note(f"in launch {self._at}: {self.labels[self._at]}")
            raise
        # a literal result by a fill kernel, which a graph can capture (a copy from the host
        # it cannot)
        outs = [env[s] if s is not None else on_device(lit) for s, lit in self.out_slots]
        return outs, env

    def _run_streams(self, env, sched):
        import cupy as cp
        events = self._events
        main = cp.cuda.get_current_stream()
        streams = (main,) + side_streams(sched.n_side, cp.cuda.Device().id)
        if sched.start_event is not None:
            events[sched.start_event].record(main)
        for launch in sched.launches:
            self._at = launch.step
            stream = streams[launch.stream]
            for e in launch.waits:
                stream.wait_event(events[e])
            if launch.stream:
                with stream:
                    self.steps[launch.step](env)
            else:
                self.steps[launch.step](env)
            if launch.record is not None:
                events[launch.record].record(stream)
            for s in launch.frees:
                env[s] = None
        for e in sched.final_waits:
            main.wait_event(events[e])

    def describe(self) -> str:
        """The lowered program: one line per launch, fused kernels with their equations, and
        which launches run on side streams."""
        lines = [f"{self.num_launches} launches, {len(self.kernels)} fused kernels, "
                 f"{self.schedule.describe()}"]
        side = {ln.step: ln.stream for ln in self.schedule.launches if ln.stream}
        for k, label in enumerate(self.labels):
            lines.append(f"  {label}" + (f"   [side stream {side[k]}]" if k in side else ""))
            if k in self.nested:
                lines += ["    " + line for line in self.nested[k].describe()]
        lines += [f"  {choice.describe()}" for choice in self.lt_backward]
        return "\n".join(lines)

    def profile(self, *args, repeats: int = 100):
        """``[(label, microseconds)]``: each launch's GPU time, measured by capturing it alone
        into a CUDA graph and replaying it ``repeats`` times (no host overhead in the figure)."""
        import cupy as cp
        from .streams import prepare_libraries
        stream = cp.cuda.Stream(non_blocking=True)
        prepare_libraries(stream.ptr)
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

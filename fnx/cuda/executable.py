"""Lowering a jaxpr onto the GPU: a flat list of steps over numbered buffer slots.

Chains of elementwise equations become one generated kernel each (fnx.cuda.elementwise);
dot_general goes to cuBLAS through fnx's own binding (fnx.cuda.cublas); every other primitive
runs through the GPU backend's eager impl table, so lowering never fails for lack of a kernel.
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.jaxpr import Jaxpr, Literal, Var
from . import cublas
from .elementwise import FusedKernel, is_fusible
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
    cublas.matmul_into(out, a if lb else a.reshape(a.shape[-2:]),
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

    def __init__(self, jaxpr: Jaxpr, consts, backend):
        import cupy as cp
        self.backend = backend
        self.sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.consts = [backend.to_buffer(c, np.dtype(v.aval.dtype))
                       for c, v in zip(consts, jaxpr.constvars)]
        self.slot: dict = {}
        for v in jaxpr.constvars + jaxpr.invars:
            self._slot_of(v)
        self.steps = []
        self.kernels = []
        uses = self._uses(jaxpr)
        i, eqns = 0, fold_transposed_products(jaxpr)
        while i < len(eqns):
            row_group = find_row_group(eqns, i)
            if row_group is not None:
                group, shape, i = row_group
                self._add_fused(group, shape, uses, i, RowKernel)
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
            if group:
                self._add_fused(group, shape, uses, i)
            if i < len(eqns) and not is_fusible(eqns[i]):
                self._add_generic(eqns[i])
                i += 1
        self.out_slots = [(None, v.val) if isinstance(v, Literal) else (self._slot_of(v), None)
                          for v in jaxpr.outvars]
        self.n_slots = len(self.slot)
        self.num_launches = len(self.steps)

    def _slot_of(self, v):
        s = self.slot.get(v)
        if s is None:
            s = self.slot[v] = len(self.slot)
        return s

    @staticmethod
    def _uses(jaxpr):
        last = {}
        for k, e in enumerate(jaxpr.eqns):
            for v in e.invars:
                if isinstance(v, Var):
                    last[v] = max(last.get(v, -1), k)
        for v in jaxpr.outvars:
            if isinstance(v, Var):
                last[v] = len(jaxpr.eqns)
        return last

    def _add_fused(self, group, shape, uses, end, kernel_class=FusedKernel):
        produced = [v for e in group for v in e.outvars]
        produced_set = set(produced)
        inputs = []
        for e in group:
            for v in e.invars:
                if isinstance(v, Var) and v not in produced_set and v not in inputs:
                    inputs.append(v)
        outputs = [v for v in produced if uses.get(v, -1) >= end]
        kernel = kernel_class(group, inputs, outputs, shape)
        self.kernels.append(kernel)
        in_slots = [self._slot_of(v) for v in inputs]
        out_slots = [self._slot_of(v) for v in outputs]
        out_meta = [(v.aval.shape, v.aval.dtype) for v in outputs]
        grid, block = kernel.launch_config(self.sm_count)
        extra = kernel.extra_args()

        def run(env, kernel=kernel, in_slots=in_slots, out_slots=out_slots, out_meta=out_meta):
            import cupy as cp
            outs = [cp.empty(s, d) for s, d in out_meta]
            kernel.kernel()(grid, block, tuple(env[s] for s in in_slots) + tuple(outs) + extra,
                            shared_mem=kernel.shared_bytes)
            for s, o in zip(out_slots, outs):
                env[s] = o
        self.steps.append(run)

    def _add_generic(self, eqn):
        impls = self.backend.impls
        p = eqn.primitive
        if p is lax.dot_general_p:
            fn = dot_general
            params = dict(eqn.params, precision=_matmul_precision(eqn.params.get("precision")))
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
        for k in self.kernels:
            kind = "rows" if isinstance(k, RowKernel) else "fused"
            lines.append(f"  {kind}[{','.join(map(str, k.shape))}]: "
                         + " -> ".join(e.primitive.name for e in k.eqns))
        return "\n".join(lines)

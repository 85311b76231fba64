"""A ReLU dense layer and its backward pass, chosen as one: fnx's path or cuBLASLt's pair.

fnx's path: the dense kernel the gemm table picks for ``h = relu(x @ w + b)``; in the backward
pass the product ``gh = g @ w2.T`` and one column kernel for ``gz = where(h > 0, gh, 0)`` and
the bias gradient ``gz.sum(0)``. cuBLASLt's pair: RELU_AUX_BIAS writes ``h`` and a bitmask of
where it is positive; DRELU_BGRAD applies that mask to the backward product and sums the bias
gradient in its epilogue, so the backward is one launch. The forward writes the mask only if
the backward reads it, so the two halves are timed together, once per problem, on the first
call (fnx's path runs that call), and the choice is kept with the gemm table's.

Only layers under ``MAX_FLOPS`` (forward and backward products together) are paired. Above it
cuBLASLt's pair lost on an H100 by 1.3-1.6x (writing the mask slows the forward GEMM down, up
to 2.5x under TF32: ``benchmarks/lt_epilogues.py``), and timing it would cost a first call
tenths of a second.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import lax
from ..core.jaxpr import Var
from ..core.passes import is_constant, small_product
from .epilogue import dense_p


MAX_FLOPS = 1e9


class Match(NamedTuple):
    dense: object       # the forward's dense equation (act relu)
    product: object     # gh = dot_general(g, w2)
    select: object      # gz = select_n(h > 0, 0, gh)
    total: object       # db = reduce_sum(gz, axes=(0,))

    @property
    def flops(self) -> float:
        m, n = self.dense.outvars[0].aval.shape
        k = self.dense.invars[0].aval.shape[0 if self.dense.params["trans_a"] else 1]
        g = self.product.invars[0]
        (lc, _), _ = self.product.params["dimension_numbers"]
        return 2.0 * m * n * (k + g.aval.shape[lc[0]])


def find(eqns, outvars) -> list[Match]:
    """Every ReLU dense layer whose backward pass is a product masked by ``h > 0`` and summed
    over the batch, nothing else reading the product or the mask."""
    producer = {v: e for e in eqns for v in e.outvars}
    readers: dict = {}
    for e in eqns:
        for v in e.invars:
            if isinstance(v, Var):
                readers.setdefault(v, []).append(e)
    for v in outvars:
        if isinstance(v, Var):
            readers.setdefault(v, []).append(None)
    found = []
    for d in eqns:
        if d.primitive is not dense_p or d.params["act"] != "relu" \
                or d.outvars[0].aval.dtype != np.float32:
            continue
        h = d.outvars[0]
        for gt in readers.get(h, ()):
            if gt is None or gt.primitive is not lax.gt_p or gt.invars[0] is not h \
                    or not is_constant(gt.invars[1], 0, producer):
                continue
            sel = readers.get(gt.outvars[0], [])
            if len(sel) != 1 or sel[0] is None or sel[0].primitive is not lax.select_n_p:
                continue
            select = sel[0]
            if len(select.invars) != 3 or select.invars[0] is not gt.outvars[0] \
                    or not is_constant(select.invars[1], 0, producer):
                continue
            gh = select.invars[2]
            product = producer.get(gh) if isinstance(gh, Var) else None
            if product is None or product.primitive is not lax.dot_general_p \
                    or small_product(product) or readers.get(gh) != [select]:
                continue
            (lc, rc), (lb, rb) = product.params["dimension_numbers"]
            if lb or rb or len(product.invars[0].aval.shape) != 2 \
                    or len(product.invars[1].aval.shape) != 2 \
                    or product.invars[0].aval.dtype != np.float32:
                continue
            totals = [r for r in readers.get(select.outvars[0], ()) if r is not None
                      and r.primitive is lax.reduce_sum_p and tuple(r.params["axes"]) == (0,)]
            match = Match(d, product, select, totals[0]) if totals else None
            if match is not None and match.flops < MAX_FLOPS:
                found.append(match)
    return found


def _layout(eqn):
    (lc, rc), _ = eqn.params["dimension_numbers"]
    return tuple(lc) == (0,), tuple(rc) == (1,)


class ReluPair:
    """The run-time half of a :class:`Match`: wraps the three launches it replaces (the
    forward's dense step, the backward product's step and its column step) and runs either
    path, the same one for all three within a call."""

    def __init__(self, match: Match, slot_of, precision_of, column_launch):
        from . import gemm_table
        d, p = match.dense, match.product
        x, w, b = d.invars
        g, w2 = p.invars
        self.m, self.n = d.outvars[0].aval.shape
        self.k = x.aval.shape[0 if d.params["trans_a"] else 1]
        self.fwd_layout = (d.params["trans_a"], d.params["trans_b"])
        self.bwd_layout = _layout(p)
        self.k2 = g.aval.shape[0 if self.bwd_layout[0] else 1]
        self.fwd_precision = precision_of(d.params.get("precision"))
        self.bwd_precision = precision_of(p.params.get("precision"))
        self.x, self.w, self.b, self.g, self.w2 = (slot_of(v) for v in (x, w, b, g, w2))
        self.h, self.gh, self.gz, self.db = (
            slot_of(v) for v in (d.outvars[0], p.outvars[0], match.select.outvars[0],
                                 match.total.outvars[0]))
        self.column_launch = column_launch
        self.key = (f"relu-pair-{self.m}x{self.n}x{self.k}{'T' if self.fwd_layout[0] else 'N'}"
                    f"{'T' if self.fwd_layout[1] else 'N'}-{self.k2}"
                    f"{'T' if self.bwd_layout[0] else 'N'}{'T' if self.bwd_layout[1] else 'N'}"
                    f"-{self.fwd_precision}-{self.bwd_precision}")
        self._table = gemm_table
        self._bits = None
        self.lt = False          # the path of the current call

    # -- cuBLASLt's pair

    def _plans(self):
        from .cublaslt import aux_shape
        t = self._table
        fwd = t._plan(self.key + "-fwd", (self.m, self.n, self.k, *self.fwd_layout, np.float32,
                                          np.float32, self.fwd_precision, 1, True, True,
                                          "relu_aux_bias"))
        bwd = t._plan(self.key + "-bwd", (self.m, self.n, self.k2, *self.bwd_layout,
                                          np.float32, np.float32, self.bwd_precision, 1, True,
                                          True, "drelu_bgrad"))
        if fwd is None or bwd is None or not fwd.algos or not bwd.algos:
            return None
        if self._bits is None:
            import cupy as cp
            shape, dtype = aux_shape(self.m, self.n, "relu_aux_bias", np.float32)
            self._bits = cp.zeros(shape, dtype)
        return fwd, bwd

    def _algos(self):
        choice = self._table.choice_for(self.key)
        if isinstance(choice, str) and choice.startswith("lt:"):
            fi, bi = map(int, choice[3:].split(":"))
            plans = self._plans()
            if plans and fi < len(plans[0].algos) and bi < len(plans[1].algos):
                return plans, fi, bi
        return None

    # -- the wrapped launches

    def forward(self, run):
        def step(env):
            import cupy as cp
            from .executable import dense
            chosen = self._algos()
            self.lt = chosen is not None
            if not self.lt:
                return run(env)
            (fwd, _), fi, _ = chosen
            h = cp.empty((self.m, self.n), np.float32)
            fwd(h, dense(env[self.x]), dense(env[self.w]), fi, bias=dense(env[self.b]),
                aux=self._bits)
            env[self.h] = h
        return step

    def product(self, run):
        def step(env):
            import cupy as cp
            from .executable import dense
            if self.lt:
                (_, bwd), _, bi = self._algos()
                gz, db = cp.empty((self.m, self.n), np.float32), cp.empty(self.n, np.float32)
                bwd(gz, dense(env[self.g]), dense(env[self.w2]), bi, bias=db, aux=self._bits)
                env[self.gz], env[self.db] = gz, db
                return
            run(env)
            if self._table.choice_for(self.key) is None \
                    and not cp.cuda.get_current_stream().is_capturing():
                self._choose(env)
        return step

    def column(self, run):
        def step(env):
            if not self.lt:
                run(env)
        return step

    # -- the choice

    def _choose(self, env):
        """Time both paths on this call's operands (into scratch outputs) and remember the
        faster: ``"fnx"`` or ``"lt:<forward algorithm>:<backward algorithm>"``."""
        import cupy as cp
        from .executable import dense
        t = self._table
        x, w, b, g, w2 = (dense(env[s]) for s in (self.x, self.w, self.b, self.g, self.w2))
        h_s, gh_s, gz_s = (cp.empty((self.m, self.n), np.float32) for _ in range(3))
        db_s = cp.empty(self.n, np.float32)
        kernel, grid, block, in_slots, out_slots, extra, shared = self.column_launch
        inputs = [gh_s if s == self.gh else dense(env[s]) for s in in_slots]
        outputs = [gz_s if s == self.gz else db_s for s in out_slots]
        launch = kernel.kernel()

        def fnx_path():
            t.dense_into(h_s, x, w, b, "relu", *self.fwd_layout, self.fwd_precision)
            t.matmul_into(gh_s, g, w2, *self.bwd_layout, self.bwd_precision)
            launch(grid, block, tuple(inputs) + tuple(outputs) + extra, shared_mem=shared)
        candidates = {"fnx": fnx_path}      # and each half's algorithms, timed alone
        plans = self._plans()
        if plans is not None:
            fwd, bwd = plans
            for i in range(min(len(fwd.algos), 8)):
                candidates[("forward", i)] = lambda i=i: fwd(h_s, x, w, i, bias=b,
                                                             aux=self._bits)
            for i in range(min(len(bwd.algos), 8)):
                candidates[("backward", i)] = lambda i=i: bwd(gz_s, g, w2, i, bias=db_s,
                                                              aux=self._bits)
        times = t.timings(candidates, 2.0 * self.m * self.n * (self.k + self.k2))
        best = {half: min(((v, name[1]) for name, v in times.items() if name[0] == half),
                          default=None) for half in ("forward", "backward")}
        choice = "fnx"
        if None not in best.values() and \
                best["forward"][0] + best["backward"][0] < times.get("fnx", float("inf")):
            choice = f"lt:{best['forward'][1]}:{best['backward'][1]}"
        t._choices[self.key] = choice
        t._save()

    def describe(self) -> str:
        choice = self._table.choice_for(self.key)
        path = ("cuBLASLt RELU_AUX_BIAS + DRELU_BGRAD" if isinstance(choice, str)
                and choice.startswith("lt:") else "fnx's kernels" if choice else
                "not yet timed")
        return (f"relu pair {self.m}x{self.n} (forward k={self.k}, backward k={self.k2}): "
                f"{path}")

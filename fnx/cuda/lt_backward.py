"""cuBLASLt's epilogues that span a layer's backward pass, as candidates against fnx's path.

fnx's path for the backward pass of ``h = act(x @ w + b)``: the product ``gh = g @ w2.T``,
then one column kernel for ``gz = gh * act'(z)`` and the bias gradient ``gz.sum(0)``.

- ReLU (:class:`ReluPair`): cuBLASLt's RELU_AUX_BIAS writes ``h`` and a bitmask of where it
  is positive; DRELU_BGRAD applies that mask to the backward product and sums the bias
  gradient in its epilogue. The forward writes the mask only if the backward reads it, so the
  two halves are timed together, on the first call (fnx's path runs that call).
- GELU, tanh form (:class:`GeluBackward`): DGELU_BGRAD reads the layer's pre-activation ``z``
  (which the forward keeps anyway) and does the backward in one launch. cuBLASLt's derivative
  is off by up to about 2e-4, so it competes only where the product asks for TF32.

Each choice is timed once per problem and kept with the gemm table's. Only layers under
``MAX_FLOPS`` (forward and backward products together) compete. Above it, cuBLASLt's ReLU pair
lost on an H100 by 1.3-1.6x: writing the mask slows the forward GEMM down, up to 2.5x under
TF32 (``benchmarks/lt_epilogues.py``). Timing it there would also cost a first call tenths of
a second.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import lax
from ..core.jaxpr import Var
from .fusion import (GELU_SLOPES, is_constant, kernel_ids, probe_values,
                           small_product)
from . import gemm_table
from .copies import dense
from .epilogue import dense_p, product_layout

MAX_FLOPS = 1e9
_PROBE = np.linspace(-6.0, 6.0, 61)


def _product_ok(product, gh, readers, allowed) -> bool:
    """``gh`` is a plain 2-D float32 product that only ``allowed`` equations read."""
    if product is None or product.primitive is not lax.dot_general_p or small_product(product) \
            or not set(map(id, readers.get(gh, ()))) <= set(map(id, allowed)):
        return False
    _, (lb, rb) = product.params["dimension_numbers"]
    a, b = product.invars
    return (not lb and not rb and len(a.aval.shape) == 2 and len(b.aval.shape) == 2
            and a.aval.dtype == np.float32)


def _flops(m, n, k, product):
    return 2.0 * m * n * (k + product_layout(product)[4])


def _graph(eqns, outvars):
    producer = {v: e for e in eqns for v in e.outvars}
    readers: dict = {}
    for e in eqns:
        for v in e.invars:
            if isinstance(v, Var):
                readers.setdefault(v, []).append(e)
    for v in outvars:
        if isinstance(v, Var):
            readers.setdefault(v, []).append(None)
    return producer, readers


# -- ReLU: the forward's mask and the backward, together

class Match(NamedTuple):
    dense: object       # the forward's dense equation (act relu)
    product: object     # gh = dot_general(g, w2)
    select: object      # gz = select_n(h > 0, 0, gh)
    total: object       # db = reduce_sum(gz, axes=(0,))

    @property
    def flops(self) -> float:
        _, _, m, n, k = product_layout(self.dense)
        return _flops(m, n, k, self.product)


def find(eqns, outvars) -> list[Match]:
    """Every ReLU dense layer whose backward pass is a product masked by ``h > 0`` and summed
    over the batch, nothing else reading the product or the mask."""
    producer, readers = _graph(eqns, outvars)
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
            if not _product_ok(product, gh, readers, [select]):
                continue
            totals = [r for r in readers.get(select.outvars[0], ()) if r is not None
                      and r.primitive is lax.reduce_sum_p and tuple(r.params["axes"]) == (0,)]
            match = Match(d, product, select, totals[0]) if totals else None
            if match is not None and match.flops < MAX_FLOPS:
                found.append(match)
    return found


# -- GELU: the backward from the pre-activation

class GeluMatch(NamedTuple):
    product: object     # gh = dot_general(g, w2)
    chain: tuple        # the elementwise equations computing gz from gh and z
    total: object       # db = reduce_sum(gz, axes=(0,))
    z: Var              # the pre-activation, a dense layer's result

    @property
    def flops(self) -> float:
        m, n = self.z.aval.shape
        return _flops(m, n, 0, self.product)


def find_gelu(eqns, outvars) -> list[GeluMatch]:
    """Every column kernel that computes ``gz = gh * gelu'(z)`` (tanh form, checked on probe
    values) and its sum over the batch, from a product ``gh`` nothing else reads and a dense
    layer's result ``z``: a GELU layer's backward once its intermediates are recomputed
    (``fnx.cuda.fusion.recompute_residuals``)."""
    producer, readers = _graph(eqns, outvars)
    ids = kernel_ids(eqns, outvars)
    found = []
    for k, total in enumerate(eqns):
        if total.primitive is not lax.reduce_sum_p or tuple(total.params["axes"]) != (0,):
            continue
        gz = total.invars[0]
        if not isinstance(gz, Var) or len(gz.aval.shape) != 2 or gz.aval.dtype != np.float32:
            continue
        chain = [j for j in range(len(eqns)) if ids[j] == ids[k] and j != k]
        made = {v for j in chain for v in eqns[j].outvars}
        leaves = {v for j in chain for v in eqns[j].invars if isinstance(v, Var)} - made
        inside = [eqns[j] for j in chain] + [total]
        if gz not in made or len(leaves) != 2 or any(
                r is None or r not in inside for j in chain for v in eqns[j].outvars
                if v is not gz for r in readers.get(v, ())):
            continue
        gh = next((v for v in leaves if producer.get(v) is not None
                   and producer[v].primitive is lax.dot_general_p), None)
        z = next((v for v in leaves if v is not gh), None)
        if gh is None or not _product_ok(producer[gh], gh, readers, inside) \
                or producer.get(z) is None or producer[z].primitive is not dense_p \
                or producer[z].params["act"] != "none" or z.aval.shape != gz.aval.shape \
                or z.aval.shape[1] % 8:
            continue
        ones = np.ones_like(_PROBE)
        once = probe_values(eqns, chain, {z: _PROBE, gh: ones}, gz)
        twice = probe_values(eqns, chain, {z: _PROBE, gh: 2 * ones}, gz)
        slope = GELU_SLOPES["gelu_tanh"](_PROBE.astype(np.float32).astype(np.float64))
        if once is None or twice is None or not np.allclose(once, slope, rtol=1e-4, atol=1e-5) \
                or not np.allclose(twice, 2 * once, rtol=1e-6, atol=1e-7):
            continue
        match = GeluMatch(producer[gh], tuple(eqns[j] for j in chain), total, z)
        if match.flops < MAX_FLOPS:
            found.append(match)
    return found


# -- the run-time halves

class _Choice:
    """What both candidates share: the gemm table (its timings and its remembered choices),
    and the column kernel fnx's path launches after the product, run on scratch outputs."""

    def __init__(self, key, column_launch, flops):
        self.key, self.column_launch, self.flops = key, column_launch, flops
        self._table = gemm_table.TABLE
        self.lt = False          # the path of the current call

    def _column_on(self, env, scratch):
        """A launch of the column kernel reading ``scratch[slot]`` for the slots given there
        (its product, its outputs) and the program's buffers for the rest."""
        kernel, grid, block, in_slots, out_slots, extra, shared = self.column_launch
        args = tuple(scratch[s] if s in scratch else dense(env[s]) for s in in_slots) + \
            tuple(scratch[s] for s in out_slots) + extra
        launch = kernel.kernel()
        return lambda: launch(grid, block, args, shared_mem=shared)

    def column(self, run):
        def step(env):
            if not self.lt:
                run(env)
        return step


def _pair_or_fnx(times) -> str:
    """``"lt:<forward>:<backward>"`` with each half's fastest algorithm, where the two together
    beat fnx's path; else ``"fnx"``."""
    best = {half: min(((v, name[1]) for name, v in times.items() if name[0] == half),
                      default=None) for half in ("forward", "backward")}
    if None not in best.values() and \
            best["forward"][0] + best["backward"][0] < times.get("fnx", float("inf")):
        return f"lt:{best['forward'][1]}:{best['backward'][1]}"
    return "fnx"


class ReluPair(_Choice):
    """The run-time half of a :class:`Match`: wraps the three launches it replaces (the
    forward's dense step, the backward product's step and its column step) and runs either
    path, the same one for all three within a call."""

    def __init__(self, match: Match, slot_of, precision_of, column_launch):
        d, p = match.dense, match.product
        x, w, b = d.invars
        g, w2 = p.invars
        ta, tb, self.m, self.n, self.k = product_layout(d)
        self.fwd_layout = (ta, tb)
        bwd_ta, bwd_tb, _, _, self.k2 = product_layout(p)
        self.bwd_layout = (bwd_ta, bwd_tb)
        self.fwd_precision = precision_of(d.params.get("precision"))
        self.bwd_precision = precision_of(p.params.get("precision"))
        self.x, self.w, self.b, self.g, self.w2 = (slot_of(v) for v in (x, w, b, g, w2))
        self.h, self.gh, self.gz, self.db = (
            slot_of(v) for v in (d.outvars[0], p.outvars[0], match.select.outvars[0],
                                 match.total.outvars[0]))
        super().__init__(
            f"relu-pair-{self.m}x{self.n}x{self.k}{'T' if self.fwd_layout[0] else 'N'}"
            f"{'T' if self.fwd_layout[1] else 'N'}-{self.k2}"
            f"{'T' if self.bwd_layout[0] else 'N'}{'T' if self.bwd_layout[1] else 'N'}"
            f"-{self.fwd_precision}-{self.bwd_precision}", column_launch, match.flops)
        self._bits = None

    def _plans(self):
        from .cublaslt import aux_shape
        t = self._table
        fwd = t.plan(self.key + "-fwd", (self.m, self.n, self.k, *self.fwd_layout, np.float32,
                                          np.float32, self.fwd_precision, 1, True, True,
                                          "relu_aux_bias"))
        bwd = t.plan(self.key + "-bwd", (self.m, self.n, self.k2, *self.bwd_layout,
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
        choice = self._table.choice(self.key)
        if isinstance(choice, str) and choice.startswith("lt:"):
            fi, bi = map(int, choice[3:].split(":"))
            plans = self._plans()
            if plans and fi < len(plans[0].algos) and bi < len(plans[1].algos):
                return plans, fi, bi
        return None

    def forward(self, run):
        def step(env):
            import cupy as cp
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
            if self.lt:
                (_, bwd), _, bi = self._algos()
                gz, db = cp.empty((self.m, self.n), np.float32), cp.empty(self.n, np.float32)
                bwd(gz, dense(env[self.g]), dense(env[self.w2]), bi, bias=db, aux=self._bits)
                env[self.gz], env[self.db] = gz, db
                return
            run(env)
            if self._table.choice(self.key) is None \
                    and not cp.cuda.get_current_stream().is_capturing():
                self._choose(env)
        return step

    def _choose(self, env):
        """Time both paths on this call's operands (into scratch outputs) and remember the
        faster: ``"fnx"`` or ``"lt:<forward algorithm>:<backward algorithm>"``."""
        import cupy as cp
        x, w, b, g, w2 = (dense(env[s]) for s in (self.x, self.w, self.b, self.g, self.w2))
        h_s, gh_s, gz_s = (cp.empty((self.m, self.n), np.float32) for _ in range(3))
        db_s = cp.empty(self.n, np.float32)
        column = self._column_on(env, {self.gh: gh_s, self.gz: gz_s, self.db: db_s})

        def fnx_path():
            gemm_table.dense_into(h_s, x, w, b, "relu", *self.fwd_layout, self.fwd_precision)
            gemm_table.matmul_into(gh_s, g, w2, *self.bwd_layout, self.bwd_precision)
            column()
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
        self._table.decide(self.key, candidates, self.flops, pick=_pair_or_fnx)

    def describe(self) -> str:
        choice = self._table.choice(self.key)
        path = ("cuBLASLt RELU_AUX_BIAS + DRELU_BGRAD" if isinstance(choice, str)
                and choice.startswith("lt:") else "fnx's kernels" if choice else
                "not yet timed")
        return (f"relu pair {self.m}x{self.n} (forward k={self.k}, backward k={self.k2}): "
                f"{path}")


class GeluBackward(_Choice):
    """The run-time half of a :class:`GeluMatch`: wraps the backward product's launch and its
    column kernel's, and runs either fnx's pair of launches or cuBLASLt's DGELU_BGRAD."""

    def __init__(self, match: GeluMatch, slot_of, precision_of, column_launch):
        p = match.product
        g, w2 = p.invars
        self.m, self.n = match.z.aval.shape
        self.layout = product_layout(p)[:2]
        self.k = g.aval.shape[0 if self.layout[0] else 1]
        self.precision = precision_of(p.params.get("precision"))
        self.g, self.w2, self.z = (slot_of(v) for v in (g, w2, match.z))
        self.gh, self.gz, self.db = (slot_of(v) for v in (
            p.outvars[0], match.total.invars[0], match.total.outvars[0]))
        super().__init__(f"dgelu-{self.m}x{self.n}x{self.k}"
                         f"{'T' if self.layout[0] else 'N'}{'T' if self.layout[1] else 'N'}"
                         f"-{self.precision}", column_launch, match.flops)

    def _plan(self):
        plan = self._table.plan(self.key, (self.m, self.n, self.k, *self.layout, np.float32,
                                            np.float32, self.precision, 1, True, True,
                                            "dgelu_bgrad"))
        return plan if plan is not None and plan.algos else None

    def product(self, run):
        def step(env):
            import cupy as cp
            choice = self._table.choice(self.key)
            if choice is None and not cp.cuda.get_current_stream().is_capturing():
                choice = self._choose(env)
            plan = self._plan() if isinstance(choice, str) and choice.startswith("lt:") \
                else None
            self.lt = plan is not None and int(choice[3:]) < len(plan.algos)
            if not self.lt:
                return run(env)
            gz, db = cp.empty((self.m, self.n), np.float32), cp.empty(self.n, np.float32)
            plan(gz, dense(env[self.g]), dense(env[self.w2]), int(choice[3:]), bias=db,
                 aux=dense(env[self.z]))
            env[self.gz], env[self.db] = gz, db
        return step

    def _choose(self, env) -> str:
        """Time both paths on this call's operands (into scratch outputs) and remember the
        faster: ``"fnx"`` or ``"lt:<algorithm>"``."""
        import cupy as cp
        g, w2, z = (dense(env[s]) for s in (self.g, self.w2, self.z))
        gh_s, gz_s = (cp.empty((self.m, self.n), np.float32) for _ in range(2))
        db_s = cp.empty(self.n, np.float32)
        column = self._column_on(env, {self.gh: gh_s, self.gz: gz_s, self.db: db_s})

        def fnx_backward():
            gemm_table.matmul_into(gh_s, g, w2, *self.layout, self.precision)
            column()
        candidates = {"fnx": fnx_backward}
        plan = self._plan()
        for i in range(min(len(plan.algos), 8) if plan is not None else 0):
            candidates[f"lt:{i}"] = lambda i=i: plan(gz_s, g, w2, i, bias=db_s, aux=z)
        return self._table.decide(self.key, candidates, self.flops)

    def describe(self) -> str:
        choice = self._table.choice(self.key)
        path = ("cuBLASLt DGELU_BGRAD" if isinstance(choice, str) and choice.startswith("lt:")
                else "fnx's kernels" if choice else "not yet timed")
        return f"gelu backward {self.m}x{self.n} (k={self.k}): {path}"

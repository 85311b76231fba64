"""Staging: a trace that records operations into a jaxpr.

``JaxprTrace`` is both the tracer behind ``make_jaxpr``/``jit`` and the partial evaluator behind
``linearize``. As a partial evaluator, an operation with at least one of the trace's own tracers
as input is *unknown* and is recorded as an equation; one without is *known* and runs on the
parent trace (at once, when the parent is the eager trace). Known values an unknown equation
reads become the jaxpr's constants. With ``stage_all`` (make_jaxpr, jit) every operation is
recorded, so a jitted function's constants are built inside the compiled program rather than
baked into it.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .core import (Array, ShapedArray, Trace, Tracer, current_trace, folding_on_host, get_aval,
                   set_current_trace)
from .errors import ConcretizationTypeError, user_frame
from .jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr, eval_jaxpr,
                    jaxpr_with_consts_as_args, literal_or_none)


class JaxprTracer(Tracer):
    __slots__ = ("_aval", "jaxpr_var")

    def __init__(self, trace, aval: ShapedArray, var: Var):
        self._trace = trace
        self._aval = aval
        self.jaxpr_var = var

    @property
    def aval(self):
        return self._aval

    def _trace_description(self):
        return self._trace.description

    def to_concrete(self):
        raise ConcretizationTypeError(self._concretization_message("A concrete value"))

    def __repr__(self):
        return f"JitTracer({self._aval.str_long()})"


_compile_time_eval = False


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside it, operations on concrete values run at once even while ``jit`` traces, so their
    results stay concrete (``int(...)`` works on them), as JAX's ``ensure_compile_time_eval``.

    >>> @fnx.jit
    ... def f(x):
    ...     with fnx.ensure_compile_time_eval():
    ...         n = int(fnx.numpy.arange(4).sum())
    ...     return x * n
    >>> f(2.0)
    Array(12., dtype=float32, weak_type=True)
    """
    global _compile_time_eval
    previous, _compile_time_eval = _compile_time_eval, True
    try:
        yield
    finally:
        _compile_time_eval = previous


class JaxprTrace(Trace):
    """Records unknown operations as equations; runs known ones on the parent trace."""

    def __init__(self, parent: Trace, description: str = "a traced function (make_jaxpr/jit)",
                 stage_all: bool = False):
        super().__init__(parent)
        self.description = description
        self.stage_all = stage_all
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.const_vars: dict[int, Var] = {}
        self.const_vals: list = []
        self._closed_over: list = []

    # -- values -> variables

    def new_arg(self, aval: ShapedArray) -> JaxprTracer:
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, aval, var)

    def getvar(self, x):
        if isinstance(x, Tracer) and self.is_own(x):
            return x.jaxpr_var
        lit = literal_or_none(x)
        if lit is not None:
            return lit
        key = id(x)
        var = self.const_vars.get(key)
        if var is None:
            var = self.const_vars[key] = Var(get_aval(x))
            if isinstance(x, np.ndarray):
                # a NumPy array closed over is read now, once: writing to it after tracing
                # changes no result (as in JAX); the original stays referenced so its id, the
                # key above, is not reused by another array during this trace
                self._closed_over.append(x)
                x = np.array(x)
            self.const_vals.append(x)
        return var

    # -- primitives

    def process_primitive(self, primitive, args, params):
        if _compile_time_eval and not any(isinstance(a, Tracer) for a in args):
            with set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        if self.stage_all:
            if not self._folds_to_literal(primitive, args, params):
                return self.stage(primitive, args, params)
            with set_current_trace(self.parent), folding_on_host():
                return primitive.bind(*args, **params)
        if not any(self.is_own(a) for a in args):
            with set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        if primitive.partial_eval is not None and not all(self.is_own(a) for a in args):
            return primitive.partial_eval(self, args, params)
        return self.stage(primitive, args, params)

    def _folds_to_literal(self, primitive, args, params) -> bool:
        """A scalar constant converted to a dtype (``convert(2.0)``) runs at once and appears in
        the jaxpr as a literal, as in JAX; every other operation is staged, on constants too
        (``log 2.0:f32[]``)."""
        if not getattr(primitive, "folds_constants", False):
            return False
        for a in args:
            if isinstance(a, Tracer):
                self.is_own(a)   # reports leaked tracers
                return False
            if literal_or_none(a) is None:
                return False
        out = primitive.rule("abstract_eval")(*(get_aval(a) for a in args), **params)
        return out.shape == ()

    def stage(self, primitive, args, params, source_info=None):
        avals = [get_aval(a) for a in args]
        out_avals = primitive.rule("abstract_eval")(*avals, **params)
        outs = out_avals if primitive.multiple_results else [out_avals]
        invars = [self.getvar(a) for a in args]
        tracers = [JaxprTracer(self, a, Var(a)) for a in outs]
        self.eqns.append(JaxprEqn(invars, [t.jaxpr_var for t in tracers], primitive, params,
                                  source_info or user_frame()))
        return tracers if primitive.multiple_results else tracers[0]

    # -- result

    def to_jaxpr(self, in_tracers, outs) -> ClosedJaxpr:
        invars = [t.jaxpr_var for t in in_tracers]
        outvars = [self.getvar(o) for o in outs]
        # consts are only those some equation or output actually reads
        used = {id(v) for e in self.eqns for v in e.invars} | {id(v) for v in outvars}
        by_var = {id(v): val for v, val in zip(self.const_vars.values(), self.const_vals)}
        constvars = [v for v in self.const_vars.values() if id(v) in used]
        consts = [by_var[id(v)] for v in constvars]
        return ClosedJaxpr(Jaxpr(constvars, invars, outvars, self.eqns), consts)


def trace_to_jaxpr(flat_fun, in_avals, parent: Trace | None = None,
                   description: str = "a traced function (make_jaxpr/jit)",
                   stage_all: bool = True):
    """Trace ``flat_fun(*tracers) -> list`` into a ClosedJaxpr on top of ``parent``.

    Returns ``(closed_jaxpr, out_avals)``. Closed-over tracers of outer traces become consts."""
    trace = JaxprTrace(parent if parent is not None else current_trace(), description,
                       stage_all)
    in_tracers = [trace.new_arg(a) for a in in_avals]
    with set_current_trace(trace):
        outs = flat_fun(*in_tracers)
    closed = trace.to_jaxpr(in_tracers, outs)
    return closed


def trace_to_jaxpr_dynamic(flat_fun, in_avals, description: str = "a traced function"):
    """Trace ``flat_fun`` on top of the current trace into ``(jaxpr, consts)``: a jaxpr with no
    constvars whose leading inputs receive ``consts``, the values it closes over, so that a
    higher-order primitive holding it passes them as explicit operands every transformation
    sees (JAX's pe.trace_to_jaxpr_dynamic, with the constants hoisted into arguments)."""
    closed = trace_to_jaxpr(flat_fun, in_avals, description=description)
    return jaxpr_with_consts_as_args(closed), closed.consts


def partial_eval_jaxpr_nounits(jaxpr: Jaxpr, unknowns, instantiate):
    """Split ``jaxpr`` (no constvars) by which of its inputs are unknown, as JAX's function of
    the same name: the known part runs now (or in an outer trace), the unknown part later.

    Returns ``(known, unknown, out_unknowns, res_avals)``:

    * ``known``: a ClosedJaxpr ``known_inputs -> [*known_outputs, *residuals]``
    * ``unknown``: a Jaxpr ``[*residuals, *unknown_inputs] -> unknown_outputs``
    * ``out_unknowns``: which outputs are unknown; ``instantiate`` (a bool, or one per output)
      forces known outputs to be unknown ones, which the known part then passes as residuals.

    The unknown inputs are the tracers of a partial evaluator running on top of a staging trace
    that owns the known inputs, so higher-order primitives inside split themselves with their own
    ``partial_eval`` rules, and the known values the unknown equations read become residuals.
    """
    n_out = len(jaxpr.outvars)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    known_tr = JaxprTrace(current_trace(), "the known part of a partially evaluated jaxpr",
                          stage_all=True)
    unknown_tr = JaxprTrace(known_tr, "the unknown part of a partially evaluated jaxpr")
    known_in, unknown_in, args = [], [], []
    for v, uk in zip(jaxpr.invars, unknowns):
        t = unknown_tr.new_arg(v.aval) if uk else known_tr.new_arg(v.aval)
        (unknown_in if uk else known_in).append(t)
        args.append(t)
    with set_current_trace(unknown_tr):
        outs = eval_jaxpr(jaxpr, [], *args)
    out_unknowns = [isinstance(o, Tracer) and unknown_tr.is_own(o) or bool(inst)
                    for o, inst in zip(outs, instantiate)]
    # a known output that must be unknown is read by the unknown jaxpr, so it becomes a residual
    unknown_closed = unknown_tr.to_jaxpr(unknown_in, [o for o, u in zip(outs, out_unknowns) if u])
    uj = unknown_closed.jaxpr
    pruned, used = dce_jaxpr(Jaxpr([], uj.constvars + uj.invars, uj.outvars, uj.eqns))
    kept = [(v, r) for v, r, u in zip(uj.constvars, unknown_closed.consts, used) if u]
    res_vars, residuals = [v for v, _ in kept], [r for _, r in kept]
    unknown_jaxpr = Jaxpr([], res_vars + uj.invars, pruned.outvars, pruned.eqns)
    known_closed = known_tr.to_jaxpr(known_in, [o for o, u in zip(outs, out_unknowns) if not u]
                                     + residuals)
    known_jaxpr, _ = dce_jaxpr(known_closed.jaxpr)
    res_avals = [v.aval for v in res_vars]
    return (ClosedJaxpr(known_jaxpr, known_closed.consts), unknown_jaxpr, out_unknowns,
            res_avals)


def is_known_concrete(x) -> bool:
    return type(x) is Array or not isinstance(x, Tracer)


__all__ = ["JaxprTrace", "JaxprTracer", "trace_to_jaxpr", "trace_to_jaxpr_dynamic", "partial_eval_jaxpr_nounits", "Literal"]

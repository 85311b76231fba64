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

from .core import Array, ShapedArray, Trace, Tracer, get_aval, set_current_trace
from .errors import ConcretizationTypeError, user_frame
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, literal_or_none


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
            self.const_vals.append(x)
        return var

    # -- primitives

    def process_primitive(self, primitive, args, params):
        if self.stage_all and not self._folds_to_literal(primitive, args, params):
            return self.stage(primitive, args, params)
        if not any(self.is_own(a) for a in args):
            with set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        if primitive.partial_eval is not None and not all(self.is_own(a) for a in args):
            return primitive.partial_eval(self, args, params)
        return self.stage(primitive, args, params)

    def _folds_to_literal(self, primitive, args, params) -> bool:
        """Scalar arithmetic on constants (``convert(2.0)``, ``1 - 0.5``) runs at once and appears
        in the jaxpr as a literal, as in JAX; anything bigger is staged."""
        if primitive.multiple_results or primitive.impl is not None:
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
    from .core import current_trace
    trace = JaxprTrace(parent if parent is not None else current_trace(), description,
                       stage_all)
    in_tracers = [trace.new_arg(a) for a in in_avals]
    with set_current_trace(trace):
        outs = flat_fun(*in_tracers)
    closed = trace.to_jaxpr(in_tracers, outs)
    return closed


def is_known_concrete(x) -> bool:
    return type(x) is Array or not isinstance(x, Tracer)


__all__ = ["JaxprTrace", "JaxprTracer", "trace_to_jaxpr", "Literal"]

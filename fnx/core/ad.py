"""Automatic differentiation: forward mode (jvp), linearize, transpose, and reverse mode (vjp).

Reverse mode is forward mode plus partial evaluation plus transposition, as in JAX: ``linearize``
runs the JVP trace on top of a staging ``JaxprTrace`` whose only unknowns are the tangents, so the
primal computation runs (concretely, when nothing outer is tracing) and the tangent computation is
recorded as a linear jaxpr; ``backward_pass`` transposes that jaxpr.
"""
from __future__ import annotations

# the rule-writing helpers are ad_util's; they stay reachable as ad.Zero, ad.defjvp, ...
import numpy as np

from .ad_util import (UndefinedPrimal, Zero, add_tangents, defjvp, defjvp_with_output,  # noqa
                      deflinear, instantiate, instantiate_as, is_undefined, tangent_aval,
                      zero_jvp, zeros_like_aval)
from .core import (Trace, Tracer, current_trace, full_lower_to_array, get_aval,
                   set_current_trace)
from .errors import ConcretizationTypeError
from .jaxpr import Jaxpr, Literal, Var, bind_equation, eval_jaxpr
from .partial_eval import JaxprTrace, JaxprTracer, trace_to_jaxpr_dynamic


# ---------------------------------------------------------------------------------------------
# Forward mode


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def __repr__(self):
        primal = repr(self.primal) if isinstance(self.primal, Tracer) else str(self.primal)
        if isinstance(self.tangent, JaxprTracer):   # reverse mode: the tangent is being staged
            return f"GradTracer(primal={primal}, " \
                f"typeof(tangent)={self.tangent.aval.str_short()})"
        tangent = self.tangent.aval.str_short() if isinstance(self.tangent, Zero) else self.tangent
        return f"JVPTracer(primal={primal}, tangent={tangent})"

    def to_concrete(self):
        p = self.primal
        if isinstance(p, Tracer):
            try:
                return p.to_concrete()
            except ConcretizationTypeError:
                raise ConcretizationTypeError(self._concretization_message(
                    "A concrete value")) from None
        return full_lower_to_array(p)


class JVPTrace(Trace):
    def unpack(self, x):
        if self.is_own(x):
            return x.primal, x.tangent
        return x, Zero(tangent_aval(get_aval(x)))

    def process_primitive(self, primitive, args, params):
        primals, tangents = zip(*map(self.unpack, args)) if args else ((), ())
        if all(isinstance(t, Zero) for t in tangents):
            with set_current_trace(self.parent):
                return primitive.bind(*primals, **params)
        jvp_rule = primitive.rule("jvp")
        with set_current_trace(self.parent):
            out_p, out_t = jvp_rule(list(primals), list(tangents), **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(out_p, out_t)]
        return JVPTracer(self, out_p, out_t)


def _as_array(x):
    """A Python number or NumPy value differentiated at becomes an Array, as in JAX: the
    rules of custom_jvp and custom_vjp functions see ``x.shape`` and ``x.dtype``."""
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
        return full_lower_to_array(x)
    return x


def jvp_flat(flat_fun, primals, tangents, instantiate_zeros=True):
    """Forward mode on flat lists. Returns ``(out_primals, out_tangents)``."""
    trace = JVPTrace(current_trace())
    in_tracers = [JVPTracer(trace, _as_array(p), t) for p, t in zip(primals, tangents)]
    with set_current_trace(trace):
        outs = flat_fun(*in_tracers)
    out_p, out_t = zip(*map(trace.unpack, outs)) if outs else ((), ())
    out_t = [instantiate(t) for t in out_t] if instantiate_zeros else list(out_t)
    return list(out_p), out_t


def jvp_jaxpr(jaxpr: Jaxpr, nonzeros, instantiate):
    """The JVP of ``jaxpr`` (no constvars) for tangents on the inputs marked in ``nonzeros``.

    Returns ``(jvp_jaxpr, consts, out_nonzeros)``; ``jvp_jaxpr`` takes
    ``[*consts, *primals, *nonzero_tangents]`` and returns ``[*outs, *nonzero_out_tangents]``.
    ``instantiate`` (a bool, or one per output) makes an output's tangent nonzero, of the
    output's dtype, even when it is zero."""
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.outvars)
    n = len(jaxpr.invars)
    out_nonzeros: list = []

    def fun(*xs):
        it = iter(xs[n:])
        ts = [next(it) if nz else Zero(tangent_aval(v.aval))
              for v, nz in zip(jaxpr.invars, nonzeros)]
        out_p, out_t = jvp_flat(lambda *a: eval_jaxpr(jaxpr, [], *a), list(xs[:n]), ts,
                                instantiate_zeros=False)
        out_t = [instantiate_as(t, v.aval) if inst else t
                 for t, v, inst in zip(out_t, jaxpr.outvars, instantiate)]
        out_nonzeros[:] = [not isinstance(t, Zero) for t in out_t]
        return [*out_p, *(t for t in out_t if not isinstance(t, Zero))]
    avals = [v.aval for v in jaxpr.invars] + \
        [tangent_aval(v.aval) for v, nz in zip(jaxpr.invars, nonzeros) if nz]
    new, consts = trace_to_jaxpr_dynamic(fun, avals, "the JVP of a jaxpr")
    return new, consts, list(out_nonzeros)


# ---------------------------------------------------------------------------------------------
# Linearize and transpose


class LinearFunction:
    """The linear map ``tangents -> out_tangents`` that ``linearize`` returns, as a jaxpr."""

    def __init__(self, jaxpr: Jaxpr, consts, in_avals, out_tangent_is_zero, out_avals):
        self.jaxpr = jaxpr
        self.consts = consts
        self.in_avals = in_avals
        self.out_is_zero = out_tangent_is_zero
        self.out_avals = out_avals

    def jvp(self, tangents):
        outs = iter(eval_jaxpr(self.jaxpr, self.consts, *tangents))
        return [zeros_like_aval(a) if z else next(outs)
                for z, a in zip(self.out_is_zero, self.out_avals)]

    def vjp(self, cotangents):
        cts = [ct for ct, z in zip(cotangents, self.out_is_zero) if not z]
        args = [UndefinedPrimal(a) for a in self.in_avals]
        return backward_pass(self.jaxpr, self.consts, args, cts)


def linearize_flat(flat_fun, primals):
    """Returns ``(out_primals, LinearFunction)`` for ``flat_fun`` at ``primals``."""
    pe = JaxprTrace(current_trace(), "the linearized (tangent) part of a grad/vjp")
    jt = JVPTrace(pe)
    avals = [tangent_aval(get_aval(p)) for p in primals]
    tangent_args = [pe.new_arg(a) for a in avals]
    in_tracers = [JVPTracer(jt, _as_array(p), t) for p, t in zip(primals, tangent_args)]
    with set_current_trace(jt):
        outs = flat_fun(*in_tracers)
    out_p, out_t = zip(*map(jt.unpack, outs)) if outs else ((), ())
    is_zero = [isinstance(t, Zero) for t in out_t]
    closed = pe.to_jaxpr(tangent_args, [t for t in out_t if not isinstance(t, Zero)])
    out_avals = [tangent_aval(get_aval(p)) for p in out_p]
    return list(out_p), LinearFunction(closed.jaxpr, closed.consts, avals, is_zero, out_avals)


def backward_pass(jaxpr: Jaxpr, consts, args, cotangents_out):
    """Transpose ``jaxpr`` with respect to the inputs given as ``UndefinedPrimal``.

    Equations that read no linear variable are evaluated forward first; the rest are walked in
    reverse, each primitive's transpose rule mapping output cotangents to input cotangents.
    Returns one cotangent (or Zero) per UndefinedPrimal input."""
    env: dict = dict(zip(jaxpr.constvars, consts))
    linear: set = set()
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            linear.add(v)
        else:
            env[v] = a

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    def is_linear(v):
        return isinstance(v, Var) and v in linear

    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(map(is_linear, eqn.invars)):
            linear_eqns.append(eqn)
            linear.update(eqn.outvars)
        else:
            outs = bind_equation(eqn, map(read, eqn.invars))
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))

    ct_env: dict = {}

    def write_ct(v, ct):
        if is_linear(v) and ct is not None and not isinstance(ct, Zero):
            ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

    for v, ct in zip(jaxpr.outvars, cotangents_out):
        write_ct(v, ct)
    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v, None) for v in eqn.outvars]
        if all(ct is None for ct in cts):
            continue
        cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
        invals = [UndefinedPrimal(v.aval) if is_linear(v) else read(v) for v in eqn.invars]
        cts_in = bind_equation(eqn, [cts if eqn.primitive.multiple_results else cts[0], *invals],
                               eqn.primitive.rule("transpose"))
        for v, ct in zip(eqn.invars, cts_in):
            write_ct(v, ct)
    return [ct_env.get(v, Zero(v.aval)) if is_undefined(a) else None
            for v, a in zip(jaxpr.invars, args)]


__all__ = ["Zero", "UndefinedPrimal", "JVPTrace", "JVPTracer", "jvp_flat", "jvp_jaxpr",
           "linearize_flat", "backward_pass", "defjvp", "deflinear", "zero_jvp", "instantiate",
           "add_tangents"]

"""Automatic differentiation: forward mode (jvp), linearize, transpose, and reverse mode (vjp).

Reverse mode is forward mode plus partial evaluation plus transposition, as in JAX: ``linearize``
runs the JVP trace on top of a staging ``JaxprTrace`` whose only unknowns are the tangents, so the
primal computation runs (concretely, when nothing outer is tracing) and the tangent computation is
recorded as a linear jaxpr; ``backward_pass`` transposes that jaxpr.
"""
from __future__ import annotations

from .core import ShapedArray, Trace, Tracer, current_trace, get_aval, set_current_trace
from .errors import ConcretizationTypeError
from .jaxpr import Jaxpr, Literal, Var
from .partial_eval import JaxprTrace


class Zero:
    """A symbolic zero tangent/cotangent of a given aval (never materialised unless needed)."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Marks a linear input of an equation being transposed."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type)


def zeros_like_aval(aval: ShapedArray):
    from . import lax
    return lax.full(aval.shape, 0, aval.dtype)


def instantiate(t):
    return zeros_like_aval(t.aval) if isinstance(t, Zero) else t


def add_tangents(a, b):
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    from . import lax
    return lax.add(a, b)


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
        from .partial_eval import JaxprTracer
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
        from .core import full_lower_to_array
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


def jvp_flat(flat_fun, primals, tangents, instantiate_zeros=True):
    """Forward mode on flat lists. Returns ``(out_primals, out_tangents)``."""
    trace = JVPTrace(current_trace())
    in_tracers = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
    with set_current_trace(trace):
        outs = flat_fun(*in_tracers)
    out_p, out_t = zip(*map(trace.unpack, outs)) if outs else ((), ())
    out_t = [instantiate(t) for t in out_t] if instantiate_zeros else list(out_t)
    return list(out_p), out_t


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
        from .jaxpr import eval_jaxpr
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
    in_tracers = [JVPTracer(jt, p, t) for p, t in zip(primals, tangent_args)]
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
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
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
        rule = eqn.primitive.rule("transpose")
        cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *invals, **eqn.params)
        for v, ct in zip(eqn.invars, cts_in):
            write_ct(v, ct)
    return [ct_env.get(v, Zero(v.aval)) if is_undefined(a) else None
            for v, a in zip(jaxpr.invars, args)]


# ---------------------------------------------------------------------------------------------
# Helpers for writing rules


def defjvp(primitive, *jvp_fns):
    """JVP from one function per operand: ``fn(tangent, *primals, **params) -> contribution``.

    ``None`` marks an operand the output does not depend on differentiably."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        acc = Zero(tangent_aval(get_aval(out)))
        for fn, t in zip(jvp_fns, tangents):
            if fn is not None and not isinstance(t, Zero):
                acc = add_tangents(acc, fn(t, *primals, **params))
        return out, acc
    primitive.jvp = rule
    return rule


def defjvp_with_output(primitive, jvp_fn):
    """JVP for unary ops whose derivative is cheapest from the output (exp, tanh, ...):
    ``jvp_fn(tangent, x, out, **params)``."""
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, **params)
        return out, jvp_fn(t, x, out, **params)
    primitive.jvp = rule


def deflinear(primitive, transpose_rule):
    """A primitive linear in all operands: the JVP applies it to the tangents."""
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        ts = [instantiate(t) for t in tangents]
        return out, primitive.bind(*ts, **params)
    primitive.jvp = jvp
    primitive.transpose = transpose_rule
    primitive.is_linear = True


def zero_jvp(primitive):
    """Outputs that are piecewise constant (comparisons, floor, sign, argmax, ...)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero(tangent_aval(get_aval(o))) for o in out]
        return out, Zero(tangent_aval(get_aval(out)))
    primitive.jvp = rule


__all__ = ["Zero", "UndefinedPrimal", "JVPTrace", "JVPTracer", "jvp_flat", "linearize_flat",
           "backward_pass", "defjvp", "deflinear", "zero_jvp", "instantiate", "add_tangents"]

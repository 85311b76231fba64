"""GPU-side decompositions: primitives rewritten into others the kernel generators fuse.

A rule traces a small function of the equation's operands into equations that replace it in the
lowered program only; the jaxpr users see and the CPU backend keep the primitive. Calls
(``custom_jvp_call``, ``custom_vjp_call``, ``remat``: their derivative rules matter to
transformations, not to evaluation) are spliced into the program, so their equations fuse with
the rest.
"""
from __future__ import annotations

from ..core import lax
from ..core.convolution import conv_general_dilated_p, im2col
from ..core.core import get_aval
from ..core.jaxpr import Var
from ..core.partial_eval import trace_to_jaxpr
from . import cudnn


def _pick_along_last_axis(x, idx, *, axis):
    """``take_along_axis(x, idx, -1)`` with one index per row as a masked sum over the row: a
    row reduction, so it joins the row kernel that computes ``x`` (a log-softmax, say)."""
    shape, nd = x.aval.shape, len(x.aval.shape)
    dims = tuple(range(nd))
    hit = lax.eq(lax.broadcasted_iota(idx.aval.dtype, shape, nd - 1),
                 lax.broadcast_in_dim(lax._clip_index(idx, shape[-1]), shape, dims))
    picked = lax.reduce_sum(lax.select_n(hit, lax.full(shape, 0, x.aval.dtype), x), (nd - 1,))
    return [lax.reshape(picked, idx.aval.shape)]


def _one_pick_per_row(eqn) -> bool:
    x, idx = eqn.invars
    return (isinstance(x, Var) and isinstance(idx, Var) and x.aval.dtype.kind == "f"
            and eqn.params["axis"] == len(x.aval.shape) - 1 and idx.aval.shape[-1] == 1)


def _convolution(lhs, rhs, **params):
    """A convolution cuDNN runs, with its operands and result transposed into the layouts it
    reads (fnx.cuda.cudnn); any other as im2col: pads, strided slices and one product."""
    if cudnn.takes(get_aval(lhs), get_aval(rhs), params):
        return cudnn.layout_rule(lhs, rhs, **params)
    return [im2col(lhs, rhs, **params)]


def _convolution_changes(eqn) -> bool:
    return not cudnn.supports(eqn) or cudnn.needs_layouts(eqn)


# primitive -> (applies(eqn), rule(*operand tracers, **eqn.params) -> list of results)
RULES = {lax.take_along_axis_p: (_one_pick_per_row, _pick_along_last_axis),
         conv_general_dilated_p: (_convolution_changes, _convolution)}


# higher-order primitives that, evaluated, call one jaxpr: name -> the param holding it
CALLS = {"jit": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
         "custom_vmap_call": "call_jaxpr", "remat": "jaxpr", "linear_call": "callee"}


def _spliced(e):
    """The equations of call ``e``'s jaxpr under the caller's names, or None where its results
    cannot take the call's names (one that is an argument, a literal, or repeated)."""
    inner = e.params[CALLS[e.primitive.name]]
    made = {v for ie in inner.eqns for v in ie.outvars}
    outs = inner.outvars
    if inner.constvars or len(set(outs)) != len(outs) or \
            not all(isinstance(v, Var) and v in made for v in outs):
        return None
    rename = dict(zip(inner.invars, e.invars))
    rename.update(zip(outs, e.outvars))
    spliced = []
    for ie in inner.eqns:
        new = [rename.get(v) or Var(v.aval) for v in ie.outvars]  # fresh: inlined twice
        rename.update(zip(ie.outvars, new))
        spliced.append(ie.replace(
            invars=[rename.get(v, v) if isinstance(v, Var) else v for v in ie.invars],
            outvars=new, source_info=ie.source_info or e.source_info))
    return decompose(spliced)


def decompose(eqns):
    """``eqns`` with every call spliced in and every equation a rule applies to replaced by
    the rule's equations."""
    out = []
    for e in eqns:
        if e.primitive.name in CALLS:
            spliced = _spliced(e)
            if spliced is not None:
                out += spliced
                continue
        rule = RULES.get(e.primitive)
        if rule is None or not rule[0](e):
            out.append(e)
            continue
        closed = trace_to_jaxpr(lambda *xs: rule[1](*xs, **e.params),
                                [v.aval for v in e.invars])
        sub = closed.jaxpr
        if closed.consts or sub.constvars:
            out.append(e)
            continue
        rename = dict(zip(sub.invars, e.invars))
        rename.update(zip(sub.outvars, e.outvars))
        for s in sub.eqns:
            out.append(s.replace(
                invars=[rename.get(v, v) if isinstance(v, Var) else v for v in s.invars],
                outvars=[rename.get(v, v) for v in s.outvars],
                source_info=e.source_info))
    return out

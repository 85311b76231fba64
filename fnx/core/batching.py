"""Vectorising map: a trace whose values carry one batch dimension (or none)."""
from __future__ import annotations

import contextlib
import threading

from .axis_env import extend_axis_env
from .core import (Trace, Tracer, current_trace, full_lower_to_array, get_aval,
                   set_current_trace)
from .errors import ConcretizationTypeError
from .jaxpr import eval_jaxpr
from .partial_eval import trace_to_jaxpr_dynamic
# moving and materialising batch axes takes lax's primitives, whose own vmap rules use these
from .lax.base import bdim_at_front, broadcast_batch, move_batch_axis, not_mapped  # noqa: F401
from .lax.base import reduce_sum

# an output axis for batch_flat: an output that varies over the mapped axis is summed over it,
# one that does not is returned as it is (vmap's out_axes=None with sum_match=True)
SUM_MATCH = "sum_match"


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    @property
    def aval(self):
        aval = get_aval(self.val)
        if self.bdim is None:
            return aval
        shape = list(aval.shape)
        del shape[self.bdim]
        return aval.update(shape=tuple(shape))

    def _trace_description(self):
        return "vmap"

    def __repr__(self):
        return f"VmapTracer(aval={self.aval.str_long()}, batched={get_aval(self.val).str_long()})"

    def to_concrete(self):
        if self.bdim is None and not isinstance(self.val, Tracer):
            return full_lower_to_array(self.val)
        raise ConcretizationTypeError(self._concretization_message("A concrete value"))


class _RuleAxis(threading.local):
    name = None


_rule_axis_state = _RuleAxis()


@contextlib.contextmanager
def _rule_axis(name):
    """While a batching rule runs, the vmaps it starts over inner jaxprs (jit, cond, scan
    bodies) map the same axis: they inherit its name, so collectives inside see it."""
    prev, _rule_axis_state.name = _rule_axis_state.name, name
    try:
        yield
    finally:
        _rule_axis_state.name = prev


_INHERIT = object()    # a rule's own vmap maps the axis of the vmap running the rule


class BatchTrace(Trace):
    def __init__(self, parent, axis_size: int, axis_name=_INHERIT):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = _rule_axis_state.name if axis_name is _INHERIT else axis_name

    def unpack(self, x):
        if self.is_own(x):
            return x.val, x.bdim
        return x, not_mapped

    def process_primitive(self, primitive, args, params):
        vals, dims = zip(*map(self.unpack, args)) if args else ((), ())
        if primitive.batch_named is not None:
            with set_current_trace(self.parent):
                out, out_dim = primitive.batch_named(list(vals), list(dims),
                                                     (self.axis_name, self.axis_size), **params)
            return BatchTracer(self, out, out_dim) if out_dim is not not_mapped else out
        if all(d is not_mapped for d in dims):
            with set_current_trace(self.parent):
                return primitive.bind(*vals, **params)
        rule = primitive.rule("batch")
        with set_current_trace(self.parent), _rule_axis(self.axis_name):
            if primitive.wants_axis_size:
                params = dict(params, axis_size=self.axis_size)
            out, out_dim = rule(list(vals), list(dims), **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) if d is not not_mapped else o
                    for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim) if out_dim is not not_mapped else out


def batch_flat(flat_fun, vals, dims, axis_size, out_dims_fn=None, axis_name=_INHERIT):
    """vmap on flat lists: ``dims[i]`` is the batch axis of ``vals[i]`` or None.
    ``out_dims_fn(outs)`` gives the wanted axes of the outputs ``flat_fun`` returned (their
    per-example values); without it every output is batched at axis 0."""
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    in_tracers = [BatchTracer(trace, v, d) if d is not not_mapped else v
                  for v, d in zip(vals, dims)]
    with set_current_trace(trace), extend_axis_env([(trace.axis_name, axis_size)]):
        outs = flat_fun(*in_tracers)
    out_dims = out_dims_fn(outs) if out_dims_fn is not None else [0] * len(outs)
    results = []
    for o, want in zip(outs, out_dims):
        val, have = trace.unpack(o)
        if want == SUM_MATCH:
            results.append(val if have is not_mapped else reduce_sum(val, (have,)))
        else:
            results.append(move_batch_axis(axis_size, have, want, val))
    return results


def batch_jaxpr(jaxpr, size, in_batched, instantiate):
    """``jaxpr`` (no constvars) vmapped over the inputs marked in ``in_batched`` (batch axis 0).

    Returns ``(batched_jaxpr, consts, out_batched)``, the jaxpr taking ``consts`` first; outputs
    are batched at axis 0 or not at all; ``instantiate`` (a bool, or one per output) batches an
    output even when it is unbatched."""
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.outvars)
    out_batched: list = []

    def fun(*xs):
        trace = BatchTrace(current_trace(), size)
        args = [BatchTracer(trace, x, 0) if b else x for x, b in zip(xs, in_batched)]
        with set_current_trace(trace):
            outs = eval_jaxpr(jaxpr, [], *args)
        res = []
        out_batched.clear()
        for o, inst in zip(outs, instantiate):
            val, d = trace.unpack(o)
            batched = d is not not_mapped or inst
            res.append(move_batch_axis(size, d, 0, val) if batched else val)
            out_batched.append(batched)
        return res
    avals = [v.aval.update(shape=(size,) + v.aval.shape) if b else v.aval
             for v, b in zip(jaxpr.invars, in_batched)]
    batched, consts = trace_to_jaxpr_dynamic(fun, avals, "a vmapped jaxpr")
    return batched, consts, list(out_batched)


def batch_size(vals, dims):
    for v, d in zip(vals, dims):
        if d is not not_mapped:
            return get_aval(v).shape[d]
    raise ValueError("no batched operand")


__all__ = ["BatchTrace", "BatchTracer", "batch_flat", "batch_jaxpr", "not_mapped",
           "bdim_at_front", "move_batch_axis", "broadcast_batch"]

"""Vectorising map: a trace whose values carry one batch dimension (or none)."""
from __future__ import annotations

import contextlib
import threading

from .core import Trace, Tracer, current_trace, get_aval, set_current_trace
from .errors import BatchingError, ConcretizationTypeError

not_mapped = None


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

    def to_concrete(self):
        if self.bdim is None and not isinstance(self.val, Tracer):
            from .core import full_lower_to_array
            return full_lower_to_array(self.val)
        raise ConcretizationTypeError(self._concretization_message("A concrete value"))


class _RuleAxis(threading.local):
    name = None


_rule_axis_state = _RuleAxis()


@contextlib.contextmanager
def _rule_axis(name, size):
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
        with set_current_trace(self.parent), _rule_axis(self.axis_name, self.axis_size):
            out, out_dim = rule(list(vals), list(dims), axis_size=self.axis_size, **params) \
                if getattr(rule, "wants_axis_size", False) else rule(list(vals), list(dims), **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) if d is not not_mapped else o
                    for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim) if out_dim is not not_mapped else out


def batch_flat(flat_fun, vals, dims, axis_size, out_dims_fn, axis_name=_INHERIT):
    """vmap on flat lists: ``dims[i]`` is the batch axis of ``vals[i]`` or None.
    ``out_dims_fn(n)`` gives the wanted output axes once the number of outputs is known."""
    from .collectives import extend_axis_env
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    in_tracers = [BatchTracer(trace, v, d) if d is not not_mapped else v
                  for v, d in zip(vals, dims)]
    with set_current_trace(trace), extend_axis_env([(trace.axis_name, axis_size)]):
        outs = flat_fun(*in_tracers)
    out_dims = out_dims_fn(len(outs))
    results = []
    for o, want in zip(outs, out_dims):
        val, have = trace.unpack(o)
        results.append(move_batch_axis(axis_size, have, want, val))
    return results


def move_batch_axis(axis_size, src, dst, x):
    """Move ``x``'s batch axis from ``src`` to ``dst`` (broadcasting when ``src`` is None)."""
    from . import lax
    if dst is not_mapped:
        if src is not_mapped:
            return x
        raise BatchingError("vmap out_axes=None, but the output depends on the mapped axis")
    if src is not_mapped:
        return broadcast_batch(x, axis_size, dst)
    return lax.moveaxis(x, src, dst) if src != dst else x


def broadcast_batch(x, size, axis):
    from . import lax
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(i for i in range(len(shape)) if i != axis)
    return lax.broadcast_in_dim(x, tuple(shape), dims)


def bdim_at_front(x, bdim, size):
    """``x`` with its batch axis first, materialising it when unbatched."""
    from . import lax
    if bdim is not_mapped:
        return broadcast_batch(x, size, 0)
    return lax.moveaxis(x, bdim, 0) if bdim != 0 else x


def batch_size(vals, dims):
    for v, d in zip(vals, dims):
        if d is not not_mapped:
            return get_aval(v).shape[d]
    raise ValueError("no batched operand")


__all__ = ["BatchTrace", "BatchTracer", "batch_flat", "not_mapped", "bdim_at_front",
           "move_batch_axis", "broadcast_batch"]

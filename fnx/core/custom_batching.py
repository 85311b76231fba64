"""User-defined batching (JAX's ``jax.custom_batching``): ``custom_vmap`` and
``sequential_vmap``, on one higher-order primitive, ``custom_vmap_call``.

``custom_vmap_call`` holds the traced function (``call_jaxpr``, its closed-over values passed
as the first ``num_consts`` operands) and a rule on flat lists,
``rule(axis_size, in_batched, args) -> (outs, out_batched)``, the arguments batched at axis 0.
Eagerly and under jit it is the function; under vmap the rule replaces it. Its JVP is a new
``custom_vmap_call`` of the function's JVP whose rule is the JVP of the user's rule, so a vmap
of a jvp still batches through the rule, as in JAX. Reverse mode is refused, as in JAX: wrap
the function in ``custom_vjp`` to give it a gradient.
"""
from __future__ import annotations

import functools

from . import ad
from . import lax as _lax
from .axis_env import extend_axis_env
from .batching import BatchTrace, BatchTracer, batch_size, move_batch_axis, not_mapped
from .control_flow import map as _lax_map
from .core import current_trace, get_aval, set_current_trace
from .custom_derivatives import (_batch_dims_to_front, _resolve_kwargs, _runs_as_python,
                                 forward_attr)
from .errors import BatchingError, GradError, ShapeError
from .jaxpr import eval_jaxpr
from .partial_eval import trace_to_jaxpr_dynamic
from .api_util import flatten_fun
from .pytree import tree_flatten, tree_map, tree_unflatten
from .traceback_util import api_boundary


def _name(f) -> str:
    return getattr(f, "__name__", str(f))


class custom_vmap:
    """A function whose batching under ``vmap`` is the rule set with :meth:`def_vmap`
    (everywhere else it is the function itself).

    >>> @fnx.custom_batching.custom_vmap
    ... def f(x, y):
    ...     return x + y
    >>> @f.def_vmap
    ... def f_vmap_rule(axis_size, in_batched, xs, ys):
    ...     return xs * ys, True        # batched, f multiplies
    >>> f(2.0, 3.0), fnx.vmap(f)(jnp.arange(3.0), jnp.arange(1.0, 4.0))
    (5.0, Array([0., 2., 6.], dtype=float32))
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    __getattr__ = forward_attr

    def def_vmap(self, vmap_rule):
        """Set the rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``:
        ``in_batched`` is a list with a pytree of booleans per argument, each batched argument
        has its batch axis first, and ``out_batched`` is a pytree of booleans like ``out``.
        Returns the rule, so it works as a decorator.

        >>> g = fnx.custom_batching.custom_vmap(lambda x: x)
        >>> rule = g.def_vmap(lambda n, in_batched, xs: (xs.sum(0), False))
        >>> fnx.vmap(g)(jnp.arange(3.0))    # the rule's unbatched output is broadcast
        Array([3., 3., 3.], dtype=float32)
        """
        self.vmap_rule = vmap_rule
        return vmap_rule

    @api_boundary
    def __call__(self, *args, **kwargs):
        name = _name(self.fun)
        try:
            args = _resolve_kwargs(self.fun, args, kwargs)
        except TypeError as e:
            raise TypeError(f"The input arguments to the custom_vmap-decorated function {name} "
                            f"could not be resolved to positional-only arguments: {e}") from e
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 "using def_vmap.")
        if _runs_as_python(args):
            return self.fun(*args)
        leaves, in_tree = tree_flatten(args)
        flat, out_tree = flatten_fun(self.fun, in_tree)
        jaxpr, consts = trace_to_jaxpr_dynamic(flat, [get_aval(x) for x in leaves],
                                               f"the custom_vmap function {name}")
        rule = _flat_rule(self.vmap_rule, len(consts), in_tree, out_tree(), name)
        outs = custom_vmap_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, rule=rule)
        return tree_unflatten(out_tree(), outs)


def _flat_rule(user_rule, num_consts, in_tree, out_tree, name):
    """The user's pytree rule as a rule on flat lists (the consts first, never batched)."""
    rule_name = _name(user_rule)

    def rule(axis_size, in_batched, args):
        if any(in_batched[:num_consts]):
            raise BatchingError(f"the custom_vmap function {name} closes over a value batched "
                                "by this vmap; pass it to the function as an argument")
        py_args = tree_unflatten(in_tree, args[num_consts:])
        py_batched = tree_unflatten(in_tree, list(in_batched[num_consts:]))
        result = user_rule(axis_size, list(py_batched), *py_args)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError(f"the custom vmap rule {rule_name} must return a pair (out, "
                            f"out_batched), got {result!r:.200}")
        outs, tree = tree_flatten(result[0])
        flags, flags_tree = tree_flatten(result[1])
        if tree != flags_tree:
            raise ValueError(f"structure of output value and output batching specification "
                             f"returned by custom vmap rule ({rule_name}) do not match.\n"
                             f"Output values: {tree}\nBatching spec: {flags_tree}")
        if tree != out_tree:
            raise ValueError(f"structure of output returned by custom vmap rule ({rule_name}) "
                             f"does not match that of original custom-vmapped function.\n"
                             f"Original output: {out_tree}\nRule output: {tree}")
        return outs, [bool(b) for b in flags]
    rule.__name__ = rule_name
    return rule


custom_vmap_call_p = _lax.primitive("custom_vmap_call", multiple_results=True)


def _impl(*args, call_jaxpr, rule):
    return eval_jaxpr(call_jaxpr, [], *args)


def _batch(vals, dims, *, call_jaxpr, rule):
    size = batch_size(vals, dims)
    vals, dims = _batch_dims_to_front(vals, dims)
    outs, out_batched = rule(size, [d is not None for d in dims], list(vals))
    for k, (o, b, aval) in enumerate(zip(outs, out_batched, call_jaxpr.out_avals)):
        want = (size,) + aval.shape if b else aval.shape
        if tuple(get_aval(o).shape) != want:
            raise ShapeError(f"the custom vmap rule {_name(rule)} returned output {k} of shape "
                             f"{tuple(get_aval(o).shape)} marked "
                             f"{'batched' if b else 'unbatched'}; expected {want}")
    return list(outs), [0 if b else not_mapped for b in out_batched]


def _vmap_unrestricted(f, vals, in_batched, size):
    """``f`` (flat list -> flat list) vmapped over the values marked in ``in_batched`` (at
    axis 0); returns the outputs, batched at 0 or not, and which are batched."""
    trace = BatchTrace(current_trace(), size)
    tracers = [BatchTracer(trace, v, 0) if b else v for v, b in zip(vals, in_batched)]
    with set_current_trace(trace), extend_axis_env([(trace.axis_name, size)]):
        outs = f(tracers)
    results, batched = [], []
    for o in outs:
        val, d = trace.unpack(o)
        results.append(move_batch_axis(size, d, 0, val) if d is not not_mapped else val)
        batched.append(d is not not_mapped)
    return results, batched


def _jvp_of_rule(rule):
    """The rule of the JVP's custom_vmap_call (operands ``[*primals, *tangents]``): the user's
    rule under forward mode, on the arguments batched in both primal and tangent, vmapped
    normally over those batched in only one of them (JAX's jvp_of_rule_rule)."""
    def jvp_rule(axis_size, in_batched, args):
        n = len(args) // 2
        ps_b, ts_b = in_batched[:n], in_batched[n:]
        both = [p and t for p, t in zip(ps_b, ts_b)]
        extra = [p and not t for p, t in zip(ps_b, ts_b)] + \
                [t and not p for p, t in zip(ps_b, ts_b)]
        rule_batched: list = []

        def to_jvp(*primals):
            outs, out_b = rule(axis_size, both, list(primals))
            rule_batched[:] = out_b
            return outs

        def jvp_both(xs):
            out_p, out_t = ad.jvp_flat(to_jvp, xs[:n], xs[n:])
            return [*out_p, *out_t]
        outs, extra_out = _vmap_unrestricted(jvp_both, args, extra, axis_size)
        return outs, [r or e for r, e in zip(rule_batched * 2, extra_out)]
    jvp_rule.__name__ = f"jvp({_name(rule)})"
    return jvp_rule


def _jvp(primals, tangents, *, call_jaxpr, rule):
    tangents = [ad.instantiate(t) for t in tangents]
    jvp_jaxpr, consts, _ = ad.jvp_jaxpr(call_jaxpr, [True] * len(primals), True)
    jvp_rule = _jvp_of_rule(rule)
    nc = len(consts)

    def rule_with_consts(axis_size, in_batched, args):
        if any(in_batched[:nc]):
            raise BatchingError("a constant of a custom_vmap function's JVP is batched")
        return jvp_rule(axis_size, in_batched[nc:], args[nc:])
    rule_with_consts.__name__ = jvp_rule.__name__
    outs = custom_vmap_call_p.bind(*consts, *primals, *tangents, call_jaxpr=jvp_jaxpr,
                                   rule=rule_with_consts if nc else jvp_rule)
    m = len(outs) // 2
    return outs[:m], outs[m:]


def _refuse_reverse_mode(trace, args, params):
    raise GradError("custom_vmap functions do not support reverse-mode autodiff; to give one "
                    "a gradient, wrap it in fnx.custom_vjp (custom_vjp outside, custom_vmap "
                    "inside), as in JAX")


custom_vmap_call_p.impl = _impl
custom_vmap_call_p.abstract_eval = lambda *avals, call_jaxpr, rule: call_jaxpr.out_avals
custom_vmap_call_p.batch = _batch
custom_vmap_call_p.jvp = _jvp
custom_vmap_call_p.partial_eval = _refuse_reverse_mode


def sequential_vmap(f):
    """``f`` as a :class:`custom_vmap` whose batching is a loop over the batch (``lax.map``),
    for functions with no batched form (a host callback, say).

    >>> @fnx.custom_batching.sequential_vmap
    ... def f(x):
    ...     return x + 1
    >>> fnx.vmap(f)(jnp.arange(3))
    Array([1, 2, 3], dtype=int32)
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        leaves, tree = tree_flatten(list(args))
        flags = tree_flatten(list(in_batched))[0]

        def one(mapped):
            it = iter(mapped)
            return f(*tree_unflatten(tree, [next(it) if b else x
                                            for x, b in zip(leaves, flags)]))
        out = _lax_map(one, [x for x, b in zip(leaves, flags) if b])
        return out, tree_map(lambda _: True, out)
    return f


__all__ = ["custom_vmap", "sequential_vmap"]

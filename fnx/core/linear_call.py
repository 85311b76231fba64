"""``linear_call``: a linear function called together with a transpose the user wrote, as
``jax.custom_derivatives.linear_call``.

The call stages as ``linear_call`` holding the function's jaxpr (``callee``) and a thunk that
traces the transpose on demand. Its JVP applies the same call to the tangents (the function is
linear in them); its transpose is another ``linear_call``, of the user's transpose, whose own
transpose is the original function again; evaluated, it runs ``callee``.
"""
from __future__ import annotations

import functools

from . import batching
from . import lax as _lax
from .ad import Zero, instantiate, is_undefined
from .api_util import flatten_fun
from .core import get_aval
from .errors import FnxError
from .jaxpr import eval_jaxpr
from .partial_eval import trace_to_jaxpr_dynamic
from .pytree import tree_flatten, tree_unflatten


class LinearCallResidualError(FnxError, TypeError):
    """A ``linear_call``'s residual arguments were differentiated or transposed: the call is
    linear in its linear arguments only."""


def _traced(fun, in_tree, avals, what):
    """``fun`` over pytrees traced at ``avals`` (its leaves): ``(jaxpr, consts, out_tree)``."""
    flat, out_tree = flatten_fun(fun, in_tree)
    jaxpr, consts = trace_to_jaxpr_dynamic(flat, avals, what)
    return jaxpr, consts, out_tree()


def linear_call(fun, fun_transpose, residual_args, linear_args):
    """``fun(residual_args, linear_args)``, a function linear in ``linear_args``, whose
    transpose (reverse mode, ``linear_transpose``) is ``fun_transpose(residual_args, ct)``,
    a function of the output's cotangent giving one of the structure of ``linear_args``.

    >>> def scale(r, x):
    ...     return x / r
    >>> def unscale_twice(r, ct):     # not the true transpose: it is the one used
    ...     return 2 * ct / r
    >>> f = lambda x: linear_call(scale, unscale_twice, 4.0, x)
    >>> f(8.0), fnx.grad(f)(1.0)
    (Array(2., dtype=float32, weak_type=True), Array(0.5, dtype=float32, weak_type=True))
    """
    res_leaves, res_tree = tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_flatten(linear_args)
    in_tree = tree_flatten((residual_args, linear_args))[1]
    res_avals = [get_aval(x) for x in res_leaves]
    lin_avals = [get_aval(x) for x in lin_leaves]
    callee, consts, out_tree = _traced(fun, in_tree, res_avals + lin_avals,
                                       "linear_call's function")
    out_avals = callee.out_avals
    transpose_in_tree = tree_flatten((residual_args, tree_unflatten(out_tree, out_avals)))[1]

    @functools.lru_cache(maxsize=None)
    def transpose_thunk():
        jaxpr, t_consts, t_out_tree = _traced(fun_transpose, transpose_in_tree,
                                              res_avals + list(out_avals),
                                              "linear_call's transpose")
        if t_out_tree != lin_tree:
            raise TypeError("transpose output pytree structure must match that of linear "
                            f"inputs, got output structure {t_out_tree} and input structure "
                            f"{lin_tree}.")
        return jaxpr, t_consts

    outs = linear_call_p.bind(*consts, *res_leaves, *lin_leaves, callee=callee,
                              transpose_thunk=transpose_thunk, num_callee_consts=len(consts),
                              num_res=len(res_leaves))
    return tree_unflatten(out_tree, outs)


linear_call_p = _lax.primitive("linear_call", multiple_results=True)


def _impl(*args, callee, transpose_thunk, num_callee_consts, num_res):
    return eval_jaxpr(callee, [], *args)


def _jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
    fixed = num_callee_consts + num_res
    if any(not isinstance(t, Zero) for t in tangents[:fixed]):
        raise LinearCallResidualError(
            "linear_call is differentiated with respect to its residual arguments (or a value "
            "its function closes over); it is linear in its linear arguments only: pass "
            "values to differentiate as linear arguments")
    params = dict(callee=callee, transpose_thunk=transpose_thunk,
                  num_callee_consts=num_callee_consts, num_res=num_res)
    outs = linear_call_p.bind(*primals, **params)
    out_tangents = linear_call_p.bind(*primals[:fixed], *map(instantiate, tangents[fixed:]),
                                      **params)
    return outs, out_tangents


def _transpose(cts, *args, callee, transpose_thunk, num_callee_consts, num_res):
    transposed, t_consts = transpose_thunk()
    fixed = num_callee_consts + num_res
    if any(is_undefined(a) for a in args[:fixed]):
        raise LinearCallResidualError(
            "linear_call is transposed with respect to its residual arguments; it is linear in "
            "its linear arguments only")
    consts, residuals = args[:num_callee_consts], args[num_callee_consts:fixed]
    cts = [instantiate(ct) for ct in cts]

    @functools.lru_cache(maxsize=None)
    def back_thunk():       # the transpose of the transpose: the function itself
        return callee, list(consts)
    cts_in = linear_call_p.bind(*t_consts, *residuals, *cts, callee=transposed,
                                transpose_thunk=back_thunk, num_callee_consts=len(t_consts),
                                num_res=num_res)
    return [None] * fixed + list(cts_in)


def _batch(vals, dims, *, callee, transpose_thunk, num_callee_consts, num_res):
    # linear arguments all batched at 0, so the outputs, the transpose's cotangent inputs and
    # its outputs are too; residuals keep their dims
    size = batching.batch_size(vals, dims)
    fixed = num_callee_consts + num_res
    vals = [v if d in (None, 0) else _lax.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = [None if d is None else 0 for d in dims]
    vals[fixed:] = [batching.bdim_at_front(v, d, size) for v, d in zip(vals[fixed:], dims[fixed:])]
    dims[fixed:] = [0] * (len(vals) - fixed)
    batched, consts, _ = batching.batch_jaxpr(callee, size, [d is not None for d in dims], True)
    res_dims = dims[num_callee_consts:fixed]

    @functools.lru_cache(maxsize=None)
    def batched_transpose():
        transposed, t_consts = transpose_thunk()
        t_dims = [None] * len(t_consts) + res_dims + [0] * len(callee.outvars)
        t_batched, t_batch_consts, _ = batching.batch_jaxpr(
            transposed, size, [d is not None for d in t_dims], True)
        return t_batched, list(t_batch_consts) + list(t_consts)
    outs = linear_call_p.bind(*consts, *vals, callee=batched, transpose_thunk=batched_transpose,
                              num_callee_consts=len(consts) + num_callee_consts, num_res=num_res)
    return outs, [0] * len(outs)


linear_call_p.impl = _impl
linear_call_p.abstract_eval = lambda *avals, callee, **_: callee.out_avals
linear_call_p.jvp = _jvp
linear_call_p.transpose = _transpose
linear_call_p.batch = _batch

__all__ = ["LinearCallResidualError", "linear_call", "linear_call_p"]

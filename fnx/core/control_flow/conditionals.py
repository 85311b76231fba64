"""``cond`` and ``switch`` on the ``cond`` primitive, with its rules for every transformation."""
from __future__ import annotations

import numpy as np

from .. import lax as _lax
from .. import ad, batching, dtypes
from ..ad import UndefinedPrimal, Zero, backward_pass, instantiate_as, is_undefined, tangent_aval
from ..core import get_aval, set_current_trace
from ..jaxpr import Jaxpr, JaxprTypeError, Var, eval_jaxpr, jaxpr_with_consts_as_args
from ..partial_eval import partial_eval_jaxpr_nounits, trace_to_jaxpr_dynamic
from ..pytree import tree_flatten, tree_unflatten
from .common import (ControlFlowTypeError, _Runner, _adopt, _arrays, _aval_or_error, _backend_of,
                     _buffers, _check_operands, _join_consts, _leaf_paths, _trace_tree_fun,
                     _typematch, _weak_adopts)
from .refs import ClosesOverRefs, bound, current_values, finding_refs, write_back


# cond: cond_p(index, *operands, branches) runs branches[index](*operands)

cond_p = _lax.primitive("cond", multiple_results=True)


def _cond_abstract_eval(index, *ops, branches):
    if index.shape != () or not dtypes.is_int(index.dtype):
        raise JaxprTypeError(f"cond index must be an integer scalar, got {index.str_short()}",
                             source=None)
    for i, b in enumerate(branches):
        _check_operands(f"cond branch {i}", b.invars, ops)
        if len(b.outvars) != len(branches[0].outvars) or not all(
                _typematch(x, y) for x, y in zip(b.out_avals, branches[0].out_avals)):
            raise JaxprTypeError(f"cond branch {i} returns {_avals_str(b.out_avals)}, branch 0 "
                                 f"returns {_avals_str(branches[0].out_avals)}", source=None)
    return _cond_out_avals(branches)


def _cond_out_avals(branches):
    return [a.update(weak_type=all(b.outvars[k].aval.weak_type for b in branches))
            for k, a in enumerate(branches[0].out_avals)]


def _avals_str(avals):
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _cond_impl(index, *ops, branches):
    backend = _backend_of((index, *ops))
    i = min(max(int(index), 0), len(branches) - 1)
    branch = branches[i]
    outs = _Runner(branch, backend)(*_buffers(ops, branch.in_avals, backend))
    return _arrays(outs, _cond_out_avals(branches), backend)


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    ops_nz = [not isinstance(t, Zero) for t in tangents[1:]]
    out_nz = [False] * len(branches[0].outvars)
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, ad.jvp_jaxpr(b, ops_nz, out_nz)[2])]
    pieces = []
    for b in branches:
        j, consts, _ = ad.jvp_jaxpr(b, ops_nz, out_nz)
        pieces.append((j, consts))
    jaxprs, consts = _join_consts(pieces)
    tangents_in = [t for t in tangents[1:] if not isinstance(t, Zero)]
    outs = cond_p.bind(index, *consts, *ops, *tangents_in, branches=tuple(jaxprs))
    n = len(branches[0].outvars)
    it = iter(outs[n:])
    out_t = [next(it) if nz else Zero(tangent_aval(a))
             for nz, a in zip(out_nz, branches[0].out_avals)]
    return outs[:n], out_t


def _cond_batch(vals, dims, *, branches):
    size = batching.batch_size(vals, dims)
    index, ops = vals[0], vals[1:]
    idx_dim, op_dims = dims[0], dims[1:]
    ops = [batching.bdim_at_front(x, d, size) if d is not None else x
           for x, d in zip(ops, op_dims)]
    in_b = [d is not None for d in op_dims]
    if idx_dim is not None:
        # examples take different branches: run every branch on all of them and select
        index = batching.bdim_at_front(index, idx_dim, size)
        results = [batching.batch_flat(lambda *a, b=b: eval_jaxpr(b, [], *a), ops,
                                       [0 if b_ else None for b_ in in_b], size)
                   for b in branches]
        outs = []
        for k in range(len(branches[0].outvars)):
            cases = [r[k] for r in results]
            shape = get_aval(cases[0]).shape
            which = index if len(shape) == 1 else _lax.broadcast_in_dim(index, shape, (0,))
            outs.append(_lax.select_n(which, *cases))
        return outs, [0] * len(outs)
    out_b = [False] * len(branches[0].outvars)
    for b in branches:
        out_b = [a or c for a, c in zip(out_b, batching.batch_jaxpr(b, size, in_b, out_b)[2])]
    pieces = []
    for b in branches:
        j, consts, _ = batching.batch_jaxpr(b, size, in_b, out_b)
        pieces.append((j, consts))
    jaxprs, consts = _join_consts(pieces)
    outs = cond_p.bind(index, *consts, *ops, branches=tuple(jaxprs))
    return outs, [0 if b else None for b in out_b]


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, ops = args[0], list(args[1:])
    if trace.is_own(index):      # which branch runs is itself unknown: stage the whole cond
        return trace.stage(cond_p, args, params)
    ops_uk = [trace.is_own(a) for a in ops]
    n_out = len(branches[0].outvars)
    out_uk = [False] * n_out
    for b in branches:
        out_uk = [a or c for a, c in
                  zip(out_uk, partial_eval_jaxpr_nounits(b, ops_uk, out_uk)[2])]
    splits = [partial_eval_jaxpr_nounits(b, ops_uk, out_uk) for b in branches]
    all_res = [a for s in splits for a in s[3]]
    n_known = n_out - sum(out_uk)

    # Known branches return every branch's residuals: their own, and zeros for the others'.
    known_ops = [a for a, u in zip(ops, ops_uk) if not u]
    pieces, offset = [], 0
    for known, _, _, res_avals in splits:
        kj = jaxpr_with_consts_as_args(known)
        lo, hi = offset, offset + len(res_avals)
        offset = hi

        def known_branch(*xs, kj=kj, lo=lo, hi=hi):
            outs = eval_jaxpr(kj, [], *xs)
            own = iter(outs[n_known:])
            res = [next(own) if lo <= r < hi else ad.zeros_like_aval(a)
                   for r, a in enumerate(all_res)]
            return [*outs[:n_known], *res]
        j, consts = trace_to_jaxpr_dynamic(known_branch, [v.aval for v in kj.invars],
                                           "the known part of a cond branch")
        # the branch's own consts stay leading arguments, after the newly traced ones
        pieces.append((j, consts + list(known.consts)))
    known_jaxprs, known_consts = _join_consts(pieces)
    known_outs = []
    if known_jaxprs[0].outvars:
        with set_current_trace(trace.parent):
            known_outs = cond_p.bind(index, *known_consts, *known_ops,
                                     branches=tuple(known_jaxprs))
    residuals = known_outs[n_known:]

    unknown_outs = []
    if any(out_uk):
        unknown_jaxprs, offset = [], 0
        for _, uj, _, res_avals in splits:
            k = len(res_avals)
            before = [Var(a) for a in all_res[:offset]]
            after = [Var(a) for a in all_res[offset + k:]]
            unknown_jaxprs.append(Jaxpr([], before + uj.invars[:k] + after + uj.invars[k:],
                                        uj.outvars, uj.eqns))
            offset += k
        unknown_ops = [a for a, u in zip(ops, ops_uk) if u]
        unknown_outs = trace.stage(cond_p, [index, *residuals, *unknown_ops],
                                   {"branches": tuple(unknown_jaxprs)})
    known_it, unknown_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(unknown_it) if u else next(known_it) for u in out_uk]


def _cond_transpose(cts, index, *ops, branches):
    assert not is_undefined(index)
    linear = [is_undefined(x) for x in ops]
    res = [x for x, lin in zip(ops, linear) if not lin]
    cts_nz = [ct for ct in cts if not isinstance(ct, Zero)]
    if not cts_nz:
        return [None] + [Zero(x.aval) if lin else None for x, lin in zip(ops, linear)]
    ct_nz_flags = [not isinstance(ct, Zero) for ct in cts]
    out_avals = branches[0].out_avals
    cts_nz = [instantiate_as(ct, a) for ct, a, nz in zip(cts, out_avals, ct_nz_flags) if nz]
    pieces = []
    for b in branches:
        def transposed(*xs, b=b):
            r_it, c_it = iter(xs[:len(res)]), iter(xs[len(res):])
            args = [UndefinedPrimal(v.aval) if lin else next(r_it)
                    for v, lin in zip(b.invars, linear)]
            full_cts = [next(c_it) if nz else Zero(a)
                        for nz, a in zip(ct_nz_flags, out_avals)]
            cts_in = backward_pass(b, [], args, full_cts)
            return [instantiate_as(c, v.aval) for c, v, lin in zip(cts_in, b.invars, linear)
                    if lin]
        avals = [get_aval(x) for x in res] + [get_aval(c) for c in cts_nz]
        pieces.append(trace_to_jaxpr_dynamic(transposed, avals, "the transpose of a cond branch"))
    jaxprs, consts = _join_consts(pieces)
    outs = iter(cond_p.bind(index, *consts, *res, *cts_nz, branches=tuple(jaxprs)))
    return [None] + [next(outs) if lin else None for lin in linear]


cond_p.abstract_eval = _cond_abstract_eval
cond_p.impl = _cond_impl
cond_p.jvp = _cond_jvp
cond_p.batch = _cond_batch
cond_p.partial_eval = _cond_partial_eval
cond_p.transpose = _cond_transpose


def _check_branch_outputs(names, trees, jaxprs):
    first = names[0]
    for name, tree, jaxpr in zip(names[1:], trees[1:], jaxprs[1:]):
        if tree != trees[0]:
            raise ControlFlowTypeError(
                f"{first} and {name} must return the same structure (pytree), but {first} "
                f"returns {trees[0]} and {name} returns {tree}")
        diffs = []
        for path, a, b in zip(_leaf_paths(trees[0], "output"), jaxprs[0].out_avals,
                              jaxpr.out_avals):
            if not _typematch(a, b):
                diffs.append(f"  {path}: {a.str_short()} (shape {a.shape}) from {first} but "
                             f"{b.str_short()} (shape {b.shape}) from {name}")
        if diffs:
            raise ControlFlowTypeError(
                f"{first} and {name} outputs must have identical types (shapes and dtypes), "
                "but they differ:\n" + "\n".join(diffs))


def _trace_branches(funs, names, operands):
    leaves, in_tree = tree_flatten(operands)
    avals = [get_aval(x) for x in leaves]
    traced = [_trace_tree_fun(f, in_tree, avals, f"the {name} of a lax.cond/switch")
              for f, name in zip(funs, names)]
    targets = _branch_output_dtypes([t[2] for t in traced], [t[0].out_avals for t in traced])
    if targets:
        # a Python scalar returned where another branch returns an array takes its dtype
        traced = [_trace_tree_fun(_adopting(f, targets), in_tree, avals,
                                  f"the {name} of a lax.cond/switch")
                  for f, name in zip(funs, names)]
    _check_branch_outputs(names, [t[2] for t in traced], [t[0] for t in traced])
    jaxprs, consts = _join_consts([(j, c) for j, c, _ in traced])
    return jaxprs, consts, leaves, traced[0][2]


def _trace_branches_with_refs(funs, names, operands):
    """``_trace_branches``, with the references the branches close over taken as operands and
    returned as outputs; returns its results and those references."""
    try:
        with finding_refs():
            return (*_trace_branches(funs, names, operands), [])
    except ClosesOverRefs as e:
        refs = e.refs

    def carrying(f):
        def branch(ops, values):
            with bound(refs, values) as now:
                return f(*ops), now()
        return branch
    with finding_refs():
        traced = _trace_branches([carrying(f) for f in funs], names,
                                 (operands, current_values(refs)))
    return (*traced, refs)


def _outputs(out_tree, outs, refs):
    out = tree_unflatten(out_tree, outs)
    if refs:
        out, values = out
        write_back(refs, values)
    return out


def _branch_output_dtypes(trees, out_avals):
    """``{output position: aval}`` where weakly typed branch outputs (Python scalars) meet
    strongly typed ones of another dtype, which they adopt; empty when nothing adopts."""
    if any(t != trees[0] for t in trees) or \
            any(len(a) != len(out_avals[0]) for a in out_avals):
        return {}
    targets = {}
    for k, column in enumerate(zip(*out_avals)):
        strong = {a.dtype for a in column if not a.weak_type}
        if len(strong) == 1:
            target = next(a for a in column if not a.weak_type)
            if any(_weak_adopts(a, target) for a in column):
                targets[k] = target
    return targets


def _adopting(fun, targets):
    def adopting(*args):
        leaves, tree = tree_flatten(fun(*args))
        return tree_unflatten(tree, [_adopt(x, targets[k]) if k in targets else x
                                     for k, x in enumerate(leaves)])
    return adopting


_NO_OPERAND = object()


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one staged
    operation: both branches are traced, must return the same structure of the same shapes and
    dtypes, and only the chosen one runs. ``pred`` is a bool (or integer, nonzero meaning true)
    scalar. Under vmap with a batched ``pred`` both branches run and the results are selected.
    The one operand may also be passed as ``operand=`` (JAX's older spelling), and JAX's oldest
    form, ``cond(pred, true_operand, true_fun, false_operand, false_fun)``, still works.

    >>> x = jnp.array(-3.0)
    >>> fnx.lax.cond(x > 0, lambda x: x * 2, lambda x: -x, x)
    Array(3., dtype=float32, weak_type=True)
    """
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("lax.cond: if 'operand' keyword is passed then no operands can be "
                            "passed positionally")
        operands = (operand,)
    if not (callable(true_fun) and callable(false_fun)):
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    aval = _aval_or_error(pred, "lax.cond's predicate")
    if aval.shape != ():
        raise ControlFlowTypeError(f"lax.cond's predicate must be a scalar, got "
                                   f"{aval.str_short()} of shape {aval.shape}")
    if aval.dtype != dtypes.bool_:
        if dtypes.kind(aval.dtype) not in "iuf":
            raise ControlFlowTypeError(f"lax.cond's predicate must be a boolean or real number "
                                       f"scalar, got {aval.str_short()}; compare it, e.g. "
                                       "x > 0, to make a boolean")
        # any nonzero number (NaN too) takes the true branch, as in JAX
        pred = _lax.ne(pred, _lax.full((), 0, aval.dtype))
    index = _lax.convert_element_type(pred, dtypes.int32)
    (true_j, false_j), consts, leaves, out_tree, refs = _trace_branches_with_refs(
        (true_fun, false_fun), ("true_fun", "false_fun"), operands)
    outs = cond_p.bind(index, *consts, *leaves, branches=(false_j, true_j))
    return _outputs(out_tree, outs, refs)


def switch(index, branches, *operands):
    """``branches[index](*operands)``, with ``index`` clamped into ``[0, len(branches) - 1]``
    (as in JAX). Every branch is traced and must return the same structure, shapes and dtypes.

    >>> fnx.lax.switch(1, [jnp.sin, jnp.cos, jnp.tanh], jnp.array(0.0))   # cos(0.)
    Array(1., dtype=float32, weak_type=True)
    """
    branches = tuple(branches)
    if not branches:
        raise ValueError("lax.switch: empty branch sequence")
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches must be callable")
    aval = _aval_or_error(index, "lax.switch's index")
    if aval.shape != ():
        raise ControlFlowTypeError(f"lax.switch's index must be a scalar, got "
                                   f"{aval.str_short()} of shape {aval.shape}")
    if not dtypes.is_int(aval.dtype):
        raise ControlFlowTypeError(f"lax.switch's index must be an integer scalar, got "
                                   f"{aval.str_short()}")
    if len(branches) == 1:
        return branches[0](*operands)
    index = _lax.convert_element_type(index, dtypes.int32)
    index = _lax.max_(_lax.min_(index, np.int32(len(branches) - 1)), np.int32(0))
    names = tuple(f"branch {i}" for i in range(len(branches)))
    jaxprs, consts, leaves, out_tree, refs = _trace_branches_with_refs(branches, names,
                                                                      operands)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs))
    return _outputs(out_tree, outs, refs)

"""Loops: the ``scan`` and ``while`` primitives with their rules for every transformation, and
``while_loop``, ``scan``, ``fori_loop`` and ``map`` on them."""
from __future__ import annotations

import numpy as np

from .. import lax as _lax
from .. import ad, batching, dtypes
from ..ad import UndefinedPrimal, Zero, backward_pass, instantiate_as, is_undefined, tangent_aval
from ..api import vmap
from ..api_util import batch_float0, flatten_fun
from ..core import get_aval, set_current_trace
from ..errors import ConcretizationTypeError
from ..jaxpr import (Jaxpr, JaxprTypeError, Var, dce_jaxpr, dependent_outputs, eval_jaxpr,
                     jaxpr_with_consts_as_args)
from ..partial_eval import partial_eval_jaxpr_nounits, trace_to_jaxpr_dynamic
from ..pytree import tree_flatten, tree_unflatten, treedef_is_leaf
from .common import (ControlFlowTypeError, ControlFlowValueError, ReverseModeWhileLoopError,
                     _Runner, _WHILE_REVERSE_MSG, _adopt, _arrays, _aval_or_error, _backend_of, _bdim_to,
                     _buffers, _check_operands, _leaf_paths, _split, _trace_carry_fun,
                     _typematch)
from .conditionals import _avals_str, cond
from .refs import ClosesOverRefs, bound, current_values, finding_refs, write_back


# scan: scan_p(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse)
#   jaxpr: (*consts, *carry, *x) -> (*carry, *y); outputs: final carry, stacked ys

scan_p = _lax.primitive("scan", multiple_results=True)


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse):
    nc, nk = num_consts, num_carry
    consts, init, xs = _split(avals, nc, nk)
    _check_operands("scan body", jaxpr.invars[:nc + nk], consts + init)
    if len(xs) != len(jaxpr.invars) - nc - nk:
        raise JaxprTypeError(f"scan body takes {len(jaxpr.invars) - nc - nk} xs, got "
                             f"{len(xs)}", source=None)
    for v, a in zip(jaxpr.invars[nc + nk:], xs):
        if a.shape != (length,) + v.aval.shape or a.dtype != v.aval.dtype:
            raise JaxprTypeError(f"scan of length {length} over an operand {a.str_short()} "
                                 f"whose slices the body takes as {v.aval.str_short()}",
                                 source=None)
    out = jaxpr.out_avals
    for v, a in zip(jaxpr.invars[nc:nc + nk], out[:nk]):
        if not _typematch(v.aval, a):
            raise JaxprTypeError(f"scan body takes a carry {v.aval.str_short()} and returns "
                                 f"{a.str_short()}", source=None)
    return out[:nk] + [a.update(shape=(length,) + a.shape) for a in out[nk:]]


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse):
    backend = _backend_of(args)
    body = _Runner(jaxpr, backend)
    nc, nk = num_consts, num_carry
    consts, carry, xs = _split(args, nc, nk)
    in_c, in_k, in_x = _split(jaxpr.in_avals, nc, nk)
    consts = _buffers(consts, in_c, backend)
    carry = _buffers(carry, in_k, backend)
    xs = [backend.cast(backend.to_buffer(x, a.dtype), a.dtype) for x, a in zip(xs, in_x)]
    steps = range(length - 1, -1, -1) if reverse else range(length)
    per_step = []
    for i in steps:
        outs = body(*consts, *carry, *[x[i] for x in xs])
        carry = outs[:nk]
        per_step.append(outs[nk:])
    if reverse:
        per_step.reverse()
    out_avals = jaxpr.out_avals[:nk] + [a.update(shape=(length,) + a.shape)
                                        for a in jaxpr.out_avals[nk:]]
    y_avals = out_avals[nk:]
    if length:
        ys = [np.stack([step[k] for step in per_step]) for k in range(len(y_avals))]
    else:
        ys = [backend.to_buffer(np.zeros(a.shape, a.dtype), a.dtype) for a in y_avals]
    return _arrays(carry + ys, out_avals, backend)


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.outvars) - nk
    nz = [not isinstance(t, Zero) for t in tangents]
    const_nz, init_nz, xs_nz = _split(nz, nc, nk)
    carry_nz = init_nz
    while True:     # a carry's tangent is nonzero if the body can make it so
        jvp, jconsts, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                            carry_nz + [False] * ny)
        new = [a or b for a, b in zip(carry_nz, out_nz[:nk])]
        if new == carry_nz:
            break
        carry_nz = new
    n_ct, n_kt, ys_nz = sum(const_nz), sum(carry_nz), out_nz[nk:]
    k, n = len(jconsts), len(jaxpr.invars)
    jc, (pc, pk, px), (tc, tk, tx) = (jvp.invars[:k], _split(jvp.invars[k:k + n], nc, nk),
                                      _split(jvp.invars[k + n:], n_ct, n_kt))
    ok, oy, okt, oyt = _split(jvp.outvars, nk, ny, n_kt)
    body = Jaxpr([], jc + pc + tc + pk + tk + px + tx, ok + okt + oy + oyt, jvp.eqns)
    consts, init, xs = _split(primals, nc, nk)
    t_consts, t_init, t_xs = _split(tangents, nc, nk)
    t_init = [instantiate_as(t, v.aval) for t, v, z in zip(t_init, jaxpr.invars[nc:nc + nk],
                                                            carry_nz) if z]
    outs = scan_p.bind(*jconsts, *consts, *(t for t in t_consts if not isinstance(t, Zero)),
                       *init, *t_init, *xs, *(t for t in t_xs if not isinstance(t, Zero)),
                       jaxpr=body, num_consts=k + nc + n_ct, num_carry=nk + n_kt,
                       length=length, reverse=reverse)
    carry, carry_t, ys, ys_t = _split(outs, nk, n_kt, ny)
    out_avals = [v.aval for v in jaxpr.outvars]
    kt_it, yt_it = iter(carry_t), iter(ys_t)
    out_t = [next(kt_it) if z else Zero(tangent_aval(a))
             for z, a in zip(carry_nz, out_avals[:nk])]
    out_t += [next(yt_it) if z else Zero(tangent_aval(a).update(shape=(length,) + a.shape))
              for z, a in zip(ys_nz, out_avals[nk:])]
    return carry + ys, out_t


def _scan_batch(vals, dims, *, jaxpr, num_consts, num_carry, length, reverse):
    size = batching.batch_size(vals, dims)
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.outvars) - nk
    consts, init, xs = _split(vals, nc, nk)
    c_d, k_d, x_d = _split(dims, nc, nk)
    c_b, x_b = [d is not None for d in c_d], [d is not None for d in x_d]
    carry_b = [d is not None for d in k_d]
    while True:     # a carry is batched if the body can make it so
        body, bconsts, out_b = batching.batch_jaxpr(jaxpr, size, c_b + carry_b + x_b,
                                                    carry_b + [False] * ny)
        new = [a or b for a, b in zip(carry_b, out_b[:nk])]
        if new == carry_b:
            break
        carry_b = new
    consts = [_bdim_to(x, d, 0, size) if d is not None else x for x, d in zip(consts, c_d)]
    init = [_bdim_to(x, d, 0, size) if b else x for x, d, b in zip(init, k_d, carry_b)]
    # the scanned axis stays first; each slice is batched at 0, so the stack at 1
    xs = [_bdim_to(x, d, 1, size) if d is not None else x for x, d in zip(xs, x_d)]
    outs = scan_p.bind(*bconsts, *consts, *init, *xs, jaxpr=body,
                       num_consts=len(bconsts) + nc, num_carry=nk, length=length,
                       reverse=reverse)
    return outs, [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[nk:]]


def _scan_partial_eval(trace, args, params):
    jaxpr, nc, nk = params["jaxpr"], params["num_consts"], params["num_carry"]
    length, reverse = params["length"], params["reverse"]
    ny = len(jaxpr.outvars) - nk
    const_uk, init_uk, xs_uk = _split([trace.is_own(a) for a in args], nc, nk)
    carry_uk = init_uk
    while True:     # a carry is unknown if the body can make it so
        known, unknown, out_uk, res_avals = partial_eval_jaxpr_nounits(
            jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * ny)
        new = [a or b for a, b in zip(carry_uk, out_uk[:nk])]
        if new == carry_uk:
            break
        carry_uk = new
    ys_uk = out_uk[nk:]
    n_res = len(res_avals)
    consts, init, xs = _split(args, nc, nk)
    k_consts = [a for a, u in zip(consts, const_uk) if not u]
    k_init = [a for a, u in zip(init, carry_uk) if not u]
    k_xs = [a for a, u in zip(xs, xs_uk) if not u]
    n_kk, n_ky = len(k_init), ny - sum(ys_uk)

    # The known body, split again: what depends only on its consts (loop-invariant residuals,
    # such as a weight matrix) runs once, outside; the rest is the known scan, which also
    # stacks the per-iteration residuals as extra outputs.
    known_j = jaxpr_with_consts_as_args(known)
    n_kc = len(known.consts) + len(k_consts)
    hoist, loop, loop_uk, _ = partial_eval_jaxpr_nounits(
        known_j, [False] * n_kc + [True] * (len(known_j.invars) - n_kc),
        [True] * (n_kk + n_ky) + [False] * n_res)
    invariant = [not u for u in loop_uk[n_kk + n_ky:]]
    n_inv = sum(invariant)
    with set_current_trace(trace.parent):
        hoisted = eval_jaxpr(hoist.jaxpr, hoist.consts, *known.consts, *k_consts)
        inv_res, loop_consts = hoisted[:n_inv], hoisted[n_inv:]
        loop_outs = []
        if loop.outvars:
            loop_outs = scan_p.bind(*loop_consts, *k_init, *k_xs, jaxpr=loop,
                                    num_consts=len(loop_consts), num_carry=n_kk,
                                    length=length, reverse=reverse)
    k_carry, k_ys, var_res = _split(loop_outs, n_kk, n_ky)

    u_carry, u_ys = [], []
    if any(out_uk):
        res_vars, u_in = unknown.invars[:n_res], unknown.invars[n_res:]
        n_uc, n_uk = sum(const_uk), sum(carry_uk)
        inv_vars = [v for v, inv in zip(res_vars, invariant) if inv]
        var_vars = [v for v, inv in zip(res_vars, invariant) if not inv]
        body = Jaxpr([], inv_vars + u_in[:n_uc + n_uk] + var_vars + u_in[n_uc + n_uk:],
                     unknown.outvars, unknown.eqns)
        u_args = [*inv_res, *(a for a, u in zip(consts, const_uk) if u),
                  *(a for a, u in zip(init, carry_uk) if u), *var_res,
                  *(a for a, u in zip(xs, xs_uk) if u)]
        u_outs = trace.stage(scan_p, u_args, dict(jaxpr=body, num_consts=n_inv + n_uc,
                                                  num_carry=n_uk, length=length,
                                                  reverse=reverse))
        u_carry, u_ys = u_outs[:n_uk], u_outs[n_uk:]
    kc_it, uc_it, ky_it, uy_it = iter(k_carry), iter(u_carry), iter(k_ys), iter(u_ys)
    return [next(uc_it) if u else next(kc_it) for u in carry_uk] + \
        [next(uy_it) if u else next(ky_it) for u in ys_uk]


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse):
    # Consts and xs given as values are residuals; the others, and every carry, are linear.
    nc, nk = num_consts, num_carry
    consts, init, xs = _split(args, nc, nk)
    c_lin, x_lin = [is_undefined(a) for a in consts], [is_undefined(a) for a in xs]
    res_c = [a for a, lin in zip(consts, c_lin) if not lin]
    res_x = [a for a, lin in zip(xs, x_lin) if not lin]
    ct_carry, ct_ys = cts[:nk], cts[nk:]
    if all(isinstance(ct, Zero) for ct in cts):
        return [Zero(a.aval) if is_undefined(a) else None for a in args]
    c_avals, k_avals, x_avals = _split(jaxpr.in_avals, nc, nk)
    y_avals = jaxpr.out_avals[nk:]
    lin_c_avals = [a for a, lin in zip(c_avals, c_lin) if lin]
    ys_nz = [not isinstance(ct, Zero) for ct in ct_ys]
    ct_carry = [instantiate_as(ct, a) for ct, a in zip(ct_carry, k_avals)]
    ct_ys = [instantiate_as(ct, a) for ct, a, nz in zip(ct_ys, y_avals, ys_nz) if nz]
    n_rc, n_lc, n_yz = len(res_c), len(lin_c_avals), len(ct_ys)
    store: dict = {}

    def body_t(*zs):
        rc, acc, ck, cy, rx = _split(zs, n_rc, n_lc, nk, n_yz)
        rc_it, rx_it, cy_it = iter(rc), iter(rx), iter(cy)
        full = [UndefinedPrimal(a) if lin else next(rc_it) for a, lin in zip(c_avals, c_lin)]
        full += [UndefinedPrimal(a) for a in k_avals]
        full += [UndefinedPrimal(a) if lin else next(rx_it) for a, lin in zip(x_avals, x_lin)]
        full_cts = list(ck) + [next(cy_it) if nz else Zero(a) for nz, a in zip(ys_nz, y_avals)]
        c_ct, k_ct, x_ct = _split(backward_pass(jaxpr, [], full, full_cts), nc, nk)
        c_ct = [c for c, lin in zip(c_ct, c_lin) if lin]
        new_acc = [a if isinstance(c, Zero) else _lax.add(a, instantiate_as(c, av))
                   for a, c, av in zip(acc, c_ct, lin_c_avals)]
        x_ct = [c for c, lin in zip(x_ct, x_lin) if lin]
        store["x_nz"] = [not isinstance(c, Zero) for c in x_ct]
        return [*new_acc, *(instantiate_as(c, a) for c, a in zip(k_ct, k_avals)),
                *(instantiate_as(c, a) for c, a in
                  zip(x_ct, [a for a, lin in zip(x_avals, x_lin) if lin])
                  if not isinstance(c, Zero))]
    avals = ([get_aval(a) for a in res_c] + lin_c_avals + list(k_avals)
             + [a for a, nz in zip(y_avals, ys_nz) if nz]
             + [a for a, lin in zip(x_avals, x_lin) if not lin])
    body, tconsts = trace_to_jaxpr_dynamic(body_t, avals, "the transpose of a scan body")
    acc0 = [ad.zeros_like_aval(a) for a in lin_c_avals]
    outs = scan_p.bind(*tconsts, *res_c, *acc0, *ct_carry, *ct_ys, *res_x, jaxpr=body,
                       num_consts=len(tconsts) + n_rc, num_carry=n_lc + nk, length=length,
                       reverse=not reverse)
    ct_consts, ct_init, ct_xs = _split(outs, n_lc, nk)
    cc_it, cx_it, x_nz = iter(ct_consts), iter(ct_xs), iter(store["x_nz"])
    result = [next(cc_it) if lin else None for lin in c_lin]
    result += [ct if is_undefined(a) else None for a, ct in zip(init, ct_init)]
    result += [(next(cx_it) if next(x_nz) else Zero(a.aval)) if lin else None
               for a, lin in zip(xs, x_lin)]
    return result


scan_p.abstract_eval = _scan_abstract_eval
# fnx runs a scan one step at a time whatever ``unroll`` asks; it prints as JAX's default
scan_p.pp_params = lambda params: {**params, "unroll": 1}
scan_p.impl = _scan_impl
scan_p.jvp = _scan_jvp
scan_p.batch = _scan_batch
scan_p.partial_eval = _scan_partial_eval
scan_p.transpose = _scan_transpose


# while: while_p(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr, cond_nconsts,
#   body_nconsts); cond_jaxpr: (*cond_consts, *carry) -> bool[]; body_jaxpr: (*body_consts,
#   *carry) -> carry

while_p = _lax.primitive("while", multiple_results=True)


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, init = _split(avals, cond_nconsts, body_nconsts)
    _check_operands("while_loop cond", cond_jaxpr.invars, cc + init)
    _check_operands("while_loop body", body_jaxpr.invars, bc + init)
    pred = cond_jaxpr.out_avals
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != dtypes.bool_:
        raise JaxprTypeError(f"while_loop cond returns {_avals_str(pred)}, not a bool[]",
                             source=None)
    out = body_jaxpr.out_avals
    if len(out) != len(init) or not all(_typematch(a, b) for a, b in zip(out, init)):
        raise JaxprTypeError(f"while_loop body takes {_avals_str(init)} and returns "
                             f"{_avals_str(out)}", source=None)
    return out


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    backend = _backend_of(args)
    cond, body = _Runner(cond_jaxpr, backend), _Runner(body_jaxpr, backend)
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    cc = _buffers(cc, cond_jaxpr.in_avals[:cond_nconsts], backend)
    bc = _buffers(bc, body_jaxpr.in_avals[:body_nconsts], backend)
    carry = _buffers(carry, body_jaxpr.in_avals[body_nconsts:], backend)
    while bool(backend.to_numpy(cond(*cc, *carry)[0])):
        carry = body(*bc, *carry)
    return _arrays(carry, body_jaxpr.out_avals, backend)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    ncc, nbc = cond_nconsts, body_nconsts
    nz = [not isinstance(t, Zero) for t in tangents]
    _, bc_nz, init_nz = _split(nz, ncc, nbc)
    carry_nz = init_nz
    while True:     # a carry's tangent is nonzero if the body can make it so
        jvp, jconsts, out_nz = ad.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
    nk, n_bt = len(init_nz), sum(bc_nz)
    k, n = len(jconsts), len(body_jaxpr.invars)
    jc, (pb, pk), (tb, tk) = (jvp.invars[:k], _split(jvp.invars[k:k + n], nbc),
                              _split(jvp.invars[k + n:], n_bt))
    body = Jaxpr([], jc + pb + tb + pk + tk, jvp.outvars, jvp.eqns)
    # the predicate reads only primal carries; the tangent carries pass it by
    cond = Jaxpr([], cond_jaxpr.invars + [Var(v.aval) for v in tk], cond_jaxpr.outvars,
                 cond_jaxpr.eqns)
    cc, bc, init = _split(primals, ncc, nbc)
    _, t_bc, t_init = _split(tangents, ncc, nbc)
    t_init = [instantiate_as(t, v.aval) for t, v, z in
              zip(t_init, body_jaxpr.invars[nbc:], carry_nz) if z]
    outs = while_p.bind(*cc, *jconsts, *bc, *(t for t in t_bc if not isinstance(t, Zero)),
                        *init, *t_init, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=ncc,
                        body_nconsts=k + nbc + n_bt)
    it = iter(outs[nk:])
    return outs[:nk], [next(it) if z else Zero(tangent_aval(v.aval))
                       for z, v in zip(carry_nz, body_jaxpr.outvars)]


def _while_batch(vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = batching.batch_size(vals, dims)
    ncc, nbc = cond_nconsts, body_nconsts
    cc, bc, init = _split(vals, ncc, nbc)
    cc_d, bc_d, k_d = _split(dims, ncc, nbc)
    cc_b, bc_b = [d is not None for d in cc_d], [d is not None for d in bc_d]
    carry_b = [d is not None for d in k_d]
    while True:     # a carry is batched if the body can make it so
        new = [a or b for a, b in
               zip(carry_b, batching.batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b)[2])]
        if new == carry_b:
            break
        carry_b = new
    pred_b = batching.batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, [False])[2][0]
    cc = [_bdim_to(x, d, 0, size) if d is not None else x for x, d in zip(cc, cc_d)]
    bc = [_bdim_to(x, d, 0, size) if d is not None else x for x, d in zip(bc, bc_d)]
    if not pred_b:
        body, bconsts, _ = batching.batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b)
        cond, cconsts, _ = batching.batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, [False])
        init = [_bdim_to(x, d, 0, size) if b else x for x, d, b in zip(init, k_d, carry_b)]
        outs = while_p.bind(*cconsts, *cc, *bconsts, *bc, *init, cond_jaxpr=cond,
                            body_jaxpr=body, cond_nconsts=len(cconsts) + ncc,
                            body_nconsts=len(bconsts) + nbc)
        return outs, [0 if b else None for b in carry_b]

    # Examples finish at different iterations: loop while any predicate holds, and let the
    # body keep the carries of the examples whose predicate is false.
    init = [_bdim_to(x, d, 0, size) for x, d in zip(init, k_d)]
    cc_in = [0 if b else None for b in cc_b]
    nk = len(init)

    def preds(cc_vals, carry):
        return batching.batch_flat(lambda *a: eval_jaxpr(cond_jaxpr, [], *a),
                                   [*cc_vals, *carry], cc_in + [0] * nk, size)[0]

    def any_pred(*xs):
        return [_lax.reduce_or(preds(xs[:ncc], xs[ncc:]), (0,))]

    def masked_body(*xs):
        cc_vals, bc_vals, carry = _split(xs, ncc, nbc)
        pred = preds(cc_vals, carry)
        new = batching.batch_flat(lambda *a: eval_jaxpr(body_jaxpr, [], *a),
                                  [*bc_vals, *carry], [0 if b else None for b in bc_b]
                                  + [0] * nk, size)
        out = []
        for n_, o in zip(new, carry):
            shape = get_aval(o).shape
            which = pred if len(shape) == 1 else _lax.broadcast_in_dim(pred, shape, (0,))
            out.append(_lax.select(which, n_, o))
        return out
    carry_avals = [get_aval(x) for x in init]
    cond, cconsts = trace_to_jaxpr_dynamic(any_pred, [get_aval(x) for x in cc] + carry_avals,
                                           "a vmapped while_loop predicate")
    body, bconsts = trace_to_jaxpr_dynamic(
        masked_body, [get_aval(x) for x in cc + bc] + carry_avals, "a vmapped while_loop body")
    outs = while_p.bind(*cconsts, *cc, *bconsts, *cc, *bc, *init, cond_jaxpr=cond,
                        body_jaxpr=body, cond_nconsts=len(cconsts) + ncc,
                        body_nconsts=len(bconsts) + ncc + nbc)
    return outs, [0] * nk


def _while_partial_eval(trace, args, params):
    """Known carries come from a while loop over the known part of the body; unknown ones
    from the whole loop, staged, which computes the known part again (as JAX does)."""
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    ncc, nbc = params["cond_nconsts"], params["body_nconsts"]
    cc_uk, bc_uk, carry_uk = _split([trace.is_own(a) for a in args], ncc, nbc)
    while True:
        new = [a or b for a, b in zip(carry_uk, dependent_outputs(body_jaxpr,
                                                                  bc_uk + carry_uk))]
        if new == carry_uk:
            break
        carry_uk = new
    cond_live, cond_reads = dce_jaxpr(cond_jaxpr)
    if all(carry_uk) or any(r and u for r, u in zip(cond_reads, cc_uk + carry_uk)):
        return trace.stage(while_p, args, params)
    known_body, body_reads = dce_jaxpr(body_jaxpr, [not u for u in carry_uk])
    bc_keep = [not u for u in bc_uk]
    keep_in = bc_keep + [not u for u in carry_uk]
    assert not any(r and not k for r, k in zip(body_reads, keep_in))
    known_body = Jaxpr([], [v for v, k in zip(known_body.invars, keep_in) if k],
                       known_body.outvars, known_body.eqns)
    cc_keep = [not u for u in cc_uk]      # the predicate reads no unknown value
    known_cond = Jaxpr([], [v for v, k in zip(cond_live.invars, cc_keep + keep_in[nbc:])
                            if k], cond_live.outvars, cond_live.eqns)
    cc, bc, init = _split(args, ncc, nbc)
    with set_current_trace(trace.parent):
        known = while_p.bind(*(a for a, k in zip(cc, cc_keep) if k),
                             *(a for a, k in zip(bc, bc_keep) if k),
                             *(a for a, u in zip(init, carry_uk) if not u),
                             cond_jaxpr=known_cond, body_jaxpr=known_body,
                             cond_nconsts=sum(cc_keep), body_nconsts=sum(bc_keep))
    if not any(carry_uk):
        return known
    staged = trace.stage(while_p, args, params)
    known_it = iter(known)
    return [s if u else next(known_it) for s, u in zip(staged, carry_uk)]


def _while_transpose(cts, *args, **params):
    raise ReverseModeWhileLoopError(_WHILE_REVERSE_MSG)


while_p.abstract_eval = _while_abstract_eval
while_p.impl = _while_impl
while_p.jvp = _while_jvp
while_p.batch = _while_batch
while_p.partial_eval = _while_partial_eval
while_p.transpose = _while_transpose


def _check_carry(what, in_tree, out_tree, paths, in_avals, out_avals):
    if in_tree != out_tree:
        raise ControlFlowTypeError(
            f"{what} function carry input and carry output must have the same structure "
            f"(pytree), but the input carry is {in_tree} and the output carry is {out_tree}")
    diffs = []
    for path, a, b in zip(paths, in_avals, out_avals):
        if a.shape != b.shape:
            diffs.append(f"  * {path}: the input carry is {a.str_short()} but the output carry "
                         f"is {b.str_short()}: shapes {a.shape} and {b.shape} differ")
        elif a.dtype != b.dtype:
            diffs.append(f"  * {path}: the input carry is {a.str_short()} but the output carry "
                         f"is {b.str_short()}: dtypes {a.dtype.name} and {b.dtype.name} "
                         "differ")
    if diffs:
        raise ControlFlowTypeError(
            f"{what} function carry input and carry output must have equal types (shapes and "
            "dtypes), but they differ:\n" + "\n".join(diffs) + "\nRevise the function so that "
            "every output carry has the type of its input carry.")


def _promote_weak_carries(init, in_avals, out_avals):
    """JAX's rule for Python-scalar initial carries: a weakly typed carry whose body output has
    another dtype is converted to the promoted dtype (``0`` for a float sum becomes ``0.0``),
    strongly typed as JAX converts it. Returns the new initial carries and whether any changed."""
    changed = False
    init = list(init)
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            try:
                dt, _ = dtypes.result_type((a.dtype, True), (b.dtype, b.weak_type))
            except TypeError:
                continue
            init[i] = _lax.convert_element_type(init[i], dt, weak_type=False)
            changed = True
    return init, changed


def _carry_avals(leaves):
    return [get_aval(x) for x in leaves]


def while_loop(cond_fun, body_fun, init_val):
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)`` is true, starting from
    ``init_val``; return the final ``val``, as this Python loop does::

        val = init_val
        while cond_fun(val):
            val = body_fun(val)

    ``body_fun`` must return the structure, shapes and dtypes it takes. It is differentiable
    in forward mode (jvp) only: for reverse mode use ``fori_loop`` with static bounds or
    ``scan``.

    >>> fnx.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, 1.0))
    (Array(10, dtype=int32, weak_type=True), Array(1024., dtype=float32, weak_type=True))
    """
    return _while_loop(cond_fun, body_fun, init_val, "while_loop body",
                       lambda tree: _leaf_paths(tree, "carry"))


def _while_loop(cond_fun, body_fun, init_val, what, paths):
    try:
        with finding_refs():
            return _while_loop_pure(cond_fun, body_fun, init_val, what, paths)
    except ClosesOverRefs as e:
        refs = e.refs

    def cond2(carry):
        with bound(refs, carry[1]):
            return cond_fun(carry[0])

    def body2(carry):
        with bound(refs, carry[1]) as values:
            out = body_fun(carry[0])
            return out, values()
    out, values = _while_loop(cond2, body2, (init_val, current_values(refs)), what,
                              lambda tree: paths(tree.children[0]) + [None] * len(refs))
    write_back(refs, values)
    return out


def _while_loop_pure(cond_fun, body_fun, init_val, what, paths):
    leaves, tree = tree_flatten(init_val)
    for attempt in range(3):
        avals = _carry_avals(leaves)
        body, b_consts, out_tree = _trace_carry_fun(body_fun, tree, avals,
                                                    "the body of a lax.while_loop", adopt=True)
        if out_tree != tree:
            break
        promoted, changed = _promote_weak_carries(leaves, avals, body.out_avals)
        if not changed or attempt == 2:
            break
        leaves = promoted
    _check_carry(what, tree, out_tree, paths(tree), avals, body.out_avals)
    cond_j, c_consts, pred_tree = _trace_carry_fun(cond_fun, tree, avals,
                                                   "the predicate of a lax.while_loop")
    pred = cond_j.out_avals
    if not treedef_is_leaf(pred_tree) or pred[0].shape != () or pred[0].dtype != dtypes.bool_:
        got = pred_tree if not treedef_is_leaf(pred_tree) else pred[0].str_short()
        raise ControlFlowTypeError(f"while_loop's cond_fun must return a boolean scalar, but "
                                   f"got {got}")
    outs = while_p.bind(*c_consts, *b_consts, *leaves, cond_jaxpr=cond_j, body_jaxpr=body,
                        cond_nconsts=len(c_consts), body_nconsts=len(b_consts))
    return tree_unflatten(tree, outs)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``, returning the final
    carry and the stacked ``y`` values, as this Python function does::

        def scan(f, init, xs, length=None):
            if xs is None:
                xs = [None] * length
            carry, ys = init, []
            for x in xs:
                carry, y = f(carry, x)
                ys.append(y)
            return carry, np.stack(ys)

    ``init``, ``xs`` and the ``y``s may be pytrees; with ``xs=None``, ``length`` gives the
    number of iterations. ``reverse=True`` runs from the last slice to the first (the ys stay in
    the order of xs). ``unroll`` is accepted for JAX compatibility. Differentiable in both
    modes: reverse mode saves each iteration's residuals and runs the transposed body backwards.

    >>> fnx.lax.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(4.0))
    (Array(6., dtype=float32), Array([0., 0., 2., 9.], dtype=float32))
    """
    del unroll
    return _scan(f, init, xs, length, reverse, "scan body",
                 lambda tree: _leaf_paths(tree, "carry"))


def _scan(f, init, xs, length, reverse, what, paths):
    try:
        with finding_refs():
            return _scan_pure(f, init, xs, length, reverse, what, paths)
    except ClosesOverRefs as e:
        refs = e.refs

    def f2(carry, x):
        with bound(refs, carry[1]) as values:
            out = f(carry[0], x)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                return out      # _scan's own check names the error
            return (out[0], values()), out[1]
    (out, values), ys = _scan(f2, (init, current_values(refs)), xs, length, reverse, what,
                              lambda tree: paths(tree.children[0]) + [None] * len(refs))
    write_back(refs, values)
    return out, ys


def _scan_pure(f, init, xs, length, reverse, what, paths):
    x_leaves, x_tree = tree_flatten(xs)
    x_avals = []
    for x in x_leaves:
        a = _aval_or_error(x, "lax.scan's xs")
        if a.ndim == 0:
            raise ControlFlowTypeError(f"lax.scan got an xs value {a.str_short()} with no "
                                       "leading axis to scan over")
        x_avals.append(a)
    lengths = sorted({a.shape[0] for a in x_avals})
    if length is not None:
        try:
            length = int(length)
        except ConcretizationTypeError:
            raise ControlFlowTypeError("lax.scan's length must be a static Python int") \
                from None
        if lengths and lengths != [length]:
            raise ControlFlowValueError(f"lax.scan got length argument {length} but xs with "
                                       f"leading axis sizes {_sizes(lengths)}")
    elif not lengths:
        raise ControlFlowValueError("lax.scan got no xs to scan over and no length argument")
    elif len(lengths) > 1:
        raise ControlFlowValueError(f"lax.scan got xs with different leading axis sizes: "
                                   f"{_sizes(lengths)}")
    else:
        length = lengths[0]
    slice_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    leaves, tree = tree_flatten(init)
    nk = len(leaves)

    def pair(*args):
        out = f(tree_unflatten(tree, args[:nk]), tree_unflatten(x_tree, args[nk:]))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ControlFlowTypeError(f"{what} function must return a pair (carry, y), got "
                                       f"{type(out).__name__}")
        return tuple(out)
    flat_pair, out_tree = flatten_fun(pair)

    def carry_tree():
        return out_tree().children[0]

    def body(*args):
        outs = flat_pair(*args)
        if carry_tree() == tree:
            outs[:nk] = [_adopt(c, get_aval(a)) for c, a in zip(outs[:nk], args)]
        return outs
    for attempt in range(3):
        avals = _carry_avals(leaves)
        jaxpr, consts = trace_to_jaxpr_dynamic(body, avals + slice_avals, "the body of a lax.scan")
        if carry_tree() != tree:
            break
        promoted, changed = _promote_weak_carries(leaves, avals, jaxpr.out_avals[:nk])
        if not changed or attempt == 2:
            break
        leaves = promoted
    _check_carry(what, tree, carry_tree(), paths(tree), avals, jaxpr.out_avals[:nk])
    outs = scan_p.bind(*consts, *leaves, *x_leaves, jaxpr=jaxpr, num_consts=len(consts),
                       num_carry=nk, length=length, reverse=bool(reverse))
    ys = tree_unflatten(out_tree().children[1], outs[nk:])
    return tree_unflatten(tree, outs[:nk]), batch_float0(ys, 0, length)


def _sizes(ns):
    return ", ".join(str(n) for n in ns)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``, starting from
    ``init_val``; returns the final ``val``.

    With static bounds (Python ints, or concrete arrays) it is a ``scan``, differentiable in
    both modes; with traced bounds (arguments of a jitted function, say) it is a ``while_loop``,
    differentiable in forward mode only.

    >>> fnx.lax.fori_loop(0, 10, lambda i, x: x * 0.5 + i, 1.0)
    Array(16.004883, dtype=float32, weak_type=True)
    """
    del unroll
    l_aval = _aval_or_error(lower, "fori_loop's lower bound")
    u_aval = _aval_or_error(upper, "fori_loop's upper bound")
    if not (dtypes.is_int(l_aval.dtype) and dtypes.is_int(u_aval.dtype)):
        raise ControlFlowTypeError(f"fori_loop's bounds must be integers, got "
                                   f"{l_aval.str_short()} and {u_aval.str_short()}")
    try:
        lo, hi = int(lower), int(upper)
    except ConcretizationTypeError:
        lo = hi = None
    if lo is not None:
        def step(carry, _):
            i, x = carry
            return (_lax.add(i, 1), body_fun(i, x)), None
        # the counter starts as the Python int lo (a weakly typed int), as in JAX
        (_, out), _ = _scan(step, (lo, init_val), None, max(hi - lo, 0), False,
                            "fori_loop body", _fori_paths(1))
        return out
    dt, _ = dtypes.result_type((l_aval.dtype, l_aval.weak_type),
                               (u_aval.dtype, u_aval.weak_type))
    if l_aval.dtype != u_aval.dtype:     # bounds of one dtype keep their types, as in JAX
        lower = _lax.convert_element_type(lower, dt)
        upper = _lax.convert_element_type(upper, dt)

    def body(carry):
        i, n, x = carry
        return _lax.add(i, _lax.full((), 1, dt)), n, body_fun(i, x)
    _, _, out = _while_loop(lambda c: _lax.lt(c[0], c[1]), body, (lower, upper, init_val),
                            "fori_loop body", _fori_paths(2))
    return out


def _fori_paths(skip):
    # name the carry leaves after init_val, not after the loop's own counter
    def paths(tree):
        return [None] * skip + _leaf_paths(tree.children[skip], "val")
    return paths


def map(f, xs, *, batch_size=None):
    """``f`` applied to each slice of ``xs`` along its leading axis, results stacked, one slice
    at a time (a ``scan``), as ``jnp.stack([f(x) for x in xs])``. With ``batch_size``,
    ``batch_size`` slices at a time under vmap.

    >>> fnx.lax.map(lambda x: x @ x.T, jnp.arange(6.0).reshape(3, 2))
    Array([ 1., 13., 41.], dtype=float32)
    """
    if batch_size is not None:
        return _batched_map(f, xs, int(batch_size))
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


def _batched_map(f, xs, batch_size):
    leaves, tree = tree_flatten(xs)
    n = get_aval(leaves[0]).shape[0]
    full, rest = divmod(n, batch_size)
    parts = []
    if full:
        main = [_lax.reshape(_lax.slice_in_dim(x, 0, full * batch_size),
                             (full, batch_size) + get_aval(x).shape[1:]) for x in leaves]
        ys = map(vmap(f), tree_unflatten(tree, main))
        parts.append(_tree_map_flat(lambda y: _lax.reshape(
            y, (full * batch_size,) + get_aval(y).shape[2:]), ys))
    if rest:
        tail = [_lax.slice_in_dim(x, full * batch_size, n) for x in leaves]
        parts.append(vmap(f)(tree_unflatten(tree, tail)))
    if len(parts) == 1:
        return parts[0]
    a, b = (tree_flatten(p) for p in parts)
    return tree_unflatten(a[1], [_lax.concatenate([x, y], 0) for x, y in zip(a[0], b[0])])


def _tree_map_flat(fn, tree):
    leaves, td = tree_flatten(tree)
    return tree_unflatten(td, [fn(x) for x in leaves])

"""Loops and branches in the CPU executable's generated source.

A ``scan``, ``while`` or ``cond`` equation becomes Python control flow in the program's own
function: the carry stays in locals from one iteration to the next, and each iteration is one
call of the body's compiled function, with nothing wrapped into Arrays or checked on the way.
Each does exactly what the primitive's impl does with the same compiled bodies (slices of the
scanned operands, ``np.stack`` of the per-step results, the predicate's truth, the clamped
branch index), so results are bit for bit the impl's.
"""
from __future__ import annotations

import numpy as np

from ..core.control_flow.conditionals import cond_p
from ..core.control_flow.loops import scan_p, while_p


def lower_control_flow(eqn, ins, outs, bind, compile_jaxpr, prefix):
    """The lines of source running ``eqn`` on the values named ``ins`` into the names
    ``outs``, or None where this equation has no lowering here (its impl runs instead).
    ``bind(obj, hint)`` names an object for the source; ``compile_jaxpr(jaxpr, consts)``
    compiles a body; ``prefix`` makes the names of the loop's own locals unique.

    >>> from fnx.backends.numpy_backend import backend
    >>> j = fnx.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x))(1.0).jaxpr
    >>> lines = lower_control_flow(j.eqns[0], ["a", "b"], ["c", "d"],
    ...                            lambda obj, hint: hint, backend.compile, "L_")
    >>> print("\\n".join(lines))
    L_k0, L_k1, = a, b,
    for L_i in steps:
        L_k0, L_k1, = body(L_k0, L_k1)
    c = L_k0
    d = L_k1
    """
    lower = _LOWERINGS.get(eqn.primitive)
    if lower is None or any(j.constvars for j in _jaxprs(eqn)):
        return None
    body = lambda jaxpr: compile_jaxpr(jaxpr, []).run  # noqa: E731
    return lower(eqn.params, ins, outs, lambda jaxpr: bind(body(jaxpr), "body"), body, bind,
                 prefix)


def _jaxprs(eqn):
    p = eqn.params
    if eqn.primitive is cond_p:
        return p["branches"]
    if eqn.primitive is while_p:
        return [p["cond_jaxpr"], p["body_jaxpr"]]
    return [p["jaxpr"]]


def _targets(names) -> str:
    """An assignment target unpacking a sequence of ``len(names)`` values."""
    return ", ".join(names) + ","


def _scan(params, ins, outs, run, body, bind, prefix):
    nc, nk, length = params["num_consts"], params["num_carry"], params["length"]
    if not length:
        return None
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    ny = len(outs) - nk
    carry = [f"{prefix}k{j}" for j in range(nk)]
    ys = [f"{prefix}y{j}" for j in range(ny)]
    step = f"{prefix}i"
    steps = range(length - 1, -1, -1) if params["reverse"] else range(length)
    call = f"{run(params['jaxpr'])}(" + ", ".join(
        consts + carry + [f"{x}[{step}]" for x in xs]) + ")"
    lines = [f"{_targets(carry)} = {_targets(init)}"] if nk else []
    lines += [f"{y} = []" for y in ys]
    lines.append(f"for {step} in {bind(steps, 'steps')}:")
    if nk or ny:
        per_step = [f"{prefix}t{j}" for j in range(ny)]
        lines.append(f"    {_targets(carry + per_step)} = {call}")
        lines += [f"    {y}.append({t})" for y, t in zip(ys, per_step)]
    else:
        lines.append(f"    {call}")
    if params["reverse"]:
        lines += [f"{y}.reverse()" for y in ys]
    stack = bind(np.stack, "stack")
    lines += [f"{o} = {k}" for o, k in zip(outs, carry)]
    lines += [f"{o} = {stack}({y})" for o, y in zip(outs[nk:], ys)]
    return lines


def _while(params, ins, outs, run, body, bind, prefix):
    ncc, nbc = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts, init = ins[:ncc], ins[ncc:ncc + nbc], ins[ncc + nbc:]
    carry = [f"{prefix}k{j}" for j in range(len(init))]
    predicate = f"{run(params['cond_jaxpr'])}({', '.join(cond_consts + carry)})[0]"
    step = f"{run(params['body_jaxpr'])}({', '.join(body_consts + carry)})"
    lines = [f"{_targets(carry)} = {_targets(init)}"] if carry else []
    lines.append(f"while {predicate}:")
    lines.append(f"    {_targets(carry)} = {step}" if carry else f"    {step}")
    return lines + [f"{o} = {k}" for o, k in zip(outs, carry)]


def _cond(params, ins, outs, run, body, bind, prefix):
    branches = params["branches"]
    table = bind(tuple(body(b) for b in branches), "branches")
    index, ops = ins[0], ins[1:]
    pick = f"{table}[min(max(int({index}), 0), {len(branches) - 1})]({', '.join(ops)})"
    return [f"{_targets(outs)} = {pick}" if outs else pick]


_LOWERINGS = {scan_p: _scan, while_p: _while, cond_p: _cond}

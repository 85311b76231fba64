"""Dense layers as one GEMM with a fused epilogue: ``act(x @ w + b)``.

``fuse_dense_epilogues`` finds, in a lowered program, a 2-D dot_general whose result only gets a
bias (broadcast along rows) added and, optionally, a ReLU written as ``select_n(z > 0, 0, z)``,
and replaces the group with one ``dense`` equation. The ReLU's mask (``z > 0``, which the backward
pass reads) is recomputed as ``h > 0`` right before its first use, where it fuses into that
kernel. At run time the gemm table picks, per problem, between cuBLASLt's BIAS / RELU_BIAS
epilogues and the best plain GEMM followed by a generated bias+activation kernel.
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.core import Primitive, ShapedArray
from ..core.jaxpr import Literal, Var

dense_p = Primitive("dense")     # lowering-only: never appears in a user's jaxpr
dense_p.abstract_eval = lambda x, w, b, **p: ShapedArray(p["shape"], x.dtype)
# ``p + alpha * (x @ w)``: a gradient step folded into the GEMM computing the gradient
gemm_update_p = Primitive("gemm_update")
gemm_update_p.abstract_eval = lambda x, w, p, **params: p


def _is_zero(v, producer):
    if isinstance(v, Literal):
        return np.all(np.asarray(v.val) == 0)
    e = producer.get(v)
    return e is not None and e.primitive is lax.broadcast_in_dim_p and \
        isinstance(e.invars[0], Literal) and np.all(np.asarray(e.invars[0].val) == 0)


def fuse_dense_epilogues(eqns, outvars):
    producer = {v: e for e in eqns for v in e.outvars}
    users: dict = {}
    for e in eqns:
        for v in e.invars:
            if isinstance(v, Var):
                users.setdefault(v, []).append(e)
    for v in outvars:
        if isinstance(v, Var):
            users.setdefault(v, []).append(None)
    replace, drop, sink = {}, set(), {}
    for add in eqns:
        if add.primitive is not lax.add_p:
            continue
        match = _match_bias_add(add, producer, users)
        if match is None:
            continue
        dot, bias_eqn, bias = match
        z = add.outvars[0]
        act, out, mask_eqn, acts = _activation(z, users.get(z, []), producer)
        drop.update(id(e) for e in acts)
        if mask_eqn is not None:
            if any(u is None or all(u is not a for a in acts)
                   for u in users.get(mask_eqn.outvars[0], [])):
                # the backward pass's mask, recomputed from the activation where it is used
                sink[id(mask_eqn)] = mask_eqn.replace(invars=[out, mask_eqn.invars[1]])
            else:
                drop.add(id(mask_eqn))
        x, w = dot.invars
        (lc, rc), _ = dot.params["dimension_numbers"]
        replace[id(add)] = add.replace(
            primitive=dense_p, invars=[x, w, bias], outvars=[out],
            params={"act": act, "trans_a": lc == (0,), "trans_b": rc == (1,),
                    "shape": out.aval.shape, "precision": dot.params.get("precision")})
        drop.update((id(dot), id(bias_eqn)))
    if not replace:
        return eqns
    result, pending = [], dict(sink)
    for e in eqns:
        if id(e) in drop:
            continue
        if id(e) in pending:       # moved to just before its first reader
            continue
        for m in list(pending):
            mask = sink[m]
            if any(v is mask.outvars[0] for v in e.invars):
                result.append(mask)
                del pending[m]
        result.append(replace.get(id(e), e))
    result.extend(sink[m] for m in pending)    # a mask only the program returns
    return result


def fuse_gradient_steps(eqns, outvars):
    """``p - c * dot_general(x, w)`` (an SGD step on a weight matrix) as one GEMM that reads
    ``p`` as its C operand: the gradient is never written out and read back."""
    producer = {v: e for e in eqns for v in e.outvars}
    n_users: dict = {}
    for e in eqns:
        for v in e.invars:
            if isinstance(v, Var):
                n_users[v] = n_users.get(v, 0) + 1
    for v in outvars:
        if isinstance(v, Var):
            n_users[v] = n_users.get(v, 0) + 1
    replace, drop = {}, set()
    for sub in eqns:
        if sub.primitive is not lax.sub_p or not all(isinstance(v, Var) for v in sub.invars):
            continue
        p, u = sub.invars
        mul = producer.get(u)
        if mul is None or mul.primitive is not lax.mul_p or n_users.get(u) != 1:
            continue
        lits = [v for v in mul.invars if isinstance(v, Literal)]
        ds = [v for v in mul.invars if isinstance(v, Var)]
        if len(lits) != 1 or len(ds) != 1 or np.ndim(lits[0].val) != 0:
            continue
        dot = producer.get(ds[0])
        if dot is None or dot.primitive is not lax.dot_general_p or n_users.get(ds[0]) != 1:
            continue
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        d = ds[0].aval
        if lb or rb or len(d.shape) != 2 or d.dtype != np.float32 or p.aval.shape != d.shape \
                or p.aval.dtype != d.dtype or len(lc) != 1 or len(rc) != 1 \
                or not all(isinstance(v, Var) for v in dot.invars):
            continue
        replace[id(sub)] = sub.replace(
            primitive=gemm_update_p, invars=[*dot.invars, p],
            params={"alpha": -float(np.asarray(lits[0].val)), "trans_a": lc == (0,),
                    "trans_b": rc == (1,), "precision": dot.params.get("precision")})
        drop.update((id(dot), id(mul)))
    if not replace:
        return eqns
    # steps only the program returns go last, so the elementwise updates of the other
    # parameters (biases) stay next to each other and share one launch
    outs = {v for v in outvars if isinstance(v, Var)}
    last = [r for r in replace.values() if n_users.get(r.outvars[0]) == 1
            and r.outvars[0] in outs]
    rest = [replace.get(id(e), e) for e in eqns if id(e) not in drop]
    return [e for e in rest if not any(e is r for r in last)] + last


def _activation(z, zu, producer):
    """``(act, output, mask, eqns)``: the activation the users ``zu`` of a dense layer's ``z``
    apply (``"none"`` if they are not one), its result, the comparison the backward pass reads
    as a mask (recomputable from the result, whose sign is ``z``'s), and the equations it
    replaces."""
    live = [u for u in zu if u is not None]
    if len(zu) == 1 and live and live[0].primitive in (lax.logistic_p, lax.tanh_p):
        return ("sigmoid" if live[0].primitive is lax.logistic_p else "tanh"), \
            live[0].outvars[0], None, live
    cmps = [u for u in live if u.primitive in (lax.gt_p, lax.ge_p) and u.invars[0] is z
            and _is_zero(u.invars[1], producer)]
    if len(cmps) != 1 or len(zu) not in (2, 3):
        return "none", z, None, []
    mask = cmps[0].outvars[0]
    sels = [u for u in live if u.primitive is lax.select_n_p and len(u.invars) == 3
            and u.invars[0] is mask and u.invars[2] is z]
    if len(sels) != 1:
        return "none", z, None, []
    sel = sels[0]
    if len(zu) == 2 and cmps[0].primitive is lax.gt_p and _is_zero(sel.invars[1], producer):
        return "relu", sel.outvars[0], cmps[0], [sel]
    # leaky ReLU: select_n(z >= 0, slope * z, z) with slope > 0, so that y >= 0 iff z >= 0
    scaled = producer.get(sel.invars[1])
    if len(zu) == 3 and cmps[0].primitive is lax.ge_p and scaled in live \
            and scaled.primitive is lax.mul_p:
        slope = [v for v in scaled.invars if v is not z]
        if len(slope) == 1 and isinstance(slope[0], Literal) and np.ndim(slope[0].val) == 0 \
                and float(slope[0].val) > 0:
            return f"leaky_relu:{float(slope[0].val)!r}", sel.outvars[0], cmps[0], [sel, scaled]
    return "none", z, None, []


def _match_bias_add(add, producer, users):
    for d, bb in (add.invars, add.invars[::-1]):
        dot, bc = producer.get(d), producer.get(bb)
        if dot is None or bc is None or dot.primitive is not lax.dot_general_p \
                or bc.primitive is not lax.broadcast_in_dim_p:
            continue
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        out = add.outvars[0].aval
        if lb or rb or len(out.shape) != 2 or out.dtype != np.float32 \
                or len(lc) != 1 or len(rc) != 1 or any(not isinstance(v, Var) for v in dot.invars) \
                or dot.invars[0].aval.dtype != np.float32:
            continue
        b = bc.invars[0]
        if not isinstance(b, Var) or b.aval.shape != out.shape[1:] \
                or tuple(bc.params["broadcast_dimensions"]) != (1,):
            continue
        if len(users.get(d, [])) != 1 or len(users.get(bb, [])) != 1:
            continue
        return dot, bc, b
    return None


_ACTIVATION_C = {"none": "v", "relu": "(v > 0 ? v : 0)", "sigmoid": "(1 / (1 + exp(-v)))",
                 "tanh": "tanh(v)"}


def activation_c(act: str) -> str:
    """A dense layer's activation (none, relu, sigmoid, tanh or ``leaky_relu:<slope>``) as a
    C expression of ``v``, the biased product: one table for every fused epilogue."""
    if act.startswith("leaky_relu:"):
        return f"(v >= 0 ? v : v * (decltype(v))({act.split(':', 1)[1]}))"
    return _ACTIVATION_C[act]


def act_name(act: str) -> str:
    """``act`` as a C identifier, for kernel names."""
    return "".join(c if c.isalnum() else "_" for c in act)

def bias_act_source(act, dtype):
    """``(source, name)`` of the kernel computing ``y = act(y + b)`` in place."""
    from .elementwise import C_TYPES
    t = C_TYPES[np.dtype(dtype).name]
    name = f"fnx_bias_{act_name(act)}"
    return (f'extern "C" __global__ void {name}({t}* y, const {t}* __restrict__ b, '
            "long long n, long long cols) {\n"
            "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            "       i += (long long)gridDim.x * blockDim.x) {\n"
            f"    const {t} v = y[i] + b[i % cols];\n    y[i] = {activation_c(act)};\n  }}\n}}\n",
            name)


def bias_act_(y, b, act):
    """``y = act(y + b)`` in place, ``b`` broadcast along rows."""
    n = y.size
    blocks = max(1, min(-(-n // 256), 132 * 16))
    from .compile import kernel
    kernel(*bias_act_source(act, y.dtype))((blocks,), (256,),
                                           (y, b, np.int64(n), np.int64(y.shape[-1])))
    return y


def dense(x, w, b, *, act, trans_a, trans_b, shape, precision):
    """``act(op(x) @ op(w) + b)`` on the GPU through the gemm table's epilogue candidates."""
    import cupy as cp
    from . import gemm_table
    from .executable import _matmul_precision, dense as contiguous
    out = cp.empty(shape, x.dtype)
    gemm_table.dense_into(out, contiguous(x), contiguous(w), contiguous(b), act, trans_a,
                          trans_b, _matmul_precision(precision))
    return out

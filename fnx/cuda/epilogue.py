"""Dense layers as one GEMM with a fused epilogue: ``act(x @ w + b)``.

``fuse_dense_epilogues`` replaces each dense layer ``fnx.cuda.fusion.dense_layers`` finds (a
``dense`` launch in a lowered program's printed launches) with one ``dense`` equation, its activation
included when the kernels have it (none, relu, leaky relu, sigmoid, tanh, gelu) and nothing
outside the layer reads the values it hides. A ReLU's mask (``z > 0``, which the backward pass reads) is
recomputed as ``h > 0`` right before its first use, where it fuses into that kernel. At run time
the gemm table picks, per problem, between cuBLASLt's BIAS / RELU_BIAS epilogues and the best
plain GEMM followed by a generated bias+activation kernel (and cuBLASLt's GELU_BIAS for the tanh
form of gelu, which is the one cuBLASLt computes). A ReLU layer together with its backward pass
may instead run cuBLASLt's mask-writing pair (``fnx.cuda.lt_backward``).
"""
from __future__ import annotations

import numpy as np

from ..core import lax
from ..core.core import Primitive, ShapedArray
from ..core.jaxpr import Literal, Var
from .fusion import dense_layers, expansions

dense_p = Primitive("dense")     # lowering-only: never appears in a user's jaxpr
dense_p.abstract_eval = lambda x, w, b, **p: ShapedArray(p["shape"], x.dtype)
# ``p + alpha * (x @ w)``: a gradient step folded into the GEMM computing the gradient
gemm_update_p = Primitive("gemm_update")
gemm_update_p.abstract_eval = lambda x, w, p, **params: p


def product_layout(eqn):
    """``(trans_a, trans_b, m, n, k)`` of a 2-D product: a ``dot_general`` without batch
    dimensions, a dense layer or a gradient step, ``op(x) @ op(w)`` with ``op(x)`` m x k."""
    if eqn.primitive is lax.dot_general_p:
        (lc, rc), _ = eqn.params["dimension_numbers"]
        ta, tb = tuple(lc) == (0,), tuple(rc) == (1,)
    else:
        ta, tb = eqn.params["trans_a"], eqn.params["trans_b"]
    x, w = (v.aval.shape for v in eqn.invars[:2])
    (m, k), n = (x[::-1] if ta else x), w[0 if tb else 1]
    return ta, tb, m, n, k


# the activations a dense kernel applies (fnx.cuda.fusion names -> activation_c's)
_KERNEL_ACTS = {"none": "none", "relu": "relu", "tanh": "tanh", "logistic": "sigmoid",
                "gelu_tanh": "gelu_tanh", "gelu_erf": "gelu_erf"}


def _kernel_act(layer):
    """The kernel's name for ``layer``'s activation; None if the kernels lack it."""
    if layer.act.startswith("leaky_relu:"):
        return layer.act
    return _KERNEL_ACTS.get(layer.act)


def fuse_dense_epilogues(eqns, outvars):
    layers = dense_layers(eqns, outvars)
    replace, drop, sink = {}, set(), {}
    for layer in layers:
        dot, bias_eqn, add = eqns[layer.dot], eqns[layer.bias], eqns[layer.add]
        x, w = dot.invars
        z = add.outvars[0]
        if z.aval.dtype != np.float32 or x.aval.dtype != np.float32:
            continue
        act, out = _kernel_act(layer), layer.out
        if act is None or layer.escapes:     # the GEMM and its bias; the activation apart
            act, out = "none", z
        else:
            drop.update(id(eqns[k]) for k in layer.act_eqns)
            if layer.mask is not None:
                mask = eqns[layer.mask]
                if layer.mask_read:
                    # the backward pass's mask, recomputed from the activation where it is used
                    # (the result's sign is z's)
                    sink[id(mask)] = mask.replace(invars=[out, mask.invars[1]])
                else:
                    drop.add(id(mask))
        (lc, rc), _ = dot.params["dimension_numbers"]
        replace[id(add)] = add.replace(
            primitive=dense_p, invars=[x, w, bias_eqn.invars[0]], outvars=[out],
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
    ``p`` as its C operand: the gradient is never written out and read back. Not where ``p``
    is a broadcast (fnx.cuda.fusion.expansions): that is cheaper fused into what reads the
    difference."""
    producer = {v: e for e in eqns for v in e.outvars}
    expanded = expansions(eqns)
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
        if p in expanded:
            continue
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


# relu is max(v, 0): a NaN stays NaN, as in JAX
_ACTIVATION_C = {"none": "v", "relu": "(v > 0 || v != v ? v : 0)",
                 "sigmoid": "(1 / (1 + exp(-v)))", "tanh": "tanh(v)",
                 # fnx.nn.gelu's two forms (fnx.cuda.fusion.GELU_FORMS)
                 "gelu_tanh": "((decltype(v))0.5 * v * (1 + tanh((decltype(v))0.7978845608028654"
                              " * (v + (decltype(v))0.044715 * v * v * v))))",
                 "gelu_erf": "((decltype(v))0.5 * v"
                             " * (1 + erf(v * (decltype(v))0.7071067811865476)))"}


def activation_c(act: str) -> str:
    """A dense layer's activation (none, relu, sigmoid, tanh, gelu_tanh, gelu_erf or
    ``leaky_relu:<slope>``) as a C expression of ``v``, the biased product: one table for every
    fused epilogue."""
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

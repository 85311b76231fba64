"""Jaxpr-to-jaxpr optimization passes that jit runs before lowering.

Every pass is a function ``jaxpr -> jaxpr`` that returns its argument unchanged (the same
object) when it has nothing to do, so ``optimize`` can run them to a fixed point:

* ``inline_calls``: nested ``jit`` equations spliced into the caller
* ``fold_constants``: scalar equations of literals evaluated once, on the CPU
* ``simplify``: algebraic identities (``x * 1``, ``neg(neg(x))``, a reshape to the same shape...)
* ``cse``: equal equations (same primitive, inputs and parameters) computed once
* ``dce``: equations no output needs dropped

Equations whose parameters hold jaxprs (cond, while, scan, custom derivatives) are opaque: no
pass looks inside them, and CSE compares such parameters by identity. Effectful primitives
(``has_effect``) are never merged, folded or dropped. Rewritten equations keep their
``source_info``.

These passes are backend-neutral; how the GPU groups equations into kernels, and the order it
wants them in, is its own (fnx/cuda/fusion.py, fnx/cuda/plan.py).
"""
from __future__ import annotations

import numpy as np

from . import lax
from .remat_policies import name_p
from .core import Array, EvalTrace, get_backend, set_current_trace
from .jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr, has_effect,
                    subjaxprs)

# ---------------------------------------------------------------------------------------------
# Shared helpers


def _renamed(eqn: JaxprEqn, env: dict) -> JaxprEqn:
    """``eqn`` reading ``env[v]`` in place of each renamed input ``v``."""
    if not env:
        return eqn
    new = [env.get(v, v) if isinstance(v, Var) else v for v in eqn.invars]
    if all(a is b for a, b in zip(new, eqn.invars)):
        return eqn
    return eqn.replace(invars=new)


def _rebuilt(jaxpr: Jaxpr, eqns, env: dict, changed: bool) -> Jaxpr:
    if not changed:
        return jaxpr
    outvars = [env.get(v, v) if isinstance(v, Var) else v for v in jaxpr.outvars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns)


def _same_type(a, b) -> bool:
    """Whether a value of aval ``b`` can stand for one of aval ``a`` (weak_type included)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.weak_type == b.weak_type


def _literal_value(lit: Literal) -> np.ndarray:
    return np.asarray(np.asarray(lit.val), dtype=lit.aval.dtype)


# ---------------------------------------------------------------------------------------------
# Inlining nested jit calls


# calls whose derivative rules matter only to transformations: a compiled program (which
# nothing differentiates) may splice them in; name -> the param holding the called jaxpr
EVALUATION_CALLS = {"jit": "jaxpr", "custom_jvp_call": "call_jaxpr",
                    "custom_vjp_call": "call_jaxpr", "remat": "jaxpr", "linear_call": "callee"}


def _inlinable_body(eqn, calls):
    inner = eqn.params.get(calls.get(eqn.primitive.name, ""))
    return inner if isinstance(inner, Jaxpr) and not inner.constvars and \
        len(inner.invars) == len(eqn.invars) else None


def inline_calls(jaxpr: Jaxpr, calls=None) -> Jaxpr:
    """Splice the equations of nested ``jit`` calls (``jit`` inside ``jit``) into the caller;
    ``calls`` (``{primitive name: param}``, such as ``EVALUATION_CALLS``) names more.

    >>> j = fnx.make_jaxpr(lambda x: fnx.jit(jnp.sin)(x) + 1.0)(1.0).jaxpr
    >>> [e.primitive.name for e in inline_calls(j).eqns]
    ['sin', 'add']
    """
    calls = calls or {"jit": "jaxpr"}
    env: dict = {}
    eqns: list = []
    changed = False
    for eqn in jaxpr.eqns:
        eqn = _renamed(eqn, env)
        inner = _inlinable_body(eqn, calls)
        if inner is None:
            eqns.append(eqn)     # renamed only after an inlined call, which sets ``changed``
            continue
        sub = dict(zip(inner.invars, eqn.invars))
        for ie in inner.eqns:
            outs = [Var(v.aval) for v in ie.outvars]    # fresh: the callee may be inlined twice
            eqns.append(ie.replace(
                invars=[sub.get(v, v) if isinstance(v, Var) else v for v in ie.invars],
                outvars=outs, source_info=ie.source_info or eqn.source_info))
            sub.update(zip(ie.outvars, outs))
        for o, io in zip(eqn.outvars, inner.outvars):
            env[o] = sub.get(io, io) if isinstance(io, Var) else io
        changed = True
    return _rebuilt(jaxpr, eqns, env, changed)


# ---------------------------------------------------------------------------------------------
# Constant folding


def _foldable(eqn) -> bool:
    p = eqn.primitive
    return (bool(eqn.invars) and all(isinstance(v, Literal) for v in eqn.invars)
            and not p.multiple_results and p.impl is None and not has_effect(eqn)
            and eqn.outvars[0].aval.shape == () and not subjaxprs(eqn))


def _evaluate(eqn, cpu):
    """The value of a scalar equation of literals, computed eagerly on the CPU backend (the
    impl the CPU executable would run), as a NumPy scalar; None if it cannot be computed."""
    args = [Array(_literal_value(v), cpu, v.aval.weak_type) for v in eqn.invars]
    try:
        with set_current_trace(EvalTrace(None)), np.errstate(all="ignore"):
            out = eqn.primitive.bind(*args, **eqn.params)
    except Exception:   # folding is an optimization: anything unusual stays for run time
        return None
    value = np.asarray(cpu.to_numpy(out._value))
    if value.shape != () or value.dtype != eqn.outvars[0].aval.dtype:
        return None
    return value[()]


def fold_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Replace scalar equations whose inputs are all literals by a literal of their value.

    >>> # { lambda ; a:f32[]. let b:f32[] = mul 2.0 3.0; c:f32[] = add a b in (c,) }
    >>> print(fold_constants(jaxpr))
    { lambda ; a:f32[]. let c:f32[] = add a 6.0 in (c,) }
    """
    try:
        cpu = get_backend("cpu")
    except ValueError:
        return jaxpr
    env: dict = {}
    eqns: list = []
    changed = False
    for eqn in jaxpr.eqns:
        new = _renamed(eqn, env)
        changed |= new is not eqn
        if _foldable(new):
            value = _evaluate(new, cpu)
            if value is not None:
                env[new.outvars[0]] = Literal(value, new.outvars[0].aval)
                changed = True
                continue
        eqns.append(new)
    return _rebuilt(jaxpr, eqns, env, changed)


# ---------------------------------------------------------------------------------------------
# Algebraic simplification


def is_constant(v, value, producer) -> bool:
    """Whether ``v`` is a scalar literal equal to ``value`` or a broadcast of one."""
    if isinstance(v, Var):
        e = producer.get(v)
        if e is None or e.primitive is not lax.broadcast_in_dim_p:
            return False
        v = e.invars[0]
    if not isinstance(v, Literal):
        return False
    x = _literal_value(v)
    return x.shape == () and bool(x == value)


def _binary_identity(neutral, left_ok=True):
    """``x op neutral -> x`` (and ``neutral op x -> x`` when ``left_ok``)."""
    def rule(eqn, producer):
        x, y = eqn.invars
        if is_constant(y, neutral, producer):
            return x
        if left_ok and is_constant(x, neutral, producer):
            return y
        return None
    return rule


def _double_neg(eqn, producer):
    e = producer.get(eqn.invars[0])
    return e.invars[0] if e is not None and e.primitive is lax.neg_p else None


def _same_operand(eqn, producer):
    # convert_element_type to the same type, reshape to the same shape and friends: the output
    # type check in ``simplify`` decides whether the operand can stand for the result
    return eqn.invars[0]


def _reshape(eqn, producer):
    x = eqn.invars[0]
    if tuple(x.aval.shape) == tuple(eqn.params["new_sizes"]):
        return x
    e = producer.get(x)
    if e is not None and e.primitive is lax.reshape_p:     # reshape of a reshape: one reshape
        return eqn.replace(invars=[e.invars[0]])
    return None


def _transpose(eqn, producer):
    perm = tuple(eqn.params["permutation"])
    if perm == tuple(range(len(perm))):
        return eqn.invars[0]
    e = producer.get(eqn.invars[0])
    if e is not None and e.primitive is lax.transpose_p:
        inner = tuple(e.params["permutation"])
        composed = tuple(inner[p] for p in perm)
        if composed == tuple(range(len(composed))):
            return e.invars[0]
        return eqn.replace(invars=[e.invars[0]], params=dict(eqn.params, permutation=composed))
    return None


def _dot_of_transposes(eqn, producer):
    """A product of a transposed operand reads the operand itself, the transpose folded into
    its dimension numbers (as a GEMM's op(A) reads A), where the operand's free axes keep
    their order (so the result's layout is the same)."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    invars, dims, folded = list(eqn.invars), [(lc, lb), (rc, rb)], False
    for k, (contract, batch) in enumerate(dims):
        e = producer.get(invars[k])
        if e is None or e.primitive is not lax.transpose_p:
            continue
        perm = tuple(e.params["permutation"])
        free = [perm[i] for i in range(len(perm)) if i not in contract and i not in batch]
        if free != sorted(free):
            continue
        dims[k] = (tuple(perm[i] for i in contract), tuple(perm[i] for i in batch))
        invars[k], folded = e.invars[0], True
    if not folded:
        return None
    (lc, lb), (rc, rb) = dims
    return eqn.replace(invars=invars,
                       params=dict(eqn.params, dimension_numbers=((lc, rc), (lb, rb))))


def _broadcast(eqn, producer):
    x = eqn.invars[0]
    dims = tuple(eqn.params["broadcast_dimensions"])
    if tuple(x.aval.shape) == tuple(eqn.params["shape"]) and dims == tuple(range(len(dims))):
        return x
    return None


def _select(eqn, producer):
    cases = eqn.invars[1:]
    return cases[0] if all(c is cases[0] for c in cases) else None


def _integer_pow(eqn, producer):
    return eqn.invars[0] if eqn.params["y"] == 1 else None


def _log(eqn, producer):
    # log(exp(x)) -> x, as XLA's simplifier rewrites it (jit(f)(100.0) is 100, not inf)
    e = producer.get(eqn.invars[0])
    return e.invars[0] if e is not None and e.primitive is lax.exp_p else None


# primitive -> rule(eqn, producer) -> an atom that replaces the result, a rewritten equation,
# or None. ``x + 0 -> x`` turns -0.0 + 0.0 (= +0.0) into -0.0, as XLA's simplifier does.
# stop_gradient stays: the jaxpr may still be differentiated (grad of a jitted function).
_SIMPLIFY = {
    lax.add_p: _binary_identity(0),
    lax.sub_p: _binary_identity(0, left_ok=False),
    lax.mul_p: _binary_identity(1),
    lax.div_p: _binary_identity(1, left_ok=False),
    lax.neg_p: _double_neg,
    lax.convert_element_type_p: _same_operand,
    lax.reshape_p: _reshape,
    lax.transpose_p: _transpose,
    lax.dot_general_p: _dot_of_transposes,
    lax.broadcast_in_dim_p: _broadcast,
    lax.select_n_p: _select,
    lax.integer_pow_p: _integer_pow,
    lax.log_p: _log,
    # names matter only to the checkpoint policies, applied when the program was traced
    name_p: lambda eqn, producer: eqn.invars[0],
}


def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Remove algebraic identities: ``x * 1``, ``x + 0``, ``x - 0``, ``x / 1``, ``neg(neg(x))``,
    ``log(exp(x))``, conversions to the same dtype, reshapes, transposes and broadcasts that change nothing;
    merge a reshape of a reshape and a transpose of a transpose; fold a transpose into the
    product that reads it. A result is replaced only by a
    value of exactly its type (shape, dtype and weak_type).

    >>> j = fnx.make_jaxpr(lambda x: -(-(x * 1.0)))(jnp.ones(3)).jaxpr
    >>> simplify(j).eqns, simplify(j).outvars == j.invars
    ([], True)
    """
    env: dict = {}
    eqns: list = []
    producer: dict = {}
    changed = False
    for eqn in jaxpr.eqns:
        new = _renamed(eqn, env)
        changed |= new is not eqn
        rule = _SIMPLIFY.get(new.primitive)
        out = rule(new, producer) if rule is not None and not has_effect(new) else None
        if isinstance(out, (Var, Literal)) and _same_type(new.outvars[0].aval, out.aval):
            env[new.outvars[0]] = out
            changed = True
            continue
        if isinstance(out, JaxprEqn):
            new, changed = out, True
        for v in new.outvars:
            producer[v] = new
        eqns.append(new)
    return _rebuilt(jaxpr, eqns, env, changed)


# ---------------------------------------------------------------------------------------------
# Common subexpression elimination


def _param_key(x):
    """A hashable stand-in for a parameter value; jaxprs and other unhashable values by
    identity."""
    if isinstance(x, dict):
        return ("dict", tuple(sorted((k, _param_key(v)) for k, v in x.items())))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_param_key(v) for v in x))
    if isinstance(x, (Jaxpr, ClosedJaxpr, np.ndarray)):
        return ("id", id(x))
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return (type(x), x)


def _atom_key(v):
    if isinstance(v, Var):
        return v
    x = _literal_value(v)      # bytes: 0.0 and -0.0 are different literals
    return ("literal", x.dtype.str, v.aval.weak_type, x.tobytes())


def _cse_key(eqn):
    if has_effect(eqn):
        return None
    if not any(isinstance(v, Var) for v in eqn.invars) and \
            any(v.aval.shape != () for v in eqn.outvars):
        # a broadcast literal or an iota: fused consumers recompute it in registers, so one
        # shared copy would have to be written to memory instead
        return None
    return (eqn.primitive, tuple(_atom_key(v) for v in eqn.invars), _param_key(eqn.params))


def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Compute equal equations once: the same primitive on the same inputs with equal
    parameters. Effectful equations are never merged.

    >>> j = fnx.make_jaxpr(lambda x: jnp.sin(x) + jnp.sin(x))(1.0).jaxpr
    >>> [e.primitive.name for e in cse(j).eqns]
    ['sin', 'add']
    """
    env: dict = {}
    eqns: list = []
    seen: dict = {}
    changed = False
    for eqn in jaxpr.eqns:
        new = _renamed(eqn, env)
        changed |= new is not eqn
        key = _cse_key(new)
        prev = seen.get(key) if key is not None else None
        if prev is not None and all(_same_type(a.aval, b.aval)
                                    for a, b in zip(new.outvars, prev.outvars)):
            env.update(zip(new.outvars, prev.outvars))
            changed = True
            continue
        if key is not None:
            seen[key] = new
        eqns.append(new)
    return _rebuilt(jaxpr, eqns, env, changed)


# ---------------------------------------------------------------------------------------------
# Equations computed one element at a time (each one a C expression in fnx.cuda.elementwise
# too); iota's elements are their own indices

ELEMENTWISE = frozenset(lax.elementwise_primitives()) | {
    lax.select_n_p, lax.convert_element_type_p, lax.iota_p, name_p}


# ---------------------------------------------------------------------------------------------
# Dead code and the driver


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drop equations no output needs (effectful ones stay); the inputs stay as they are."""
    new, _ = dce_jaxpr(jaxpr)
    return jaxpr if len(new.eqns) == len(jaxpr.eqns) else new


PASSES = (inline_calls, fold_constants, simplify, cse, dce)


def optimize(jaxpr: Jaxpr, max_rounds: int = 4) -> Jaxpr:
    """Run ``PASSES`` in order until none changes anything (at most ``max_rounds`` times).

    >>> j = fnx.make_jaxpr(lambda x: jnp.sin(x) * 1.0 + jnp.sin(x))(1.0).jaxpr
    >>> [e.primitive.name for e in optimize(j).eqns]
    ['sin', 'add']
    """
    for _ in range(max_rounds):
        before = jaxpr
        for p in PASSES:
            jaxpr = p(jaxpr)
        if jaxpr is before:
            break
    return jaxpr

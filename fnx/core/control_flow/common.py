"""What the control-flow primitives share: tracing bodies and branches into jaxprs, their JVPs
and vmaps, operand checks, and running a jaxpr on concrete buffers (the primitives' impls)."""
from __future__ import annotations

import weakref

from .. import lax as _lax
from .. import batching, dtypes
from ..api_util import flatten_fun
from ..config import config
from ..nan_checks import checking
from ..core import Array, get_aval, get_backend
from ..errors import FnxError
from ..jaxpr import Jaxpr, JaxprTypeError, Var, eval_jaxpr
from ..partial_eval import trace_to_jaxpr_dynamic
from ..pytree import tree_unflatten, treedef_is_leaf


class ControlFlowValueError(FnxError, ValueError):
    """A scan's ``length`` disagrees with its xs, or it has neither (JAX raises ValueError)."""


class ControlFlowTypeError(FnxError, TypeError):
    """The branches of a cond/switch return different structures, shapes or dtypes, a loop
    body changes its carry's structure, shape or dtype, or a predicate/index has the wrong
    type.

    >>> try:
    ...     lax.cond(True, lambda: jnp.ones(3), lambda: jnp.ones(4))
    ... except lax.ControlFlowTypeError as e:
    ...     print(type(e).__name__)
    ControlFlowTypeError
    """


class ReverseModeWhileLoopError(FnxError, ValueError):
    """Reverse-mode differentiation (grad, vjp, jacrev) reached a while_loop.

    >>> loop = lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)
    >>> try:
    ...     fnx.grad(loop)(1.0)
    ... except lax.ReverseModeWhileLoopError as e:
    ...     print(type(e).__name__)
    ReverseModeWhileLoopError
    """


_WHILE_REVERSE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "traced (non-static) bounds: the number of iterations is not known ahead, so the values "
    "of every iteration cannot be saved for the backward pass. Use lax.fori_loop with static "
    "Python-int bounds (it becomes a scan), or lax.scan, or differentiate in forward mode "
    "(jvp, jacfwd).")


# Helpers: splitting lists, naming pytree leaves, tracing functions into jaxprs


def _split(xs, *sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


def _typematch(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _leaf_paths(treedef, prefix: str) -> list[str]:
    """A name per leaf of ``treedef``, such as ``carry[1]['w']``, for error messages."""
    if treedef_is_leaf(treedef):
        return [prefix]
    fields = getattr(treedef.node, "_fields", None)
    out = []
    for i, child in enumerate(treedef.children):
        if treedef.node is dict:
            key = f"[{treedef.aux[i]!r}]"
        elif fields is not None:
            key = f".{fields[i]}"
        else:
            key = f"[{i}]"
        out.extend(_leaf_paths(child, prefix + key))
    return out


def _trace_tree_fun(fun, in_tree, in_avals, what):
    """Trace ``fun(*args) -> pytree`` where ``args`` unflatten from ``in_tree``; returns
    ``(jaxpr, consts, out_tree)``."""
    flat, out_tree = flatten_fun(fun, in_tree)
    jaxpr, consts = trace_to_jaxpr_dynamic(flat, in_avals, what)
    return jaxpr, consts, out_tree()


def _trace_carry_fun(fun, tree, avals, what, adopt=False):
    """Trace ``fun(carry) -> pytree``, the carry unflattening from ``tree``; returns
    ``(jaxpr, consts, out_tree)``. With ``adopt``, weakly typed outputs (Python scalars) take
    the dtype of the carry they replace."""
    flat, out_tree = flatten_fun(lambda *leaves: fun(tree_unflatten(tree, leaves)))

    def adopting(*leaves):
        outs = flat(*leaves)
        if adopt and out_tree() == tree:
            outs = [_adopt(o, get_aval(x)) for o, x in zip(outs, leaves)]
        return outs
    jaxpr, consts = trace_to_jaxpr_dynamic(adopting, avals, what)
    return jaxpr, consts, out_tree()


def _join_consts(pieces):
    """``pieces``: ``(jaxpr, consts)`` pairs, each jaxpr taking its consts first. Returns jaxprs
    that all take the same consts first (every piece's, each value once) and those consts."""
    union: list = []
    where: dict = {}
    slots_per_piece = []
    for _, consts in pieces:
        slots = []
        for c in consts:
            k = where.get(id(c))
            if k is None or k in slots:
                k = len(union)
                union.append(c)
                where.setdefault(id(c), k)
            slots.append(k)
        slots_per_piece.append(slots)
    out = []
    for (jaxpr, consts), slots in zip(pieces, slots_per_piece):
        head: list = [None] * len(union)
        for v, k in zip(jaxpr.invars[:len(consts)], slots):
            head[k] = v
        head = [v if v is not None else Var(get_aval(c)) for v, c in zip(head, union)]
        out.append(Jaxpr([], head + jaxpr.invars[len(consts):], jaxpr.outvars, jaxpr.eqns))
    return out, union


def _bdim_to(x, d, dst, size):
    """``x`` batched at ``dst`` (moved from ``d``, or broadcast when ``d`` is None)."""
    return batching.move_batch_axis(size, d, dst, x)


def _check_operands(what, invars, avals):
    if len(invars) != len(avals):
        raise JaxprTypeError(f"{what} takes {len(invars)} operands, got {len(avals)}",
                             source=None)
    for v, a in zip(invars, avals):
        if not _typematch(v.aval, a):
            raise JaxprTypeError(f"{what} expects an operand {v.aval.str_short()}, got "
                                 f"{a.str_short()}", source=None)


# Running jaxprs on concrete buffers (the primitives' impls)

_executables: "weakref.WeakKeyDictionary[Jaxpr, dict]" = weakref.WeakKeyDictionary()


class _Runner:
    """``jaxpr`` as a function of buffers on ``backend``: compiled once per jaxpr on the CPU,
    interpreted equation by equation elsewhere and under debug_nans (which then checks every
    equation)."""

    def __init__(self, jaxpr: Jaxpr, backend):
        self.backend = backend
        self.out_dtypes = [v.aval.dtype for v in jaxpr.outvars]
        if backend.name == "cpu" and not checking(config):
            per_backend = _executables.setdefault(jaxpr, {})
            exe = per_backend.get(backend.name)
            if exe is None:
                exe = per_backend[backend.name] = backend.compile(jaxpr, [])
            self.fn = exe
        else:
            weak = [v.aval.weak_type for v in jaxpr.invars]

            def interpret(*bufs):
                outs = eval_jaxpr(jaxpr, [], *[Array(b, backend, w) for b, w in zip(bufs, weak)])
                return [backend.to_buffer(o, dt) for o, dt in zip(outs, self.out_dtypes)]
            self.fn = interpret

    def __call__(self, *bufs):
        cast = self.backend.cast
        return [cast(o, dt) for o, dt in zip(self.fn(*bufs), self.out_dtypes)]


def _backend_of(args):
    for a in args:
        if type(a) is Array:
            return a._backend
    return get_backend()


def _buffers(args, avals, backend):
    return [backend.cast(backend.to_buffer(a, av.dtype), av.dtype) for a, av in zip(args, avals)]


def _arrays(bufs, avals, backend):
    return [Array(b, backend, a.weak_type) for b, a in zip(bufs, avals)]


def _weak_adopts(a, target) -> bool:
    """Whether a weakly typed value of aval ``a`` (a Python scalar, or arithmetic on one) takes
    the dtype of a strongly typed ``target`` of the same shape, as when they meet in an op."""
    if not a.weak_type or target.weak_type or a.shape != target.shape or \
            a.dtype == target.dtype:
        return False
    try:
        return dtypes.result_type((a.dtype, True), (target.dtype, False))[0] == target.dtype
    except TypeError:
        return False


def _adopt(x, target):
    if _weak_adopts(get_aval(x), target):
        return _lax.convert_element_type(x, target.dtype)
    return x


def _aval_or_error(x, what):
    try:
        return get_aval(x)
    except TypeError:
        raise ControlFlowTypeError(f"{what} must be an array or a Python scalar, got "
                                   f"{type(x).__name__}") from None

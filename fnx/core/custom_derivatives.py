"""User-defined derivatives (``custom_jvp``, ``custom_vjp``) and rematerialisation
(``checkpoint``), as higher-order primitives holding jaxprs.

* ``custom_jvp_call`` holds the traced function (``call_jaxpr``) and a Python JVP rule on flat
  lists. Eagerly and under vmap it is the function; under differentiation the rule replaces it.
* ``custom_vjp_call`` holds the traced function and the user's ``fwd``/``bwd``. Its JVP runs
  ``fwd`` and emits the output tangent through ``custom_lin``, linear in the tangents, whose
  transpose calls ``bwd``. ``custom_lin`` therefore only ever appears in linear jaxprs that get
  transposed; evaluating it means forward mode, which custom_vjp cannot do (as in JAX).
* ``remat`` holds a jaxpr whose intermediates are not saved for the backward pass: its partial
  evaluation keeps only the inputs (plus what ``policy`` allows) and stages the whole computation
  again, and its transpose recomputes the forward values before transposing.

Values a traced function closes over become the jaxpr's constants and then explicit leading
arguments of the primitive (``num_consts`` of them for the custom-derivative primitives), so every
transformation sees them. The user's rules stay Python callables and run where the rule is
applied, below the transformations applied inside the differentiated function; a rule that
closes over a value of such an inner transformation (a vmap inside a grad) gets a clear error
asking to pass the value as an argument (traced ``nondiff_argnums`` of a custom_jvp are explicit
operands for this reason).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from typing import Any

import numpy as np

from . import ad, batching, dtypes, state
from . import lax as _lax
from .ad import UndefinedPrimal, Zero, backward_pass, is_undefined, tangent_aval
from .core import EvalTrace, Tracer, current_trace, get_aval, set_current_trace
from .errors import CotangentTypeError, FnxError, TracerLeakError
from .api_util import flatten_fun, is_float0
from .jaxpr import (Jaxpr, Var, bind_equation, dce_jaxpr, eval_jaxpr,
                    jaxpr_with_consts_as_args)
from .partial_eval import JaxprTrace, trace_to_jaxpr, trace_to_jaxpr_dynamic
from .pytree import tree_flatten, tree_unflatten, treedef_is_leaf
from .remat_policies import checkpoint_name, checkpoint_policies  # noqa: F401 (re-exported)
from .traceback_util import api_boundary


class CustomJVPException(FnxError):
    """A custom_jvp function was differentiated with respect to a value it closes over."""


class CustomVJPException(FnxError):
    """A custom_vjp function was used in a way its rule cannot describe (closed-over values
    being differentiated, traced values in ``nondiff_argnums``)."""


class CustomVJPForwardModeError(FnxError, TypeError):
    """Forward-mode differentiation (jvp, jacfwd, linearize) reached a custom_vjp function."""


_FWD_MODE_MSG = ("can't apply forward-mode autodiff (jvp) to a custom_vjp function; it defines "
                 "only reverse mode (use grad/vjp/jacrev, or define the function with "
                 "custom_jvp instead)")

_CLOSURE_JVP_MSG = (
    "Detected differentiation of a custom_jvp function with respect to a closed-over value. "
    "That isn't supported because the custom JVP rule only specifies how to differentiate the "
    "custom_jvp function with respect to explicit input parameters. Try passing the "
    "closed-over value into the custom_jvp function as an argument, and adapting the "
    "custom_jvp rule.")

_CLOSURE_VJP_MSG = (
    "Detected differentiation of a custom_vjp function with respect to a closed-over value. "
    "That isn't supported because the custom VJP rule only specifies how to differentiate the "
    "custom_vjp function with respect to explicit input parameters. Pass the closed-over "
    "value into the custom_vjp function as an argument, and return its cotangent from bwd.")


# ---------------------------------------------------------------------------------------------
# Helpers


def _name(f) -> str:
    return getattr(f, "__name__", str(f))


def forward_attr(self, name):
    """A custom function's unknown attributes are its function's, so decorators stack
    (``custom_vjp`` over ``custom_vmap`` reaches ``def_vmap``), as in JAX."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return getattr(self.__getattribute__("fun"), name)


def _is_var(v) -> bool:
    return isinstance(v, Var)


def _resolve_kwargs(fun, args, kwargs):
    """Keyword arguments moved into their positions (custom rules see positional args only)."""
    if not kwargs:
        return tuple(args)
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"keyword-only arguments of {_name(fun)} can't be resolved to "
                        "positions; custom_jvp/custom_vjp functions take positional arguments")
    return tuple(bound.args)


def _check_argnums(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -nargs <= i < nargs:
            raise ValueError(f"{name}: nondiff_argnums {argnums} out of range for {nargs} "
                             "positional arguments")
    return sorted({i % nargs for i in nums})


def _trace_pytree_fun(fun, leaves, what):
    """Trace ``fun(*leaves) -> pytree``; returns ``(jaxpr, consts, out_tree)``."""
    flat, out_tree = flatten_fun(fun)
    jaxpr, consts = trace_to_jaxpr_dynamic(flat, [get_aval(x) for x in leaves], what)
    return jaxpr, consts, out_tree()


def _batch_jaxpr(jaxpr, dims, size):
    """``jaxpr`` vmapped over inputs batched at ``dims`` (0 or None), every output batched at
    0. Returns ``(jaxpr, consts)``, the jaxpr taking the consts first."""
    batched, consts, _ = batching.batch_jaxpr(jaxpr, size, [d is not None for d in dims], True)
    return batched, consts


def _vmap_flat(f, vals, dims, size):
    """``f`` (flat list -> flat list) vmapped over ``vals`` batched at ``dims``; outputs at 0."""
    return batching.batch_flat(lambda *xs: list(f(list(xs))), vals, dims, size)


def _batch_dims_to_front(vals, dims):
    """Batched values with their batch axis moved to 0; their new dims (0 or None)."""
    vals = [v if d in (None, 0) else _lax.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    return vals, [None if d is None else 0 for d in dims]


def _match_aval(x, aval, what, error=TypeError):
    """``x`` as a value of ``aval``'s shape and dtype: weakly typed values (Python scalars)
    adopt the dtype; any other mismatch raises ``error``."""
    have = get_aval(x)
    if have.shape != aval.shape:
        raise error(f"{what}: expected shape/dtype {aval.str_short()}, got "
                    f"{have.str_short()}")
    if have.dtype != aval.dtype:
        if not have.weak_type:
            raise error(f"{what}: expected shape/dtype {aval.str_short()}, got "
                        f"{have.str_short()}")
        x = _lax.convert_element_type(x, aval.dtype)
    return x


@contextlib.contextmanager
def _closure_hint(kind, rule):
    """Turns a tracer leak inside a user rule into an error that says what usually causes it:
    the rule closes over a value of a transformation that is not active where rules run."""
    try:
        yield
    except TracerLeakError as err:
        exc = CustomJVPException if kind == "custom_jvp" else CustomVJPException
        hint = " (nondiff_argnums for non-differentiable ones)" if kind == "custom_jvp" else ""
        raise exc(f"the {kind} rule {rule} uses a traced value it closes over (for example one "
                  "batched by a vmap inside the differentiated function). Rules run outside "
                  "the transformations applied inside the differentiated function, so pass "
                  f"such values to the function as arguments{hint}.") from err


def _call_transpose(cts, *args, call_jaxpr, **_):
    """Transpose of a custom-derivative call applied to linear arguments: transpose its body."""
    return _transpose_jaxpr(call_jaxpr, args, cts)


# ---------------------------------------------------------------------------------------------
# custom_jvp


class SymbolicZero:
    """The tangent a ``custom_jvp`` rule declared with ``symbolic_zeros=True`` receives for an
    input that is not perturbed: its type (``shape``, ``dtype``, ... as the aval's), and no
    array (JAX's ``SymbolicZero``). A rule may return one for an output whose tangent is zero.

    >>> z = SymbolicZero.from_primal_value(jnp.ones(3))
    >>> z, z.shape, z.dtype
    (SymbolicZero, (3,), dtype('float32'))
    """
    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __getattr__(self, name):
        return getattr(self.aval, name)

    @staticmethod
    def from_primal_value(value) -> "SymbolicZero":
        return SymbolicZero(tangent_aval(get_aval(value)))

    def __repr__(self):
        return "SymbolicZero"


@dataclasses.dataclass
class CustomVJPPrimal:
    """What a ``custom_vjp`` forward rule declared with ``symbolic_zeros=True`` gets for each
    argument leaf: its ``value``, and whether it is ``perturbed`` (differentiated).

    >>> @fnx.custom_vjp
    ... def f(x, y):
    ...     return x * y
    >>> def f_fwd(x, y):
    ...     print(x.perturbed, y.perturbed)
    ...     return f(x.value, y.value), (x.value, y.value)
    >>> f.defvjp(f_fwd, lambda res, g: (g * res[1], g * res[0]), symbolic_zeros=True)
    >>> fnx.grad(f)(2.0, 3.0)
    True False
    Array(3., dtype=float32, weak_type=True)
    """
    __slots__ = ("value", "perturbed")
    value: Any
    perturbed: bool


def _zeros_of(zero: SymbolicZero):
    return ad.instantiate(Zero(zero.aval))


def zero_from_primal(value, symbolic_zeros: bool = False):
    """Zero tangents for every leaf of ``value``: symbolic zeros, or zero arrays.

    >>> zero_from_primal({"w": jnp.ones(2)})
    {'w': Array([0., 0.], dtype=float32)}
    """
    leaves, tree = tree_flatten(value)
    zeros = [SymbolicZero.from_primal_value(x) for x in leaves]
    return tree_unflatten(tree, zeros if symbolic_zeros else [_zeros_of(z) for z in zeros])


class custom_jvp:
    """A function with a user-defined JVP rule, used by every differentiation transformation.

    >>> @custom_jvp
    ... def log1pexp(x):
    ...     return fnx.numpy.log1p(fnx.numpy.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     x, = primals
    ...     x_dot, = tangents
    ...     return log1pexp(x), x_dot * (1 - 1 / (1 + fnx.numpy.exp(x)))
    >>> fnx.grad(log1pexp)(100.0)   # autodiff of the formula gives nan
    Array(1., dtype=float32, weak_type=True)

    Arguments in ``nondiff_argnums`` are passed first to the rule, outside the primals/tangents
    tuples: ``jvp(*nondiff_args, primals, tangents)``.
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    __getattr__ = forward_attr

    def defjvp(self, jvp, symbolic_zeros: bool = False):
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``; returns it, so
        it works as a decorator. The tangent of an input that is not perturbed is a zero array,
        or with ``symbolic_zeros=True`` a ``SymbolicZero`` (which the rule may also return).

        >>> @fnx.custom_jvp
        ... def f(x, y):
        ...     return x * y
        >>> @functools.partial(f.defjvp, symbolic_zeros=True)
        ... def f_jvp(primals, tangents):
        ...     (x, y), (dx, dy) = primals, tangents
        ...     print(type(dy).__name__)
        ...     return f(x, y), dx * y
        >>> fnx.grad(f)(2.0, 3.0)
        SymbolicZero
        Array(3., dtype=float32, weak_type=True)
        """
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument, ``jvp_i(tangent_i, primal_out, *primals)`` (None: the output
        does not depend on that argument); the contributions are summed.

        >>> @fnx.custom_jvp
        ... def f(x, y):
        ...     return fnx.numpy.sin(x) * y
        >>> f.defjvps(lambda x_dot, ans, x, y: fnx.numpy.cos(x) * x_dot * y,
        ...           lambda y_dot, ans, x, y: fnx.numpy.sin(x) * y_dot)
        """
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            out_leaves, out_tree = tree_flatten(primal_out)
            acc = [None] * len(out_leaves)
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contrib = tree_flatten(rule(t, primal_out, *primals))[0]
                acc = [c if a is None else _lax.add(a, c) for a, c in zip(acc, contrib)]
            acc = [ad.zeros_like_aval(get_aval(o)) if a is None else a
                   for a, o in zip(acc, out_leaves)]
            return primal_out, tree_unflatten(out_tree, acc)
        self.defjvp(jvp)

    @api_boundary
    def __call__(self, *args, **kwargs):
        name = _name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_kwargs(self.fun, args, kwargs)
        nondiff = _check_argnums(self.nondiff_argnums, len(args), f"custom_jvp {name}")
        if _runs_as_python(args):
            return self.fun(*args)
        diff_args = tuple(a for i, a in enumerate(args) if i not in nondiff)
        # Traced values inside nondiff args travel as explicit (never differentiated) operands,
        # so every transformation sees them; everything else in them stays static Python.
        nd_leaves, nd_tree = tree_flatten(tuple(args[i] for i in nondiff))
        nd_traced = [isinstance(x, Tracer) for x in nd_leaves]
        nd_dyn = [x for x, t in zip(nd_leaves, nd_traced) if t]

        def full_args(nd_vals, diff_vals):
            it = iter(nd_vals)
            nd = tree_unflatten(nd_tree, [next(it) if t else x
                                          for x, t in zip(nd_leaves, nd_traced)])
            nd_it, diff_it = iter(nd), iter(diff_vals)
            return tuple(next(nd_it) if i in nondiff else next(diff_it)
                         for i in range(len(args)))

        leaves, in_tree = tree_flatten(diff_args)
        n_nd = len(nd_dyn)
        user_jvp = self.jvp
        out: dict = {}      # the output tree and avals, from tracing fun or else from the rule

        def flat_jvp(primals, tangents):
            now = full_args(primals[:n_nd], diff_args)
            static = [now[i] for i in nondiff]
            py_p = tree_unflatten(in_tree, primals[n_nd:])
            py_t = tree_unflatten(in_tree, [SymbolicZero(t.aval) if isinstance(t, Zero) else t
                                            for t in tangents[n_nd:]])
            pair = user_jvp(*static, py_p, py_t)
            return _check_jvp_output(pair, out, name, _name(user_jvp))
        flat_jvp.__name__ = _name(user_jvp)
        flat_jvp.symbolic_zeros = self.symbolic_zeros
        if _differentiated_here(nd_dyn + leaves, nondiff_too=n_nd):
            # as in JAX, forward mode runs only the rule: fun itself is not traced
            outs = custom_jvp_call_p.bind(*nd_dyn, *leaves, call_jaxpr=None, jvp=flat_jvp,
                                          num_consts=0)
            return tree_unflatten(out["tree"], outs)

        def flat_fun(*xs):
            return self.fun(*full_args(xs[:n_nd], tree_unflatten(in_tree, xs[n_nd:])))
        jaxpr, consts, out["tree"] = _trace_pytree_fun(flat_fun, nd_dyn + leaves,
                                                       f"the custom_jvp function {name}")
        out["avals"] = jaxpr.out_avals
        outs = custom_jvp_call_p.bind(*consts, *nd_dyn, *leaves, call_jaxpr=jaxpr,
                                      jvp=flat_jvp, num_consts=len(consts))
        return tree_unflatten(out["tree"], outs)


def _runs_as_python(args) -> bool:
    """Concrete arguments, with no transformation (or only grad's split of known values) in
    force: the function runs as Python on them, as in JAX, so Python control flow on their
    values works (as inside a rule). Under jvp, vmap or jit it is traced, so a value it closes
    over is found."""
    if any(isinstance(x, Tracer) for x in tree_flatten(args)[0]):
        return False
    trace = current_trace()
    return isinstance(trace, EvalTrace) or (isinstance(trace, JaxprTrace)
                                            and not trace.stage_all)


def _differentiated_here(leaves, nondiff_too=0) -> bool:
    """Whether the innermost transformation of ``leaves`` is forward-mode differentiation (of
    none of the first ``nondiff_too``, whose tangents must stay zero): then a custom rule
    replaces the function, which need not be traced at all."""
    levels = [x._trace.level if isinstance(x, Tracer) else -1 for x in leaves]
    if not levels or max(levels) < 0:
        return False
    top = max(levels)
    trace = next(x._trace for x in leaves if isinstance(x, Tracer) and x._trace.level == top)
    if not isinstance(trace, ad.JVPTrace) or top in levels[:nondiff_too]:
        return False
    above = current_trace()     # traces above it must hand the call down to it unstaged
    while above is not trace and above is not None:
        if isinstance(above, JaxprTrace) and above.stage_all:
            return False
        above = above.parent
    return above is trace


def _check_jvp_output(pair, out, name, jvp_name):
    """The rule's primal and tangent outputs as flat lists, checked against the function's
    output (``out``: its tree and avals; when the function was not traced, the rule's primal
    output sets them)."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce a pair "
                        f"(list or tuple of length two) representing primal and tangent "
                        f"outputs, but got {pair!r:.200}.")
    p_leaves, p_tree = tree_flatten(pair[0])
    t_leaves, t_tree = tree_flatten(pair[1])
    t_leaves = [_zeros_of(t) if isinstance(t, SymbolicZero) else t for t in t_leaves]
    out_tree = out.setdefault("tree", p_tree)
    out_avals = out.get("avals") or [get_aval(p) for p in p_leaves]
    if p_tree != out_tree:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce a primal "
                        f"output with the structure of {name}'s output {out_tree}, got "
                        f"{p_tree}.")
    if t_tree != p_tree:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce primal "
                        "and tangent outputs with equal container (pytree) structures, but got "
                        f"{p_tree} and {t_tree} respectively.")
    p_leaves = [_match_aval(p, a, f"Custom JVP rule {jvp_name} for function {name}: primal "
                            "output (must equal the function's output in shape and dtype)")
                for p, a in zip(p_leaves, out_avals)]
    # an integer output's tangent is float0 in JAX's rules: fnx carries integer zeros
    t_leaves = [_lax.full(a.shape, 0, tangent_aval(a).dtype)
                if is_float0(t) and not dtypes.is_float(a.dtype) else t
                for t, a in zip(t_leaves, out_avals)]
    t_leaves = [_match_aval(t, tangent_aval(a), f"Custom JVP rule {jvp_name} for function "
                            f"{name}: tangent output (must match the primal output)")
                for t, a in zip(t_leaves, out_avals)]
    return p_leaves, t_leaves


custom_jvp_call_p = _lax.primitive("custom_jvp_call", multiple_results=True)


def _custom_jvp_call_impl(*args, call_jaxpr, jvp, num_consts):
    return eval_jaxpr(call_jaxpr, [], *args)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    if any(not isinstance(t, Zero) for t in tangents[:num_consts]):
        raise CustomJVPException(_CLOSURE_JVP_MSG)
    # as JAX: the rule sees zero arrays for unperturbed inputs, or with symbolic_zeros the
    # Zeros themselves (flat_jvp hands them on as SymbolicZeros)
    tangents = tangents[num_consts:]
    if not getattr(jvp, "symbolic_zeros", False):
        tangents = [ad.instantiate(t) for t in tangents]
    with _closure_hint("custom_jvp", _name(jvp)):
        return jvp(list(primals[num_consts:]), tangents)


def _custom_jvp_call_batch(vals, dims, *, call_jaxpr, jvp, num_consts):
    size = batching.batch_size(vals, dims)
    vals, dims = _batch_dims_to_front(vals, dims)
    jaxpr, consts = _batch_jaxpr(call_jaxpr, dims, size)
    arg_dims = dims[num_consts:]

    def batched_jvp(primals, tangents):
        # a tangent has its primal's type, so it is batched exactly where its primal is; a
        # symbolic zero stays one, of its primal's unbatched type
        n = len(primals)
        zero = [isinstance(t, Zero) for t in tangents]

        def both(xs):
            live = iter(xs[n:])
            ts = [Zero(tangent_aval(get_aval(p))) if z else next(live)
                  for p, z in zip(xs[:n], zero)]
            out_p, out_t = jvp(xs[:n], ts)
            return [*out_p, *map(ad.instantiate, out_t)]
        live_dims = [d for d, z in zip(arg_dims, zero) if not z]
        outs = _vmap_flat(both, [*primals, *(t for t in tangents if not isinstance(t, Zero))],
                          arg_dims + live_dims, size)
        return outs[:len(outs) // 2], outs[len(outs) // 2:]
    batched_jvp.__name__ = _name(jvp)
    batched_jvp.symbolic_zeros = getattr(jvp, "symbolic_zeros", False)
    outs = custom_jvp_call_p.bind(*consts, *vals, call_jaxpr=jaxpr, jvp=batched_jvp,
                                  num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


custom_jvp_call_p.impl = _custom_jvp_call_impl
custom_jvp_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals
custom_jvp_call_p.jvp = _custom_jvp_call_jvp
custom_jvp_call_p.batch = _custom_jvp_call_batch
# Only reached when the function is applied to tangents inside a linearized computation; there
# the function itself is linear, and JAX likewise transposes its body.
custom_jvp_call_p.transpose = _call_transpose


# ---------------------------------------------------------------------------------------------
# custom_vjp


class custom_vjp:
    """A function with a user-defined VJP, used by reverse-mode differentiation.

    >>> @custom_vjp
    ... def clip_gradient(lo, hi, x):
    ...     return x
    >>> def clip_fwd(lo, hi, x):
    ...     return x, (lo, hi)
    >>> def clip_bwd(res, g):
    ...     lo, hi = res
    ...     return None, None, fnx.numpy.clip(g, lo, hi)
    >>> clip_gradient.defvjp(clip_fwd, clip_bwd)

    ``fwd`` takes the function's arguments and returns ``(output, residuals)``; ``bwd(residuals,
    output_cotangent)`` returns a tuple with one cotangent per argument (None means zeros).
    Arguments in ``nondiff_argnums`` come first in ``bwd``'s arguments and get no cotangent.
    Forward mode (jvp, jacfwd) is not defined for custom_vjp functions and raises
    CustomVJPForwardModeError.
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None

    __getattr__ = forward_attr

    def defvjp(self, fwd, bwd, symbolic_zeros: bool = False, optimize_remat: bool = False):
        """Set the forward and backward rules. With ``symbolic_zeros=True``, ``fwd`` gets a
        ``CustomVJPPrimal`` (``value``, ``perturbed``) in place of each argument leaf, and
        ``bwd`` a ``SymbolicZero`` for each output whose cotangent is zero, as JAX's.
        ``optimize_remat`` is accepted; fnx keeps fwd's residuals either way."""
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    @api_boundary
    def __call__(self, *args, **kwargs):
        name = _name(self.fun)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_kwargs(self.fun, args, kwargs)
        nondiff = _check_argnums(self.nondiff_argnums, len(args), f"custom_vjp {name}")
        for i in nondiff:
            if any(isinstance(x, Tracer) for x in tree_flatten(args[i])[0]):
                raise CustomVJPException(
                    f"Found a traced value passed as a non-differentiable argument (argument "
                    f"{i}) to the custom_vjp function {name} in a position indicated by "
                    "nondiff_argnums as non-differentiable. Tracers cannot be passed as "
                    "non-differentiable arguments to custom_vjp functions; pass array-valued "
                    "arguments normally and return None as their cotangent from bwd.")
        if _runs_as_python(args):
            return self.fun(*args)
        static = [args[i] for i in nondiff]
        # references (fnx.new_ref) pass through to fun and fwd as they are: fwd may hand them to
        # bwd among its residuals, which writes them (JAX's gradient stashing)
        held = set(nondiff) | {i for i, a in enumerate(args) if state.is_ref(a)}
        diff_args = tuple(a for i, a in enumerate(args) if i not in held)
        ref_slots = {k for k, a in enumerate(a for i, a in enumerate(args) if i not in nondiff)
                     if state.is_ref(a)}

        def full_args(diff_vals):
            it = iter(diff_vals)
            return tuple(args[i] if i in held else next(it) for i in range(len(args)))

        leaves, in_tree = tree_flatten(diff_args)
        in_avals = [tangent_aval(get_aval(x)) for x in leaves]
        fwd, bwd = self.fwd, self.bwd
        symbolic_zeros = getattr(self, "symbolic_zeros", False)
        res_tree: dict = {}
        out: dict = {}      # the output tree and avals, from tracing fun or else from fwd

        def flat_fwd(primals, perturbed=None):
            if symbolic_zeros:      # every leaf marked, perturbed unless known otherwise
                perturbed = perturbed or [True] * len(primals)
                primals = [CustomVJPPrimal(p, bool(d)) for p, d in zip(primals, perturbed)]
            pair = fwd(*full_args(tree_unflatten(in_tree, primals)))
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError(f"Custom VJP fwd rule {_name(fwd)} for function {name} must "
                                "produce a pair (list or tuple of length two) where the first "
                                "element represents the primal output and the second element "
                                f"represents residuals, but got {pair!r:.200}.")
            out_leaves, tree = tree_flatten(pair[0])
            out_tree = out.setdefault("tree", tree)
            if tree != out_tree:
                raise TypeError(f"Custom VJP fwd rule {_name(fwd)} for function {name} must "
                                f"produce a primal output with the structure of {name}'s "
                                f"output {out_tree}, got {tree}.")
            out_avals = out.get("avals") or [get_aval(o) for o in out_leaves]
            out_leaves = [_match_aval(o, a, f"Custom VJP fwd rule {_name(fwd)} for function "
                                      f"{name}: primal output") for o, a in zip(out_leaves,
                                                                                 out_avals)]
            res, res_tree["tree"] = tree_flatten(pair[1])
            res_tree["refs"] = {k: r for k, r in enumerate(res) if state.is_ref(r)}
            return out_leaves, [r for r in res if not state.is_ref(r)]

        def flat_bwd(res, cts):
            it, refs = iter(res), res_tree["refs"]
            res = [refs[k] if k in refs else next(it) for k in range(len(res) + len(refs))]
            cts = [SymbolicZero(c.aval) if isinstance(c, Zero) else c for c in cts]
            py_cts = bwd(*static, tree_unflatten(res_tree["tree"], res),
                         tree_unflatten(out["tree"], cts))
            if ref_slots and isinstance(py_cts, (list, tuple)):
                py_cts = tuple(c for k, c in enumerate(py_cts) if k not in ref_slots)
            return _bwd_cotangents(py_cts, diff_args, in_tree, in_avals, name, _name(bwd))
        flat_fwd.__name__, flat_bwd.__name__ = _name(fwd), _name(bwd)
        flat_bwd.symbolic_zeros = symbolic_zeros
        if _differentiated_here(leaves):
            # as in JAX, differentiation runs fwd (and later bwd): fun itself is not traced
            outs = custom_vjp_call_p.bind(*leaves, call_jaxpr=None, fwd=flat_fwd, bwd=flat_bwd,
                                          num_consts=0)
            return tree_unflatten(out["tree"], outs)
        jaxpr, consts, out["tree"] = _trace_pytree_fun(
            lambda *xs: self.fun(*full_args(tree_unflatten(in_tree, xs))), leaves,
            f"the custom_vjp function {name}")
        out["avals"] = jaxpr.out_avals
        outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, fwd=flat_fwd,
                                      bwd=flat_bwd, num_consts=len(consts))
        return tree_unflatten(out["tree"], outs)


def _bwd_cotangents(py_cts, diff_args, in_tree, in_avals, name, bwd_name):
    """bwd's output as one cotangent (or Zero) per input leaf; None stands for zeros of a whole
    argument or subtree, as in JAX."""
    if isinstance(py_cts, list):
        py_cts = tuple(py_cts)
    if not isinstance(py_cts, tuple) or len(py_cts) != len(diff_args):
        n = len(py_cts) if isinstance(py_cts, tuple) else type(py_cts).__name__
        raise TypeError(f"Custom VJP bwd rule {bwd_name} for function {name} must produce a "
                        f"tuple of length equal to the number of differentiable arguments "
                        f"({len(diff_args)}), but got {n}.")
    c_leaves, c_tree = tree_flatten(py_cts, is_leaf=lambda x: x is None)
    ct_leaves: list = []
    if not _match_none_prefix(c_tree, in_tree, iter(c_leaves), ct_leaves):
        raise TypeError(f"Custom VJP bwd rule {bwd_name} for function {name} must produce "
                        f"cotangents with the structure of the arguments {in_tree} (None may "
                        f"stand for any part), but got {c_tree}.")
    return [Zero(a) if ct is None else
            _match_aval(ct, a, f"Custom VJP bwd rule {bwd_name} for function {name} must "
                        "produce cotangents with the same shape/dtypes as the arguments",
                        CotangentTypeError)   # JAX raises ValueError
            for ct, a in zip(ct_leaves, in_avals)]


def _match_none_prefix(c_td, t_td, c_leaves, out) -> bool:
    """Append to ``out`` one leaf of the cotangent tree per leaf of ``t_td``, a None leaf of
    the cotangent covering a whole subtree. False when the structures disagree."""
    if treedef_is_leaf(c_td):
        x = next(c_leaves)
        if x is None:
            out.extend([None] * t_td.num_leaves)
            return True
        out.append(x)
        return treedef_is_leaf(t_td)
    if (c_td.node, c_td.aux, len(c_td.children)) != (t_td.node, t_td.aux, len(t_td.children)):
        return False
    return all(_match_none_prefix(c, t, c_leaves, out)
               for c, t in zip(c_td.children, t_td.children))


custom_vjp_call_p = _lax.primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = _lax.primitive("custom_lin", multiple_results=True)


def _custom_vjp_call_impl(*args, call_jaxpr, fwd, bwd, num_consts):
    return eval_jaxpr(call_jaxpr, [], *args)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    if any(not isinstance(t, Zero) for t in tangents[:num_consts]):
        raise CustomVJPException(_CLOSURE_VJP_MSG)
    with _closure_hint("custom_vjp", _name(fwd)):
        outs, res = fwd(list(primals[num_consts:]),
                        [not isinstance(t, Zero) for t in tangents[num_consts:]])
    tangents = [ad.instantiate(t) for t in tangents[num_consts:]]
    out_avals = tuple(tangent_aval(get_aval(o)) for o in outs)
    tangents_out = custom_lin_p.bind(*res, *tangents, num_res=len(res), bwd=bwd,
                                     out_avals=out_avals)
    return outs, tangents_out


def _custom_vjp_call_batch(vals, dims, *, call_jaxpr, fwd, bwd, num_consts):
    # every operand batched at 0: fwd's residuals and bwd's cotangents then are too
    size = batching.batch_size(vals, dims)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    jaxpr, consts = _batch_jaxpr(call_jaxpr, [0] * len(vals), size)
    n_out = len(call_jaxpr.outvars)

    def batched_fwd(primals, perturbed=None):
        def both(xs):
            outs, res = fwd(xs, perturbed)
            return [*outs, *res]
        flat = _vmap_flat(both, primals, [0] * len(primals), size)
        return flat[:n_out], flat[n_out:]

    def batched_bwd(res, cts):
        # a zero cotangent stays symbolic, of its unbatched type
        n, zero = len(res), [isinstance(c, Zero) for c in cts]

        def one(xs):
            live = iter(xs[n:])
            per = [Zero(tangent_aval(v.aval)) if z else next(live)
                   for v, z in zip(call_jaxpr.outvars, zero)]
            return [ad.instantiate(c) for c in bwd(xs[:n], per)]
        live = [c for c in cts if not isinstance(c, Zero)]
        return _vmap_flat(one, [*res, *live], [0] * (n + len(live)), size)
    batched_fwd.__name__, batched_bwd.__name__ = _name(fwd), _name(bwd)
    batched_bwd.symbolic_zeros = getattr(bwd, "symbolic_zeros", False)
    outs = custom_vjp_call_p.bind(*consts, *vals, call_jaxpr=jaxpr, fwd=batched_fwd,
                                  bwd=batched_bwd, num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


custom_vjp_call_p.impl = _custom_vjp_call_impl
custom_vjp_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals
custom_vjp_call_p.jvp = _custom_vjp_call_jvp
custom_vjp_call_p.batch = _custom_vjp_call_batch
custom_vjp_call_p.transpose = _call_transpose


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals):
    res = list(args[:num_res])
    if not getattr(bwd, "symbolic_zeros", False):
        cts = [ad.instantiate(ct) for ct in cts]
    with _closure_hint("custom_vjp", _name(bwd)):
        cts_in = bwd(res, list(cts))
    return [None] * num_res + list(cts_in)


def _custom_lin_forward_mode(*args, **params):
    raise CustomVJPForwardModeError(_FWD_MODE_MSG)


custom_lin_p.abstract_eval = lambda *avals, out_avals, **_: list(out_avals)
custom_lin_p.transpose = _custom_lin_transpose
# Evaluating, differentiating or batching custom_lin are all forward mode through custom_vjp.
custom_lin_p.impl = _custom_lin_forward_mode
custom_lin_p.jvp = _custom_lin_forward_mode
custom_lin_p.batch = _custom_lin_forward_mode


def _differentiable(dtype) -> bool:
    return isinstance(dtype, np.dtype) and dtypes.is_float(dtype)   # not PRNG keys, ints


def closure_convert(fun, *example_args):
    """``(converted, consts)``: ``fun`` with the floating-point values it closes over turned into
    trailing arguments, ``converted(*args, *consts) == fun(*args)``, so that a custom_vjp rule
    can return their cotangents (JAX's ``closure_convert``; ``example_args`` fix the shapes).
    Only traced values are hoisted: concrete arrays stay constants of the function.

    >>> def f(w):
    ...     converted, consts = fnx.closure_convert(lambda x: w * x, 1.0)
    ...     return converted(2.0, *consts), len(consts)
    >>> fnx.grad(lambda w: f(w)[0])(3.0), f(3.0)[1]
    (Array(2., dtype=float32, weak_type=True), 0)
    """
    leaves, in_tree = tree_flatten(example_args)
    flat_fun, out_tree = flatten_fun(fun, in_tree)
    closed = trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves])
    hoisted = [_differentiable(get_aval(c).dtype) for c in closed.consts]
    out_tree = out_tree()

    def converted(*args):
        args, extra = args[:len(example_args)], iter(args[len(example_args):])
        arg_leaves, tree = tree_flatten(args)
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted function of {_name(fun)} was traced "
                            f"for arguments {in_tree}, got {tree}")
        consts = [next(extra) if h else c for h, c in zip(hoisted, closed.consts)]
        return tree_unflatten(out_tree, eval_jaxpr(closed.jaxpr, consts, *arg_leaves))
    return converted, [c for h, c in zip(hoisted, closed.consts) if h]


def custom_gradient(fun):
    """``fun(*args)`` returns ``(value, vjp)``, ``vjp(cotangent)`` a tuple with one cotangent
    per argument: that pair is the function's value and its reverse-mode derivative.

    >>> @custom_gradient
    ... def clipped_log(x):
    ...     return jnp.log(x), lambda g: (g / jnp.maximum(x, 1e-3),)

    As in JAX, ``vjp`` may close over values ``fun`` computed: it is traced once, in the forward
    pass, into a jaxpr whose constants (those values) become the residuals.
    """
    @functools.wraps(fun)
    def wrapper(*args):
        store: dict = {}

        @custom_vjp
        def call(*xs):
            return fun(*xs)[0]

        def fwd(*xs):
            out, rule = fun(*xs)
            out_leaves, out_tree = tree_flatten(out)

            def rule_cts(*ct_leaves):
                cts = rule(tree_unflatten(out_tree, ct_leaves))
                return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)
            flat_rule, ct_tree = flatten_fun(rule_cts)
            closed = trace_to_jaxpr(flat_rule, [tangent_aval(get_aval(o)) for o in out_leaves],
                                    description=f"the vjp of custom_gradient {_name(fun)}")
            store["jaxpr"], store["tree"] = closed.jaxpr, ct_tree()
            return out, list(closed.consts)

        def bwd(res, ct):
            ct_leaves = tree_flatten(ct)[0]
            return tree_unflatten(store["tree"], eval_jaxpr(store["jaxpr"], res, *ct_leaves))
        call.defvjp(fwd, bwd)
        return call(*args)
    return wrapper


# ---------------------------------------------------------------------------------------------
# checkpoint / remat


def checkpoint(fun, prevent_cse: bool = True, policy=None, static_argnums=(), *,
               concrete: bool = False):
    """``fun`` whose intermediate values are recomputed in the backward pass instead of being
    saved: under grad, only its inputs are kept as residuals.

    >>> @checkpoint
    ... def block(x):
    ...     return fnx.numpy.sin(fnx.numpy.sin(x))
    >>> fnx.grad(lambda x: block(x).sum())(jnp.array([0.0, 1.0]))     # as without checkpoint
    Array([1.        , 0.36003944], dtype=float32)

    ``policy(prim, *avals, **params) -> bool`` may name intermediates worth saving after all
    (see ``checkpoint_policies``; ``checkpoint_name`` tags values for the name-based ones).
    ``prevent_cse`` is accepted for JAX compatibility: fnx runs no common-subexpression
    elimination across the forward and backward passes of a remat. ``concrete`` (JAX's removed
    option) raises NotImplementedError, as in JAX: ``static_argnums`` replaces it.
    """
    if concrete:
        raise NotImplementedError("checkpoint's `concrete` option was removed (as in JAX "
                                  "v0.10): mark the arguments Python control flow reads with "
                                  "`static_argnums` instead")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    @functools.wraps(fun)
    @api_boundary
    def fun_remat(*args, **kwargs):
        static = {i % len(args) for i in static_argnums} if args else set()
        dyn = tuple(a for i, a in enumerate(args) if i not in static)

        def with_static(dyn_vals):
            it = iter(dyn_vals)
            return [a if i in static else next(it) for i, a in enumerate(args)]

        leaves, in_tree = tree_flatten((dyn, kwargs))

        def call(*xs):
            d, kw = tree_unflatten(in_tree, xs)
            return fun(*with_static(d), **kw)
        jaxpr, consts, out_tree = _trace_pytree_fun(call, leaves,
                                                    f"the checkpointed function {_name(fun)}")
        outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=prevent_cse,
                            policy=policy)
        return tree_unflatten(out_tree, outs)
    return fun_remat


remat = checkpoint


remat_p = _lax.primitive("remat", multiple_results=True)


def _remat_impl(*args, jaxpr, prevent_cse, policy):
    return eval_jaxpr(jaxpr, [], *args)


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, policy):
    # the JVP of a remat is a remat of the JVP jaxpr, so linearize can split it again
    nonzero = [not isinstance(t, Zero) for t in tangents]
    jvp_jaxpr, consts, out_nz = ad.jvp_jaxpr(jaxpr, nonzero, False)
    outs = remat_p.bind(*consts, *primals, *(t for t in tangents if not isinstance(t, Zero)),
                        jaxpr=jvp_jaxpr, prevent_cse=prevent_cse, policy=policy)
    n_out = len(jaxpr.outvars)
    it = iter(outs[n_out:])
    out_t = [next(it) if nz else Zero(tangent_aval(v.aval))
             for v, nz in zip(jaxpr.outvars, out_nz)]
    return outs[:n_out], out_t


def _eval_env(jaxpr, args) -> dict:
    """Evaluate ``jaxpr`` under the current trace; every variable's value."""
    env = dict(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        outs = bind_equation(eqn, [_read(env, v) for v in eqn.invars])
        env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return env


def _read(env, v):
    return env[v] if _is_var(v) else v.val


def _remat_partial_eval(trace, args, params):
    """Known outputs are computed now (by a remat on the parent trace); unknown ones get a
    staged remat that reads only inputs (and intermediates ``policy`` saves) and recomputes the
    rest."""
    jaxpr, policy = params["jaxpr"], params["policy"]
    unknown_in = [trace.is_own(a) for a in args]

    # Which values are known: evaluate under a staging trace owning the unknown inputs on top of
    # one owning the known inputs. A nested remat with mixed inputs splits itself through this
    # same rule, so its known outputs come out known (a coarser per-equation view would not).
    known_tr = JaxprTrace(trace.parent, trace.description)
    unknown_tr = JaxprTrace(known_tr, trace.description)
    known_args = [a for a, u in zip(args, unknown_in) if not u]
    known_tracers = [known_tr.new_arg(get_aval(a)) for a in known_args]
    it = iter(known_tracers)
    with set_current_trace(unknown_tr):
        env = _eval_env(jaxpr, [unknown_tr.new_arg(v.aval) if u else next(it)
                                for v, u in zip(jaxpr.invars, unknown_in)])
    out_unknown = [unknown_tr.is_own(_read(env, v)) for v in jaxpr.outvars]

    # Staged side: walk back from the unknown outputs. An equation reading only known inputs
    # is recomputed, unless the policy saves its outputs: those become residuals.
    unknown = {v for v, u in zip(jaxpr.invars, unknown_in) if u}
    for eqn in jaxpr.eqns:
        if any(_is_var(v) and v in unknown for v in eqn.invars):
            unknown.update(eqn.outvars)
    live = {v for v, u in zip(jaxpr.outvars, out_unknown) if u}
    staged, residuals = [], []
    for eqn in reversed(jaxpr.eqns):
        if not any(v in live for v in eqn.outvars):
            continue
        if policy is not None and not any(v in unknown for v in eqn.outvars) and \
                policy(eqn.primitive, *(v.aval for v in eqn.invars), **eqn.params):
            residuals.extend(v for v in eqn.outvars if v in live and v not in residuals)
            continue
        staged.append(eqn)
        live.update(v for v in eqn.invars if _is_var(v))
    staged.reverse()

    known_outvars = [v for v, u in zip(jaxpr.outvars, out_unknown) if not u]
    known_vals = []
    if known_outvars or residuals:
        closed = known_tr.to_jaxpr(known_tracers, [_read(env, v)
                                                   for v in known_outvars + residuals])
        known_jaxpr, used = dce_jaxpr(jaxpr_with_consts_as_args(closed))
        operands = [x for x, u in zip([*closed.consts, *known_args], used) if u]
        known_jaxpr = Jaxpr([], [v for v, u in zip(known_jaxpr.invars, used) if u],
                            known_jaxpr.outvars, known_jaxpr.eqns)
        with set_current_trace(trace.parent):
            known_vals = remat_p.bind(*operands, **{**params, "jaxpr": known_jaxpr})
    res_vals = known_vals[len(known_outvars):]

    unknown_outs = []
    if any(out_unknown):
        used_in = [(v, a) for v, a in zip(jaxpr.invars, args) if v in live]
        staged_jaxpr = Jaxpr([], residuals + [v for v, _ in used_in],
                             [v for v, u in zip(jaxpr.outvars, out_unknown) if u], staged)
        unknown_outs = trace.stage(remat_p, [*res_vals, *(a for _, a in used_in)],
                                   {**params, "jaxpr": staged_jaxpr})
    known_it, unknown_it = iter(known_vals), iter(unknown_outs)
    return [next(unknown_it) if u else next(known_it) for u in out_unknown]


def _transpose_jaxpr(jaxpr, args, cts):
    """Cotangents of ``jaxpr``'s UndefinedPrimal ``args``. The jaxpr may mix primal and
    tangent work inside one equation (a nested remat's JVP), so it is first partially
    evaluated: the primal work runs (recomputed) and only a linear jaxpr is transposed."""
    lin_tr = JaxprTrace(current_trace(), "the linear part of a checkpointed function")
    lin_in = [lin_tr.new_arg(a.aval) for a in args if is_undefined(a)]
    it = iter(lin_in)
    with set_current_trace(lin_tr):
        outs = eval_jaxpr(jaxpr, [], *(next(it) if is_undefined(a) else a for a in args))
    lin = lin_tr.to_jaxpr(lin_in, outs)
    cts_in = iter(backward_pass(lin.jaxpr, lin.consts, [UndefinedPrimal(t.aval) for t in lin_in],
                                list(cts)))
    return [next(cts_in) if is_undefined(a) else None for a in args]


def _remat_transpose(cts, *args, jaxpr, prevent_cse, policy):
    # The transposed computation (forward recomputation, then the transposed linear part) is
    # itself a remat, so differentiating it again also recomputes instead of saving.
    linear = [is_undefined(a) for a in args]
    known = [a for a in args if not is_undefined(a)]
    cts_nz = [ct for ct in cts if not isinstance(ct, Zero)]
    if not cts_nz:
        return [Zero(a.aval) if lin else None for a, lin in zip(args, linear)]
    store: dict = {}

    def transposed(*xs):
        k_it, c_it = iter(xs[:len(known)]), iter(xs[len(known):])
        full = [a if lin else next(k_it) for a, lin in zip(args, linear)]
        full_cts = [ct if isinstance(ct, Zero) else next(c_it) for ct in cts]
        outs = [o for o, lin in zip(_transpose_jaxpr(jaxpr, full, full_cts), linear) if lin]
        store["zero"] = [isinstance(o, Zero) for o in outs]
        return [o for o in outs if not isinstance(o, Zero)]
    t_jaxpr, consts = trace_to_jaxpr_dynamic(transposed, [get_aval(x) for x in known + cts_nz],
                                             "the transpose of a checkpointed function")
    outs = iter(remat_p.bind(*consts, *known, *cts_nz, jaxpr=t_jaxpr, prevent_cse=prevent_cse,
                             policy=policy))
    zero = iter(store["zero"])
    return [(Zero(a.aval) if next(zero) else next(outs)) if lin else None
            for a, lin in zip(args, linear)]


def _remat_batch(vals, dims, *, jaxpr, prevent_cse, policy):
    size = batching.batch_size(vals, dims)
    vals, dims = _batch_dims_to_front(vals, dims)
    batched, consts = _batch_jaxpr(jaxpr, dims, size)
    outs = remat_p.bind(*consts, *vals, jaxpr=batched, prevent_cse=prevent_cse, policy=policy)
    return outs, [0] * len(outs)


remat_p.impl = _remat_impl
remat_p.abstract_eval = lambda *avals, jaxpr, **_: jaxpr.out_avals
remat_p.jvp = _remat_jvp
remat_p.partial_eval = _remat_partial_eval
remat_p.transpose = _remat_transpose
remat_p.batch = _remat_batch


__all__ = ["custom_jvp", "custom_vjp", "custom_gradient", "checkpoint", "remat",
           "checkpoint_policies", "checkpoint_name", "CustomJVPException", "CustomVJPException",
           "CustomVJPForwardModeError", "CustomVJPPrimal", "SymbolicZero", "zero_from_primal"]

"""The public transformations with JAX's signatures, over pytrees of arguments."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence, TypeVar

R = TypeVar("R")

import numpy as np

from . import ad, batching, dtypes, lax, state
from .api_util import batch_float0, flatten_fun, is_float0
from .core import Array, ShapedArray, Tracer, get_aval
from .errors import (ArgumentTypeError, BatchingError, CotangentTypeError, DTypeError, GradError,
                     ShapeError, TreeStructureError)
from .traceback_util import api_boundary
from .partial_eval import trace_to_jaxpr
from .pytree import (Partial, broadcast_prefix, register_pytree_node, tree_flatten, tree_leaves,
                     tree_map, tree_unflatten)


def _argnums_tuple(argnums, nargs, name):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise GradError(f"{name}: argnums {argnums} out of range for {nargs} positional "
                            "arguments")
    return single, tuple(a % nargs for a in nums)


def _split_args(args, argnums):
    dyn = tuple(args[i] for i in argnums)

    def rebuild(dyn_vals):
        full = list(args)
        for i, v in zip(argnums, dyn_vals):
            full[i] = v
        return full
    return dyn, rebuild


# ---------------------------------------------------------------------------------------------
# Forward mode


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: ``(fun(*primals), J @ tangents)``.

    >>> y, t = jvp(fnx.numpy.sin, (0.5,), (1.0,))   # t == cos(0.5)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ArgumentTypeError("jvp: primals and tangents must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TreeStructureError(f"jvp: primal and tangent structures differ: {p_tree} vs "
                                 f"{t_tree}")
    for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pa = get_aval(p)
        if is_float0(t):
            if dtypes.is_float(pa.dtype) or np.shape(t) != pa.shape:
                raise DTypeError(f"jvp: a float0{list(np.shape(t))} tangent for the primal "
                                 f"{pa.str_short()}; float0 tangents go with integer or "
                                 "boolean primals of their shape")
            t_leaves[k] = lax.full(pa.shape, 0, pa.dtype)   # integers carry zero tangents
            continue
        ta = get_aval(t)
        if pa.shape != ta.shape:
            raise ShapeError(f"jvp: primal shape {pa.shape} and tangent shape {ta.shape} differ")
        if not dtypes.is_float(pa.dtype):
            raise DTypeError(f"jvp: the tangent of the {pa.str_short()} primal must have dtype "
                             f"float0 (as in JAX), got {ta.str_short()}")
        if pa.dtype != ta.dtype:
            if not ta.weak_type:
                raise DTypeError(f"jvp: primal dtype {pa.dtype} and tangent dtype {ta.dtype} "
                                 "differ")
            # a Python number as the tangent takes the primal's dtype
            t_leaves[k] = lax.convert_element_type(t, pa.dtype)
    channel = _AuxChannel(fun, has_aux)
    flat, out_tree = flatten_fun(channel, p_tree)
    out_p, out_t = ad.jvp_flat(flat, p_leaves, t_leaves)
    out_t = [_float0_tangent(p, t) for p, t in zip(out_p, out_t)]
    return _unpack_aux_outputs(out_tree(), out_p, out_t, has_aux, channel)


def _float0_tangent(primal, tangent):
    """An integer or boolean output's tangent is float0 (no values), as in JAX."""
    aval = get_aval(primal)
    return tangent if dtypes.is_float(aval.dtype) else np.zeros(aval.shape, dtypes.float0)


class _AuxChannel:
    """``(out, aux)`` functions: only aux's array leaves are traced as outputs; its other
    leaves (strings, Python numbers, NumPy values) come back untouched, as in JAX."""

    def __init__(self, fun, has_aux):
        self.fun, self.has_aux, self.passed = fun, has_aux, None

    def __call__(self, *args):
        out = self.fun(*args)
        if not self.has_aux:
            return out
        if not (isinstance(out, tuple) and len(out) == 2):
            raise GradError("has_aux=True requires the function to return a pair (out, aux), "
                            f"got {type(out).__name__}")
        value, aux = out
        leaves, tree = tree_flatten(aux)
        traced = [isinstance(leaf, (Array, Tracer)) for leaf in leaves]
        self.passed = tree, traced, leaves
        return value, [leaf for leaf, t in zip(leaves, traced) if t]

    def aux(self, traced_values):
        """aux rebuilt from its traced leaves' values and the leaves passed by."""
        tree, traced, leaves = self.passed
        values = iter(traced_values)
        return tree_unflatten(tree, [next(values) if t else leaf
                                     for leaf, t in zip(leaves, traced)])


def _unpack_aux_outputs(tree, out_p, out_t, has_aux, channel):
    if not has_aux:
        return tree_unflatten(tree, out_p), tree_unflatten(tree, out_t)
    (out_tree, _) = tree.children
    n = out_tree.num_leaves
    out = tree_unflatten(out_tree, out_p[:n])
    tan = tree_unflatten(out_tree, out_t[:n])
    return out, tan, channel.aux(out_p[n:])


def linearize(fun: Callable, *primals):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the JVP at ``primals``
    using only the saved linear computation.

    >>> y, f_jvp = fnx.linearize(jnp.sin, 0.0)
    >>> y, f_jvp(2.0)
    (Array(0., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    """
    p_leaves, p_tree = tree_flatten(primals)
    flat, out_tree_thunk = flatten_fun(fun, p_tree)
    out_p, lin = ad.linearize_flat(flat, p_leaves)
    out_tree = out_tree_thunk()

    @api_boundary
    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != p_tree:
            raise TreeStructureError(f"linearized function expects tangents shaped like "
                                     f"{p_tree}, got {t_tree}")
        out_t = [_float0_tangent(p, t) for p, t in zip(out_p, lin.jvp(t_leaves))]
        return tree_unflatten(out_tree, out_t)
    return tree_unflatten(out_tree, out_p), f_jvp


# ---------------------------------------------------------------------------------------------
# Reverse mode


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), vjp_fun)`` where ``vjp_fun(cotangent)`` returns one cotangent per
    primal.

    >>> y, pullback = vjp(lambda x: x * x, 3.0); pullback(1.0)
    (Array(6., dtype=float32, weak_type=True),)
    """
    p_leaves, p_tree = tree_flatten(primals)
    channel = _AuxChannel(fun, has_aux)
    flat, out_tree_thunk = flatten_fun(channel, p_tree)
    # a reference among the primals: differentiate in its initial value, which a fresh
    # reference inside carries; its final value is written back, as JAX updates it in place
    refs = [(i, x) for i, x in enumerate(p_leaves) if state.is_ref(x)]
    p_leaves = [x[...] if state.is_ref(x) else x for x in p_leaves]
    out_p, lin = ad.linearize_flat(_with_refs(flat, [i for i, _ in refs]), p_leaves)
    if refs:
        for (_, ref), value in zip(refs, out_p[len(out_p) - len(refs):]):
            ref[...] = value
        keep = len(out_p) - len(refs)
        out_p, lin.out_is_zero, lin.out_avals = \
            out_p[:keep], lin.out_is_zero[:keep], lin.out_avals[:keep]
    tree = out_tree_thunk()
    if has_aux:
        out_tree, _ = tree.children
        n = out_tree.num_leaves
        out_p, aux_leaves = out_p[:n], out_p[n:]
        lin.out_is_zero, lin.out_avals = lin.out_is_zero[:n], lin.out_avals[:n]
    else:
        out_tree = tree

    pullback = _Pullback(lin.jaxpr, lin.in_avals, lin.out_is_zero, lin.out_avals, out_tree,
                         p_tree, [get_aval(p) for p in p_leaves], [i for i, _ in refs])
    vjp_fun = VJPFunction(pullback, list(lin.consts))   # a pytree: it can leave (and enter) jit

    out = tree_unflatten(out_tree, out_p)
    if has_aux:
        return out, vjp_fun, channel.aux(aux_leaves)
    return out, vjp_fun


class GradValue:
    """In ``vjp_fun.with_refs(...)``: return this argument's gradient as a value (the default).

    >>> _, f_vjp = fnx.vjp(jnp.sin, 0.0)
    >>> f_vjp.with_refs(fnx.ad.GradValue())(1.0)
    (Array(1., dtype=float32, weak_type=True),)
    """
    __slots__ = ()

    def __repr__(self):
        return "GradValue()"


class DontWant:
    """In ``vjp_fun.with_refs(...)``: this argument's gradient is not wanted (``DidntWant()``
    stands in its place).

    >>> _, f_vjp = fnx.vjp(jnp.multiply, 2.0, 3.0)
    >>> f_vjp.with_refs(fnx.ad.GradValue(), fnx.ad.DontWant())(1.0)
    (Array(3., dtype=float32, weak_type=True), DidntWant())
    """
    __slots__ = ()

    def __repr__(self):
        return "DontWant()"


class DidntWant:
    """What ``with_refs`` returns for an argument given ``DontWant()`` (an empty pytree).

    >>> fnx.tree.leaves(DidntWant())
    []
    """
    __slots__ = ()

    def __repr__(self):
        return "DidntWant()"


class GradRef:
    """What ``with_refs`` returns for an argument whose gradient went into a reference (an
    empty pytree).

    >>> fnx.tree.leaves(GradRef())
    []
    """
    __slots__ = ()

    def __repr__(self):
        return "GradRef()"


register_pytree_node(DidntWant, lambda x: ((), None), lambda _, c: DidntWant())
register_pytree_node(GradRef, lambda x: ((), None), lambda _, c: GradRef())


class VJPFunction(Partial):
    """The function ``vjp`` returns: call it with an output cotangent for the arguments'
    cotangents; ``with_refs(*targets)`` (one target per argument: a reference to add the
    gradient into, ``GradValue()`` or ``DontWant()``) gives a variant that accumulates into
    references, as JAX's.

    >>> grad_ref = fnx.new_ref(1.0)
    >>> _, f_vjp = fnx.vjp(lambda x: x * x, 3.0)
    >>> f_vjp.with_refs(grad_ref)(1.0)
    (GradRef(),)
    >>> grad_ref
    Ref(7., dtype=float32)
    """

    def with_refs(self, *targets):
        return functools.partial(self.func.with_refs, self.args[0], targets)


register_pytree_node(VJPFunction, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, c: VJPFunction(func, *c[0], **c[1]))


class _Pullback:
    """The static half of the function ``vjp`` returns; the residuals are its pytree children."""

    def __init__(self, jaxpr, in_avals, out_is_zero, out_avals, out_tree, p_tree, p_avals,
                 ref_at=()):
        self.jaxpr, self.in_avals, self.out_is_zero = jaxpr, in_avals, out_is_zero
        self.out_avals, self.out_tree, self.p_tree, self.p_avals = out_avals, out_tree, p_tree, p_avals
        self.ref_at = tuple(ref_at)     # the primals that were references

    @api_boundary
    def __call__(self, residuals, cotangent):
        if self.ref_at:
            raise ValueError(f"argument leaf {self.ref_at[0]} of the differentiated function is "
                             "Ref-typed, so its gradient must be accumulated into a ref: bind "
                             "one with the VJP function's `with_refs` method, as in "
                             "`f_vjp.with_refs(grad_ref)(ct)`, or pass `fnx.ad.DontWant()`")
        return tree_unflatten(self.p_tree, self._cotangents(residuals, cotangent))

    @api_boundary
    def with_refs(self, residuals, targets, cotangent):
        t_leaves, t_tree = tree_flatten(targets)
        if t_tree != self.p_tree:
            raise TreeStructureError(f"vjp with_refs: the targets' structure {t_tree} does "
                                     f"not match the primal arguments' {self.p_tree}")
        out = []
        for k, (ct, target) in enumerate(zip(self._cotangents(residuals, cotangent),
                                             t_leaves)):
            if state.is_ref(target):
                if not is_float0(ct):
                    target._add(..., ct)      # addupdate: weak plus weak stays weak
                out.append(GradRef())
            elif isinstance(target, DontWant):
                out.append(DidntWant())
            elif isinstance(target, GradValue) and k not in self.ref_at:
                out.append(ct)
            else:
                raise ValueError(f"vjp with_refs: argument leaf {k} takes a Ref, "
                                 "fnx.ad.GradValue() or fnx.ad.DontWant()"
                                 + (" (it is Ref-typed: its gradient must go into a ref)"
                                    if k in self.ref_at else "") + f", got {target!r:.60}")
        return tree_unflatten(self.p_tree, out)

    def _cotangents(self, residuals, cotangent):
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != self.out_tree:
            raise TreeStructureError(f"vjp: cotangent structure {ct_tree} does not match the "
                                     f"output structure {self.out_tree}")
        ct_leaves = [lax.full(a.shape, 0, a.dtype) if is_float0(c) else c
                     for c, a in zip(ct_leaves, self.out_avals)]
        for c, a in zip(ct_leaves, self.out_avals):
            _check_cotangent(get_aval(c), a)
        lin = ad.LinearFunction(self.jaxpr, residuals, self.in_avals, self.out_is_zero,
                                self.out_avals)
        cts = lin.vjp([_ct_like(c, a) for c, a in zip(ct_leaves, self.out_avals)])
        return [np.zeros(p.shape, dtypes.float0) if dtypes.kind(p.dtype) in "iub"
                else _materialize_ct(c, p) for c, p in zip(cts, self.p_avals)]


def _check_cotangent(ca, a):
    if ca.shape != a.shape:
        raise ShapeError(f"vjp: cotangent shape {ca.shape} does not match the output "
                         f"shape {a.shape}")
    if dtypes.kind(ca.dtype) == "c" and dtypes.kind(a.dtype) != "c":
        raise CotangentTypeError(f"vjp: a {ca.str_short()} cotangent for the real "
                                 f"output {a.str_short()}; a real output takes a real "
                                 "cotangent")
    if dtypes.is_float(a.dtype) and ca.dtype != a.dtype:
        raise CotangentTypeError(f"vjp: a {ca.str_short()} cotangent for the output "
                                 f"{a.str_short()}; it must have the output's dtype "
                                 "(as in JAX)")


def _ct_like(ct, aval):
    ca = get_aval(ct)
    if ca.dtype != aval.dtype:
        return lax.convert_element_type(ct, aval.dtype, ca.weak_type)
    return ct


def _materialize_ct(ct, aval):
    """A primal's cotangent in the primal's dtype; its weak type is what the backward pass
    made of the output's (as in JAX: the gradient at a Python float is weakly typed)."""
    if isinstance(ct, ad.Zero):
        return lax.full(aval.shape, 0, aval.dtype, aval.weak_type)
    ca = get_aval(ct)
    if ca.dtype != aval.dtype:
        return lax.convert_element_type(ct, aval.dtype, ca.weak_type)
    return ct


def _check_grad_input(x, argnum, name, holomorphic=False, real_only=False):
    """JAX's input checks: float or complex inputs (real ones only for ``real_only``, jacfwd's
    rule), complex ones for ``holomorphic``."""
    aval = get_aval(x)
    if holomorphic and dtypes.kind(aval.dtype) != "c":
        raise GradError(f"{name} with holomorphic=True requires inputs with complex dtype, but "
                        f"got {aval.dtype.name}.")
    if real_only and not holomorphic and dtypes.kind(aval.dtype) == "c":
        raise GradError(f"{name} requires real-valued inputs (input dtype that is a sub-dtype "
                        f"of np.floating), but got {aval.dtype.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiation of "
                        "non-holomorphic functions involving complex inputs or integer inputs, "
                        "use jvp directly.")
    if not dtypes.is_float(aval.dtype):
        raise GradError(f"{name} requires real- or complex-valued inputs (a float dtype), but "
                        f"argument {argnum} has dtype {aval.dtype} (shape {aval.shape}). Convert "
                        "it with .astype(float), or differentiate with respect to another "
                        "argument (argnums).")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False,
                   allow_int: bool = False) -> Callable[..., tuple[Any, Any]]:
    """A function returning ``(fun(*args), gradient)`` (``((value, aux), gradient)`` with
    ``has_aux``). With ``allow_int``, integer and boolean arguments get gradients of dtype
    ``float0`` (no values), as in JAX, instead of an error.

    The output must be a real scalar, unless ``holomorphic=True`` promises a holomorphic
    function of complex inputs with a complex output (the gradient is then f'(z)). For a real
    function of complex ``z`` the gradient is, as in JAX, the conjugate of
    ``df/dRe(z) + 1j * df/dIm(z)``: ``grad(lambda z: abs(z) ** 2)(z) == 2 * conj(z)``.

    >>> value_and_grad(lambda x: (x ** 2).sum())(fnx.numpy.ones(3))
    (Array(3., dtype=float32), Array([2., 2., 2.], dtype=float32))
    """
    name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    @api_boundary
    def value_and_grad_f(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "grad")
        dyn, rebuild = _split_args(args, nums)
        for i, d in zip(nums, dyn):
            for leaf in tree_flatten(d)[0]:
                if not (allow_int and _is_integer_input(leaf)):
                    _check_grad_input(leaf, i, "grad", holomorphic)

        def partial_fun(*dyn_vals):
            return fun(*rebuild(dyn_vals), **kwargs)

        if has_aux:
            out, pullback, aux = vjp(partial_fun, *dyn, has_aux=True)
        else:
            out, pullback = vjp(partial_fun, *dyn)
        out_aval = _scalar_output_aval(out, name, holomorphic)
        g = pullback(_ones_like_aval(out_aval))
        if allow_int:
            g = [tree_map(_float0_if_integer, arg, grad) for arg, grad in zip(dyn, g)]
        g = g[0] if single else tuple(g)
        return ((out, aux), g) if has_aux else (out, g)
    return value_and_grad_f


def _is_integer_input(x) -> bool:
    return dtypes.kind(get_aval(x).dtype) in "iub"


def _float0_if_integer(arg, grad):
    return np.zeros(np.shape(arg), dtypes.float0) if _is_integer_input(arg) else grad


def _scalar_output_aval(out, name, holomorphic=False):
    leaves, tree = tree_flatten(out)
    if len(leaves) != 1:
        raise GradError(f"grad requires {name} to return one scalar, got a {tree} "
                        "(use has_aux=True to return extra values, or jacrev)")
    aval = get_aval(leaves[0])
    if aval.shape != ():
        raise GradError(f"grad requires real-valued scalar outputs, but {name} returned shape "
                        f"{aval.shape} ({aval.str_short()}); reduce it (e.g. .sum()) or use "
                        "jacrev / vjp for non-scalar outputs")
    _check_output_dtype(aval, "grad", holomorphic)
    return aval


def _check_output_dtype(aval, name, holomorphic):
    """JAX's output checks of grad and jacrev: real outputs, complex ones for holomorphic."""
    kind = dtypes.kind(aval.dtype)
    if holomorphic:
        if kind != "c":
            raise GradError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {aval.dtype.name}.")
    elif kind == "c":
        raise GradError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {aval.dtype.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiation of "
                        "non-holomorphic functions involving complex outputs, use vjp "
                        "directly.")
    elif kind != "f":
        raise GradError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {aval.dtype.name}. For "
                        "differentiation of functions with integer outputs, use vjp directly.")


def _ones_like_aval(aval):
    return lax.full((), 1, aval.dtype, aval.weak_type)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar function (see ``value_and_grad`` for complex inputs and
    ``holomorphic``).

    >>> grad(lambda x: fnx.numpy.sin(x))(0.0)     # weakly typed, as a Python float
    Array(1., dtype=float32, weak_type=True)
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    @api_boundary
    def grad_f(*args, **kwargs):
        out, g = vg(*args, **kwargs)
        return (g, out[1]) if has_aux else g
    return grad_f


# ---------------------------------------------------------------------------------------------
# Jacobians


def _std_basis(leaves):
    sizes = [get_aval(x).size for x in leaves]
    total = sum(sizes)
    out, start = [], 0
    for x, n in zip(leaves, sizes):
        aval = get_aval(x)
        dt = aval.dtype if dtypes.is_float(aval.dtype) else dtypes.default_float
        eye = np.zeros((total, n), dtype=dt)
        eye[start:start + n] = np.eye(n, dtype=dt)
        out.append(lax.reshape(lax.convert_element_type(eye, dt), (total,) + aval.shape))
        start += n
    return out, sizes


def _split_jac(y, y_shape, in_leaves, sizes, leading_first):
    """A jacobian block with the basis axis first (``leading_first``) or last, split per input."""
    blocks, start = [], 0
    for x, n in zip(in_leaves, sizes):
        xs = get_aval(x).shape
        if leading_first:   # y: (N, *y_shape) -> (*y_shape, *x_shape)
            part = lax.slice_in_dim(y, start, start + n, 1, 0)
            part = lax.reshape(part, xs + tuple(y_shape))
            nx = len(xs)
            perm = tuple(range(nx, nx + len(y_shape))) + tuple(range(nx))
            blocks.append(lax.transpose(part, perm))
        else:
            part = lax.slice_in_dim(y, start, start + n, 1, 0)
            blocks.append(lax.reshape(part, tuple(y_shape) + xs))
        start += n
    return blocks


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """Jacobian by forward mode (one JVP per input element, vectorised with vmap). Inputs are
    real, or complex with ``holomorphic=True`` (outputs then complex too).

    >>> fnx.jacfwd(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
    """
    @api_boundary
    def jacfun(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "jacfwd")
        dyn, rebuild = _split_args(args, nums)
        in_leaves, in_tree = tree_flatten(dyn)
        for i, leaf in enumerate(in_leaves):
            _check_grad_input(leaf, i, "jacfwd", holomorphic, real_only=True)
        basis, sizes = _std_basis(in_leaves)

        def partial_fun(*dyn_vals):
            return fun(*rebuild(dyn_vals), **kwargs)

        def push(*tangent_leaves):
            tangents = tree_unflatten(in_tree, tangent_leaves)
            res = jvp(partial_fun, dyn, tangents, has_aux=has_aux)
            return (res[1], res[2]) if has_aux else res[1]

        # the primal (and aux) come from one plain evaluation
        if has_aux:
            y, aux = partial_fun(*dyn)
            tans = vmap(lambda *t: push(*t)[0])(*basis)
        else:
            y = partial_fun(*dyn)
            tans = vmap(push)(*basis)
        y_leaves, y_tree = tree_flatten(y)
        if holomorphic:
            for yl in y_leaves:
                if dtypes.kind(get_aval(yl).dtype) != "c":
                    raise GradError("jacfwd with holomorphic=True requires outputs with "
                                    f"complex dtype, but got {get_aval(yl).dtype.name}.")
        # an integer output's float0 tangents become zeros of its dtype, as in JAX
        t_leaves = [lax.full(t.shape, 0, get_aval(yl).dtype) if is_float0(t) else t
                    for t, yl in zip(tree_flatten(tans)[0], y_leaves)]
        jac = [_assemble(_split_jac(t, get_aval(yl).shape, in_leaves, sizes, True), in_tree,
                         single) for t, yl in zip(t_leaves, y_leaves)]
        out = tree_unflatten(y_tree, jac)
        return (out, aux) if has_aux else out
    return jacfun


def _assemble(blocks, in_tree, single):
    tree = tree_unflatten(in_tree, blocks)
    return tree[0] if single else tree


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """Jacobian by reverse mode (one VJP per output element, vectorised with vmap). Outputs
    are real, or complex with ``holomorphic=True`` (inputs then complex too).

    >>> fnx.jacobian(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
    """
    @api_boundary
    def jacfun(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "jacrev")
        dyn, rebuild = _split_args(args, nums)
        in_leaves, in_tree = tree_flatten(dyn)
        for i, leaf in enumerate(in_leaves):
            _check_grad_input(leaf, i, "jacrev", holomorphic)

        def partial_fun(*dyn_vals):
            return fun(*rebuild(dyn_vals), **kwargs)

        if has_aux:
            y, pullback, aux = vjp(partial_fun, *dyn, has_aux=True)
        else:
            y, pullback = vjp(partial_fun, *dyn)
        y_leaves, y_tree = tree_flatten(y)
        for yl in y_leaves:
            _check_output_dtype(get_aval(yl), "jacrev", holomorphic)
        basis, sizes = _std_basis(y_leaves)
        cts = vmap(lambda *b: tree_flatten(pullback(tree_unflatten(y_tree, b)))[0])(*basis)
        # cts[i]: (M, *x_i.shape), M = total output size; split M per output leaf
        jac_per_out = []
        start = 0
        for yl, m in zip(y_leaves, sizes):
            ys = get_aval(yl).shape
            blocks = [lax.reshape(lax.slice_in_dim(c, start, start + m, 1, 0),
                                  ys + get_aval(x).shape) for c, x in zip(cts, in_leaves)]
            jac_per_out.append(_assemble(blocks, in_tree, single))
            start += m
        out = tree_unflatten(y_tree, jac_per_out)
        return (out, aux) if has_aux else out
    return jacfun


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False):
    """``jacfwd(jacrev(fun))``.

    >>> fnx.hessian(lambda x: (x ** 3).sum())(jnp.array([1.0, 2.0]))
    Array([[ 6.,  0.],
           [ 0., 12.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


jacobian = jacrev   # as in JAX


def linear_transpose(fun: Callable, *primals):
    """The transpose of the linear function ``fun``: a function mapping an output cotangent to
    a tuple of input cotangents. ``primals`` (arrays or ShapeDtypeStructs) give only shapes and
    dtypes.

    >>> t = linear_transpose(lambda x: 2 * x, fnx.ShapeDtypeStruct((3,), "float32"))
    >>> t(fnx.numpy.ones(3))
    (Array([2., 2., 2.], dtype=float32),)

    As in JAX, ``fun`` is transposed as traced: a nonlinear operation on its inputs (``sin``, a
    product of two of them) raises instead of giving the transpose of some derivative.
    """
    leaves, tree = tree_flatten(primals)
    avals = [_aval_of(a) for a in leaves]
    for i, a in enumerate(avals):
        _check_grad_input(lax.full(a.shape, 0, a.dtype), i, "linear_transpose")
    flat_fun, out_tree = flatten_fun(fun, tree)
    closed = trace_to_jaxpr(flat_fun, [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals])
    out_avals = [v.aval for v in closed.jaxpr.outvars]

    @api_boundary
    def transposed(out_ct):
        cts, ct_tree = tree_flatten(out_ct)
        if ct_tree != out_tree():
            raise TreeStructureError(f"linear_transpose: the cotangent has structure {ct_tree},"
                                     f" the function's output {out_tree()}")
        for ct, a in zip(cts, out_avals):
            if get_aval(ct).shape != a.shape:
                raise ShapeError(f"linear_transpose: cotangent of shape {get_aval(ct).shape} "
                                 f"for an output of shape {a.shape}")
        cts = [_ct_like(ct, a) for ct, a in zip(cts, out_avals)]
        ins = ad.backward_pass(closed.jaxpr, closed.consts,
                               [ad.UndefinedPrimal(a) for a in closed.jaxpr.in_avals], cts)
        return tree_unflatten(tree, [_materialize_ct(c, a) for c, a in zip(ins, avals)])
    return transposed


def block_until_ready(x):
    """Wait for every array leaf of ``x`` to be computed; returns ``x``.

    >>> block_until_ready({"y": fnx.numpy.ones(3)})
    {'y': Array([1., 1., 1.], dtype=float32)}
    """
    for leaf in tree_flatten(x)[0]:
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None:
            wait()
    return x


# ---------------------------------------------------------------------------------------------
# vmap


def vmap(fun: Callable[..., R], in_axes=0, out_axes=0, axis_name=None,
         axis_size: int | None = None, spmd_axis_name=None,
         sum_match: bool = False) -> Callable[..., R]:
    """Vectorise ``fun`` over a leading (or any) axis of its arguments. ``spmd_axis_name``
    (JAX's sharding hint for the mapped axis) does not change the result and is accepted.
    With ``sum_match=True``, an output with ``out_axes`` None that varies over the mapped axis
    is summed over it (the transpose of broadcasting) instead of raising.

    >>> xs, w = jnp.ones((5, 3)), jnp.array([1.0, 2.0, 3.0])
    >>> vmap(lambda x, y: x @ y, in_axes=(0, None))(xs, w)   # one product per row of xs
    Array([6., 6., 6., 6., 6.], dtype=float32)
    >>> vmap(lambda x: 2. * x, out_axes=None, sum_match=True)(jnp.arange(3.))
    Array(6., dtype=float32)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    fname = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    @api_boundary
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise BatchingError(f"vmap in_axes has {len(in_axes)} entries but {fname} was "
                                f"called with {len(args)} positional arguments")
        kw_keys = sorted(kwargs)
        all_args = (tuple(args), tuple(kwargs[k] for k in kw_keys))
        leaves, tree = tree_flatten(all_args)
        refs = [(i, x) for i, x in enumerate(leaves) if state.is_ref(x)]
        leaves = [x[...] if state.is_ref(x) else x for x in leaves]
        axes_prefix = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
                       (0,) * len(kw_keys))
        dims = broadcast_prefix(axes_prefix, all_args, "vmap in_axes")
        dims = [_normalize_axis(x, d, i, fname) for i, (x, d) in enumerate(zip(leaves, dims))]
        size = _axis_size(leaves, dims, axis_size, fname, tree)

        flat_fun, out_tree = flatten_fun(
            lambda a, kw_vals: fun(*a, **dict(zip(kw_keys, kw_vals))), tree)

        def out_dims_fn(n):
            dummy = tree_unflatten(out_tree(), [0] * (n - len(refs)))
            axes = broadcast_prefix(out_axes, dummy, "vmap out_axes")
            return [d for d, x in zip(axes, tree_leaves(dummy)) if not is_float0(x)] + \
                [dims[i] for i, _ in refs]
        outs = batching.batch_flat(_with_refs(flat_fun, [i for i, _ in refs]), leaves, dims,
                                   size, _out_dims(out_dims_fn, sum_match), axis_name)
        for (_, ref), value in zip(refs, outs[len(outs) - len(refs):]):
            ref[...] = value
        return batch_float0(tree_unflatten(out_tree(), outs[:len(outs) - len(refs)]),
                            out_axes, size)
    return vmapped


def _with_refs(flat_fun, ref_at):
    """``flat_fun`` given a fresh reference over each instance's slice of the mapped references
    (at ``ref_at``), their final values returned after its outputs (JAX's discharge)."""
    if not ref_at:
        return flat_fun

    def run(*vals):
        vals = list(vals)
        inner = [state.new_ref(vals[i]) for i in ref_at]
        for i, r in zip(ref_at, inner):
            vals[i] = r
        return list(flat_fun(*vals)) + [r[...] for r in inner]
    return run


def _out_dims(fn, sum_match=False):
    def resolved(outs):
        dims = fn(len(outs))
        out = []
        for d, leaf in zip(dims, outs):
            if d is None:
                out.append(batching.SUM_MATCH if sum_match else None)
            else:
                nd = get_aval(leaf).ndim + 1
                if not -nd <= d < nd:
                    raise BatchingError(f"vmap out_axes={d} is out of range for an output of "
                                        f"rank {nd - 1}")
                out.append(d % nd)
        return out
    return resolved


def _normalize_axis(x, d, i, fname):
    if d is None:
        return None
    if not isinstance(d, (int, np.integer)):
        raise BatchingError(f"vmap in_axes must be ints or None, got {d!r}")
    nd = get_aval(x).ndim
    if not -nd <= d < nd:
        raise BatchingError(
            f"vmap was asked to map argument {i} of {fname} along axis {d}, but it has rank "
            f"{nd} (shape {get_aval(x).shape})")
    return int(d) % nd


def _axis_size(leaves, dims, axis_size, fname, tree):
    sizes = [(i, get_aval(x).shape, d, get_aval(x).shape[d])
             for i, (x, d) in enumerate(zip(leaves, dims)) if d is not None]
    if not sizes:
        if axis_size is None:
            raise BatchingError(f"vmap of {fname} needs at least one mapped argument or an "
                                "explicit axis_size")
        return axis_size
    distinct = {s for *_, s in sizes}
    if len(distinct) > 1 or (axis_size is not None and distinct != {axis_size}):
        lines = "\n".join(f"  argument leaf {i} of shape {shape} has size {n} along axis {d}"
                          for i, shape, d, n in sizes)
        raise BatchingError(f"vmap got inconsistent sizes for the mapped axes of {fname}:\n"
                            f"{lines}")
    return distinct.pop()


# ---------------------------------------------------------------------------------------------
# Staging helpers


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (eval_shape's result and input); a
    ``sharding`` is kept for the code that reads it (jit lays arguments out by its own
    ``in_shardings``).

    >>> fnx.ShapeDtypeStruct((2, 3), jnp.float32, sharding=None).ndim
    2
    """
    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    @property
    def aval(self):
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    @classmethod
    def like(cls, x):
        """The shape, dtype and weak type of array (or tracer, or scalar) ``x``.

        >>> ShapeDtypeStruct.like(fnx.numpy.ones((2, 3)))
        ShapeDtypeStruct(shape=(2, 3), dtype=float32)
        """
        aval = _aval_of(x)
        return cls(aval.shape, aval.dtype, aval.weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == \
            (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


def _aval_of(x):
    """The abstract value of an argument: an array's, or the shape and dtype a stand-in names
    (``ShapeDtypeStruct``, ``ShapedArray``, or any object with ``shape`` and ``dtype``, as JAX
    takes them in ``eval_shape``)."""
    if isinstance(x, ShapeDtypeStruct):
        return x.aval
    if isinstance(x, ShapedArray):
        return x
    try:
        return get_aval(x)
    except ArgumentTypeError:
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return ShapeDtypeStruct(tuple(x.shape), x.dtype).aval
        raise


def _static_split(args, static_argnums):
    static = {i % len(args) for i in static_argnums} if args else set()
    dyn = [a for i, a in enumerate(args) if i not in static]

    def rebuild(dyn_vals):
        it = iter(dyn_vals)
        return [a if i in static else next(it) for i, a in enumerate(args)]
    return dyn, rebuild


def make_jaxpr(fun: Callable, static_argnums: Sequence[int] = (), return_shape: bool = False):
    """A function returning the ClosedJaxpr that ``fun`` traces to for the given arguments.

    >>> print(make_jaxpr(lambda x: fnx.numpy.sin(x) * 2)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    @api_boundary
    def make(*args, **kwargs):
        dyn, rebuild = _static_split(args, static_argnums)
        leaves, tree = tree_flatten((tuple(dyn), kwargs))
        avals = [_aval_of(x) for x in leaves]
        flat_fun, out_tree = flatten_fun(lambda d, kw: fun(*rebuild(d), **kw), tree)
        closed = trace_to_jaxpr(flat_fun, avals)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
            return closed, tree_unflatten(out_tree(), shapes)
        return closed
    return make


def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes ``fun`` would return, without computing anything.

    >>> fnx.eval_shape(lambda x: x @ x.T, jnp.ones((2, 3)))
    ShapeDtypeStruct(shape=(2, 2), dtype=float32)
    """
    _, shapes = make_jaxpr(fun, return_shape=True)(*args, **kwargs)
    return shapes


def stop_gradient(x):
    """``x`` with no derivative flowing through (applied leafwise to pytrees).

    >>> fnx.grad(lambda x: x * lax.stop_gradient(x))(3.0)
    Array(3., dtype=float32, weak_type=True)
    """
    return tree_map(lambda v: lax.stop_gradient_p.bind(v), x)


__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
           "vmap", "make_jaxpr", "eval_shape", "ShapeDtypeStruct", "stop_gradient", "jacobian",
           "linear_transpose", "block_until_ready"]


def typeof(x) -> ShapedArray:
    """The abstract type of ``x``: its shape, dtype and weak type (printed ``float32[3]``).

    >>> print(typeof(fnx.numpy.ones(3)))
    float32[3]
    """
    if state.is_ref(x):
        return state.AbstractRef(get_aval(x._value))
    return _aval_of(x)


def effects_barrier() -> None:
    """Wait for pending callbacks (``debug.print``, ``io_callback``): fnx runs them as the
    program reaches them, so there is nothing to wait for.

    >>> fnx.jit(lambda x: fnx.debug.print("x = {}", x))(1.0)
    x = 1.0
    >>> fnx.effects_barrier()   # the print above has happened by now
    """

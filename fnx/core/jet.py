"""Taylor-mode differentiation (JAX's ``jax.experimental.jet``): a trace whose values carry a
truncated Taylor series. An input ``x(t) = x0 + x1 t + x2 t^2/2! + ...`` is given by its primal
``x0`` and its series ``[x1, x2, ...]`` (derivatives along ``t``, JAX's convention); each output
is returned the same way, exactly to the series' order, in one pass over the program.

Each primitive propagates the series by a rule: linear primitives apply themselves to every
term, ``mul`` and ``dot_general`` by Leibniz's rule, and every other primitive by its
derivatives along the input curve, computed by nesting its JVP (``2**K`` evaluations of the
primitive for order ``K``), which is exact for any primitive fnx can differentiate
(elementwise functions, reductions, control flow). Calls (jit) are traced through.
"""
from __future__ import annotations

import math

import numpy as np

from . import ad, dtypes
from . import lax as _lax
from .core import Trace, Tracer, current_trace, get_aval, set_current_trace
from .errors import ConcretizationTypeError
from .jaxpr import eval_jaxpr
from .pytree import tree_flatten, tree_unflatten, treedef_is_leaf

_CALLS = {"jit": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "remat": "jaxpr", "custom_vmap_call": "call_jaxpr", "linear_call": "callee"}


class JetTracer(Tracer):
    __slots__ = ("primal", "terms")

    def __init__(self, trace, primal, terms):
        self._trace, self.primal, self.terms = trace, primal, terms   # terms: K arrays or None

    @property
    def aval(self):
        return get_aval(self.primal)

    def _trace_description(self):
        return "jet"

    def to_concrete(self):
        raise ConcretizationTypeError(self._concretization_message("A concrete value"))


class JetTrace(Trace):
    def __init__(self, parent, order: int):
        super().__init__(parent)
        self.order = order

    def unpack(self, x):
        if self.is_own(x):
            return x.primal, x.terms
        return x, None

    def process_primitive(self, primitive, args, params):
        primals, series = zip(*map(self.unpack, args)) if args else ((), ())
        name = primitive.name
        if name in _CALLS and params.get(_CALLS[name]) is not None:
            with set_current_trace(self):
                return eval_jaxpr(params[_CALLS[name]], [], *args)
        if all(s is None for s in series):
            with set_current_trace(self.parent):
                return primitive.bind(*primals, **params)
        with set_current_trace(self.parent):
            out, out_series = _propagate(primitive, list(primals), list(series), params,
                                         self.order)
        if primitive.multiple_results:
            return [JetTracer(self, o, s) for o, s in zip(out, out_series)]
        return JetTracer(self, out[0], out_series[0])


def _is_float(x) -> bool:
    return dtypes.is_float(get_aval(x).dtype) or get_aval(x).dtype.kind == "c"


def _zeros(x):
    return _lax.full(get_aval(x).shape, 0, get_aval(x).dtype)


def _propagate(primitive, primals, series, params, order):
    """``(outputs, per output: its K terms or None)``."""
    bind = lambda *xs: primitive.bind(*xs, **params)        # noqa: E731
    name = primitive.name
    if primitive.is_linear and all(_is_float(x) for x in primals):
        out = bind(*primals)
        terms = [bind(*[_zeros(x) if s is None else s[k] for x, s in zip(primals, series)])
                 for k in range(order)]
        return _listed(primitive, out, terms, order)
    if name in ("mul", "dot_general"):
        a, b = primals
        sa = [a] + (series[0] or [None] * order)
        sb = [b] + (series[1] or [None] * order)
        out = bind(a, b)
        terms = []
        for k in range(1, order + 1):
            total = None
            for j in range(k + 1):
                if sa[j] is None or sb[k - j] is None:
                    continue
                part = bind(sa[j], sb[k - j])
                if math.comb(k, j) != 1:
                    part = _lax.mul(part, _lax.full((), math.comb(k, j), get_aval(part).dtype))
                total = part if total is None else _lax.add(total, part)
            terms.append(_zeros(out) if total is None else total)
        return [out], [terms]
    return _by_nested_jvp(primitive, primals, series, params, order)


def _listed(primitive, out, terms, order):
    if primitive.multiple_results:
        return list(out), [[terms[k][i] for k in range(order)] for i in range(len(out))]
    return [out], [terms]


def _by_nested_jvp(primitive, primals, series, params, order):
    """The derivatives at t = 0 of ``primitive(x(t))`` along the inputs' Taylor curves, up to
    ``order``: the JVP in ``t`` nested ``order`` times."""
    moving = [i for i, s in enumerate(series) if s is not None]
    t_dtype = np.result_type(*[get_aval(primals[i]).dtype for i in moving])
    if t_dtype.kind == "c":
        t_dtype = np.dtype(np.float64 if t_dtype == np.complex128 else np.float32)

    def curve(t):
        xs = list(primals)
        for i in moving:
            x = primals[i]
            for k, term in enumerate(series[i], 1):
                coeff = _lax.div(_lax.integer_pow(t, k) if k > 1 else t,
                                 _lax.full((), math.factorial(k), t_dtype))
                c = _lax.convert_element_type(coeff, get_aval(x).dtype)
                x = _lax.add(x, _lax.mul(c, term))
            xs[i] = x
        out = primitive.bind(*xs, **params)
        return list(out) if primitive.multiple_results else [out]

    def levels(level_fun):
        """From t -> [level0, ..., levelk] (flat) to the same with level k + 1 appended."""
        def next_fun(t):
            vals, tans = ad.jvp_flat(lambda t: flatten(level_fun(t)), [t],
                                     [_lax.full((), 1, t_dtype)])
            return unflatten(vals) + [tans[-n_out:]]
        return next_fun

    n_out = len(curve(_lax.full((), 0, t_dtype)))

    def flatten(lv):
        return [x for level in lv for x in level]

    def unflatten(flat):
        return [flat[i:i + n_out] for i in range(0, len(flat), n_out)]
    fun = lambda t: [curve(t)]      # noqa: E731
    for _ in range(order):
        fun = levels(fun)
    derivs = fun(_lax.full((), 0, t_dtype))
    out = derivs[0]
    out_series = []
    for i, o in enumerate(out):
        if not _is_float(o):
            out_series.append(None)
        else:
            out_series.append([derivs[k][i] for k in range(1, order + 1)])
    return out, out_series


def jet(fun, primals, series):
    """Taylor-mode derivatives of ``fun``: ``primals`` are its arguments, ``series`` per
    argument a list of ``K`` terms (the derivatives of the argument's curve at t = 0); returns
    ``(fun(*primals), series_out)``, the output's ``K`` derivatives along the curve."""
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError("jet: primals and series must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(series).__name__}")
    if len(primals) != len(series):
        raise ValueError(f"jet: {len(primals)} primals but {len(series)} series")
    for i, (p, s) in enumerate(zip(primals, series)):
        if not treedef_is_leaf(tree_flatten(p)[1]):
            raise ValueError(f"jet: primal value at position {i} is not an array")
        if not isinstance(s, (tuple, list)):
            raise ValueError(f"jet: the series at position {i} must be a list of terms")
        for term in s:
            if np.shape(term) != np.shape(p):
                raise ValueError(f"jet: a series term of shape {np.shape(term)} for a primal "
                                 f"of shape {np.shape(p)} (position {i})")
    orders = {len(s) for s in series}
    if len(orders) > 1:
        raise ValueError(f"jet: every series must have the same length, got {sorted(orders)}")
    order = orders.pop() if orders else 0
    trace = JetTrace(current_trace(), order)
    tracers = [JetTracer(trace, p, [_lax.convert_element_type(t, get_aval(p).dtype)
                                    if _is_float(p) else t for t in s] if order else None)
               for p, s in zip(primals, series)]
    with set_current_trace(trace):
        out = fun(*tracers)
    out_leaves, out_tree = tree_flatten(out)
    primal_out, series_out = [], []
    for o in out_leaves:
        p, s = trace.unpack(o)
        primal_out.append(p)
        series_out.append([_zeros(p) for _ in range(order)] if s is None else list(s))
    return tree_unflatten(out_tree, primal_out), tree_unflatten(out_tree, series_out)

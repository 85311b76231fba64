"""Functionalized checks (JAX's ``checkify``): a trace that runs every operation on its parent
and, beside it, computes whether a check failed, so failures become a value the function
returns (and ``jit`` can return) instead of an exception a compiled program cannot raise.

The trace keeps a list of *sites*, one per check that can fail: a message template, a boolean
that is true when this site failed first (no earlier site failed), and the payload its message
is formatted with. User checks (``check_p``) add one each; the automatic checks add one per
primitive that can produce a NaN (``nan``), divides (``div``) or gathers (``index``).
Calls (jit, custom derivatives, remat, custom_vmap) are inlined so checks inside them are seen,
and the bodies of ``cond``, ``scan`` and ``while_loop`` are functionalized, their failures
returned (and carried through loops) as extra outputs. Checks in a while loop's condition are
refused.
"""
from __future__ import annotations

import numpy as np

from . import lax as _lax
from .control_flow import cond_p, scan_p, while_p
from .core import Trace, Tracer, current_trace, get_aval, set_current_trace
from .errors import FnxError
from .jaxpr import Jaxpr, eval_jaxpr
from .partial_eval import JaxprTrace, trace_to_jaxpr_dynamic
from .pytree import tree_flatten, tree_unflatten

USER, NAN, INDEX, DIV = "user", "nan", "index", "div"


class JaxRuntimeError(FnxError, ValueError):
    """A functionalized check failed (``Error.throw``, or ``check`` run eagerly).

    >>> from fnx.experimental import checkify
    >>> try:
    ...     checkify.check(jnp.array(False), "x must be positive")
    ... except checkify.JaxRuntimeError as e:
    ...     print(str(e).splitlines()[0])
    x must be positive (`check` failed)
    """


class Site:
    """One check: its error kind, message template and the tree of its payload."""
    __slots__ = ("kind", "template", "payload_tree", "where")

    def __init__(self, kind, template, payload_tree, where=""):
        self.kind, self.template, self.payload_tree, self.where = kind, template, \
            payload_tree, where

    def message(self, payload) -> str:
        args, kwargs = tree_unflatten(self.payload_tree, payload)
        return self.template.format(*args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, Site) and (self.kind, self.template, self.payload_tree) == \
            (other.kind, other.template, other.payload_tree)

    def __hash__(self):
        return hash((self.kind, self.template))


# ---------------------------------------------------------------------------------------------
# the user's check


check_p = _lax.primitive("check", multiple_results=True)
check_p.has_effect = True      # never dropped by the passes


def _check_impl(failed_not, *payload, site):
    if not bool(np.asarray(failed_not)):
        raise JaxRuntimeError(site.message([np.asarray(p) for p in payload]))
    return []


def _check_batch(vals, dims, *, site):
    """Batched: the check fails if any example fails, with the first failing one's payload."""
    ok, *payload = vals
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    ok = _lax.bdim_at_front(ok, dims[0], size) if dims[0] is not None else \
        _lax.broadcast_in_dim(ok, (size,), ())
    first = _lax.argmin(_lax.convert_element_type(ok, np.dtype(np.int32)), 0, np.int32)
    payload = [p if d is None else _lax.dynamic_index_in_dim(_lax.moveaxis(p, d, 0), first, 0,
                                                            keepdims=False)
               for p, d in zip(payload, dims[1:])]
    return check_p.bind(_lax.reduce_and(ok, (0,)), *payload, site=site), []


check_p.impl = _check_impl
check_p.abstract_eval = lambda *avals, site: []
check_p.batch = _check_batch
check_p.jvp = lambda primals, tangents, *, site: (check_p.bind(*primals, site=site), [])


def _under_checkify() -> bool | None:
    """True under a checkify trace, False where a check would be staged without one (jit, a
    loop body), None where it runs at once."""
    trace, staged = current_trace(), False
    while trace is not None:
        if isinstance(trace, CheckifyTrace):
            return True
        staged = staged or (isinstance(trace, JaxprTrace) and trace.stage_all)
        trace = trace.parent
    return False if staged else None


def check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """Check that ``pred`` (a boolean scalar) holds; its failure is ``msg`` formatted with the
    arrays ``fmt_args``/``fmt_kwargs``."""
    leaves, tree = tree_flatten((fmt_args, fmt_kwargs))
    for x in leaves:
        if not (isinstance(x, (Tracer, np.ndarray, np.generic)) or hasattr(x, "aval")):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {x!r} of type {type(x)}.")
    if not isinstance(pred, Tracer) and np.shape(pred) != ():
        raise TypeError(f"check takes a scalar pred as argument, got shape {np.shape(pred)}")
    if _under_checkify() is False:
        raise ValueError("Cannot abstractly evaluate a checkify.check which was not "
                         "functionalized. This probably means you tried to stage "
                         "(jit/scan/pmap/...) a `check` without functionalizing it through "
                         "`checkify.checkify`.")
    ok = _lax.convert_element_type(pred, np.dtype(bool)) if get_aval(pred).dtype != bool \
        else pred
    check_p.bind(ok, *leaves, site=Site(USER, msg + " (`check` failed)", tree))


# ---------------------------------------------------------------------------------------------
# the trace


class CheckifyTracer(Tracer):
    __slots__ = ("val",)

    def __init__(self, trace, val):
        self._trace, self.val = trace, val

    @property
    def aval(self):
        return get_aval(self.val)

    def _trace_description(self):
        return "checkify"

    def to_concrete(self):
        return self.val.to_concrete() if isinstance(self.val, Tracer) else self.val


# primitives that can make a NaN (JAX's list, by name)
NAN_PRIMITIVES = frozenset("""
    acos acosh add asin asinh atan2 atan atanh bessel_i0e bessel_i1e cbrt conv_general_dilated
    cos cosh cumlogsumexp cummax cummin cumprod cumsum digamma dot_general erf_inv erf erfc exp
    expm1 fft igamma_grad_a igamma igammac integer_pow lgamma linear_solve log1p log logistic
    mul pad pow psum reduce reduce_prod reduce_sum reduce_window reduce_window_sum
    regularized_incomplete_beta rem rsqrt sin sinh sqrt sub tan tanh div
""".split())
_CALLS = {"jit": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "remat": "jaxpr", "custom_vmap_call": "call_jaxpr"}


class CheckifyTrace(Trace):
    def __init__(self, parent, enabled: frozenset):
        super().__init__(parent)
        self.enabled = enabled
        self.sites: list[Site] = []
        self.preds: list = []           # per site: it failed, first
        self.payloads: list = []        # per site: its payload leaves
        self.failed = None              # any site failed so far (None: none can have)

    def unpack(self, x):
        return x.val if self.is_own(x) else x

    def process_primitive(self, primitive, args, params):
        vals = [self.unpack(a) for a in args]
        name = primitive.name
        if primitive is check_p:
            if USER in self.enabled:
                with set_current_trace(self.parent):
                    self.record(params["site"], _lax.bitwise_not(vals[0]), vals[1:])
            return []
        if name in _CALLS and params.get(_CALLS[name]) is not None:
            with set_current_trace(self):
                return eval_jaxpr(params[_CALLS[name]], [], *args)
        if name == "cond":
            with set_current_trace(self.parent):    # the branches are traced below this trace
                outs = self._cond(vals, params)
            return [CheckifyTracer(self, o) for o in outs]
        if name in ("scan", "while"):
            with set_current_trace(self.parent):
                outs = (self._scan if name == "scan" else self._while)(vals, params)
            return [CheckifyTracer(self, o) for o in outs]
        with set_current_trace(self.parent):
            out = primitive.bind(*vals, **params)
            outs = out if primitive.multiple_results else [out]
            self._automatic(primitive, vals, outs, params)
        wrapped = [CheckifyTracer(self, o) for o in outs]
        return wrapped if primitive.multiple_results else wrapped[0]

    def record(self, site, failed, payload):
        """Add a site (in the parent trace): ``failed`` a boolean scalar."""
        first = failed if self.failed is None else \
            _lax.bitwise_and(failed, _lax.bitwise_not(self.failed))
        self.failed = failed if self.failed is None else _lax.bitwise_or(self.failed, failed)
        self.sites.append(site)
        self.preds.append(first)
        self.payloads.append(list(payload))

    def _automatic(self, primitive, vals, outs, params):
        name = primitive.name
        if DIV in self.enabled and name == "div":     # any dtype, as JAX checks
            y = vals[1]
            zero = _lax.eq(y, _lax.full((), 0, get_aval(y).dtype))
            self.record(Site(DIV, "division by zero", _EMPTY),
                        _lax.reduce_or(zero, tuple(range(get_aval(y).ndim))), [])
        if NAN in self.enabled and name in NAN_PRIMITIVES:
            floats = [o for o in outs if get_aval(o).dtype.kind in "fc"]
            if floats:
                nans = [_lax.reduce_or(_lax.ne(o, o), tuple(range(get_aval(o).ndim)))
                        for o in floats]
                any_nan = nans[0]
                for n in nans[1:]:
                    any_nan = _lax.bitwise_or(any_nan, n)
                self.record(Site(NAN, f"nan generated by primitive: {name}.", _EMPTY),
                            any_nan, [])
        if INDEX in self.enabled and name in ("take", "take_along_axis"):
            self._index_check(name, vals[0], vals[1], params["axis"])

    def _index_check(self, name, x, idx, axis):
        shape = get_aval(x).shape
        size = shape[axis]
        aval = get_aval(idx)
        if aval.size == 0:
            return
        oob = _lax.bitwise_or(_lax.lt(idx, _lax.full((), 0, aval.dtype)),
                              _lax.ge(idx, _lax.full((), size, aval.dtype)))
        flat_oob = _lax.reshape(oob, (aval.size,))
        first = _lax.argmax(_lax.convert_element_type(flat_oob, np.dtype(np.int32)), 0,
                            np.int32)
        bad = _lax.dynamic_index_in_dim(_lax.reshape(idx, (aval.size,)), first, 0,
                                        keepdims=False)
        tree = tree_flatten(((bad,), {}))[1]
        self.record(Site(INDEX, f"out-of-bounds indexing for array of shape {tuple(shape)}: "
                         f"index {{}} is out of bounds for axis {axis} with size {size}. ",
                         tree), _lax.reduce_or(flat_oob, (0,)), [bad])

    def _cond(self, vals, params):
        """Each branch functionalized; the error sites of all branches are the cond's, each
        branch giving False (and zeros) for the others'."""
        index, ops = vals[0], vals[1:]
        branches = params["branches"]
        parts = [checkify_jaxpr(b, self.enabled) for b in branches]
        sites = [s for p in parts for s in p.sites]
        layout = [(k, s_aval) for k, p in enumerate(parts) for s_aval in p.site_avals]
        new_branches = []
        for k, p in enumerate(parts):
            new_branches.append(_branch_with_all_sites(p, k, parts, layout, len(ops)))
        consts = [c for p in parts for c in p.consts]
        outs = _lax_cond_bind(index, consts, ops, new_branches)
        n_out = len(branches[0].outvars)
        it = iter(outs[n_out:])
        for site in sites:
            failed = next(it)
            self.record(site, failed, [next(it) for _ in range(site.payload_tree.num_leaves)])
        return outs[:n_out]


    def _record_all(self, sites, errs):
        it = iter(errs)
        for site in sites:
            failed = next(it)
            self.record(site, failed, [next(it) for _ in range(site.payload_tree.num_leaves)])

    def _scan(self, vals, params):
        """The body functionalized, its errors carried: each iteration's first failure is kept
        unless an earlier one failed."""
        nc, nk = params["num_consts"], params["num_carry"]
        part = checkify_jaxpr(params["jaxpr"], self.enabled)
        n_out = len(params["jaxpr"].outvars)
        body = _carrying_errors(part, len(part.consts) + nc, nk, n_out - nk)
        init = [_lax.full(a.shape, 0, a.dtype) for a in part.site_avals]
        outs = _bind("scan", *part.consts, *vals[:nc + nk], *init, *vals[nc + nk:],
                     **dict(params, jaxpr=body, num_consts=len(part.consts) + nc,
                            num_carry=nk + len(init)))
        self._record_all(part.sites, outs[nk:nk + len(init)])
        return outs[:nk] + outs[nk + len(init):]

    def _while(self, vals, params):
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        _refuse_checks_inside({"cond_jaxpr": params["cond_jaxpr"]}, "while_loop condition")
        part = checkify_jaxpr(params["body_jaxpr"], self.enabled)
        nk = len(vals) - cn - bn
        body = _carrying_errors(part, len(part.consts) + bn, nk, 0)
        cond = _ignoring_errors(params["cond_jaxpr"], cn, nk, part.site_avals)
        init = [_lax.full(a.shape, 0, a.dtype) for a in part.site_avals]
        outs = _bind("while", *vals[:cn], *part.consts, *vals[cn:cn + bn], *vals[cn + bn:],
                     *init, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=cn,
                     body_nconsts=len(part.consts) + bn)
        self._record_all(part.sites, outs[nk:])
        return outs[:nk]


def _bind(name, *args, **params):
    return (scan_p if name == "scan" else while_p).bind(*args, **params)


def _carrying_errors(part, n_consts, n_carry, n_ys):
    """A loop body taking ``[*consts, *carry, *errors, *xs]`` and returning ``[*carry,
    *errors, *ys]``: ``part`` (the functionalized body) run, its failures merged into the
    carried ones (a site's payload replaced only where it fails first)."""
    n_err = len(part.site_avals)

    def fun(*args):
        consts, carry = args[:n_consts], args[n_consts:n_consts + n_carry]
        errs, xs = args[n_consts + n_carry:n_consts + n_carry + n_err], \
            args[n_consts + n_carry + n_err:]
        outs = eval_jaxpr(part.jaxpr, [], *consts, *carry, *xs)
        new_carry, ys = outs[:n_carry], outs[n_carry:n_carry + n_ys]
        new = outs[n_carry + n_ys:]
        failed, merged, k = None, [], 0
        for site in part.sites:         # any carried failure
            failed = errs[k] if failed is None else _lax.bitwise_or(failed, errs[k])
            k += 1 + site.payload_tree.num_leaves
        k = 0
        for site in part.sites:
            size = 1 + site.payload_tree.num_leaves
            first = _lax.bitwise_and(new[k], _lax.bitwise_not(failed))
            merged.append(_lax.bitwise_or(errs[k], first))
            merged += [_lax.select_n(_lax.broadcast_in_dim(first, get_aval(old).shape, ()),
                                     old, fresh)
                       for old, fresh in zip(errs[k + 1:k + size], new[k + 1:k + size])]
            failed = _lax.bitwise_or(failed, new[k])
            k += size
        return [*new_carry, *merged, *ys]
    avals = [v.aval for v in part.jaxpr.invars[:n_consts + n_carry]] + list(part.site_avals) + \
        [v.aval for v in part.jaxpr.invars[n_consts + n_carry:]]
    jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals, "a checkified loop body")
    assert not consts, "a checkified loop body made constants"
    return jaxpr


def _ignoring_errors(cond: Jaxpr, n_consts, n_carry, err_avals):
    """A while condition over ``[*consts, *carry, *errors]`` that reads only the carry."""
    def fun(*args):
        return eval_jaxpr(cond, [], *args[:n_consts + n_carry])
    avals = [v.aval for v in cond.invars] + list(err_avals)
    jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals, "a checkified loop condition")
    assert not consts, "a checkified loop condition made constants"
    return jaxpr


_EMPTY = tree_flatten(((), {}))[1]


def _contains_check(jaxpr: Jaxpr) -> bool:
    for e in jaxpr.eqns:
        if e.primitive is check_p:
            return True
        for v in e.params.values():
            inner = [v] if isinstance(v, Jaxpr) else [x for x in v if isinstance(x, Jaxpr)] \
                if isinstance(v, (tuple, list)) else []
            if any(_contains_check(j) for j in inner):
                return True
    return False


def _refuse_checks_inside(params, name):
    for v in params.values():
        if isinstance(v, Jaxpr) and _contains_check(v):
            raise NotImplementedError(f"checkify: checks inside a {name} body are not "
                                      "supported by fnx; check the loop's results instead")


class _Checked:
    """A jaxpr functionalized: ``jaxpr(*consts, *args) -> [*outs, *per site: failed,
    *payload]``."""

    def __init__(self, jaxpr, consts, sites, site_avals):
        self.jaxpr, self.consts, self.sites, self.site_avals = jaxpr, consts, sites, site_avals


def checkify_jaxpr(jaxpr: Jaxpr, enabled) -> _Checked:
    meta: dict = {}

    def fun(*args):
        trace = CheckifyTrace(current_trace(), enabled)
        with set_current_trace(trace):
            outs = eval_jaxpr(jaxpr, [], *[CheckifyTracer(trace, a) for a in args])
        outs = [trace.unpack(o) for o in outs]
        meta["sites"] = trace.sites
        errs = [x for pred, payload in zip(trace.preds, trace.payloads) for x in [pred, *payload]]
        return outs + errs
    new, consts = trace_to_jaxpr_dynamic(fun, [v.aval for v in jaxpr.invars],
                                         "a checkified jaxpr")
    n_out = len(jaxpr.outvars)
    return _Checked(new, consts, meta["sites"], [v.aval for v in new.outvars[n_out:]])


def _branch_with_all_sites(part, k, parts, layout, n_ops):
    """Branch ``k`` taking every branch's consts then the operands, returning its outputs then
    the error values of every branch's sites (zeros for the others')."""
    offsets, total = [], 0
    for p in parts:
        offsets.append(total)
        total += len(p.consts)

    def fun(*args):
        consts, ops = args[:total], args[total:]
        mine = consts[offsets[k]:offsets[k] + len(part.consts)]
        outs = eval_jaxpr(part.jaxpr, [], *mine, *ops)
        n_out = len(outs) - len(part.site_avals)
        own = iter(outs[n_out:])
        errs = [next(own) if owner == k else _lax.full(a.shape, 0, a.dtype)
                for owner, a in layout]
        return list(outs[:n_out]) + errs
    avals = [get_aval(c) for p in parts for c in p.consts] + \
        [v.aval for v in part.jaxpr.invars[len(part.consts):]]
    jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals, "a checkified branch")
    assert not consts, "a checkified branch made constants"
    return jaxpr


def _lax_cond_bind(index, consts, ops, branches):
    return cond_p.bind(index, *consts, *ops, branches=tuple(branches))

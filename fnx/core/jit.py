"""jit: trace once per argument signature, compile for the backend, run the compiled program.

``jit(f)`` is a higher-order primitive, ``jit`` (``pjit_p``), holding the traced jaxpr, so every other
transformation applies to it: its JVP, batching and transposition are the jaxpr's, and partial
evaluation (for grad) inlines it. Called at the top level on concrete arrays, a cached call skips
the primitive machinery: flatten, look up, run.
"""
from __future__ import annotations

import functools
import logging
import types
import weakref
from typing import Any, Callable, Generic, ParamSpec, Sequence, TypeVar, overload

import numpy as np

from . import ad, batching, dtypes, profiling, state
from . import partition
from .api import ShapeDtypeStruct
from .api_util import flatten_outputs
from .axis_env import axis_env_key
from .config import config
from .core import Array, EvalTrace, ShapedArray, Tracer, current_trace, get_aval, get_backend
from .errors import (DonatedArgumentError, DTypeError, StaticArgumentError, TreeStructureError, types_str,
                     user_frame)
from .jaxpr import Jaxpr, dce_jaxpr, eval_jaxpr, jaxpr_with_consts_as_args
from .lax import primitive
from .nan_checks import any_bad, check_nans, checking
from .partial_eval import trace_to_jaxpr, trace_to_jaxpr_dynamic
from .passes import optimize
from .placement import device_put
from .shard_map import shard_map
from .sharding import NamedSharding, PartitionSpec, Sharding
from .pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .traceback_util import api_boundary

# jit's messages (retrace explanations, compile logs) are log records, as JAX's are; WARNING, so
# that they show on stderr where logging is not configured
logger = logging.getLogger("fnx.jit")

pjit_p = primitive("jit", multiple_results=True)   # JAX's name; pjit_p is its older one


def _pp_pjit(params):
    return {"name": params["name"], "jaxpr": params["jaxpr"]}


pjit_p.pp_params = _pp_pjit
pjit_p.pp_shares_names = True
pjit_p.abstract_eval = lambda *avals, jaxpr, name: [v.aval for v in jaxpr.outvars]


# executables per (jaxpr, backend): the jaxpr object is the identity of a traced signature
_executables: "weakref.WeakKeyDictionary[Jaxpr, dict]" = weakref.WeakKeyDictionary()


def _executable(jaxpr: Jaxpr, backend, donated: tuple = ()):
    """The compiled program for ``jaxpr`` on ``backend``; ``donated`` lists the argument
    positions whose buffers it may overwrite with its results."""
    per_backend = _executables.setdefault(jaxpr, {})
    key = (backend.name, donated)
    exe = per_backend.get(key)
    if exe is None:
        exe = per_backend[key] = backend.compile(jaxpr, [], donated=donated)
    return exe


def _donatable(backend, args, donated):
    """The donated argument positions whose buffers the call may really take: arrays on
    ``backend`` that appear once among the arguments (a buffer passed twice stays intact)."""
    if not donated or not backend.supports_donation:
        return ()
    return _passed_once(backend, args, donated)


def _released(backend, jaxpr, args, donated):
    """The donated positions that a call on a backend which cannot write into its arguments
    gives up all the same, as JAX's CPU client does: each argument the program uses whose size
    in bytes matches a result not yet paired, in order. A program that runs under JAX runs
    here, and one that reuses a donated array fails here as it does there."""
    if not donated or backend.supports_donation or checking(config):
        return ()
    used = {id(x) for e in jaxpr.eqns for x in e.invars} | {id(x) for x in jaxpr.outvars}
    free = [_nbytes(v.aval) for v in jaxpr.outvars]
    released = []
    for i in _passed_once(backend, args, donated):
        v = jaxpr.invars[i]
        size = _nbytes(v.aval)
        if id(v) in used and size is not None and size in free:
            free[free.index(size)] = None
            released.append(i)
    return tuple(released)


def _nbytes(aval):
    try:
        return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize
    except TypeError:      # key and other extended dtypes are never paired
        return None


def _passed_once(backend, args, donated):
    seen: dict = {}
    for a in args:
        if type(a) is Array:
            seen[id(a._value)] = seen.get(id(a._value), 0) + 1
    return tuple(i for i in donated if type(args[i]) is Array and args[i]._backend is backend
                 and not args[i].is_deleted() and seen[id(args[i]._value)] == 1)


def _call_compiled(jaxpr, args, name, donated=()):
    """Run ``jaxpr``'s compiled program on concrete ``args``; the arrays at ``donated``
    positions give up their buffers to it."""
    backend = next((a._backend for a in args if type(a) is Array), None) or get_backend()
    for i in donated:
        if type(args[i]) is Array and args[i].is_deleted():
            args[i]._value.shape     # raises DeletedArrayError naming the earlier call
    released = _released(backend, jaxpr, args, donated)
    checks = checking(config)
    donated = () if checks else _donatable(backend, args, donated)
    bufs = [backend.cast(backend.to_buffer(a, v.aval.dtype), v.aval.dtype)
            for a, v in zip(args, jaxpr.invars)]
    exe = _executable(jaxpr, backend, donated)
    outs = exe(*bufs)
    # only once the program has run: a call that raises leaves the donated arrays usable
    for i in (*donated, *released):
        args[i].delete(f"jit({name})")
    outs = [Array(backend.cast(o, v.aval.dtype), backend, v.aval.weak_type)
            for o, v in zip(outs, jaxpr.outvars)]
    if checks:
        _locate_nans(jaxpr, args, outs)
    return outs


def _pjit_impl(*args, jaxpr, name):
    return _call_compiled(jaxpr, args, name)


def _locate_nans(jaxpr, args, outs):
    """If the compiled program returned a NaN (or an inf, with ``debug_infs``), re-run it
    equation by equation and name the first equation that made one, with the source line it
    was traced from."""
    nans, infs = config.debug_nans, config.debug_infs
    if not any_bad(outs, nans, infs):
        return
    env = dict(zip(jaxpr.invars, args))
    read = lambda v: v.val if not hasattr(v, "count") else env[v]  # noqa: E731
    with config.option("debug_nans", False), config.option("debug_infs", False):
        for eqn in jaxpr.eqns:
            res = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
            res = res if eqn.primitive.multiple_results else [res]
            check_nans(eqn.primitive, res, eqn.source_info, nans=nans, infs=infs)
            env.update(zip(eqn.outvars, res))


pjit_p.impl = _pjit_impl


def _pjit_jvp(primals, tangents, *, jaxpr, name):
    # zero tangents stay symbolic: the program's constants are operands too, and a custom_vjp
    # inside must not see them as differentiated
    nonzeros = [not isinstance(t, ad.Zero) for t in tangents]
    new, consts, _ = ad.jvp_jaxpr(jaxpr, nonzeros, True)
    tangents = [t for t in tangents if not isinstance(t, ad.Zero)]
    outs = pjit_p.bind(*consts, *primals, *tangents, jaxpr=new, name=f"jvp({name})")
    k = len(jaxpr.outvars)
    return outs[:k], outs[k:]


def _pjit_batch(vals, dims, *, jaxpr, name):
    size = batching.batch_size(vals, dims)
    moved = [batching.bdim_at_front(v, d, size) if d is not None else v
             for v, d in zip(vals, dims)]
    new, consts, _ = batching.batch_jaxpr(jaxpr, size, [d is not None for d in dims], True)
    outs = pjit_p.bind(*consts, *moved, jaxpr=new, name=f"vmap({name})")
    return outs, [0] * len(outs)


def _pjit_partial_eval(trace, args, params):
    # grad of a jitted function: inline it, so the known part runs (or is staged) on the parent
    # and the unknown (tangent) part is recorded in the linear jaxpr
    return eval_jaxpr(params["jaxpr"], [], *args)


def _pjit_transpose(cts, *args, jaxpr, name):
    cts = [ad.instantiate(c) if isinstance(c, ad.Zero) else c for c in cts]
    return ad.backward_pass(jaxpr, [], list(args), cts)


pjit_p.jvp = _pjit_jvp
pjit_p.batch = _pjit_batch
pjit_p.partial_eval = _pjit_partial_eval
pjit_p.transpose = _pjit_transpose


# ---------------------------------------------------------------------------------------------
# The user-facing wrapper


def _static_key(v):
    try:
        hash(v)
    except TypeError:
        raise StaticArgumentError(f"static arguments of jit must be hashable, got "
                                  f"{type(v).__name__} {v!r:.60}") from None
    return v


class _Traced:
    """One traced signature: the jaxpr (consts as leading args), its consts, the output tree."""
    __slots__ = ("jaxpr", "consts", "out_tree", "concrete_consts", "closed", "refs")

    def __init__(self, jaxpr, consts, out_tree, closed=None, refs=()):
        self.jaxpr, self.consts, self.out_tree, self.closed = jaxpr, consts, out_tree, closed
        # references the program reads and writes: extra trailing inputs and outputs
        self.refs = list(refs)
        self.concrete_consts = all(not isinstance(c, Tracer) for c in consts)


P = ParamSpec("P")
R = TypeVar("R")


@overload
def jit(fun: Callable[P, R], *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), in_shardings: Any = None,
        out_shardings: Any = None, keep_unused: bool = False, device: Any = None,
        backend: Any = None, inline: bool = False,
        compiler_options: Any = None) -> "Jitted[P, R]": ...


@overload
def jit(fun: None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), in_shardings: Any = None,
        out_shardings: Any = None, keep_unused: bool = False, device: Any = None,
        backend: Any = None, inline: bool = False,
        compiler_options: Any = None) -> Callable[[Callable[P, R]], "Jitted[P, R]"]: ...


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), in_shardings=None, out_shardings=None,
        keep_unused=False, device=None, backend=None, inline=False, compiler_options=None):
    """Compile ``fun``: trace it once per argument signature into a jaxpr, lower that to the
    backend (NumPy on the CPU; fused kernels, cuBLAS and a CUDA graph on the GPU) and run the
    compiled program on later calls. Inside ``fnx.disable_jit()`` a call runs ``fun`` as it is.
    ``in_shardings`` lay the arguments out over a mesh before the call (``device_put``; a
    misfit raises at the call) and ``out_shardings`` the results (a sharding, or a pytree
    prefix of them, as in JAX; replicated when not given). When they are NamedShardings of one
    mesh, each device runs the program on its blocks, with the collectives the layouts need
    (fnx.core.partition: a batch split over devices with parameters replicated is data
    parallelism; parameters split over a mesh axis stay split); other shardings compute the
    global program and lay out its results. ``device``, ``keep_unused`` and ``backend`` are
    accepted and ignored.

    >>> @fnx.jit
    ... def f(x):
    ...     return fnx.numpy.tanh(x) * 2
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, in_shardings=in_shardings,
                                 out_shardings=out_shardings)
    jitted = Jitted(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    if in_shardings is None and out_shardings is None:
        return jitted
    return _Placed(jitted, in_shardings, out_shardings)


class _Placed:
    """A jitted function whose arguments and results are laid out by shardings. Where every
    sharding is a NamedSharding of one mesh, the program runs on each device of the mesh, on
    its blocks, with the collectives its layouts need (fnx.core.partition); otherwise it
    computes the global values and lays out the results."""

    def __init__(self, jitted, in_shardings, out_shardings):
        functools.update_wrapper(self, jitted.fun)
        self.jitted, self.in_shardings, self.out_shardings = jitted, in_shardings, out_shardings
        self._partitioned: dict = {}

    @api_boundary
    def __call__(self, *args, **kwargs):
        concrete = type(current_trace()) is EvalTrace
        sh = self.in_shardings
        if concrete and sh is not None:
            sh = tuple(sh) if isinstance(sh, (tuple, list)) else (sh,) * len(args)
            if len(sh) != len(args):
                raise TreeStructureError(
                    f"jit in_shardings has {len(sh)} entries but {self.jitted.name} was called "
                    f"with {len(args)} arguments ({types_str(args)})")
            args = tuple(a if s is None else device_put(a, s) for a, s in zip(args, sh))
            if not kwargs and not self.jitted.static_argnums and not self.jitted.static_argnames:
                out = self._on_every_device(args, sh)
                if out is not None:
                    return out
        out = self.jitted(*args, **kwargs)
        if concrete and self.out_shardings is not None:
            broadcast_prefix(self.out_shardings, out, f"jit out_shardings of {self.jitted.name}",
                             is_leaf=lambda s: isinstance(s, Sharding))   # names the misfit
            out = device_put(out, self.out_shardings)
        return out

    def _on_every_device(self, args, shardings):
        """The results of the partitioned program, or None where it does not apply."""
        leaves, tree = tree_flatten(args)
        per_leaf = broadcast_prefix(tuple(shardings), tuple(args), "jit in_shardings",
                                    is_leaf=lambda s: isinstance(s, NamedSharding))
        if not per_leaf or \
                not all(isinstance(s, NamedSharding) for s in per_leaf) or \
                len({s.mesh for s in per_leaf}) != 1:
            return None
        mesh = per_leaf[0].mesh
        key = (tree, tuple(_leaf_sig(x) for x in leaves), tuple(per_leaf),
               config.enable_x64, axis_env_key())
        run = self._partitioned.get(key)
        if run is False:
            return None
        if run is not None:
            return run(leaves)
        try:      # the first call traces the device program; anything it cannot rewrite
            run = self._partition(leaves, tree, per_leaf, mesh)   # runs globally instead
            out = run(leaves) if run else None
        except Exception:    # noqa: BLE001  (a user's error is raised again by the global path)
            run, out = False, None
        self._partitioned[key] = run
        return out

    def _partition(self, leaves, tree, shardings, mesh):
        try:
            in_layouts = [partition.layout_of(s, get_aval(x).ndim)
                          for x, s in zip(leaves, shardings)]
        except partition.Unsupported:
            return False
        store: dict = {}

        def flat_fun(*xs):
            out = self.jitted.fun(*tree_unflatten(tree, xs))
            out_leaves, store["tree"] = tree_flatten(out)
            return out_leaves
        jaxpr, consts = trace_to_jaxpr_dynamic(flat_fun, [get_aval(x) for x in leaves],
                                               f"jit({self.jitted.name})")
        jaxpr, _ = dce_jaxpr(jaxpr)
        if config.jit_optimize:
            jaxpr = optimize(jaxpr)
        out_tree = store["tree"]
        out_sh = self.out_shardings
        if out_sh is None:        # JAX infers them; replicated results are what a step returns
            out_sh = NamedSharding(mesh, PartitionSpec())
        out_sh = broadcast_prefix(out_sh, tree_unflatten(out_tree, [0] * out_tree.num_leaves),
                                  "jit out_shardings", is_leaf=lambda s: isinstance(s, Sharding))
        if not all(
                isinstance(s, NamedSharding) and s.mesh == mesh for s in out_sh):
            return False
        try:
            out_layouts = [partition.layout_of(s, v.aval.ndim)
                           for s, v in zip(out_sh, jaxpr.outvars)]
        except partition.Unsupported:
            return False
        layouts = [(None,) * get_aval(c).ndim for c in consts] + in_layouts
        body = partition.device_program(jaxpr, [], layouts, out_layouts, mesh)
        mapped = shard_map(lambda *blocks: body(*blocks), mesh=mesh,
                           in_specs=tuple(partition.spec_of(lay) for lay in layouts),
                           out_specs=[partition.spec_of(lay) for lay in out_layouts])
        consts = list(consts)

        def run(leaves):
            return tree_unflatten(out_tree, mapped(*consts, *leaves))
        return run

    def lower(self, *args, **kwargs):
        return self.jitted.lower(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.jitted, name)


def _as_tuple(x):
    return (x,) if isinstance(x, (int, str)) else tuple(x)


def _resolve_argnums(fun, what, argnums, argnames):
    """``argnums`` and ``argnames`` (one kind: static or donated) completed from each other
    through ``fun``'s signature, as JAX does: a parameter named in either form is found whether
    it is passed by position or by keyword. Indices are non-negative unless ``fun`` takes
    ``*args`` (then they are read against each call's positional arguments)."""
    import inspect
    argnums, argnames = _as_tuple(argnums), _as_tuple(argnames)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):        # no signature (a builtin): take them as given
        return argnums, argnames
    P = inspect.Parameter
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is P.VAR_POSITIONAL for p in params)
    varkw = any(p.kind is P.VAR_KEYWORD for p in params)
    n = len(positional)
    if not varargs:
        bad = [i for i in argnums if not -n <= i < n]
        if bad:
            raise StaticArgumentError(
                f"jitted function {getattr(fun, '__name__', fun)!r} has {what}_argnums="
                f"{argnums}, but only accepts {n} positional argument{'s' if n != 1 else ''}")
        argnums = tuple(i % n for i in argnums)
    named = {p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
    unknown = set(argnames) - named - {p.name for p in positional}
    if unknown and not varkw:
        raise StaticArgumentError(
            f"jitted function {getattr(fun, '__name__', fun)!r} has invalid argnames "
            f"{sorted(unknown)} in {what}_argnames: it takes no such arguments")
    names = tuple(argnames) + tuple(positional[i].name for i in argnums
                                    if 0 <= i < n and positional[i].name in named
                                    and positional[i].name not in argnames)
    nums = tuple(argnums) + tuple(i for i, p in enumerate(positional)
                                  if p.name in argnames and i not in argnums)
    return tuple(sorted(set(nums), key=nums.index)), names


def _positions(argnums, n):
    """The positions among ``n`` positional arguments that ``argnums`` names (negative ones
    count from the end; those past the end name nothing)."""
    return {i + n if i < 0 else i for i in argnums if -n <= i < n}


# every live jitted function, for clear_caches
_all_jitted: "weakref.WeakSet[Jitted]" = weakref.WeakSet()


def clear_caches():
    """Forget every jitted function's traced signatures and every compiled program, so the
    next calls trace and compile again.

    >>> fnx.clear_caches()
    """
    for f in list(_all_jitted):
        f.clear_cache()
    _executables.clear()


# traced signatures per function, shared by every ``jit`` of it: as in JAX, ``jit(f)(x)`` twice
# traces ``f`` once
_trace_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _shared_cache(fun, options) -> dict:
    try:
        per_fun = _trace_caches.setdefault(fun, {})
    except TypeError:           # not weakly referenceable or not hashable: a cache of its own
        return {}
    return per_fun.setdefault(options, {})


class Jitted(Generic[P, R]):
    """A jitted function: called as ``fun`` is (types included), plus ``lower`` and
    ``clear_cache``."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums,
                 donate_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums, self.static_argnames = _resolve_argnums(
            fun, "static", static_argnums, static_argnames)
        # the GPU backend writes results into donated buffers; the CPU one ignores donation
        self.donate_argnums, self.donate_argnames = _resolve_argnums(
            fun, "donate", donate_argnums, donate_argnames)
        both = (set(self.static_argnames) & set(self.donate_argnames)) | \
            (set(self.static_argnums) & set(self.donate_argnums))
        if both:
            raise StaticArgumentError(f"jit: arguments {sorted(both, key=str)} are both static "
                                      "and donated; static arguments have no buffers to donate")
        self.name = getattr(fun, "__name__", "fun")
        _all_jitted.add(self)
        self._cache: dict = _shared_cache(fun, (self.static_argnums, self.static_argnames,
                                                self.donate_argnums, self.donate_argnames))
        self._last_key = None
        # calls with positional Array arguments only skip pytree flattening: signature -> run
        self._fast: dict = {}
        self._fast_ok = not self.static_argnums and not self.static_argnames
        self._with_refs: dict = {}      # (argument structure, reference positions) -> Jitted
        self._passed_refs: list = []    # the references of the call in progress

    def __get__(self, obj, objtype=None):
        """A jitted function stored on a class is a method: ``obj`` is its first argument."""
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def _key(self, args, kwargs):
        static = tuple(sorted(_positions(self.static_argnums, len(args))))
        dyn_args = [a for i, a in enumerate(args) if i not in static]
        static_args = tuple(_static_key(args[i]) for i in static)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        static_kwargs = tuple(sorted((k, _static_key(v)) for k, v in kwargs.items()
                                     if k in self.static_argnames))
        leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        avals = tuple(_leaf_sig(x) for x in leaves)
        key = (tree, avals, static, static_args, static_kwargs,
               config.default_matmul_precision, config.enable_x64, axis_env_key())
        return key, leaves, static

    def _trace_for(self, key, args, kwargs, static):
        tree, avals_sig = key[0], key[1]
        if config.explain_cache_misses and self._last_key is not None:
            logger.warning("%s", explain_miss(self.name, self._last_key, key))
        if config.log_compiles:
            logger.warning("fnx.jit: tracing %s for %s", self.name, avals_sig)
        with profiling.span(f"trace jit({self.name})"):
            return self._trace(tree, avals_sig, args, kwargs, static)

    def _trace(self, tree, avals_sig, args, kwargs, static):
        refs: list = []     # mutable references made outside fun that it touches

        def flat_fun(*vals):
            n = len(vals) - len(refs)
            for r, v in zip(refs, vals[n:]):
                r._value = v
            dyn_args, dyn_kwargs = tree_unflatten(tree, vals[:n])
            it = iter(dyn_args)
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            kw = dict(dyn_kwargs, **{k: kwargs[k] for k in self.static_argnames if k in kwargs})
            out = self.fun(*full, **kw)
            out_leaves, store["tree"] = flatten_outputs(out)
            if any(state.is_ref(x) for x in out_leaves):
                raise ValueError(f"jit({self.name}) returned a mutable array reference, but "
                                 "mutable array references cannot be returned; return its "
                                 "value (ref[...]) instead")
            return out_leaves + [r._value for r in refs]
        store: dict = {}
        while True:     # trace again while it finds references: they become inputs and outputs
            before = [r._value for r in refs]
            with state.tracking() as tracker:
                try:
                    closed = trace_to_jaxpr(flat_fun, [sig.aval for sig in avals_sig] +
                                            [get_aval(v) for v in before],
                                            description=f"jit({self.name})")
                finally:        # the trace's writes are undone: calls write them back
                    for r, v in [*tracker.outside_refs(), *zip(refs, before)]:
                        r._value = v
            new = [r for r, _ in tracker.outside_refs() if not any(r is q for q in refs)]
            if not new:
                break
            refs.extend(new)
        jaxpr = jaxpr_with_consts_as_args(closed)
        jaxpr, _ = dce_jaxpr(jaxpr)
        if config.jit_optimize:     # every backend compiles (and pjit carries) the optimized one
            jaxpr = optimize(jaxpr)
        return _Traced(jaxpr, closed.consts, store["tree"], closed, refs)

    @api_boundary
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if profiling.events is not None:    # a profiler trace is running: time the call
            with profiling.span(f"jit({self.name})"):
                return self._call(*args, **kwargs)
        return self._call(*args, **kwargs)

    def _call(self, *args, **kwargs):
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        if self._fast_ok and not kwargs and type(current_trace()) is EvalTrace \
                and not checking(config):
            leaves: list = []
            try:
                sig = _array_tree_sig(args, leaves)
            except _NotFast:
                sig = None
            run = self._fast.get(sig) if sig is not None else None
            if run is not None and run[0] == (config.default_matmul_precision,
                                               config.enable_x64):
                return run[1](leaves)
        self._refuse_taken_donations(args, kwargs)
        try:
            key, leaves, static = self._key(args, kwargs)
        except _RefArgument:
            return self._call_with_refs(args, kwargs)
        traced = self._cache.get(key)
        if traced is None or not traced.concrete_consts:
            traced = self._trace_for(key, args, kwargs, static)
            if traced.concrete_consts:
                self._cache[key] = traced
        self._last_key = key
        ref_vals = [r._value for r in traced.refs]
        if type(current_trace()) is EvalTrace and traced.concrete_consts:
            donated = self._donated_leaves(args, kwargs, static, len(traced.consts))
            if self._fast_ok and not kwargs and not traced.refs:   # before donation
                self._remember_fast(args, traced, donated)
            outs = _call_compiled(traced.jaxpr, [*traced.consts, *leaves, *ref_vals], self.name,
                                  donated)
        else:
            outs = pjit_p.bind(*traced.consts, *leaves, *ref_vals, jaxpr=traced.jaxpr,
                               name=self.name)
        return tree_unflatten(traced.out_tree, write_refs(traced.refs, outs))

    def _call_with_refs(self, args, kwargs):
        """A call with references (``fnx.new_ref``) among the arguments: the compiled program
        takes their values and returns their final ones, which the call writes back (JAX
        updates them in place)."""
        leaves, tree = tree_flatten((args, kwargs))
        at = tuple(i for i, x in enumerate(leaves) if state.is_ref(x))
        refs = [leaves[i] for i in at]
        if len({id(r) for r in refs}) < len(refs):
            raise ValueError(f"only one reference to a mutable array may be passed as an "
                             f"argument to a function, but jit({self.name}) got the same "
                             "reference twice among its arguments")
        inner = self._with_refs.get((tree, at))
        if inner is None:
            fun, name, passed = self.fun, self.name, self._passed_refs

            def with_refs(*a, **kw):
                vals, t = tree_flatten((a, kw))
                local = [state.new_ref(vals[i]) for i in at]   # made inside: plain state
                for i, r in zip(at, local):
                    vals[i] = r
                a, kw = tree_unflatten(t, vals)
                with state.tracking() as tracker:
                    out = fun(*a, **kw)
                if any(r is q for r, _ in tracker.outside_refs() for q in passed):
                    raise ValueError(f"when tracing jit({name}), a mutable array reference "
                                     "was both closed over and passed as an argument")
                return out, [r._value for r in local]
            with_refs.__name__ = self.name
            inner = self._with_refs[(tree, at)] = Jitted(
                with_refs, self.static_argnums, self.static_argnames, self.donate_argnums,
                self.donate_argnames)
        for r in refs:
            state.touched(r)
        vals = list(leaves)
        for i, r in zip(at, refs):
            vals[i] = r._value
        a, kw = tree_unflatten(tree, vals)
        self._passed_refs[:] = refs     # for the aliasing check while inner traces
        try:
            out, new = inner(*a, **kw)
        finally:
            self._passed_refs[:] = []
        for r, v in zip(refs, new):
            state.check_write(r, v)
            r._value = v
        return out

    def _refuse_taken_donations(self, args, kwargs):
        """An array an earlier call took, donated again: a ValueError, as JAX's (its client
        refuses the deleted buffer)."""
        if not self.donate_argnums and not self.donate_argnames:
            return
        picked = [args[i] for i in _positions(self.donate_argnums, len(args))]
        picked += [v for k, v in kwargs.items() if k in self.donate_argnames]
        for leaf in tree_flatten(picked)[0]:
            if type(leaf) is Array and leaf.is_deleted():
                raise DonatedArgumentError(
                    f"jit({self.name}) was given to donate an array that {leaf._value.name} "
                    "already took (donate_argnums); pass the arrays that call returned instead")

    def _donated_leaves(self, args, kwargs, static, offset):
        """Positions, among the compiled program's arguments, of the leaves of donated
        arguments (``offset`` = the number of leading consts)."""
        if not self.donate_argnums and not self.donate_argnames:
            return ()
        donate = _positions(self.donate_argnums, len(args))
        # the leaves in _key's order: positional arguments, then keyword ones by sorted name
        parts = [(a, i in donate) for i, a in enumerate(args) if i not in static]
        parts += [(kwargs[k], k in self.donate_argnames) for k in sorted(kwargs)
                  if k not in self.static_argnames]
        positions, k = [], offset
        for a, donated in parts:
            count = tree_flatten(a)[1].num_leaves
            if donated:
                positions.extend(range(k, k + count))
            k += count
        return tuple(positions)

    def _remember_fast(self, args, traced, donated=()):
        """Later calls with the same nesting of lists, tuples and dicts of arrays skip pytree
        flattening and cache-key building: signature -> run(leaves)."""
        leaves: list = []
        try:
            sig = _array_tree_sig(args, leaves)
        except _NotFast:
            return
        backend = leaves[0]._backend if leaves else get_backend()
        if any(a._backend is not backend for a in leaves):
            return
        n_consts = len(traced.consts)
        requested = donated
        released = _released(backend, traced.jaxpr, [*traced.consts, *leaves], donated)
        donated = _donatable(backend, [*traced.consts, *leaves], donated)
        exe = _executable(traced.jaxpr, backend, donated)
        consts = [backend.cast(backend.to_buffer(c, v.aval.dtype), v.aval.dtype)
                  for c, v in zip(traced.consts, traced.jaxpr.invars)]
        out_weak = [v.aval.weak_type for v in traced.jaxpr.outvars]
        build = _builder(traced.out_tree)
        donated_leaves = [i - n_consts for i in (*donated, *released)]
        by = f"jit({self.name})"

        def run(leaves):
            bufs = [a._value for a in leaves]
            if donated_leaves:
                if len({id(b) for b in bufs}) < len(bufs) or \
                        any(leaves[i].is_deleted() for i in donated_leaves):
                    # a buffer passed twice, or a deleted one: the general path sorts it out
                    outs = _call_compiled(traced.jaxpr, [*traced.consts, *leaves], self.name,
                                          requested)
                    return tree_unflatten(traced.out_tree, outs)
            outs = exe(*consts, *bufs)
            for i in donated_leaves:     # after the call, which may raise
                leaves[i].delete(by)
            return build(iter([Array(o, backend, w) for o, w in zip(outs, out_weak)]))
        self._fast[sig] = ((config.default_matmul_precision, config.enable_x64), run)

    @api_boundary
    def trace(self, *args, **kwargs):
        """The program traced for these arguments (arrays or ``ShapeDtypeStruct``s), as a
        ``Traced`` stage: ``.jaxpr``, ``.lower()``, then ``.compile()`` (see fnx.core.stages).

        >>> fnx.jit(lambda x, y: 2 * x + y).trace(3, 4).lower().compile()(3, 4)
        Array(10, dtype=int32, weak_type=True)
        """
        from .stages import Traced
        key, leaves, static = self._key(args, kwargs)
        traced = self._cache.get(key) or self._trace_for(key, args, kwargs, static)
        return Traced(self, traced, key, leaves)

    # what the stages (fnx.core.stages) ask of the function they came from
    leaf_signature = staticmethod(lambda x: _leaf_sig(x))

    def executable_for(self, traced, backend):
        return _executable(traced.jaxpr, backend)

    def run_traced(self, traced, leaves):
        """Run a traced signature's program on ``leaves`` (its references' values added)."""
        outs = _call_compiled(traced.jaxpr, [*traced.consts, *leaves,
                                             *[r._value for r in traced.refs]], self.name)
        return tree_unflatten(traced.out_tree, write_refs(traced.refs, outs))

    @api_boundary
    def lower(self, *args, **kwargs):
        """``trace(*args, **kwargs).lower()``: ``.as_text()`` prints the optimized jaxpr;
        ``.compile()`` returns the program compiled for these arguments' signature."""
        return self.trace(*args, **kwargs).lower()

    @api_boundary
    def eval_shape(self, *args, **kwargs):
        key, _, static = self._key(args, kwargs)
        traced = self._trace_for(key, args, kwargs, static)
        outvars = traced.jaxpr.outvars[:len(traced.jaxpr.outvars) - len(traced.refs)]
        return tree_unflatten(traced.out_tree, [ShapeDtypeStruct(v.aval.shape, v.aval.dtype)
                                                for v in outvars])

    def clear_cache(self):
        self._cache.clear()
        self._fast.clear()

    @property
    def cache_size(self):
        return len(self._cache)


def write_refs(refs, outs):
    """Store the trailing outputs (the references' new values) into ``refs``; the rest."""
    if not refs:
        return outs
    k = len(outs) - len(refs)
    for r, v in zip(refs, outs[k:]):
        state.check_write(r, v)
        r._value = v
    return outs[:k]


class _NotFast(Exception):
    pass


class _RefArgument(Exception):
    """A reference among a jitted function's arguments (the call takes another path)."""


def _array_tree_sig(x, leaves):
    """A hashable signature of nested lists/tuples/dicts of fnx Arrays, collecting the leaves;
    _NotFast for anything else (those calls take the general path)."""
    t = type(x)
    if t is Array:
        if x.is_deleted():      # the general path says which call took it
            raise _NotFast
        leaves.append(x)
        v = x._value
        return (v.shape, v.dtype, x._weak, x._backend)
    if t is tuple or t is list:
        return (t, tuple([_array_tree_sig(c, leaves) for c in x]))
    if t is dict:
        try:
            keys = sorted(x)
        except TypeError:       # keys that do not sort: the general path handles them
            raise _NotFast from None
        return (dict, tuple(keys), tuple([_array_tree_sig(x[k], leaves) for k in keys]))
    raise _NotFast


def _builder(treedef):
    """A function rebuilding ``treedef``'s structure from an iterator of leaves, specialised
    once per structure (cheaper than tree_unflatten on every call)."""
    if treedef.node is None:
        return next
    kids = [_builder(c) for c in treedef.children]
    if treedef.node is tuple:
        return lambda it: tuple([k(it) for k in kids])
    if treedef.node is list:
        return lambda it: [k(it) for k in kids]
    if treedef.node is dict:
        keys = treedef.aux
        return lambda it: {key: k(it) for key, k in zip(keys, kids)}
    return lambda it: tree_unflatten(treedef, [next(it) for _ in range(treedef.num_leaves)])


class _Sig(tuple):
    """A hashable (shape, dtype, weak_type) signature of an argument leaf."""

    @property
    def aval(self):
        return ShapedArray(*self)


def _leaf_sig(x):
    if type(x) is Array:
        v = x._value
        return _Sig((v.shape, v.dtype, x._weak))
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "OUSVMm" and x.dtype not in dtypes._SUPPORTED:
            # object, strings, records, datetimes (bfloat16 is a 'V' kind NumPy knows of)
            raise DTypeError(f"jit: an argument of shape {x.shape} has dtype {x.dtype}, which "
                             "fnx arrays cannot hold (numbers and booleans only)")
        return _Sig((x.shape, dtypes.canonical(x.dtype), False))
    if state.is_ref(x):
        raise _RefArgument
    aval = get_aval(x)
    return _Sig((aval.shape, aval.dtype, aval.weak_type))


def explain_miss(name, old, new) -> str:
    """Which part of jit's cache key changed between two calls."""
    reasons = []
    if old[0] != new[0]:
        reasons.append(f"the argument structure changed from {old[0]} to {new[0]}")
    elif old[1] != new[1]:
        for i, (a, b) in enumerate(zip(old[1], new[1])):
            if a != b:
                what = []
                if a[0] != b[0]:
                    what.append(f"shape {a[0]} -> {b[0]}")
                if a[1] != b[1]:
                    what.append(f"dtype {np.dtype(a[1]).name} -> {np.dtype(b[1]).name}")
                if a[2] != b[2]:
                    what.append(f"weak_type {a[2]} -> {b[2]}")
                reasons.append(f"argument leaf {i}: {', '.join(what)}")
    if old[3:5] != new[3:5]:
        reasons.append(f"static arguments changed from {old[3:5]} to {new[3:5]}")
    if old[5] != new[5]:
        reasons.append(f"default_matmul_precision changed from {old[5]} to {new[5]}")
    if old[6:7] != new[6:7]:
        reasons.append(f"enable_x64 changed from {old[6]} to {new[6]}")
    if old[7:8] != new[7:8]:
        reasons.append(f"the named axes bound around the call changed from {old[7]} to "
                       f"{new[7]}")
    where = user_frame()
    at = f" (called at {where})" if where else ""
    return f"fnx.jit: retracing {name}{at} because " + ("; ".join(reasons) or "it was not cached")


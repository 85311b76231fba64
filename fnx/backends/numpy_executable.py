"""The CPU executable: a jaxpr lowered to one generated Python function of NumPy calls.

Everything that can be decided once is decided when lowering:

* which NumPy call runs each equation and with which parameters, written as source: values in
  the function's locals, impls, parameters and constants bound once as names, so a step costs
  its call and little more (``numpy_source``); a loop or a branch is Python control flow in
  that function calling its body's own compiled function (``numpy_control_flow``);
* equations of constants only (a broadcast zero, an iota) are computed once, at lowering;
* a buffer plan from the equations' liveness: a ufunc, a two-way select or a product writes its
  result (``out=``) into a buffer an earlier step of the same call allocated and nothing reads
  any more, or into the dying input it reads elementwise (a bias add into its product's
  buffer, an SGD step into its gradient's). Arguments, constants, results the program returns
  and buffers a live view still reads are never overwritten;
* a select on a boolean mask is a bitwise blend (``np.where`` on a random mask is slow), which
  picks exactly the same bits.

Every step computes what the backend's eager impl computes, bit for bit.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes, lax
from ..core.config import config
from ..core.core import Array
from ..core.errors import OutOfMemoryError
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.nan_checks import checking
from .numpy_control_flow import lower_control_flow
from .numpy_source import FunctionSource, failing_step

_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
CONSTANT_LIMIT = 1 << 22     # bytes: larger constant results are computed on every call

# impls that return a new array that is not a view of any input
_FRESH = frozenset({
    lax.reduce_sum_p, lax.reduce_max_p, lax.reduce_min_p, lax.reduce_prod_p, lax.reduce_and_p,
    lax.reduce_or_p, lax.argmax_p, lax.argmin_p, lax.cumsum_p, lax.dot_general_p, lax.take_p,
    lax.take_along_axis_p, lax.scatter_p, lax.iota_p, lax.sort_p, lax.pad_p,
    lax.concatenate_p, lax.convert_element_type_p})


class NumpyExecutable:
    """``executable(*buffers) -> list of buffers`` for a jaxpr on NumPy."""

    def __init__(self, jaxpr: Jaxpr, consts, backend, name: str = "program"):
        self.backend = backend
        plan = _Lowering(jaxpr, consts, backend)
        self.labels = plan.labels
        self.template = plan.template
        self.num_steps = len(plan.labels)
        self.reused = plan.reused
        self.constants = plan.constants
        self.run = plan.source.compile(name)    # the raw function: loops call it per step

    def __call__(self, *args):
        with np.errstate(all="ignore"):     # IEEE results without warnings, as in eager
            try:
                return self.run(*args)
            except MemoryError as e:
                raise OutOfMemoryError(f"RESOURCE_EXHAUSTED: out of memory in the jitted step "
                                       f"{failing_step(e.__traceback__)}") from None

    def describe(self) -> str:
        return (f"{self.num_steps} NumPy calls, {self.reused} results written into reused "
                f"buffers, {self.constants} constants computed at lowering")


class _Lowering:
    """Builds the source of one function running a jaxpr's steps, the slot template (the
    constants) and the buffer plan."""

    def __init__(self, jaxpr: Jaxpr, consts, backend):
        self.backend = backend
        self.slot: dict = {}
        self.template: list = []
        self.labels: list = []              # one per step: the primitive and its operands
        self.reused = self.constants = 0
        for v, c in zip(jaxpr.constvars, consts):
            self.template[self.slot_of(v)] = backend.to_buffer(c, v.aval.dtype)
        in_slots = [self.slot_of(v) for v in jaxpr.invars]
        params = [_name(s) for s in in_slots]
        if len(set(params)) < len(params):      # an argument passed twice
            params = [f"a_{i}" for i in range(len(params))]
        self.source = src = FunctionSource(params)
        for p, s in zip(params, in_slots):
            if p != _name(s):
                src.emit(f"{_name(s)} = {p}")
        self.constant: set = set()         # vars whose value sits in the template
        eqns = [e for e in jaxpr.eqns if not self._precompute(e, jaxpr.outvars)]
        self.kinds = [_kind(e, self.backend) for e in eqns]
        _mark_implicit_broadcasts(eqns, self.kinds, jaxpr.outvars)
        self.narrowed = {e.outvars[0] for e, k in zip(eqns, self.kinds)
                         if k == "implicit_broadcast"}
        self.buffers = _BufferPlan(eqns, jaxpr.outvars)
        for k, eqn in enumerate(eqns):
            label = f"{eqn.primitive.name}: " + ", ".join(v.aval.str_short() for v in eqn.invars)
            self.labels.append(label)
            for line in self._lower(eqn, k):
                src.emit(line, label)
            self.buffers.finish_step(k)
        outs = []
        for v in jaxpr.outvars:
            name = _name(self.slot_of(v))
            # a literal result is a fresh 0-d array, not the executable's scalar
            outs.append(f"{src.bind(np.array, 'array')}({name})" if isinstance(v, Literal)
                        else name)
        src.returns(outs)
        for s, c in enumerate(self.template):
            if c is not None:
                src.bind_as(_name(s), c)

    def slot_of(self, v) -> int:
        if isinstance(v, Literal):
            # a NumPy scalar, not a 0-d array: ufuncs take scalars faster
            self.template.append(np.dtype(v.aval.dtype).type(np.asarray(v.val).item()))
            return len(self.template) - 1
        s = self.slot.get(v)
        if s is None:
            s = self.slot[v] = len(self.template)
            self.template.append(None)
        return s

    # -- constants

    def _precompute(self, eqn, outvars) -> bool:
        """Compute an equation of literals and constants now, into the template."""
        p = eqn.primitive
        if p.impl is not None or p.has_effect or p not in self.backend.impls \
                or any(isinstance(v, Var) and v not in self.constant for v in eqn.invars) \
                or any(v in outvars for v in eqn.outvars) \
                or any(v.aval.size * v.aval.dtype.itemsize > CONSTANT_LIMIT
                       for v in eqn.outvars):
            return False
        step = _generic(self.backend.impls[p], [self.slot_of(v) for v in eqn.invars],
                        eqn.params, [self.slot_of(v) for v in eqn.outvars],
                        [v.aval.dtype for v in eqn.outvars], p.multiple_results)
        step(self.template)
        for v in eqn.outvars:     # shared by every call: reading it is all anyone may do
            c = self.template[self.slot_of(v)]
            if type(c) is np.ndarray and c.flags.writeable:
                c.flags.writeable = False
        self.constant.update(eqn.outvars)
        self.constants += 1
        return True

    def _zero_bits(self, v) -> bool:
        """Whether ``v`` is a constant whose every element is all-zero bits (+0, False, 0)."""
        if isinstance(v, Var) and v not in self.constant:
            return False
        val = np.asarray(v.val if isinstance(v, Literal) else self.template[self.slot_of(v)])
        it = _INT_OF_SIZE.get(val.dtype.itemsize)
        return it is not None and not np.any(val.view(it))

    # -- steps: each returns the lines of source that run it

    def _lower(self, eqn, k):
        """The step of ``eqn``, the k-th equation left to run: ``self._<kind>_step``."""
        build = getattr(self, f"_{self.kinds[k]}_step")
        return build(eqn, k, [_name(self.slot_of(v)) for v in eqn.invars])

    def _out(self, eqn, k, in_place_positions):
        """Source of the buffer the step writes into: a dead one's name, or a new one."""
        reused = self._reused_buffer(eqn, k, in_place_positions)
        return self._fresh(eqn.outvars[0].aval) if reused is None else reused

    def _reused_buffer(self, eqn, k, in_place_positions):
        """The name of a dead buffer the step may write into, or None to allocate one."""
        src = self.buffers.assign(eqn.outvars[0], k,
                                  [eqn.invars[i] for i in in_place_positions])
        if src is None:
            return None
        self.reused += 1
        return _name(self.slot_of(src))

    def _fresh(self, aval) -> str:
        b = self.source.bind
        return f"{b(np.empty, 'empty')}({b(aval.shape, 'shape')}, {b(aval.dtype, 'dt')})"

    def _result(self, eqn) -> str:
        return _name(self.slot_of(eqn.outvars[0]))

    def _generic_step(self, eqn, k, ins, fn=None, params=None):
        """The impl as is; its results may be views of its inputs."""
        self.buffers.define_generic(eqn, k)
        if fn is None:
            inline = _INLINE_IMPLS.get(eqn.primitive)
            if inline is not None and all(isinstance(v, Var) for v in eqn.invars):
                expr = inline(eqn, ins, self.source.bind)
                if expr is not None:
                    return [f"{self._result(eqn)} = {expr}"]
            fn = self.backend.impls[eqn.primitive]
        return self._call(fn, ins, eqn.params if params is None else params, eqn.outvars,
                          eqn.primitive.multiple_results)

    def _call(self, fn, ins, params, outvars, multiple):
        """``fn(*ins, **params)``, each result made an array of its var's dtype."""
        b = self.source.bind
        call = f"{b(fn, 'f')}(" + ", ".join(
            ins + [f"{key}={b(val, 'p')}" for key, val in params.items()]) + ")"
        outs = [_name(self.slot_of(v)) for v in outvars]
        if not multiple and len(outs) == 1:
            lines = [f"{outs[0]} = {call}"]
        else:
            lines = [f"r_ = {call}"] + ([] if multiple else ["r_ = (r_,)"])
            lines += [f"{o} = r_[{i}]" for i, o in enumerate(outs)]
        for o, v in zip(outs, outvars):
            dt = b(v.aval.dtype, "dt")
            lines.append(f"if type({o}) is not {b(np.ndarray, 'ndarray')} or {o}.dtype != {dt}:"
                         f" {o} = {b(np.asarray, 'asarray')}({o}, {dt})")
        return lines

    def _higher_step(self, eqn, k, ins):
        """A higher-order primitive: a loop or a branch run natively where it has a lowering
        here, with its own primitive's impl (interpreting its jaxprs on Arrays) as the path
        debug_nans takes; other higher-order primitives run that impl only."""
        fallback = self._generic_step(
            eqn, k, ins, _via_arrays(eqn.primitive, eqn.params, self.backend,
                                     [v.aval.weak_type for v in eqn.invars]), {})
        native = lower_control_flow(eqn, ins, [_name(self.slot_of(v)) for v in eqn.outvars],
                                    self.source.bind, self.backend.compile, f"c{k}_")
        if native is None:
            return fallback
        checks = self.source.bind(_checks_on, "checks_on")
        return ([f"if {checks}():"] + ["    " + line for line in fallback] + ["else:"]
                + ["    " + line for line in native])

    def _ufunc_step(self, eqn, k, ins):
        b = self.source.bind
        uf = b(self.backend.impls[eqn.primitive], "uf")
        out = self._reused_buffer(eqn, k, range(len(ins)))
        if out is None and self._allocates_alike(eqn):
            return [f"{self._result(eqn)} = {uf}({', '.join(ins)})"]
        out = self._fresh(eqn.outvars[0].aval) if out is None else out
        return [f"{self._result(eqn)} = {uf}({', '.join(ins)}, out={out})"]

    def _allocates_alike(self, eqn) -> bool:
        """Whether the ufunc's own result is a new buffer just like ``np.empty``'s of the
        result's shape and dtype: a short vector (for which the allocation is most of the
        call) whose operands already have its shape, or are scalars."""
        out = eqn.outvars[0].aval
        return out.ndim == 1 and out.size <= _SHORT and all(
            isinstance(v, Literal) or (v.aval.shape == out.shape and v not in self.narrowed)
            for v in eqn.invars)

    def _logistic_step(self, eqn, k, ins):
        out = self._out(eqn, k, [0])
        fn = self.source.bind(_logistic(eqn.outvars[0].aval.dtype), "logistic")
        return [f"{self._result(eqn)} = {fn}({ins[0]}, {out})"]

    def _select_step(self, eqn, k, ins):
        which, f, t = eqn.invars
        zero_f, zero_t = self._zero_bits(f), self._zero_bits(t)
        # the blend reads the false case after writing the output: only the true case (or the
        # one nonzero case) may share the output's buffer, and not when it is the false case too
        candidates = [] if f is t else [1] if zero_t and not zero_f else [2]
        out = self._out(eqn, k, candidates)
        fn = self.source.bind(_bit_select(eqn.outvars[0].aval.dtype, zero_f, zero_t), "select")
        return [f"{self._result(eqn)} = {fn}({', '.join(ins)}, {out})"]

    def _dot_step(self, eqn, k, ins):
        out = self._out(eqn, k, [])    # a product never writes over its operands
        fn = self.source.bind(_matmul(eqn), "product")
        return [f"{self._result(eqn)} = {fn}({', '.join(ins)}, {out})"]

    def _reduce_step(self, eqn, k, ins):
        self.buffers.define_fresh(eqn, k)
        b = self.source.bind
        o = self._result(eqn)
        dt = b(eqn.outvars[0].aval.dtype, "dt")
        return [f"{o} = {b(_REDUCERS[eqn.primitive].reduce, 'reduce')}({ins[0]}, "
                f"axis={b(eqn.params['axes'], 'axes')})",
                f"if type({o}) is not {b(np.ndarray, 'ndarray')} or {o}.dtype != {dt}:"
                f" {o} = {b(np.asarray, 'asarray')}({o}, {dt})"]

    def _implicit_broadcast_step(self, eqn, k, ins):
        """The operand reshaped to the result's rank; the out= steps reading it broadcast."""
        self.buffers.define_generic(eqn, k)
        x = eqn.invars[0]
        view = [1] * len(eqn.params["shape"])
        for i, d in enumerate(eqn.params["broadcast_dimensions"]):
            view[d] = x.aval.shape[i]
        return [f"{self._result(eqn)} = {ins[0]}.reshape({self.source.bind(tuple(view), 'shape')})"]

    def _take_step(self, eqn, k, ins):
        self.buffers.define_fresh(eqn, k)
        fn = self.source.bind(_take_last_axis(eqn.invars[0].aval.shape), "take")
        return [f"{self._result(eqn)} = {fn}({', '.join(ins)})"]


def _name(slot: int) -> str:
    return f"s{slot}"


def _checks_on() -> bool:
    return checking(config)


_SHORT = 64     # elements: a vector this short costs more to allocate than to compute


def _inline_slice(eqn, ins, bind):
    params = eqn.params
    if params["strides"] is None or not eqn.invars[0].aval.ndim:   # x[()] is a scalar
        return None
    index = tuple(slice(s, l, st) for s, l, st in zip(
        params["start_indices"], params["limit_indices"], params["strides"]))
    return f"{ins[0]}[{bind(index, 'index')}]"


def _inline_reshape(eqn, ins, bind):
    return f"{ins[0]}.reshape({bind(eqn.params['new_sizes'], 'shape')})"


def _inline_concatenate(eqn, ins, bind):
    return (f"{bind(np.concatenate, 'concatenate')}(({''.join(i + ', ' for i in ins)}), "
            f"axis={bind(eqn.params['dimension'], 'axis')})")


# impls whose work is one expression on array operands (every var's value is an array of its
# dtype), written into the source: the impl's own NumPy call, which returns an array of the
# result's dtype
_INLINE_IMPLS = {lax.reshape_p: _inline_reshape, lax.slice_p: _inline_slice,
                 lax.concatenate_p: _inline_concatenate}


# ---------------------------------------------------------------------------------------------
# The buffer plan


class _BufferPlan:
    """Which buffer each result written with ``out=`` goes into, decided in program order.

    A buffer is an array one step allocated in this call. Each var maps to the buffers its
    value may be a view of (``roots``); a buffer is free once no live var maps to it, and it
    never is if a program output maps to it."""

    def __init__(self, eqns, outvars):
        self.last_use: dict = {}
        for k, e in enumerate(eqns):
            for v in e.invars:
                if isinstance(v, Var):
                    self.last_use[v] = k
        self.outputs = {v for v in outvars if isinstance(v, Var)}
        for v in self.outputs:
            self.last_use[v] = len(eqns)
        self.dying: dict = {}               # step -> vars read for the last time there
        for v, k in self.last_use.items():
            self.dying.setdefault(k, []).append(v)
        self.roots: dict = {}               # var -> frozenset of buffer ids
        self.owner: list = []               # buffer id -> the var whose step wrote it last
        self.live: list = []                # buffer id -> number of live vars mapped to it
        self.pinned: set = set()            # buffers a program output may be
        self.free: dict = {}                # (shape, dtype) -> free buffer ids

    def _define(self, v, k, roots):
        self.roots[v] = roots
        for b in roots:
            self.live[b] += 1
            if v in self.outputs:
                self.pinned.add(b)
        if v not in self.last_use:          # never read: dies right after its step
            self.dying.setdefault(k, []).append(v)

    def define_generic(self, eqn, k):
        """Results of an impl that may return views of its inputs (fresh ones for _FRESH)."""
        roots = frozenset() if eqn.primitive in _FRESH else frozenset().union(
            *[self.roots.get(v, frozenset()) for v in eqn.invars if isinstance(v, Var)])
        for v in eqn.outvars:
            self._define(v, k, roots)

    def define_fresh(self, eqn, k):
        for v in eqn.outvars:
            self._define(v, k, frozenset())

    def assign(self, v, k, in_place_candidates):
        """Define ``v``, written with ``out=`` at step ``k``; returns the var whose slot holds
        the buffer to reuse, or None to allocate one. ``in_place_candidates`` are the inputs
        the step reads at the same index it writes, so it may write over them."""
        key = (v.aval.shape, v.aval.dtype)
        b = None
        for u in in_place_candidates:
            if self._can_take_over(u, k, key):
                b = next(iter(self.roots[u]))
                break
        if b is None and self.free.get(key):
            b = self.free[key].pop()
        src = None if b is None else self.owner[b]
        if b is None:
            b = len(self.owner)
            self.owner.append(None)
            self.live.append(0)
        self.owner[b] = v
        self._define(v, k, frozenset((b,)))
        return src

    def _can_take_over(self, u, k, key) -> bool:
        if not isinstance(u, Var) or self.last_use.get(u) != k:
            return False
        roots = self.roots.get(u, frozenset())
        if len(roots) != 1:
            return False
        b = next(iter(roots))
        # u must be the buffer itself (same layout as the result), its only live reader
        return (self.owner[b] is u and self.live[b] == 1 and b not in self.pinned
                and (u.aval.shape, u.aval.dtype) == key)

    def finish_step(self, k):
        """Vars last read at step ``k`` die; buffers nothing live maps to become free."""
        for v in self.dying.pop(k, ()):
            for b in self.roots.get(v, ()):
                self.live[b] -= 1
                if self.live[b] == 0 and b not in self.pinned:
                    o = self.owner[b]
                    self.free.setdefault((o.aval.shape, o.aval.dtype), []).append(b)


# ---------------------------------------------------------------------------------------------
# Which equations get which kind of step

_REDUCERS = {lax.reduce_sum_p: np.add, lax.reduce_max_p: np.maximum,
             lax.reduce_min_p: np.minimum}
# steps that write a full-shaped result with ``out=``: operands may be smaller and broadcast
_OUT_STEPS = frozenset({"ufunc", "select", "logistic"})


def _kind(eqn, backend) -> str:
    """How an equation runs: "ufunc", "select", "dot", "take", "logistic", "reduce",
    "higher" (a higher-order primitive) or "generic" (its impl, as is)."""
    p = eqn.primitive
    if p.impl is not None:
        return "higher"
    if p in backend.computed_in_float32 and \
            any(v.aval.dtype == dtypes.bfloat16 for v in eqn.invars):
        return "generic"     # the impl widens to float32; no step here may round in between
    impl = backend.impls[p]
    if _out_capable(eqn, impl):
        return "ufunc"
    if p is lax.select_n_p and _bit_select_capable(eqn):
        return "select"
    if p is lax.dot_general_p and _matmul_capable(eqn):
        return "dot"
    if p is lax.take_along_axis_p and _last_axis_pick(eqn):
        return "take"
    if p is lax.logistic_p and eqn.outvars[0].aval.shape:
        return "logistic"
    if p in _REDUCERS and eqn.params["axes"] and dtypes.kind(eqn.invars[0].aval.dtype) == "f":
        # np.sum / np.max are these ufuncs' reduce behind a Python wrapper
        return "reduce"
    return "generic"


def _mark_implicit_broadcasts(eqns, kinds, outvars):
    """A broadcast_in_dim read only by out= steps of its own shape need not broadcast: NumPy
    broadcasts the operand (reshaped to the output's rank) against the output buffer."""
    readers: dict = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var):
                readers.setdefault(v, []).append(k)
    returned = {v for v in outvars if isinstance(v, Var)}
    for k, e in enumerate(eqns):
        if e.primitive is not lax.broadcast_in_dim_p or not isinstance(e.invars[0], Var):
            continue
        v = e.outvars[0]
        users = readers.get(v, ())
        if v not in returned and users and all(
                kinds[u] in _OUT_STEPS and eqns[u].outvars[0].aval.shape == v.aval.shape
                for u in users):
            kinds[k] = "implicit_broadcast"


def _out_capable(eqn, impl) -> bool:
    """A ufunc of one result with a non-scalar output whose dtype NumPy resolves to the
    result's own (so ``out=`` changes nothing but where the result goes)."""
    if not isinstance(impl, np.ufunc) or impl.nout != 1 or len(eqn.outvars) != 1 \
            or not eqn.outvars[0].aval.shape or impl.nin != len(eqn.invars) or eqn.params:
        return False
    try:
        dts = impl.resolve_dtypes(tuple(np.dtype(v.aval.dtype) for v in eqn.invars) + (None,))
    except Exception:
        return False
    return dts[-1] == eqn.outvars[0].aval.dtype


def _bit_select_capable(eqn) -> bool:
    out = eqn.outvars[0].aval
    which = eqn.invars[0]
    return (len(eqn.invars) == 3 and isinstance(which, Var) and which.aval.dtype == np.bool_
            and which.aval.shape == out.shape and bool(out.shape)
            and out.dtype.itemsize in _INT_OF_SIZE)


def _dot_layout(eqn):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    x, y = eqn.invars
    lfree = [i for i in range(x.aval.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(y.aval.ndim) if i not in rc and i not in rb]
    return lc, rc, lb, rb, lfree, rfree


def _matmul_capable(eqn) -> bool:
    """Products whose matmul result already has the output's shape and dtype."""
    _, _, _, _, lfree, rfree = _dot_layout(eqn)
    pet = eqn.params.get("preferred_element_type")
    return (len(lfree) == 1 and len(rfree) == 1 and all(isinstance(v, Var) for v in eqn.invars)
            and (pet is None or np.dtype(pet) == eqn.invars[0].aval.dtype))


def _last_axis_pick(eqn) -> bool:
    x, idx = eqn.invars
    nd = x.aval.ndim
    return (nd >= 1 and eqn.params["axis"] == nd - 1 and isinstance(x, Var)
            and tuple(idx.aval.shape[:-1]) == tuple(x.aval.shape[:-1]) and x.aval.size > 0)


# ---------------------------------------------------------------------------------------------
# The functions of steps that take more than one NumPy call


def _generic(fn, ins, params, outs, dts, multiple):
    """``run(env)``: the impl on slots of ``env`` (a constant's computation at lowering)."""
    def run(env):
        res = fn(*[env[i] for i in ins], **params)
        if not multiple:
            res = (res,)
        for k, r, dt in zip(outs, res, dts):
            env[k] = r if type(r) is np.ndarray and r.dtype == dt else np.asarray(r, dt)
    return run


def _logistic(dtype):
    """The impl's ``0.5 * (tanh(0.5 * x) + 1)``, one ufunc at a time into one buffer."""
    half, one = dtype.type(0.5), dtype.type(1)

    def logistic(x, out):
        np.multiply(x, half, out=out)
        np.tanh(out, out=out)
        np.add(out, one, out=out)
        return np.multiply(out, half, out=out)
    return logistic


def _bit_select(dtype, zero_f, zero_t):
    """``select_n(which, f, t)`` for a boolean ``which`` as bit operations on the cases seen as
    integers: ``f ^ ((f ^ t) & mask)``, or one AND when a case is all-zero bits."""
    it = _INT_OF_SIZE[dtype.itemsize]

    def select(w, f, t, out):
        ov = out.view(it)
        m = w.astype(it)                      # 0 / 1
        if zero_f:                            # t where which, else zeros
            np.negative(m, out=m)
            np.bitwise_and(t.view(it), m, out=ov)
        elif zero_t:                          # f where not which, else zeros
            np.subtract(m, 1, out=m)
            np.bitwise_and(f.view(it), m, out=ov)
        else:
            np.negative(m, out=m)
            fv = f.view(it)
            np.bitwise_xor(fv, t.view(it), out=ov)
            np.bitwise_and(ov, m, out=ov)
            np.bitwise_xor(ov, fv, out=ov)
        return out
    return select


def _matmul(eqn):
    """The impl's batched matmul over (batch, free, contract) layouts, into a buffer."""
    lc, rc, lb, rb, lfree, rfree = _dot_layout(eqn)
    x, y = eqn.invars
    lperm = tuple(lb) + tuple(lfree) + tuple(lc)
    rperm = tuple(rb) + tuple(rc) + tuple(rfree)
    bshape = tuple(x.aval.shape[i] for i in lb)
    k = int(np.prod([x.aval.shape[i] for i in lc], dtype=np.int64))
    lshape = bshape + (x.aval.shape[lfree[0]], k)
    rshape = bshape + (k, y.aval.shape[rfree[0]])
    lperm = None if lperm == tuple(range(len(lperm))) else lperm
    rperm = None if rperm == tuple(range(len(rperm))) else rperm
    matmul = np.matmul

    def product(lhs, rhs, out):
        if lperm is not None:
            lhs = lhs.transpose(lperm)
        if rperm is not None:
            rhs = rhs.transpose(rperm)
        if lhs.shape != lshape:
            lhs = lhs.reshape(lshape)
        if rhs.shape != rshape:
            rhs = rhs.reshape(rshape)
        return matmul(lhs, rhs, out=out)
    return product


def _take_last_axis(x_shape):
    """take_along_axis on the last axis as one flat np.take: line offsets precomputed, indices
    clamped into range as the impl does."""
    n = x_shape[-1]
    lines = int(np.prod(x_shape[:-1], dtype=np.int64))
    offsets = (np.arange(lines, dtype=np.intp) * n).reshape(tuple(x_shape[:-1]) + (1,))
    hi = n - 1

    def take(xs, ids):
        i = np.minimum(ids, hi).astype(np.intp)
        np.maximum(i, 0, out=i)
        i += offsets
        return np.take(xs.reshape(-1), i)
    return take


def _via_arrays(p, params, backend, weak):
    def run(*bufs):
        outs = p.impl(*[Array(b, backend, w) for b, w in zip(bufs, weak)], **params)
        return [o._value for o in outs] if p.multiple_results else outs._value
    return run

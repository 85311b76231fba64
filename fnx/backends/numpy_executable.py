"""The CPU executable: a jaxpr lowered to a flat list of NumPy calls over numbered slots.

Everything that can be decided once is decided when lowering: which function runs each
equation, its parameters, where its inputs come from (literals are stored in slots up front) and
which dtype its result must have. A call is then one loop over prepared steps."""
from __future__ import annotations

import numpy as np

from ..core.core import Array
from ..core.jaxpr import Jaxpr, Literal


class NumpyExecutable:
    def __init__(self, jaxpr: Jaxpr, consts, backend):
        self.backend = backend
        slot: dict = {}
        init: list = []          # (slot, value) set before every call: consts and literals

        def slot_of(v):
            if isinstance(v, Literal):
                k = len(slot)
                slot[("lit", k)] = k
                # a NumPy scalar, not a 0-d array: ufuncs take scalars faster
                init.append((k, np.dtype(v.aval.dtype).type(np.asarray(v.val).item())))
                return k
            if v not in slot:
                slot[v] = len(slot)
            return slot[v]

        for v, c in zip(jaxpr.constvars, consts):
            init.append((slot_of(v), backend.to_buffer(c, v.aval.dtype)))
        self.in_slots = [slot_of(v) for v in jaxpr.invars]
        self.steps = []
        for eqn in jaxpr.eqns:
            p = eqn.primitive
            ins = tuple(slot_of(v) for v in eqn.invars)
            outs = tuple(slot_of(v) for v in eqn.outvars)
            dts = tuple(np.dtype(v.aval.dtype) for v in eqn.outvars)
            if p.impl is not None:     # higher-order primitives interpret their own jaxprs
                fn = _via_arrays(p, eqn.params, backend, [v.aval.weak_type for v in eqn.invars])
                params = {}
            else:
                fn, params = backend.impls[p], eqn.params
            self.steps.append((fn, ins, params, outs, dts, p.multiple_results))
        self.out_slots = [slot_of(v) for v in jaxpr.outvars]
        self.template = [None] * len(slot)
        for k, v in init:
            self.template[k] = v
        self.num_steps = len(self.steps)

    def __call__(self, *args):
        env = self.template.copy()
        for k, a in zip(self.in_slots, args):
            env[k] = a
        for fn, ins, params, outs, dts, multiple in self.steps:
            res = fn(*[env[i] for i in ins], **params)
            if not multiple:
                res = (res,)
            for k, r, dt in zip(outs, res, dts):
                env[k] = r if type(r) is np.ndarray and r.dtype == dt else np.asarray(r, dt)
        return [env[k] for k in self.out_slots]

    def describe(self) -> str:
        return f"{self.num_steps} NumPy calls"


def _via_arrays(p, params, backend, weak):
    def run(*bufs):
        outs = p.impl(*[Array(b, backend, w) for b, w in zip(bufs, weak)], **params)
        return [o._value for o in outs] if p.multiple_results else outs._value
    return run

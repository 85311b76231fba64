"""A compiled program that runs its jaxpr one primitive at a time through a backend's eager impls.

The GPU backend compiles to generated kernels over real and integer C types; a program that
holds complex values anywhere (in its own equations or in a loop body, branch or nested call)
runs this way instead, each equation a CuPy call, with the same results as eager execution.
"""
from __future__ import annotations

from ..core import dtypes
from ..core.core import Array, ShapedArray
from ..core.jaxpr import Jaxpr, eval_jaxpr, subjaxprs


def _complex_aval(v) -> bool:
    aval = v.aval
    return isinstance(aval, ShapedArray) and dtypes.kind(aval.dtype) == "c"


def uses_complex(jaxpr: Jaxpr) -> bool:
    """Whether any value of ``jaxpr`` (or of a jaxpr nested in its equations) is complex."""
    if any(_complex_aval(v) for v in (*jaxpr.constvars, *jaxpr.invars, *jaxpr.outvars)):
        return True
    for eqn in jaxpr.eqns:
        if any(_complex_aval(v) for v in (*eqn.invars, *eqn.outvars)):
            return True
        if any(uses_complex(sub) for sub in subjaxprs(eqn)):
            return True
    return False


class EagerProgram:
    """``program(*buffers) -> list of buffers``: ``jaxpr`` interpreted on ``backend``'s arrays.

    It has the attributes a GPU graph executable reports (``graph``, ``reason``,
    ``eager_fallbacks``, ``describe()``), so callers that inspect one can inspect this."""

    graph = None
    eager_fallbacks = 0

    def __init__(self, jaxpr: Jaxpr, consts, backend, reason: str):
        self.jaxpr = jaxpr
        self.backend = backend
        self.reason = reason
        self.consts = [Array(backend.to_buffer(c, v.aval.dtype), backend, v.aval.weak_type)
                       if type(c) is not Array else c for c, v in zip(consts, jaxpr.constvars)]

    def __call__(self, *bufs):
        backend = self.backend
        args = [Array(b, backend, v.aval.weak_type) for b, v in zip(bufs, self.jaxpr.invars)]
        outs = eval_jaxpr(self.jaxpr, self.consts, *args)
        return [o._value if type(o) is Array and o._backend is backend
                else backend.to_buffer(o, v.aval.dtype)
                for o, v in zip(outs, self.jaxpr.outvars)]

    def describe(self) -> str:
        return (f"{len(self.jaxpr.eqns)} equations run one eager call each ({self.reason})\n"
                f"  execution: eager calls ({self.reason})")


__all__ = ["EagerProgram", "uses_complex"]

"""References (``fnx.new_ref``) that a loop body or a branch closes over: found while the body
is traced, then carried through the loop as extra state and written back after it (JAX's
discharge of array refs in control flow).

>>> acc = fnx.new_ref(0.0)
>>> def body(i, c):
...     acc[...] += i
...     return c
>>> _ = fnx.lax.fori_loop(0, 4, body, 0.0)
>>> acc[...]
Array(6., dtype=float32)
"""
from __future__ import annotations

import contextlib

from .. import state


class ClosesOverRefs(Exception):
    """Raised by a trace that touched references made outside it (internal: the caller
    retraces with them carried)."""

    def __init__(self, refs):
        super().__init__(f"closes over {len(refs)} references")
        self.refs = refs


@contextlib.contextmanager
def finding_refs():
    """Trace inside the block; afterwards the references it touched get their values back and
    ``ClosesOverRefs`` names them."""
    with state.tracking() as tracker:
        try:
            yield
        except Exception:
            # a second branch reading what the first wrote fails (a leaked tracer): retracing
            # with the references carried raises any error of the program's own again
            if not tracker.outside_refs():
                raise
        finally:
            outside = tracker.outside_refs()
            for r, v in outside:
                r._value = v
    if outside:
        raise ClosesOverRefs([r for r, _ in outside])


@contextlib.contextmanager
def bound(refs, values):
    """The references hold ``values`` (a body's carried tracers) inside the block; the getter
    it yields reads their current values. They count as the body's own state."""
    old = [r._value for r in refs]
    for r, v in zip(refs, values):
        state.exempt(r)
        r._value = v
    try:
        yield lambda: [r._value for r in refs]
    finally:
        for r, v in zip(refs, old):
            r._value = v


def current_values(refs) -> list:
    for r in refs:
        state.touched(r)    # an enclosing jit takes them as inputs
    return [r._value for r in refs]


def write_back(refs, values) -> None:
    for r, v in zip(refs, values):
        state.check_write(r, v)
        r._value = v

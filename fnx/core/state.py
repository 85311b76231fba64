"""Which mutable references (``fnx.new_ref``) a traced function touches, so that ``jit`` can
take their values as extra inputs and write its results back (JAX's state discharge).

A reference is any object with a ``_value`` attribute (and ``_level``, the trace level it was
made at) that calls ``touched(ref)`` before it reads or writes that value, ``check_write`` before
it stores one, and ``created(ref)`` when it is made.
"""
from __future__ import annotations

import contextlib

_trackers: list = []     # one per jit trace in progress, innermost last
_ref_types: list = []    # the class of references (fnx.ref.Ref registers itself)


class AbstractRef:
    """The type of a reference: ``Ref{float32[3]}``, holding the aval of its value.

    >>> print(fnx.typeof(fnx.new_ref(jnp.zeros(3))))
    Ref{float32[3]}
    """
    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))
    size = property(lambda self: self.inner_aval.size)
    weak_type = property(lambda self: self.inner_aval.weak_type)

    def __eq__(self, other):
        return isinstance(other, AbstractRef) and other.inner_aval == self.inner_aval

    def __hash__(self):
        return hash(("Ref", self.inner_aval))

    def str_short(self):
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def __str__(self):
        return f"Ref{{{self.inner_aval.str_long().lstrip('~')}}}"

    __repr__ = __str__


def register_ref_type(cls) -> None:
    _ref_types.append(cls)


def is_ref(x) -> bool:
    return isinstance(x, tuple(_ref_types))


def new_ref(value):
    """A reference (of the registered class) holding ``value``."""
    return _ref_types[0](value)


class _Tracker:
    def __init__(self):
        self.first_values: dict = {}    # id -> (ref, its value when first touched)
        self.made_here: set = set()     # ids of references created during the trace

    def outside_refs(self):
        """(ref, value before the trace wrote it) for the references made before the trace."""
        return [(r, v) for i, (r, v) in self.first_values.items() if i not in self.made_here]


def touched(ref) -> None:
    for t in _trackers:
        t.first_values.setdefault(id(ref), (ref, ref._value))


def created(ref) -> None:
    for t in _trackers:
        t.made_here.add(id(ref))


def exempt(ref) -> None:
    """``ref`` is the innermost trace's own state (a loop carries it), not an outside one."""
    if _trackers:
        _trackers[-1].made_here.add(id(ref))


def check_write(ref, value) -> None:
    """A reference may not take a value of a transformation (grad, vmap) applied inside the one
    it was made under: the value would outlive its trace. ``jit``'s own tracing is exempt (it
    discharges references into inputs and outputs)."""
    from .core import Tracer
    from .partial_eval import JaxprTrace
    if isinstance(value, Tracer) and not isinstance(value._trace, JaxprTrace) and \
            value._trace.level > getattr(ref, "_level", 0):
        raise ValueError(
            f"a {type(value._trace).__name__} value {value.aval.str_short()} was written to a "
            "reference made outside that transformation; pass the reference as an argument "
            "of the transformed function, or return the value instead")


@contextlib.contextmanager
def tracking():
    t = _Tracker()
    _trackers.append(t)
    try:
        yield t
    finally:
        _trackers.remove(t)

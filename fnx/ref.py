"""Mutable array references, as ``jax.new_ref``: ``ref[idx]`` reads, ``ref[idx] = v`` writes.

A reference made inside a function is plain Python state there (grad, vmap and jit see only the
array operations). One made outside and used inside a jitted function is discharged: the
compiled program takes its value as an input and the call writes the result back. One passed
to a vmapped function is mapped like an array: each instance reads and writes its own slice.

>>> r = fnx.new_ref(fnx.numpy.zeros(3))
>>> r[1] += 1.0
>>> r
Ref([0., 1., 0.], dtype=float32)
"""
from __future__ import annotations

from .core import lax, state
from .core.core import current_trace, get_aval
from .core.state import AbstractRef  # noqa: F401


class Ref:
    """A mutable reference to an array (``fnx.new_ref(x)``). Arithmetic needs its value
    (``ref[...]``): ``jnp.sin(ref)`` raises TypeError, as in JAX.

    >>> ref = fnx.new_ref(jnp.zeros(2))
    >>> ref[...] = ref[...] + 1.0
    >>> ref[...]
    Array([1., 1.], dtype=float32)
    """
    __slots__ = ("_value", "_level", "__weakref__")

    def __init__(self, value):
        self._value = value
        self._level = current_trace().level     # the transformation it was made under
        state.created(self)

    shape = property(lambda self: get_aval(self._value).shape)
    dtype = property(lambda self: get_aval(self._value).dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: get_aval(self._value).size)

    def unsafe_buffer_pointer(self) -> int:
        """The address of the buffer holding the reference's current value.

        >>> isinstance(fnx.new_ref(jnp.zeros(2)).unsafe_buffer_pointer(), int)
        True
        """
        return self._value.unsafe_buffer_pointer()

    def _check_live(self):
        if self._value is None:
            raise ValueError("this reference was freed (fnx.free_ref); it holds no value")

    def __getitem__(self, idx):
        self._check_live()
        state.touched(self)
        return self._value if idx is Ellipsis or (isinstance(idx, tuple) and idx == ()) else self._value[idx]

    def __setitem__(self, idx, value):
        self._check_live()
        state.touched(self)
        aval = get_aval(self._value)
        if idx is Ellipsis or (isinstance(idx, tuple) and idx == ()):
            from .numpy import asarray, broadcast_to
            new = broadcast_to(lax.convert_element_type(asarray(value), aval.dtype), aval.shape)
        else:
            new = self._value.at[idx].set(value)
        state.check_write(self, new)
        self._value = new

    def _add(self, idx, x):
        """``self[idx] += x`` as ``addupdate``: the sum of two weakly typed values stays weakly
        typed (a plain write of a weak value does not), as in JAX."""
        total = self[idx] + x
        self[idx] = total
        if idx is Ellipsis and get_aval(total).weak_type:
            self._value = lax.convert_element_type(self._value, self.dtype, True)

    def __repr__(self):
        text = repr(self._value)
        body = text[len("Array("):] if text.startswith("Array(") else text + ")"
        return "Ref(" + body        # the value's lines keep Array's indentation, as in JAX

    def __len__(self):
        return len(self._value)

    def __array__(self, dtype=None, copy=None):
        # without this NumPy would read a Ref as a sequence (ref[i] never runs out)
        raise TypeError(f"a Ref ({self.shape}, {self.dtype}) is not an array: read its value "
                        "with ref[...] (or fnx.freeze(ref)) and compute with that")


state.register_ref_type(Ref)


def new_ref(init_val) -> Ref:
    """A new mutable reference holding ``init_val`` (an array or a Python scalar).

    >>> ref = fnx.new_ref(jnp.zeros(2))
    >>> ref[1] = 5.0
    >>> fnx.freeze(ref)
    Array([0., 5.], dtype=float32)
    """
    from .numpy import asarray
    return Ref(asarray(init_val))


def freeze(ref: Ref):
    """The array a reference holds.

    >>> fnx.freeze(fnx.new_ref(jnp.ones(2)))
    Array([1., 1.], dtype=float32)
    """
    state.touched(ref)
    return ref._value

def get(ref: Ref, idx=None):
    """``ref[idx]`` (the whole value for ``idx=None``), as ``jax.ref.get``.

    >>> fnx.ref.get(fnx.new_ref(jnp.arange(3.0)), 1)
    Array(1., dtype=float32)
    """
    return ref[... if idx is None else idx]


def set(ref: Ref, idx, value) -> None:  # noqa: A001 - JAX's name
    """``ref[idx] = value`` (the whole value for ``idx=None``), as ``jax.ref.set``.

    >>> r = fnx.new_ref(jnp.zeros(2))
    >>> fnx.ref.set(r, 0, 5.0)
    >>> r[...]
    Array([5., 0.], dtype=float32)
    """
    ref[... if idx is None else idx] = value


def swap(ref: Ref, idx, value):
    """Write ``value`` to ``ref[idx]`` and return what was there, as ``jax.ref.swap``.

    >>> r = fnx.new_ref(jnp.zeros(2))
    >>> fnx.ref.swap(r, ..., jnp.ones(2)), r[...]
    (Array([0., 0.], dtype=float32), Array([1., 1.], dtype=float32))
    """
    idx = ... if idx is None else idx
    old = ref[idx]
    ref[idx] = value
    return old


def addupdate(ref: Ref, idx, x) -> None:
    """``ref[idx] += x``, as ``jax.ref.addupdate``.

    >>> r = fnx.new_ref(jnp.ones(2))
    >>> fnx.ref.addupdate(r, 1, 2.0)
    >>> r[...]
    Array([1., 3.], dtype=float32)
    """
    ref._add(... if idx is None else idx, x)


def empty_ref(ty, memory_space=None) -> Ref:
    """A new reference of ``ty``'s shape and dtype (a ShapeDtypeStruct or an aval), holding
    zeros until written.

    >>> fnx.empty_ref(fnx.ShapeDtypeStruct((2,), jnp.float32))
    Ref([0., 0.], dtype=float32)
    """
    from .numpy import zeros
    ty = getattr(ty, "inner_aval", ty)
    return Ref(zeros(ty.shape, ty.dtype))


def free_ref(ref: Ref) -> None:
    """Release ``ref``'s value; reading or writing it afterwards is an error.

    >>> r = fnx.new_ref(jnp.ones(2))
    >>> fnx.free_ref(r)
    """
    state.touched(ref)
    ref._value = None


from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

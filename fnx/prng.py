"""Typed PRNG key arrays: what ``fnx.random.key`` returns, as JAX's ``jax.random.key``.

A key array of shape ``S`` holds ``uint32[*S, 2]`` Threefry key data and has the dtype
``key<fry>``. It is a pytree whose one leaf is that data, so keys pass through ``jit``,
``vmap``, ``scan`` and the other transformations (a key array mapped by ``vmap`` is mapped
over its leading axes, as in JAX; ``in_axes``/``out_axes`` count key axes from the front).

>>> import fnx.random as random
>>> k = random.key(42)
>>> k.shape, k.dtype
((), key<fry>)
>>> random.split(k, 3).shape
(3,)
"""
from __future__ import annotations

import numpy as np

from . import numpy as jnp
from .core import dtypes
from .core.core import ShapedArray, Tracer, get_aval
from .core.pytree import register_pytree_node

IMPL = "threefry2x32"


class PRNGKeyDType:
    """The dtype of typed key arrays (``key<fry>``); ``jnp.issubdtype(d, dtypes.prng_key)``
    holds for it."""
    __slots__ = ()
    name = "key<fry>"
    impl = IMPL
    abstract_type = dtypes.prng_key
    itemsize = 8          # two uint32 words

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, PRNGKeyDType) or other == self.name

    def __hash__(self):
        return hash(self.name)


key_dtype = PRNGKeyDType()


class KeyAval(ShapedArray):
    """The abstract type of a key array (printed ``key<fry>[3]``)."""
    __slots__ = ()

    def __init__(self, shape):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = key_dtype
        self.weak_type = False

    def str_short(self):
        return f"key<fry>[{','.join(map(str, self.shape))}]"

    str_long = str_short

    def __eq__(self, other):
        return isinstance(other, KeyAval) and self.shape == other.shape

    def __hash__(self):
        return hash(("key", self.shape))


class KeyArray:
    """Keys of shape ``shape`` over ``uint32[*shape, 2]`` data (``random.key_data``)."""
    __slots__ = ("_data",)
    __array_priority__ = 1001

    def __init__(self, data):
        self._data = data        # any pytree leaf: transformations rebuild keys from theirs

    shape = property(lambda self: tuple(get_aval(self._data).shape[:-1]))
    dtype = property(lambda self: key_dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    itemsize = property(lambda self: key_dtype.itemsize)
    aval = property(lambda self: KeyAval(self.shape))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of an unsized key array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        return KeyArray(self._data[idx + (slice(None),)])

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return KeyArray(jnp.reshape(self._data, tuple(shape) + (2,)))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return KeyArray(jnp.transpose(self._data, tuple(range(self.ndim))[::-1] + (self.ndim,)))

    def __eq__(self, other):
        if not isinstance(other, KeyArray):
            return NotImplemented
        return jnp.all(self._data == other._data, axis=-1)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else ~eq

    __hash__ = None

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a key array cannot be converted to a NumPy array; use "
                        "fnx.random.key_data(keys) for its uint32 data")

    def block_until_ready(self):
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    def __repr__(self):
        if isinstance(self._data, Tracer):     # as its data's tracer: JitTracer(key<fry>[])
            return f"{repr(self._data).split('(')[0]}({self.aval.str_short()})"
        return f"Array({self.shape}, dtype={key_dtype}) overlaying:\n{np.asarray(self._data)}"

    __str__ = __repr__


register_pytree_node(KeyArray, lambda k: ((k._data,), None), lambda _, data: KeyArray(*data))


def is_key(x) -> bool:
    return isinstance(x, KeyArray)

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

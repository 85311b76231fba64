"""Typed PRNG key arrays: what ``fnx.random.key`` returns, as JAX's ``jax.random.key``.

A key array of shape ``S`` holds ``uint32[*S, W]`` key data of its implementation (``W`` is 2
for Threefry-2x32, JAX's default, and 4 for ``rbg`` and ``unsafe_rbg``) and has the dtype
``key<fry>``, ``key<rbg>`` or ``key<urbg>``. It is a pytree whose one leaf is that data and
whose implementation is static, so keys pass through ``jit``, ``vmap``, ``scan`` and the other
transformations (a key array mapped by ``vmap`` is mapped over its leading axes, as in JAX;
``in_axes``/``out_axes`` count key axes from the front).

>>> import fnx.random as random
>>> k = random.key(42)
>>> k.shape, k.dtype
((), key<fry>)
>>> random.split(k, 3).shape
(3,)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import numpy as jnp
from .core import dtypes
from .core.config import config, register_option
from .core.core import ShapedArray, Tracer, get_aval
from .core.pytree import register_pytree_node

IMPL = "threefry2x32"


class PRNGImpl(NamedTuple):
    """A PRNG implementation's name, its dtype's tag and the shape of one key's data."""
    name: str
    tag: str
    key_shape: tuple

    def __repr__(self):     # as JAX's PRNGSpec: the name
        return repr(self.name)

    def __str__(self):
        return self.name


IMPLS = {impl.name: impl for impl in (PRNGImpl("threefry2x32", "fry", (2,)),
                                      PRNGImpl("rbg", "rbg", (4,)),
                                      PRNGImpl("unsafe_rbg", "urbg", (4,)))}
_ALIASES = {"threefry": "threefry2x32"}


def resolve_impl(impl=None) -> str:
    """The name of a PRNG implementation given by name, ``PRNGImpl`` or key dtype; ``None``
    is the configured default (``jax_default_prng_impl``)."""
    if impl is None:
        impl = config.default_prng_impl
    name = getattr(impl, "impl", None) or getattr(impl, "name", None) or impl
    name = _ALIASES.get(name, name)
    if not isinstance(name, str) or name not in IMPLS:
        raise ValueError(f"unknown PRNG implementation {impl!r}; fnx has "
                         f"{', '.join(map(repr, IMPLS))}")
    return name


register_option("default_prng_impl", validate=resolve_impl)


class PRNGKeyDType:
    """The dtype of typed key arrays of one implementation (``key<fry>``, ``key<rbg>``,
    ``key<urbg>``); ``jnp.issubdtype(d, dtypes.prng_key)`` holds for each."""
    __slots__ = ("impl", "name", "itemsize")
    abstract_type = dtypes.prng_key

    def __init__(self, impl: str = IMPL):
        self.impl = impl
        self.name = f"key<{IMPLS[impl].tag}>"
        self.itemsize = 4 * IMPLS[impl].key_shape[-1]      # uint32 words

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, PRNGKeyDType):
            return other.impl == self.impl
        return other == self.name

    def __hash__(self):
        return hash(self.name)


KEY_DTYPES = {name: PRNGKeyDType(name) for name in IMPLS}
key_dtype = KEY_DTYPES[IMPL]


class KeyAval(ShapedArray):
    """The abstract type of a key array (printed ``key<fry>[3]``)."""
    __slots__ = ()

    def __init__(self, shape, impl: str = IMPL):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = KEY_DTYPES[impl]
        self.weak_type = False

    def str_short(self):
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    str_long = str_short

    def __eq__(self, other):
        return (isinstance(other, KeyAval) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash(("key", self.shape, self.dtype.impl))


class KeyArray:
    """Keys of shape ``shape`` over ``uint32[*shape, W]`` data (``random.key_data``) of the
    implementation ``impl``."""
    __slots__ = ("_data", "_impl")
    __array_priority__ = 1001

    def __init__(self, data, impl: str = IMPL):
        self._data = data        # any pytree leaf: transformations rebuild keys from theirs
        self._impl = impl

    shape = property(lambda self: tuple(get_aval(self._data).shape[:-1]))
    dtype = property(lambda self: KEY_DTYPES[self._impl])
    impl = property(lambda self: IMPLS[self._impl])
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    itemsize = property(lambda self: self.dtype.itemsize)
    aval = property(lambda self: KeyAval(self.shape, self._impl))

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
        return KeyArray(self._data[idx + (slice(None),)], self._impl)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return KeyArray(jnp.reshape(self._data, tuple(shape) + IMPLS[self._impl].key_shape),
                        self._impl)

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return KeyArray(jnp.transpose(self._data, tuple(range(self.ndim))[::-1] + (self.ndim,)),
                        self._impl)

    def __eq__(self, other):
        if not isinstance(other, KeyArray) or other._impl != self._impl:
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
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._data)}"

    __str__ = __repr__


register_pytree_node(KeyArray, lambda k: ((k._data,), k._impl),
                     lambda impl, data: KeyArray(*data, impl))


def is_key(x) -> bool:
    return isinstance(x, KeyArray)

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""``jax.extend.linear_util``: a function wrapped with the parameters it is called with
(``wrap_init``), as libraries written against JAX's internals pass functions around.

>>> wrap_init(lambda x, y: x + y).call_wrapped(1, 2)
3
"""
from __future__ import annotations

from typing import Callable  # noqa: F401


class StoreException(Exception):
    """Raised when a Store is read before it is filled, or filled twice.

    >>> issubclass(StoreException, Exception)
    True
    """


class _Store:
    """A box a transformation fills with auxiliary output."""
    __slots__ = ("_val",)
    _EMPTY = object()

    def __init__(self):
        self._val = _Store._EMPTY

    def store(self, val) -> None:
        if self._val is not _Store._EMPTY:
            raise StoreException("Store occupied")
        self._val = val

    @property
    def val(self):
        if self._val is _Store._EMPTY:
            raise StoreException("Store empty")
        return self._val


class WrappedFun:
    """``f`` with keyword parameters, called by ``call_wrapped(*args)``.

    >>> WrappedFun(max, {}).call_wrapped(1, 3)
    3
    """

    def __init__(self, f: Callable, params: dict, debug_info=None):
        self.f, self.params, self.debug_info = f, dict(params), debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def call_wrapped(self, *args, **kwargs):
        return self.f(*args, **self.params, **kwargs)

    def __repr__(self):
        return f"Wrapped function: {self.__name__}"


def wrap_init(f: Callable, params=None, *, debug_info=None) -> WrappedFun:
    """``f`` wrapped with ``params`` (keyword arguments added to every call).

    >>> wrap_init(lambda x, *, k: x * k, {"k": 3}).call_wrapped(2)
    6
    """
    return WrappedFun(f, params or {}, debug_info)


def cache(call: Callable, *, explain=None):
    """``call(fun, *args)`` memoised on the wrapped function and the arguments.

    >>> calls = []
    >>> f = cache(lambda fun, n: calls.append(n) or fun.call_wrapped(n))
    >>> w = wrap_init(lambda n: n + 1)
    >>> f(w, 1), f(w, 1), len(calls)
    (2, 2, 1)
    """
    memo: dict = {}

    def cached(fun: WrappedFun, *args):
        key = (fun.f, tuple(sorted(fun.params.items(), key=lambda kv: kv[0])), args)
        if key not in memo:
            memo[key] = call(fun, *args)
        return memo[key]
    cached.cache_clear = memo.clear
    return cached


__all__ = ["StoreException", "WrappedFun", "cache", "wrap_init"]

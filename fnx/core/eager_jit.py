"""``fnx.jit`` as users call it: jit's wrapper, which inside ``fnx.disable_jit()`` runs the
Python function eagerly instead of tracing it."""
from __future__ import annotations

import functools

from .config import config
from .jit import Jitted


class EagerableJitted(Jitted):
    def __call__(self, *args, **kwargs):
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=(), in_shardings=None, out_shardings=None, keep_unused=False,
        device=None, backend=None, inline=False, compiler_options=None):
    """Compile ``fun``: trace it once per argument signature into a jaxpr, lower that to the
    backend and run the compiled program on later calls (see ``fnx.core.jit.jit``). Inside
    ``fnx.disable_jit()`` the call runs ``fun`` eagerly. JAX's placement and sharding arguments
    (``device``, ``in_shardings``, ``keep_unused``, ...) and ``donate_argnames`` are accepted
    and ignored (fnx runs on one device; donation only saves memory).

    >>> @fnx.jit
    ... def f(x):
    ...     return fnx.numpy.tanh(x) * 2
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums)
    return EagerableJitted(fun, static_argnums, static_argnames, donate_argnums)

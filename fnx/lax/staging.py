"""jax.lax's ordering tokens, platform dispatch and composite markers. fnx runs programs in
data order on one stream per device, so a token carries no data and a composite is its
decomposition.

>>> tok = lax.create_token()
>>> lax.after_all(tok, lax.create_token()) is not None
True
"""
from __future__ import annotations

import functools

from ..core.core import default_backend


class Token:
    """An ordering token (JAX's ``Token``): no value, only a place in program order."""

    def __repr__(self) -> str:
        return "Token()"


def create_token(_=None):
    """A new ordering token; the argument is ignored, as in JAX.

    >>> lax.create_token()
    Token()
    """
    return Token()


def after_all(*operands):
    """A token ordered after all of ``operands`` (tokens).

    >>> lax.after_all(lax.create_token())
    Token()
    """
    bad = [type(t).__name__ for t in operands if not isinstance(t, Token)]
    if bad:
        raise TypeError(f"after_all takes only tokens, got {bad}")
    return Token()


# JAX's platform names for fnx's backends
_PLATFORMS = {"cpu": ("cpu",), "gpu": ("cuda", "gpu")}


def platform_dependent(*args, default=None, **per_platform):
    """Call the branch of ``per_platform`` named for the backend the program runs on (``cpu``,
    ``cuda``/``gpu``), else ``default``.

    >>> lax.platform_dependent(jnp.zeros(2), cpu=jnp.cos, default=jnp.sin)
    Array([1., 1.], dtype=float32)
    """
    for name in _PLATFORMS.get(default_backend(), (default_backend(),)):
        if name in per_platform:
            return per_platform[name](*args)
    if default is None:
        raise NotImplementedError(f"platform_dependent has no branch for the "
                                  f"{default_backend()!r} backend and no default")
    return default(*args)


def composite(decomposition, name: str, version: int = 0):
    """Mark ``decomposition`` as the composite operation ``name`` (a hint to XLA in JAX); fnx
    runs the decomposition, which also gives its derivatives.

    >>> hardtanh = lax.composite(lambda x: lax.clamp(-1.0, x, 1.0), name="my.hardtanh")
    >>> hardtanh(jnp.array([-2.0, 0.5]))
    Array([-1. ,  0.5], dtype=float32)
    """
    @functools.wraps(decomposition)
    def composite_call(*args, **kwargs):
        return decomposition(*args, **kwargs)
    composite_call.composite_name, composite_call.composite_version = name, version
    return composite_call

"""``jax.ad``: the targets of ``VJP.with_refs`` (where each argument's cotangent goes) and the
markers it returns.

>>> _, f_vjp = fnx.vjp(lambda w, x: w @ x, jnp.ones((2, 2)), jnp.ones(2))
>>> f_vjp.with_refs(fnx.ad.GradValue(), fnx.ad.DontWant())(jnp.ones(2))[1]
DidntWant()
"""
from .core.api import DidntWant, DontWant, GradRef, GradValue  # noqa: F401

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue"]

"""``jax.custom_derivatives``: functions with user-defined derivatives, and the primitives
they stage as.

>>> f = custom_jvp(jnp.sin)
>>> f.defjvp(lambda primals, tangents: (jnp.sin(primals[0]), 2.0 * tangents[0]))
<...>
>>> fnx.grad(f)(0.0)
Array(2., dtype=float32, weak_type=True)
"""
from .core.custom_derivatives import (CustomVJPPrimal, SymbolicZero, closure_convert,  # noqa
                                      custom_gradient, custom_jvp, custom_jvp_call_p,
                                      custom_vjp, custom_vjp_call_p, zero_from_primal)
from .core.linear_call import linear_call, linear_call_p  # noqa: F401

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
           "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p", "linear_call", "linear_call_p",
           "zero_from_primal"]

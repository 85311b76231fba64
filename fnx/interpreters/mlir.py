"""``jax.interpreters.mlir`` for user-defined primitives: fnx lowers no MLIR, so a lowering
made by ``lower_fun(f)`` runs ``f`` as the primitive's implementation (inside ``jit`` too);
any other lowering rule cannot run and is refused with a named error.

>>> from fnx.extend.core import Primitive
>>> triple_p = Primitive("triple")
>>> _ = triple_p.def_abstract_eval(lambda x: x)
>>> _ = register_lowering(triple_p, lower_fun(lambda x: 3 * x, multiple_results=False))
>>> fnx.jit(triple_p.bind)(2.0)
Array(6., dtype=float32, weak_type=True)
"""
from __future__ import annotations

from ..core.errors import FnxError


class LoweringError(FnxError, NotImplementedError):
    """A lowering rule fnx cannot run (one that builds MLIR operations).

    >>> issubclass(LoweringError, NotImplementedError)
    True
    """


class _LoweredFun:
    def __init__(self, fun, multiple_results):
        self.fun, self.multiple_results = fun, multiple_results

    def __call__(self, *args, **kwargs):
        raise LoweringError("fnx lowers no MLIR; a lower_fun rule runs as its primitive's impl")


def lower_fun(fun, multiple_results: bool = True):
    """A lowering that computes the primitive as ``fun(*args, **params)``.

    >>> lower_fun(jnp.sin, multiple_results=False).fun is jnp.sin
    True
    """
    return _LoweredFun(fun, multiple_results)


def register_lowering(prim, rule, platform: str | None = None, **kwargs):
    """Register ``rule`` for ``prim``: a ``lower_fun(f)`` rule becomes ``prim``'s impl where
    it has none (with ``multiple_results`` as the primitive's); a primitive with an impl keeps
    it; anything else raises ``LoweringError``.

    >>> from fnx.extend.core import Primitive
    >>> p = Primitive("with_impl")
    >>> _ = p.def_impl(jnp.cos)
    >>> _ = register_lowering(p, lambda ctx, x: x)     # an MLIR rule: the impl runs instead
    >>> p.bind(0.0)
    Array(1., dtype=float32, weak_type=True)
    """
    if isinstance(rule, _LoweredFun):
        if prim.impl is None:
            fun = rule.fun
            if rule.multiple_results and not prim.multiple_results:
                prim.def_impl(lambda *args, **params: fun(*args, **params)[0])
            else:
                prim.def_impl(fun)
        return rule
    if prim.impl is None:
        raise LoweringError(
            f"register_lowering({prim.name}): fnx lowers no MLIR, so this rule cannot run; "
            f"give the primitive an implementation with {prim.name}.def_impl(f) or "
            "mlir.lower_fun(f)")
    return rule


__all__ = ["LoweringError", "lower_fun", "register_lowering"]

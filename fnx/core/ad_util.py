"""What differentiation rules are written with, below both ``ad`` and ``lax`` (as JAX's
ad_util): symbolic zeros, undefined primals, and the helpers that make a primitive's JVP from one
function per operand.

Tangent arithmetic needs two array operations, zeros and addition. They are primitives of
``lax``, which stands on this module, so lax registers them here when it is imported
(``register_tangent_arithmetic``), as JAX's lax fills ``ad_util.aval_zeros_likers``.
"""
from __future__ import annotations

from typing import Callable

from .core import ShapedArray, get_aval


class Zero:
    """A symbolic zero tangent/cotangent of a given aval (never materialised unless needed).

    >>> Zero.from_primal_value(jnp.ones(3))
    Zero(f32[3])
    """
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @classmethod
    def from_primal_value(cls, x) -> "Zero":
        """The zero tangent of the primal value ``x``."""
        return cls(tangent_aval(get_aval(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Marks a linear input of an equation being transposed.

    >>> UndefinedPrimal(ShapedArray((2,), np.float32))
    UndefinedPrimal(f32[2])
    """
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type)


_arithmetic: dict[str, Callable] = {}


def register_tangent_arithmetic(zeros: Callable, add: Callable, convert: Callable) -> None:
    """``zeros(aval)`` makes an array of zeros, ``add(a, b)`` adds two tangents and
    ``convert(x, dtype)`` casts one (lax's)."""
    _arithmetic.update(zeros=zeros, add=add, convert=convert)


def zeros_like_aval(aval: ShapedArray):
    return _arithmetic["zeros"](aval)


def instantiate(t):
    return zeros_like_aval(t.aval) if isinstance(t, Zero) else t


def instantiate_as(t, aval: ShapedArray):
    """``t`` as an array of ``aval``'s dtype (zeros for a symbolic Zero)."""
    if isinstance(t, Zero):
        return zeros_like_aval(aval.strip_weak_type())
    if get_aval(t).dtype != aval.dtype:
        return _arithmetic["convert"](t, aval.dtype)
    return t


def add_tangents(a, b):
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    return _arithmetic["add"](a, b)


# ---------------------------------------------------------------------------------------------
# Helpers for writing rules


def defjvp(primitive, *jvp_fns):
    """JVP from one function per operand: ``fn(tangent, *primals, **params) -> contribution``.

    ``None`` marks an operand the output does not depend on differentiably."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        acc = Zero(tangent_aval(get_aval(out)))
        for fn, t in zip(jvp_fns, tangents):
            if fn is not None and not isinstance(t, Zero):
                acc = add_tangents(acc, fn(t, *primals, **params))
        return out, acc
    primitive.jvp = rule
    return rule


def defjvp_with_output(primitive, jvp_fn):
    """JVP for unary ops whose derivative is cheapest from the output (exp, tanh, ...):
    ``jvp_fn(tangent, x, out, **params)``."""
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, **params)
        return out, jvp_fn(t, x, out, **params)
    primitive.jvp = rule


def deflinear(primitive, transpose_rule):
    """A primitive linear in all operands: the JVP applies it to the tangents."""
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        ts = [instantiate(t) for t in tangents]
        return out, primitive.bind(*ts, **params)
    primitive.jvp = jvp
    primitive.transpose = transpose_rule
    primitive.is_linear = True


def zero_jvp(primitive):
    """Outputs that are piecewise constant (comparisons, floor, sign, argmax, ...)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero(tangent_aval(get_aval(o))) for o in out]
        return out, Zero(tangent_aval(get_aval(out)))
    primitive.jvp = rule


__all__ = ["Zero", "UndefinedPrimal", "is_undefined", "tangent_aval", "zeros_like_aval",
           "instantiate", "instantiate_as", "add_tangents", "register_tangent_arithmetic",
           "defjvp",
           "defjvp_with_output", "deflinear", "zero_jvp"]

"""Differentiation rules for user-defined primitives, as ``jax.interpreters.ad``:
``primitive_jvps[p] = rule(primals, tangents, **params) -> (out, tangent_out)``,
``primitive_transposes[p] = rule(ct, *args, **params) -> cotangents`` (linear inputs arrive as
``UndefinedPrimal``), and the helpers ``defjvp``, ``defjvp2``, ``deflinear``, ``defbilinear``.

>>> from fnx.extend.core import Primitive
>>> double_p = Primitive("double")
>>> _ = double_p.def_impl(lambda x: 2 * x)
>>> _ = double_p.def_abstract_eval(lambda x: x)
>>> deflinear(double_p, lambda ct: [2 * ct])
>>> fnx.grad(lambda x: double_p.bind(x) ** 2)(3.0)
Array(24., dtype=float32, weak_type=True)
"""
from __future__ import annotations

from ..core import ad_util
from ..core.ad import JVPTrace, JVPTracer  # noqa: F401
from ..core.ad_util import UndefinedPrimal, Zero, instantiate, is_undefined  # noqa: F401
from ..core.core import get_aval
from ._tables import RuleTable

primitive_jvps = RuleTable("jvp")
primitive_transposes = RuleTable("transpose")


def is_undefined_primal(x) -> bool:
    """Whether ``x`` is a linear input of the equation being transposed.

    >>> is_undefined_primal(UndefinedPrimal(fnx.core.ShapedArray((), jnp.float32)))
    True
    """
    return is_undefined(x)


def instantiate_zeros(t):
    """``t`` as an array: zeros for a symbolic ``Zero``.

    >>> instantiate_zeros(Zero.from_primal_value(jnp.ones(2)))
    Array([0., 0.], dtype=float32)
    """
    return instantiate(t)


def zeros_like_aval(aval):
    """An array of zeros of ``aval``'s shape and dtype.

    >>> zeros_like_aval(fnx.core.ShapedArray((2,), jnp.float32))
    Array([0., 0.], dtype=float32)
    """
    return ad_util.zeros_like_aval(aval)


def add_tangents(x, y):
    """``x + y`` for two tangents, either of which may be a symbolic ``Zero``.

    >>> add_tangents(Zero.from_primal_value(1.0), jnp.ones(()))
    Array(1., dtype=float32)
    """
    return ad_util.add_tangents(x, y)


def add_jaxvals(x, y):
    """``x + y`` for two tangents (JAX's ``add_jaxvals``).

    >>> add_jaxvals(jnp.ones(2), jnp.ones(2))
    Array([2., 2.], dtype=float32)
    """
    return ad_util.add_tangents(x, y)


def get_primitive_transpose(p):
    """The transpose rule of the linear primitive ``p``.

    >>> get_primitive_transpose(fnx.lax.neg_p) is fnx.lax.neg_p.transpose
    True
    """
    return p.rule("transpose")


def defjvp(primitive, *jvp_rules):
    """The JVP of ``primitive`` from one rule per operand, ``rule(tangent, *primals,
    **params)`` (``None`` for an operand it does not depend on differentiably).

    >>> from fnx.extend.core import Primitive
    >>> cube_p = Primitive("cube")
    >>> _ = cube_p.def_impl(lambda x: x ** 3)
    >>> _ = cube_p.def_abstract_eval(lambda x: x)
    >>> defjvp(cube_p, lambda g, x: 3 * x ** 2 * g)
    >>> fnx.grad(cube_p.bind)(2.0)
    Array(12., dtype=float32, weak_type=True)
    """
    ad_util.defjvp(primitive, *jvp_rules)


def defjvp2(primitive, *jvp_rules):
    """As ``defjvp``, the rules also given the output: ``rule(tangent, out, *primals,
    **params)``.

    >>> from fnx.extend.core import Primitive
    >>> exp_p = Primitive("my_exp")
    >>> _ = exp_p.def_impl(jnp.exp)
    >>> _ = exp_p.def_abstract_eval(lambda x: x)
    >>> defjvp2(exp_p, lambda g, ans, x: g * ans)
    >>> fnx.grad(exp_p.bind)(0.0)
    Array(1., dtype=float32, weak_type=True)
    """
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        acc = Zero(ad_util.tangent_aval(get_aval(out)))
        for fn, t in zip(jvp_rules, tangents):
            if fn is not None and not isinstance(t, Zero):
                acc = add_tangents(acc, fn(t, out, *primals, **params))
        return out, acc
    primitive.jvp = rule


def _zero_cotangents(args):
    return [Zero(a.aval) if is_undefined(a) else None for a in args]


def deflinear2(primitive, transpose_rule):
    """``primitive`` is linear in all its operands; ``transpose_rule(ct, *args, **params)``
    gives their cotangents.

    >>> from fnx.extend.core import Primitive
    >>> neg_p = Primitive("my_neg")
    >>> _ = neg_p.def_impl(lambda x: -x)
    >>> _ = neg_p.def_abstract_eval(lambda x: x)
    >>> deflinear2(neg_p, lambda ct, x: [-ct])
    >>> fnx.grad(neg_p.bind)(1.0)
    Array(-1., dtype=float32, weak_type=True)
    """
    def transpose(ct, *args, **params):
        if isinstance(ct, Zero):
            return _zero_cotangents(args)
        return transpose_rule(ct, *args, **params)
    ad_util.deflinear(primitive, transpose)


def deflinear(primitive, transpose_rule):
    """``primitive`` is linear in all its operands; ``transpose_rule(ct, **params)`` gives
    their cotangents.

    >>> from fnx.extend.core import Primitive
    >>> half_p = Primitive("half")
    >>> _ = half_p.def_impl(lambda x: x / 2)
    >>> _ = half_p.def_abstract_eval(lambda x: x)
    >>> deflinear(half_p, lambda ct: [ct / 2])
    >>> fnx.grad(half_p.bind)(4.0)
    Array(0.5, dtype=float32, weak_type=True)
    """
    deflinear2(primitive, lambda ct, *args, **params: transpose_rule(ct, **params))


def defbilinear(prim, lhs_rule, rhs_rule):
    """``prim(x, y)`` is linear in each operand: ``lhs_rule(ct, x, y, **params)`` is the
    cotangent of ``x`` (which arrives as an ``UndefinedPrimal``), ``rhs_rule`` that of ``y``.

    >>> from fnx.extend.core import Primitive
    >>> mul_p = Primitive("my_mul")
    >>> _ = mul_p.def_impl(lambda x, y: x * y)
    >>> _ = mul_p.def_abstract_eval(lambda x, y: x)
    >>> defbilinear(mul_p, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
    >>> fnx.grad(mul_p.bind, argnums=(0, 1))(2.0, 5.0)
    (Array(5., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    """
    ad_util.defjvp(prim, lambda g, x, y, **params: prim.bind(g, y, **params),
                   lambda g, x, y, **params: prim.bind(x, g, **params))

    def transpose(ct, x, y, **params):
        if isinstance(ct, Zero):
            return _zero_cotangents((x, y))
        if is_undefined(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]
    prim.transpose = transpose


__all__ = ["UndefinedPrimal", "Zero", "add_jaxvals", "add_tangents",
           "defbilinear", "defjvp", "defjvp2", "deflinear", "deflinear2",
           "get_primitive_transpose", "instantiate_zeros", "is_undefined_primal",
           "primitive_jvps", "primitive_transposes", "zeros_like_aval"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""``jax.extend.core``: primitives and jaxprs. A primitive is made and given its rules as in
JAX (``def_impl``, ``def_abstract_eval``, then ``fnx.interpreters.ad`` / ``batching``), and
``jit``, ``grad`` and ``vmap`` go through it.

>>> p = Primitive("add_one")
>>> _ = p.def_impl(lambda x: x + 1)
>>> _ = p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
>>> fnx.jit(p.bind)(jnp.zeros(2))
Array([1., 1.], dtype=float32)
"""
from __future__ import annotations

from ...core import core as _core
from ...core.core import Primitive, ShapedArray, Trace, Tracer, set_current_trace  # noqa: F401
from ...core.dtypes import float0 as _float0
from ...core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTypeError, Literal,  # noqa: F401
                           Var, subjaxprs)
from ...core.jaxpr import eval_jaxpr as _eval_jaxpr, typecheck_jaxpr as _typecheck
from . import primitives  # noqa: F401

array_types = (_core.Array,)
no_effects: frozenset = frozenset()


class Effect:
    """The base class of side effects a primitive may declare (JAX's ``core.Effect``).

    >>> class Logging(Effect): ...
    >>> isinstance(Logging(), Effect)
    True
    """


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr):
    """A function that evaluates ``closed_jaxpr`` under the current transformation, returning
    the list of its outputs.

    >>> closed = fnx.make_jaxpr(lambda x: (jnp.sin(x), 2 * x))(1.0)
    >>> jaxpr_as_fun(closed)(0.0)
    [Array(0., dtype=float32, weak_type=True), Array(0., dtype=float32, weak_type=True)]
    """
    def fun(*args):
        return _eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)
    return fun


def check_jaxpr(jaxpr) -> None:
    """Type-check ``jaxpr`` (a Jaxpr or ClosedJaxpr); raises ``JaxprTypeError``.

    >>> check_jaxpr(fnx.make_jaxpr(jnp.sin)(1.0).jaxpr)
    """
    _typecheck(jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr)


def concrete_or_error(force, val, context: str = ""):
    """``force(val)`` for a concrete ``val`` (``force=None``: the value itself); a
    ConcretizationTypeError naming ``context`` when it is traced.

    >>> concrete_or_error(int, jnp.array(3))
    3
    """
    value = _core.concrete_or_error(val, context or "this value") \
        if isinstance(val, Tracer) else val
    return value if force is None else force(value)


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None) -> JaxprEqn:
    """An equation ``outvars = primitive[params] invars``.

    >>> v = Var(ShapedArray((), jnp.float32))
    >>> new_jaxpr_eqn([v], [Var(v.aval)], fnx.lax.sin_p, {}).primitive
    sin
    """
    return JaxprEqn(invars, outvars, primitive, dict(params), source_info)


def jaxprs_in_params(params) -> list:
    """The jaxprs among a primitive's ``params`` (a loop body, cond branches).

    >>> jaxprs_in_params({"x": 1})
    []
    """
    out = []
    for v in params.values():
        for sub in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(sub, (Jaxpr, ClosedJaxpr)):
                out.append(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub)
    return out


def mapped_aval(size: int, axis, aval: ShapedArray) -> ShapedArray:
    """``aval`` with the mapped axis ``axis`` (of size ``size``) removed.

    >>> mapped_aval(3, 0, ShapedArray((3, 2), jnp.float32))
    ShapedArray(float32[2])
    """
    if axis is None:
        return aval
    shape = list(aval.shape)
    if shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} is not of size "
                         f"{size}")
    del shape[axis]
    return aval.update(shape=tuple(shape))


def unmapped_aval(size: int, axis, aval: ShapedArray, explicit_mesh_axis=None) -> ShapedArray:
    """``aval`` with a mapped axis of size ``size`` inserted at ``axis``.

    >>> unmapped_aval(3, 0, ShapedArray((2,), jnp.float32))
    ShapedArray(float32[3,2])
    """
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(axis, size)
    return aval.update(shape=tuple(shape))


def primal_dtype_to_tangent_dtype(primal_dtype):
    """The dtype of tangents of ``primal_dtype``: itself for inexact types, ``float0`` for
    integers and booleans.

    >>> primal_dtype_to_tangent_dtype(jnp.int32)
    dtype([('float0', 'V')])
    """
    import numpy as np
    d = np.dtype(primal_dtype)
    return d if d.kind in "fcV" and d != np.dtype(bool) or d.name == "bfloat16" else _float0


def valid_jaxtype(x) -> bool:
    """Whether ``x`` can be an argument of a traced function (an array or a scalar).

    >>> valid_jaxtype(1.0), valid_jaxtype("a")
    (True, False)
    """
    try:
        _core.get_aval(x)
    except Exception:
        return False
    return True


def find_top_trace(xs) -> Trace:
    """The innermost trace among ``xs``'s tracers (the current trace when none is traced).

    >>> isinstance(find_top_trace([1.0]), Trace)
    True
    """
    traces = [x._trace for x in xs if isinstance(x, Tracer)]
    return max(traces, key=lambda t: t.level) if traces else _core.current_trace()


def unsafe_am_i_under_a_jit_DO_NOT_USE() -> bool:  # noqa: N802 - JAX's name
    """Whether the code runs while ``jit`` traces it.

    >>> unsafe_am_i_under_a_jit_DO_NOT_USE()
    False
    """
    from ...core.partial_eval import JaxprTrace
    return _under(JaxprTrace)


def unsafe_am_i_under_a_vmap_DO_NOT_USE() -> bool:  # noqa: N802 - JAX's name
    """Whether the code runs while ``vmap`` traces it.

    >>> fnx.vmap(lambda x: jnp.float32(unsafe_am_i_under_a_vmap_DO_NOT_USE()) + x)(jnp.ones(2))
    Array([2., 2.], dtype=float32)
    """
    from ...core.batching import BatchTrace
    return _under(BatchTrace)


def _under(trace_type) -> bool:
    """Whether a trace of ``trace_type`` is among the traces the code runs under."""
    t = _core.current_trace()
    while t is not None:
        if isinstance(t, trace_type):
            return True
        t = t.parent
    return False


__all__ = ["ClosedJaxpr", "Effect", "Jaxpr", "JaxprEqn", "JaxprTypeError", "Literal", "Primitive",
           "Trace", "Tracer", "Var", "array_types", "check_jaxpr", "concrete_or_error",
           "find_top_trace", "jaxpr_as_fun", "jaxprs_in_params", "mapped_aval", "new_jaxpr_eqn",
           "no_effects", "primal_dtype_to_tangent_dtype", "primitives", "set_current_trace",
           "subjaxprs", "unmapped_aval", "unsafe_am_i_under_a_jit_DO_NOT_USE",
           "unsafe_am_i_under_a_vmap_DO_NOT_USE", "valid_jaxtype"]

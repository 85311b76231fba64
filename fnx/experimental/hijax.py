"""Primitives written as Python classes, as ``jax.experimental.hijax.VJPHiPrimitive``: a subclass
says what it computes (``expand``) and, optionally, its derivatives (``vjp_fwd`` with
``vjp_bwd_retval`` or ``vjp_bwd``; ``jvp``; ``lin`` with ``linearized``). fnx runs an instance
as a ``custom_vjp`` function (wrapped in ``custom_jvp`` when it has a forward rule), so jit,
grad and vmap see the rules; with both kinds, grad differentiates through the forward rule
(JAX uses the reverse rules), so the two must agree. Under vmap, where JAX needs ``batch`` or ``batch_dim_rule``, fnx
asks for one too but batches ``expand`` and the rules themselves (the same values); jaxprs show
the expanded operations, not one ``call_hi_primitive`` equation.

>>> class Mul(VJPHiPrimitive):
...     def __init__(self, x_aval, y_aval):
...         self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
...         super().__init__()
...     def expand(self, x, y):
...         return x * y
...     def vjp_fwd(self, nzs_in, x, y):
...         return self(x, y), (x, y)
...     def vjp_bwd_retval(self, res, g):
...         x, y = res
...         return (g * y, x * g)
>>> mul = lambda x, y: Mul(fnx.typeof(x), fnx.typeof(y))(x, y)
>>> fnx.grad(mul, 1)(2., 3.)
Array(2., dtype=float32, weak_type=True)
"""
from __future__ import annotations

from ..core.ad_util import Zero
from ..core.api import ShapeDtypeStruct, linear_transpose, linearize
from ..core.core import ShapedArray
from ..core.custom_derivatives import custom_jvp, custom_vjp
from ..core.batching import BatchTracer
from ..core.pytree import tree_leaves, tree_map
from .. import numpy as jnp

__all__ = ["VJPHiPrimitive", "ShapedArray", "Zero", "instantiate_zeros", "linearize_from_jvp",
           "vjp_from_lin", "vjp_from_jvp"]


def instantiate_zeros(x):
    """``x``, with a symbolic ``Zero`` cotangent made an array of zeros."""
    return jnp.zeros(x.aval.shape, x.aval.dtype) if isinstance(x, Zero) else x


class VJPHiPrimitive:
    """Base class of a primitive written in Python. A subclass's ``__init__`` sets
    ``in_avals`` (the arguments' types, a tuple of pytrees), ``out_aval`` and ``params`` (static
    values, readable as attributes) and then calls ``super().__init__()``."""

    def __init__(self):
        for name in ("in_avals", "out_aval", "params"):
            if not hasattr(self, name):
                raise AttributeError(f"subclass __init__ should set `self.{name}`")
        if _overrides(self, "vjp_bwd") and _overrides(self, "vjp_bwd_retval"):
            raise AttributeError(f"subclass {type(self)} should not override both `vjp_bwd` "
                                 "and `vjp_bwd_retval`")
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def check(self, *arg_types):
        """Optional checks of the argument types."""

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement "
                                  "`vjp_fwd`, or derive it with `vjp_fwd, vjp_bwd_retval = "
                                  "vjp_from_jvp` (or `= vjp_from_lin`)")

    def vjp_bwd_retval(self, res, outgrad):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement "
                                  "`vjp_bwd` or `vjp_bwd_retval`")

    def vjp_bwd(self, res, outgrad, *arg_accums):
        for accum, ct in zip(arg_accums, self.vjp_bwd_retval(res, outgrad)):
            accum.accum(ct)

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement `jvp`")

    def batch(self, axis_data, args, dims):
        raise NotImplementedError(f"for vmap support, subclass {type(self)} must implement "
                                  "`batch` or `batch_dim_rule`")

    def lin(self, nzs_in, *primals):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must implement "
                                  "`lin` and `linearized`, or set `lin, linearized = "
                                  "linearize_from_jvp`")

    def linearized(self, residuals, *tangents):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must implement "
                                  "`lin` and `linearized`")

    def batch_dim_rule(self, axis_data, in_dims):
        raise NotImplementedError(f"for vmap support, subclass {type(self)} must implement "
                                  "`batch` or `batch_dim_rule`")

    def __call__(self, *args):
        if any(isinstance(leaf, BatchTracer) for leaf in tree_leaves(args)) and not (
                _overrides(self, "batch") or _overrides(self, "batch_dim_rule")):
            self.batch_dim_rule(None, None)       # raises, as JAX does without a batch rule
        return _as_function(self)(*args)

    def __repr__(self):
        return f"{type(self).__name__}[{self.params}]"


def _overrides(prim, name: str) -> bool:
    return getattr(type(prim), name) is not getattr(VJPHiPrimitive, name)


class _Accumulator:
    """The cotangent sink ``vjp_bwd`` writes one argument's cotangent into."""

    def __init__(self, aval):
        self.aval, self.total = aval, None

    def accum(self, value):
        if value is not None and not isinstance(value, Zero):
            self.total = value if self.total is None else self.total + value


def _as_function(prim):
    """``prim`` as a function with its rules attached: custom_vjp for the reverse rules,
    custom_jvp outside it for a forward rule (grad then differentiates through that)."""
    fun = lambda *args: prim.expand(*args)        # noqa: E731
    if _overrides(prim, "vjp_fwd"):
        fun = custom_vjp(fun)
        fun.defvjp(lambda *args: _fwd(prim, args), lambda res, g: _bwd(prim, res, g))
    if _overrides(prim, "jvp") or _overrides(prim, "lin"):
        fun = custom_jvp(fun)
        fun.defjvp(lambda primals, tangents: _jvp(prim, primals, tangents))
    return fun


def _fwd(prim, args):
    nzs_in = tree_map(lambda _: True, args)
    out, res, *_ = prim.vjp_fwd(nzs_in, *args)
    return out, res


def _bwd(prim, res, g):
    if _overrides(prim, "vjp_bwd"):
        accums = [tree_map(_Accumulator, aval) for aval in prim.in_avals]
        prim.vjp_bwd(res, g, *accums)
        cts = [tree_map(lambda a: a.total, acc, is_leaf=lambda a: isinstance(a, _Accumulator))
               for acc in accums]
    else:
        cts = prim.vjp_bwd_retval(res, g)
    return tuple(_zeros_for_none(ct, aval) for ct, aval in zip(cts, prim.in_avals))


def _zeros_for_none(ct, aval):
    if ct is None:
        return tree_map(lambda a: jnp.zeros(a.shape, a.dtype), aval)
    return tree_map(instantiate_zeros, ct, is_leaf=lambda x: x is None or isinstance(x, Zero))


def _jvp(prim, primals, tangents):
    if _overrides(prim, "jvp"):
        return prim.jvp(primals, tangents)
    out, res = prim.lin(tree_map(lambda _: True, primals), *primals)
    return out, prim.linearized(res, *tangents)


def _lin_from_jvp(prim, nzs_in, *primals):
    forward = custom_jvp(lambda *args: prim.expand(*args))
    forward.defjvp(lambda ps, ts: prim.jvp(ps, ts))
    return linearize(forward, *primals)


def _linearized_from_jvp(prim, f_lin, *tangents):
    return f_lin(*tangents)


def _fwd_from_lin(prim, nzs_in, *args):
    out, res = prim.lin(nzs_in, *args)
    return out, (res, [ShapeDtypeStruct(a.shape, a.dtype) for a in prim.in_avals])


def _bwd_from_lin(prim, res, g):
    lin_res, in_specs = res
    return linear_transpose(lambda *ts: prim.linearized(lin_res, *ts), *in_specs)(g)


def _fwd_from_jvp(prim, nzs_in, *args):
    out, f_lin = _lin_from_jvp(prim, nzs_in, *args)
    return out, (f_lin, [ShapeDtypeStruct(a.shape, a.dtype) for a in prim.in_avals])


def _bwd_from_jvp(prim, res, g):
    f_lin, in_specs = res
    return linear_transpose(f_lin, *in_specs)(g)


# rules derived from others, assigned in a class body: ``lin, linearized = linearize_from_jvp``
linearize_from_jvp = (_lin_from_jvp, _linearized_from_jvp)
vjp_from_lin = (_fwd_from_lin, _bwd_from_lin)
vjp_from_jvp = (_fwd_from_jvp, _bwd_from_jvp)

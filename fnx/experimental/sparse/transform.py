"""``sparsify``: run a function written for dense arrays on sparse ones.

The function is traced with each sparse argument standing in as a dense value of its shape and
dtype; the jaxpr is then interpreted, equation by equation, with sparse rules for the
primitives that keep zeros zero (elementwise products by dense values, sums of sparse arrays,
products, sums over axes, transposes, reshapes, slices, negation, dtype conversion and the
unary functions that map 0 to 0). A primitive without a sparse rule gets its sparse operands
made dense, with a ``SparseEfficiencyWarning`` naming it. BCOO's operators (``@``, ``*``,
``+``, ``.sum``, indexing ...) are ``sparsify`` of the dense functions, as in JAX.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ... import numpy as jnp
from ...core.api_util import flatten_fun
from ...core.core import ShapedArray, get_aval
from ...core.jaxpr import Literal
from ...core.lax import all_primitives
from ...core.partial_eval import trace_to_jaxpr
from ...core.pytree import tree_flatten, tree_unflatten
from ._base import JAXSparse, SparseEfficiencyWarning
from .bcoo import (BCOO, _like, bcoo_dynamic_slice, bcoo_multiply_dense, bcoo_multiply_sparse,
                   bcoo_reduce_sum, bcoo_reshape, bcoo_slice, bcoo_squeeze, bcoo_sum_duplicates,
                   bcoo_transpose)
from .bcoo_dot import bcoo_dot_general
from .bcsr import BCSR

_is_sparse = lambda x: isinstance(x, JAXSparse)  # noqa: E731


def sparsify(f, use_tracer: bool = False):
    """``f`` made to accept sparse arrays (BCOO, BCSR) wherever it takes arrays; operations
    that keep zeros zero return sparse arrays, the others see dense ones.

    >>> from fnx.experimental import sparse
    >>> @sparse.sparsify
    ... def f(M, v):
    ...     return 2 * M.T @ v
    >>> M = sparse.BCOO.fromdense(jnp.arange(12).reshape(3, 4))
    >>> f(M, jnp.array([3, 4, 2]))
    Array([ 64,  82, 100, 118], dtype=int32)
    """
    del use_tracer      # one implementation: trace to a jaxpr, interpret it sparsely

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
        leaves = [x.to_bcoo() if isinstance(x, BCSR) else x for x in leaves]
        avals = [ShapedArray(x.shape, x.dtype) if isinstance(x, BCOO) else get_aval(x)
                 for x in leaves]
        flat_fun, out_tree = flatten_fun(lambda a, k: f(*a, **k), in_tree)
        closed = trace_to_jaxpr(flat_fun, avals, description=f"sparsify({_name(f)})")
        outs = eval_sparse(closed.jaxpr, closed.consts, leaves)
        return tree_unflatten(out_tree(), outs)
    return wrapped


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


def eval_sparse(jaxpr, consts, args):
    """Interpret ``jaxpr`` on a mix of dense arrays and BCOO arrays."""
    env = {}
    read = lambda v: v.val if isinstance(v, Literal) else env[v]  # noqa: E731
    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        vals = [read(v) for v in eqn.invars]
        prim = eqn.primitive
        if any(isinstance(x, BCOO) for x in vals):
            rule = _RULES.get(prim.name)
            outs = rule(*vals, **eqn.params) if rule is not None else None
            if outs is None:
                outs = _densified(prim, vals, eqn.params)
        else:
            outs = prim.bind(*vals, **eqn.params)
        env.update(zip(eqn.outvars, outs if prim.multiple_results else [outs]))
    return [read(v) for v in jaxpr.outvars]


def _densified(prim, vals, params):
    names = ", ".join(f"{x.dtype}{list(x.shape)}" for x in vals if isinstance(x, BCOO))
    warnings.warn(f"sparsify: {prim.name} has no sparse rule, so its sparse operands ({names}) "
                  f"are made dense; call .todense() yourself to make this explicit",
                  SparseEfficiencyWarning, stacklevel=4)
    return prim.bind(*[x.todense() if isinstance(x, BCOO) else x for x in vals], **params)


# ---------------------------------------------------------------------------------------------
# Rules: each takes the equation's operands (BCOO or dense) and params, and returns what the
# primitive returns, or None to make the operands dense.

_RULES = {}

_LINEAR_UNARY = ("neg", "real", "imag", "conj", "copy", "convert_element_type",
                 "reduce_precision", "stop_gradient")
_ZERO_PRESERVING_UNARY = ("abs", "asin", "asinh", "atan", "atanh", "expm1", "log1p", "sign",
                          "sin", "sinh", "sqrt", "square", "tan", "tanh", "erf", "cbrt")


def _unique(mat):
    return mat if mat.unique_indices else bcoo_sum_duplicates(mat, nse=mat.nse)


@functools.lru_cache(maxsize=None)
def _primitive(name):
    return next(p for p in all_primitives() if p.name == name)


def _unary(name, linear):
    def rule(x, **params):
        x = x if linear else _unique(x)     # f(a) + f(b) is not f(a + b)
        return _like(x, _primitive(name).bind(x.data, **params))
    return rule


for _n in _LINEAR_UNARY:
    _RULES[_n] = _unary(_n, linear=True)
for _n in _ZERO_PRESERVING_UNARY:
    _RULES[_n] = _unary(_n, linear=False)


def _integer_pow(x, *, y):
    if y <= 0:
        return None
    return _like(_unique(x), _unique(x).data ** y)


_RULES["integer_pow"] = _integer_pow


def _add(x, y):
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        if x.shape != y.shape:
            return None
        if x.indices is y.indices:
            return _like(x, x.data + y.data)
        if x.n_batch != y.n_batch or x.n_dense != y.n_dense:
            y = y.update_layout(n_batch=x.n_batch, n_dense=x.n_dense, on_inefficient=None)
            x = x.update_layout(n_batch=y.n_batch, n_dense=y.n_dense, on_inefficient=None)
        axis = x.n_batch
        dtype = jnp.result_type(x.dtype, y.dtype)
        data = jnp.concatenate([x.data.astype(dtype), y.data.astype(dtype)], axis=axis)
        indices = jnp.concatenate([x.indices, y.indices.astype(x.indices.dtype)], axis=axis)
        return BCOO((data, indices), shape=x.shape)
    sp, dense = (x, y) if isinstance(x, BCOO) else (y, x)
    if np.broadcast_shapes(sp.shape, jnp.shape(dense)) != jnp.shape(dense):
        return None
    return sp.todense() + dense           # a dense result, as in JAX


def _sub(x, y):
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        return _add(x, _like(y, -y.data))
    return x.todense() - y if isinstance(x, BCOO) else x - y.todense()


def _mul(x, y):
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        if x.indices is y.indices and x.unique_indices:
            return _like(x, x.data * y.data)
        return bcoo_multiply_sparse(x, y)
    sp, dense = (x, y) if isinstance(x, BCOO) else (y, x)
    if np.broadcast_shapes(sp.shape, jnp.shape(dense)) != sp.shape:
        return None
    return _like(sp, bcoo_multiply_dense(sp, dense))


def _div(x, y):
    if isinstance(y, BCOO):
        return None
    if np.broadcast_shapes(x.shape, jnp.shape(y)) != x.shape:
        return None
    return _like(x, bcoo_multiply_dense(x, 1 / jnp.asarray(y)))


def _reduce_sum(x, *, axes, **_):
    out = bcoo_reduce_sum(x, axes=axes)
    return jnp.sum(out.data) if out.ndim == 0 else out


def _dot_general(x, y, *, dimension_numbers, precision=None, preferred_element_type=None, **_):
    return bcoo_dot_general(x, y, dimension_numbers=dimension_numbers, precision=precision,
                            preferred_element_type=preferred_element_type)


def _take(x, i, *, axis):
    """``x[i]`` with a scalar ``i`` (indexing the leading dimension)."""
    if isinstance(i, BCOO) or jnp.ndim(i) != 0:
        return None
    starts = [jnp.zeros((), jnp.int32)] * x.ndim
    starts[axis] = jnp.asarray(i)
    sizes = list(x.shape)
    sizes[axis] = 1
    return bcoo_squeeze(bcoo_dynamic_slice(x, starts, sizes), dimensions=(axis,))


def _jit(*args, jaxpr, **_):
    return eval_sparse(jaxpr, [], list(args))


def _custom_call(*args, call_jaxpr, num_consts, **_):
    if call_jaxpr is None:
        return None
    return eval_sparse(call_jaxpr, [], list(args))   # the primal function, as JAX does


_RULES.update({
    "add": _add, "sub": _sub, "mul": _mul, "div": _div,
    "reduce_sum": _reduce_sum,
    "dot_general": _dot_general,
    "transpose": lambda x, *, permutation: bcoo_transpose(x, permutation=permutation),
    "reshape": lambda x, *, new_sizes, dimensions=None, **_: bcoo_reshape(
        x, new_sizes=new_sizes, dimensions=dimensions),
    "slice": lambda x, *, start_indices, limit_indices, strides=None: bcoo_slice(
        x, start_indices=start_indices, limit_indices=limit_indices, strides=strides),
    "take": _take,
    "jit": _jit,
    "custom_jvp_call": _custom_call,
    "custom_vjp_call": _custom_call,
})


# ---------------------------------------------------------------------------------------------
# BCOO's operators and methods, as sparsify of the dense functions (JAX's set)

def _swap(f):
    return lambda a, b: f(b, a)


def _sum(self, *args, **kwargs):
    """The sum over axes, as ``jnp.sum`` (a BCOO array unless every axis is summed)."""
    return sparsify(lambda x: x.sum(*args, **kwargs))(self)


def _reshape(self, *args, **kwargs):
    """The array with a new shape, as ``jnp.reshape``."""
    return sparsify(lambda x: x.reshape(*args, **kwargs))(self)


def _astype(self, *args, **kwargs):
    """The array converted to another dtype, as ``Array.astype``."""
    return sparsify(lambda x: x.astype(*args, **kwargs))(self)


def _getitem(self, index):
    return sparsify(lambda x: x[index])(self)


def _iter(self):
    return (self[i] for i in range(self.shape[0]))


def _pow(x, y):
    return sparsify(lambda a: jnp.power(a, y))(x)


_METHODS = {
    "astype": _astype, "reshape": _reshape, "sum": _sum,
    "__abs__": sparsify(jnp.abs), "__neg__": sparsify(jnp.negative),
    "__pos__": sparsify(jnp.positive),
    "__matmul__": sparsify(jnp.matmul), "__rmatmul__": sparsify(_swap(jnp.matmul)),
    "__mul__": sparsify(jnp.multiply), "__rmul__": sparsify(_swap(jnp.multiply)),
    "__truediv__": sparsify(jnp.divide), "__rtruediv__": sparsify(_swap(jnp.divide)),
    "__add__": sparsify(jnp.add), "__radd__": sparsify(_swap(jnp.add)),
    "__sub__": sparsify(jnp.subtract), "__rsub__": sparsify(_swap(jnp.subtract)),
    "__pow__": _pow, "__rpow__": sparsify(_swap(jnp.power)),
    "__getitem__": _getitem, "__iter__": _iter,
}
for _name_, _impl in _METHODS.items():
    setattr(BCOO, _name_, _impl)

for _name_ in ("__matmul__", "__rmatmul__"):
    setattr(BCSR, _name_, _METHODS[_name_])

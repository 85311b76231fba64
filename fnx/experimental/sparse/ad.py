"""Sparse-aware ``grad``, ``value_and_grad`` and Jacobians: a sparse argument is
differentiated with respect to its stored data, and its derivative is a sparse array with the
same indices (JAX's ``sparse.grad`` and relatives)."""
from __future__ import annotations

import functools
import operator

from ...core import api
from ...tree_util import tree_map
from ._base import JAXSparse


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _with_data(arr, data):
    children, aux = arr.tree_flatten()
    return type(arr).tree_unflatten(aux, (data,) + tuple(children[1:]))


def _sparse_aware(transform, fun, argnums, **kwargs):
    """``transform(fun)`` whose sparse arguments at ``argnums`` vary only in their data."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args):
        nums_ = tuple(operator.index(n) % len(args) for n in nums)
        # each differentiated argument as a pytree whose sparse leaves are their data
        templates = {i: args[i] for i in nums_}
        as_data = lambda x: x.data if _is_sparse(x) else x  # noqa: E731

        def inner(*diff_args):
            full = list(args)
            for i, a in zip(nums_, diff_args):
                full[i] = tree_map(lambda t, d: _with_data(t, d) if _is_sparse(t) else d,
                                   templates[i], a, is_leaf=_is_sparse)
            return fun(*full)
        diff = [tree_map(as_data, args[i], is_leaf=_is_sparse) for i in nums_]
        out = transform(lambda *d: inner(*d), argnums=tuple(range(len(nums_))),
                        **kwargs)(*diff)

        def rewrap(result):
            parts = [tree_map(lambda t, g: _with_data(t, g) if _is_sparse(t) else g,
                              templates[i], r, is_leaf=_is_sparse)
                     for i, r in zip(nums_, result)]
            return parts[0] if single else tuple(parts)
        return out, rewrap
    return wrapped


def grad(fun, argnums=0, has_aux: bool = False, **kwargs):
    """``fnx.grad`` for functions of sparse arrays: the gradient for a sparse argument is a
    sparse array with its indices, holding the derivatives with respect to its data.

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[0., 2.], [3., 0.]]))
    >>> g = sparse.grad(lambda M: (M @ jnp.array([1., 10.])).sum())(M)
    >>> g.data, g.indices.tolist()
    (Array([10.,  1.], dtype=float32), [[0, 1], [1, 0]])
    """
    vg = value_and_grad(fun, argnums, has_aux, **kwargs)

    @functools.wraps(fun)
    def wrapped(*args):
        value, g = vg(*args)
        return (g, value[1]) if has_aux else g
    return wrapped


def value_and_grad(fun, argnums=0, has_aux: bool = False, **kwargs):
    """``fnx.value_and_grad`` for functions of sparse arrays (see ``grad``).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([1., 0., 2.]))
    >>> value, g = sparse.value_and_grad(lambda M: (M * M).sum())(M)
    >>> value, g.data
    (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
    """
    inner = _sparse_aware(api.value_and_grad, fun, argnums, has_aux=has_aux, **kwargs)

    @functools.wraps(fun)
    def wrapped(*args):
        (value, g), rewrap = inner(*args)
        return value, rewrap(g)
    return wrapped


def _jacobian(transform, fun, argnums, has_aux, **kwargs):
    inner = _sparse_aware(transform, fun, argnums, has_aux=has_aux, **kwargs)

    @functools.wraps(fun)
    def wrapped(*args):
        out, rewrap = inner(*args)
        if has_aux:
            jac, aux = out
            return rewrap(jac), aux
        return rewrap(out)
    return wrapped


def jacfwd(fun, argnums=0, has_aux: bool = False, **kwargs):
    """``fnx.jacfwd`` for functions of sparse arrays: for a sparse argument, the Jacobian with
    respect to its data, returned with the argument's indices (for scalar outputs, a sparse
    array of the argument's shape).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([1., 0., 2.]))
    >>> sparse.jacfwd(lambda M: (M * M).sum())(M).data
    Array([2., 4.], dtype=float32)
    """
    return _jacobian(api.jacfwd, fun, argnums, has_aux, **kwargs)


def jacrev(fun, argnums=0, has_aux: bool = False, **kwargs):
    """``fnx.jacrev`` for functions of sparse arrays (see ``jacfwd``).

    >>> from fnx.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([1., 0., 2.]))
    >>> sparse.jacrev(lambda M: (M * M).sum())(M).data
    Array([2., 4.], dtype=float32)
    """
    return _jacobian(api.jacrev, fun, argnums, has_aux, **kwargs)


jacobian = jacrev

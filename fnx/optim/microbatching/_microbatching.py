"""Microbatching: split a batch axis, loop over the pieces, accumulate."""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
from typing import Callable

from ... import numpy as jnp
from ...core.api import eval_shape, value_and_grad, vmap
from ...core.control_flow import fori_loop
from ...core.pytree import tree_flatten, tree_leaves, tree_map

IndividualOutputs = collections.namedtuple("Aux", ["values", "metrics", "aux"])


@dataclasses.dataclass(frozen=True)
class Accumulator:
    """How one output is gathered over microbatches: ``init(example)`` makes the carry,
    ``update(carry, value, index)`` folds a microbatch in, ``finalize(carry)`` gives the
    result; ``aggregate(values)`` reduces a vmapped batch the same way.

    >>> total = Accumulator(jnp.zeros_like, lambda c, v, i: c + v, lambda c: c,
    ...                     lambda v: v.sum(0))
    >>> microbatch(lambda x: x.sum(), 0, 2, total)(jnp.arange(6.0))
    Array(15., dtype=float32)
    """
    init: Callable
    update: Callable
    finalize: Callable
    aggregate: Callable


class AccumulationType(enum.Enum):
    """The accumulations ``microbatch`` knows by name: the MEAN or SUM of the microbatches'
    results, their RUNNING_MEAN, or their CONCATenation along the batch axis.

    >>> AccumulationType.SUM.name
    'SUM'
    """
    MEAN = enum.auto()
    SUM = enum.auto()
    RUNNING_MEAN = enum.auto()
    CONCAT = enum.auto()


def _floating_only(fn):
    def checked(*args, **kwargs):
        bad = [x.dtype for x in tree_leaves((args, kwargs))
               if not jnp.issubdtype(x.dtype, jnp.floating)]
        if bad:
            raise ValueError(f"MEAN and RUNNING_MEAN accumulators need floating-point values, "
                             f"got {bad}")
        return fn(*args, **kwargs)
    return checked


def reshape_batch_axis(tree, microbatch_size: int, axis: int = 0):
    """Each leaf's ``axis`` split into (number of microbatches, ``microbatch_size``), in
    Fortran order: microbatch ``i`` holds the examples ``i, i + n, i + 2n, ...``.

    >>> reshape_batch_axis(jnp.arange(6), 2)
    Array([[0, 3],
           [1, 4],
           [2, 5]], dtype=int32)
    """
    return tree_map(lambda x: x.reshape(x.shape[:axis] + (-1, microbatch_size)
                                        + x.shape[axis + 1:], order="F"), tree)


def _lift(acc):
    """``acc`` applied leaf by leaf."""
    return Accumulator(lambda v: tree_map(acc.init, v),
                       lambda c, v, i: tree_map(lambda c, v: acc.update(c, v, i), c, v),
                       lambda c: tree_map(acc.finalize, c),
                       lambda v: tree_map(acc.aggregate, v))


def _sum():
    return _lift(Accumulator(jnp.zeros_like, lambda c, v, _: c + v, lambda c: c,
                             functools.partial(jnp.sum, axis=0)))


def _mean(n):
    if n <= 0:
        raise ValueError(f"the number of microbatches must be positive, got {n}")
    return _lift(Accumulator(_floating_only(jnp.zeros_like), lambda c, v, _: c + v,
                             lambda c: c / n, functools.partial(jnp.mean, axis=0)))


def _running_mean():
    def update(carry, value, index):
        p = index / (index + 1)
        return carry * p + value * (1 - p)
    return _lift(Accumulator(_floating_only(jnp.zeros_like), update, lambda c: c,
                             functools.partial(jnp.mean, axis=0)))


def _concat(n):
    if n <= 0:
        raise ValueError(f"the number of microbatches must be positive, got {n}")
    return _lift(Accumulator(
        lambda v: jnp.broadcast_to(jnp.zeros_like(v), (n,) + v.shape),
        lambda c, v, i: c.at[i].set(v),
        lambda c: c.reshape(-1, *c.shape[2:], order="F"),    # undoes reshape_batch_axis
        lambda v: v))


_BY_TYPE = {AccumulationType.MEAN: _mean, AccumulationType.SUM: lambda n: _sum(),
            AccumulationType.RUNNING_MEAN: lambda n: _running_mean(),
            AccumulationType.CONCAT: _concat}


def _is_acc(x):
    return isinstance(x, (Accumulator, AccumulationType))


def _canonicalize(tree, n):
    """One Accumulator for a tree of Accumulators and AccumulationTypes (one per output)."""
    def one(acc):
        if isinstance(acc, Accumulator):
            return acc
        if acc in _BY_TYPE:
            return _BY_TYPE[acc](n)
        raise ValueError(f"unknown accumulator: {acc!r}")
    accs = tree_map(one, tree, is_leaf=_is_acc)
    each = lambda f: lambda *trees: tree_map(f, accs, *trees, is_leaf=_is_acc)  # noqa: E731
    return Accumulator(each(lambda a, v: a.init(v)),
                       lambda c, v, i: tree_map(lambda a, c, v: a.update(c, v, i), accs, c, v,
                                                is_leaf=_is_acc),
                       each(lambda a, c: a.finalize(c)), each(lambda a, v: a.aggregate(v)))


def microbatch(fun, argnums, microbatch_size, accumulator=AccumulationType.SUM, *,
               argnames=(), in_axes=0, num_real_microbatches=None):
    """``fun`` evaluated on microbatches of ``microbatch_size`` examples of its batched
    arguments (positions ``argnums``, keywords ``argnames``, batch axes ``in_axes``) in a
    loop, its outputs combined by ``accumulator`` (``None`` size: ``fun`` itself);
    ``num_real_microbatches`` stops the loop early (padding batches).

    >>> mean = microbatch(jnp.mean, 0, 2, AccumulationType.MEAN)
    >>> mean(jnp.arange(8.0))
    Array(3.5, dtype=float32)
    """
    if microbatch_size is None:
        return fun
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    argnames = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    if isinstance(in_axes, int):
        in_axes = (in_axes,) * (len(argnums) + len(argnames))
    in_axes = tuple(in_axes)
    keys = list(argnums) + list(argnames)

    def microbatched(*args, **kwargs):
        slots = {"args": list(args), "kwargs": dict(kwargs)}

        def get(k):
            return slots["args"][k] if isinstance(k, int) else slots["kwargs"][k]
        sizes = tree_flatten([tree_map(lambda x, ax=ax: x.shape[ax], get(k))
                              for k, ax in zip(keys, in_axes)])[0]
        if len(set(sizes)) > 1:
            raise ValueError(f"microbatch: the batched arguments' batch axes differ: {sizes}")
        if sizes[0] % microbatch_size:
            raise ValueError(f"microbatch: batch size {sizes[0]} is not divisible by "
                             f"microbatch_size={microbatch_size}")
        split = {k: reshape_batch_axis(get(k), microbatch_size, ax)
                 for k, ax in zip(keys, in_axes)}
        n = sizes[0] // microbatch_size
        acc = _canonicalize(accumulator, n)

        def f(index):
            a, kw = list(args), dict(kwargs)
            for k, ax in zip(keys, in_axes):
                part = tree_map(functools.partial(jnp.take, indices=index, axis=ax), split[k])
                if isinstance(k, int):
                    a[k] = part
                else:
                    kw[k] = part
            return fun(*a, **kw)
        bound = n if num_real_microbatches is None else num_real_microbatches
        carry = fori_loop(0, bound, lambda i, c: acc.update(c, f(i), i),
                          acc.init(eval_shape(f, 0)))
        return acc.finalize(carry)
    return microbatched


def micro_vmap(fun, in_axes=0, out_axes=0, *, microbatch_size=None, vmap_fn=vmap,
               accumulator=AccumulationType.CONCAT, num_real_microbatches=None):
    """``vmap(fun, in_axes)`` run a microbatch at a time (keyword arguments are batched too);
    by default the per-example results are concatenated, as ``vmap``'s would be.

    >>> squares = micro_vmap(lambda x: x ** 2, microbatch_size=2)
    >>> squares(jnp.arange(4.0))
    Array([0., 1., 4., 9.], dtype=float32)
    """
    if out_axes != 0:
        raise NotImplementedError("micro_vmap: only out_axes=0 is supported")
    in_axes = (in_axes,) if isinstance(in_axes, int) else tuple(in_axes)

    def vmap_then_reduce(*args, kwargs):
        out = vmap_fn(fun, in_axes, out_axes)(*args, **kwargs)
        return _canonicalize(accumulator, tree_leaves(out)[0].shape[0]).aggregate(out)
    looped = microbatch(vmap_then_reduce,
                        argnums=tuple(i for i, ax in enumerate(in_axes) if ax is not None),
                        argnames="kwargs", microbatch_size=microbatch_size,
                        accumulator=accumulator,
                        in_axes=tuple(ax for ax in in_axes if ax is not None) + (0,),
                        num_real_microbatches=num_real_microbatches)
    return lambda *args, **kwargs: looped(*args, kwargs=kwargs)


def micro_grad(fun, has_aux: bool = False, argnums=0, *, batch_argnums=1,
               keep_batch_dim: bool = True, microbatch_size=None,
               accumulator=AccumulationType.SUM, transform_fn=lambda g: g,
               metrics_fn=lambda g: None, num_real_microbatches=None):
    """Per-example gradients of ``fun`` (batched arguments ``batch_argnums``), each passed
    through ``transform_fn`` (per-example clipping, say) and accumulated (summed by
    default), a microbatch at a time; returns ``(gradient, Aux(values, metrics, aux))``
    with the per-example values, ``metrics_fn`` of each gradient and auxiliary outputs.

    >>> g, aux = micro_grad(lambda w, x: jnp.sum(w * x), microbatch_size=1)(
    ...     jnp.ones(2), jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> g, aux.values
    (Array([4., 6.], dtype=float32), Array([3., 7.], dtype=float32))
    """
    batch_argnums = (batch_argnums,) if isinstance(batch_argnums, int) else batch_argnums
    with_aux = fun if has_aux else (lambda *a, **k: (fun(*a, **k), None))
    value_and_grad_fn = value_and_grad(with_aux, argnums, has_aux=True)

    def grad_fn(*args, **kwargs):
        (value, aux), grad = value_and_grad_fn(*args, **kwargs)
        return transform_fn(grad), IndividualOutputs(value, metrics_fn(grad), aux)
    in_axes = [None] * (max(batch_argnums) + 1)
    for i in batch_argnums:
        in_axes[i] = 0
    looped = micro_vmap(grad_fn, in_axes=in_axes,
                        accumulator=(accumulator, AccumulationType.CONCAT),
                        microbatch_size=microbatch_size,
                        num_real_microbatches=num_real_microbatches)
    if not keep_batch_dim:
        return looped

    def with_example_axis(*args, **kwargs):
        # each example keeps a batch axis of one, as the function expects
        args = [tree_map(lambda x: jnp.expand_dims(x, 1), a) if i in batch_argnums else a
                for i, a in enumerate(args)]
        return looped(*args, **kwargs)
    return with_example_axis

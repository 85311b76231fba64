"""Sums of products of expansions as contractions: ``sum_R prod_f broadcast(u_f)``, where the
factors split into two groups over different axes, is computed as each group's product reduced
over the axes only it has, then one ``dot_general`` over the axes both have.

This is what per-example gradient programs need: ``vmap`` of a weight gradient is an outer
product per example (``x[i, j] * d[i, k]``, never written: see ``outer_products_as_broadcasts``),
and the program then sums it over the batch after scaling each example (DP-SGD's clipped sum,
a GEMM over the batch: ``sum_i c[i] x[i, j] d[i, k]``) or squares and sums it per example (its
norm, ``sum_jk x[i, j]^2 d[i, k]^2 = (sum_j x[i, j]^2) (sum_k d[i, k]^2)``). Done as written,
each is a pass over ``batch * in * out`` products; as contractions, a GEMM and two row sums.
The results differ from the written order of summation by rounding only; products are taken at
full precision (``Precision.HIGHEST``), as the elementwise products were.
"""
from __future__ import annotations

import math

from ..core import lax
from ..core.core import ShapedArray
from ..core.jaxpr import Literal, Var

_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def products_as_contractions(eqns, outvars=()) -> list:
    """``eqns`` with each sum of a product of expansions over two groups of axes computed as a
    contraction (the module docstring says which).

    >>> f = lambda c, x, d: (c[:, None, None] * x[:, :, None] * d[:, None, :]).sum(0)
    >>> j = fnx.make_jaxpr(f)(jnp.ones(8), jnp.ones((8, 3)), jnp.ones((8, 2))).jaxpr
    >>> [e.primitive.name for e in products_as_contractions(j.eqns)][-2:]
    ['mul', 'dot_general']
    """
    producer = {v: e for e in eqns for v in e.outvars}
    out = []
    for e in eqns:
        new = _as_contraction(e, producer)
        out.extend(new if new is not None else [e])
    return out


class _Factor:
    """One factor of the product: ``source`` broadcast along ``dims`` (its axes in the product's
    space, one per axis of ``source``); a scalar has none."""

    def __init__(self, source, dims):
        self.source, self.dims = source, tuple(dims)
        self.axes = frozenset(dims)


def _factors(v, producer, depth=0):
    """The factors whose product is ``v``, or None if ``v`` is not such a product."""
    e = producer.get(v) if isinstance(v, Var) else None
    if depth > 32:
        return None
    if e is not None and e.primitive is lax.mul_p:
        parts = [_factors(a, producer, depth + 1) for a in e.invars]
        return None if any(p is None for p in parts) else parts[0] + parts[1]
    if e is not None and e.primitive is lax.integer_pow_p and 1 <= e.params["y"] <= 4:
        inner = _factors(e.invars[0], producer, depth + 1)
        return None if inner is None else inner * e.params["y"]
    if isinstance(v, Literal) or v.aval.shape == ():
        return [_Factor(v, ())]
    if e is not None and e.primitive is lax.broadcast_in_dim_p:
        u = e.invars[0]
        keep = [i for i, n in enumerate(u.aval.shape) if n != 1]
        dims = [e.params["broadcast_dimensions"][i] for i in keep]
        sizes = [u.aval.shape[i] for i in keep]
        made = producer.get(u)
        if len(keep) == u.aval.ndim:
            return [_Factor(u, dims)]
        if made is not None and made.primitive is lax.reshape_p and isinstance(
                made.invars[0], Var) and tuple(made.invars[0].aval.shape) == tuple(sizes):
            return [_Factor(made.invars[0], dims)]     # x[:, None] broadcast: x itself
        return [_Factor((u, sizes), dims)]
    return [_Factor(v, range(v.aval.ndim))]


def _split(factors):
    """Two groups of factors, each over axes the other does not cover, or None."""
    order = sorted(factors, key=lambda f: -len(f.axes))
    a_axes, b_axes = order[0].axes, None
    for f in order[1:]:
        if not f.axes <= a_axes:
            b_axes = f.axes
            break
    if b_axes is None:
        return None
    a, b = [], []
    for f in factors:
        if f.axes <= a_axes:
            a.append(f)
        elif f.axes <= b_axes:
            b.append(f)
        else:
            return None
    return (a, a_axes), (b, b_axes)


def _as_contraction(e, producer):
    if e.primitive is not lax.reduce_sum_p or not isinstance(e.invars[0], Var):
        return None
    v, z = e.invars[0], e.outvars[0]
    if v.aval.dtype.name not in _FLOATS:
        return None
    factors = _factors(v, producer)
    if factors is None or len(factors) < 2:
        return None
    groups = _split(factors)
    if groups is None:
        return None
    (fa, sa), (fb, sb) = groups
    shape = tuple(v.aval.shape)
    summed = frozenset(e.params["axes"])
    if not summed <= sa | sb:
        return None
    size = lambda axes: math.prod(shape[a] for a in axes)  # noqa: E731
    if size(range(len(shape))) < 4 * (size(sa) + size(sb)):
        return None     # the products are not much more than the factors: nothing to gain
    new: list = []
    dtype = v.aval.dtype

    def var(axes_shape):
        return Var(ShapedArray(tuple(axes_shape), dtype))

    def emit(primitive, invars, params, out_shape, outvar=None):
        outvar = outvar if outvar is not None else var(out_shape)
        new.append(e.replace(primitive=primitive, invars=list(invars), outvars=[outvar],
                             params=params))
        return outvar

    def group_value(group, axes, other):
        """The group's product over its axes, summed over the summed axes only it has:
        (value, its axes in order)."""
        axes = sorted(axes)
        space = [shape[a] for a in axes]
        value = None
        for f in group:
            src = f.source
            if isinstance(src, tuple):      # size-1 axes dropped first
                src = emit(lax.reshape_p, [src[0]], {"new_sizes": tuple(src[1])}, src[1])
            if not (f.dims == tuple(axes) and not isinstance(src, Literal)):
                src = emit(lax.broadcast_in_dim_p, [src],
                           {"shape": tuple(space),
                            "broadcast_dimensions": tuple(axes.index(d) for d in f.dims)},
                           space)
            value = src if value is None else emit(lax.mul_p, [value, src], {}, space)
        own = [a for a in axes if a in summed and a not in other]
        if own:
            kept = [a for a in axes if a not in own]
            value = emit(lax.reduce_sum_p, [value], {"axes": tuple(axes.index(a) for a in own)},
                         [shape[a] for a in kept])
            axes = kept
        return value, axes

    a, a_axes = group_value(fa, sa, sb)
    b, b_axes = group_value(fb, sb, sa)
    kept = [d for d in range(len(shape)) if d not in summed]
    both = [d for d in a_axes if d in b_axes]
    contract = [d for d in both if d in summed]
    batch = [d for d in both if d not in summed]
    if contract:
        a_free = [d for d in a_axes if d not in both]
        b_free = [d for d in b_axes if d not in both]
        axes = batch + a_free + b_free
        dn = (([a_axes.index(d) for d in contract], [b_axes.index(d) for d in contract]),
              ([a_axes.index(d) for d in batch], [b_axes.index(d) for d in batch]))
        dn = tuple(tuple(tuple(x) for x in pair) for pair in dn)
        value = emit(lax.dot_general_p, [a, b],
                     {"dimension_numbers": dn, "precision": "highest",
                      "preferred_element_type": dtype}, [shape[d] for d in axes])
        if axes != sorted(axes):
            perm = tuple(axes.index(d) for d in sorted(axes))
            axes = sorted(axes)
            value = emit(lax.transpose_p, [value], {"permutation": perm},
                         [shape[d] for d in axes])
    else:       # nothing summed by both: the product of the two, broadcast
        axes = sorted(set(a_axes) | set(b_axes))
        space = [shape[d] for d in axes]
        wide = [emit(lax.broadcast_in_dim_p, [x], {"shape": tuple(space),
                     "broadcast_dimensions": tuple(axes.index(d) for d in x_axes)}, space)
                for x, x_axes in ((a, a_axes), (b, b_axes))]
        value = emit(lax.mul_p, wide, {}, space)
    if axes == kept:
        new[-1] = new[-1].replace(outvars=[z])
    else:
        emit(lax.broadcast_in_dim_p, [value],
             {"shape": tuple(z.aval.shape),
              "broadcast_dimensions": tuple(kept.index(d) for d in axes)}, None, outvar=z)
    return new

"""jax.lax functions composed from fnx's primitives: ``reduce`` with a recognised monoid,
``sort_key_val``, bit counting, ``reduce_precision``, shape helpers. Composed, so grad, vmap and
jit follow from the primitives' rules.

>>> lax.reduce(x, 0.0, lax.add, (0,))
>>> lax.population_count(jnp.array([7, 8], jnp.uint8))
Array([3, 1], dtype=uint8)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core import lax
from ..core.api import ShapeDtypeStruct, eval_shape, make_jaxpr
from ..core.convolution import conv_general_dilated
from ..core.custom_derivatives import custom_jvp
from ..core.core import get_aval
from ..core.pytree import tree_flatten, tree_unflatten

# ---------------------------------------------------------------------------------------------
# reduce with a monoid

# the reduction primitive for each binary primitive a reducer may be
_MONOIDS = {lax.add_p: lax.reduce_sum, lax.mul_p: lax.reduce_prod, lax.max_p: lax.reduce_max,
            lax.min_p: lax.reduce_min, lax.or_p: lax.reduce_or, lax.and_p: lax.reduce_and}


def _monoid(computation, aval):
    """The binary primitive ``computation`` is, found by tracing it on two scalars: a jaxpr of
    one equation combining its two inputs (``lax.add``, ``jnp.maximum``, ``lambda a, b: a * b``
    all qualify). None for anything else."""
    scalar = ShapeDtypeStruct((), aval.dtype)
    try:
        closed = make_jaxpr(computation)(scalar, scalar)
    except Exception:       # a reducer that does not trace on scalars is no monoid we know
        return None
    jaxpr = closed.jaxpr
    if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
        return None
    eqn = jaxpr.eqns[0]
    if eqn.primitive not in _MONOIDS or eqn.outvars[0] is not jaxpr.outvars[0] \
            or set(map(id, eqn.invars)) != set(map(id, jaxpr.invars)):
        return None
    return eqn.primitive


def reduce(operands, init_values, computation, dimensions):
    """Reduce ``operands`` over ``dimensions`` with ``computation``, starting from
    ``init_values``. A monoid fnx recognises (addition, multiplication, maximum, minimum,
    or/and, as a lax or fnx.numpy function or a lambda) becomes one reduction; any other
    reducer, and variadic ones over a pytree of operands (``computation((a, b), (c, d))``), is
    applied to halves of the operands until one element is left, so it must be associative and
    commutative, as XLA requires.

    >>> lax.reduce(jnp.arange(6.0).reshape(2, 3), 0.0, lax.add, (1,))
    Array([ 3., 12.], dtype=float32)
    >>> def larger(a, b):                 # (value, index) pairs: an argmax
    ...     (va, ia), (vb, ib) = a, b
    ...     take_a = (va > vb) | ((va == vb) & (ia < ib))
    ...     return jnp.where(take_a, va, vb), jnp.where(take_a, ia, ib)
    >>> lax.reduce((jnp.array([3.0, 7.0, 5.0]), jnp.arange(3)), (-jnp.inf, 0), larger, (0,))
    (Array(7., dtype=float32), Array(1, dtype=int32))
    """
    leaves, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if len(inits) != len(leaves):
        raise ValueError(f"reduce got {len(leaves)} operands and {len(inits)} init values")
    aval = get_aval(leaves[0])
    dims = tuple(int(d) % aval.ndim for d in dimensions) if aval.ndim else ()
    prim = _monoid(computation, aval) if len(leaves) == 1 else None
    if prim is None:
        return _reduce_by_halves(leaves, inits, tree, computation, dims)
    out = _MONOIDS[prim](leaves[0], dims)
    # the init value joins once: the result of XLA's reduce for an identity init, and the
    # reducer's fold over init and the operands for any other
    init = lax.convert_element_type(inits[0], aval.dtype)
    out = prim.bind(out, init)
    return tree_unflatten(tree, [out])


def _reduce_by_halves(leaves, inits, tree, computation, dims):
    """``computation`` over pytrees of arrays, combining the first and second halves of the
    reduced elements (flattened into a leading axis) until one is left, then the init."""
    shape = get_aval(leaves[0]).shape
    kept = [d for d in range(len(shape)) if d not in dims]
    kept_shape = tuple(shape[d] for d in kept)
    n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    xs = [lax.reshape(lax.transpose(x, tuple(dims) + tuple(kept)), (n,) + kept_shape)
          for x in leaves]
    inits = [lax.broadcast_in_dim(lax.convert_element_type(i, get_aval(x).dtype), kept_shape, ())
             for i, x in zip(inits, leaves)]

    def combine(a, b):
        out, out_tree = tree_flatten(computation(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if out_tree != tree:
            raise TypeError(f"lax.reduce: {_name(computation)} returned {out_tree}, but the "
                            f"operands are {tree}")
        return [lax.convert_element_type(o, get_aval(x).dtype) for o, x in zip(out, a)]
    while n > 1:
        if n % 2:       # the init stands in for the missing partner of the last element
            xs = [lax.concatenate([x, lax.reshape(i, (1,) + kept_shape)], 0)
                  for x, i in zip(xs, inits)]
            n += 1
        n //= 2
        xs = combine([lax.slice_in_dim(x, 0, n, axis=0) for x in xs],
                     [lax.slice_in_dim(x, n, 2 * n, axis=0) for x in xs])
    if n == 0:
        return tree_unflatten(tree, inits)
    return tree_unflatten(tree, combine(inits, [lax.reshape(x, kept_shape) for x in xs]))


def _name(f) -> str:
    return getattr(f, "__name__", repr(f))


# ---------------------------------------------------------------------------------------------
# Sorting


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """``keys`` sorted along ``dimension`` and ``values`` permuted the same way.

    >>> lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([0.0, 1.0, 2.0]))
    (Array([1, 2, 3], dtype=int32), Array([1., 2., 0.], dtype=float32))
    """
    return lax.sort((keys, values), dimension, is_stable=is_stable, num_keys=1)


# ---------------------------------------------------------------------------------------------
# Bits


def _as_unsigned(x):
    """``x``'s bits as the unsigned integer of its width (for signed operands)."""
    dt = get_aval(x).dtype
    if not dtypes.is_int(dt):
        raise TypeError(f"expected an integer operand, got {dt}")
    return lax.bitcast_convert_type(x, np.dtype(f"uint{8 * dt.itemsize}")) if dt.kind == "i" \
        else x


def population_count(x):
    """The number of set bits of each element of the integer array ``x`` (its dtype).

    >>> lax.population_count(jnp.array([0, 7, -1], jnp.int8))
    Array([0, 3, 8], dtype=int8)
    """
    dt = get_aval(x).dtype
    u = _as_unsigned(x)
    udt = get_aval(u).dtype
    bits = 8 * udt.itemsize

    def c(v):
        return lax.full((), v, udt)

    # SWAR: counts of 2, 4, 8 bits side by side, then the bytes summed by a multiply
    u = lax.sub(u, lax.bitwise_and(lax.shift_right_logical(u, c(1)), c(0x5555555555555555
                                                                         & (2 ** bits - 1))))
    m3 = c(0x3333333333333333 & (2 ** bits - 1))
    u = lax.add(lax.bitwise_and(u, m3), lax.bitwise_and(lax.shift_right_logical(u, c(2)), m3))
    u = lax.bitwise_and(lax.add(u, lax.shift_right_logical(u, c(4))),
                        c(0x0F0F0F0F0F0F0F0F & (2 ** bits - 1)))
    if bits > 8:
        u = lax.shift_right_logical(lax.mul(u, c(0x0101010101010101 & (2 ** bits - 1))),
                                    c(bits - 8))
    return lax.convert_element_type(u, dt)


def clz(x):
    """The number of leading zero bits of each element of the integer array ``x``.

    >>> lax.clz(jnp.array([1, 0, -1], jnp.int32))
    Array([31, 32,  0], dtype=int32)
    """
    dt = get_aval(x).dtype
    u = _as_unsigned(x)
    udt = get_aval(u).dtype
    shift = 1
    while shift < 8 * udt.itemsize:      # smear the highest set bit into every lower bit
        u = lax.bitwise_or(u, lax.shift_right_logical(u, lax.full((), shift, udt)))
        shift *= 2
    return population_count(lax.convert_element_type(lax.bitwise_not(u), dt)
                            if dt.kind == "u" else lax.bitcast_convert_type(lax.bitwise_not(u),
                                                                            dt))


# ---------------------------------------------------------------------------------------------
# reduce_precision


def _float_layout(dtype):
    """(exponent bits, mantissa bits) of a float dtype."""
    info = dtypes.finfo(dtype)
    return int(info.nexp), int(info.nmant)


def _round_bits(x, exponent_bits, mantissa_bits):
    aval = get_aval(x)
    src_exp, src_mant = _float_layout(aval.dtype)
    nbits = 8 * aval.dtype.itemsize
    udt = np.dtype(f"uint{nbits}")
    bits = lax.bitcast_convert_type(x, udt)

    def c(v):
        return lax.full((), v, udt)
    if mantissa_bits < src_mant:
        # round to nearest, ties to even, at the last kept mantissa bit (XLA's algorithm)
        drop = src_mant - mantissa_bits
        last = 1 << drop
        last_bit = lax.shift_right_logical(lax.bitwise_and(bits, c(last)), c(drop))
        bias = lax.add(last_bit, c((last >> 1) - 1))
        bits = lax.bitwise_and(lax.add(bits, bias), c(~(last - 1) & (2 ** nbits - 1)))
    if exponent_bits < src_exp:
        sign_mask = 1 << (nbits - 1)
        exp_mask = ((1 << src_exp) - 1) << src_mant
        bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = lax.bitwise_and(bits, c(exp_mask))
        overflows = lax.gt(exponent, c((bias + reduced_bias) << src_mant))
        underflows = lax.le(exponent, c((bias - reduced_bias) << src_mant))
        signed_zero = lax.bitwise_and(bits, c(sign_mask))
        signed_inf = lax.bitwise_or(signed_zero, c(exp_mask))
        bits = lax.select(overflows, signed_inf, lax.select(underflows, signed_zero, bits))
    out = lax.bitcast_convert_type(bits, aval.dtype)
    if mantissa_bits < src_mant:      # a NaN stays a NaN (rounding could carry it to inf)
        out = lax.select(lax.ne(x, x), x, out)
    return out


_reduce_precision = custom_jvp(_round_bits, nondiff_argnums=(1, 2))


@_reduce_precision.defjvp
def _reduce_precision_jvp(exponent_bits, mantissa_bits, primals, tangents):
    # the tangent passes unrounded: rounding it (JAX's rule) is built of bit operations that
    # have no transpose, and would keep grad from working
    return _reduce_precision(primals[0], exponent_bits, mantissa_bits), tangents[0]


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """``operand`` rounded to a float format with ``exponent_bits`` and ``mantissa_bits``
    (round to nearest even; overflow to inf), in ``operand``'s dtype. Unlike JAX, its derivative
    is 1 (JAX rounds the tangent too), and values below the format's smallest normal number
    flush to zero (XLA rounds them to the format's subnormals).

    >>> lax.reduce_precision(jnp.float32(1.0 + 2 ** -10), exponent_bits=8, mantissa_bits=7)
    Array(1., dtype=float32)
    """
    aval = get_aval(operand)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"reduce_precision takes a float operand, got {aval.dtype}")
    return _reduce_precision(operand, int(exponent_bits), int(mantissa_bits))


# ---------------------------------------------------------------------------------------------
# Shapes


def broadcast_shapes(*shapes):
    """The shape ``shapes`` broadcast to, by NumPy's rules.

    >>> lax.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    return tuple(int(d) for d in np.broadcast_shapes(*map(tuple, shapes)))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    """The output shape of ``conv_general_dilated`` for these operand shapes.

    >>> lax.conv_general_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), "SAME", None)
    (1, 4, 8, 8)
    """
    return conv_shape(lhs_shape, rhs_shape, window_strides, padding,
                      dimension_numbers=dimension_numbers)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """The output shape (NCHW) of a convolution with explicit ``pads``.

    >>> lax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 2, 2), (2, 2), [(0, 1), (1, 0)])
    (2, 4, 5, 5)
    """
    return conv_shape(lhs_shape, rhs_shape, strides, pads, batch_group_count=batch_group_count)


def conv_shape(lhs_shape, rhs_shape, window_strides, padding, **conv_params):
    """The shape ``conv_general_dilated`` gives, found by tracing it on shapes alone."""
    lhs = ShapeDtypeStruct(tuple(lhs_shape), np.float32)
    rhs = ShapeDtypeStruct(tuple(rhs_shape), np.float32)
    out = eval_shape(lambda a, b: conv_general_dilated(a, b, tuple(window_strides), padding,
                                                       **conv_params), lhs, rhs)
    return tuple(out.shape)


# ---------------------------------------------------------------------------------------------
# Small structural helpers


def split(operand, sizes, axis: int = 0):
    """``operand`` cut along ``axis`` into consecutive pieces of the given ``sizes``.

    >>> lax.split(jnp.arange(5), (2, 3))
    (Array([0, 1], dtype=int32), Array([2, 3, 4], dtype=int32))
    """
    aval = get_aval(operand)
    axis = int(axis) % aval.ndim
    if sum(sizes) != aval.shape[axis]:
        raise ValueError(f"split sizes {tuple(sizes)} do not add up to the axis length "
                         f"{aval.shape[axis]}")
    starts = np.cumsum((0,) + tuple(sizes))
    return tuple(lax.slice_in_dim(operand, int(a), int(b), axis=axis)
                 for a, b in zip(starts[:-1], starts[1:]))


def optimization_barrier(operand):
    """``operand`` unchanged. In XLA it keeps computations from moving across it; fnx's
    optimizing passes respect data dependence already, so this is the identity.

    >>> lax.optimization_barrier((jnp.ones(2), 3.0))
    (Array([1., 1.], dtype=float32), 3.0)
    """
    return operand


__all__ = ["reduce", "sort_key_val", "population_count", "clz", "reduce_precision",
           "broadcast_shapes", "conv_general_shape_tuple", "conv_shape_tuple", "split",
           "optimization_barrier"]

"""Convolutions and windowed reductions, as JAX's ``lax`` has them.

A convolution is one primitive, ``conv_general_dilated_p``, with JAX's rules: its JVP is
bilinear, its transposes are convolutions (so ``grad`` of a conv net is convolutions too) and
vmap folds the mapped axis into the batch or the features. Backends compute it by its
decomposition, ``im2col``, or by a library (cuDNN).

``im2col`` and ``reduce_window`` gather windows the same way: ``pad`` the input (its interior
padding dilates it), take one strided ``slice`` per window offset, then combine the slices: a
single ``dot_general`` for a convolution, a pairwise reduction for ``reduce_window``.

>>> import fnx.lax as lax
>>> lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
>>> lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")   # max pooling
"""
from __future__ import annotations

import itertools
import math
import operator
from typing import NamedTuple, Sequence

import numpy as np

from . import dtypes, lax
from .ad_util import Zero, defjvp, is_undefined
from .core import ShapedArray, get_aval
from .errors import DTypeError, ShapeError
from .lax import not_mapped


class ConvDimensionNumbersError(ShapeError, TypeError):
    """Malformed convolution ``dimension_numbers`` (JAX raises TypeError for these, so this is
    both a ShapeError and a TypeError).

    >>> try:
    ...     lax.conv_general_dilated(jnp.ones((1, 1, 3, 3)), jnp.ones((1, 1, 2, 2)), (1, 1),
    ...                              "VALID", dimension_numbers=("NCHW", "OIHW", "NCXY"))
    ... except lax.ConvDimensionNumbersError as e:
    ...     print(type(e).__name__)
    ConvDimensionNumbersError
    """


class ConvDimensionNumbers(NamedTuple):
    """Where a convolution's dimensions are: ``lhs_spec`` is (batch, feature, spatial...) axes
    of the input, ``rhs_spec`` (out feature, in feature, spatial...) axes of the kernel,
    ``out_spec`` (batch, feature, spatial...) axes of the output.

    >>> ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))   # NHWC, HWIO, NHWC
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


# =============================================================================================
# Dimension numbers and padding


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """``dimension_numbers`` (None, a ConvDimensionNumbers, or three layout strings) as a
    ConvDimensionNumbers of axis indices.

    >>> conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if len(lhs_shape) != len(rhs_shape):
        raise ShapeError(f"convolution lhs and rhs need the same rank, got lhs shape "
                         f"{lhs_shape} and rhs shape {rhs_shape}")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3 \
            or not all(isinstance(s, str) for s in dimension_numbers):
        raise ConvDimensionNumbersError(
            f"convolution dimension_numbers must be None, a ConvDimensionNumbers or three "
            f"strings such as ('NCHW', 'OIHW', 'NCHW'), got {dimension_numbers!r}")
    for spec in dimension_numbers:
        if len(spec) != len(lhs_shape):
            raise ConvDimensionNumbersError(
                f"convolution dimension_numbers {tuple(dimension_numbers)}: {spec!r} has "
                f"{len(spec)} letters, lhs shape {lhs_shape} and rhs shape {rhs_shape} have "
                f"{len(lhs_shape)} dimensions")
    return ConvDimensionNumbers(*_spec_permutations(tuple(dimension_numbers)))


def _spec_permutations(specs):
    """Axis indices of three layout strings; spatial axes in the order the kernel's string
    names them (JAX's convention, which decides which stride goes with which axis)."""
    lhs, rhs, out = specs
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for spec, (a, b) in zip(specs, pairs):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise ConvDimensionNumbersError(
                f"convolution dimension_numbers {specs}: {spec!r} must contain {a!r} and "
                f"{b!r} exactly once and no letter twice")
    spatial = [set(s) - set(p) for s, p in zip(specs, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise ConvDimensionNumbersError(
            f"convolution dimension_numbers {specs} must name the same spatial dimensions "
            f"in all three strings")
    order = [c for c in rhs if c not in "OI"]
    return tuple((spec.index(a), spec.index(b)) + tuple(spec.index(c) for c in order)
                 for spec, (a, b) in zip(specs, pairs))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """(low, high) padding per dimension for "SAME", "SAME_LOWER" or "VALID": SAME pads so
    that the output has ceil(size / stride) elements, the odd element going high (SAME) or
    low (SAME_LOWER).

    >>> padtype_to_pads((5,), (3,), (2,), "SAME")
    ((1, 1),)
    """
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or (low, high) "
                         f"pairs, got {padding!r}")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return tuple(pads)


def _explicit_pads(name, padding, ndim):
    try:
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or a "
                         f"sequence of (low, high) integer pairs, got {padding!r}") from e
    if len(pads) != ndim:
        raise ShapeError(f"{name}: padding {padding!r} needs {ndim} (low, high) pairs")
    return pads


def _ints(name, what, values, n, default=1):
    values = (default,) * n if values is None else tuple(operator.index(v) for v in values)
    if len(values) != n:
        raise ShapeError(f"{name}: {what} {values} needs {n} entries")
    if any(v < 1 for v in values):
        raise ValueError(f"{name}: {what} must be positive, got {values}")
    return values


def _dilated(size, factor):
    return 0 if size == 0 else (size - 1) * factor + 1


# =============================================================================================
# Windows (im2col)


def _windows(name, x, pad_value, window, strides, pads, base_dilation, window_dilation,
             context):
    """One strided slice of ``x`` per window offset (row-major over the window): slice k holds,
    for every output position, the element at offset k of that position's window. ``x`` is
    dilated by ``base_dilation`` and padded by ``pads`` (negative pads crop) with
    ``pad_value`` first. ``context`` names the user's shapes in the error."""
    # lax.pad takes no negative padding: pad by the positive parts, crop the negative ones
    config = [(max(lo, 0), max(hi, 0), d - 1) for (lo, hi), d in zip(pads, base_dilation)]
    if any(c != (0, 0, 0) for c in config):
        x = lax.pad(x, pad_value, config)
    sizes = get_aval(x).shape
    begin = [max(-lo, 0) for lo, _ in pads]
    end = [n - max(-hi, 0) for n, (_, hi) in zip(sizes, pads)]
    spans = [_dilated(k, d) for k, d in zip(window, window_dilation)]
    if any(e - b < k for b, e, k in zip(begin, end, spans)):
        padded = tuple(e - b for b, e in zip(begin, end))
        raise ShapeError(f"{name}: the window of size {tuple(spans)} does not fit the padded "
                         f"input of size {padded} ({context})")
    out = [(e - b - k) // s + 1 for b, e, k, s in zip(begin, end, spans, strides)]
    slices = []
    for offset in itertools.product(*(range(k) for k in window)):
        starts = [b + o * d for b, o, d in zip(begin, offset, window_dilation)]
        limits = [st + (n - 1) * s + 1 for st, n, s in zip(starts, out, strides)]
        slices.append(lax.slice(x, starts, limits, strides))
    return slices


def _stack(xs, axis):
    """The equal-shaped ``xs`` stacked along a new ``axis``."""
    shape = list(get_aval(xs[0]).shape)
    shape.insert(axis, 1)
    return lax.concatenate([lax.reshape(x, shape) for x in xs], axis)


# =============================================================================================
# Convolution: the public function validates and normalises, then binds the primitive


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """N-d convolution (cross-correlation, as deep-learning libraries mean it) of ``lhs`` with
    the kernel ``rhs``, with strides, padding, input (transposed-convolution) and kernel
    (atrous) dilation, any layout, feature groups (grouped, depthwise convolution) and batch
    groups.

    >>> x, w = jnp.ones((2, 3, 8, 8)), jnp.ones((4, 3, 3, 3))         # NCHW, OIHW
    >>> conv_general_dilated(x, w, (2, 2), "SAME", rhs_dilation=(2, 2)).shape
    (2, 4, 4, 4)
    """
    name = "conv_general_dilated"
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    nsp = lhs_aval.ndim - 2
    if nsp < 0:
        raise ShapeError(f"{name}: lhs of shape {lhs_aval.shape} needs batch and feature "
                         f"dimensions")
    strides = _ints(name, "window_strides", window_strides, nsp)
    lhs_dilation = _ints(name, "lhs_dilation", lhs_dilation, nsp)
    rhs_dilation = _ints(name, "rhs_dilation", rhs_dilation, nsp)
    if isinstance(padding, str):
        if lhs_dilation != (1,) * nsp:
            raise ValueError(f"{name}: string padding {padding!r} with lhs_dilation "
                             f"{lhs_dilation}: pass explicit (low, high) pairs, or use "
                             f"conv_transpose")
        in_sp = [lhs_aval.shape[a] for a in dn.lhs_spec[2:]]
        k_sp = [rhs_aval.shape[a] for a in dn.rhs_spec[2:]]
        pads = padtype_to_pads(in_sp, map(_dilated, k_sp, rhs_dilation), strides, padding)
    else:
        pads = _explicit_pads(name, padding, nsp)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize(preferred_element_type, name)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(*(tuple(map(int, s)) for s in dn)),
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=lax.canonicalize_precision(precision),
        preferred_element_type=preferred_element_type)


# =============================================================================================
# The primitive and its rules. Params, all explicit: window_strides, padding ((lo, hi) pairs),
# lhs_dilation, rhs_dilation (tuples of ints), dimension_numbers (ConvDimensionNumbers of int
# tuples), feature_group_count, batch_group_count, precision (dot_general's), and
# preferred_element_type (a dtype or None).

conv_general_dilated_p = lax.primitive("conv_general_dilated")


def _conv_aval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision=None,
               preferred_element_type=None):
    name = "conv_general_dilated"
    if lhs.dtype != rhs.dtype:
        raise DTypeError(f"{name}: lhs and rhs need the same dtype, got {lhs.dtype} and "
                         f"{rhs.dtype}")
    dn = dimension_numbers
    n, c, *in_sp = (lhs.shape[a] for a in dn.lhs_spec)
    o, i, *k_sp = (rhs.shape[a] for a in dn.rhs_spec)
    shapes = f"lhs shape {tuple(lhs.shape)}, rhs shape {tuple(rhs.shape)}"
    _check_groups(name, shapes, n, c, o, i, feature_group_count, batch_group_count)
    padded = [_dilated(s, d) + lo + hi
              for s, d, (lo, hi) in zip(in_sp, lhs_dilation, padding)]
    spans = [_dilated(k, d) for k, d in zip(k_sp, rhs_dilation)]
    if any(p < k for p, k in zip(padded, spans)):
        raise ShapeError(f"{name}: the window of size {(1, 1) + tuple(spans)} does not fit "
                         f"the padded input of size {(n, c) + tuple(padded)} ({shapes}, "
                         f"padding {tuple(padding)})")
    out_sp = [(p - k) // s + 1 for p, k, s in zip(padded, spans, window_strides)]
    canonical = (n // batch_group_count, o, *out_sp)
    shape = [0] * len(canonical)
    for j, axis in enumerate(dn.out_spec):
        shape[axis] = canonical[j]
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(tuple(shape), dtype, lhs.weak_type and rhs.weak_type)


def _check_groups(name, shapes, n, c, o, i, feature_groups, batch_groups):
    """XLA's rules for feature and batch groups, in terms of the canonical sizes: n batch
    elements, c features, o kernel output features, i kernel input features."""
    if batch_groups != 1:
        if feature_groups != 1:
            raise ValueError(f"{name}: feature_group_count {feature_groups} and "
                             f"batch_group_count {batch_groups} cannot both be above 1")
        if batch_groups < 1 or n % batch_groups or o % batch_groups:
            raise ShapeError(f"{name}: batch_group_count {batch_groups} must divide the {n} "
                             f"lhs batch elements and the {o} rhs output features ({shapes})")
        if c != i:
            raise ShapeError(f"{name}: lhs has {c} features, rhs {i} input features "
                             f"({shapes})")
        return
    if feature_groups < 1 or c % feature_groups:
        raise ShapeError(f"{name}: feature_group_count {feature_groups} does not divide the "
                         f"{c} lhs features ({shapes})")
    if c // feature_groups != i:
        raise ShapeError(f"{name}: lhs has {c} features in {feature_groups} group(s), so rhs "
                         f"needs {c // feature_groups} input features, it has {i} ({shapes})")
    if o % feature_groups:
        raise ShapeError(f"{name}: feature_group_count {feature_groups} does not divide the "
                         f"{o} rhs output features ({shapes})")


def _pp_conv_params(params):
    # a NamedTuple prints by its fields, as JAX prints ConvDimensionNumbers
    return dict(params, dimension_numbers=repr(params["dimension_numbers"]))


conv_general_dilated_p.abstract_eval = _conv_aval
conv_general_dilated_p.pp_params = _pp_conv_params
defjvp(conv_general_dilated_p,
       lambda t, lhs, rhs, **p: conv_general_dilated_p.bind(t, rhs, **p),
       lambda t, lhs, rhs, **p: conv_general_dilated_p.bind(lhs, t, **p))


# ---------------------------------------------------------------------------------------------
# Transposes, as JAX's. Ignoring spatial axes, with m batch, j input and k output features,
# a convolution is the product [m, j] [j, k] -> [m, k], so the lhs cotangent is
# [m, k] [k, j] -> [m, j] (the kernel with its feature roles swapped and its window reversed,
# the cotangent dilated by the forward strides) and the kernel cotangent [j, m] [m, k] -> [j, k]
# (the input with batch and features swapped, the cotangent as the kernel). Feature groups in
# the forward convolution are batch groups of the kernel cotangent, and the reverse.


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
    pads = []
    for n, k, s, m, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                            lhs_dilation, rhs_dilation):
        before = _dilated(k, rd) - lo - 1
        after = _dilated(n, ld) + _dilated(k, rd) - 1 - _dilated(m, s) - before
        pads.append((before, after))
    return tuple(pads)


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
    pads = []
    for n, k, s, m, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                            lhs_dilation, rhs_dilation):
        high = _dilated(m, s) - _dilated(n, ld) + _dilated(k, rd) - lo - 1
        pads.append((lo, high))
    return tuple(pads)


def _spatial(shape, spec):
    return [shape[a] for a in spec[2:]]


def _as_dtype(x, dtype):
    return x if get_aval(x).dtype == dtype else lax.convert_element_type(x, dtype)


def _conv_transpose_lhs(g, lhs_aval, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision, preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = get_aval(rhs).shape
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:
        # the groups move from the kernel's output features to its input features, which
        # are the transposed convolution's output features
        rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    pads = _vjp_lhs_padding(_spatial(lhs_aval.shape, lhs_spec), _spatial(rhs_shape, rhs_spec),
                            window_strides, _spatial(get_aval(g).shape, out_spec), padding,
                            lhs_dilation, rhs_dilation)
    kernel = _as_dtype(lax.rev(rhs, rhs_spec[2:]), get_aval(g).dtype)
    out = conv_general_dilated_p.bind(
        g, kernel, window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides,
        rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision,
        preferred_element_type=preferred_element_type)
    out = _as_dtype(out, lhs_aval.dtype)
    if batch_group_count > 1:
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_transpose_rhs(g, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision, preferred_element_type):
    if math.prod(get_aval(g).shape) == 0:
        return Zero(rhs_aval)     # no degenerate convolution with an empty kernel
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pads = _vjp_rhs_padding(_spatial(get_aval(lhs).shape, lhs_spec),
                            _spatial(rhs_aval.shape, rhs_spec), window_strides,
                            _spatial(get_aval(g).shape, out_spec), padding, lhs_dilation,
                            rhs_dilation)
    out = conv_general_dilated_p.bind(
        _as_dtype(lhs, get_aval(g).dtype), g, window_strides=rhs_dilation, padding=pads,
        lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
        dimension_numbers=ConvDimensionNumbers(_spec_transpose(lhs_spec),
                                               _spec_transpose(out_spec),
                                               _spec_transpose(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        precision=precision, preferred_element_type=preferred_element_type)
    return _as_dtype(out, rhs_aval.dtype)


def _conv_transpose(ct, lhs, rhs, **params):
    if isinstance(ct, Zero):
        return [None, None]
    if is_undefined(lhs) and not is_undefined(rhs):
        return [_conv_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    if is_undefined(rhs) and not is_undefined(lhs):
        return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]
    raise ValueError("conv_general_dilated is not linear in both operands at once")


conv_general_dilated_p.transpose = _conv_transpose


# ---------------------------------------------------------------------------------------------
# Batching, as JAX's: the mapped axis joins the batch (lhs mapped), the kernel's output
# features (rhs mapped), or both with one feature (or batch) group per example.


def _reshape_axis_into(src, dst, x):
    """``x`` with axis ``src`` merged, as the major part, into axis ``dst`` (``dst`` counted
    once ``src`` is removed)."""
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [d for i, d in enumerate(shape) if i != src]
    new_shape[dst] *= shape[src]
    return lax.reshape(lax.transpose(x, perm), new_shape)


def _reshape_axis_out_of(src, major, x):
    """``x`` with axis ``src`` split in two, the first of size ``major``."""
    shape = list(get_aval(x).shape)
    shape[src:src + 1] = [major, shape[src] // major]
    return lax.reshape(x, shape)


def _conv_batch(vals, dims, **params):
    (lhs, rhs), (ld, rd) = vals, dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    size = get_aval(lhs).shape[ld] if ld is not not_mapped else get_aval(rhs).shape[rd]
    if size == 0:     # nothing to merge an empty axis into: the result's shape suffices
        avals = [_unbatched_aval(x, d) for x, d in zip(vals, dims)]
        out = _conv_aval(*avals, **params)
        return lax.full((0,) + out.shape, 0, out.dtype), 0
    bind = conv_general_dilated_p.bind
    if ld is not not_mapped and rd is not not_mapped:
        if bgc > 1:
            lhs, bgc = _reshape_axis_into(ld, lhs_spec[0], lhs), bgc * size
        else:
            lhs, fgc = _reshape_axis_into(ld, lhs_spec[1], lhs), fgc * size
        rhs = _reshape_axis_into(rd, rhs_spec[0], rhs)
        out = bind(lhs, rhs, **dict(params, feature_group_count=fgc, batch_group_count=bgc))
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if ld is not not_mapped:
        if bgc > 1:
            # the example axis goes inside each batch group
            lhs = _reshape_axis_out_of(lhs_spec[0] + int(ld <= lhs_spec[0]), bgc, lhs)
            lhs = _reshape_axis_into(ld + int(lhs_spec[0] < ld), lhs_spec[0] + 1, lhs)
            lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], lhs)
        else:
            lhs = _reshape_axis_into(ld, lhs_spec[0], lhs)
        return _reshape_axis_out_of(out_spec[0], size, bind(lhs, rhs, **params)), out_spec[0]
    if fgc == 1 and bgc == 1:
        rhs = _reshape_axis_into(rd, rhs_spec[0], rhs)
        return _reshape_axis_out_of(out_spec[1], size, bind(lhs, rhs, **params)), out_spec[1]
    # groups stay outermost in the kernel's output features: the example axis goes inside
    # each group, and comes out of each group of the result's features again
    groups = max(fgc, bgc)
    rhs = _reshape_axis_out_of(rhs_spec[0] + int(rd <= rhs_spec[0]), groups, rhs)
    rhs = _reshape_axis_into(rd + int(rhs_spec[0] < rd), rhs_spec[0] + 1, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], rhs)
    out = bind(lhs, rhs, **params)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
    return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


def _unbatched_aval(x, bdim):
    aval = get_aval(x)
    if bdim is not_mapped:
        return aval
    return aval.update(shape=aval.shape[:bdim] + aval.shape[bdim + 1:])


conv_general_dilated_p.batch = _conv_batch


# ---------------------------------------------------------------------------------------------
# The decomposition (im2col): how the CPU computes the primitive, and the GPU where cuDNN
# does not take it


def im2col(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
           dimension_numbers, feature_group_count, batch_group_count, precision=None,
           preferred_element_type=None):
    """The convolution ``conv_general_dilated_p`` computes, from other primitives: ``pad``
    (its interior padding dilates the input), one strided ``slice`` per kernel offset, and
    one ``dot_general`` over input features and kernel offsets.

    >>> dn = ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    >>> im2col(jnp.ones((1, 2, 5)), jnp.ones((3, 2, 2)), window_strides=(1,),
    ...        padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=dn,
    ...        feature_group_count=1, batch_group_count=1).shape
    (1, 3, 4)
    """
    if 0 in get_aval(lhs).shape + get_aval(rhs).shape:     # an empty batch or sum
        out = _conv_aval(get_aval(lhs), get_aval(rhs), window_strides=window_strides,
                         padding=padding, lhs_dilation=lhs_dilation,
                         rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                         feature_group_count=feature_group_count,
                         batch_group_count=batch_group_count,
                         preferred_element_type=preferred_element_type)
        return lax.full(out.shape, 0, out.dtype)
    dn = dimension_numbers
    lhs = lax.transpose(lhs, dn.lhs_spec)     # canonical layouts: (N, C, spatial...),
    rhs = lax.transpose(rhs, dn.rhs_spec)     # (O, I, spatial...)
    groups = feature_group_count
    if batch_group_count > 1:
        lhs, groups = _batch_groups_as_features(lhs, batch_group_count), batch_group_count
    k_sp = get_aval(rhs).shape[2:]
    zero = lax.full((), 0, get_aval(lhs).dtype)
    slices = _windows("conv_general_dilated", lhs, zero, (1, 1) + tuple(k_sp),
                      (1, 1) + tuple(window_strides), ((0, 0), (0, 0)) + tuple(padding),
                      (1, 1) + tuple(lhs_dilation), (1, 1) + tuple(rhs_dilation),
                      f"padding {padding}")
    patches = _stack(slices, 2)                                  # (N, C, K, out...)
    out = _contract(patches, rhs, groups, precision, preferred_element_type)
    return _to_out_layout(out, dn.out_spec)


def _to_out_layout(out, out_spec):
    """(N, spatial..., O) laid out as ``out_spec`` says: its entry j is where canonical axis j
    (N, O, spatial...) goes."""
    nsp = len(out_spec) - 2
    source = [0, nsp + 1] + list(range(1, nsp + 1))
    perm = [0] * (nsp + 2)
    for j, axis in enumerate(out_spec):
        perm[axis] = source[j]
    return lax.transpose(out, perm)


def _batch_groups_as_features(lhs, groups):
    """Canonical ``lhs`` with its batch split into ``groups`` (group-major) and the groups
    moved into the features: feature group g of the result is batch group g, so a feature
    grouped convolution gives output feature group g from batch group g only, as XLA's
    batch_group_count does."""
    n, c, *sp = get_aval(lhs).shape
    x = lax.reshape(lhs, (groups, n // groups, c, *sp))
    x = lax.transpose(x, (1, 0) + tuple(range(2, len(sp) + 3)))
    return lax.reshape(x, (n // groups, groups * c, *sp))


def _contract(patches, rhs, groups, precision, preferred_element_type):
    """(N, C, K, out...) patches times an (O, C/G, spatial...) kernel -> (N, out..., O),
    summing over input features and kernel offsets; feature groups are a batch axis."""
    n, c, k, *out_sp = get_aval(patches).shape
    o, i = get_aval(rhs).shape[:2]
    if groups == 1:
        rhs = lax.reshape(rhs, (o, i, k))
        return lax.dot_general(patches, rhs, (((1, 2), (1, 2)), ((), ())), precision,
                               preferred_element_type)
    patches = lax.reshape(patches, (n, groups, i, k, *out_sp))
    rhs = lax.reshape(rhs, (groups, o // groups, i, k))
    out = lax.dot_general(patches, rhs, (((2, 3), (2, 3)), ((1,), (0,))), precision,
                          preferred_element_type)                # (G, N, out..., O/G)
    nsp = len(out_sp)
    out = lax.transpose(out, (1,) + tuple(range(2, nsp + 2)) + (0, nsp + 2))
    return lax.reshape(out, (n, *out_sp, o))


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution of NCHW ``lhs`` with OIHW ``rhs`` (any number of spatial dimensions).

    >>> conv(jnp.ones((1, 2, 5, 5)), jnp.ones((3, 2, 3, 3)), (1, 1), "VALID").shape
    (1, 3, 3, 3)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """``conv`` with explicit padding and input/kernel dilation.

    >>> x, w = jnp.ones((1, 1, 3, 3)), jnp.ones((1, 1, 2, 2))   # NCHW, OIHW
    >>> conv_with_general_padding(x, w, (1, 1), ((1, 1), (0, 2)), (2, 2), None).shape
    (1, 1, 6, 6)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_padding(k, s, padding):
    """(low, high) padding of the dilated input that undoes a forward convolution's
    ``padding`` (a mode, or that convolution's (low, high) pair)."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    else:
        low, high = (k - p - 1 for p in padding)
        total = low + high
    return low, total - low


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """Transposed ("fractionally strided") convolution, as JAX defines it: the input dilated
    by ``strides`` and convolved with stride 1. "SAME"/"VALID" name the forward
    convolution's padding; explicit pairs pad the dilated input (or, with
    ``use_consistent_padding``, are the forward convolution's pairs too). The layout
    defaults to NHWC/HWIO. ``transpose_kernel`` flips the kernel spatially and swaps its
    I and O axes, which makes this the gradient of ``conv_general_dilated``.

    >>> conv_transpose(jnp.ones((1, 4, 4, 3)), jnp.ones((3, 3, 3, 8)), (2, 2), "SAME").shape
    (1, 8, 8, 8)
    """
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    ndim = len(lhs_shape)
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise ShapeError(f"conv_transpose: no default dimension_numbers for lhs of shape "
                             f"{lhs_shape}; pass them")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    nsp = ndim - 2
    rhs_dilation = _ints("conv_transpose", "rhs_dilation", rhs_dilation, nsp)
    strides = _ints("conv_transpose", "strides", strides, nsp)
    kernel = [_dilated(rhs_shape[a], d) for a, d in zip(dn.rhs_spec[2:], rhs_dilation)]
    if isinstance(padding, str) and padding.upper() in ("SAME", "VALID"):
        pads = [_conv_transpose_padding(k, s, padding.upper()) for k, s in zip(kernel, strides)]
    elif use_consistent_padding and not isinstance(padding, str):
        forward = _explicit_pads("conv_transpose", padding, nsp)
        pads = [_conv_transpose_padding(k, s, p) for k, s, p in zip(kernel, strides, forward)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = lax.rev(rhs, dn.rhs_spec[2:])
        swap = list(range(ndim))
        swap[dn.rhs_spec[0]], swap[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = lax.transpose(rhs, swap)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# =============================================================================================
# reduce_window


def _identity(name, dtype):
    """The computation's identity in ``dtype``: what padding and dilation holes hold, so that
    they never change a window's result."""
    dtype = np.dtype(dtype)
    if name in ("add", "mul"):
        return 0 if name == "add" else 1
    if dtype.kind == "f" or dtype.kind == "V":    # "V": bfloat16 and friends
        return -np.inf if name == "max" else np.inf
    if dtype.kind == "b":
        return name == "min"
    info = np.iinfo(dtype)
    return info.min if name == "max" else info.max


def _monoid(computation):
    ops = {lax.add: "add", lax.mul: "mul", lax.max_: "max", lax.min_: "min"}
    # fnx.lax's functions are API boundaries around these (traceback_util)
    name = ops.get(getattr(computation, "__wrapped__", computation))
    if name is None:
        raise TypeError(f"reduce_window: computation must be lax.add, lax.mul, lax.max or "
                        f"lax.min, got {computation!r}")
    return name


def _tree_reduce(op, xs):
    """``op`` over ``xs`` in a balanced tree: depth log2(len) instead of len."""
    while len(xs) > 1:
        xs = [op(a, b) for a, b in zip(xs[::2], xs[1::2])] + xs[len(xs) - len(xs) % 2:]
    return xs[0]


def _is_identity(value, identity):
    if not isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        return False      # a traced value: only known at run time
    return bool(np.all(np.asarray(value) == identity))


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """``computation`` (lax.add, lax.mul, lax.max or lax.min) over every window of
    ``operand``, starting from ``init_value``, as XLA's ReduceWindow: padding positions and
    dilation holes are left out of the windows.

    >>> x = jnp.ones((1, 3, 8, 8))                                      # max pooling, 2x2
    >>> reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID").shape
    (1, 3, 4, 4)
    """
    name = "reduce_window"
    op_name = _monoid(computation)
    aval = get_aval(operand)
    nd = aval.ndim
    window = _ints(name, "window_dimensions", window_dimensions, nd)
    strides = _ints(name, "window_strides", window_strides, nd)
    base_dilation = _ints(name, "base_dilation", base_dilation, nd)
    window_dilation = _ints(name, "window_dilation", window_dilation, nd)
    if isinstance(padding, str):
        # as JAX: the window's dilation counts, the operand's (base_dilation) does not
        spans = [_dilated(k, d) for k, d in zip(window, window_dilation)]
        pads = padtype_to_pads(aval.shape, spans, strides, padding)
    else:
        pads = _explicit_pads(name, padding, nd)
    identity = _identity(op_name, aval.dtype)
    fill = lax.full((), identity, aval.dtype)
    slices = _windows(name, operand, fill, window, strides, pads, base_dilation,
                      window_dilation, f"operand shape {aval.shape}, padding {pads}")
    out = _tree_reduce(computation, slices)
    if _is_identity(init_value, identity):
        return out
    return computation(lax.full((), init_value, aval.dtype), out)


__all__ = ["ConvDimensionNumbers", "ConvDimensionNumbersError", "conv_dimension_numbers",
           "conv_general_dilated", "conv_general_dilated_p", "conv", "conv_with_general_padding",
           "conv_transpose", "padtype_to_pads", "reduce_window"]

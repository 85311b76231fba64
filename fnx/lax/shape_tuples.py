"""jax.lax's shape arithmetic for convolutions and windows, on Python tuples (no arrays).

>>> lax.reduce_window_shape_tuple((8, 8), (2, 2), (2, 2), ((0, 0), (0, 0)))
(4, 4)
"""
from __future__ import annotations

import numpy as np



def conv_general_permutations(dimension_numbers):
    """The (lhs, rhs, out) axis permutations that bring a ``(lhs_spec, rhs_spec, out_spec)``
    string triple to (N, C, spatial...), (O, I, spatial...), (N, C, spatial...) order, spatial
    axes in the kernel's order.

    >>> lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = ("N", "C"), ("O", "I"), ("N", "C")
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1 or len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] must contain '{a}' and '{b}' "
                            f"exactly once and no repeated characters, got {spec!r}")
    if not set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}:
        raise TypeError("convolution dimension_numbers must have the same spatial characters, "
                        f"got {dimension_numbers}")

    def perm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_spec:
            spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(map(perm, dimension_numbers, charpairs))


def _transpose_padding_total(k, s, padding):
    """Total padding of a transposed convolution's window ``k`` at stride ``s``."""
    if padding == "SAME":
        return k + s - 2
    if padding == "VALID":
        return k + s - 2 + max(k - s, 0)
    raise ValueError(f"padding must be 'SAME', 'VALID' or explicit pairs, got {padding!r}")


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of ``conv_transpose`` for the given shapes, strides and padding.

    >>> lax.conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 8), (2, 2), "SAME",
    ...                                ("NHWC", "HWIO", "NHWC"))
    (1, 8, 8, 8)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs, rhs = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        pads = [_transpose_padding_total(int(k), int(s), padding)
                for k, s in zip(rhs[2:], window_strides)]
    else:
        pads = [int(lo) + int(hi) for lo, hi in padding]
    space = [(int(i) - 1) * s - int(k) + 2 + p
             for i, k, s, p in zip(lhs[2:], rhs[2:], window_strides, pads)]
    out = (int(lhs[0]), int(rhs[0])) + tuple(space)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of ``reduce_window`` with explicit ``(low, high)`` padding pairs.

    >>> lax.reduce_window_shape_tuple((5,), (3,), (1,), ((1, 1),), window_dilation=(2,))
    (3,)
    """
    def dilate(shape, factors):
        return tuple(0 if d == 0 else 1 + f * (d - 1) for d, f in zip(shape, factors))

    if base_dilation is not None:
        operand_shape = dilate(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = dilate(window_dimensions, window_dilation)
    padded = [d + lo + hi for d, (lo, hi) in zip(operand_shape, padding)]
    # A window wider than the padded operand fits nowhere: JAX gives an empty axis, and stax's
    # shape inference relies on it for the -1 it uses as an unknown batch size.
    return tuple(max(0, (p - w) // s + 1)
                 for p, w, s in zip(padded, window_dimensions, window_strides))

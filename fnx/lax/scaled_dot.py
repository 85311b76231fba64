"""``lax.scaled_dot``: a dot product of operands scaled per block of their contracting
dimensions (microscaling), computed as JAX's portable definition: operands and scales in
bfloat16, multiplied, then ``dot_general``."""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.custom_derivatives import custom_jvp

__all__ = ["scaled_dot"]


def _check_scale(side, operand, scale, contracting):
    for i, size in enumerate(operand.shape):
        if i in contracting:
            if size % scale.shape[i]:
                raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible "
                                f"by its scale's dim size {scale.shape[i]}.")
            if size // scale.shape[i] < 2:
                raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim "
                                f"size ({size // scale.shape[i]}) must be at least 2.")
        elif scale.shape[i] != size:
            raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                            f"{scale.shape[i]}.")


def _scaled(side, operand, scale, contracting):
    """``operand * scale`` in bfloat16, each scale repeated over its block."""
    if scale is None:
        return operand.astype(dtypes.bfloat16)
    _check_scale(side, operand, scale, contracting)
    for i in contracting:
        scale = jnp.repeat(scale, operand.shape[i] // scale.shape[i], axis=i)
    return operand.astype(dtypes.bfloat16) * scale.astype(dtypes.bfloat16)


def _product(a, b, dimension_numbers, out_dtype):
    return lax.dot_general(a, b, dimension_numbers, preferred_element_type=out_dtype)


_product = custom_jvp(_product, nondiff_argnums=(2, 3))


@_product.defjvp
def _no_derivative(dimension_numbers, out_dtype, primals, tangents):
    raise NotImplementedError("Differentiation rule for 'scaled_dot' not implemented (JAX's "
                              "scaled_dot has none either)")


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
    """``dot_general(lhs * lhs_scale, rhs * rhs_scale)`` where each scale holds one value per
    block of the operand's contracting dimensions (the other dimensions match the operand's),
    the products taken in bfloat16 and the result in ``preferred_element_type`` (bfloat16 by
    default). ``dimension_numbers`` defaults to a batched matrix product over the last axis of
    ``lhs`` and the second-to-last of ``rhs``. It has no derivative, as in JAX.

    >>> x = jnp.ones((2, 4))
    >>> lax.scaled_dot(x, x.T, lhs_scale=jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    Array([[6, 6],
           [14, 14]], dtype=bfloat16)
    """
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    if dimension_numbers is None:
        if lhs.ndim < 2:
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        n = lhs.ndim
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lc, rc), (lb, rb) = dimension_numbers
    scales = [None if s is None else jnp.asarray(s) for s in (lhs_scale, rhs_scale)]
    ranks = {lhs.ndim, rhs.ndim} | {s.ndim for s in scales if s is not None}
    if len(ranks) != 1:
        raise TypeError(f"All input tensors must have the same rank. Got lhs rank: "
                        f"{lhs.ndim} rhs rank: {rhs.ndim} and scales of ranks "
                        f"{[None if s is None else s.ndim for s in scales]}.")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise TypeError("LHS and RHS must have the same number of batch and of contracting "
                        f"dimensions, got {dimension_numbers}")
    for i, j in zip(lc, rc):
        if lhs.shape[i] != rhs.shape[j]:
            raise TypeError(f"LHS contracting dim {i} of size {lhs.shape[i]} does not match "
                            f"RHS contracting dim {j} of size {rhs.shape[j]}.")
    out_dtype = dtypes.canonicalize(
        dtypes.bfloat16 if preferred_element_type is None else preferred_element_type,
        "scaled_dot")
    a = _scaled("LHS", lhs, scales[0], lc)
    b = _scaled("RHS", rhs, scales[1], rc)
    return _product(a, b, dimension_numbers, np.dtype(out_dtype))

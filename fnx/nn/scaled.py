"""Block-scaled products, as ``jax.nn.scaled_matmul`` and ``jax.nn.scaled_dot_general``.

A block-scaled operand stores low-precision values (fp8, fp4) and one scale per block of
``block_size`` consecutive entries along the contracting axis; its value is ``x * scale``.
``scaled_matmul`` multiplies two such operands; ``scaled_dot_general`` quantizes
high-precision operands into them (the ``mxfp8`` and ``nvfp4`` recipes of
``get_scaled_dot_general_config``), multiplies, and differentiates with its operands'
gradients computed the same way. Products accumulate in float32, as cuDNN's kernels do.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import ml_dtypes
import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.custom_derivatives import custom_vjp
from ..lax.extras import optimization_barrier

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]


@dataclasses.dataclass
class BlockScaleConfig:
    """How ``scaled_dot_general`` quantizes one operand: the recipe (``mode``, "mxfp8" or
    "nvfp4"), the entries per scale (``block_size``), the dtypes of values and scales, a
    float32 ``global_scale`` (nvfp4) and ``infer_only`` (unused, as in JAX).

    >>> get_scaled_dot_general_config("mxfp8").block_size
    32
    """
    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def get_scaled_dot_general_config(mode: str, global_scale=None) -> BlockScaleConfig:
    """The quantization recipe ``mode`` for ``scaled_dot_general``: "mxfp8" (float8_e4m3fn
    values, a power-of-two float8_e8m0fnu scale per 32) or "nvfp4" (float4_e2m1fn values, a
    float8_e4m3fn scale per 16, times ``global_scale``, one by default).

    >>> get_scaled_dot_general_config("nvfp4").scale_type
    <class 'ml_dtypes.float8_e4m3fn'>
    """
    if mode == "nvfp4":
        return BlockScaleConfig(
            "nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn,
            jnp.ones((1,), np.float32) if global_scale is None else global_scale, False)
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, None,
                                False)
    raise ValueError(f"Unsupported mode: {mode}")


def _expanded_scales(scales, k):
    """One scale per entry of the contracting axis (each block's scale repeated), float32."""
    blocks = scales.shape[-1]
    if blocks == 0 or k % blocks:
        raise ValueError(f"scaled_matmul: the contracting size {k} must be a multiple of the "
                         f"scales' last axis, got {blocks}")
    return jnp.repeat(scales.astype(np.float32), k // blocks, axis=-1)


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """``einsum('bmk,bnk->bmn', lhs * lhs_scales, rhs * rhs_scales)`` for ``lhs`` (B, M, K),
    ``rhs`` (B, N, K) and scales (B, M, K_s), (B, N, K_s) with one scale per ``K // K_s``
    consecutive entries; computed in float32, returned as ``preferred_element_type``.

    >>> a = jnp.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 4)
    >>> s = jnp.array([0.5, 2.0]).reshape(1, 1, 2)
    >>> fnx.nn.scaled_matmul(a, a, s, s)
    Array([[[101.25]]], dtype=float32)
    """
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    lhs_scales, rhs_scales = jnp.asarray(lhs_scales), jnp.asarray(rhs_scales)
    if not all(x.ndim == 3 for x in (lhs, rhs, lhs_scales, rhs_scales)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    (b, m, k), (b_r, n, k_r) = lhs.shape, rhs.shape
    if (b, k) != (b_r, k_r):
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {lhs.shape} and {rhs.shape}")
    if (lhs_scales.shape[0], lhs_scales.shape[2]) != (rhs_scales.shape[0], rhs_scales.shape[2]):
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                         f"(K) dimensions, but got shapes {lhs_scales.shape} and "
                         f"{rhs_scales.shape}")
    if lhs_scales.shape[1] != m or rhs_scales.shape[1] != n:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {lhs.shape}, b: {rhs.shape}, a_scales: "
                         f"{lhs_scales.shape}, b_scales: {rhs_scales.shape}")
    out_dtype = dtypes.canonicalize(preferred_element_type, "scaled_matmul")
    a = lhs.astype(np.float32) * _expanded_scales(lhs_scales, k)
    b_ = rhs.astype(np.float32) * _expanded_scales(rhs_scales, k)
    out = lax.dot_general(a, b_, (((2,), (2,)), ((0,), (0,))), precision="highest",
                          preferred_element_type=np.float32)
    return out.astype(out_dtype)


# ---- quantization ---------------------------------------------------------------------------


def _e8m0_rounding_up(x):
    """The float8_e8m0fnu bits (uint8) of the power of two at or above each float32 ``x``:
    the exponent, plus one where the mantissa is not zero (nor would rounding overflow)."""
    bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
    exponent, mantissa = bits >> 23, bits & 0x7FFFFF
    up = (mantissa > 0) & (exponent != 0xFE) & ~((exponent == 0) & (mantissa <= 0x400000))
    return jnp.where(up, exponent + 1, exponent).astype(np.uint8)


def _e8m0_value(bits, dtype):
    """The power of two the e8m0 ``bits`` hold, as ``dtype``; the zero exponent becomes the
    smallest value ``dtype`` divides by safely."""
    value = lax.bitcast_convert_type(bits.astype(np.uint32) << 23, np.float32)
    tiny = 2.0 ** -15 if np.dtype(dtype) == np.float16 else 2.0 ** -127
    return jnp.where(value == 0, np.float32(tiny), value).astype(dtype)


def _quantize(x, config):
    """``x`` (B, M, K) as ``(values, scales)``: values of ``config.data_type`` and one scale
    of ``config.scale_type`` per block of the last axis."""
    shape, block = x.shape, config.block_size
    if shape[-1] < block or shape[-1] % block:
        raise ValueError(f"scaled_dot_general: the contracting size {shape[-1]} must be a "
                         f"multiple of the block size {block}")
    x = x.reshape(shape[:-1] + (shape[-1] // block, block))
    top = np.asarray(dtypes.finfo(config.data_type).max).astype(x.dtype)

    def block_scales(x):    # the scale that maps each block's largest entry to the largest value
        return jnp.max(jnp.abs(x), axis=-1, keepdims=True) / top
    if config.mode == "mxfp8":
        scales = _e8m0_rounding_up(block_scales(x))
        scaled = x / _e8m0_value(scales, x.dtype)
    elif config.mode == "nvfp4":
        x = x / config.global_scale
        scale_top = np.asarray(dtypes.finfo(config.scale_type).max).astype(x.dtype)
        scales = optimization_barrier(
            jnp.clip(block_scales(x), 0, scale_top).astype(config.scale_type))
        scaled = x / scales.astype(np.float32)
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    values = jnp.clip(scaled, -top, top).astype(config.data_type).reshape(shape)
    scales = scales.reshape(scales.shape[:-1])
    if scales.dtype != np.dtype(config.scale_type):     # e8m0's bits
        scales = lax.bitcast_convert_type(scales, config.scale_type)
    return values, scales


def _as_3d(x, contracting, batch):
    """``x`` transposed to (batch, kept, contracting) axes and reshaped to (B, M, K)."""
    kept = [d for d in range(x.ndim) if d not in contracting and d not in batch]
    order = sorted(batch) + kept + sorted(contracting)
    sizes = [math.prod(x.shape[d] for d in group) for group in (batch, kept, contracting)]
    return jnp.transpose(x, order).reshape(sizes)


def _output_shape(lhs_shape, rhs_shape, lhs_dims, rhs_dims):
    (lc, lb), (rc, rb) = lhs_dims, rhs_dims
    return (tuple(lhs_shape[d] for d in range(len(lhs_shape)) if d in lb)
            + tuple(lhs_shape[d] for d in range(len(lhs_shape)) if d not in lc and d not in lb)
            + tuple(rhs_shape[d] for d in range(len(rhs_shape)) if d not in rc and d not in rb))


def _quantized_product(x, y, x_dims, y_dims, out_dtype, x_config, y_config):
    """The dot of ``x`` and ``y`` (each with its (contracting, batch) dims) through quantized
    3-D operands, reshaped to dot_general's output shape."""
    x3, y3 = _as_3d(x, *x_dims), _as_3d(y, *y_dims)
    xq, xs = _quantize(x3, x_config)
    yq, ys = _quantize(y3, y_config)
    nvfp4 = x_config.mode == "nvfp4"
    out = scaled_matmul(xq, yq, xs, ys, np.float32 if nvfp4 else out_dtype)
    if nvfp4:
        out = (out * (x_config.global_scale * y_config.global_scale)).astype(out_dtype)
    return out.reshape(_output_shape(x.shape, y.shape, x_dims, y_dims))


def _forward(lhs, rhs, dimension_numbers, out_dtype, configs):
    (lc, rc), (lb, rb) = dimension_numbers
    return _quantized_product(lhs, rhs, (lc, lb), (rc, rb), out_dtype, configs[0], configs[1])


def _cotangent_of_lhs(g, x, y, dimension_numbers, out_dtype, configs, swapped=False):
    """The cotangent of ``x`` in ``dot_general(x, y)`` (of ``y`` in ``dot_general(y, x)``
    when ``swapped``) for the output cotangent ``g``, as a quantized product of ``g`` and
    ``y`` unless the recipe is nvfp4 (then a float product)."""
    (xc, yc), (xb, yb) = dimension_numbers
    x_kept = [d for d in range(x.ndim) if d not in xc and d not in xb]
    y_kept = [d for d in range(y.ndim) if d not in yc and d not in yb]
    nb = len(xb)
    batch_axes = tuple(range(nb))
    if swapped:     # g's axes: batch, then y's kept, then x's kept
        g_y_axes = tuple(range(nb, nb + len(y_kept)))
    else:           # batch, x's kept, y's kept
        g_y_axes = tuple(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    g_dims, y_dims = (g_y_axes, batch_axes), (tuple(y_kept), tuple(yb))
    if configs[0].mode != "nvfp4":
        out = _quantized_product(g, y, g_dims, y_dims, out_dtype, configs[0], configs[1])
    else:
        g3, y3 = _as_3d(g, *g_dims), _as_3d(y, *y_dims)
        out = jnp.matmul(g3, jnp.swapaxes(y3, 1, 2), preferred_element_type=out_dtype)
        out = out.reshape(_output_shape(g.shape, y.shape, g_dims, y_dims))
    # out's axes: batch, x's kept, x's contracting in the order of y's contracting
    contracting = [xc[i] for i in np.argsort(yc)]
    return lax.transpose(out, tuple(np.argsort(list(xb) + x_kept + contracting)))


def _scaled_dot_fwd(lhs, rhs, dimension_numbers, out_dtype, configs):
    return _forward(lhs, rhs, dimension_numbers, out_dtype, configs), (lhs, rhs)


def _scaled_dot_bwd(dimension_numbers, out_dtype, configs, residuals, g):
    lhs, rhs = residuals
    (lc, rc), (lb, rb) = dimension_numbers
    grad_lhs = _cotangent_of_lhs(g, lhs, rhs, dimension_numbers, out_dtype,
                                 [configs[2], configs[1]])
    grad_rhs = _cotangent_of_lhs(g, rhs, lhs, ((rc, lc), (rb, lb)), out_dtype,
                                 [configs[2], configs[0]], swapped=True)
    if configs[2].mode == "nvfp4":
        # a straight-through estimate that stops where quantization clipped the input
        top = np.asarray(dtypes.finfo(configs[0].data_type).max).astype(lhs.dtype)
        scale_top = np.asarray(dtypes.finfo(configs[0].scale_type).max).astype(lhs.dtype)
        grad_lhs = jnp.where(jnp.abs(lhs) <= configs[0].global_scale * top * scale_top,
                             grad_lhs, 0)
        grad_rhs = jnp.where(jnp.abs(rhs) <= configs[1].global_scale * top * scale_top,
                             grad_rhs, 0)
    # in the operands' dtypes (JAX lets them come back in preferred_element_type)
    return grad_lhs.astype(lhs.dtype), grad_rhs.astype(rhs.dtype)


_scaled_dot = custom_vjp(_forward, nondiff_argnums=(2, 3, 4))
_scaled_dot.defvjp(_scaled_dot_fwd, _scaled_dot_bwd)


def _dimension_tuples(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return (tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
    """``lax.dot_general`` of ``lhs`` and ``rhs`` through block-scaled quantization: each
    operand is quantized by its ``configs`` entry (``configs[2]`` quantizes the output's
    cotangent in the backward pass), multiplied as ``scaled_matmul`` and returned as
    ``preferred_element_type`` (float32, bfloat16 or float16). Without ``configs``, the plain
    ``dot_general``; ``implementation`` is ignored, as in JAX.

    >>> x = jnp.linspace(-1.0, 1.0, 64).reshape(2, 32)
    >>> configs = [fnx.nn.get_scaled_dot_general_config("mxfp8")] * 3
    >>> out = fnx.nn.scaled_dot_general(x, x, (((1,), (1,)), ((), ())), configs=configs)
    >>> out.shape, bool(jnp.allclose(out, x @ x.T, rtol=0.1))
    ((2, 2), True)
    """
    del implementation
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    out_dtype = np.dtype(preferred_element_type)
    if out_dtype not in (np.dtype(np.float32), np.dtype(dtypes.bfloat16),
                         np.dtype(np.float16)):
        raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                        f"{preferred_element_type}")
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    contracting, (lb, rb) = _dimension_tuples(dimension_numbers)
    squeeze = not lb and not rb
    if not lb:      # a trailing axis of one stands for the missing batch axis
        lhs, lb = jnp.expand_dims(lhs, lhs.ndim), (lhs.ndim,)
    if not rb:
        rhs, rb = jnp.expand_dims(rhs, rhs.ndim), (rhs.ndim,)
    out = _scaled_dot(lhs, rhs, (contracting, (lb, rb)), out_dtype, list(configs))
    return jnp.squeeze(out, axis=0) if squeeze else out

"""fnx.image: ``jax.image``'s resampling. ``resize`` and ``scale_and_translate`` build, for each
resized axis, a matrix of kernel weights (input pixels x output pixels, half-centred pixels,
widened when downsampling with ``antialias``) and contract the image with it.

>>> import fnx.numpy as jnp
>>> fnx.image.resize(jnp.array([0.0, 1.0]), (4,), "linear")
Array([0.  , 0.25, 0.75, 1.  ], dtype=float32)
"""
from __future__ import annotations

import enum

import numpy as np

from . import numpy as jnp
from .core.jit import jit
from .lax import Precision
from .numpy._core import promote_dtypes_inexact


class ResizeMethod(enum.Enum):
    """The resampling kernels: NEAREST, LINEAR (triangle), LANCZOS3, LANCZOS5, CUBIC (Keys),
    CUBIC_PYTORCH (OpenCV's a = -0.75, edges repeated when not antialiasing) and AREA.

    >>> ResizeMethod.from_string("bilinear")
    <ResizeMethod.LINEAR: 1>
    """
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        for names, method in _NAMES:
            if s in names:
                return method
        raise ValueError(f'Unknown resize method "{s}"')


_NAMES = [(("nearest",), ResizeMethod.NEAREST),
          (("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
          (("lanczos3",), ResizeMethod.LANCZOS3), (("lanczos5",), ResizeMethod.LANCZOS5),
          (("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
          (("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
          (("area",), ResizeMethod.AREA)]


def _lanczos(radius):
    def kernel(x):
        y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        out = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
        return jnp.where(x > radius, 0., out)
    return kernel


def _cubic(a):
    def kernel(x):
        out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        out = jnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
        return jnp.where(x >= 2.0, 0.0, out)
    return kernel


def _keys_cubic(x):
    out = ((1.5 * x - 2.5) * x) * x + 1.
    out = jnp.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
    return jnp.where(x >= 2., 0., out)


def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()       # weights are overlaps of pixel intervals, not a kernel of distances
_KERNELS = {ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.LANCZOS3: (3, _lanczos(3.)),
            ResizeMethod.LANCZOS5: (5, _lanczos(5.)), ResizeMethod.CUBIC: (2, _keys_cubic),
            ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)), ResizeMethod.AREA: (1, _AREA)}


def _normalized(weights):
    total = jnp.sum(weights, axis=0, keepdims=True)
    return jnp.where(jnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                     jnp.divide(weights, jnp.where(total != 0, total, 1)), 0)


def _weight_matrix(in_size, out_size, scale, translation, kernel, antialias, edge_padding,
                   radius):
    """``(in_size, out_size)`` weights: column j resamples output pixel j."""
    dtype = jnp.result_type(scale, translation)
    inv_scale = 1. / scale
    kernel_scale = jnp.maximum(inv_scale, 1.) if antialias else 1.
    sample = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale - 0.5
    pad = radius if edge_padding else 0      # edge padding comes without antialiasing
    positions = jnp.arange(-pad, in_size + pad, dtype=dtype)
    if kernel is _AREA:
        left = jnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
        in_left = jnp.arange(in_size, dtype=dtype)
        weights = jnp.maximum(0.0, jnp.minimum((left + inv_scale)[None, :], in_left[:, None] + 1.0)
                              - jnp.maximum(left[None, :], in_left[:, None]))
    else:
        weights = kernel(jnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:     # samples past an edge read the edge pixel
        rows = jnp.clip(positions.astype(jnp.int32), 0, in_size - 1)
        cols = jnp.broadcast_to(jnp.arange(out_size)[None, :], weights.shape)
        weights = jnp.zeros((in_size, out_size), dtype).at[rows[:, None], cols].add(weights)
        return _normalized(weights)
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return jnp.where(inside[None, :], _normalized(weights), 0)


def _scale_and_translate(x, shape, spatial_dims, scale, translation, method, antialias,
                         precision):
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    operands, out_axes = [x, list(range(x.ndim))], list(range(x.ndim))
    for i, d in enumerate(spatial_dims):
        d = d % x.ndim
        w = _weight_matrix(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias,
                           edge_padding, radius).astype(x.dtype)
        operands += [w, [d, x.ndim + i]]
        out_axes[d] = x.ndim + i
    if not spatial_dims:
        return x
    return jnp.einsum(*operands, out_axes, precision=precision)


def _method(method) -> ResizeMethod:
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias: bool = True, precision=Precision.HIGHEST):
    """Resample ``image`` to ``shape``: input location ``x`` on ``spatial_dims[i]`` goes to
    ``x * scale[i] + translation[i]`` (half-centred pixels); outputs mapping outside the input
    are zero. ``method`` is a :class:`ResizeMethod` or its name (not NEAREST).

    >>> scale_and_translate(jnp.array([0.0, 1.0]), (4,), (0,), jnp.array([2.0]),
    ...                     jnp.array([0.0]), "linear")
    Array([0.  , 0.25, 0.75, 1.  ], dtype=float32)
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {image.shape}")
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        raise ValueError("CUBIC_PYTORCH resampling does not support antialiasing.")
    image, = promote_dtypes_inexact(jnp.asarray(image))
    scale, translation = promote_dtypes_inexact(jnp.asarray(scale), jnp.asarray(translation))
    return _scale_and_translate(image, shape, tuple(spatial_dims), scale, translation, method,
                                antialias, precision)


def _resize_nearest(x, shape):
    for d, (m, n) in enumerate(zip(x.shape, shape)):
        if m != n:
            # float32 offsets, as JAX (its float64 ones round differently on some backends)
            offsets = np.floor((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m / n))
            index = [slice(None)] * x.ndim
            index[d] = jnp.asarray(offsets.astype(np.int32))
            x = x[tuple(index)]
    return x


def _resize(image, shape, method, antialias, precision):
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        raise ValueError("CUBIC_PYTORCH resampling does not support antialiasing.")
    image, = promote_dtypes_inexact(image)
    dims = tuple(d for d in range(image.ndim) if image.shape[d] != shape[d])
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _scale_and_translate(image, shape, dims, scale, [0.] * len(dims), method, antialias,
                                precision)


_resize_jit = jit(_resize, static_argnums=(1, 2, 3, 4))


def resize(image, shape, method, antialias: bool = True, precision=Precision.HIGHEST):
    """``image`` resampled to ``shape`` (every axis whose size changes is resized; keep batch
    and channel sizes to leave those axes alone) with ``method``: ``"nearest"``, ``"linear"``
    (``"bilinear"``), ``"cubic"``, ``"lanczos3"``, ``"lanczos5"``, ``"cubic-pytorch"``,
    ``"area"``, or a :class:`ResizeMethod`. ``antialias`` widens the kernel when downsampling.

    >>> resize(jnp.arange(4.0), (2,), "linear")        # antialiased: a wider triangle
    Array([0.71428573, 2.2857141 ], dtype=float32)
    """
    shape = tuple(int(s) for s in shape)
    image = jnp.asarray(image)
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {image.shape}")
    return _resize_jit(image, shape, _method(method), antialias, precision)


__all__ = ["ResizeMethod", "resize", "scale_and_translate"]

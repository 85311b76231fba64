"""jax.lax's ``conv_general_dilated_patches``: the patches a convolution would see, gathered
into the feature axis by a grouped convolution with a one-hot kernel (as JAX does), so every
transformation follows from ``conv_general_dilated``.

>>> lax.conv_general_dilated_patches(jnp.arange(4.0).reshape(1, 1, 4), (2,), (1,), "VALID")
Array([[[0., 1., 2.],
        [1., 2., 3.]]], dtype=float32)
"""
from __future__ import annotations

import math

import numpy as np

from ..core import lax
from ..core.convolution import conv_dimension_numbers, conv_general_dilated
from ..core.core import get_aval


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """Each output position's receptive field of ``lhs`` (for a kernel of spatial shape
    ``filter_shape``) as its feature vector: ``C * prod(filter_shape)`` features, channel-major.

    >>> x = jnp.ones((1, 2, 3, 3))      # NCHW
    >>> lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID").shape
    (1, 8, 2, 2)
    """
    aval = get_aval(lhs)
    filter_shape = tuple(int(f) for f in filter_shape)
    spec = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    lhs_spec, rhs_spec = spec.lhs_spec, spec.rhs_spec
    channels, size = aval.shape[lhs_spec[1]], math.prod(filter_shape)
    # kernel (O = C * size, I = 1, *filter): output feature c * size + s picks spatial offset s
    one_hot = np.eye(size, dtype=aval.dtype).reshape((size, 1) + filter_shape)
    kernel = np.broadcast_to(one_hot, (channels,) + one_hot.shape)
    kernel = kernel.reshape((channels * size, 1) + filter_shape)
    # laid out as the rhs spec says: axis rhs_spec[i] holds canonical axis i
    kernel = np.transpose(kernel, np.argsort(rhs_spec))
    return conv_general_dilated(lhs, kernel,
                                window_strides, padding, lhs_dilation, rhs_dilation, spec,
                                feature_group_count=channels, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """A locally connected convolution: each output position has its own filter. ``rhs`` is
    laid out as a convolution kernel whose spatial axes are the *output* positions and whose
    input-feature axis holds ``C * prod(filter_shape)`` patch features, channel-major.

    >>> x = jnp.ones((1, 1, 3))                       # N, C, W
    >>> w = jnp.ones((2, 2, 2))                       # O, C * 2, W_out
    >>> lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,))
    Array([[[2., 2.],
            [2., 2.]]], dtype=float32)
    """
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           precision)
    spec = conv_dimension_numbers(get_aval(lhs).shape, get_aval(rhs).shape, dimension_numbers)
    rhs_spec, out_spec = spec.rhs_spec, spec.out_spec
    # contract the patch features; batch over the spatial positions, matched in order
    out_spatial, rhs_spatial = list(out_spec[2:]), list(rhs_spec[2:])
    rhs_batch = [rhs_spatial[k] for k in sorted(range(len(out_spatial)),
                                                key=lambda k: out_spatial[k])]
    dims = (([out_spec[1]], [rhs_spec[1]]), (sorted(out_spatial), rhs_batch))
    out = lax.dot_general(patches, rhs, dims, precision=precision)   # (spatial..., N, O)
    nd = len(out_spec)
    # put N and O where out_spec says, spatial axes in their (sorted) places
    order = [None] * nd
    order[out_spec[0]], order[out_spec[1]] = nd - 2, nd - 1
    rest = iter(range(nd - 2))
    return lax.transpose(out, [o if o is not None else next(rest) for o in order])

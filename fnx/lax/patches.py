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

"""fnx.nn: activations and the functions neural-network code uses.

>>> import fnx.nn as nn, fnx.numpy as jnp
>>> nn.relu(jnp.array([-1.0, 2.0]))
Array([0., 2.], dtype=float32)
"""
from .functions import (celu, dot_product_attention, elu, gelu, glu, hard_sigmoid, hard_silu,
                        hard_swish, hard_tanh, identity, layer_norm, leaky_relu, log1mexp,
                        log_sigmoid, log_softmax, logmeanexp, logsumexp, mish, normalize, one_hot,
                        relu, relu6, rms_norm, selu, sigmoid, silu, soft_sign, softmax, softplus,
                        sparse_plus, sparse_sigmoid, squareplus, standardize, swish, tanh)
from .scaled import (BlockScaleConfig, get_scaled_dot_general_config,  # noqa: E402,F401
                     scaled_dot_general, scaled_matmul)
from . import initializers  # noqa: E402
from .losses import (binary_cross_entropy, mse, sigmoid_binary_cross_entropy,  # noqa: E402
                     softmax_cross_entropy, softmax_cross_entropy_with_integer_labels,
                     squared_error)
from .modules import (MLP, Conv2d, Dropout, Embedding, LayerNorm, Linear, Module,  # noqa: E402
                      MultiHeadAttention, RMSNorm, conv2d)

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

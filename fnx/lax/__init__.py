"""fnx.lax: the primitives' functions, and structured control flow.

>>> import fnx.lax as lax
>>> lax.add(1.0, 2.0)
Array(3., dtype=float32, weak_type=True)
>>> lax.fori_loop(0, 3, lambda i, x: x * 2.0, 1.0)
Array(8., dtype=float32, weak_type=True)
"""
from ..core.lax import *  # noqa: F401,F403
from ..core.lax import abs_ as abs, pow_ as pow, max_ as max, min_ as min  # noqa
from ..core.lax import complex_ as complex  # noqa: F401
from ..core.lax import select, select_n  # noqa: F401
from ..core.api import stop_gradient  # noqa: F401
from ..core.control_flow import (cond, switch, while_loop, fori_loop, scan, map,  # noqa: F401
                                 ControlFlowTypeError, ReverseModeWhileLoopError)
from . import linalg  # noqa: E402,F401  (fnx.lax.linalg, as jax.lax.linalg)
from ..core.convolution import *  # noqa: E402,F401,F403  (conv_general_dilated, reduce_window, ...)
from .special import lgamma, digamma, erfc  # noqa: E402,F401  (composed: fnx/lax/special.py)
from .associative import associative_scan  # noqa: E402,F401
from .extras import (reduce, sort_key_val, population_count, clz, reduce_precision,  # noqa
                     broadcast_shapes, conv_general_shape_tuple, conv_shape_tuple, split,
                     optimization_barrier)
from ..core.fft import fft, FftType  # noqa: E402,F401
from ..core.collectives import (psum, pmean, pmax, pmin, all_gather, psum_scatter,  # noqa
                                ppermute, pshuffle, all_to_all, axis_index, axis_size)
from ..core.placement import with_sharding_constraint  # noqa: E402,F401

from .types import (GatherDimensionNumbers, ScatterDimensionNumbers, GatherScatterMode,  # noqa
                    RoundingMethod, round, RandomAlgorithm, AccuracyMode, Tolerance, DotAlgorithm,
                    DotAlgorithmPreset, RaggedDotDimensionNumbers, DotDimensionNumbers,
                    ConvGeneralDilatedDimensionNumbers, PrecisionLike)
from .gather_scatter import (gather, scatter, scatter_add, scatter_sub, scatter_mul,  # noqa
                             scatter_min, scatter_max, scatter_apply)
from .arrays import tile, stack, unstack, empty, broadcast_like, dtype, shape_as_value  # noqa
from .bits import mulhi, reduce_xor  # noqa: E402,F401
from ..prng_impls import rng_bit_generator  # noqa: E402,F401
from .shape_tuples import (conv_general_permutations, conv_transpose_shape_tuple,  # noqa
                           reduce_window_shape_tuple)
from .staging import create_token, after_all, platform_dependent, composite  # noqa: E402,F401
from .ragged import ragged_dot, ragged_dot_general  # noqa: E402,F401
from .approx import approx_max_k, approx_min_k  # noqa: E402,F401
from .collectives import pbroadcast, pswapaxes, pcast  # noqa: E402,F401
from .zeta import zeta, polygamma  # noqa: E402,F401
from .bessel import bessel_i0e, bessel_i1e  # noqa: E402,F401
from .incomplete import (igamma, igammac, igamma_grad_a, random_gamma_grad,  # noqa: E402,F401
                         betainc)
from .patches import conv_general_dilated_patches, conv_general_dilated_local  # noqa
from .implicit import custom_root, custom_linear_solve  # noqa: E402,F401
from .scaled_dot import scaled_dot  # noqa: E402,F401
# the primitives JAX exports under these names
from ..core.fft import fft_p  # noqa: E402,F401
from ..core.control_flow import cond_p, scan_p, while_p  # noqa: E402,F401
from ..core.collectives import (psum_p, pmax_p, pmin_p, all_gather_p, all_to_all_p,  # noqa
                                ppermute_p, axis_index_p)
from .primitives import (  # noqa: E402,F401  (composed operations as primitives)
    approx_top_k_p, bessel_i0e_p, bessel_i1e_p, cbrt_p, clamp_p, clz_p, copy_p, cumlogsumexp_p,
    cummax_p, cummin_p, cumprod_p, digamma_p, dynamic_slice_p, dynamic_update_slice_p, eq_to_p,
    erfc_p, exp2_p, gather_p, igamma_grad_a_p, igamma_p, igammac_p, le_to_p, lgamma_p, lt_to_p,
    mulhi_p, optimization_barrier_p, polygamma_p, population_count_p, reduce_precision_p,
    reduce_window_max_p, reduce_window_min_p, reduce_window_sum_p, reduce_xor_p,
    regularized_incomplete_beta_p, scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p,
    scatter_sub_p, split_p, square_p, squeeze_p, stack_p, tile_p, top_k_p, unstack_p, zeta_p,
    reduce_p, rng_bit_generator_p, device_put_p, sharding_constraint_p)

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""The primitive objects jax.lax exports for operations that fnx composes from other primitives
(``gather_p``, ``cumprod_p``, ``lgamma_p``, ...). Each is a real fnx Primitive: ``bind`` takes
JAX's operands and parameters, it stages into jaxprs under its own name, and its rules come
from its composition (shapes by tracing it, derivatives by its JVP, batching by its vmap); it
runs as the composition. fnx's own functions keep calling the composition directly.

>>> lax.cumprod_p.bind(jnp.array([1.0, 2.0, 3.0]), axis=0, reverse=False)
Array([1., 2., 6.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ..core import lax as core_lax
from ..core.ad import jvp_flat
from ..core.batching import batch_flat
from ..core.core import Primitive
from ..core.partial_eval import trace_to_jaxpr
from . import approx, arrays, bits, bessel, extras, gather_scatter, incomplete, special
from .zeta import polygamma, zeta
from ..core.convolution import reduce_window
from ..core.placement import device_put, with_sharding_constraint
from ..prng_impls import rng_bit_generator

COMPOSED: dict[str, Primitive] = {}


def _composed(name: str, composition, multiple_results: bool = False) -> Primitive:
    """A Primitive that runs ``composition(*operands, **params)`` and takes its rules from
    it."""
    p = Primitive(name, multiple_results)

    def run(*args, **params):
        out = composition(*args, **params)
        return list(out) if multiple_results else out

    def flat(params):
        def f(*args):
            out = run(*args, **params)
            return out if multiple_results else [out]
        return f

    def abstract_eval(*avals, **params):
        closed = trace_to_jaxpr(flat(params), list(avals), description=f"{name}'s composition")
        out = [v.aval for v in closed.jaxpr.outvars]
        return out if multiple_results else out[0]

    def jvp(primals, tangents, **params):
        outs, out_tangents = jvp_flat(flat(params), primals, tangents)
        if multiple_results:
            return outs, out_tangents
        return outs[0], out_tangents[0]

    def batch(vals, dims, *, axis_size, **params):
        outs = batch_flat(flat(params), vals, dims, axis_size)
        if multiple_results:
            return outs, [0] * len(outs)
        return outs[0], 0

    p.impl, p.abstract_eval, p.jvp, p.batch = run, abstract_eval, jvp, batch
    p.wants_axis_size = True
    COMPOSED[name] = p
    return p


# ---- elementwise ----------------------------------------------------------------------------

def _ignoring_accuracy(fn):
    return lambda *args, accuracy=None: fn(*args)


square_p = _composed("square", core_lax.square)
cbrt_p = _composed("cbrt", _ignoring_accuracy(core_lax.cbrt))
exp2_p = _composed("exp2", _ignoring_accuracy(core_lax.exp2))
clamp_p = _composed("clamp", core_lax.clamp)
lgamma_p = _composed("lgamma", special.lgamma)
digamma_p = _composed("digamma", special.digamma)
erfc_p = _composed("erfc", special.erfc)
igamma_p = _composed("igamma", incomplete.igamma)
igammac_p = _composed("igammac", incomplete.igammac)
igamma_grad_a_p = _composed("igamma_grad_a", incomplete.igamma_grad_a)
regularized_incomplete_beta_p = _composed("regularized_incomplete_beta",
                                                   incomplete.betainc)
zeta_p = _composed("zeta", zeta)
polygamma_p = _composed("polygamma", polygamma)
bessel_i0e_p = _composed("bessel_i0e", bessel.bessel_i0e)
bessel_i1e_p = _composed("bessel_i1e", bessel.bessel_i1e)
population_count_p = _composed("population_count", extras.population_count)
clz_p = _composed("clz", extras.clz)
mulhi_p = _composed("mulhi", bits.mulhi)
reduce_precision_p = _composed("reduce_precision", extras.reduce_precision)


def _total_order_key(x):
    """Integers that order as JAX's total order of ``x``: -NaN < -inf < ... < -0 < +0 < ...
    < inf < NaN (the float's bits, with those of negatives reversed)."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    signed = jnp.dtype(f"int{8 * x.dtype.itemsize}")
    bits_ = core_lax.bitcast_convert_type(x, signed)
    magnitude = np.iinfo(signed).max
    return jnp.where(bits_ < 0, bits_ ^ magnitude, bits_)


eq_to_p = _composed("eq_to", lambda x, y: _total_order_key(x) == _total_order_key(y))
le_to_p = _composed("le_to", lambda x, y: _total_order_key(x) <= _total_order_key(y))
lt_to_p = _composed("lt_to", lambda x, y: _total_order_key(x) < _total_order_key(y))

# ---- cumulative and windowed reductions -----------------------------------------------------

cumprod_p = _composed("cumprod", core_lax.cumprod)
cummax_p = _composed("cummax", core_lax.cummax)
cummin_p = _composed("cummin", core_lax.cummin)
cumlogsumexp_p = _composed("cumlogsumexp", core_lax.cumlogsumexp)
reduce_xor_p = _composed("reduce_xor", bits.reduce_xor)


def _window(init, computation):
    def reduce(operand, *, window_dimensions, window_strides, padding, base_dilation,
               window_dilation):
        return reduce_window(operand, init(operand.dtype), computation, window_dimensions,
                             window_strides, padding, base_dilation, window_dilation)
    return reduce


def _lowest(dtype):
    return -np.inf if jnp.issubdtype(dtype, jnp.floating) else jnp.iinfo(dtype).min


def _highest(dtype):
    return np.inf if jnp.issubdtype(dtype, jnp.floating) else jnp.iinfo(dtype).max


reduce_window_sum_p = _composed("reduce_window_sum",
                                         _window(lambda dtype: 0, core_lax.add))
reduce_window_max_p = _composed("reduce_window_max", _window(_lowest, core_lax.max_))
reduce_window_min_p = _composed("reduce_window_min", _window(_highest, core_lax.min_))

# ---- slicing, gathering and scattering ------------------------------------------------------

# the primitives clamp start indices; only the functions count negative ones from the end
dynamic_slice_p = _composed(
    "dynamic_slice", lambda operand, *starts, slice_sizes: core_lax.dynamic_slice(
        operand, starts, slice_sizes, allow_negative_indices=False))
dynamic_update_slice_p = _composed(
    "dynamic_update_slice", lambda operand, update, *starts: core_lax.dynamic_update_slice(
        operand, update, starts, allow_negative_indices=False))
gather_p = _composed("gather", gather_scatter.gather)


def _scatter(fn):
    def scatter(operand, indices, updates, *, dimension_numbers, indices_are_sorted=False,
                unique_indices=False, mode=None, update_jaxpr=None, update_consts=()):
        # update_jaxpr and update_consts name the combining function, which this one fixes
        return fn(operand, indices, updates, dimension_numbers,
                  indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                  mode=mode)
    return scatter


scatter_add_p = _composed("scatter-add", _scatter(gather_scatter.scatter_add))
scatter_sub_p = _composed("scatter-sub", _scatter(gather_scatter.scatter_sub))
scatter_mul_p = _composed("scatter-mul", _scatter(gather_scatter.scatter_mul))
scatter_min_p = _composed("scatter-min", _scatter(gather_scatter.scatter_min))
scatter_max_p = _composed("scatter-max", _scatter(gather_scatter.scatter_max))

# ---- shapes ---------------------------------------------------------------------------------

squeeze_p = _composed("squeeze", core_lax.squeeze)
tile_p = _composed("tile", arrays.tile)
split_p = _composed("split", extras.split, multiple_results=True)
stack_p = _composed("stack", lambda *operands, axis: arrays.stack(operands, axis))
unstack_p = _composed("unstack", arrays.unstack, multiple_results=True)
copy_p = _composed("copy", jnp.copy)
optimization_barrier_p = _composed(
    "optimization_barrier", lambda *operands: extras.optimization_barrier(operands),
    multiple_results=True)

# ---- selecting the largest ------------------------------------------------------------------


def _top_k(operand, *, k, axis=-1):
    moved = jnp.moveaxis(operand, axis, -1)
    values, indices = core_lax.top_k(moved, k)
    return jnp.moveaxis(values, -1, axis), jnp.moveaxis(indices, -1, axis)


def _approx_top_k(operand, *, k, reduction_dimension=-1, recall_target=0.95, is_max_k=True,
                  reduction_input_size_override=-1, aggregate_to_topk=True):
    select = approx.approx_max_k if is_max_k else approx.approx_min_k
    return select(operand, k, reduction_dimension, recall_target,
                  reduction_input_size_override, aggregate_to_topk)


top_k_p = _composed("top_k", _top_k, multiple_results=True)
approx_top_k_p = _composed("approx_top_k", _approx_top_k, multiple_results=True)

# ---- reductions of any computation, random bits, placement ----------------------------------


def _reduce(*operands_and_inits, computation, dimensions, jaxpr=None):
    # jaxpr is JAX's trace of computation, which fnx traces itself
    n = len(operands_and_inits) // 2
    operands, inits = operands_and_inits[:n], operands_and_inits[n:]
    if n == 1:
        return [extras.reduce(operands[0], inits[0], computation, dimensions)]
    return list(extras.reduce(tuple(operands), tuple(inits), computation, dimensions))


reduce_p = _composed("reduce", _reduce, multiple_results=True)
rng_bit_generator_p = _composed(
    "rng_bit_generator", lambda key, *, shape, dtype, algorithm, out_sharding=None:
    rng_bit_generator(key, shape, dtype, algorithm), multiple_results=True)
# copy_semantics: fnx's arrays are immutable, so a copy and an alias cannot be told apart
device_put_p = _composed(
    "device_put", lambda *xs, devices, srcs, copy_semantics:
    [device_put(x, device) for x, device in zip(xs, devices)], multiple_results=True)
sharding_constraint_p = _composed(
    "sharding_constraint", lambda x, *, sharding, layout=None, context_mesh=None,
    unconstrained_dims=frozenset(): with_sharding_constraint(x, sharding))

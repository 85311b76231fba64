"""fnx.optim: gradient transformations in optax's style.

An optimizer is a ``GradientTransformation(init, update)``: ``state = opt.init(params)``, then
``updates, state = opt.update(grads, state, params)`` and ``params = apply_updates(params,
updates)``. Transformations compose with ``chain``; learning rates are floats or schedules
(functions of the step count). Parameters, gradients and states are pytrees (modules included),
and everything is built from fnx.numpy, so an update runs under ``jit``.

>>> import fnx, fnx.optim as optim
>>> import fnx.numpy as jnp
>>> def loss(params, x, y):
...     return jnp.mean((x @ params["w"] - y) ** 2)
>>> params = {"w": jnp.zeros(2)}
>>> x, y = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([1.0, 2.0])
>>> opt = optim.adam(1e-3)
>>> state = opt.init(params)
>>> grads = fnx.grad(loss)(params, x, y)
>>> updates, state = opt.update(grads, state, params)
>>> params = optim.apply_updates(params, updates)
>>> params["w"]
Array([0.00099999, 0.00099999], dtype=float32)
"""
from __future__ import annotations

from typing import Any

from ._base import (Schedule, GradientTransformation, EmptyState, apply_updates, global_norm,
                    chain, identity, set_to_zero, stateless, stateless_with_tree_map,
                    incremental_update, periodic_update, OptState, Params, Updates,
                    ScalarOrSchedule, GradientTransformationExtraArgs, with_extra_args_support,
                    init_empty_state, ArrayTree, TransformInitFn, TransformUpdateFn,
                    TransformUpdateExtraArgsFn)  # noqa: F401
from ._numerics import (safe_norm, safe_root_mean_squares, safe_increment,  # noqa: F401
                        safe_int32_increment, scale_gradient)
from ._transforms import (ScaleByScheduleState, scale, scale_by_schedule, scale_by_learning_rate,
                          TraceState, trace, ScaleByAdamState, scale_by_adam, scale_by_adamax,
                          ScaleByAmsgradState, scale_by_amsgrad, ScaleByRssState, scale_by_rss,
                          ScaleByLionState, scale_by_lion, scale_by_trust_ratio, ScaleByRmsState,
                          ScaleByRmsWithCountState, ScaleByRStdDevWithCountState,
                          scale_by_rms, ScaleByRStdDevState, scale_by_stddev, ScaleByBeliefState,
                          scale_by_radam, scale_by_belief, EmaState, ema, scale_by_param_block_rms,
                          scale_by_sign, scale_by_yogi, ScaleByAdaDeltaState, scale_by_adadelta,
                          scale_by_param_block_norm, normalize_by_update_norm, ScaleByAdanState,
                          scale_by_adan, ScaleByRpropState, scale_by_rprop, ScaleBySM3State,
                          scale_by_sm3, ScaleByNovogradState, scale_by_novograd,
                          ScaleByOptimisticGradientState, scale_by_optimistic_gradient,
                          ScaleByDistanceOverGradientsState, scale_by_distance_over_gradients,
                          scale_by_polyak, ApplyEvery, apply_every, AddNoiseState,
                          add_noise)  # noqa: F401
from ._clipping import (clip_by_global_norm, clip, clip_by_block_rms,  # noqa: F401
                        per_example_global_norm_clip, per_example_layer_norm_clip,
                        unitwise_norm, unitwise_clip, adaptive_grad_clip)
from ._linesearch import (BacktrackingLinesearchInfo, ScaleByBacktrackingLinesearchState,  # noqa
                          scale_by_backtracking_linesearch, ZoomLinesearchInfo,
                          ScaleByZoomLinesearchState, scale_by_zoom_linesearch,
                          value_and_grad_from_state)
from ._lbfgs import ScaleByLBFGSState, scale_by_lbfgs, lbfgs  # noqa: F401
from ._lookahead import LookaheadParams, LookaheadState, lookahead  # noqa: F401
from ._monitoring import (SnapshotState, snapshot, MonitorState, monitor,  # noqa: F401
                          measure_with_ema)
from ._constrain import (WeightDecaySchedule, add_decayed_weights, centralize, ZeroNansState, zero_nans,
                         keep_params_nonnegative)  # noqa: F401
from ._factorized import (FactoredState, scale_by_factored_rms)  # noqa: F401
from ._wrappers import (MaskedState, masked, MultiTransformState, multi_transform,
                        InjectHyperparamsState, inject_hyperparams, ApplyIfFiniteState,
                        apply_if_finite, MultiStepsState, MultiSteps, partition, PartitionState,
                        named_chain, ConditionallyTransformState, ConditionallyMaskState,
                        conditionally_transform, conditionally_mask, freeze,
                        selective_transform, flatten, skip_not_finite, skip_large_updates,
                        MaskedNode, ShouldSkipUpdateFunction, InjectStatefulHyperparamsState,
                        WrappedScheduleState, WrappedSchedule, inject_stateful_hyperparams)  # noqa: F401
from ._schedules import (constant_schedule, polynomial_schedule, linear_schedule,
                         exponential_decay, cosine_decay_schedule, join_schedules,
                         warmup_cosine_decay_schedule, piecewise_interpolate_schedule,
                         linear_onecycle_schedule, cosine_onecycle_schedule,
                         piecewise_constant_schedule, sgdr_schedule, warmup_constant_schedule,
                         warmup_exponential_decay_schedule)  # noqa: F401
from ._optimizers import (sgd, adam, adamw, rmsprop, nadam, adamax, amsgrad, adagrad, lion, lamb,
                          radam, adabelief, adafactor, sign_sgd, signum, yogi, adadelta, adamaxw,
                          nadamw, adan, fromage, lars, noisy_sgd, novograd,
                          optimistic_gradient_descent, optimistic_adam_v2, optimistic_adam,
                          polyak_sgd, rprop, sm3)  # noqa: F401
from ._linear_algebra import (MultiNormalDiagFromLogScale, matrix_inverse_pth_root,  # noqa
                              multi_normal, nnls, power_iteration)
from . import (assignment, contrib, microbatching, perturbations, projections,  # noqa: F401
               schedules, second_order, transforms, tree, tree_utils)
from .tree_utils import tree_map_params  # noqa: F401
microbatch = microbatching.microbatch
from .tree_utils import (tree_bias_correction as bias_correction,  # noqa: F401
                         tree_update_moment as update_moment,
                         tree_update_infinity_moment as update_infinity_moment,
                         tree_update_moment_per_elem_norm as update_moment_per_elem_norm)

# optax's names for the states of its stateless transformations
AdaptiveGradClipState = ClipByGlobalNormState = ClipState = EmptyState
AddDecayedWeightsState = ScaleByTrustRatioState = ScaleState = EmptyState
NonNegativeParamsState = EmptyState
MaskOrFn = Any

from . import losses  # noqa: E402  (optax.losses' names)
from .losses import (cosine_distance, cosine_similarity, hinge_loss, huber_loss,  # noqa: F401
                     kl_divergence, l2_loss, log_cosh,
                     sigmoid_binary_cross_entropy, smooth_labels, softmax_cross_entropy,
                     softmax_cross_entropy_with_integer_labels, squared_error,
                     convex_kl_divergence, generalized_kl_divergence, sigmoid_focal_loss,
                     sparsemax_loss, safe_softmax_cross_entropy, ctc_loss,
                     ctc_loss_with_forward_probs, ntxent, triplet_margin_loss, dice_loss,
                     ranking_softmax_loss)

__all__ = ['GradientTransformation', 'EmptyState', 'apply_updates', 'global_norm', 'chain',
           'scale', 'scale_by_schedule', 'scale_by_learning_rate', 'trace', 'scale_by_adam',
           'scale_by_rms', 'scale_by_stddev', 'add_decayed_weights', 'clip_by_global_norm', 'clip',
           'sgd', 'adam', 'adamw', 'rmsprop', 'constant_schedule', 'polynomial_schedule',
           'linear_schedule', 'exponential_decay', 'cosine_decay_schedule', 'join_schedules',
           'warmup_cosine_decay_schedule', 'scale_by_adamax', 'scale_by_amsgrad', 'scale_by_rss',
           'scale_by_lion', 'scale_by_trust_ratio', 'nadam', 'adamax', 'amsgrad', 'adagrad',
           'lion', 'lamb', 'masked', 'apply_if_finite', 'MultiSteps', 'MultiStepsState',
           'piecewise_constant_schedule', 'scale_by_radam', 'scale_by_belief', 'radam',
           'adabelief', 'ema', 'EmaState', 'multi_transform', 'MultiTransformState',
           'inject_hyperparams', 'InjectHyperparamsState', 'piecewise_interpolate_schedule',
           'linear_onecycle_schedule', 'cosine_onecycle_schedule', 'losses', 'adafactor',
           'scale_by_factored_rms', 'clip_by_block_rms', 'scale_by_param_block_rms',
           'FactoredState', 'identity', 'set_to_zero', 'stateless', 'stateless_with_tree_map',
           'incremental_update', 'periodic_update', 'OptState', 'Params', 'Updates',
           'ScalarOrSchedule', 'scale_by_sign', 'sign_sgd', 'signum', 'scale_by_yogi', 'yogi',
           'ScaleByAdaDeltaState', 'scale_by_adadelta', 'adadelta', 'adamaxw', 'nadamw',
           'centralize', 'ZeroNansState', 'zero_nans', 'keep_params_nonnegative', 'sgdr_schedule',
           'warmup_constant_schedule', 'warmup_exponential_decay_schedule', 'safe_norm',
           'safe_root_mean_squares', 'safe_increment', 'safe_int32_increment']
# optax exports most of its losses at the top too
__all__ += [n for n in losses.__all__ if n in globals() and n != "kl_divergence_with_log_targets"]
__all__ += ["GradientTransformationExtraArgs", "with_extra_args_support", "init_empty_state",
            "scale_by_param_block_norm", "normalize_by_update_norm", "ScaleByAdanState",
            "scale_by_adan", "ScaleByRpropState", "scale_by_rprop", "ScaleBySM3State",
            "scale_by_sm3", "ScaleByNovogradState", "scale_by_novograd",
            "scale_by_optimistic_gradient", "scale_by_distance_over_gradients",
            "scale_by_polyak", "ApplyEvery", "apply_every", "AddNoiseState", "add_noise",
            "partition", "named_chain", "ConditionallyTransformState",
            "ConditionallyMaskState", "conditionally_transform", "conditionally_mask", "freeze",
            "selective_transform", "flatten", "skip_not_finite", "skip_large_updates",
            "MaskedNode", "adan", "fromage", "lars", "noisy_sgd", "novograd",
            "optimistic_gradient_descent", "optimistic_adam_v2", "optimistic_adam",
            "polyak_sgd", "rprop", "sm3", "bias_correction", "update_moment",
            "update_infinity_moment", "update_moment_per_elem_norm", "projections",
            "tree_utils", "schedules", "transforms", "tree"]
__all__ += ["per_example_global_norm_clip", "per_example_layer_norm_clip", "unitwise_norm",
            "unitwise_clip", "adaptive_grad_clip", "AdaptiveGradClipState", "LookaheadParams",
            "LookaheadState", "lookahead", "SnapshotState", "snapshot", "MonitorState",
            "monitor", "measure_with_ema", "scale_gradient", "InjectStatefulHyperparamsState",
            "WrappedScheduleState", "WrappedSchedule", "inject_stateful_hyperparams",
            "NonNegativeParamsState", "BacktrackingLinesearchInfo",
            "ScaleByBacktrackingLinesearchState", "scale_by_backtracking_linesearch",
            "ZoomLinesearchInfo", "ScaleByZoomLinesearchState", "scale_by_zoom_linesearch",
            "value_and_grad_from_state", "ScaleByRmsWithCountState", "contrib",
            "ScaleByLBFGSState", "scale_by_lbfgs", "lbfgs", "ScaleByRStdDevWithCountState"]
__all__ += ["assignment", "perturbations", "second_order", "tree_map_params", "microbatching",
            "microbatch", "matrix_inverse_pth_root", "multi_normal", "nnls", "power_iteration"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

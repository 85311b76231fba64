"""``optax._src.transform``: the scale_by_* transformations and their states
(re-exported from fnx.optim)."""
from .. import (
    AddDecayedWeightsState, AddNoiseState, ApplyEvery, EmaState, ScaleByAdaDeltaState,
    ScaleByAdamState, ScaleByAdanState, ScaleByAmsgradState, ScaleByBeliefState,
    ScaleByDistanceOverGradientsState, ScaleByLBFGSState, ScaleByLionState,
    ScaleByNovogradState, ScaleByOptimisticGradientState, ScaleByRStdDevState,
    ScaleByRStdDevWithCountState, ScaleByRmsState, ScaleByRmsWithCountState,
    ScaleByRpropState, ScaleByRssState, ScaleBySM3State, ScaleByScheduleState,
    ScaleByTrustRatioState, ScaleState, TraceState, add_decayed_weights, add_noise,
    apply_every, centralize, ema, normalize_by_update_norm, scale, scale_by_adadelta,
    scale_by_adam, scale_by_adamax, scale_by_adan, scale_by_amsgrad, scale_by_belief,
    scale_by_distance_over_gradients, scale_by_lbfgs, scale_by_learning_rate, scale_by_lion,
    scale_by_novograd, scale_by_optimistic_gradient, scale_by_param_block_norm,
    scale_by_param_block_rms, scale_by_polyak, scale_by_radam, scale_by_rms, scale_by_rprop,
    scale_by_rss, scale_by_schedule, scale_by_sign, scale_by_sm3, scale_by_stddev,
    scale_by_trust_ratio, scale_by_yogi, trace,
)

__all__ = [
    'AddDecayedWeightsState', 'AddNoiseState', 'ApplyEvery', 'EmaState',
    'ScaleByAdaDeltaState', 'ScaleByAdamState', 'ScaleByAdanState', 'ScaleByAmsgradState',
    'ScaleByBeliefState', 'ScaleByDistanceOverGradientsState', 'ScaleByLBFGSState',
    'ScaleByLionState', 'ScaleByNovogradState', 'ScaleByOptimisticGradientState',
    'ScaleByRStdDevState', 'ScaleByRStdDevWithCountState', 'ScaleByRmsState',
    'ScaleByRmsWithCountState', 'ScaleByRpropState', 'ScaleByRssState', 'ScaleBySM3State',
    'ScaleByScheduleState', 'ScaleByTrustRatioState', 'ScaleState', 'TraceState',
    'add_decayed_weights', 'add_noise', 'apply_every', 'centralize', 'ema',
    'normalize_by_update_norm', 'scale', 'scale_by_adadelta', 'scale_by_adam',
    'scale_by_adamax', 'scale_by_adan', 'scale_by_amsgrad', 'scale_by_belief',
    'scale_by_distance_over_gradients', 'scale_by_lbfgs', 'scale_by_learning_rate',
    'scale_by_lion', 'scale_by_novograd', 'scale_by_optimistic_gradient',
    'scale_by_param_block_norm', 'scale_by_param_block_rms', 'scale_by_polyak',
    'scale_by_radam', 'scale_by_rms', 'scale_by_rprop', 'scale_by_rss', 'scale_by_schedule',
    'scale_by_sign', 'scale_by_sm3', 'scale_by_stddev', 'scale_by_trust_ratio',
    'scale_by_yogi', 'trace',
]

"""``optax._src.schedule``: learning-rate schedules
(re-exported from fnx.optim)."""
from .. import (
    InjectHyperparamsState, constant_schedule, cosine_decay_schedule,
    cosine_onecycle_schedule, exponential_decay, inject_hyperparams, join_schedules,
    linear_onecycle_schedule, linear_schedule, piecewise_constant_schedule,
    piecewise_interpolate_schedule, polynomial_schedule, sgdr_schedule,
    warmup_constant_schedule, warmup_cosine_decay_schedule,
    warmup_exponential_decay_schedule,
)

__all__ = [
    'InjectHyperparamsState', 'constant_schedule', 'cosine_decay_schedule',
    'cosine_onecycle_schedule', 'exponential_decay', 'inject_hyperparams', 'join_schedules',
    'linear_onecycle_schedule', 'linear_schedule', 'piecewise_constant_schedule',
    'piecewise_interpolate_schedule', 'polynomial_schedule', 'sgdr_schedule',
    'warmup_constant_schedule', 'warmup_cosine_decay_schedule',
    'warmup_exponential_decay_schedule',
]

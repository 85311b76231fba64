"""fnx.optim.schedules: optax.schedules' names (the same objects as fnx.optim's).

>>> from fnx.optim import schedules
>>> schedules.linear_schedule(0.0, 1.0, 10)(5)
Array(0.5, dtype=float32)
"""
from ._base import Schedule, StatefulSchedule  # noqa: F401
from ._schedules import (constant_schedule, cosine_decay_schedule,  # noqa: F401
                         cosine_onecycle_schedule, exponential_decay, join_schedules,
                         linear_onecycle_schedule, linear_schedule, piecewise_constant_schedule,
                         piecewise_interpolate_schedule, polynomial_schedule, sgdr_schedule,
                         warmup_constant_schedule, warmup_cosine_decay_schedule,
                         warmup_exponential_decay_schedule)
from ._wrappers import (InjectHyperparamsState, InjectStatefulHyperparamsState,  # noqa: F401
                        WrappedSchedule, WrappedScheduleState, inject_hyperparams,
                        inject_stateful_hyperparams)

"""``optax._src.base``: gradient transformations, their states and types
(re-exported from fnx.optim)."""
from typing import Any, Sequence

from ...core.core import Array
from .._base import StatefulSchedule
from .. import (
    ArrayTree, EmptyState, GradientTransformation, GradientTransformationExtraArgs,
    OptState, Params, ScalarOrSchedule, Schedule, TransformInitFn,
    TransformUpdateExtraArgsFn, TransformUpdateFn, Updates, identity, init_empty_state,
    set_to_zero, stateless, stateless_with_tree_map, with_extra_args_support,
)

# the type names optax declares beside its transformations, for annotations
PyTree = Any
Shape = Sequence[int]
PRNGKey = Array
ScheduleState = Any      # what a stateful schedule keeps between steps

__all__ = [
    'ArrayTree', 'EmptyState', 'GradientTransformation', 'GradientTransformationExtraArgs',
    'OptState', 'PRNGKey', 'Params', 'PyTree', 'ScalarOrSchedule', 'Schedule', 'ScheduleState',
    'Shape', 'StatefulSchedule',
    'TransformInitFn', 'TransformUpdateExtraArgsFn', 'TransformUpdateFn', 'Updates',
    'identity', 'init_empty_state', 'set_to_zero', 'stateless', 'stateless_with_tree_map',
    'with_extra_args_support',
]

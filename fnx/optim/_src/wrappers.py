"""``optax._src.wrappers``: wrappers of transformations
(re-exported from fnx.optim)."""
from .. import (
    ApplyIfFiniteState, ConditionallyMaskState, ConditionallyTransformState, MaskedNode,
    MaskedState, MultiSteps, MultiStepsState, ShouldSkipUpdateFunction, apply_if_finite,
    conditionally_mask, conditionally_transform, flatten, masked, skip_large_updates,
    skip_not_finite,
)

__all__ = [
    'ApplyIfFiniteState', 'ConditionallyMaskState', 'ConditionallyTransformState',
    'MaskedNode', 'MaskedState', 'MultiSteps', 'MultiStepsState',
    'ShouldSkipUpdateFunction', 'apply_if_finite', 'conditionally_mask',
    'conditionally_transform', 'flatten', 'masked', 'skip_large_updates', 'skip_not_finite',
]

"""fnx.optim.transforms: optax.transforms' names (the same objects as fnx.optim's).

>>> from fnx.optim import transforms
>>> tx = transforms.clip(1.0)
>>> tx.update(jnp.array([3.0]), tx.init(None))[0]
Array([1.], dtype=float32)
"""
from ._base import ConditionFn, EmptyState as NonNegativeParamsState, chain  # noqa: F401
from ._clipping import (adaptive_grad_clip, clip, clip_by_block_rms,  # noqa: F401
                        clip_by_global_norm, per_example_global_norm_clip,
                        per_example_layer_norm_clip, unitwise_clip, unitwise_norm)
from ._monitoring import (MonitorState, SnapshotState, measure_with_ema,  # noqa: F401
                          monitor, snapshot)
from ._constrain import (add_decayed_weights, keep_params_nonnegative,  # noqa: F401
                         ZeroNansState, zero_nans)
from ._transforms import AddNoiseState, EmaState, TraceState, add_noise, ema, trace  # noqa: F401
from ._wrappers import (ApplyIfFiniteState, ConditionallyMaskState,  # noqa: F401
                        ConditionallyTransformState, MaskedNode, MaskedState, MultiSteps,
                        MultiStepsState, PartitionState, ShouldSkipUpdateFunction,
                        apply_if_finite, conditionally_mask, conditionally_transform, flatten,
                        freeze, masked, named_chain, partition, selective_transform,
                        skip_large_updates, skip_not_finite)

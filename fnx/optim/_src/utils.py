"""``optax._src.utils``: tree and dtype helpers
(re-exported from fnx.optim)."""
from .. import (
    MultiNormalDiagFromLogScale, multi_normal, safe_int32_increment, safe_norm,
    scale_gradient,
)

__all__ = [
    'MultiNormalDiagFromLogScale', 'multi_normal', 'safe_int32_increment', 'safe_norm',
    'scale_gradient',
]

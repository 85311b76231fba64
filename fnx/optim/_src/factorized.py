"""``optax._src.factorized``: factored second moments
(re-exported from fnx.optim)."""
from .. import (
    FactoredState, scale_by_factored_rms,
)

__all__ = [
    'FactoredState', 'scale_by_factored_rms',
]

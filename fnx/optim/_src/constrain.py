"""``optax._src.constrain``: constraints on updates
(re-exported from fnx.optim)."""
from .. import (
    NonNegativeParamsState, ZeroNansState, keep_params_nonnegative, zero_nans,
)

__all__ = [
    'NonNegativeParamsState', 'ZeroNansState', 'keep_params_nonnegative', 'zero_nans',
]

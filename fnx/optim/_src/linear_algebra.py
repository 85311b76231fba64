"""``optax._src.linear_algebra``: norms and matrix helpers
(re-exported from fnx.optim)."""
from .. import (
    global_norm, matrix_inverse_pth_root, nnls, power_iteration,
)

__all__ = [
    'global_norm', 'matrix_inverse_pth_root', 'nnls', 'power_iteration',
]

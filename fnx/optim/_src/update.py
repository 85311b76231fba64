"""``optax._src.update``: applying updates to parameters
(re-exported from fnx.optim)."""
from .. import (
    apply_updates, incremental_update, periodic_update,
)

__all__ = [
    'apply_updates', 'incremental_update', 'periodic_update',
]

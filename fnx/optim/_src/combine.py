"""``optax._src.combine``: chaining and partitioning transformations
(re-exported from fnx.optim)."""
from .. import (
    MultiTransformState, chain, multi_transform, named_chain, partition,
)

__all__ = [
    'MultiTransformState', 'chain', 'multi_transform', 'named_chain', 'partition',
]

"""``optax._src.lookahead``: the lookahead wrapper
(re-exported from fnx.optim)."""
from .. import (
    LookaheadParams, LookaheadState, lookahead,
)

__all__ = [
    'LookaheadParams', 'LookaheadState', 'lookahead',
]

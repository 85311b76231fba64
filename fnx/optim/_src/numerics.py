"""``optax._src.numerics``: numerically safe helpers
(re-exported from fnx.optim)."""
from .. import (
    safe_increment, safe_int32_increment, safe_norm, safe_root_mean_squares,
)


def abs_sq(x):
    """``|x| ** 2`` elementwise, a real array for complex ``x``.

    >>> abs_sq(jnp.array([3 + 4j, 1 - 1j]))
    Array([25.,  2.], dtype=float32)
    """
    if not hasattr(x, "shape"):
        raise ValueError(f"abs_sq takes an array, not {type(x).__name__}")
    return (x.conj() * x).real


__all__ = [
    'abs_sq', 'safe_increment', 'safe_int32_increment', 'safe_norm',
    'safe_root_mean_squares',
]

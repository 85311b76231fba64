"""``optax._src.utils``: tree and dtype helpers
(re-exported from fnx.optim)."""
from ... import dtypes
from .. import (
    MultiNormalDiagFromLogScale, multi_normal, safe_int32_increment, safe_norm,
    scale_gradient,
)


def canonicalize_dtype(dtype):
    """``dtype`` as the dtype arrays get under the x64 switch (``float64`` becomes ``float32``
    with it off), or None for None, as optax's.

    >>> canonicalize_dtype(None) is None, canonicalize_dtype("float32")
    (True, dtype('float32'))
    """
    return None if dtype is None else dtypes.canonicalize_dtype(dtype)


__all__ = [
    'MultiNormalDiagFromLogScale', 'canonicalize_dtype', 'multi_normal',
    'safe_int32_increment', 'safe_norm', 'scale_gradient',
]

"""The NaN check of ``debug_nans``: every eager primitive and every equation of a jitted program
that made a NaN is named, with its source line."""
from __future__ import annotations

import numpy as np

from . import dtypes
from .errors import FnxError, user_frame


class NaNError(FnxError, FloatingPointError):
    """debug_nans found a NaN: names the primitive that produced it and where.

    >>> with fnx.config.option("debug_nans", True):
    ...     try:
    ...         jnp.log(jnp.array([-1.0]))
    ...     except fnx.debug.NaNError as e:
    ...         print(type(e).__name__)
    NaNError
    """


def _on_host(x):
    """``x`` (an Array, a NumPy or CuPy buffer, a scalar) as a NumPy array."""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return np.asarray(x)
    get = getattr(x, "get", None)       # a device buffer copies itself to the host
    return get() if callable(get) else np.asarray(x)


def check_nans(primitive, outs, source=None):
    """Raise NaNError if any float output of ``primitive`` contains a NaN."""
    for o in outs:
        v = _on_host(o)
        if dtypes.is_float(v.dtype) and np.isnan(v).any():
            where = source or user_frame()
            raise NaNError(f"debug_nans: primitive '{primitive}' produced a NaN "
                           f"(output {v.dtype.name}{list(v.shape)})", source=where)

"""The checks of ``debug_nans`` and ``debug_infs``: every eager primitive and every equation of
a jitted program that made a NaN (or an infinity) is named, with its source line."""
from __future__ import annotations

import numpy as np

from . import dtypes
from .config import config
from .errors import FnxError, user_frame


class NaNError(FnxError, FloatingPointError):
    """debug_nans found a NaN (or debug_infs an infinity): names the primitive that produced
    it and where.

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


def checking(config) -> bool:
    """Whether results are checked (``debug_nans`` or ``debug_infs`` on)."""
    return config.debug_nans or config.debug_infs


def _bad(v, nans: bool, infs: bool):
    """What the checks find in the host array ``v``: 'a NaN', 'an inf' or None."""
    if not dtypes.is_float(v.dtype):
        return None
    if nans and np.isnan(v).any():
        return "a NaN"
    if infs and np.isinf(v).any():
        return "an inf"
    return None


def any_bad(outs, nans: bool, infs: bool) -> bool:
    return any(_bad(_on_host(o), nans, infs) for o in outs)


def check_nans(primitive, outs, source=None, *, nans=None, infs=None):
    """Raise NaNError if any float output of ``primitive`` contains a NaN (``nans``, by
    default ``debug_nans``) or an infinity (``infs``, by default ``debug_infs``)."""
    nans = config.debug_nans if nans is None else nans
    infs = config.debug_infs if infs is None else infs
    for o in outs:
        v = _on_host(o)
        found = _bad(v, nans, infs)
        if found:
            option = "debug_nans" if found == "a NaN" else "debug_infs"
            raise NaNError(f"{option}: primitive '{primitive}' produced {found} "
                           f"(output {v.dtype.name}{list(v.shape)})", source=source or user_frame())

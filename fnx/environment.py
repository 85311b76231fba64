"""What fnx runs on and what it holds: ``print_environment_info``, ``live_arrays`` and
``copy_to_host_async``, as JAX's top-level functions.

>>> "fnx:" in fnx.print_environment_info(return_string=True)
True
"""
from __future__ import annotations

import gc
import platform as _platform
import sys

import numpy as np

from .core.core import Array, devices
from .core.pytree import tree_leaves
from .version import __version__


def print_environment_info(return_string: bool = False) -> str | None:
    """The versions of fnx, NumPy, CuPy and Python, the devices and the platform: printed, or
    returned with ``return_string=True`` (for bug reports)."""
    try:
        import cupy
        cupy_version = cupy.__version__
    except Exception:        # absent, or present without a working CUDA: either way no GPU
        cupy_version = "not installed"
    found = devices()
    kinds = sorted({d.platform for d in found})
    text = (f"fnx:    {__version__}\n"
            f"numpy:  {np.__version__}\n"
            f"cupy:   {cupy_version}\n"
            f"python: {sys.version}\n"
            f"device info: {', '.join(kinds)}-{len(found)}, {len(found)} local devices\n"
            f"process_count: 1\n"
            f"platform: {_platform.uname()}\n")
    if return_string:
        return text
    print(text)
    return None


def live_arrays(platform: str | None = None) -> list:
    """Every array not yet deleted (on ``platform``, "cpu" or "gpu", if given): to find what
    holds memory.

    >>> x = fnx.numpy.ones(3)
    >>> any(a is x for a in fnx.live_arrays())
    True
    """
    return [a for a in gc.get_objects() if type(a) is Array and not a.is_deleted()
            and (platform is None or a._backend.name == platform)]


def copy_to_host_async(x):
    """Start copying every array leaf of ``x`` to the host (fnx's reads of a value already
    wait for it, so this is where a transfer may begin early); returns ``x``.

    >>> x = fnx.copy_to_host_async(fnx.numpy.ones(2))
    """
    for leaf in tree_leaves(x):
        start = getattr(leaf, "copy_to_host_async", None)
        if start is not None:
            start()
    return x


__all__ = ["copy_to_host_async", "live_arrays", "print_environment_info"]

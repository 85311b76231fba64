"""``jax.extend.backend``: the backends fnx runs on and their devices.

>>> get_backend().platform in ("cpu", "gpu")
True
"""
from __future__ import annotations

from ..core import core as _core
from ..core.jit import clear_caches as _clear_caches


def get_backend(platform=None):
    """The backend named ``platform`` (``'cpu'``, ``'gpu'``; the default one when None).

    >>> get_backend("cpu").platform
    'cpu'
    """
    return _core.get_backend(platform)


def backends() -> dict:
    """The backends fnx has, by name.

    >>> "cpu" in backends()
    True
    """
    _core.get_backend()         # finds a GPU, once, as the first array would
    return dict(_core._backends)


def get_default_device():
    """The device new arrays go to.

    >>> get_default_device().platform in ("cpu", "gpu")
    True
    """
    return _core.devices()[0]


def clear_backends() -> None:
    """Drop compiled programs (fnx keeps its backends; JAX re-creates its clients).

    >>> clear_backends()
    """
    _clear_caches()


def backend_xla_version(platform=None):
    """None: fnx compiles no XLA.

    >>> backend_xla_version() is None
    True
    """
    return None

"""``jax.lib.xla_bridge``'s questions programs still ask: which backend, how many devices.

>>> fnx.lib.xla_bridge.device_count() >= 1
True
"""
from __future__ import annotations

from ..core import core


class _Backend:
    """A backend as programs inspect it: its platform and devices."""

    def __init__(self, platform: str):
        self.platform = platform

    def devices(self):
        return core.devices(self.platform)

    def device_count(self) -> int:
        return len(self.devices())

    def local_devices(self):
        return self.devices()

    def __repr__(self):
        return f"Backend({self.platform!r})"


def get_backend(platform: str | None = None) -> _Backend:
    """The backend of ``platform`` ("cpu", "gpu"), or the default one.

    >>> fnx.lib.xla_bridge.get_backend("cpu").platform
    'cpu'
    """
    return _Backend(platform or core.default_backend())


def default_backend() -> str:
    """The platform new arrays go to.

    >>> fnx.lib.xla_bridge.default_backend() == fnx.default_backend()
    True
    """
    return core.default_backend()


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` (or the default one) has.

    >>> fnx.lib.xla_bridge.device_count("cpu") >= 1
    True
    """
    return core.device_count(backend)


def local_device_count(backend: str | None = None) -> int:
    """How many of ``backend``'s devices this process drives (all of them: one process).

    >>> fnx.lib.xla_bridge.local_device_count() == fnx.lib.xla_bridge.device_count()
    True
    """
    return core.local_device_count(backend)


def process_index() -> int:
    """This process's index among the program's processes (fnx runs one).

    >>> fnx.lib.xla_bridge.process_index()
    0
    """
    return 0


__all__ = ["default_backend", "device_count", "get_backend", "local_device_count",
           "process_index"]

"""``jax.memory``: where an array's memory lives.

>>> fnx.memory.Space.Device
MemorySpace.Device
"""
from __future__ import annotations

import enum


class Space(enum.Enum):
    """A memory space: the device's, the host's, or any.

    >>> [space.name for space in fnx.memory.Space]
    ['Device', 'Host', 'Any']
    """
    Device = "device"
    Host = "host"
    Any = "any"

    def __repr__(self):
        return f"MemorySpace.{self.name}"

    __str__ = __repr__


__all__ = ["Space"]

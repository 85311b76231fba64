"""Backends run primitives on real buffers. Each one is an impl table keyed by primitive.

The NumPy backend (CPU) is always there. The CuPy backend (GPU) registers itself when CuPy and a
GPU are found; CuPy is imported only then.
"""
from __future__ import annotations

from typing import Any, Protocol

from ..core.core import register_backend
from . import numpy_backend


class Backend(Protocol):
    """What fnx needs from a place that runs arrays."""
    name: str
    impls: dict            # Primitive -> callable(*buffers, **params) -> buffer(s)

    def to_buffer(self, x: Any, dtype) -> Any: ...      # scalar / ndarray / Array -> buffer
    def cast(self, buf: Any, dtype) -> Any: ...         # make sure a result has ``dtype``
    def to_numpy(self, buf: Any): ...                   # buffer -> numpy.ndarray
    def from_numpy(self, x): ...
    def synchronize(self, buf: Any) -> None: ...


register_backend("cpu", numpy_backend.backend, default=True)

__all__ = ["Backend", "numpy_backend"]

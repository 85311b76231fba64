"""The persistent compilation cache's settings, as ``jax.experimental.compilation_cache``.

fnx compiles a jaxpr to NumPy steps (CPU) or CUDA kernels cached on their own: the directory is
recorded in ``config.compilation_cache_dir`` so configuration code runs unchanged.

>>> from fnx.experimental.compilation_cache import compilation_cache as cc
>>> cc.set_cache_dir("/tmp/fnx_cache")
>>> fnx.config.compilation_cache_dir
'/tmp/fnx_cache'
"""
from ...core.config import config


def set_cache_dir(path) -> None:
    """Records ``path`` as the compilation cache directory (``jax_compilation_cache_dir``)."""
    config.update("compilation_cache_dir", str(path))


def is_initialized() -> bool:
    """Whether a cache directory was set."""
    return getattr(config, "compilation_cache_dir", None) is not None


def reset_cache() -> None:
    """Forgets the cache directory."""
    config.update("compilation_cache_dir", None)

"""fnx's version, as ``jax.version`` holds JAX's.

>>> fnx.version.__version__ == fnx.__version__
True
"""
__version__ = "0.1.0"
_version = __version__

"""fnx.example_libraries: JAX's teaching libraries, ``stax`` (layers as ``(init_fun, apply_fun)``
pairs) and ``optimizers`` (optimizers as ``(init_fun, update_fun, get_params)`` triples), so the
programs written against ``jax.example_libraries`` run with their imports changed."""
from . import optimizers, stax  # noqa: F401

__all__ = ["optimizers", "stax"]

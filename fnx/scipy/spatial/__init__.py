"""fnx.scipy.spatial: JAX's ``jax.scipy.spatial`` (the ``transform`` module's rotations).

>>> from fnx.scipy.spatial.transform import Rotation
>>> Rotation.identity().magnitude()
Array(0., dtype=float32)
"""
from . import transform  # noqa: F401

__all__ = ["transform"]

"""fnx.ad_checkpoint: JAX's ``jax.ad_checkpoint`` names (rematerialisation).

>>> from fnx.ad_checkpoint import checkpoint, checkpoint_name
"""
from .core.custom_derivatives import checkpoint, checkpoint_name, checkpoint_policies, remat

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]

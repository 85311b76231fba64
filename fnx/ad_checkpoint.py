"""``jax.ad_checkpoint``'s names: rematerialisation with policies that choose the residuals.

>>> from fnx.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies
>>> policy = checkpoint_policies.save_only_these_names("hidden")
"""
from .core.custom_derivatives import checkpoint, remat
from .core.remat_policies import checkpoint_name, checkpoint_policies

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]

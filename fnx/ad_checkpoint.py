"""``jax.ad_checkpoint``'s names: rematerialisation with policies that choose the residuals.

>>> from fnx.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies
>>> policy = checkpoint_policies.save_only_these_names("hidden")
"""
from .core.custom_derivatives import checkpoint, remat
from .core.remat_policies import checkpoint_name, checkpoint_policies
from .core.saved_residuals import print_saved_residuals, saved_residuals

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

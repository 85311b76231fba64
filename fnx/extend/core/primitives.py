"""``jax.extend.core.primitives``: the primitive objects of the operations fnx has, under
JAX's names (``add_p``, ``dot_general_p``, ``scan_p``, ``cholesky_p``, ...).

>>> add_p.bind(1.0, 2.0)
Array(3., dtype=float32, weak_type=True)
"""
from __future__ import annotations

from ... import lax as _lax
from ...core import custom_derivatives as _custom, linalg_prims as _linalg
from ...core.core import Primitive as _Primitive
from ...core.jit import pjit_p as jit_p  # noqa: F401
from ...core.remat_policies import name_p  # noqa: F401


def _primitives_of(module) -> dict:
    return {n: v for n, v in vars(module).items()
            if n.endswith("_p") and isinstance(v, _Primitive)}


globals().update(_primitives_of(_lax))
globals().update(_primitives_of(_linalg))
custom_jvp_call_p = _custom.custom_jvp_call_p
custom_vjp_call_p = _custom.custom_vjp_call_p
custom_lin_p = _custom.custom_lin_p
remat_p = _custom.remat_p

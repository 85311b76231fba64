"""fnx.optim.contrib: optax.contrib's optimizers (the same names, states and numerics).

>>> from fnx.optim import contrib
>>> opt = contrib.schedule_free_adamw(1e-3)
>>> params = jnp.ones(2)
>>> state = opt.init(params)
>>> eval_params = contrib.schedule_free_eval_params(state, params)
"""
from ._acprop import acprop, scale_by_acprop  # noqa: F401
from ._adopt import adopt, scale_by_adopt  # noqa: F401
from ._ademamix import (ScaleByAdemamixState, ScaleBySimplifiedAdEMAMixState,  # noqa: F401
                        ademamix, scale_by_ademamix, scale_by_simplified_ademamix,
                        simplified_ademamix)
from ._cocob import COCOBState, cocob, scale_by_cocob  # noqa: F401
from ._complex_valued import (SplitRealAndImaginaryArrays,  # noqa: F401
                              SplitRealAndImaginaryState, split_real_and_imaginary)
from ._dadapt import DAdaptAdamWState, ProdigyState, dadapt_adamw, prodigy  # noqa: F401
from ._dog import (DoGState, DoWGState, dog, dowg, scale_by_dog, scale_by_dowg)  # noqa: F401
from ._galore import (GaLoreDimensionNumbers, GaLoreState, galore,  # noqa: F401
                      scale_by_galore)
from ._madgrad import MadgradState, madgrad, scale_by_madgrad  # noqa: F401
from ._mechanic import MechanicState, mechanize  # noqa: F401
from ._momo import MomoAdamState, MomoState, momo, momo_adam  # noqa: F401
from ._muon import (MuonDimensionNumbers, MuonState, muon,  # noqa: F401
                    orthogonalize_via_newton_schulz, scale_by_muon, scale_by_shape)
from ._plateau import ReduceLROnPlateauState, reduce_on_plateau  # noqa: F401
from ._privacy import (DifferentiallyPrivateAggregateState, dpsgd,  # noqa: F401
                       differentially_private_aggregate)
from ._sam import NormalizeState, SAMState, normalize, sam  # noqa: F401
from ._schedule_free import (ScheduleFreeState, schedule_free, schedule_free_adamw,  # noqa
                             schedule_free_eval_params, schedule_free_sgd)
from ._sophia import (HutchinsonState, SophiaState,  # noqa: F401
                      hutchinson_estimator_diag_hessian, scale_by_sophia, sophia)

__all__ = [n for n in dir() if not n.startswith("_")]

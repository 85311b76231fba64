"""fnx's core: primitives and their rules, tracing, the jaxpr IR and the transformations.

Nothing here imports a backend; backends register their impl tables with ``core.register_backend``.
"""
from . import ad, batching, dtypes, lax, pytree
from . import linalg_prims  # noqa: F401  (registers the linear-algebra primitives)
from . import control_flow  # noqa: F401  (registers cond, while and scan)
from . import fft  # noqa: F401  (registers the fft primitive)
from . import convolution  # noqa: F401  (registers conv_general_dilated)
from . import collectives  # noqa: F401  (registers psum, all_gather, ...)
from .api import (ShapeDtypeStruct, eval_shape, grad, hessian, jacfwd, jacrev, jvp, linearize,
                  make_jaxpr, stop_gradient, value_and_grad, vjp, vmap)
from .custom_derivatives import (checkpoint, checkpoint_policies, custom_jvp, custom_vjp,
                                 remat)
from .core import Array, Primitive, ShapedArray, Trace, Tracer, get_aval
from .jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr, typecheck_jaxpr

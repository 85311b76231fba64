"""fnx: JAX-style function transformations (grad, vmap, jit) on NumPy and CUDA.

>>> import fnx, fnx.numpy as jnp
>>> fnx.grad(lambda x: jnp.sum(x ** 2))(jnp.arange(3.0))
Array([0., 2., 4.], dtype=float32)
"""
from . import backends as _backends  # registers the CPU backend
from .core import dtypes
from .core.api import (ShapeDtypeStruct, block_until_ready, eval_shape, grad, hessian, jacfwd,
                       jacobian, jacrev, jvp, linear_transpose, linearize, make_jaxpr,
                       value_and_grad, vjp, vmap)
from .core.core import (Array, default_backend, default_device, device_get, device_put,
                        devices)
from .core.errors import (BatchingError, ConcretizationTypeError, DTypeError, FnxError, GradError,
                          ShapeError, TracerLeakError)
from .core.jaxpr import ClosedJaxpr, Jaxpr
from .core.custom_derivatives import (checkpoint, checkpoint_policies, custom_jvp, custom_vjp,
                                      remat)
from .core.config import config, default_matmul_precision
from .core.jit import clear_caches, jit
from . import numpy, lax, nn, tree, tree_util  # noqa: E402
from . import debug, linalg, optim, random, scipy, test_util  # noqa: E402

__version__ = "0.1.0"

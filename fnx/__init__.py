"""fnx: JAX-style function transformations (grad, vmap, jit) on NumPy and CUDA.

>>> import fnx, fnx.numpy as jnp
>>> fnx.grad(lambda x: jnp.sum(x ** 2))(jnp.arange(3.0))
Array([0., 2., 4.], dtype=float32)
"""
import contextlib as _contextlib

from . import backends as _backends  # registers the CPU backend
from .core.api import (ShapeDtypeStruct, block_until_ready, effects_barrier, eval_shape, grad,
                       hessian, jacfwd, jacobian, jacrev, jvp, linear_transpose, linearize,
                       make_jaxpr, typeof, value_and_grad, vjp, vmap)
from .core.sharding import Shard  # noqa: E402
from .core.core import (Array, Device, default_backend, default_device, device_count, device_get,
                        devices, host_count, host_id, host_ids, local_device_count,
                        local_devices, process_count, process_index, process_indices)
from .core.errors import (AxisNameError, BatchingError, ConcretizationTypeError, DTypeError,
                          FnxError, GradError, MeshError, ShapeError, TracerLeakError)
from .core.jaxpr import ClosedJaxpr, Jaxpr
from .core.custom_derivatives import (checkpoint, checkpoint_policies, closure_convert,
                                      custom_gradient, custom_jvp, custom_vjp, remat)
from .core.config import (array_garbage_collection_guard, auto_pcast,  # noqa: F401
                          jax2tf_associative_scan_reductions,
                          remove_size_one_mesh_axis_from_type, thread_guard)
from .core.config import (allow_f16_reductions, check_tracer_leaks, checking_leaks, config,
                          debug_infs, debug_key_reuse, debug_nans, default_matmul_precision,
                          default_prng_impl, disable_jit, enable_checks, enable_custom_prng,
                          enable_x64, explain_cache_misses, legacy_prng_key, log_compiles,
                          numpy_dtype_promotion, numpy_rank_promotion, softmax_custom_jvp,
                          threefry_partitionable, transfer_guard,
                          transfer_guard_device_to_device, transfer_guard_device_to_host,
                          transfer_guard_host_to_device)
from .core.jit import clear_caches, jit
from .core.partial_eval import ensure_compile_time_eval
from .core.callbacks import pure_callback
from .core.pmap import device_put_replicated, device_put_sharded, pmap
from .core.shard_map import shard_map
from .core.placement import (device_put, make_array_from_callback,
                             make_array_from_process_local_data,
                             make_array_from_single_device_arrays, make_mesh, reshard)
from .core.sharding import NamedSharding, P, set_mesh
from . import numpy, lax, nn, tree, tree_util  # noqa: E402
from . import image  # noqa: E402
from . import dtypes  # noqa: E402
from . import debug, linalg, optim, random, scipy, test_util  # noqa: E402
from . import ad, ad_checkpoint, amp, dlpack, errors, flatten_util, ops, prng, typing  # noqa: E402
from . import custom_batching, distributed, experimental, profiler, sharding  # noqa: E402
from . import custom_derivatives, export, extend, ffi, interpreters, stages  # noqa: E402
from .ref import Ref, empty_ref, free_ref, freeze, new_ref  # noqa: E402
from . import monitoring, version  # noqa: E402
from .environment import copy_to_host_async, live_arrays, print_environment_info  # noqa: E402


@_contextlib.contextmanager
def named_scope(name: str):
    """Context manager naming the operations inside (JAX uses the name in profiles and HLO);
    fnx's jaxprs carry no names, so it only checks that ``name`` is a string.

    >>> x, w = fnx.numpy.ones((2, 3)), fnx.numpy.ones((3, 4))
    >>> with fnx.named_scope("attention"):
    ...     y = x @ w
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope name must be a string, got {name!r}")
    yield


def named_call(fun, *, name: str | None = None):
    """``fun`` itself (JAX names its operations in profiles; fnx's jaxprs carry no names).

    >>> fnx.named_call(jnp.sin, name="my_sin")(0.0)
    Array(0., dtype=float32, weak_type=True)
    """
    return fun


def fwd_and_bwd(fun, argnums, has_aux: bool = False, jitted: bool = True):
    """``(fwd, bwd)``: ``fwd(*args)`` is ``vjp`` of ``fun`` in the arguments ``argnums``
    (``(out, residuals)``, plus ``aux`` with ``has_aux``), ``bwd(residuals, cotangent)`` the
    cotangents of those arguments; both jitted unless ``jitted=False``, as in JAX.

    >>> fwd, bwd = fnx.fwd_and_bwd(lambda x, w: jnp.sum(jnp.tanh(x * w)), argnums=(0, 1))
    >>> y, res = fwd(jnp.ones(2), 0.5 * jnp.ones(2))
    >>> [g.shape for g in bwd(res, jnp.ones(()))]
    [(2,), (2,)]
    """
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def fwd(*args):
        def partial_fun(*dyn):
            full = list(args)
            for i, d in zip(nums, dyn):
                full[i] = d
            return fun(*full)
        return vjp(partial_fun, *[args[i] for i in nums], has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        grads = f_vjp(outgrad)
        return grads[0] if isinstance(argnums, int) else grads
    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)


from .dtypes import float0  # noqa: E402

from .version import __version__  # noqa: E402

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

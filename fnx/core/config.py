"""fnx.config: global options, read with ``config.name`` and set with ``config.update``.

JAX's ``jax_``-prefixed names work too (``config.update("jax_debug_nans", True)``,
``config.jax_enable_x64``), so a JAX program's configuration lines run unchanged.

>>> fnx.config.update("default_matmul_precision", "tensorfloat32")
>>> with fnx.default_matmul_precision("highest"): ...
"""
from __future__ import annotations

import contextlib
import os
import re

from . import dtypes

_OPTIONS = {
    # "highest" (full float32) or "tensorfloat32" (TF32 tensor cores) for float32 products on
    # the GPU; the value in force when a function is traced for jit is the one it keeps
    "default_matmul_precision": "highest",
    # log (fnx.jit, WARNING) which argument changed (shape, dtype, structure, static value) when
    # jit retraces
    "explain_cache_misses": False,
    # log (fnx.jit, WARNING) a line each time jit traces and compiles a function
    "log_compiles": False,
    # raise, naming the primitive and its source line, as soon as an operation makes a NaN
    "debug_nans": False,
    # the same for infinities
    "debug_infs": False,
    # run the jaxpr passes (inlining, constant folding, simplification, CSE, DCE) when jit
    # traces a function; read at trace time, so it applies to functions traced afterwards
    "jit_optimize": True,
    # side streams a jitted GPU program may run independent steps on (weight updates beside the
    # backward pass), so they overlap; 0 runs every step on the caller's stream. Read when a
    # program is lowered
    "gpu_side_streams": 2,
    # 64-bit types: off (as in JAX), float64/int64/uint64/complex128 values and requested dtypes
    # become their 32-bit types; on, they stay, and Python scalars and dtype-less creation
    # default to float64/int64/complex128 instead of float32/int32/complex64
    "enable_x64": False,
    # jitted functions run their Python code eagerly, op by op (fnx.disable_jit())
    "disable_jit": False,
    # "standard" (JAX's lattice) or "strict": fnx.numpy raises TypePromotionError where
    # operands of different dtypes would be promoted implicitly
    "numpy_dtype_promotion": "standard",
    # the backend new arrays go to ("cpu" or "gpu"); None: the GPU when CuPy finds one
    "platform_name": None,
    # which frames the traceback of an error fnx raises shows (fnx/core/traceback_util.py):
    # "auto", "quiet_remove_frames", "remove_frames" (fnx's frames hidden, the user's line
    # last), "tracebackhide" (marked for IPython/pytest to hide) or "off" (all frames)
    "traceback_filtering": os.environ.get("JAX_TRACEBACK_FILTERING", "auto"),
    # how many virtual CPU devices fnx.devices("cpu") lists (pmap, shard_map and meshes run on
    # them, collectives exchanging values in memory); -1: XLA_FLAGS'
    # --xla_force_host_platform_device_count, or 1
    "num_cpu_devices": -1,
    # scatter-adds and -multiplies on the GPU (``.at[].add``, ``ops.segment_sum``, the gradient
    # of a gather) combine each element's updates in index order, so results are the same bits
    # on every run (and the CPU's); off, they add atomically, which is faster but leaves float
    # rounding to the order threads arrive in. Read when a program is lowered; starts on where
    # XLA_FLAGS holds --xla_gpu_deterministic_ops=true, as XLA's GPU does
    "gpu_deterministic_ops": bool(re.search(r"--xla_gpu_deterministic_ops(=(true|1))?(\s|$)",
                                            os.environ.get("XLA_FLAGS", ""))),
    # the PRNG implementation of keys made without ``impl=`` (random.key, random.PRNGKey,
    # raw keys): "threefry2x32", "rbg" or "unsafe_rbg", as JAX's
    "default_prng_impl": "threefry2x32",
    # Threefry keys split and draw bits with JAX's current scheme (True, its default since 0.5)
    # or its original one (False); read when random functions are traced
    "threefry_partitionable": True,
}

# JAX options that name no behaviour of fnx (compilation caches, logging, checks of JAX's
# internals): accepted and remembered, so configuration code runs unchanged
_ACCEPTED_JAX_OPTIONS = {
    "compilation_cache_dir", "persistent_cache_min_compile_time_secs",
    "persistent_cache_min_entry_size_bytes",
    "enable_checks", "numpy_rank_promotion", "platforms", "log_checkpoint_residuals",
    "check_tracer_leaks", "dynamic_shapes", "softmax_custom_jvp", "enable_custom_prng",
    "remat3", "num_cpu_devices", "use_shardy_partitioner", "cpu_enable_async_dispatch",
    "persistent_cache_enable_xla_caches", "compilation_cache_max_size", "logging_level",
    "debug_log_modules", "dump_ir_to", "dump_ir_modes", "mock_gpu_topology",
    "compilation_cache_expect_pgle", "include_full_tracebacks_in_locations",
    # fnx's arrays need no guarded transfers: CPU arrays are host memory, and a GPU array
    # copies to the host only where the program asks for its values
    "transfer_guard", "transfer_guard_host_to_device", "transfer_guard_device_to_host",
    "transfer_guard_device_to_device",
}


_TRACEBACK_MODES = ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")


class Config:
    """fnx's options, as ``jax.config``: read them as attributes, set them with ``update``
    (JAX's ``jax_``-prefixed names work too). Options are plain attributes because every
    jitted call reads some.

    >>> fnx.config.update("jax_debug_nans", True)
    >>> fnx.config.debug_nans
    True
    >>> fnx.config.update("jax_debug_nans", False)
    """

    def __init__(self):
        for name, value in _OPTIONS.items():
            object.__setattr__(self, name, value)

    def update(self, name: str, value) -> None:
        name = _unprefixed(name)
        if name in _ACCEPTED_JAX_OPTIONS:
            object.__setattr__(self, name, value)
            return
        if name not in _OPTIONS:
            raise KeyError(f"unknown fnx option {name!r}; options: {sorted(_OPTIONS)}")
        value = _check(name, value)
        object.__setattr__(self, name, value)
        _ON_UPDATE.get(name, lambda v: None)(value)

    def __setattr__(self, name, value):
        self.update(name, value)

    def __getattr__(self, name):
        # only reached for names that are not plain attributes: JAX's "jax_" spellings
        bare = _unprefixed(name)
        if bare != name and (bare in _OPTIONS or bare in self.__dict__):
            return getattr(self, bare)
        raise AttributeError(f"fnx.config has no option {name!r}")

    def read(self, name: str):
        """An option's value by name (JAX's older ``config.read``)."""
        return getattr(self, _unprefixed(name))

    @contextlib.contextmanager
    def option(self, name: str, value):
        old = getattr(self, name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)

    def __repr__(self):
        return f"Config({ {n: getattr(self, n) for n in _OPTIONS} })"


def _unprefixed(name: str) -> str:
    return name[4:] if name.startswith("jax_") else name


def _check(name, value):
    """``value`` validated (and, for the precision, in fnx's own spelling)."""
    if name in _VALIDATORS:
        try:
            value = _VALIDATORS[name](value)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    if name == "gpu_side_streams" and (not isinstance(value, int) or value < 0):
        raise ValueError(f"gpu_side_streams must be an int >= 0, got {value!r}")
    if name == "numpy_dtype_promotion" and value not in ("standard", "strict"):
        raise ValueError(f"numpy_dtype_promotion must be 'standard' or 'strict', got {value!r}")
    if name == "traceback_filtering" and value not in _TRACEBACK_MODES:
        raise ValueError(f"traceback_filtering must be one of {_TRACEBACK_MODES}, got {value!r}")
    if name == "num_cpu_devices" and (not isinstance(value, int) or value == 0 or value < -1):
        raise ValueError(f"num_cpu_devices must be a positive int (or -1), got {value!r}")
    if name in ("enable_x64", "disable_jit", "threefry_partitionable", "debug_nans",
                "debug_infs", "gpu_deterministic_ops"):
        value = bool(value)
    return value


# options whose new value must reach another module when set, and options whose values
# another module checks (lax knows the precision names, core the backends): config sits below
# those modules, so they register these when imported
_ON_UPDATE = {"enable_x64": dtypes.set_x64}
_VALIDATORS: dict = {}


def register_option(name: str, *, validate=None, on_update=None) -> None:
    """``validate(value) -> value`` checks (and spells out) a new value of option ``name``;
    ``on_update(value)`` runs once it is set."""
    if validate is not None:
        _VALIDATORS[name] = validate
    if on_update is not None:
        _ON_UPDATE[name] = on_update

config = Config()


def default_matmul_precision(value: str):
    """Context manager: float32 products inside use ``value`` ('highest' or 'tensorfloat32';
    JAX's names 'float32', 'high', 'default', ... and ``lax.Precision`` values map to these).

    >>> with fnx.default_matmul_precision("highest"):
    ...     print(jnp.ones((2, 2)) @ jnp.ones((2, 2)))
    [[2. 2.]
     [2. 2.]]
    """
    return config.option("default_matmul_precision", value)


def disable_jit(disable: bool = True):
    """Context manager: jitted functions called inside run their Python code eagerly, op by op,
    so ``print`` shows values and a debugger can step through them.

    >>> with fnx.disable_jit():
    ...     fnx.jit(lambda x: print(x) or x)(1.0)     # prints 1.0, not a tracer
    1.0
    1.0
    """
    return config.option("disable_jit", disable)


def enable_x64(enable: bool = True):
    """Context manager: 64-bit types inside (float64 values stay float64, and Python scalars and
    dtype-less arrays default to 64 bits); ``enable_x64(False)`` turns them off.

    >>> with fnx.enable_x64():
    ...     print(jnp.ones(2).dtype)
    float64
    """
    return config.option("enable_x64", enable)


def numpy_dtype_promotion(mode: str):
    """Context manager: ``"standard"`` (JAX's promotion lattice) or ``"strict"`` (fnx.numpy
    raises ``TypePromotionError`` on operands whose dtypes differ, as JAX does; a weakly typed
    Python scalar still joins an array of its own kind).

    >>> with fnx.numpy_dtype_promotion("strict"):
    ...     jnp.ones(2, jnp.float32) + 1.0          # fine; + jnp.ones(2, jnp.int32) raises
    Array([2., 2.], dtype=float32)
    """
    return config.option("numpy_dtype_promotion", mode)


@contextlib.contextmanager
def debug_nans(enable: bool = True):
    """Context manager: ``config.debug_nans`` set to ``enable`` inside the block.

    >>> with fnx.debug_nans(True):
    ...     fnx.numpy.log(-1.0)
    Traceback (most recent call last):
    ...
    fnx.core.nan_checks.NaNError: debug_nans: primitive 'log' produced a NaN ...
    """
    with config.option("debug_nans", enable):
        yield


@contextlib.contextmanager
def debug_infs(enable: bool = True):
    """Context manager: ``config.debug_infs`` set to ``enable`` inside the block: the primitive
    that makes an infinity raises, named with its source line.

    >>> with fnx.debug_infs(True):
    ...     fnx.numpy.log(0.0)
    Traceback (most recent call last):
    ...
    fnx.core.nan_checks.NaNError: debug_infs: primitive 'log' produced an inf ...
    """
    with config.option("debug_infs", enable):
        yield


@contextlib.contextmanager
def log_compiles(enable: bool = True):
    """Context manager: ``config.log_compiles`` set to ``enable`` inside the block.

    >>> with fnx.log_compiles():   # each compilation is logged (logging, at WARNING)
    ...     y = fnx.jit(lambda x: x + 1)(1.0)
    """
    with config.option("log_compiles", enable):
        yield


# JAX's options that fnx accepts without acting on them, with JAX's defaults: each is also a
# context manager on the top level (``with fnx.numpy_rank_promotion("raise"): ...``)
_ACCEPTED_DEFAULTS = {
    "numpy_rank_promotion": "allow", "check_tracer_leaks": False,
    "enable_checks": False,
    "softmax_custom_jvp": False, "enable_custom_prng": False, "legacy_prng_key": "allow",
    "transfer_guard": None, "transfer_guard_host_to_device": None,
    "transfer_guard_device_to_host": None,
    "transfer_guard_device_to_device": None, "debug_key_reuse": False,
    "jax2tf_associative_scan_reductions": False, "array_garbage_collection_guard": None,
    "allow_f16_reductions": True, "thread_guard": False, "no_tracing": False,
    "no_execution": False, "remove_size_one_mesh_axis_from_type": False, "auto_pcast": True,
}
_ACCEPTED_JAX_OPTIONS |= set(_ACCEPTED_DEFAULTS)
for _name, _value in _ACCEPTED_DEFAULTS.items():
    object.__setattr__(config, _name, _value)


def _accepted_option_context(name: str, example):
    def context(value=True):
        return config.option(name, value)
    context.__name__ = context.__qualname__ = name
    context.__doc__ = (
        f"""Context manager: JAX's ``{name}`` option set to ``value`` inside the block. fnx
    accepts and remembers it (``fnx.config.{name}``); its behaviour does not depend on it.

    >>> with fnx.{name}({example!r}):
    ...     fnx.config.{name}
    {example!r}
    """)
    return context


numpy_rank_promotion = _accepted_option_context("numpy_rank_promotion", "raise")
check_tracer_leaks = _accepted_option_context("check_tracer_leaks", True)
enable_checks = _accepted_option_context("enable_checks", True)


def default_prng_impl(value: str):
    """Context manager: keys made without ``impl=`` inside use the PRNG implementation
    ``value`` ("threefry2x32", "rbg" or "unsafe_rbg").

    >>> with fnx.default_prng_impl("rbg"):
    ...     fnx.random.PRNGKey(0).shape
    (4,)
    """
    return config.option("default_prng_impl", value)


def threefry_partitionable(value: bool = True):
    """Context manager: Threefry keys inside split and draw bits with JAX's current scheme
    (True) or its original one (False).

    >>> with fnx.threefry_partitionable(False):
    ...     fnx.random.key_data(fnx.random.split(fnx.random.key(0)))
    Array([[4146024105,  967050713],
           [2718843009, 1272950319]], dtype=uint32)
    """
    return config.option("threefry_partitionable", value)


softmax_custom_jvp = _accepted_option_context("softmax_custom_jvp", True)
enable_custom_prng = _accepted_option_context("enable_custom_prng", True)
legacy_prng_key = _accepted_option_context("legacy_prng_key", "error")
transfer_guard_host_to_device = _accepted_option_context("transfer_guard_host_to_device",
                                                         "disallow")
transfer_guard_device_to_host = _accepted_option_context("transfer_guard_device_to_host",
                                                         "disallow")
transfer_guard_device_to_device = _accepted_option_context("transfer_guard_device_to_device",
                                                           "disallow")
debug_key_reuse = _accepted_option_context("debug_key_reuse", True)
allow_f16_reductions = _accepted_option_context("allow_f16_reductions", False)
thread_guard = _accepted_option_context("thread_guard", True)
jax2tf_associative_scan_reductions = _accepted_option_context(
    "jax2tf_associative_scan_reductions", True)
array_garbage_collection_guard = _accepted_option_context("array_garbage_collection_guard",
                                                          "log")
remove_size_one_mesh_axis_from_type = _accepted_option_context(
    "remove_size_one_mesh_axis_from_type", True)
auto_pcast = _accepted_option_context("auto_pcast", False)
no_tracing = _accepted_option_context("no_tracing", True)
no_execution = _accepted_option_context("no_execution", True)


def explain_cache_misses(enable: bool = True):
    """Context manager: inside the block jit logs (``fnx.jit``, WARNING) which part of an
    argument changed when it retraces.

    >>> with fnx.explain_cache_misses():
    ...     fnx.config.explain_cache_misses
    True
    """
    return config.option("explain_cache_misses", enable)


def checking_leaks():
    """Context manager: ``check_tracer_leaks`` on inside the block (accepted; fnx always
    reports a leaked tracer when it is used).

    >>> with fnx.checking_leaks():
    ...     fnx.config.check_tracer_leaks
    True
    """
    return config.option("check_tracer_leaks", True)


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """Context manager: ``transfer_guard`` and the three ``transfer_guard_*`` options set to
    ``new_val`` (``"allow"``, ``"log"``, ``"disallow"``, ...) inside the block; accepted, not
    enforced (fnx transfers no array implicitly that it would have to guard).

    >>> with fnx.transfer_guard("disallow"):
    ...     fnx.config.transfer_guard_host_to_device
    'disallow'
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(config.option("transfer_guard", new_val))
        for way in ("host_to_device", "device_to_host", "device_to_device"):
            stack.enter_context(config.option(f"transfer_guard_{way}", new_val))
        yield

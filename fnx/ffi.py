"""fnx.ffi (JAX's ``jax.ffi``): call foreign functions from fnx programs.

fnx has no XLA, so it cannot run XLA FFI handlers (``PyCapsule`` targets built against XLA's
headers): calling one raises ``FfiError``. fnx's own extension: a target may be a Python
callable operating on NumPy arrays, registered under a name as JAX registers a compiled handler;
``ffi_call`` then runs it on the host, from inside ``jit`` and ``vmap`` too, as a
``pure_callback`` (an ``io_callback`` with ``has_side_effect=True``).

>>> def scale(x, *, factor):
...     return (x * factor).astype(x.dtype)
>>> fnx.ffi.register_ffi_target("doc_scale", scale, platform="cpu")
>>> x = jnp.arange(3.0)
>>> fnx.jit(lambda x: fnx.ffi.ffi_call("doc_scale", x)(x, factor=np.float32(2.0)))(x)
Array([0., 2., 4.], dtype=float32)
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from .core.api import ShapeDtypeStruct
from .core.callbacks import io_callback, pure_callback
from .core.errors import FnxError


class FfiError(FnxError, ValueError):
    """An FFI target fnx cannot run: not registered, or an XLA handler (a PyCapsule) rather
    than a Python callable.

    >>> try:
    ...     fnx.ffi.ffi_call("doc_unregistered", jnp.zeros(2))(jnp.zeros(2))
    ... except fnx.ffi.FfiError as e:
    ...     print(str(e).splitlines()[0])
    no FFI target is registered under the name 'doc_unregistered' (fnx.ffi.register_ffi_target)
    """


# name -> platform -> target
_targets: dict[str, dict[str, Any]] = {}


def register_ffi_target(name: str, fn, platform: str = "cpu", api_version: int = 1,
                        **kwargs) -> None:
    """Register ``fn`` as the FFI target ``name`` for ``platform``. fnx runs targets that are
    Python callables taking NumPy arrays (and the call's attributes as keywords) and returning
    NumPy arrays; XLA handlers (``pycapsule(...)``) are recorded but raise ``FfiError`` when
    called.

    >>> fnx.ffi.register_ffi_target("doc_negate", lambda x: -x)
    """
    _targets.setdefault(name, {})[platform.lower()] = fn


def pycapsule(funcptr) -> Any:
    """Wrap a ctypes function pointer in a ``PyCapsule`` (what ``register_ffi_target`` takes
    for a compiled XLA handler; fnx cannot call those).

    >>> libc_abs = ctypes.CDLL(None).abs
    >>> type(fnx.ffi.pycapsule(libc_abs)).__name__
    'PyCapsule'
    """
    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
    return new(ctypes.cast(funcptr, ctypes.c_void_p), None, destructor(0))


def include_dir() -> str:
    """The directory of XLA's FFI C++ headers in JAX; fnx ships none (it cannot run compiled
    XLA handlers), so this raises ``FfiError``.

    >>> try:
    ...     fnx.ffi.include_dir()
    ... except fnx.ffi.FfiError:
    ...     print("no XLA headers")
    no XLA headers
    """
    raise FfiError("fnx has no XLA FFI headers: it cannot run compiled XLA FFI handlers. "
                   "Register a Python callable operating on NumPy arrays with "
                   "fnx.ffi.register_ffi_target instead")


def ffi_lowering(call_target_name: str, **kwargs) -> Callable:
    """JAX's MLIR lowering rule for an FFI target; fnx lowers no MLIR, so the rule raises
    ``FfiError`` when used. Call targets through ``ffi_call``.

    >>> rule = fnx.ffi.ffi_lowering("doc_target")
    >>> callable(rule)
    True
    """
    def rule(*args, **params):
        raise FfiError(f"fnx has no MLIR lowering: use fnx.ffi.ffi_call({call_target_name!r}, "
                       "...) to call the target")
    return rule


def _is_capsule(fn) -> bool:
    return type(fn).__name__ == "PyCapsule"


def _target(name: str):
    by_platform = _targets.get(name)
    if not by_platform:
        raise FfiError(f"no FFI target is registered under the name {name!r} "
                       "(fnx.ffi.register_ffi_target)")
    python = [f for f in by_platform.values() if not _is_capsule(f)]
    if not python:
        raise FfiError(f"the FFI target {name!r} is an XLA handler (a PyCapsule), which fnx "
                       "cannot run; register a Python callable operating on NumPy arrays "
                       "under that name instead")
    # a Python target runs on the host whatever platform it was registered for
    cpu = by_platform.get("cpu")
    return cpu if cpu is not None and not _is_capsule(cpu) else python[0]


def ffi_call(target_name: str, result_shape_dtypes, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases=None, custom_call_api_version: int = 4,
             legacy_backend_config=None, **kwargs) -> Callable:
    """A function calling the FFI target ``target_name``: ``ffi_call(name, results)(*args,
    **attributes)`` runs the registered Python target on the arguments as NumPy arrays, with
    the attributes as keywords, and returns arrays of ``result_shape_dtypes`` (an array-like
    with ``shape`` and ``dtype``, or a list/tuple of them). ``vmap_method`` says how ``vmap``
    calls it, as for ``pure_callback``; there is no derivative. Layouts and aliases are
    accepted and ignored (NumPy arrays are row-major, and results are new arrays).

    >>> fnx.ffi.register_ffi_target("doc_sum_prod", lambda x: (x.sum(), x.prod()))
    >>> out = fnx.ShapeDtypeStruct((), jnp.float32)
    >>> fnx.ffi.ffi_call("doc_sum_prod", (out, out))(jnp.arange(1.0, 4.0))
    (Array(6., dtype=float32), Array(6., dtype=float32))
    """
    multiple = isinstance(result_shape_dtypes, (list, tuple))
    flat = [ShapeDtypeStruct(r.shape, r.dtype)
            for r in (result_shape_dtypes if multiple else [result_shape_dtypes])]

    def call(*args, **attributes):
        target = _target(target_name)

        def on_host(*xs):       # the target's results as a list, whatever sequence it returns
            out = target(*[np.asarray(x) for x in xs], **attributes)
            return list(out) if multiple else [out]
        on_host.__name__ = target_name
        if has_side_effect:
            outs = io_callback(on_host, flat, *args)
        else:
            outs = pure_callback(on_host, flat, *args, vmap_method=vmap_method)
        return type(result_shape_dtypes)(outs) if multiple else outs[0]
    return call


__all__ = ["FfiError", "ffi_call", "ffi_lowering", "include_dir", "pycapsule",
           "register_ffi_target"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

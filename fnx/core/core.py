"""Abstract values, primitives, tracers and the current-trace context.

fnx uses the "stackless" design: there is always one *current trace*. ``Primitive.bind`` hands
the operation to it; a trace built on top of another (jvp, vmap, staging) knows its ``parent``
and runs its rules under the parent, so transformations nest to any depth. A value that is not one
of a trace's own tracers is a constant to that trace.
"""
from __future__ import annotations

import abc
import contextlib
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from . import dtypes
from .config import config as _config, register_option
from .errors import (ArgumentTypeError, ArrayProtocolError, ConcretizationTypeError,
                     DeletedArrayError, DTypeError, MissingRuleError, OutOfMemoryError,
                     ShapeError, TracerArrayConversionError,
                     TracerBoolConversionError, TracerIntegerConversionError, TracerLeakError,
                     user_frame)
from .interop import foreign_shape_dtype, is_foreign_array
from .nan_checks import check_nans
from .pytree import tree_map
from .sharding import Shard, SingleDeviceSharding, index_key


# ---------------------------------------------------------------------------------------------
# Abstract values


class ShapedArray:
    """The type of an array value: shape, dtype and whether it is weakly typed.

    >>> ShapedArray((2, 3), np.float32)
    ShapedArray(float32[2,3])
    """
    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self):
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other):
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self):
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self):     # as JAX's: ShapedArray(float32[3], weak_type=True)
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({np.dtype(self.dtype).name}[{','.join(map(str, self.shape))}]" \
            f"{weak})"

    def __str__(self):
        return self.str_long()

    def str_long(self):
        """``float32[3,4]``, with a leading ``~`` for a weak type (as JAX prints tracers)."""
        return f"{'~' if self.weak_type else ''}{np.dtype(self.dtype).name}" \
            f"[{','.join(map(str, self.shape))}]"


def shape_str(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------------------------------------
# Primitives


class Primitive:
    """One operation. Its rules live in tables on the object, filled where it is defined.

    ``abstract_eval(*avals, **params) -> aval | list[aval]``
    ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``
    ``transpose(cotangent, *args, **params) -> list[cotangent | None]`` (linear primitives)
    ``batch(vals, dims, **params) -> (out, out_dim)`` (``axis_size=`` too where
    ``wants_axis_size``)
    ``batch_named(vals, dims, (axis_name, axis_size), **params) -> (out, out_dim)``
    (collectives, instead of ``batch``: every vmap runs it, so the one whose axis a collective
    names computes it across its batch)

    Flags: ``is_linear`` (the JVP is the primitive itself), ``has_effect`` (never dropped,
    merged or folded by the passes: callbacks, debug printing), ``wants_axis_size`` (the batch
    rule needs the size of the mapped axis).

    >>> fnx.lax.sin_p.bind(0.0)
    Array(0., dtype=float32, weak_type=True)
    """

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval: Callable | None = None
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        self.batch_named: Callable | None = None
        self.partial_eval: Callable | None = None   # staging rule with known/unknown inputs
        self.impl: Callable | None = None           # backend-independent impl (higher-order prims)
        self.is_linear = False
        self.has_effect = False
        self.wants_axis_size = False
        self.pp_params: Callable | None = None

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        return current_trace().process_primitive(self, args, params)

    def rule(self, kind: str):
        rule = getattr(self, kind)
        if rule is None:
            raise MissingRuleError(self.name, kind)
        return rule

    # JAX's way of filling the tables (``jax.extend.core.Primitive``)

    def def_impl(self, impl: Callable) -> Callable:
        """Run the primitive as ``impl(*args, **params)``, eagerly and inside ``jit``
        (results may be NumPy arrays)."""
        def run(*args, **params):
            out = impl(*args, **params)
            if self.multiple_results:
                return [o if isinstance(o, Tracer) else full_lower_to_array(o) for o in out]
            return out if isinstance(out, Tracer) else full_lower_to_array(out)
        self.impl = run
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        """Shapes and dtypes from ``rule(*avals, **params)``: a ShapedArray (a list of them
        for ``multiple_results``), or anything with ``shape`` and ``dtype``."""
        def abstract_eval(*avals, **params):
            out = rule(*avals, **params)
            return [_as_aval(o) for o in out] if self.multiple_results else _as_aval(out)
        self.abstract_eval = abstract_eval
        return rule

    def def_effectful_abstract_eval(self, rule: Callable) -> Callable:
        """As ``def_abstract_eval`` for ``rule`` returning ``(avals, effects)``; the primitive
        then always runs (the passes never drop it)."""
        self.has_effect = True
        self.def_abstract_eval(lambda *avals, **params: rule(*avals, **params)[0])
        return rule


def _as_aval(x) -> "ShapedArray":
    if isinstance(x, ShapedArray):
        return x
    return ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))


# ---------------------------------------------------------------------------------------------
# Traces and tracers


class Trace:
    """Interprets primitives. ``parent`` is the trace its rules run under.

    >>> fnx.core.core.current_trace().level
    0
    """
    level = 0

    def __init__(self, parent: "Trace | None"):
        self.parent = parent
        self.level = 0 if parent is None else parent.level + 1

    def process_primitive(self, primitive, args, params):
        raise NotImplementedError

    def is_own(self, x) -> bool:
        if isinstance(x, Tracer):
            if x._trace is self:
                return True
            if x._trace.level >= self.level:
                raise TracerLeakError(
                    f"a traced value {x.aval.str_short()} escaped from the transformation that "
                    f"created it (a {type(x._trace).__name__}) and was used after it finished; "
                    "return values from transformed functions instead of storing them in outer "
                    "variables")
        return False

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level})"


class _TraceState(threading.local):
    def __init__(self):
        self.trace: Trace = EvalTrace(None)


_state = None  # set below once EvalTrace exists


def current_trace() -> Trace:
    """The trace values are being bound in now: ``EvalTrace`` outside any transformation.

    >>> type(fnx.ref.current_trace()).__name__
    'EvalTrace'
    """
    return _state.trace


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    """Make ``trace`` the current trace inside the block.

    >>> with set_current_trace(current_trace()) as t:
    ...     t is current_trace()
    True
    """
    prev = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = prev


class Tracer:
    """A value inside a transformation. Array operators are attached by fnx.numpy."""
    __array_priority__ = 1000
    __slots__ = ("_trace",)

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.shape[0]

    def to_concrete(self):
        """The concrete Array behind this tracer, or raise ConcretizationTypeError."""
        raise ConcretizationTypeError(self._concretization_message("a concrete value"))

    def _concretization_message(self, what: str, instead: str = "") -> str:
        msg = (f"{what} was needed, but got a traced value {self.aval.str_short()} inside "
               f"{self._trace_description()}.")
        return msg + (" " + instead if instead else "")

    def _trace_description(self) -> str:
        return type(self._trace).__name__

    def __bool__(self):
        return bool(self._concrete_for("bool()", "Python `if`/`while`/`and`/`or` on a traced "
                    "value cannot be traced: use fnx.numpy.where, fnx.lax.cond or "
                    "fnx.lax.while_loop, or mark the argument static (static_argnums).",
                    TracerBoolConversionError))

    def __int__(self):
        return int(self._concrete_for("int()", "Use .astype(int) to keep it traced, or mark the "
                                      "argument static (static_argnums).",
                                      TracerIntegerConversionError))

    def __float__(self):
        return float(self._concrete_for("float()", "Use .astype(float) to keep it traced."))

    def __complex__(self):
        return complex(self._concrete_for("complex()", ""))

    def __index__(self):
        return int(self._concrete_for("an integer index (__index__)", "Use fnx.lax.dynamic_slice"
                   " or index with the array itself, or mark the argument static.",
                   TracerIntegerConversionError))

    def _concrete_for(self, what: str, instead: str, error=ConcretizationTypeError):
        try:
            concrete = self.to_concrete()
        except ConcretizationTypeError:
            raise error(self._concretization_message(f"A concrete value for {what}",
                                                     instead)) from None
        return concrete

    def __array__(self, dtype=None, copy=None):
        arr = self._concrete_for("conversion to a NumPy array", "Only concrete arrays can be "
                                 "converted; return the value from the transformed function.",
                                 TracerArrayConversionError)
        return arr.__array__(dtype=dtype, copy=copy)

    def __hash__(self):
        raise TypeError("traced arrays are unhashable")

    def __repr__(self):
        return f"Tracer({self.aval.str_long()})"


# ---------------------------------------------------------------------------------------------
# Concrete arrays and the eager trace

_backends: dict[str, Any] = {}
_default_backend_name: list[str] = []
_default_resolver: list[Callable] = []


def register_backend(name: str, backend, default: bool = False) -> None:
    """Backends (fnx.backends) register their impl tables here; core never imports them."""
    _backends[name] = backend
    if default or not _default_backend_name:
        _default_backend_name[:] = [name]


def set_default_backend_resolver(resolver: Callable[[], None]) -> None:
    """``resolver()`` runs once, when the default backend is first needed, so that finding a
    GPU (importing CuPy) happens only when arrays are made, never at ``import fnx``."""
    _default_resolver[:] = [resolver]


def get_backend(name: str | None = None):
    if name is None:
        if _default_resolver:
            _default_resolver.pop()()
        name = _default_backend_name[0]
    elif name not in _backends and _default_resolver:
        _default_resolver.pop()()
    try:
        return _backends[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; available: {sorted(_backends)}") from None


@contextlib.contextmanager
def default_device(device):
    """New arrays go to ``device`` inside the block (as ``jax.default_device``).

    >>> with fnx.default_device(fnx.devices("cpu")[0]):
    ...     x = fnx.numpy.ones(3)        # on the CPU even where a GPU is present
    """
    get_backend()              # settle the default first, so the block's choice is not undone
    old = _default_backend_name[:]
    _default_backend_name[:] = [device.name]
    try:
        yield device
    finally:
        _default_backend_name[:] = old


def default_backend() -> str:
    """The name of the backend new arrays go to: ``'cpu'`` or ``'gpu'``.

    >>> fnx.default_backend() in ("cpu", "gpu")
    True
    """
    return get_backend().name


_global_devices: dict[str, list] = {}


def set_global_devices(platform: str, devices: list) -> None:
    """The devices of every process of the program (fnx.distributed), this process's among
    them."""
    _global_devices[platform] = list(devices)


def global_devices(platform: str):
    """Every process's devices of ``platform`` once fnx.distributed joined them, else None."""
    return _global_devices.get(platform)


def devices(backend: str | None = None) -> list:
    """The devices of ``backend`` (the default backend when None).

    >>> fnx.devices()
    [CpuDevice(id=0)]
    """
    return list(get_backend(backend).devices())


def local_devices(process_index: int | None = None, backend: str | None = None) -> list:
    """The devices of this process (of process ``process_index``, when given).

    >>> fnx.local_devices()[0].process_index
    0
    """
    want = _process[0] if process_index is None else process_index
    return [d for d in devices(backend) if getattr(d, "process_index", 0) == want]


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` has, over all processes.

    >>> fnx.device_count()
    1
    """
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """How many devices this process drives.

    >>> fnx.local_device_count() == len(fnx.local_devices())
    True
    """
    return len(local_devices(backend=backend))


_process = [0, 1, None]     # (index, count, store), set by fnx.distributed.initialize


def set_process(index: int, count: int, store=None) -> None:
    """Record this process's place among the program's processes and the store they share
    (fnx.distributed): backends fetch NCCL's unique ids from it."""
    _process[:] = [int(index), int(count), store]


def process_store():
    """The joined processes' key-value store, or None in a program of one process."""
    return _process[2]


def process_index(backend: str | None = None) -> int:
    """This process's index among the program's processes (0 unless fnx.distributed joined
    several).

    >>> fnx.process_index()
    0
    """
    return _process[0]


def process_count(backend: str | None = None) -> int:
    """How many processes run the program (1 unless fnx.distributed joined several).

    >>> fnx.process_count()
    1
    """
    return _process[1]


class Device(abc.ABC):
    """The type of the devices ``fnx.devices()`` lists, as ``jax.Device`` (each backend
    registers its device class).

    >>> isinstance(fnx.devices()[0], fnx.Device)
    True
    """


def process_indices(backend: str | None = None) -> list:
    """The indices of the program's processes.

    >>> fnx.process_indices()
    [0]
    """
    return list(range(_process[1]))


def host_id(backend: str | None = None) -> int:
    """``process_index()`` (JAX's older name).

    >>> fnx.host_id()
    0
    """
    return process_index(backend)


def host_count(backend: str | None = None) -> int:
    """``process_count()`` (JAX's older name).

    >>> fnx.host_count()
    1
    """
    return process_count(backend)


def host_ids(backend: str | None = None) -> list:
    """``process_indices()`` (JAX's older name).

    >>> fnx.host_ids()
    [0]
    """
    return process_indices(backend)


def device_put(x, device=None):
    """Move the arrays in pytree ``x`` to ``device`` (a backend or its name; default backend
    when None). ``fnx.device_put`` also takes shardings (fnx.core.placement)."""
    target = device if device is not None and not isinstance(device, str) else get_backend(device)

    def put(v):
        if type(v) is Array and v._backend is target and v._sharding is None:
            return v
        aval = get_aval(v)
        return Array(target.cast(target.to_buffer(v, aval.dtype), aval.dtype), target,
                     aval.weak_type)
    return tree_map(put, x)


def device_get(x):
    """The arrays in pytree ``x`` as NumPy arrays on the host.

    >>> fnx.device_get({"w": jnp.ones(2)})
    {'w': array([1., 1.], dtype=float32)}
    """
    return tree_map(lambda v: np.asarray(v) if type(v) is Array else v, x)


def set_default_backend(name: str) -> None:
    get_backend(name)
    _default_backend_name[:] = [name]


def _set_platform(name):
    if name is not None:
        get_backend()       # finds the GPU first, so that finding it later overrides nothing
        set_default_backend({"cuda": "gpu"}.get(name, name))


register_option("platform_name", on_update=_set_platform)


class _ArrayMeta(type):
    """``isinstance(x, fnx.Array)`` is also true for traced arrays, so annotations such as
    jaxtyping's ``Float[fnx.Array, "batch dim"]`` hold inside jit, grad and vmap."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or isinstance(obj, Tracer)


class _Donated:
    """What a donated array holds once a jitted call has taken its buffer: any use raises."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __getattr__(self, attr):
        raise DeletedArrayError(f"this array was donated to {self.name} (donate_argnums) and its "
                                "buffer now holds that call's results; use the arrays the call "
                                "returned instead")


class Array(metaclass=_ArrayMeta):
    """An immutable n-dimensional array on one backend (a NumPy or CuPy buffer).

    >>> import fnx.numpy as jnp
    >>> jnp.array([1.0, 2.0])
    Array([1., 2.], dtype=float32)
    """
    __array_priority__ = 1000
    __slots__ = ("_value", "_backend", "_weak", "_sharding", "__weakref__")

    def __init__(self, value, backend=None, weak_type: bool = False):
        self._backend = backend if backend is not None else get_backend()
        self._value = value
        self._weak = weak_type
        self._sharding = None         # a jax.sharding layout over several devices, if any

    @property
    def sharding(self):
        """How the array is laid out over devices (fnx.sharding)."""
        return self._sharding if self._sharding is not None \
            else SingleDeviceSharding(self._backend)

    @property
    def addressable_shards(self) -> list:
        """One ``Shard`` (device, index, replica_id, data) per device holding a block."""
        host = self._backend.to_numpy(self._value)
        copies: dict = {}
        out = []
        for dev, index in self.sharding.devices_indices_map(self.shape).items():
            key = index_key(index)
            copies[key] = copies.get(key, -1) + 1
            if getattr(dev, "process_index", 0) != _process[0]:
                continue         # another process's device (fnx.distributed)
            block = np.array(host[index])
            out.append(Shard(dev, index, copies[key],
                             Array(dev.from_numpy(block), dev, self._weak)))
        return out

    global_shards = addressable_shards

    def devices(self) -> set:
        """The devices holding this array: its backend's, or its sharding's."""
        return self.sharding.device_set

    @property
    def device(self):
        """The device holding the array (its sharding when spread over several)."""
        return self._backend if self._sharding is None else self._sharding

    is_fully_addressable = property(lambda self: True)
    is_fully_replicated = property(lambda self: self.sharding.is_fully_replicated)
    committed = property(lambda self: True)

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self._value.shape, self._value.dtype, self._weak)

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    weak_type = property(lambda self: self._weak)

    if TYPE_CHECKING:
        # What type checkers see: fnx.numpy installs these at import (array_methods.py), on
        # traced arrays too, so ``x @ w``, ``x.T`` and ``x.sum()`` are Arrays to pyright/mypy.
        shape: tuple[int, ...]          # type: ignore[no-redef]
        dtype: np.dtype                 # type: ignore[no-redef]
        ndim: int                       # type: ignore[no-redef]
        size: int                       # type: ignore[no-redef]
        weak_type: bool                 # type: ignore[no-redef]
        T: Array
        mT: Array
        real: Array
        imag: Array
        at: Any
        itemsize: int
        nbytes: int

        def __add__(self, other: Any) -> Array: ...
        def __radd__(self, other: Any) -> Array: ...
        def __sub__(self, other: Any) -> Array: ...
        def __rsub__(self, other: Any) -> Array: ...
        def __mul__(self, other: Any) -> Array: ...
        def __rmul__(self, other: Any) -> Array: ...
        def __truediv__(self, other: Any) -> Array: ...
        def __rtruediv__(self, other: Any) -> Array: ...
        def __floordiv__(self, other: Any) -> Array: ...
        def __rfloordiv__(self, other: Any) -> Array: ...
        def __mod__(self, other: Any) -> Array: ...
        def __rmod__(self, other: Any) -> Array: ...
        def __pow__(self, other: Any) -> Array: ...
        def __rpow__(self, other: Any) -> Array: ...
        def __matmul__(self, other: Any) -> Array: ...
        def __rmatmul__(self, other: Any) -> Array: ...
        def __and__(self, other: Any) -> Array: ...
        def __rand__(self, other: Any) -> Array: ...
        def __or__(self, other: Any) -> Array: ...
        def __ror__(self, other: Any) -> Array: ...
        def __xor__(self, other: Any) -> Array: ...
        def __rxor__(self, other: Any) -> Array: ...
        def __lshift__(self, other: Any) -> Array: ...
        def __rlshift__(self, other: Any) -> Array: ...
        def __rshift__(self, other: Any) -> Array: ...
        def __rrshift__(self, other: Any) -> Array: ...
        def __eq__(self, other: Any) -> Array: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Array: ...  # type: ignore[override]
        def __lt__(self, other: Any) -> Array: ...
        def __le__(self, other: Any) -> Array: ...
        def __gt__(self, other: Any) -> Array: ...
        def __ge__(self, other: Any) -> Array: ...
        def __neg__(self) -> Array: ...
        def __pos__(self) -> Array: ...
        def __abs__(self) -> Array: ...
        def __invert__(self) -> Array: ...
        def __getitem__(self, index: Any) -> Array: ...
        def __iter__(self) -> Iterator[Array]: ...
        def __divmod__(self, other: Any) -> tuple[Array, Array]: ...
        def __round__(self, ndigits: int | None = None) -> Array: ...
        def __array_namespace__(self, *, api_version: str | None = None) -> Any: ...
        def astype(self, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Array: ...
        def reshape(self, *shape: Any, order: str = "C") -> Array: ...
        def transpose(self, *axes: Any) -> Array: ...
        def sum(self, axis: Any = None, dtype: Any = None, out: None = None,
                keepdims: bool = False, **kwargs: Any) -> Array: ...
        def mean(self, axis: Any = None, dtype: Any = None, out: None = None,
                 keepdims: bool = False, **kwargs: Any) -> Array: ...
        def var(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def std(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def prod(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def max(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def min(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def argmax(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def argmin(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def any(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def all(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def cumsum(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def cumprod(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def ptp(self, axis: Any = None, **kwargs: Any) -> Array: ...
        def ravel(self, order: str = "C") -> Array: ...
        def flatten(self, order: str = "C") -> Array: ...
        def squeeze(self, axis: Any = None) -> Array: ...
        def swapaxes(self, axis1: int, axis2: int) -> Array: ...
        def repeat(self, repeats: Any, axis: int | None = None, **kwargs: Any) -> Array: ...
        def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array: ...
        def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1,
                  **kwargs: Any) -> Array: ...
        def dot(self, b: Any, **kwargs: Any) -> Array: ...
        def clip(self, min: Any = None, max: Any = None, **kwargs: Any) -> Array: ...
        def round(self, decimals: int = 0, **kwargs: Any) -> Array: ...
        def conj(self) -> Array: ...
        def conjugate(self) -> Array: ...
        def take(self, indices: Any, axis: int | None = None, **kwargs: Any) -> Array: ...
        def sort(self, axis: int | None = -1, **kwargs: Any) -> Array: ...
        def argsort(self, axis: int | None = -1, **kwargs: Any) -> Array: ...
        def nonzero(self, **kwargs: Any) -> tuple[Array, ...]: ...
        def copy(self) -> Array: ...

    def to_concrete(self):
        return self

    def delete(self, by: str = "a jitted call"):
        """Give up this array's buffer (jit does this to donated arguments); later uses raise
        DeletedArrayError."""
        self._value = _Donated(by)

    def is_deleted(self) -> bool:
        return type(self._value) is _Donated

    def copy_to_host_async(self) -> None:
        """Start copying the value to the host (reading it waits for the copy in any case)."""

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        """The host value, read-only as in JAX (a view of a CPU array's buffer, whose owner is
        fnx, or a GPU array's host copy), or the caller's own copy where ``copy=True`` or
        ``dtype`` needs one."""
        host = self._backend.to_numpy(self._value)
        if copy is False and dtype is not None and np.dtype(dtype) != host.dtype:
            raise ValueError(f"converting an fnx array of dtype {host.dtype} to {np.dtype(dtype)} "
                             "needs a copy, but copy=False was given")
        if copy or (dtype is not None and np.dtype(dtype) != host.dtype):
            return np.array(host, dtype=dtype, copy=True)
        if not isinstance(host, np.ndarray):      # a NumPy scalar: a fresh 0-d array
            return np.asarray(host)
        host = host.view()
        host.flags.writeable = False
        return host

    def __bool__(self):
        if self.size != 1:
            raise ShapeError(f"the truth value of an array of shape {self.shape} with more than "
                             "one element is ambiguous; use a.any() or a.all()")
        return bool(self._backend.to_numpy(self._value))

    def _scalar(self, to: str):
        if self.ndim:
            raise ShapeError(f"only 0-d arrays convert to a Python {to}, got shape {self.shape}")
        return self._backend.to_numpy(self._value)

    def __int__(self):
        return int(self._scalar("int"))

    def __float__(self):
        return float(self._scalar("float"))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if not dtypes.is_int(self.dtype) or self.ndim:
            raise DTypeError("only integer scalar arrays can be converted to a scalar index, got "
                             f"{self.aval.str_short()}")
        return int(self._backend.to_numpy(self._value))

    def __hash__(self):
        raise TypeError("fnx arrays are unhashable")

    def item(self):
        return self._backend.to_numpy(self._value).item()

    def tolist(self):
        return self._backend.to_numpy(self._value).tolist()

    def block_until_ready(self):
        self._backend.synchronize(self._value)
        return self

    def unsafe_buffer_pointer(self) -> int:
        """The address of this array's buffer (host memory on the CPU, device memory on the
        GPU), as JAX's; valid while the array lives.

        >>> isinstance(jnp.ones(3).unsafe_buffer_pointer(), int)
        True
        """
        v = self._value
        iface = getattr(v, "__cuda_array_interface__", None) or \
            np.asarray(v).__array_interface__
        return int(iface["data"][0])

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array (the protocol behind ``np.from_dlpack(x)``,
        ``torch.from_dlpack(x)``). It shares fnx's memory, marked read-only where the consumer
        reads DLPack 1.0's flag; on the CPU a consumer that cannot be told gets a copy."""
        return self._backend.export_dlpack(self._value, stream=stream, max_version=max_version,
                                           dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        return self._backend.dlpack_device(self._value)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface of a GPU array (CuPy, Numba and PyTorch read it), its data
        marked read-only as JAX's are; a CPU array has none (AttributeError)."""
        cai = getattr(self._backend, "cuda_array_interface", None)
        if cai is None:
            raise AttributeError(f"__cuda_array_interface__ is only defined for arrays on a GPU; "
                                 f"this one is on {self._backend!r}")
        return cai(self._value)

    def to_device(self, device, stream=None):
        """This array on ``device`` (the array API's spelling of ``fnx.device_put``)."""
        return device_put(self, device)

    def __repr__(self):
        if self.is_deleted():
            return f"Array(<donated to {self._value.name}>)"
        # JAX's layout: an empty array shows its shape; the dtype moves to its own line when
        # it would overflow the last one
        prefix, width = "Array(", np.get_printoptions()["linewidth"]
        dtype_str = f"dtype={self.dtype.name}{', weak_type=True' if self._weak else ''})"
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(np.asarray(self), prefix=prefix, suffix=",", separator=", ",
                                   max_line_width=width)
        last_line_len = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last_line_len + len(dtype_str) + 1 > width else " "
        return f"{prefix}{body},{sep}{dtype_str}"

    def __str__(self):
        return str(np.asarray(self))

    def _repr_html_(self):
        import html
        return (f"<pre>{html.escape(repr(self))}</pre><small>{self.aval.str_short()} on "
                f"{self._backend.name}</small>")

    def __reduce__(self):
        return (_rebuild_array, (np.asarray(self), self._weak))


def _rebuild_array(value, weak):
    backend = get_backend()
    return Array(backend.from_numpy(value), backend, weak)


def get_aval(x) -> ShapedArray:
    """The abstract value of an Array, Tracer, NumPy array or Python scalar."""
    if isinstance(x, (Array, Tracer)):
        return x.aval
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        # Python bools are not weak (bool is the lattice's bottom), as in JAX
        return ShapedArray((), dtypes.scalar_dtype(x), weak_type=not isinstance(x, bool))
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(np.shape(x), dtypes.canonical(x.dtype))
    if isinstance(getattr(x, "aval", None), ShapedArray):   # a ShapeDtypeStruct (jit().lower)
        return x.aval
    foreign = foreign_shape_dtype(x)    # a torch tensor, a JAX or CuPy array, a DLPack producer
    if foreign is not None:
        return ShapedArray(*foreign)
    if hasattr(type(x), "__jax_array__"):
        raise ArrayProtocolError(f"{type(x).__name__} offers __jax_array__, which fnx (as JAX "
                                 "since JEP 28661) calls only in explicit conversions: use "
                                 f"fnx.numpy.asarray(x), or register {type(x).__name__} as a "
                                 "pytree")
    raise ArgumentTypeError(f"{type(x).__name__} is not a valid fnx type: expected an array or a "
                    f"Python scalar, got {x!r:.80}")


def is_arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)) \
        or is_foreign_array(x)


_folding_on_host = [False]


@contextlib.contextmanager
def folding_on_host():
    """Eager primitives inside the block compute on the host (their results still land on the
    backend of their operands): jit folds scalar constants (a cotangent seed, a mean's 1/N) into
    literals this way, so tracing launches, and compiles, nothing on the device."""
    prev = _folding_on_host[0]
    _folding_on_host[0] = True
    try:
        yield
    finally:
        _folding_on_host[0] = prev


class EvalTrace(Trace):
    """Runs primitives eagerly on the backend that holds the operands."""

    def process_primitive(self, primitive, args, params):
        backend = None
        for a in args:
            if type(a) is Array:
                backend = a._backend
                break
            if isinstance(a, Tracer):
                self.is_own(a)   # raises the leak error
        if primitive.impl is not None:   # higher-order primitives interpret their jaxpr
            return primitive.impl(*args, **params)
        backend = backend or get_backend()
        avals = [get_aval(a) for a in args]
        out_aval = primitive.rule("abstract_eval")(*avals, **params)
        compute = backend
        if _folding_on_host[0] and backend.platform != "cpu":
            compute = get_backend("cpu")
        vals = [compute.to_buffer(a, av.dtype) for a, av in zip(args, avals)]
        impl = compute.impls.get(primitive)
        if impl is None:
            raise MissingRuleError(primitive.name, f"{compute.name} backend impl")
        # like XLA, backends give IEEE results (inf, nan) without warnings: a select often
        # discards them (a vmapped cond's untaken branch), and debug_nans reports the rest
        with np.errstate(all="ignore"):
            try:
                out = impl(*vals, **params)
            except MemoryError:
                raise OutOfMemoryError.allocating(primitive.name, out_aval) from None
        if _config.debug_nans or _config.debug_infs:
            check_nans(primitive, out if primitive.multiple_results else [out])
        if primitive.multiple_results:
            return [Array(backend.cast(o, av.dtype), backend, av.weak_type)
                    for o, av in zip(out, out_aval)]
        return Array(backend.cast(out, out_aval.dtype), backend, out_aval.weak_type)


_state = _TraceState()


def full_lower_to_array(x) -> Array:
    """Turn a Python scalar / NumPy array into an fnx Array on the default backend."""
    if type(x) is Array:
        return x
    aval = get_aval(x)
    backend = get_backend()
    return Array(backend.to_buffer(x, aval.dtype), backend, aval.weak_type)


def concrete_or_error(x, what: str):
    """``x``'s concrete NumPy value; a clear error if it is traced."""
    if isinstance(x, Tracer):
        return np.asarray(x._concrete_for(what, ""))
    return np.asarray(x)


__all__ = ["ShapedArray", "Primitive", "Trace", "Tracer", "Array", "EvalTrace", "bind",
           "current_trace", "set_current_trace", "get_aval", "user_frame"]


def bind(primitive: Primitive, *args, **params):
    return primitive.bind(*args, **params)

"""Named exceptions for the mistakes users make, and the user's source line they point at."""
from __future__ import annotations

import contextvars
import functools
import os
import sys
from dataclasses import dataclass

_FNX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PREFIXES = (_FNX_DIR + os.sep, os.path.dirname(os.__file__) + os.sep)


@dataclass(frozen=True)
class SourceInfo:
    """Where in the user's code an operation was written."""
    filename: str
    lineno: int
    function: str

    def __str__(self):
        return f"{self.filename}:{self.lineno} ({self.function})"


@functools.lru_cache(maxsize=4096)     # asked for every frame of every traced operation
def _is_internal(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith(_SKIP_PREFIXES):
        return not _is_test_or_example(filename)
    return False


def _is_test_or_example(filename: str) -> bool:
    # files of the fnx checkout that are user code: tests, examples, benchmarks, notebooks
    rel = filename[len(os.path.dirname(_FNX_DIR)) + 1:]
    return rel.startswith(("tests" + os.sep, "examples" + os.sep, "benchmarks" + os.sep))


# (frame, source): while fnx re-traces an equation of a jaxpr from ``frame`` (eval_jaxpr),
# what that equation stages keeps the line it was first traced from; set and reset directly
# (jaxpr.bind_equation), once per re-traced equation
RETRACING: contextvars.ContextVar = contextvars.ContextVar("fnx_retracing", default=None)


def user_frame() -> SourceInfo | None:
    """The innermost stack frame outside fnx itself (the user's line), or None; while an
    equation is re-traced, the line it came from (unless user code called from there, such
    as a custom rule, stages it)."""
    retraced = RETRACING.get()
    f = sys._getframe(1)
    while f is not None:
        if retraced is not None and f is retraced[0]:
            return retraced[1]
        code = f.f_code
        if not _is_internal(code.co_filename):
            return SourceInfo(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None


def types_str(values) -> str:
    """``values`` as JAX prints types in messages (``float32[2,3], int``)."""
    def one(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return f"{x.dtype}[{','.join(map(str, x.shape))}]"
        return type(x).__name__
    return ", ".join(one(x) for x in values)


def _where(source: SourceInfo | None) -> str:
    return f"\n  at {source}" if source is not None else ""


class FnxError(Exception):
    """Base class of fnx's errors.

    >>> try:
    ...     jnp.ones(3) + jnp.ones(4)
    ... except fnx.FnxError as e:
    ...     print(type(e).__name__)
    ShapeError
    """

    def __init__(self, message: str, source: SourceInfo | None = None):
        self.source = source if source is not None else user_frame()
        super().__init__(message + _where(self.source))


class ShapeError(FnxError, ValueError, TypeError):
    """Operands have shapes that do not fit together. JAX raises TypeError from its
    primitives' shape rules (``x @ y``, ``lax.add``, ``reshape``) and ValueError from
    ``jnp``'s argument checks (``stack``, ``squeeze``, ``broadcast_to``); a ShapeError is
    both, so either ``except`` clause of a ported program catches it.

    >>> try:
    ...     jnp.ones((2, 3)) @ jnp.ones((4, 5))
    ... except fnx.ShapeError as e:
    ...     print(str(e).splitlines()[0])
    matmul: contracting dimensions differ: (2, 3) @ (4, 5) (3 != 4)
    """


class DTypeError(FnxError, TypeError):
    """An operand has a dtype the operation does not accept.

    >>> try:
    ...     fnx.lax.sin(jnp.arange(3))
    ... except fnx.DTypeError as e:
    ...     print(str(e).splitlines()[0])
    sin does not accept dtype int32
    """


class TypePromotionError(DTypeError, ValueError):
    """Operands of different dtypes met under ``numpy_dtype_promotion("strict")``.

    >>> with fnx.numpy_dtype_promotion("strict"):
    ...     try:
    ...         fnx.numpy.ones(2, "float32") + fnx.numpy.ones(2, "int32")
    ...     except fnx.dtypes.TypePromotionError:
    ...         print("refused")
    refused
    """


class DTypeValueError(DTypeError, ValueError):
    """An argument's dtype is one the function refuses where JAX raises ValueError
    (``scipy.special.polygamma`` with a floating-point order)."""


class ArgumentTypeError(FnxError, TypeError):
    """An argument is not an array, a Python scalar or a pytree of them (a string, an
    arbitrary object), is missing, or is not of the kind the function takes: a compiled
    function called with other shapes, dtypes or numbers of arguments than it was compiled for
    (JAX raises TypeError)."""


class ArgumentValueError(FnxError, ValueError):
    """An argument has a value the function cannot take: None where an array is needed (JAX
    raises ValueError)."""


class ArrayProtocolError(ArgumentTypeError, ValueError):
    """An argument offers ``__jax_array__``, which JAX calls only in explicit conversions since
    JEP 28661: convert it with ``jnp.asarray`` or register it as a pytree. A ValueError, as in
    JAX."""


class CotangentTypeError(DTypeError, ValueError):
    """A cotangent given to a VJP function has a dtype its output cannot take (a complex
    cotangent for a real output); JAX raises ValueError."""


class ConcretizationTypeError(FnxError, TypeError):
    """A traced value was used where Python needs a concrete one (``if``, ``bool``, ``int``).

    >>> try:
    ...     fnx.jit(lambda x: 1 if x > 0 else 2)(1.0)
    ... except fnx.ConcretizationTypeError as e:
    ...     print(type(e).__name__)
    TracerBoolConversionError
    """


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (an ``if``, ``while``, ``and``) of a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()`` or ``__index__`` (a shape, a slice bound, ``range``) of a traced value."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value converted to a NumPy array (``np.asarray``, a NumPy function)."""


class TracerLeakError(FnxError, TypeError, RuntimeError):
    """A traced value escaped the transformation that created it (JAX's
    ``UnexpectedTracerError``, a TypeError).

    >>> leaked = []
    >>> fnx.jit(lambda x: leaked.append(x) or x)(1.0)
    Array(1., dtype=float32, weak_type=True)
    >>> try:
    ...     leaked[0] + 1.0
    ... except fnx.TracerLeakError as e:
    ...     print(type(e).__name__)
    TracerLeakError
    """


UnexpectedTracerError = TracerLeakError


class TreeStructureError(FnxError, ValueError):
    """Pytrees that must have one structure differ (``tree_map`` over several trees, a
    cotangent shaped unlike the output).

    >>> try:
    ...     fnx.tree_util.tree_map(lambda x, y: x + y, {"a": 1}, {"b": 2})
    ... except fnx.tree_util.TreeStructureError as e:
    ...     print(type(e).__name__)
    TreeStructureError
    """


class StaticArgumentError(FnxError, ValueError, TypeError):
    """``jit``'s static or donated arguments are misnamed, or a static argument cannot be
    hashed (JAX raises ValueError, Python's ``hash`` TypeError)."""


class JaxRuntimeError(FnxError, RuntimeError):
    """A failure while a program runs (JAX's ``jax.errors.JaxRuntimeError``, which XLA raises
    for a device that runs out of memory, among others).

    >>> issubclass(fnx.errors.OutOfMemoryError, JaxRuntimeError)
    True
    """


class OutOfMemoryError(JaxRuntimeError, MemoryError):
    """An array could not be allocated (JAX raises a RuntimeError, RESOURCE_EXHAUSTED)."""

    @classmethod
    def allocating(cls, what: str, avals) -> "OutOfMemoryError":
        avals = avals if isinstance(avals, (list, tuple)) else [avals]
        size = sum(a.size * a.dtype.itemsize for a in avals)
        shown = ", ".join(a.str_short() for a in avals)
        return cls(f"RESOURCE_EXHAUSTED: out of memory allocating {size} bytes for the result "
                   f"of {what} ({shown})")


class GradError(FnxError, TypeError):
    """grad was asked for something it cannot differentiate.

    >>> try:
    ...     fnx.grad(lambda x: x)(jnp.ones(3))
    ... except fnx.GradError as e:
    ...     print(str(e).splitlines()[0])
    grad requires real-valued scalar outputs, but <lambda> returned shape (3,) (f32[3]); ...
    """


class BatchingError(FnxError, ValueError):
    """vmap was given inconsistent axes or sizes.

    >>> try:
    ...     fnx.vmap(lambda x, y: x + y)(jnp.ones(3), jnp.ones(4))
    ... except fnx.BatchingError as e:
    ...     print(str(e).splitlines()[0])
    vmap got inconsistent sizes for the mapped axes of <lambda>:
    """


class AxisNameError(FnxError, NameError):
    """A collective names an axis no enclosing vmap, pmap or shard_map binds.

    >>> try:
    ...     fnx.lax.psum(1.0, "i")
    ... except fnx.AxisNameError as e:
    ...     print(str(e).splitlines()[0])
    unbound axis name: 'i'. A collective names an axis that an enclosing ...
    """


class MeshError(FnxError, ValueError):
    """A mesh, sharding or device set does not fit the devices or the array it is used with, a
    collective's device permutation does not fit its axis, or an array cannot be placed on the
    device asked for.

    >>> try:
    ...     fnx.sharding.Mesh(np.array(fnx.devices()[:1] * 2), ("x",))
    ... except fnx.MeshError as e:
    ...     print(str(e).splitlines()[0])
    a mesh holds each device once, got device ids [0, 0]
    """


class DistributedError(FnxError, RuntimeError, ValueError):
    """``fnx.distributed.initialize`` was called twice, or without a coordinator address (JAX
    raises RuntimeError and ValueError)."""


class MissingRuleError(FnxError, NotImplementedError):
    """A primitive has no rule for the transformation being applied."""

    def __init__(self, primitive, transformation: str):
        super().__init__(f"primitive '{primitive}' has no {transformation} rule")


class DeletedArrayError(FnxError, RuntimeError):
    """An array was used after it was donated to a jitted call."""


class DonatedArgumentError(DeletedArrayError, ValueError):
    """An array an earlier call took was donated again (a ValueError as well, as JAX's)."""


class UnavailableImplementationError(FnxError, RuntimeError):
    """An implementation asked for by name (``implementation='cudnn'``) does not exist on the
    backend the call runs on."""

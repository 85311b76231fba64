"""Named exceptions for the mistakes users make, and the user's source line they point at."""
from __future__ import annotations

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


def _is_internal(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith(_SKIP_PREFIXES):
        return not _is_test_or_example(filename)
    return False


def _is_test_or_example(filename: str) -> bool:
    # files of the fnx checkout that are user code: tests, examples, benchmarks, notebooks
    rel = filename[len(os.path.dirname(_FNX_DIR)) + 1:]
    return rel.startswith(("tests" + os.sep, "examples" + os.sep, "benchmarks" + os.sep))


def user_frame() -> SourceInfo | None:
    """The innermost stack frame outside fnx itself (the user's line), or None."""
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not _is_internal(code.co_filename):
            return SourceInfo(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None


def _where(source: SourceInfo | None) -> str:
    return f"\n  at {source}" if source is not None else ""


class FnxError(Exception):
    """Base class of fnx's errors."""

    def __init__(self, message: str, source: SourceInfo | None = None):
        self.source = source if source is not None else user_frame()
        super().__init__(message + _where(self.source))


class ShapeError(FnxError, ValueError, TypeError):
    """Operands have shapes that do not fit together. JAX raises TypeError from its
    primitives' shape rules (``x @ y``, ``lax.add``, ``reshape``) and ValueError from
    ``jnp``'s argument checks (``stack``, ``squeeze``, ``broadcast_to``); a ShapeError is
    both, so either ``except`` clause of a ported program catches it."""


class DTypeError(FnxError, TypeError):
    """An operand has a dtype the operation does not accept."""


class TypePromotionError(DTypeError, ValueError):
    """Operands of different dtypes met under ``numpy_dtype_promotion("strict")``."""


class DTypeValueError(DTypeError, ValueError):
    """An argument's dtype is one the function refuses where JAX raises ValueError
    (``scipy.special.polygamma`` with a floating-point order)."""


class ArgumentTypeError(FnxError, TypeError):
    """An argument is not an array, a Python scalar or a pytree of them (a string, an
    arbitrary object)."""


class CotangentTypeError(DTypeError, ValueError):
    """A cotangent given to a VJP function has a dtype its output cannot take (a complex
    cotangent for a real output); JAX raises ValueError."""


class ConcretizationTypeError(FnxError, TypeError):
    """A traced value was used where Python needs a concrete one (``if``, ``bool``, ``int``)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (an ``if``, ``while``, ``and``) of a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()`` or ``__index__`` (a shape, a slice bound, ``range``) of a traced value."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value converted to a NumPy array (``np.asarray``, a NumPy function)."""


class TracerLeakError(FnxError, TypeError, RuntimeError):
    """A traced value escaped the transformation that created it (JAX's
    ``UnexpectedTracerError``, a TypeError)."""


UnexpectedTracerError = TracerLeakError


class TreeStructureError(FnxError, ValueError):
    """Pytrees that must have one structure differ (``tree_map`` over several trees, a
    cotangent shaped unlike the output)."""


class StaticArgumentError(FnxError, ValueError, TypeError):
    """``jit``'s static or donated arguments are misnamed, or a static argument cannot be
    hashed (JAX raises ValueError, Python's ``hash`` TypeError)."""


class OutOfMemoryError(FnxError, MemoryError, RuntimeError):
    """An array could not be allocated (JAX raises a RuntimeError, RESOURCE_EXHAUSTED)."""

    @classmethod
    def allocating(cls, what: str, avals) -> "OutOfMemoryError":
        avals = avals if isinstance(avals, (list, tuple)) else [avals]
        size = sum(a.size * a.dtype.itemsize for a in avals)
        shown = ", ".join(a.str_short() for a in avals)
        return cls(f"RESOURCE_EXHAUSTED: out of memory allocating {size} bytes for the result "
                   f"of {what} ({shown})")


class GradError(FnxError, TypeError):
    """grad was asked for something it cannot differentiate."""


class BatchingError(FnxError, ValueError):
    """vmap was given inconsistent axes or sizes."""


class AxisNameError(FnxError, NameError):
    """A collective names an axis no enclosing vmap, pmap or shard_map binds."""


class MeshError(FnxError, ValueError):
    """A mesh, sharding or device set does not fit the devices or the array it is used with."""


class MissingRuleError(FnxError, NotImplementedError):
    """A primitive has no rule for the transformation being applied."""

    def __init__(self, primitive, transformation: str):
        super().__init__(f"primitive '{primitive}' has no {transformation} rule")


class DeletedArrayError(FnxError, RuntimeError):
    """An array was used after it was donated to a jitted call."""


class UnavailableImplementationError(FnxError, RuntimeError):
    """An implementation asked for by name (``implementation='cudnn'``) does not exist on the
    backend the call runs on."""

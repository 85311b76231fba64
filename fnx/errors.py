"""fnx.errors: the errors fnx raises for mistakes in user code, under JAX's names where JAX has
them (``jax.errors``). Each subclasses the builtin exception JAX raises in the same place.

>>> try:
...     fnx.jit(lambda x: 1 if x > 0 else 2)(1.0)
... except fnx.errors.TracerBoolConversionError:
...     pass
"""
from .core.control_flow import (ControlFlowTypeError, ControlFlowValueError,  # noqa: F401
                                ReverseModeWhileLoopError)
from .core.errors import (ArgumentTypeError, ArgumentValueError,  # noqa: F401
                          ArrayProtocolError, AxisNameError, BatchingError,
                          ConcretizationTypeError, CotangentTypeError, DeletedArrayError,
                          DonatedArgumentError,
                          DistributedError, DTypeError, DTypeValueError, FnxError, GradError,
                          MeshError,
                          MissingRuleError, OutOfMemoryError, ShapeError, StaticArgumentError,
                          TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, TracerLeakError, TreeStructureError,
                          TypePromotionError, UnavailableImplementationError,
                          UnexpectedTracerError)
from .core.traceback_util import UnfilteredStackTrace  # noqa: F401
from .numpy._core import AxisError  # noqa: F401
from .numpy.indexing import IndexingError  # noqa: F401

from .core.errors import JaxRuntimeError  # noqa: F401
from .core.jaxpr import JaxprTypeError  # noqa: F401

NonConcreteBooleanIndexError = IndexingError


class JAXTypeError(FnxError, TypeError):
    """A type error of JAX's own kind (the base of ``KeyReuseError``).

    >>> issubclass(JAXTypeError, TypeError)
    True
    """


class JAXIndexError(FnxError, IndexError):
    """An index error of JAX's own kind.

    >>> issubclass(JAXIndexError, IndexError)
    True
    """


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice (JAX raises it under ``debug_key_reuse``; fnx accepts that option
    and checks nothing, so nothing raises it).

    >>> issubclass(KeyReuseError, TypeError)
    True
    """


class InconclusiveDimensionOperation(FnxError):
    """A comparison of symbolic dimensions with no definite answer (fnx's shapes are always
    concrete, so nothing raises it).

    >>> issubclass(InconclusiveDimensionOperation, Exception)
    True
    """

__all__ = ["ArgumentTypeError", "ArgumentValueError", "ArrayProtocolError", "AxisError",
           "AxisNameError", "BatchingError",
           "ConcretizationTypeError", "ControlFlowTypeError", "ControlFlowValueError",
           "CotangentTypeError",
           "DeletedArrayError", "DistributedError", "DonatedArgumentError", "DTypeError", "DTypeValueError", "FnxError",
           "GradError", "IndexingError", "InconclusiveDimensionOperation", "JAXIndexError",
           "JAXTypeError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError", "MeshError",
           "MissingRuleError",
           "NonConcreteBooleanIndexError", "OutOfMemoryError", "ReverseModeWhileLoopError",
           "ShapeError", "StaticArgumentError",
           "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "TracerLeakError", "TreeStructureError",
           "TypePromotionError", "UnavailableImplementationError", "UnexpectedTracerError",
           "UnfilteredStackTrace"]

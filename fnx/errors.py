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

NonConcreteBooleanIndexError = IndexingError

__all__ = ["ArgumentTypeError", "ArgumentValueError", "ArrayProtocolError", "AxisError", "AxisNameError", "BatchingError",
           "ConcretizationTypeError", "ControlFlowTypeError", "ControlFlowValueError",
           "CotangentTypeError",
           "DeletedArrayError", "DistributedError", "DTypeError", "DTypeValueError", "FnxError",
           "GradError", "IndexingError", "MeshError", "MissingRuleError",
           "NonConcreteBooleanIndexError", "OutOfMemoryError", "ReverseModeWhileLoopError",
           "ShapeError", "StaticArgumentError",
           "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "TracerLeakError", "TreeStructureError",
           "TypePromotionError", "UnavailableImplementationError", "UnexpectedTracerError",
           "UnfilteredStackTrace"]

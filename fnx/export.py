"""fnx.export (JAX's ``jax.export``): trace a jitted function for one signature, call the
result (under jit, vmap and grad), and save it to bytes that load in another process.

The bytes are fnx's own versioned format (a JSON program plus raw array data, never a pickle):
fnx's jaxpr, not StableHLO, so they load in fnx only. Shapes are concrete: dimension variables
(``symbolic_shape("b, 4")``) raise ``ShapePolymorphismError``.

>>> exp = fnx.export.export(fnx.jit(lambda x: jnp.sin(x) * 2))(
...     fnx.ShapeDtypeStruct((3,), "float32"))
>>> blob = exp.serialize(vjp_order=1)
>>> again = fnx.export.deserialize(blob)
>>> again.call(jnp.zeros(3))
Array([0., 0., 0.], dtype=float32)
>>> fnx.grad(lambda x: again.call(x).sum())(jnp.zeros(3))
Array([2., 2., 2.], dtype=float32)
"""
from .core.export import (DisabledSafetyCheck, Exported, ExportError,  # noqa: F401
                          ExportVersionError, ShapePolymorphismError, SymbolicScope, call,
                          default_export_platform, deserialize, export, is_symbolic_dim,
                          maximum_supported_calling_convention_version,
                          minimum_supported_calling_convention_version,
                          register_namedtuple_serialization,
                          register_pytree_node_serialization, symbolic_args_specs,
                          symbolic_shape)
from .prng import KeyArray as _KeyArray

# typed PRNG keys are pytree nodes of fnx's own: exported functions may take and return them
register_pytree_node_serialization(_KeyArray, serialized_name="fnx.prng.KeyArray",
                                   serialize_auxdata=lambda impl: impl.encode(),
                                   deserialize_auxdata=lambda data: data.decode())

__all__ = ["DisabledSafetyCheck", "Exported", "ExportError", "ExportVersionError",
           "ShapePolymorphismError", "SymbolicScope", "call", "default_export_platform",
           "deserialize", "export", "is_symbolic_dim",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "symbolic_args_specs", "symbolic_shape"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

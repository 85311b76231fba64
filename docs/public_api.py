"""The public API: which modules are documented and which of their names are public.

The API reference (docs/conf.py) and the doctest run (tests/test_doctests.py) both read this, so
the pages and the tested examples cover the same names.
"""
import importlib
import types

# JAX's module names, in the order the reference lists them
MODULES = (
    "fnx", "fnx.numpy", "fnx.numpy.fft", "fnx.numpy.linalg", "fnx.lax", "fnx.lax.linalg",
    "fnx.nn", "fnx.nn.initializers", "fnx.random", "fnx.optim", "fnx.optim.losses",
    "fnx.optim.tree_utils", "fnx.optim.projections", "fnx.optim.contrib",
    "fnx.optim.second_order", "fnx.optim.assignment", "fnx.optim.perturbations",
    "fnx.optim.microbatching",
    "fnx.linalg", "fnx.scipy.special", "fnx.scipy.stats", "fnx.scipy.linalg",
    "fnx.scipy.optimize", "fnx.scipy.sparse.linalg", "fnx.scipy.signal", "fnx.tree_util",
    "fnx.tree", "fnx.debug", "fnx.sharding", "fnx.experimental", "fnx.ad_checkpoint",
    "fnx.ref",
    "fnx.flatten_util", "fnx.ops", "fnx.test_util", "fnx.typing", "fnx.dlpack",
    "fnx.amp", "fnx.dtypes", "fnx.image", "fnx.scipy.ndimage", "fnx.scipy.integrate",
    "fnx.experimental.ode", "fnx.experimental.mesh_utils", "fnx.scipy.fft",
    "fnx.scipy.interpolate", "fnx.scipy.spatial.transform", "fnx.scipy.cluster.vq",
    "fnx.custom_batching", "fnx.profiler", "fnx.experimental.checkify",
    "fnx.experimental.jet", "fnx.experimental.sparse", "fnx.export", "fnx.ffi",
    "fnx.extend", "fnx.extend.core", "fnx.extend.linear_util", "fnx.extend.backend",
    "fnx.extend.random", "fnx.interpreters", "fnx.interpreters.ad", "fnx.interpreters.batching",
    "fnx.interpreters.mlir", "fnx.custom_derivatives", "fnx.stages", "fnx.monitoring",
    "fnx.memory", "fnx.lib", "fnx.lib.xla_bridge", "fnx.version",
)

# fnx.lax re-exports the whole of fnx.core.lax (``import *``); these are the core's building
# blocks for defining primitives and rules, not JAX's lax API, so they are not documented there.
_LAX_INTERNALS = frozenset("""
    Primitive ShapedArray Zero abs_ all_primitives bdim_at_front canonicalize_precision
    complex_ complex_basetype complex_dtype defjvp defjvp_with_output deflinear elementwise
    exact_scalar get_aval instantiate is_undefined max_ min_ not_mapped pow_ primitive reduction
    round_ stop_gradient_raw zero_jvp zeros_like_aval unary binary elementwise_primitives
    broadcast_batch move_batch_axis register_option register_tangent_arithmetic shape_str
    axes_past_batch batch_axis_after_removing
""".split())
_EXCLUDED = {"fnx.lax": _LAX_INTERNALS}
# fnx's own helpers, which some modules import for their own use: not part of any module's API
_HELPERS = frozenset("""
    get_aval concrete_or_error promote_and_broadcast promote_dtypes promote_dtypes_inexact
""".split())

# objects from these modules are the implementation's imports, not fnx's API
_FOREIGN = ("typing", "collections", "dataclasses", "functools", "enum", "contextlib", "abc")


def _is_public(obj) -> bool:
    if isinstance(obj, types.ModuleType) or type(obj).__name__ == "_Feature":
        return False
    module = getattr(obj, "__module__", None) or ""
    return not module.split(".")[0] in _FOREIGN


def public_names(module_name: str) -> list[str]:
    """The public names of one module: its ``__all__``, else every name not starting with an
    underscore that is not a module or an import from the standard library; fnx.lax's primitive
    objects (``add_p``) and rule helpers are left out.

    >>> "grad" in public_names("fnx"), "add_p" in public_names("fnx.lax")
    (True, False)
    """
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    excluded = _HELPERS | _EXCLUDED.get(module_name, frozenset())
    return sorted(n for n in names
                  if n not in excluded and not (module_name == "fnx.lax" and n.endswith("_p"))
                  and _is_public(getattr(module, n)))


def public_objects():
    """``(module_name, name, object)`` for every public name, each object once (the first module
    in ``MODULES`` that exports it)."""
    seen = set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            yield module_name, name, obj

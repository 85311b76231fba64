"""The examples in the docstrings of the public API run, and print what they say they print.

Every module in ``docs/public_api.MODULES`` (the modules the API reference documents) is
covered: its own docstring and those of its public names (methods of public classes included).
Each example runs in the namespace of the module that defines it, plus the names the examples
use without importing them, as JAX's do: ``fnx``, ``jnp`` (fnx.numpy), ``lax`` (fnx.lax) and
``np`` (NumPy). They run with x64 off, the user's default, so the printed dtypes are the ones a
user sees. No module is excluded.
"""
import doctest
import importlib
import inspect
import os
import sys

import numpy as np
import pytest

import fnx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "docs"))
from public_api import MODULES, public_objects  # noqa: E402

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
_module_finder = doctest.DocTestFinder(recurse=False, exclude_empty=True)


def _globs(module):
    globs = dict(vars(module))
    globs.update(fnx=fnx, jnp=fnx.numpy, lax=fnx.lax, np=np)
    return globs


def _doctests():
    """``(id, [DocTest])`` for each public object, and each module docstring, with examples."""
    for name in MODULES:
        module = importlib.import_module(name)
        tests = _module_finder.find(module, name, globs=_globs(module))
        yield name, [t for t in tests if t.examples]
    for module_name, name, obj in public_objects():
        if not getattr(obj, "__doc__", None) or not (inspect.isroutine(obj) or inspect.isclass(obj)
                                                    or callable(obj)):
            continue
        home = inspect.getmodule(obj) or sys.modules[module_name]
        qualified = f"{module_name}.{name}"
        inner = inspect.unwrap(obj)     # a decorated function's own lines, for the report
        if getattr(inner, "__doc__", None) == obj.__doc__:
            obj = inner
        try:
            tests = _finder.find(obj, qualified, module=home, globs=_globs(home))
        except ValueError:      # an object doctest cannot look into (a NumPy ufunc)
            continue
        yield qualified, [t for t in tests if t.examples]


ALL_DOCTESTS = list(_doctests())
DOCTESTS = [(name, tests) for name, tests in ALL_DOCTESTS if tests]


def _numpy_own(qualified: str, obj) -> bool:
    """NumPy's abstract scalar types and warnings, re-exported unchanged as JAX does
    (``jnp.floating is np.floating``): their docstrings are NumPy's, and an fnx wrapper would
    break ``np.issubdtype(x.dtype, jnp.floating)``."""
    name = qualified.rsplit(".", 1)[1]
    return obj is getattr(np, name, None) or obj is getattr(np.exceptions, name, None)


def _public_callables() -> dict:
    return {f"{module}.{name}": obj for module, name, obj in public_objects() if callable(obj)}


def test_examples_are_found():
    # a broken collection (an import error, a renamed module) must not pass as "nothing to run"
    assert len(DOCTESTS) > 300, len(DOCTESTS)


@pytest.mark.x32
@pytest.mark.parametrize("tests", [t for _, t in DOCTESTS], ids=[n for n, _ in DOCTESTS])
def test_docstring_examples(tests):
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = []
    for test in tests:
        runner.run(test, out=report.append, clear_globs=True)
    assert runner.failures == 0, "".join(report)


# Public callables still without an example (issue #24): this list only shrinks. A new public
# callable needs an example; one that gains an example leaves the list.
_NO_EXAMPLE_YET = frozenset("""
    fnx.AxisNameError fnx.BatchingError fnx.ClosedJaxpr fnx.ConcretizationTypeError
    fnx.DTypeError fnx.FnxError fnx.GradError fnx.MeshError fnx.P fnx.Ref fnx.ShapeError
    fnx.TracerLeakError fnx.amp.NoOpLossScale fnx.amp.PolicyError fnx.amp.cast_to_full
    fnx.amp.cast_to_half fnx.amp.half_dtype fnx.amp.select_tree fnx.debug.DebuggerQuit
    fnx.debug.NaNError fnx.default_backend fnx.default_matmul_precision fnx.device_get
    fnx.device_put_sharded fnx.effects_barrier fnx.enable_x64 fnx.eval_shape
    fnx.flatten_util.ravel_pytree fnx.freeze fnx.hessian fnx.jacfwd fnx.jacobian
    fnx.lax.ControlFlowTypeError fnx.lax.ConvDimensionNumbersError fnx.lax.FftType
    fnx.lax.ReverseModeWhileLoopError fnx.lax.all_to_all fnx.lax.bitcast_convert_type
    fnx.lax.cbrt fnx.lax.complex fnx.lax.conj fnx.lax.conv_shape_tuple fnx.lax.dot
    fnx.lax.dynamic_index_in_dim fnx.lax.dynamic_slice_in_dim
    fnx.lax.dynamic_update_index_in_dim fnx.lax.dynamic_update_slice_in_dim fnx.lax.exp2
    fnx.lax.full fnx.lax.imag fnx.lax.pmax fnx.lax.pmin fnx.lax.pshuffle fnx.lax.psum_scatter
    fnx.lax.real fnx.lax.reciprocal fnx.lax.select fnx.lax.stop_gradient fnx.lax.take
    fnx.lax.take_along_axis fnx.linalg.cho_factor fnx.linearize fnx.local_device_count
    fnx.local_devices fnx.log_compiles fnx.named_call fnx.new_ref fnx.nn.Module fnx.nn.conv2d
    fnx.numpy.AxisError fnx.numpy.linalg.EighResult fnx.numpy.linalg.QRResult
    fnx.numpy.linalg.SVDResult fnx.numpy.linalg.SlogdetResult fnx.optim.EmaState
    fnx.optim.EmptyState fnx.optim.FactoredState fnx.optim.GradientTransformation
    fnx.optim.InjectHyperparamsState fnx.optim.MultiStepsState fnx.optim.MultiTransformState
    fnx.optim.add_decayed_weights fnx.optim.clip fnx.optim.constant_schedule
    fnx.optim.global_norm fnx.optim.join_schedules fnx.optim.losses.hinge_loss
    fnx.optim.losses.log_cosh fnx.optim.losses.squared_error fnx.optim.polynomial_schedule
    fnx.optim.scale fnx.optim.scale_by_adam fnx.optim.scale_by_adamax
    fnx.optim.scale_by_amsgrad fnx.optim.scale_by_belief fnx.optim.scale_by_learning_rate
    fnx.optim.scale_by_lion fnx.optim.scale_by_radam fnx.optim.scale_by_rms
    fnx.optim.scale_by_rss fnx.optim.scale_by_schedule fnx.optim.scale_by_stddev
    fnx.optim.scale_by_trust_ratio fnx.optim.trace fnx.process_count fnx.process_index
    fnx.random.clone fnx.random.exponential fnx.random.gumbel fnx.random.key_impl
    fnx.scipy.optimize.OptimizeResults fnx.scipy.signal.convolve2d fnx.scipy.signal.correlate
    fnx.scipy.signal.correlate2d fnx.test_util.check_jvp fnx.test_util.check_vjp
    fnx.test_util.subjaxprs fnx.tree.flatten_with_path fnx.tree_util.DictKey
    fnx.tree_util.FlattenedIndexKey fnx.tree_util.GetAttrKey fnx.tree_util.PyTreeDef
    fnx.tree_util.SequenceKey fnx.tree_util.TreeStructureError fnx.tree_util.broadcast_prefix
    fnx.tree_util.flatten_up_to fnx.tree_util.register_dataclass
    fnx.tree_util.register_pytree_node_class fnx.tree_util.register_pytree_with_keys_class
    fnx.tree_util.tree_all fnx.tree_util.tree_leaves_with_path
""".split())


def test_every_public_callable_has_an_example():
    with_examples = {name for name, tests in DOCTESTS}
    missing = {name for name, obj in _public_callables().items()
               if name not in with_examples and not _numpy_own(name, obj)}
    new = sorted(missing - _NO_EXAMPLE_YET)
    assert not new, f"{len(new)} public callables have no example: {new}"
    stale = sorted(_NO_EXAMPLE_YET - missing)
    assert not stale, f"these have an example now (or are gone): remove them from the list: {stale}"


def test_numpy_own_objects_are_numpys():
    own = [name for name, obj in _public_callables().items() if _numpy_own(name, obj)]
    assert "fnx.numpy.floating" in own and "fnx.numpy.float32" not in own, own

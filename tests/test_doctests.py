"""The examples in the docstrings of the public API run, and print what they say they print.

Every module in ``docs/public_api.MODULES`` (the modules the API reference documents) is
covered: its own docstring and those of its public names (methods of public classes included).
Each example runs in the namespace of the module that defines it (and of the module that
exports it), plus the names the examples
use without importing them, as JAX's do: ``fnx``, ``jnp`` (fnx.numpy), ``lax`` (fnx.lax) and
``np`` (NumPy). They run with x64 off, the user's default, so the printed dtypes are the ones a
user sees. No module is excluded, and every public callable has an example (NumPy's own
objects that fnx.numpy re-exports unchanged, as JAX does, keep NumPy's docstrings).
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


def _globs(module, exporter=None):
    # a name documented in a package but defined in one of its private modules sees the
    # package's names too, as its users do
    globs = dict(vars(exporter)) if exporter is not None else {}
    globs.update(vars(module))
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
            tests = _finder.find(obj, qualified, module=home,
                                 globs=_globs(home, sys.modules[module_name]))
        except ValueError:      # an object doctest cannot look into (a NumPy ufunc)
            continue
        yield qualified, [t for t in tests if t.examples]


DOCTESTS = [(name, tests) for name, tests in _doctests() if tests]


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


def test_every_public_callable_has_an_example():
    with_examples = {name for name, tests in DOCTESTS}
    missing = sorted(name for name, obj in _public_callables().items()
                     if name not in with_examples and not _numpy_own(name, obj))
    assert not missing, f"{len(missing)} public callables have no example: {missing}"


def test_numpy_own_objects_are_numpys():
    own = [name for name, obj in _public_callables().items() if _numpy_own(name, obj)]
    assert "fnx.numpy.floating" in own and "fnx.numpy.float32" not in own, own

"""Real JAX programs (tests/programs/*.py: JAX's own examples and programs in the style of
third-party code) run twice, by JAX and by fnx with only their imports changed, as a user ports
them. Each program leaves its results in ``RESULT``; both runs must give the same values and dtypes.
They run with x64 off, JAX's default. JAX compiles every operation these programs run eagerly,
about a minute in all, so its executables are kept in a persistent cache in the temporary
directory: later runs take a fraction of that."""
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")

pytestmark = pytest.mark.x32
PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))

_IMPORT_REWRITES = [          # the edits a user makes to port a program, line by line
    (r"^(\s*)import jax\.([\w.]+) as", r"\1import fnx.\2 as"),
    (r"^(\s*)import jax(\s*(#.*)?)$", r"\1import fnx as jax\2"),
    (r"^(\s*)from jax(\.|\s)", r"\1from fnx\2"),
    (r"^(\s*)import optax(\s*(#.*)?)$", r"\1import fnx.optim as optax\2"),
    (r"^(\s*)import optax\.([\w.]+)\s*(#.*)?$", r"\1import fnx.optim.\2; import fnx.optim as optax"),
    (r"^(\s*)from optax(\.|\s)", r"\1from fnx.optim\2"),
]


@pytest.fixture(scope="module", autouse=True)
def _jax_compilation_cache():
    import jax
    cache = Path(tempfile.gettempdir()) / "fnx-tests-jax-cache"
    options = {"jax_compilation_cache_dir": str(cache),
               "jax_persistent_cache_min_compile_time_secs": 0,
               "jax_persistent_cache_min_entry_size_bytes": 0}
    old = {name: getattr(jax.config, name) for name in options}
    for name, value in options.items():
        jax.config.update(name, value)
    yield
    for name, value in old.items():
        jax.config.update(name, value)
    try:        # JAX reads the cache settings once; let the other tests see theirs again
        from jax._src import compilation_cache
        compilation_cache.reset_cache()
    except (ImportError, AttributeError):
        pass


def ported(source: str) -> str:
    """``source`` with its JAX (and optax) imports changed to fnx's."""
    for pattern, replacement in _IMPORT_REWRITES:
        source = re.sub(pattern, replacement, source, flags=re.MULTILINE)
    return source


def run(source: str, path: Path) -> dict:
    scope = {"__name__": "__main__", "__file__": str(path)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, str(path), "exec"), scope)
    return dict(_leaves("", scope["RESULT"])), scope.get("TOLERANCE", 1e-4)


def _leaves(name, value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(f"{name}.{key}", item)
    elif isinstance(value, (list, tuple)) and value and not np.isscalar(value[0]):
        for i, item in enumerate(value):
            yield from _leaves(f"{name}[{i}]", item)
    else:
        yield name, np.asarray(value)


def test_ported_rewrites_only_imports():
    source = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\nimport optax\njax.jit\n"
    assert ported(source) == ("import fnx as jax\nimport fnx.numpy as jnp\nfrom fnx import lax\n"
                              "import fnx.optim as optax\njax.jit\n")


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_gives_jax_results(path, jax_x64_as_fnx):
    source = path.read_text()
    expected, _ = run(source, path)
    actual, tolerance = run(ported(source), path)
    assert actual.keys() == expected.keys()
    for name, want in expected.items():
        got = actual[name]
        assert (got.shape, got.dtype) == (want.shape, want.dtype), name
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)

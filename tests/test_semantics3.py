"""Places where fnx once gave a different result from JAX without an error, each run by fnx
and by JAX on the CPU with fresh random inputs (the seed is in the failure message): values,
dtypes, shapes and weak types must agree."""
import jax
import numpy as np
import pytest

import fnx
from test_jax_differences_2 import FNX, JAX, same_as_jax  # noqa: F401 - the shared oracle

pytestmark = pytest.mark.x32


@pytest.fixture(autouse=True)
def _jax_as_fnx(jax_x64_as_fnx):
    """JAX runs with x64 set as fnx's (off: these are the user's defaults)."""


@pytest.fixture
def seed():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed={seed}")    # pytest shows it beside a failure
    return seed


@pytest.mark.parametrize("name", ["max", "min", "nanmax", "nanmin"])
def test_min_max_initial_keeps_the_array_dtype(name, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-9, 9, (3, 4)).astype(np.int8)
    mask = rng.random((3, 4)) > 0.4
    for kw in ({"initial": 0.5}, {"initial": 2.7, "where": mask}, {"axis": 1, "initial": -3.9,
                                                                  "where": mask}):
        same_as_jax(lambda s: getattr(s.np, name)(s.np.asarray(x), **kw))


def test_lstsq_of_a_zero_matrix_is_zero_with_rank_zero(seed):
    b = np.random.default_rng(seed).standard_normal(3).astype(np.float32)
    for a in (np.zeros((3, 2), np.float32), np.zeros((3, 3), np.float32)):
        same_as_jax(lambda s: s.np.linalg.lstsq(s.np.asarray(a), s.np.asarray(b))[:3])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_randint_of_narrow_integers_draws_jax_s_numbers(dtype, seed):
    rng = np.random.default_rng(seed)
    lo = rng.integers(-400, 100, (5,))
    hi = lo + rng.integers(1, 400, (5,))
    same_as_jax(lambda s: s.m.random.randint(s.m.random.PRNGKey(seed), (2, 5), lo, hi, dtype))
    same_as_jax(lambda s: s.m.random.randint(s.m.random.key(seed), (7,), -3, 300, dtype))

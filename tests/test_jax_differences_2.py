"""Programs beyond fnx.numpy's functions whose results once differed from JAX's without an
error (indexing modes, lax's gather and scatter, transformations, fnx.nn, fnx.lax,
fnx.scipy and linalg), each run by fnx and by JAX on the CPU with fresh random inputs: values,
dtypes, shapes and weak types must agree, and where JAX raises, fnx raises an error of the
same builtin class."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

pytestmark = pytest.mark.x32


@pytest.fixture(autouse=True)
def _jax_as_fnx(jax_x64_as_fnx):
    """JAX runs with x64 set as fnx's (off: these are the user's defaults)."""


class _Side:
    """One library's names: ``m`` (fnx or jax), ``np``, ``lax``, ``nn``, ``scipy``."""

    def __init__(self, m):
        import importlib
        self.m = m
        self.np = importlib.import_module(m.__name__ + ".numpy")
        self.lax = importlib.import_module(m.__name__ + ".lax")
        self.nn = importlib.import_module(m.__name__ + ".nn")
        self.scipy = importlib.import_module(m.__name__ + ".scipy")
        for sub in ("special", "stats", "linalg"):
            importlib.import_module(m.__name__ + ".scipy." + sub)


FNX, JAX = _Side(fnx), _Side(jax)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in _leaves(v)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    return [x]


def _structure(x):
    if isinstance(x, (tuple, list)):
        return type(x).__name__, tuple(_structure(v) for v in x)
    if isinstance(x, dict):
        return "dict", tuple((k, _structure(x[k])) for k in sorted(x))
    return "leaf"


def _builtin_bases(exc):
    return [c for c in type(exc).__mro__
            if c.__module__ == "builtins" and c not in (Exception, BaseException, object)]


def same_as_jax(program, rtol=1e-5, atol=1e-6):
    """``program(side)`` run with fnx's names and with JAX's gives the same structure, dtypes,
    shapes, weak types and values, or raises in both (fnx's error an instance of a builtin
    class JAX's is)."""
    try:
        want = program(JAX)
    except Exception as e:     # noqa: BLE001 - JAX's outcome is the oracle
        with pytest.raises(tuple(_builtin_bases(e)) or type(e)):
            program(FNX)
        return
    got = program(FNX)
    assert _structure(got) == _structure(want)
    for g, w in zip(_leaves(got), _leaves(want)):
        if w is None:
            assert g is None
            continue
        g_np, w_np = np.asarray(g), np.asarray(w)
        assert (g_np.dtype, g_np.shape) == (w_np.dtype, w_np.shape), (g_np.dtype, g_np.shape,
                                                                      w_np.dtype, w_np.shape)
        if hasattr(w, "weak_type"):
            assert bool(getattr(g, "weak_type", False)) == bool(w.weak_type), (g, w)
        if w_np.dtype.kind in "fc":
            np.testing.assert_allclose(g_np, w_np, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g_np, w_np)


# ---------------------------------------------------------------------------------------------
# indexing and its modes


@pytest.mark.parametrize("index", [(True,), (False,), (0, True), (Ellipsis, False),
                                   (True, 0, None)], ids=str)
def test_a_scalar_boolean_index_is_a_new_axis(rng, index):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    same_as_jax(lambda s: s.np.asarray(x)[index])
    same_as_jax(lambda s: s.m.jit(lambda a: a[index])(s.np.asarray(x)))
    same_as_jax(lambda s: s.m.jit(lambda a: a.at[index].add(3.0))(s.np.asarray(x)))


def test_lax_gather_clamps_by_default_and_scatter_drops_a_broken_promise(rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    idx = np.array([[0], [4], [5], [-1], [2]])
    for sizes in [(1, 6), (1, 3)]:
        same_as_jax(lambda s: s.lax.gather(
            s.np.asarray(x), idx, s.lax.GatherDimensionNumbers((1,), (0,), (0,)), sizes))
    for name in ["scatter", "scatter_add", "scatter_mul", "scatter_max", "scatter_sub"]:
        for window in (6, 3):
            upd = rng.standard_normal((5, window)).astype(np.float32)
            same_as_jax(lambda s: s.m.jit(lambda a, i: getattr(s.lax, name)(
                a, i, upd, s.lax.ScatterDimensionNumbers((1,), (0,), (0,)),
                mode="promise_in_bounds"))(s.np.asarray(x), idx))


@pytest.mark.parametrize("mode", ["promise_in_bounds", "wrap", "raise", "drop"])
def test_take_and_take_along_axis_modes_as_jax(rng, mode):
    x = rng.integers(-9, 9, (5, 4)).astype(np.int32)
    same_as_jax(lambda s: s.np.take(s.np.asarray(x), np.array([0, 4, -1, 5, -6]), axis=0,
                                    mode=mode))
    same_as_jax(lambda s: s.np.take_along_axis(s.np.asarray(x), np.array([0, 4, -1, 25, -21]),
                                               axis=None, mode=mode))
    same_as_jax(lambda s: s.m.jit(lambda a: s.np.take_along_axis(
        a, np.array([[0, 4, -1, 5], [-6, 19, 2, 3]]), axis=0, mode=mode))(s.np.asarray(x)))


def test_put_compress_select_where_outcomes_as_jax(rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    same_as_jax(lambda s: s.np.put(s.np.asarray(x), np.array([0, 3]), 9.0, mode="raise",
                                   inplace=False))
    for cond in ([True, False, True], [1, 0, 1, 1, 0, 0, 1], [0, 1]):
        for axis in (None, 0, 1):
            same_as_jax(lambda s: s.np.compress(np.array(cond), s.np.asarray(x), axis=axis,
                                                size=4, fill_value=-1))
    ints = rng.integers(-3, 3, (5, 4)).astype(np.int32)
    same_as_jax(lambda s: s.np.select([ints, ints > 1], [x, 2 * x], -1.0))
    same_as_jax(lambda s: s.np.where(x > 0, x))

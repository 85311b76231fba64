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


def test_lstsq_and_cond_of_a_zero_matrix_as_jax(seed):
    b = np.random.default_rng(seed).standard_normal(3).astype(np.float32)
    for a in (np.zeros((3, 2), np.float32), np.zeros((3, 3), np.float32)):
        same_as_jax(lambda s: s.np.linalg.lstsq(s.np.asarray(a), s.np.asarray(b))[:3])
    zero = np.zeros((2, 3, 3), np.float32)
    same_as_jax(lambda s: [s.np.linalg.cond(s.np.asarray(zero), p) for p in (None, 2, -2, 1)])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_randint_of_narrow_integers_draws_jax_s_numbers(dtype, seed):
    rng = np.random.default_rng(seed)
    lo = rng.integers(-400, 100, (5,))
    hi = lo + rng.integers(1, 400, (5,))
    same_as_jax(lambda s: s.m.random.randint(s.m.random.PRNGKey(seed), (2, 5), lo, hi, dtype))
    same_as_jax(lambda s: s.m.random.randint(s.m.random.key(seed), (7,), -3, 300, dtype))


def test_cbrt_slopes_at_zero_infinities_and_nan_as_jax(seed):
    x = np.random.default_rng(seed).standard_normal(5).astype(np.float32)
    x = np.concatenate([x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    for f in (lambda s: s.np.cbrt, lambda s: s.lax.cbrt):
        same_as_jax(lambda s: f(s)(s.np.asarray(x)))
        same_as_jax(lambda s: s.m.vmap(s.m.grad(f(s)))(s.np.asarray(x)), rtol=1e-5, atol=0)
        same_as_jax(lambda s: s.m.jvp(f(s), (s.np.asarray(x),), (s.np.ones_like(x),)), atol=0)
        same_as_jax(lambda s: s.m.vmap(s.m.grad(s.m.grad(f(s))))(s.np.asarray(x)), atol=0)


def test_custom_rules_see_arrays_when_differentiating_at_python_numbers(seed):
    x, y = np.random.default_rng(seed).standard_normal(2).tolist()
    same_as_jax(lambda s: s.m.grad(s.np.logaddexp, argnums=(0, 1))(x, y))
    same_as_jax(lambda s: s.m.jvp(s.np.logaddexp, (x, -np.inf), (1.0, 1.0)))
    same_as_jax(lambda s: s.m.value_and_grad(s.nn.softplus)(x))
    same_as_jax(lambda s: s.m.grad(s.scipy.special.logsumexp)(np.float32(x)))

    def with_rule(s):
        @s.m.custom_jvp
        def h(v):
            return v * 2.0

        h.defjvp(lambda p, t: (h(p[0]), t[0] * s.np.cos(p[0]) + 5.0))
        return s.m.grad(h)(x), s.m.jvp(h, (x,), (1.0,))[1]
    same_as_jax(with_rule)


def test_ordered_and_default_dicts_are_pytrees_as_in_jax(seed):
    import collections
    rng = np.random.default_rng(seed)
    keys = list("dbca")
    rng.shuffle(keys)
    vals = rng.standard_normal(4).astype(np.float32)
    od = collections.OrderedDict((k, (v, None)) for k, v in zip(keys, vals))
    dd = collections.defaultdict(list, zip(keys, vals))
    for tree in (od, dd):
        same_as_jax(lambda s: s.tree_util.tree_leaves(tree))
        same_as_jax(lambda s: [s.tree_util.keystr(k)
                               for k, _ in s.tree_util.tree_flatten_with_path(tree)[0]])
        same_as_jax(lambda s: str(s.tree_util.tree_structure(tree)))
        got = fnx.jit(lambda t: fnx.tree_util.tree_map(lambda v: v * 2, t))(tree)
        want = jax.jit(lambda t: jax.tree_util.tree_map(lambda v: v * 2, t))(tree)
        assert type(got) is type(want) and list(got) == list(want)
        same_as_jax(lambda s: s.m.grad(lambda t: sum(s.tree_util.tree_leaves(
            s.tree_util.tree_map(lambda v: v * v, t))))(tree))
    assert fnx.tree_util.tree_map(lambda v: v, dd).default_factory is list


def test_fmax_and_fmin_give_a_tie_and_its_slope_to_the_second_argument(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, 12).astype(np.float32)
    y = rng.integers(-2, 3, 12).astype(np.float32)
    x[:3], y[:3] = [0.0, -0.0, np.nan], [-0.0, 0.0, np.nan]
    y[3], x[4] = np.nan, np.nan
    for name in ("fmax", "fmin"):
        same_as_jax(lambda s: 1 / getattr(s.np, name)(s.np.asarray(x), s.np.asarray(y)))
        same_as_jax(lambda s: s.m.vmap(s.m.grad(getattr(s.np, name), argnums=(0, 1)))(
            s.np.asarray(x), s.np.asarray(y)))


@pytest.mark.parametrize("name", ["max", "min", "nanmax"])
def test_min_max_with_where_and_initial_split_a_tie_as_jax(name, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, (4, 3)).astype(np.float32)
    mask = rng.random((4, 3)) > 0.3
    initial = float(rng.integers(-2, 3))
    for axis in (None, 0, 1):
        def program(s):
            f = lambda v: getattr(s.np, name)(v, axis=axis, where=mask, initial=initial)
            return f(s.np.asarray(x)), s.m.grad(lambda v: f(v).sum())(s.np.asarray(x))
        same_as_jax(program)
    ints = rng.integers(-9, 9, (4, 3)).astype(np.int16)
    same_as_jax(lambda s: getattr(s.np, name)(s.np.asarray(ints), axis=1, where=mask,
                                              initial=3))


def test_full_of_a_weak_fill_is_weak_so_it_joins_narrow_floats_as_jax(seed):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(3).astype(np.float16)
    v = float(rng.standard_normal())
    for fill in (v, int(10 * v), True, 1j * v):
        same_as_jax(lambda s: s.np.full(3, fill))
        same_as_jax(lambda s: s.np.full((3,), fill, dtype="complex64"))
    same_as_jax(lambda s: s.np.full(3, v) + s.np.asarray(h))
    same_as_jax(lambda s: s.m.jit(lambda a: s.np.full(3, a))(v))
    same_as_jax(lambda s: s.np.full(3, np.float32(v)))


@pytest.mark.parametrize("x64", [False, True])
def test_lists_of_numpy_values_keep_their_dtypes_and_big_ints_raise_as_jax(x64, seed):
    rng = np.random.default_rng(seed)
    v = float(rng.standard_normal())
    i = int(rng.integers(2**31, 2**40))
    lists = [[np.float16(v), 2.5], [np.int8(3), 7], [np.uint32(i % 2**32)], [np.int8(1), v],
             [[np.int64(5)], [i]], [np.bool_(True), 2], [1, i], [1, -i], [np.int8(1), 2**20]]
    with fnx.enable_x64(x64):
        jax.config.update("jax_enable_x64", x64)
        for x in lists:
            same_as_jax(lambda s: s.np.asarray(x))
        same_as_jax(lambda s: s.np.asarray([300 + i % 100], dtype="int8"))
        same_as_jax(lambda s: s.np.array([-1], dtype="uint8"))


@pytest.mark.parametrize("x64", [False, True])
def test_one_hot_takes_the_default_float_as_jax(x64, seed):
    labels = np.random.default_rng(seed).integers(-1, 5, (3, 2))
    with fnx.enable_x64(x64):
        jax.config.update("jax_enable_x64", x64)
        same_as_jax(lambda s: s.nn.one_hot(s.np.asarray(labels), 4))
        same_as_jax(lambda s: s.nn.one_hot(s.np.asarray(labels), 4, axis=0, dtype="int8"))


@pytest.mark.parametrize("x64", [False, True])
def test_gamma_poles_and_integer_arguments_as_jax(x64, seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-4, 4, 6), [-1.0, -2.0, -np.inf, 0.0, -0.0, np.nan,
                                               np.inf, 3.0]]).astype(np.float32)
    ints = rng.integers(1, 6, 4)
    with fnx.enable_x64(x64):
        jax.config.update("jax_enable_x64", x64)
        for name in ("gamma", "gammasgn"):
            same_as_jax(lambda s: getattr(s.scipy.special, name)(s.np.asarray(x)), rtol=1e-5)
        same_as_jax(lambda s: s.scipy.special.gamma(s.np.asarray(ints)), rtol=1e-5)
        same_as_jax(lambda s: s.scipy.special.gammaln(s.np.asarray(ints)), rtol=1e-5)
        for name in ("erf", "erfinv"):
            same_as_jax(lambda s: getattr(s.scipy.special, name)(s.np.asarray(ints % 2)))
            same_as_jax(lambda s: getattr(s.scipy.special, name)(float(x[0]) / 5))


def test_einsum_takes_preferred_element_type(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (3, 200)).astype(np.int8)
    b = rng.integers(-128, 128, (200,)).astype(np.int8)
    same_as_jax(lambda s: s.np.einsum("ij,j->i", s.np.asarray(a), s.np.asarray(b),
                                      preferred_element_type="int32"))
    h = rng.standard_normal((4, 5)).astype(np.float32)
    same_as_jax(lambda s: s.np.einsum("ij,kj->ik", s.np.asarray(h, "bfloat16"),
                                      s.np.asarray(h, "bfloat16"),
                                      preferred_element_type=s.np.float32), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int32", "float16", "float32"])
def test_python_ints_beyond_the_default_int_raise_overflow_as_jax(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, 3).astype(dtype)
    big = int(rng.integers(2**31, 2**40))
    for v in (big, -big, 2**31 - 1, 300, -1):
        same_as_jax(lambda s: s.np.asarray(x) + v)
        same_as_jax(lambda s: v * s.np.asarray(x))
        same_as_jax(lambda s: s.np.maximum(s.np.asarray(x), v))
    same_as_jax(lambda s: s.np.true_divide(s.np.asarray(x), big))


def test_builtin_round_none_and_array_protocols_as_jax(seed):
    rng = np.random.default_rng(seed)
    v = float(rng.uniform(-9, 9))
    for dt in ("float16", "float32", "int8"):
        same_as_jax(lambda s: round(s.np.asarray(v).astype(dt)))
        same_as_jax(lambda s: round(s.np.asarray(v).astype(dt), 1))
    same_as_jax(lambda s: s.m.jit(lambda a: round(a))(s.np.asarray(v)))
    x = rng.standard_normal(3).astype(np.float32)
    same_as_jax(lambda s: (s.np.asarray(x) == None, s.np.asarray(x) != None))  # noqa: E711
    same_as_jax(lambda s: s.np.asarray(x) + None)

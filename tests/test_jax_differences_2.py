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


# ---------------------------------------------------------------------------------------------
# transformations


def test_grads_at_python_numbers_keep_jax_s_weak_type():
    fns = [lambda s: s.np.sqrt, lambda s: lambda a: s.np.maximum(a, 1.0), lambda s: s.np.log1p,
           lambda s: lambda a: s.lax.integer_pow(a, -2), lambda s: lambda a: a ** 0.5,
           lambda s: lambda a: 2.0 ** a, lambda s: lambda a, b: s.np.minimum(a, b)]
    for f in fns:
        for point in (1.5, np.float32(1.5)):
            same_as_jax(lambda s: s.m.grad(f(s))(point, point) if f is fns[-1]
                        else s.m.grad(f(s))(point))


def test_float0_tangents_and_cotangents_of_integers(rng):
    x = rng.standard_normal(3).astype(np.float32)
    f = (lambda s: lambda a, b: (a * 2, b * a))
    float0 = np.zeros(3, jax.dtypes.float0)
    got = fnx.jvp(f(FNX), (jnp.arange(3), jnp.asarray(x)), (float0, jnp.ones(3)))
    want = jax.jvp(f(JAX), (jjnp.arange(3), jjnp.asarray(x)), (float0, jjnp.ones(3)))
    np.testing.assert_allclose(np.asarray(got[1][1]), np.asarray(want[1][1]), rtol=1e-6)
    g = fnx.vjp(f(FNX), jnp.arange(3), jnp.asarray(x))[1]((float0, jnp.ones(3)))
    w = jax.vjp(f(JAX), jjnp.arange(3), jjnp.asarray(x))[1]((float0, jjnp.ones(3)))
    assert g[0].dtype == w[0].dtype == jax.dtypes.float0
    np.testing.assert_allclose(np.asarray(g[1]), np.asarray(w[1]), rtol=1e-6)
    # an integer primal takes only a float0 tangent; a cotangent has its output's dtype
    same_as_jax(lambda s: s.m.jvp(f(s), (s.np.arange(3), s.np.asarray(x)),
                                  (s.np.zeros(3, s.np.int32), s.np.ones(3))))
    same_as_jax(lambda s: s.m.vjp(s.np.sin, s.np.asarray(x))[1](s.np.ones(3, s.np.float16)))


def test_control_flow_errors_and_carries_as_jax():
    same_as_jax(lambda s: s.lax.scan(lambda c, x: (c, x), 0.0, s.np.ones(3), length=4))
    same_as_jax(lambda s: s.lax.scan(lambda c, x: (c, x), 0.0, None))
    same_as_jax(lambda s: s.lax.while_loop(lambda v: v < 10, lambda v: v * 2.0, 1))
    same_as_jax(lambda s: s.lax.fori_loop(0, 3, lambda i, c: c * 2.0, 1))
    for pred in (0.5, 0.0, -0.0, float("nan")):
        same_as_jax(lambda s: s.lax.cond(pred, lambda a: a + 1, lambda a: a * 2, 3.0))
        same_as_jax(lambda s: s.m.jit(lambda p: s.lax.cond(p, lambda: 1.0, lambda: 2.0))(pred))


def test_custom_vjp_with_a_misshapen_cotangent_raises_jax_s_value_error():
    def program(s):
        @s.m.custom_vjp
        def f(x):
            return x * 2
        f.defvjp(lambda x: (f(x), None), lambda r, g: (s.np.ones(3),))
        return s.m.grad(f)(2.0)
    same_as_jax(program)
    same_as_jax(lambda s: s.m.vmap(lambda a: a.sum(), spmd_axis_name="x")(s.np.ones((2, 3))))


# ---------------------------------------------------------------------------------------------
# fnx.nn


_EDGES = np.array([0., -0., np.inf, -np.inf, np.nan, 1e-30, -100., 100., 20., -20., 1.0, -1.0,
                   6.0], np.float32)


@pytest.mark.parametrize("name", ["hard_tanh", "softplus", "log_sigmoid", "mish"])
def test_activations_and_their_slopes_at_edge_values_as_jax(name):
    x = _EDGES
    same_as_jax(lambda s: getattr(s.nn, name)(s.np.asarray(x)), rtol=2e-5)
    same_as_jax(lambda s: s.m.vmap(s.m.grad(getattr(s.nn, name)))(s.np.asarray(x)), rtol=2e-5)


def test_activation_dtypes_as_jax():
    ints = np.arange(-3, 4).astype(np.int32)
    same_as_jax(lambda s: s.nn.hard_tanh(s.np.asarray(ints)))
    for name in ("sigmoid", "silu"):
        same_as_jax(lambda s: getattr(s.nn, name)(s.np.asarray(ints)))


def test_logsumexp_where_and_negative_weights_and_standardize_where(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    where = rng.random((3, 5)) > 0.3
    b = rng.standard_normal((3, 5)).astype(np.float32)
    for axis in (None, 0, 1):
        same_as_jax(lambda s: s.nn.logsumexp(s.np.asarray(x), axis=axis, where=where))
        same_as_jax(lambda s: s.nn.logsumexp(s.np.asarray(x), axis=axis, b=b))
        same_as_jax(lambda s: s.nn.logsumexp(s.np.asarray(x), axis=axis, b=b, return_sign=True))
    same_as_jax(lambda s: s.m.grad(lambda t: s.nn.logsumexp(t, where=where))(s.np.asarray(x)))
    for algorithm in ("fast", "stable"):
        same_as_jax(lambda s: s.nn.standardize(s.np.asarray(x), where=where,
                                               algorithm=algorithm), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# fnx.lax


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32])
def test_integer_division_by_zero_and_shifts_as_xla(dtype):
    a = np.array([7, 1, 0, 5, 3, 100, 9, 2], dtype)
    if np.dtype(dtype).kind == "i":
        a = a * np.array([1, -1] * 4, dtype)
    zero = np.zeros(8, dtype)
    same_as_jax(lambda s: s.lax.div(s.np.asarray(a), s.np.asarray(zero)))
    same_as_jax(lambda s: s.lax.rem(s.np.asarray(a), s.np.asarray(zero)))
    same_as_jax(lambda s: s.np.asarray(a) // s.np.asarray(zero))
    same_as_jax(lambda s: s.np.asarray(a) % s.np.asarray(zero))
    a = np.array([0, 1, 7, 200, 255, 3, 128, 2], np.uint8).astype(dtype)
    for count in (1, 7, 8, 100):
        same_as_jax(lambda s: s.lax.shift_right_arithmetic(s.np.asarray(a),
                                                           s.np.full(8, count, dtype)))
    same_as_jax(lambda s: s.lax.integer_pow(s.np.asarray(a), -2))
    same_as_jax(lambda s: s.lax.abs(s.np.asarray(a)))


def test_clamp_slopes_and_dtypes_as_jax():
    x = np.array([-1., 1., 0.5, 2., -3., np.nan], np.float32)
    lo, hi = np.zeros(6, np.float32) - 1, np.ones(6, np.float32)
    for argnum in (0, 1, 2):
        same_as_jax(lambda s: s.m.grad(lambda *a: s.lax.clamp(*a).sum(), argnums=argnum)(
            s.np.asarray(lo), s.np.asarray(x), s.np.asarray(hi)))
        same_as_jax(lambda s: s.m.grad(lambda *a: s.lax.clamp(*a).sum(), argnums=argnum)(
            s.np.asarray(hi), s.np.asarray(x), s.np.asarray(lo)))
    same_as_jax(lambda s: s.lax.clamp(0, s.np.asarray(x), 1))
    same_as_jax(lambda s: s.lax.clamp(0, s.np.arange(5, dtype=s.np.int8), 3))


def test_lax_odds_and_ends_as_jax():
    same_as_jax(lambda s: s.lax.top_k(s.np.array([1., 3., 3., 2.]), 2))
    same_as_jax(lambda s: s.lax.expand_dims(s.np.ones((2, 3)), (0, -1)))
    same_as_jax(lambda s: s.lax.reduce_max(s.np.zeros((0,), s.np.float32), (0,)))
    same_as_jax(lambda s: s.lax.reduce_min(s.np.zeros((2, 0), s.np.int32), (1,)))
    same_as_jax(lambda s: s.lax.reduce_and(s.np.array([3, 5, 7]), (0,)))
    same_as_jax(lambda s: s.lax.reduce_or(s.np.array([[3, 5], [8, 1]]), (1,)))
    edges = np.array([0., -1., -0.5, np.inf, -np.inf, 1e30], np.float32)
    same_as_jax(lambda s: s.lax.lgamma(s.np.asarray(edges)), rtol=1e-5)
    a = np.array([0., 1., -1., 1., np.inf, 2., 0.], np.float32)
    x = np.array([1., 0., 1., -1., 1., np.inf, 0.], np.float32)
    same_as_jax(lambda s: s.lax.igamma(s.np.asarray(a), s.np.asarray(x)))
    same_as_jax(lambda s: s.lax.igammac(s.np.asarray(a), s.np.asarray(x)))



@pytest.mark.parametrize("call", [
    lambda s, f, x: s.m.jvp(f, (x,), (x,))[1],
    lambda s, f, x: s.m.jit(lambda x: s.m.jvp(f, (x,), (x,))[1])(x),
    lambda s, f, x: s.m.vmap(lambda x: s.m.jvp(f, (x,), (x,))[1])(x),
    lambda s, f, x: s.m.linearize(f, x)[1](x),
    lambda s, f, x: s.m.jacfwd(lambda x: f(x)[0])(x),
    lambda s, f, x: s.m.jit(s.m.grad(lambda a, b: a * b, (0, 1), allow_int=True))(3, x[0]),
    lambda s, f, x: s.lax.scan(lambda c, x: (c, s.m.jvp(f, (x,), (x,))[1]), 0.0, x)[1],
    lambda s, f, x: s.m.vmap(lambda x: s.m.jvp(_with_float0_rule(s, f), (x,), (x,)),
                             out_axes=1)(x[None]),
], ids=["jvp", "jit", "vmap", "linearize", "jacfwd", "int_grad_in_jit", "scan", "custom_jvp"])
def test_integer_outputs_have_float0_tangents(rng, call):
    """An integer or boolean output's tangent is float0, also inside jit and under vmap (with
    the batch axis); jacfwd makes it zeros of the output's dtype."""
    x = rng.standard_normal(3).astype(np.float32)
    same_as_jax(lambda s: call(s, lambda x: ((x * 2).astype(s.np.int32), x > 0, x * 3),
                               s.np.asarray(x)))


def _with_float0_rule(s, f):
    """``f`` as a custom_jvp whose rule gives its integer outputs float0 tangents, as JAX's
    rules must."""
    g = s.m.custom_jvp(f)

    @g.defjvp
    def rule(primals, tangents):
        out = f(*primals)
        return out, (np.zeros(np.shape(out[0]), s.m.dtypes.float0),
                     np.zeros(np.shape(out[1]), s.m.dtypes.float0), tangents[0] * 3)
    return g

"""Differences from JAX found by sampling, and the samplers that keep looking: binary
operations and jnp functions over random pairs of dtypes (Python scalars too), with x64 on and
off (values, dtypes and weak types); small random programs run eagerly, under jit and under
vmap; every activation at special values, with its derivative. JAX on the CPU is the oracle."""
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fnx
import fnx.numpy as fjnp
from fnx.core import dtypes
from fnx.core.core import get_aval

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402

SAMPLED = settings(max_examples=60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _weak(x):
    if hasattr(x, "aval"):
        return bool(x.aval.weak_type)
    if isinstance(x, fnx.Array):
        return bool(get_aval(x).weak_type)
    return bool(getattr(x, "weak_type", False))


def _assert_same(got, want, what, tol=1e-6):
    """Same dtype, weak type (but for booleans), shape and values (NaN where NaN)."""
    got_np, want_np = np.asarray(got), np.asarray(want)
    assert (got_np.dtype, got_np.shape) == (want_np.dtype, want_np.shape), \
        f"{what}: fnx {got_np.dtype}{got_np.shape}, jax {want_np.dtype}{want_np.shape}"
    if want_np.dtype != np.bool_:
        assert _weak(got) == _weak(want), f"{what}: fnx weak={_weak(got)}, jax {_weak(want)}"
    if want_np.dtype.kind in "fcV" or want_np.dtype == dtypes.bfloat16:
        loose = want_np.dtype in (np.float16, dtypes.bfloat16)
        wide = np.complex128 if want_np.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(got_np.astype(wide), want_np.astype(wide), equal_nan=True,
                                   rtol=1e-2 if loose else 2 * tol, atol=1e-2 if loose else tol,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got_np, want_np, err_msg=what)


# ---------------------------------------------------------------------------------------------
# what sampling found


@pytest.mark.parametrize("a,b", [(1e5, -np.inf), (np.inf, np.inf), (-np.inf, np.inf),
                                 (np.array([1.0, np.inf, 3.0]), np.array([np.inf, np.inf, 3.0])),
                                 (np.array([2, 1], np.uint32), np.array([np.inf, 1.0]))])
def test_isclose_is_false_next_to_a_different_infinity(a, b):
    _assert_same(fjnp.isclose(a, b), jjnp.isclose(a, b), "isclose")
    _assert_same(fnx.jit(fjnp.isclose)(a, b), jjnp.isclose(a, b), "jit isclose")


def test_integer_fmod_by_zero_is_zero(rng):
    x = rng.integers(-9, 10, 8).astype(np.int32)
    y = np.array([0, 3, 0, -2, 0, 5, 1, 0], np.int32)
    for a, b in [(x, y), (x.astype(np.uint8) % 7, y.astype(np.uint8) % 3), (x, 0)]:
        _assert_same(fjnp.fmod(a, b), jjnp.fmod(a, b), "fmod")
        _assert_same(fnx.jit(fjnp.fmod)(a, b), jax.jit(jjnp.fmod)(a, b), "jit fmod")


@pytest.mark.x32
@pytest.mark.parametrize("a,b", [
    (np.array([2, 3], np.uint8), np.uint16(2)),          # a known integer exponent: a's dtype
    (np.array([2, 3], np.int8), np.array(3, np.int32)),
    (np.array([2.0, 0.5], np.float16), np.array([2, 3], np.int32)),    # no promotion
    (0.5, np.array([2, 3], np.int8)),
    (np.array([2, 3], np.int8), 0.5),                    # a weak float result
    (0.5 + 1.5j, np.array(2, np.int32)),
    (True, np.array(0, np.uint16)),
    (np.array([1.5, 2.5], np.float32), True),
    (3, 3), (2.5, 2), (np.array([4, 2], np.uint8), np.array([2, 1], np.uint16)),
])
def test_power_dtypes_and_weak_types_as_jax(jax_x64_as_fnx, a, b):
    _assert_same(fjnp.power(a, b), jjnp.power(a, b), f"power({a!r}, {b!r})")


def test_power_of_an_integer_to_a_negative_known_exponent_raises():
    for raises in (lambda m: m.numpy.arange(3) ** -1, lambda m: m.numpy.power(3, -2)):
        with pytest.raises(TypeError):
            raises(jax)
        with pytest.raises(TypeError, match="negative powers"):
            raises(fnx)
    _assert_same(fjnp.power(np.float32(2.0), -1), jjnp.power(np.float32(2.0), -1), "2.0 ** -1")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64",
                                   "int32"])
def test_a_boolean_mask_times_an_infinity_as_jax(dtype):
    """XLA selects where a boolean array multiplies (inf * False is 0), but for bfloat16."""
    with fnx.enable_x64(True), jax.enable_x64(True):
        x = np.array([-np.inf, np.nan, -0.0, 2.0, np.inf, 1.0]) if dtype != "int32" else \
            np.arange(6)
        x = x.astype(fjnp.dtype(dtype))
        m = np.array([False, False, True, True, False, True])
        for f in (lambda x, m: x * m, lambda x, m: m * x, lambda x, m: x * m[::-1]):
            want = jax.jit(f)(x, m)
            _assert_same(f(fjnp.asarray(x), m), want, dtype)
            _assert_same(fnx.jit(f)(x, m), want, dtype)
        _assert_same(fjnp.asarray(m) * 2.5, jjnp.asarray(m) * 2.5, "mask * weak float")


@pytest.mark.x32
@pytest.mark.parametrize("name", ["hypot", "heaviside", "gcd", "lcm"])
def test_python_bools_count_as_weak_beside_python_numbers(jax_x64_as_fnx, name):
    for a, b in [(False, 0.0), (True, 2), (False, 2), (True, False)]:
        try:
            want = getattr(jjnp, name)(a, b)
        except (TypeError, ValueError):
            continue
        _assert_same(getattr(fjnp, name)(a, b), want, f"{name}({a!r}, {b!r})")


@pytest.mark.x32
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float16"])
def test_narrow_float_sorts_put_nan_last(jax_x64_as_fnx, rng, dtype):
    """NumPy's sort of ml_dtypes' floats misplaced a NaN and what followed it."""
    x = np.concatenate([[np.nan, -0.0, 0.0, np.inf, -np.inf], rng.standard_normal(7) * 4])
    x = rng.permutation(x).astype(fjnp.dtype(dtype))
    for name in ("sort", "argsort", "median", "unique"):
        _assert_same(getattr(fjnp, name)(x), getattr(jjnp, name)(x), f"{name}({dtype})")
    _assert_same(fnx.jit(fjnp.sort)(x), jjnp.sort(x), f"jit sort({dtype})")
    keys = rng.integers(0, 3, x.size).astype(np.int32)
    _assert_same(fnx.lax.sort((keys, x), num_keys=2)[1], jax.lax.sort((keys, x), num_keys=2)[1],
                 f"two-key sort({dtype})")


@pytest.mark.x32
def test_bincount_counts_booleans(jax_x64_as_fnx, rng):
    x = rng.random(9) > 0.5
    for kw in ({}, {"length": 4}, {"weights": rng.standard_normal(9).astype(np.float32)}):
        _assert_same(fjnp.bincount(x, **kw), jjnp.bincount(x, **kw), f"bincount {kw}")


# ---------------------------------------------------------------------------------------------
# binary operations over random dtype pairs

DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                np.float64, np.complex64, np.complex128)] + [dtypes.bfloat16]
FLOATS = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 1e5, np.nan, np.inf, -np.inf]


def _values(data, dt, shape):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -5, 8, shape).astype(dt)
    special = data.draw(st.booleans())
    v = rng.choice(FLOATS, shape) if special else rng.standard_normal(shape) * 3
    if dt.kind == "c":      # finite imaginary parts: C99's complex infinities are left out
        v = v + 1j * rng.choice(FLOATS[:8], shape)
    with np.errstate(over="ignore"):        # 1e5 is inf in float16
        return np.asarray(v).astype(dt)


@st.composite
def operands(draw, kinds="biufc"):
    """An array of a random dtype (of ``kinds``) or a Python scalar."""
    scalars = [s for s in (True, False, 3, -2, 0, 2.5, -0.0, 1.5j) if _kind(s) in kinds]
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(scalars))
    dt = draw(st.sampled_from([d for d in DTYPES if d.kind in kinds]))
    return _values(draw(st.data()), dt, draw(st.sampled_from([(), (3,)])))


def _kind(v):
    return np.asarray(v).dtype.kind if not isinstance(v, (bool, int, float, complex)) else \
        {bool: "b", int: "i", float: "f", complex: "c"}[type(v)]


# name -> (operation, the kinds its operands may be)
BINARY = {
    "add": (lambda m, a, b: a + b, "biufc"), "sub": (lambda m, a, b: a - b, "iufc"),
    "mul": (lambda m, a, b: a * b, "biuf"), "truediv": (lambda m, a, b: a / b, "iuf"),
    "floordiv": (lambda m, a, b: a // b, "iuf"), "mod": (lambda m, a, b: a % b, "iuf"),
    "and": (lambda m, a, b: a & b, "biu"), "xor": (lambda m, a, b: a ^ b, "biu"),
    "shift": (lambda m, a, b: a >> b, "iu"), "lt": (lambda m, a, b: a < b, "biuf"),
    "eq": (lambda m, a, b: a == b, "biufc"),
    "maximum": (lambda m, a, b: m.maximum(a, b), "biuf"),
    "where": (lambda m, a, b: m.where(m.asarray(a) != 0, a, b), "biufc"),
    "arctan2": (lambda m, a, b: m.arctan2(a, b), "biuf"),
    "fmod": (lambda m, a, b: m.fmod(a, b), "iuf"), "copysign": (lambda m, a, b: m.copysign(a, b), "biuf"),
    "logaddexp": (lambda m, a, b: m.logaddexp(a, b), "biuf"),
    "isclose": (lambda m, a, b: m.isclose(a, b), "biuf"),
    "clip": (lambda m, a, b: m.clip(a, b, 2), "iuf"),
    "concatenate": (lambda m, a, b: m.concatenate([m.atleast_1d(a), m.atleast_1d(b)]), "biufc"),
    "stack": (lambda m, a, b: m.stack([a, b]), "biufc"),
    "cumsum": (lambda m, a, b: m.cumsum(m.atleast_1d(a) + b), "iufc"),
    "mean": (lambda m, a, b: m.mean(m.asarray(a) + b), "iuf"),
    "full_like": (lambda m, a, b: m.full_like(a, b), "biuf"),
    "astype": (lambda m, a, b: m.asarray(a).astype(m.asarray(b).dtype), "biuf"),
    "nextafter": (lambda m, a, b: m.nextafter(a, b), "f"),
    "ldexp": (lambda m, a, b: m.ldexp(a, b), "iuf"),
}


@SAMPLED
@given(st.sampled_from(sorted(BINARY)), st.booleans(), st.data())
def test_binary_operations_over_random_dtypes_as_jax(name, x64, data):
    op, kinds = BINARY[name]
    a, b = data.draw(operands(kinds)), data.draw(operands(kinds))
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        a = np.asarray(a)           # two Python numbers are Python's business
    if name == "ldexp" and _kind(b) not in "iu":
        b = int(np.nan_to_num(np.real(np.asarray(b))).clip(-5, 5).astype(np.int64).sum())
    if name == "shift" and _kind(a) not in "iu":
        a = 7
    with fnx.enable_x64(x64), jax.enable_x64(x64), warnings.catch_warnings(), \
            np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = op(jjnp, *[jjnp.asarray(v) if isinstance(v, np.ndarray) else v
                              for v in (a, b)])
        except (TypeError, ValueError) as e:
            with pytest.raises(TypeError if isinstance(e, TypeError) else ValueError):
                op(fjnp, *[fjnp.asarray(v) if isinstance(v, np.ndarray) else v
                           for v in (a, b)])
            return
        got = op(fjnp, *[fjnp.asarray(v) if isinstance(v, np.ndarray) else v for v in (a, b)])
        _assert_same(got, want, f"{name}({a!r}, {b!r}) x64={x64}")


# ---------------------------------------------------------------------------------------------
# random programs: eager, jit and vmap agree with each other and with JAX

STEPS = [
    ("sin", lambda m, a, b: (m.numpy.sin(a), b)),
    ("mask", lambda m, a, b: (a * (b > 0), b)),
    ("where", lambda m, a, b: (m.numpy.where(a > b, a, b * 2.0), a)),
    ("int", lambda m, a, b: (a, (b * 3).astype(m.numpy.int32).astype(m.numpy.float32))),
    ("floordiv", lambda m, a, b: (a // (b + 0.5), b)),
    ("take", lambda m, a, b: (m.numpy.take(a, m.numpy.array([0, 2, 7, -1, -9]))[:a.shape[0]]
                              if a.shape[0] <= 5 else a, b)),
    ("scatter", lambda m, a, b: (a.at[m.numpy.array([1, 9, -1])].add(1.0), b)),
    ("cumsum", lambda m, a, b: (m.numpy.cumsum(a), b)),
    ("sort", lambda m, a, b: (m.numpy.sort(a), b)),
    ("relu", lambda m, a, b: (m.nn.relu(a - b), b)),
    ("softmax", lambda m, a, b: (m.nn.softmax(a), b)),
    ("logsumexp", lambda m, a, b: (a - m.nn.logsumexp(a), b)),
    ("clip", lambda m, a, b: (m.numpy.clip(a, -1.0, b), b)),
    ("divide", lambda m, a, b: (a / b, b)),
    ("max", lambda m, a, b: (a + m.numpy.max(b), b)),
    ("isclose", lambda m, a, b: (m.numpy.where(m.numpy.isclose(a, b), 1.0, a), b)),
    ("round", lambda m, a, b: (m.numpy.round(a * 10) / 10, b)),
    ("pow", lambda m, a, b: (m.numpy.abs(a) ** 1.5, b)),
]


def _program(steps):
    def run(m, a, b):
        import importlib
        m.nn = importlib.import_module(m.__name__ + ".nn")
        m.numpy = importlib.import_module(m.__name__ + ".numpy")
        for k in steps:
            a, b = STEPS[k][1](m, a, b)
        return a, b
    return run


# steps whose results jump (floors, casts, rounding, thresholds): only on the exact inputs,
# since JAX's transcendental functions differ from NumPy's in the last bit
JUMPS = [k for k, (name, _) in enumerate(STEPS) if name in ("floordiv", "int", "round",
                                                            "isclose")]
SMOOTH = [k for k in range(len(STEPS)) if k not in JUMPS]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(JUMPS), max_size=2),
       st.lists(st.sampled_from(SMOOTH), min_size=1, max_size=5),
       st.integers(0, 2 ** 32 - 1), st.booleans())
def test_random_programs_eager_jit_and_vmap_agree_with_jax(jumps, smooth, seed, special):
    steps = jumps + smooth
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    if special:
        a.flat[rng.integers(0, 20, 3)] = [np.nan, np.inf, -np.inf]
    run = _program(steps)
    with fnx.enable_x64(False), jax.enable_x64(False), np.errstate(all="ignore"):
        want = jax.vmap(lambda a, b: run(jax, a, b))(a, b)
        per_row = [run(fnx, fjnp.asarray(a[i]), fjnp.asarray(b[i])) for i in range(len(a))]
        for got_a, got_b in [
                (fjnp.stack([r[0] for r in per_row]), fjnp.stack([r[1] for r in per_row])),
                fnx.jit(fnx.vmap(lambda a, b: run(fnx, a, b)))(a, b),
                fnx.vmap(lambda a, b: run(fnx, a, b))(a, b),
                fnx.vmap(fnx.jit(lambda a, b: run(fnx, a, b)))(a, b)]:
            _assert_same(got_a, want[0], f"{[STEPS[k][0] for k in steps]}", tol=1e-5)
            _assert_same(got_b, want[1], f"{[STEPS[k][0] for k in steps]}", tol=1e-5)


# ---------------------------------------------------------------------------------------------
# activations at special values

SPECIAL = np.array([np.nan, -0.0, 0.0, -1.0, 2.0, 6.0, 7.0, np.inf, -np.inf, 1e30, -1e30],
                   np.float32)
ACTIVATIONS = ["relu", "relu6", "leaky_relu", "elu", "celu", "selu", "gelu", "silu", "swish",
               "sigmoid", "log_sigmoid", "softplus", "soft_sign", "hard_tanh", "hard_sigmoid",
               "hard_silu", "hard_swish", "mish", "sparse_plus", "sparse_sigmoid", "squareplus",
               "tanh", "log1mexp", "glu", "softmax", "log_softmax", "standardize"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_and_its_slope_at_special_values_as_jax(name):
    f, jf = getattr(fnx.nn, name), getattr(jax.nn, name)
    with fnx.enable_x64(False), jax.enable_x64(False), np.errstate(all="ignore"):
        x = SPECIAL if name != "glu" else np.concatenate([SPECIAL, SPECIAL[::-1]])
        want = jf(x)
        _assert_same(f(x), want, name)
        _assert_same(fnx.jit(f)(x), want, f"jit {name}")
        if name in ("glu", "softmax", "log_softmax", "standardize"):
            return
        slope = jax.vmap(jax.grad(jf))(x)
        _assert_same(fnx.vmap(fnx.grad(f))(x), slope, f"slope of {name}")
        _assert_same(fnx.jit(fnx.vmap(fnx.grad(f)))(x), slope, f"jit slope of {name}")


# ---------------------------------------------------------------------------------------------
# indexing, gathers and scatters with out-of-range indices, under every transformation

INDEXING = {
    "getitem": lambda m, x, i, u: x[i],
    "get_fill": lambda m, x, i, u: x.at[i].get(mode="fill", fill_value=-7.0),
    "get_clip": lambda m, x, i, u: x.at[i].get(mode="clip"),
    "take": lambda m, x, i, u: m.numpy.take(x, i, axis=0),
    "take_wrap": lambda m, x, i, u: m.numpy.take(x, i, axis=0, mode="wrap"),
    "take_along": lambda m, x, i, u: m.numpy.take_along_axis(x, i[:, None], axis=0),
    "set": lambda m, x, i, u: x.at[i].set(u),
    "add": lambda m, x, i, u: x.at[i].add(u),
    "max_clip": lambda m, x, i, u: x.at[i].max(u, mode="clip"),
    "mul_drop": lambda m, x, i, u: x.at[i].multiply(u, mode="drop"),
    "segment_sum": lambda m, x, i, u: m.numpy.zeros(4).at[i].add(u[:, 0]),
}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(INDEXING)), st.integers(0, 2 ** 32 - 1))
def test_out_of_range_indices_as_jax_eagerly_under_jit_and_vmap(name, seed):
    import importlib
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    i = rng.integers(-8, 9, (2, 4)).astype(np.int32)
    u = rng.standard_normal((2, 4, 3)).astype(np.float32)

    def run(m):
        m.numpy = importlib.import_module(m.__name__ + ".numpy")
        return lambda x, i, u: INDEXING[name](m, x, i, u)
    with fnx.enable_x64(False), jax.enable_x64(False):
        want = jax.vmap(run(jax))(x, i, u)
        f = run(fnx)
        for got in (fnx.vmap(f)(x, i, u), fnx.jit(fnx.vmap(f))(x, i, u),
                    fjnp.stack([fnx.jit(f)(x[k], i[k], u[k]) for k in range(2)]),
                    fjnp.stack([f(fjnp.asarray(x[k]), fjnp.asarray(i[k]), fjnp.asarray(u[k]))
                                for k in range(2)])):
            _assert_same(got, want, name)

"""JAX's dtype rules, checked exhaustively against JAX on the CPU: the promotion lattice with weak
types (every pair of dtypes, with and without Python scalars), the canonicalization of 64-bit
types when x64 is off (JAX's default), and the weak typing of jnp's elementwise functions.

Each test runs with x64 off and on, switched in fnx and in JAX together."""
import warnings

import numpy as np
import pytest

import fnx
import fnx.numpy as fjnp
from fnx.core import dtypes

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402

DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                np.float64, np.complex64, np.complex128)] + [dtypes.bfloat16]
REAL = [d for d in DTYPES if d.kind != "c"]
WEAK_TYPES = [int, float, complex]
SCALARS = [True, 3, 2.5, 1 + 2j]


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """x64 off or on, in fnx and JAX alike (the suite's default is restored afterwards)."""
    old_f, old_j = fnx.config.enable_x64, jax.config.jax_enable_x64
    fnx.config.update("jax_enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the truncation warnings: tested on their own
            yield request.param
    finally:
        fnx.config.update("jax_enable_x64", old_f)
        jax.config.update("jax_enable_x64", old_j)


def _jax_weak(x):
    return bool(x.aval.weak_type) if hasattr(x, "aval") else bool(x.weak_type)


def _jax(f, *args):
    """JAX's result type of ``f(*args)``: traced only (jax.eval_shape keeps weak types), so the
    sweeps compile nothing."""
    return jax.eval_shape(f, *args)


def _fnx_weak(x):
    return bool(fnx.core.core.get_aval(x).weak_type)


def _arrays(dt):
    """The same small array for fnx and (abstractly) for JAX."""
    v = np.array([1, 0], dt)
    return fjnp.asarray(v), jax.ShapeDtypeStruct(v.shape, dtypes.canonical(v.dtype))


def _same(f_out, j_out, what):
    assert (np.dtype(f_out.dtype), _fnx_weak(f_out)) == (np.dtype(j_out.dtype), _jax_weak(j_out)), \
        f"{what}: fnx {f_out.dtype} weak={_fnx_weak(f_out)}, jax {j_out.dtype} " \
        f"weak={_jax_weak(j_out)}"


def test_promote_types_every_pair(x64):
    specs = DTYPES + WEAK_TYPES
    for a in specs:
        for b in specs:
            assert fjnp.promote_types(a, b) == jjnp.promote_types(a, b), (a, b)


def test_result_type_every_pair(x64):
    specs = DTYPES + WEAK_TYPES + [None]
    for a in specs:
        for b in specs:
            assert fjnp.result_type(a, b) == jjnp.result_type(a, b), (a, b)
    for a in DTYPES:
        for s in SCALARS:
            assert fjnp.result_type(np.ones(2, a), s) == jjnp.result_type(np.ones(2, a), s), \
                (a, s)
    for s in SCALARS:
        for t in SCALARS:
            assert fjnp.result_type(s, t) == jjnp.result_type(s, t), (s, t)


def test_binary_ops_on_every_pair_of_arrays(x64):
    for a in DTYPES:
        fa, ja = _arrays(a)
        _same(fa, _jax(jjnp.asarray, np.array([1, 0], a)), f"asarray({a})")
        for b in DTYPES:
            fb, jb = _arrays(b)
            _same(fa + fb, _jax(lambda x, y: x + y, ja, jb), f"{a} + {b}")
            if a.kind != "c" and b.kind != "c":
                _same(fjnp.maximum(fa, fb), _jax(jjnp.maximum, ja, jb), f"maximum({a}, {b})")


def test_binary_ops_with_weak_scalars(x64):
    for a in DTYPES:
        fa, ja = _arrays(a)
        for s in SCALARS:
            _same(fa * s, _jax(lambda x: x * s, ja), f"{a} * {s!r}")
            _same(s * fa, _jax(lambda x: s * x, ja), f"{s!r} * {a}")
            if a.kind != "c":
                _same(fjnp.where(fa > 0, fa, s), _jax(lambda x: jjnp.where(x > 0, x, s), ja),
                      f"where({a}, {s!r})")
    for s in SCALARS:
        _same(fjnp.asarray(s), jjnp.asarray(s), f"asarray({s!r})")
        for t in SCALARS:
            _same(fjnp.add(s, t), jjnp.add(s, t), f"{s!r} + {t!r}")


def test_numpy_values_entering_fnx_are_canonical(x64):
    for a in DTYPES:
        v = np.ones(3, a)
        _same(fjnp.asarray(v), jjnp.asarray(v), f"asarray({a})")
        _same(fjnp.array(v), jjnp.array(v), f"array({a})")
        _same(fnx.device_put(v), jax.device_put(v), f"device_put({a})")
        _same(fnx.jit(lambda x: x)(v), jax.jit(lambda x: x)(v), f"jit({a})")
        _same(fnx.vmap(lambda x: x * x)(v), jax.vmap(lambda x: x * x)(v), f"vmap({a})")
        _same(fjnp.asarray(v[0]), jjnp.asarray(v[0]), f"numpy scalar {a}")
        _same(fnx.jit(lambda x: x * v)(fjnp.ones(3, np.float32)),
              jax.jit(lambda x: x * v)(jjnp.ones(3, np.float32)), f"closed-over {a}")
        if a.kind != "c":
            _same(fjnp.zeros(2, a), jjnp.zeros(2, a), f"zeros({a})")
            _same(fjnp.full(2, 1, a), jjnp.full(2, 1, a), f"full({a})")
            _same(fjnp.ones(2).astype(a), jjnp.ones(2).astype(a), f"astype({a})")
        if a.kind not in "cb":
            _same(fjnp.arange(3, dtype=a), jjnp.arange(3, dtype=a), f"arange({a})")
    for f in (lambda x: x * 2.0, lambda x: x + 1, lambda x: x.sum()):
        for v in (np.ones(3), np.arange(3), np.float64(1.5)):
            _same(fnx.jit(f)(v), jax.jit(f)(v), f"jit on {np.asarray(v).dtype}")
    _same(fnx.grad(lambda x: (x ** 2).sum())(np.ones(3)),
          jax.grad(lambda x: (x ** 2).sum())(np.ones(3)), "grad on float64")


def test_float64_without_x64_is_float32():
    """The user's default: x64 off. NumPy float64/int64 become float32/int32."""
    with fnx.enable_x64(False):
        f32 = fjnp.ones(3, fjnp.float32)
        assert (f32 + np.ones(3)).dtype == np.float32
        assert fjnp.asarray(np.ones(3)).dtype == np.float32
        assert fjnp.asarray(np.arange(3)).dtype == np.int32
        assert fjnp.asarray(np.arange(3, dtype=np.uint64)).dtype == np.uint32
        assert fjnp.asarray(np.ones(3, np.complex128)).dtype == np.complex64
        assert (fjnp.ones(3, fjnp.int32) + fjnp.ones(3, fjnp.uint32)).dtype == np.int32
        assert fnx.jit(lambda x: x)(np.ones(2)).dtype == np.float32
    with fnx.enable_x64(True):
        assert fjnp.asarray(np.ones(3)).dtype == np.float64
        assert (fjnp.ones(3, fjnp.int32) + fjnp.ones(3, fjnp.uint32)).dtype == np.int64
        assert fjnp.asarray(1.0).dtype == np.float64


def test_requested_64_bit_dtype_warns_once_and_truncates():
    with fnx.enable_x64(False):
        with pytest.warns(UserWarning, match="float64 requested in zeros"):
            z = fjnp.zeros(3, fjnp.float64)
        assert z.dtype == np.float32
        with pytest.warns(UserWarning, match="int64 requested in astype"):
            assert fjnp.ones(2).astype(np.int64).dtype == np.int32
        with pytest.warns(UserWarning, match="float64 requested in asarray"):
            assert fjnp.asarray([1.0], dtype="float64").dtype == np.float32
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fjnp.asarray(np.ones(3))        # a value's dtype is canonicalized silently
            fjnp.ones(2) + np.float64(1.0)
    with fnx.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fjnp.zeros(3, fjnp.float64).dtype == np.float64


def test_check_grads_runs_in_float64_with_x64_off():
    with fnx.enable_x64(False):
        fnx.test_util.check_grads(fjnp.sin, (np.float64(0.3),), order=2)
        assert not fnx.config.enable_x64


def test_jit_retraces_when_x64_changes():
    f = fnx.jit(lambda x: x * 1.5)
    with fnx.enable_x64(False):
        assert f(np.ones(2)).dtype == np.float32
    with fnx.enable_x64(True):
        assert f(np.ones(2)).dtype == np.float64
        x = fjnp.ones(2, np.float32)
        assert f(x).dtype == np.float32
        assert f(2.0).dtype == np.float64
    with fnx.enable_x64(False):
        assert f(2.0).dtype == np.float32


# jnp's elementwise functions composed of several primitives: the dtype and weak type JAX gives
# them, for Python scalars (weak) and arrays of every kind
UNARY = ["cbrt", "exp2", "log2", "log10", "reciprocal", "square", "deg2rad", "rad2deg",
         "degrees", "radians", "sinc", "round", "around", "rint", "trunc", "fix", "modf", "sin",
         "exp", "sqrt", "floor", "ceil", "sign", "abs", "negative", "sum", "prod", "max",
         "cumsum", "cumprod", "mean", "fabs", "signbit", "isnan", "nan_to_num"]
BINARY = ["add", "multiply", "true_divide", "floor_divide", "remainder", "mod", "fmod",
          "divmod", "logaddexp", "logaddexp2", "hypot", "arctan2", "copysign", "float_power",
          "gcd", "lcm", "maximum", "minimum", "fmax", "fmin", "nextafter"]
OPERANDS = {"0.5": 0.5, "3": 3, "f16": np.array([0.5, 1.5], np.float16),
            "bf16": np.array([0.5, 1.5], dtypes.bfloat16), "f32": np.array([0.5, 1.5], np.float32),
            "i8": np.array([2, 3], np.int8), "i32": np.array([2, 3], np.int32),
            "u8": np.array([2, 3], np.uint8), "bool": np.array([True, False])}


def _call(mod, name, args, is_jax):
    try:
        if is_jax:      # Python scalars stay weak, NumPy arrays are canonicalized
            out = _jax(lambda *a: getattr(mod, name)(*a), *args)
        else:
            out = getattr(mod, name)(*[fjnp.asarray(a) if isinstance(a, np.ndarray) else a
                                       for a in args])
    except Exception:
        return None
    outs = out if isinstance(out, tuple) else (out,)
    if is_jax:
        return tuple((np.dtype(o.dtype), _jax_weak(o)) for o in outs)
    return tuple((np.dtype(o.dtype), _fnx_weak(o)) for o in outs)


def _compare(name, args):
    want = _call(jjnp, name, args, True)
    if want is None:        # JAX rejects these operands: nothing to compare
        return
    got = _call(fjnp, name, args, False)
    # a boolean result's weak type changes no promotion: only the dtype is compared
    got_, want_ = ([(d, w and d != np.bool_) for d, w in r] if r else r for r in (got, want))
    assert got_ == want_, f"{name}{tuple(args)!r}: fnx {got}, jax {want}"


@pytest.mark.parametrize("name", UNARY)
def test_elementwise_unary_dtypes_and_weak_types(x64, name):
    for arg in OPERANDS.values():
        _compare(name, (arg,))


@pytest.mark.parametrize("name", BINARY)
def test_elementwise_binary_dtypes_and_weak_types(x64, name):
    for a in OPERANDS.values():
        for b in OPERANDS.values():
            if a is OPERANDS["bool"] and b is OPERANDS["bool"] and name in (
                    "floor_divide", "remainder", "mod", "fmod", "divmod", "gcd", "lcm"):
                continue        # fnx rejects integer division of booleans
            _compare(name, (a, b))


def test_cbrt_of_a_python_float_stays_weak():
    with fnx.enable_x64(False):
        f16 = fjnp.ones(2, fjnp.float16)
        assert (fjnp.cbrt(0.5) * f16).dtype == np.float16
        assert (fjnp.logaddexp(0.5, 2) * f16).dtype == np.float16
        assert fjnp.sum(0.5).weak_type is False


@pytest.mark.x32
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_the_dtypes_module_has_jax_dtypes_names_and_answers(jax_x64_as_fnx):
    import importlib
    import jax.dtypes as jd
    fd = importlib.import_module("fnx.dtypes")
    assert fd is fnx.dtypes
    assert [n for n in dir(jd) if not n.startswith("_") and not hasattr(fd, n)] == []
    cases = [(np.int8, 2.0), (1.0,), (np.int32, np.float16), (2, 3), (np.uint8, np.int8),
             (np.float64,), (np.bool_, 1)]
    for args in cases:
        assert fd.result_type(*args, return_weak_type_flag=True) == \
            jd.result_type(*args, return_weak_type_flag=True), args
    for d in (np.float64, np.int64, np.uint64, np.complex128, np.float16, np.bool_):
        assert fd.canonicalize_dtype(d) == jd.canonicalize_dtype(d)
    for x in (True, 3, 2.5, 1j, np.float32(1), np.uint8(2)):
        assert fd.scalar_type_of(x) is jd.scalar_type_of(x)
    assert fd.float0 == jd.float0 and fd.itemsize_bits(np.int16) == jd.itemsize_bits(np.int16)
    assert fd.issubdtype(fd.bfloat16, np.floating)

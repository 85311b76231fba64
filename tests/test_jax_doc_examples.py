"""Programs in the style of JAX's documentation and docstring examples whose outcome once
differed from JAX's: each runs with fnx's names and with JAX's on the CPU, with fresh random
inputs, and must give the same values, dtypes, shapes and weak types (or raise alike)."""
import jax
import numpy as np
import pytest

import fnx
from test_jax_differences_2 import FNX, JAX, same_as_jax

pytestmark = pytest.mark.x32


@pytest.fixture(autouse=True)
def _jax_as_fnx(jax_x64_as_fnx):
    """JAX runs with x64 set as fnx's (off: these are the user's defaults)."""


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_the_function_vjp_returns_is_a_pytree_that_leaves_and_enters_jit(rng):
    w1, w2 = rng.standard_normal((2, 3, 3)).astype(np.float32)
    x0 = rng.standard_normal((2, 3)).astype(np.float32)

    def program(s):
        layer = lambda w, x: s.np.tanh(x @ w)
        fwd = s.m.jit(lambda *args: s.m.vjp(layer, *args))
        bwd = s.m.jit(lambda f_vjp, y_bar: f_vjp(y_bar))
        x1, res1 = fwd(w1, x0)
        x2, res2 = fwd(w2, x1)
        dw2, dx1 = bwd(res2, s.np.ones_like(x2))
        dw1, dx0 = bwd(res1, dx1)
        return dw1, dw2, dx0
    same_as_jax(program)
    _, pullback = fnx.vjp(lambda x, n: x * n, 2.0, 3)
    assert pullback(1.0)[1].dtype == jax.dtypes.float0      # an integer input's cotangent


@pytest.mark.parametrize("src,dst", [("float32", "uint8"), ("int16", "int8"), ("uint8", "int32"),
                                     ("float32", "int16"), ("int8", "float32")])
def test_bit_casts_that_change_width_and_array_view(rng, src, dst):
    x = rng.integers(0, 255, (3, 8), dtype=np.uint8).view(src)
    wide = np.dtype(dst).itemsize > np.dtype(src).itemsize
    ratio = max(np.dtype(dst).itemsize // np.dtype(src).itemsize, 1)
    xs = x.reshape(3, -1, ratio) if wide else x
    same_as_jax(lambda s: s.lax.bitcast_convert_type(s.np.asarray(xs), dst))
    same_as_jax(lambda s: s.m.jit(lambda a: s.lax.bitcast_convert_type(a, dst))(xs))
    same_as_jax(lambda s: s.np.asarray(x).view(dst))
    same_as_jax(lambda s: s.np.asarray(x).byteswap())


def test_array_view_of_bool_complex_and_scalars(rng):
    c = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    same_as_jax(lambda s: s.np.asarray(c).view(np.float32))
    same_as_jax(lambda s: s.np.asarray(c.view(np.float32)).view(np.complex64))
    same_as_jax(lambda s: s.np.array([1, 0, 1], dtype=s.np.int8).view(s.np.bool_))
    same_as_jax(lambda s: s.np.float32(1.5).view(s.np.int32))
    same_as_jax(lambda s: s.np.asarray(c).byteswap())


def test_array_methods_compress_choose_searchsorted_argpartition(rng):
    x = np.sort(rng.standard_normal(7).astype(np.float32))
    same_as_jax(lambda s: s.np.asarray(x).compress(x > 0, size=7, fill_value=-1))
    same_as_jax(lambda s: s.np.asarray([0, 1, 0]).choose([x[:3], x[3:6]]))
    same_as_jax(lambda s: s.np.asarray(x).searchsorted(x[[4, 1]], side="right"))
    perm = rng.permutation(7)
    same_as_jax(lambda s: s.np.searchsorted(x[perm], x[2], sorter=np.argsort(x[perm])))


@pytest.mark.parametrize("mode", [None, "drop", "clip", "fill"])
def test_at_updates_with_wrap_negative_indices_false(rng, mode):
    x = rng.standard_normal(6).astype(np.float32)
    idx = np.array([-1, 2, -6])
    same_as_jax(lambda s: s.np.asarray(x).at[idx].set(9.0, wrap_negative_indices=False,
                                                      mode=mode))
    same_as_jax(lambda s: s.np.asarray(x).at[-2].add(1.0, wrap_negative_indices=False,
                                                     mode=mode))
    same_as_jax(lambda s: s.m.jit(lambda a, i: a.at[i].multiply(
        2.0, wrap_negative_indices=False, mode=mode))(s.np.asarray(x), idx))
    if mode in (None, "fill", "clip"):
        same_as_jax(lambda s: s.np.asarray(x).at[idx].get(
            wrap_negative_indices=False, mode=mode, fill_value=-5.0))


def test_every_derivative_of_sinc_at_zero():
    def program(s):
        f, outs = s.np.sinc, []
        for _ in range(4):
            f = s.m.grad(f)
            outs.append(np.asarray(f(0.0)))     # values (the weak types are another matter)
        return outs + [s.m.vmap(s.m.grad(s.np.sinc))(s.np.array([0.0, 0.3]))]
    same_as_jax(program, rtol=1e-4)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_promote_integers_and_conjugate(rng, mode):
    ints = [rng.integers(-5, 5, n).astype(np.int32) for n in (5, 3)]
    cplx = [(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
            for n in (3, 4)]
    for a, b in (ints, cplx, cplx[::-1]):
        same_as_jax(lambda s: s.np.convolve(a, b, mode=mode), rtol=1e-5, atol=1e-5)
        same_as_jax(lambda s: s.np.correlate(a, b, mode=mode), rtol=1e-5, atol=1e-5)
    same_as_jax(lambda s: s.np.convolve(*ints, preferred_element_type=np.int32))


def test_vecdot_conjugates_its_first_argument(rng):
    a, b = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)) for _ in range(2))
    same_as_jax(lambda s: s.np.vecdot(a.astype(np.complex64), b.astype(np.complex64)))
    same_as_jax(lambda s: s.np.linalg.vecdot(a.astype(np.complex64), b.astype(np.complex64)))


def test_isclose_array_equal_meshgrid_vsplit_argwhere():
    inf, nan = np.inf, np.nan
    a = np.array([1e6, 2e6, inf, -inf, nan, inf], np.float32)
    b = np.array([1e6, 2e7, inf, inf, nan, 1.0], np.float32)
    same_as_jax(lambda s: s.np.isclose(a, b))
    same_as_jax(lambda s: s.np.isclose(a, b, equal_nan=True))
    same_as_jax(lambda s: s.np.array_equal(a, a, equal_nan=True))
    same_as_jax(lambda s: s.np.array_equal(a, a))
    for indexing in ("xy", "ij"):
        same_as_jax(lambda s: s.np.meshgrid(np.arange(3), np.arange(2.0), np.arange(4),
                                            sparse=True, indexing=indexing))
    same_as_jax(lambda s: s.np.vsplit(np.arange(6), 2))
    for v in (0, 1):
        same_as_jax(lambda s: s.np.argwhere(v))
        same_as_jax(lambda s: s.np.argwhere(v, size=2))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (11,), (10,), (3, 7)])
def test_array_repr_lays_out_as_jax(rng, shape):
    for dtype in (np.float32, np.int32, np.bool_):
        x = (rng.standard_normal(shape) * 1000).astype(dtype)
        assert repr(FNX.np.asarray(x)) == repr(JAX.np.asarray(x))


def test_fwd_and_bwd_as_jax(rng):
    w = rng.standard_normal((3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 3)).astype(np.float32)

    def program(s):
        layer = lambda w, x: s.np.tanh(x @ w)
        fwd, bwd = s.m.fwd_and_bwd(layer, argnums=(0, 1))
        y, res = fwd(w, x)
        fwd1, bwd1 = s.m.fwd_and_bwd(layer, argnums=1, jitted=False)
        y1, res1 = fwd1(w, x)
        return y, bwd(res, s.np.ones_like(y)), bwd1(res1, s.np.ones_like(y1))
    same_as_jax(program)
    assert fnx.float0 == jax.dtypes.float0


OPTAX_FACTORIES = ["sign_sgd(0.1)", "signum(0.1)", "yogi(0.1)", "adadelta()",
                   "adadelta(0.5, weight_decay=0.1)", "adamaxw(0.1)", "nadamw(0.1)",
                   "centralize()", "keep_params_nonnegative()", "zero_nans()",
                   "adamw(0.1, 0.9, 0.99, 1e-8, 0.0, None, 0.1)", "adam(0.1, nesterov=True)"]


@pytest.mark.parametrize("factory", OPTAX_FACTORIES)
def test_more_optax_optimizers_as_optax(rng, factory):
    optax = pytest.importorskip("optax")
    p = rng.standard_normal((3, 4)).astype(np.float32)
    grads = rng.standard_normal((3, 3, 4)).astype(np.float32)
    grads[1, 0, 0] = np.nan if factory == "zero_nans()" else grads[1, 0, 0]

    def run(lib, m):
        tx = eval(f"lib.{factory}", {"lib": lib})
        params = {"w": m.asarray(p)}
        state = tx.init(params)
        for g in grads:
            updates, state = tx.update({"w": m.asarray(g)}, state, params)
            params = lib.apply_updates(params, updates)
        return np.asarray(params["w"])
    np.testing.assert_allclose(run(fnx.optim, FNX.np), run(optax, JAX.np), rtol=1e-5, atol=1e-6)


def test_more_optax_schedules_and_numerics_as_optax():
    optax = pytest.importorskip("optax")
    for schedule in ["sgdr_schedule([dict(init_value=0.0, peak_value=1.0, warmup_steps=2, "
                     "decay_steps=5)] * 3)", "warmup_constant_schedule(0.1, 1.0, 4)",
                     "warmup_exponential_decay_schedule(0.0, 1.0, 3, 2, 0.5, end_value=0.1)"]:
        ours, theirs = eval("fnx.optim." + schedule), eval("optax." + schedule)
        np.testing.assert_allclose([float(ours(i)) for i in range(16)],
                                   [float(theirs(i)) for i in range(16)], rtol=1e-6)
    x = np.array([3.0, 4.0], np.float32)
    for name in ("safe_norm", "safe_root_mean_squares"):
        np.testing.assert_allclose(getattr(fnx.optim, name)(x, 1e-6),
                                   getattr(optax, name)(x, 1e-6), rtol=1e-6)
        np.testing.assert_array_equal(
            fnx.grad(lambda v: getattr(fnx.optim, name)(v, 1.0))(FNX.np.zeros(2)),
            jax.grad(lambda v: getattr(optax, name)(v, 1.0))(JAX.np.zeros(2)))
    assert int(fnx.optim.safe_int32_increment(FNX.np.array(2**31 - 1, "int32"))) == 2**31 - 1

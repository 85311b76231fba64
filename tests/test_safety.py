"""Data safety: no silent aliasing of the caller's buffers, JAX's rules for out-of-range
indices, donation that loses nothing on failure, jit's argument handling, and the other
corners where fnx used to give a wrong answer without an error."""
import functools

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.core.errors import DeletedArrayError


# ---------------------------------------------------------------------------------------------
# 1. NumPy buffers in and out


def test_numpy_input_is_copied_in(rng):
    buf = rng.standard_normal(5).astype(np.float32)
    first = buf.copy()
    made = [jnp.asarray(buf), jnp.array(buf), jnp.array(buf, copy=True), fnx.device_put(buf),
            jnp.asarray(buf, dtype=jnp.float32), fnx.jit(lambda x: x)(buf)]
    buf[:] = rng.standard_normal(5).astype(np.float32)     # a data loader reusing its buffer
    for a in made:
        np.testing.assert_array_equal(np.asarray(a), first)


def test_numpy_input_converted_once(rng):
    buf = rng.standard_normal((3, 4))       # float64 in, float32 out (and F-ordered)
    a = jnp.asarray(np.asfortranarray(buf), dtype=jnp.float32)
    assert a.dtype == np.float32 and a._value.flags.c_contiguous
    np.testing.assert_array_equal(np.asarray(a), buf.astype(np.float32))


def test_jit_argument_from_numpy_is_not_aliased(rng):
    buf = rng.standard_normal(4).astype(np.float32)
    first = buf.copy()
    out = fnx.jit(lambda x: x)(buf)
    buf[:] = 0.5
    np.testing.assert_array_equal(np.asarray(out), first)


def test_asarray_of_fnx_array_is_read_only(rng):
    a = jnp.asarray(rng.standard_normal(4).astype(np.float32))
    before = np.array(a)
    view = np.asarray(a)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1.0
    copy = np.array(a)                   # copy=True: the caller's own array
    assert copy.flags.writeable
    copy[0] = 1.0
    np.testing.assert_array_equal(np.asarray(a), before)
    assert np.asarray(a, dtype=np.float64).flags.writeable
    with pytest.raises(ValueError, match="copy"):
        a.__array__(dtype=np.float64, copy=False)


def test_jit_snapshots_closed_over_numpy_constant(rng):
    c = rng.standard_normal(3).astype(np.float32)
    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    expected = np.asarray(x) + c
    f = fnx.jit(lambda x: x + c)
    np.testing.assert_allclose(np.asarray(f(x)), expected)
    c[:] = 100.0
    np.testing.assert_allclose(np.asarray(f(x)), expected)
    np.testing.assert_allclose(np.asarray(fnx.jit(lambda x: x * 1.0 + c)(x)), np.asarray(x) + 100)


# ---------------------------------------------------------------------------------------------
# 3. Donation


class _DonatingCpu(type(fnx.devices("cpu")[0])):
    """The CPU backend claiming donation support, as the GPU backend does."""
    name = "cpu_donating"
    supports_donation = True

    def compile(self, jaxpr, consts, donated=()):
        return super().compile(jaxpr, consts)


@pytest.fixture
def donating_cpu():
    from fnx.backends import numpy_backend
    from fnx.core import core
    backend = _DonatingCpu(numpy_backend.impls)
    core.register_backend(backend.name, backend)
    yield backend
    core._backends.pop(backend.name)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])   # Ctrl-C too
def test_donated_argument_survives_a_call_that_raises(donating_cpu, rng, error):
    from fnx.core.debugging import debug_callback_p
    fail = [True]

    def check(*vals, batched):
        if fail[0]:
            raise error("check failed")

    @functools.partial(fnx.jit, donate_argnums=0)
    def step(p):
        debug_callback_p.bind(p, callback=check, batched=False)
        return p * 2.0

    value = rng.standard_normal(3).astype(np.float32)
    p = fnx.device_put(value, donating_cpu)
    for _ in range(2):            # the first call, then the cached fast path
        with pytest.raises(error, match="check failed"):
            step(p)
        assert not p.is_deleted()
        np.testing.assert_array_equal(np.asarray(p), value)
    fail[0] = False
    out = step(p)
    np.testing.assert_allclose(np.asarray(out), value * 2)
    assert p.is_deleted()
    with pytest.raises(DeletedArrayError):
        np.asarray(p)


# ---------------------------------------------------------------------------------------------
# 4. jit's arguments


def _scale(x, n):
    assert isinstance(n, int), "n must arrive static"
    return x * n


def test_static_and_donate_argnums_past_the_arguments_raise():
    for kw in ({"static_argnums": 5}, {"static_argnums": -3}, {"donate_argnums": 2}):
        with pytest.raises(ValueError, match="only accepts 2 positional arguments"):
            fnx.jit(_scale, **kw)
    with pytest.raises(ValueError, match="invalid argnames"):
        fnx.jit(_scale, static_argnames="m")
    with pytest.raises(ValueError, match="both static and donated"):
        fnx.jit(_scale, static_argnums=1, donate_argnames="n")
    # with *args, an index past this call's arguments names nothing (as in JAX)
    assert float(fnx.jit(lambda *a: a[0], static_argnums=5)(2.0, 3.0)) == 2.0


def test_static_argument_by_position_or_keyword(rng):
    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    for kw in ({"static_argnums": 1}, {"static_argnums": -1}, {"static_argnames": "n"}):
        f = fnx.jit(_scale, **kw)
        np.testing.assert_allclose(np.asarray(f(x, 3)), np.asarray(x) * 3)
        np.testing.assert_allclose(np.asarray(f(x, n=4)), np.asarray(x) * 4)
        np.testing.assert_allclose(np.asarray(f(x=x, n=5)), np.asarray(x) * 5)


def test_donate_argnames(donating_cpu, rng):
    value = rng.standard_normal(3).astype(np.float32)
    f = fnx.jit(lambda p, g: p - g, donate_argnames="p")
    p, g = (fnx.device_put(value, donating_cpu), fnx.device_put(value, donating_cpu))
    f(g=g, p=p)
    assert p.is_deleted() and not g.is_deleted()
    assert fnx.jit(lambda p, g: p - g, donate_argnames="p").donate_argnums == (0,)


def test_jitted_function_binds_as_method(rng):
    class Scaler:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Scaler) and other.k == self.k

        @functools.partial(fnx.jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

        @fnx.jit
        def twice(self_unused, x):
            return x * 2

    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    np.testing.assert_allclose(np.asarray(Scaler(3).apply(x)), np.asarray(x) * 3)
    np.testing.assert_allclose(np.asarray(Scaler(5).apply(x)), np.asarray(x) * 5)
    np.testing.assert_allclose(np.asarray(Scaler.apply(Scaler(2), x)), np.asarray(x) * 2)
    with pytest.raises(TypeError, match="not a valid fnx type"):
        Scaler(2).twice(x)


# ---------------------------------------------------------------------------------------------
# 2. Out-of-range indices, as in JAX


def _jax():
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    return jax


# in range, past the end, negative in range (from the end), negative out of range
_INDICES = np.array([0, 7, -1, 2, -9, 2, 5], np.int32)


@pytest.mark.parametrize("op", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("mode", [None, "drop", "clip", "fill", "promise_in_bounds"])
def test_at_update_out_of_range_as_jax(op, mode, rng):
    jax = _jax()
    if mode == "promise_in_bounds":
        idx = np.array([0, 4, -1, 2], np.int32)       # JAX leaves anything else undefined
    else:
        idx = _INDICES
    x = rng.standard_normal(5).astype(np.float32)
    u = rng.standard_normal(idx.size).astype(np.float32)

    def update(np_, x, i, u):
        return getattr(x.at[i], op)(u, mode=mode)
    expected = np.asarray(update(None, jax.numpy.asarray(x), idx, u))
    for run in (lambda: update(None, jnp.asarray(x), jnp.asarray(idx), jnp.asarray(u)),
                lambda: update(None, jnp.asarray(x), idx, u),          # static indices
                lambda: fnx.jit(lambda x, i, u: update(None, x, i, u))(x, idx, u)):
        np.testing.assert_allclose(np.asarray(run()), expected, rtol=1e-6)


def test_masked_segment_sum_drops_out_of_range():
    out = jnp.zeros(3).at[jnp.array([0, 1, 2, 5])].add(jnp.array([1., 2., 4., 3.]))
    np.testing.assert_array_equal(np.asarray(out), [1., 2., 4.])


def test_at_update_2d_and_vmap_as_jax(rng):
    jax = _jax()
    x = rng.standard_normal((3, 4)).astype(np.float32)
    rows, cols = np.array([0, 3, 2, -1, 1], np.int32), np.array([1, 1, 4, 0, -5], np.int32)
    u = rng.standard_normal(5).astype(np.float32)
    expected = np.asarray(jax.numpy.asarray(x).at[rows, cols].add(u))
    np.testing.assert_allclose(np.asarray(jnp.asarray(x).at[rows, cols].add(u)), expected)
    got = fnx.jit(lambda x, r, c, u: x.at[r, c].add(u))(x, rows, cols, u)
    np.testing.assert_allclose(np.asarray(got), expected)

    i = np.array([1, 4, -1, -4], np.int32)                  # one per row of a (4, 3) batch
    xb = rng.standard_normal((4, 3)).astype(np.float32)
    f = lambda x, i: x.at[i].add(10.0)                      # noqa: E731
    expected = np.asarray(jax.vmap(f)(xb, i))
    np.testing.assert_allclose(np.asarray(fnx.vmap(f)(jnp.asarray(xb), jnp.asarray(i))),
                               expected)
    np.testing.assert_allclose(np.asarray(fnx.jit(fnx.vmap(f))(xb, i)), expected)


def test_scatter_gradients_skip_dropped_updates(rng):
    jax = _jax()
    x = rng.standard_normal(5).astype(np.float32)
    u = rng.standard_normal(_INDICES.size).astype(np.float32)
    w = rng.standard_normal(5).astype(np.float32)
    for op in ("add", "set", "max"):
        def loss(xp, x, u):
            return (getattr(x.at[_INDICES], op)(u) * w).sum()
        gx, gu = fnx.grad(lambda x, u: loss(jnp, x, u), argnums=(0, 1))(x, u)
        ex, eu = jax.grad(lambda x, u: loss(None, x, u), argnums=(0, 1))(x, u)
        np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=1e-6, err_msg=op)
        np.testing.assert_allclose(np.asarray(gu), np.asarray(eu), rtol=1e-6, err_msg=op)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
def test_take_out_of_range_fills_as_jax(dtype, rng):
    jax = _jax()
    x = (rng.standard_normal((4, 5)) * 50).astype(dtype)
    idx = np.array([[0, 7], [-1, -6]], np.int32)
    for kw in ({}, {"mode": "fill"}, {"mode": "fill", "fill_value": 3}, {"mode": "clip"},
               {"mode": "wrap"}):
        for axis in (0, 1, None):
            expected = np.asarray(jax.numpy.take(x, idx, axis=axis, **kw))
            np.testing.assert_array_equal(np.asarray(jnp.take(x, idx, axis=axis, **kw)),
                                          expected)
            got = fnx.jit(lambda x, i: jnp.take(x, i, axis=axis, **kw))(x, idx)
            np.testing.assert_array_equal(np.asarray(got), expected)
    along = np.array([[0, 9], [-1, 2], [-7, 4], [1, 5]], np.int32)
    expected = np.asarray(jax.numpy.take_along_axis(x, along, axis=1))
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(x, along, axis=1)), expected)
    got = fnx.jit(lambda x, i: jnp.take_along_axis(x, i, axis=1))(x, along)
    np.testing.assert_array_equal(np.asarray(got), expected)
    expected = np.asarray(jax.numpy.take_along_axis(x, along, axis=1, mode="clip"))
    np.testing.assert_array_equal(
        np.asarray(jnp.take_along_axis(x, along, axis=1, mode="clip")), expected)


def test_take_modes_raise_as_jax():
    x = jnp.arange(5.0)
    with pytest.raises(NotImplementedError):
        jnp.take(x, jnp.array([1]), mode="raise")
    with pytest.raises(ValueError):
        jnp.take(x, jnp.array([1]), mode="foo")
    with pytest.raises(ValueError):
        x.at[jnp.array([1])].set(1.0, mode="wrap")


def test_indexing_clamps_and_get_fills_as_jax(rng):
    jax = _jax()
    x = rng.standard_normal((3, 4)).astype(np.float32)
    jx = jax.numpy.asarray(x)
    for idx in [(np.array([0, 5, -1, -8]),), (np.array([0, 3, -4]), np.array([4, -1, 1])),
                (slice(None), np.array([9, -9]))]:
        expected = np.asarray(jx[idx])
        np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[idx]), expected)
        got = fnx.jit(lambda x, *i: x[i if len(i) > 1 else i[0]])(x, *idx) \
            if all(isinstance(i, np.ndarray) for i in idx) else fnx.jit(lambda x: x[idx])(x)
        np.testing.assert_array_equal(np.asarray(got), expected)
        for kw in ({"mode": "fill"}, {"mode": "fill", "fill_value": -2.0}):
            expected = np.asarray(jx.at[idx].get(**kw))
            np.testing.assert_array_equal(np.asarray(jnp.asarray(x).at[idx].get(**kw)),
                                          expected)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[7]), np.asarray(jx[7]))
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x).at[1, 9].get(mode="fill")),
                                  np.asarray(jx.at[1, 9].get(mode="fill")))


def test_gather_gradient_of_clamped_index_as_jax(rng):
    jax = _jax()
    x = rng.standard_normal(5).astype(np.float32)
    idx = np.array([1, 9, -1, -7], np.int32)
    w = rng.standard_normal(4).astype(np.float32)
    # the gradient lands where the clamped index read, as JAX's mode='clip' (and its scalar
    # indexing) has it; JAX's x[idx] with an index array leaves it to XLA, which drops it
    expected = jax.grad(lambda x: (x.at[idx].get(mode="clip") * w).sum())(x)
    np.testing.assert_allclose(np.asarray(fnx.grad(lambda x: (x[idx] * w).sum())(x)),
                               np.asarray(expected), rtol=1e-6)
    expected = jax.grad(lambda x: jax.numpy.nansum(jax.numpy.take(x, idx) * w))(x)
    got = fnx.grad(lambda x: jnp.nansum(jnp.take(x, idx) * w))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


@pytest.mark.cuda
@pytest.mark.parametrize("op", ["set", "add", "mul", "min", "max"])
def test_gpu_scatter_drops_out_of_range(op, gpu, cpu, rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    idx = np.array([0, 7, -1, 2, 2, -9, 4], np.int32)
    u = rng.standard_normal((3, idx.size)).astype(np.float32)
    from fnx.core import lax
    run = lambda dev: lax.scatter(fnx.device_put(x, dev), fnx.device_put(idx, dev),  # noqa
                                  fnx.device_put(u, dev), 1, op)
    np.testing.assert_array_equal(np.asarray(run(gpu)), np.asarray(run(cpu)))
    jitted = fnx.jit(lambda x, i, u: x.at[:, i].add(u) if op == "add" else
                     getattr(x.at[:, i], op)(u))
    got = jitted(fnx.device_put(x, gpu), fnx.device_put(idx, gpu), fnx.device_put(u, gpu))
    np.testing.assert_allclose(np.asarray(got), np.asarray(jitted(
        fnx.device_put(x, cpu), fnx.device_put(idx, cpu), fnx.device_put(u, cpu))), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# 5. Smaller corners


def test_ravel_and_reshape_in_fortran_order(rng):
    jax = _jax()
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jnp.ravel(x, order="F")),
                                  np.asarray(jax.numpy.ravel(x, order="F")))
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x).ravel(order="F")),
                                  np.ravel(x, order="F"))
    for shape in [(4, 6), (6, -1), (24,)]:
        np.testing.assert_array_equal(np.asarray(jnp.reshape(x, shape, order="F")),
                                      np.asarray(jax.numpy.reshape(x, shape, order="F")))
    g = fnx.grad(lambda t: (jnp.ravel(t, order="F") * jnp.arange(24.0)).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.arange(24.0).reshape(4, 3, 2).T)


def test_non_integer_shape_is_a_type_error():
    with pytest.raises(TypeError):
        jnp.zeros((2.5, 3))
    with pytest.raises(TypeError):
        jnp.ones(2.0)
    assert jnp.zeros((np.int64(2), 3)).shape == (2, 3)


def test_prng_seed_out_of_int64_range_raises(jax_x64_as_fnx):
    from fnx import random
    for seed in (2 ** 64, 2 ** 63, -2 ** 63 - 1):
        with pytest.raises(OverflowError):
            random.PRNGKey(seed)
    jax = _jax()
    for seed in (-1, 2 ** 32, 2 ** 63 - 1, 12345):
        np.testing.assert_array_equal(np.asarray(random.PRNGKey(seed)),
                                      np.asarray(jax.random.PRNGKey(seed)))


def test_permutation_axis_out_of_range_raises():
    from fnx import random
    with pytest.raises(ValueError, match="out of bounds"):
        random.permutation(random.PRNGKey(0), jnp.ones((2, 3)), axis=5)
    with pytest.raises(ValueError, match="out of bounds"):
        random.permutation(random.PRNGKey(0), jnp.ones((2, 3)), axis=-3)


def test_int8_product_accumulates_in_preferred_int32(rng):
    from fnx import lax
    a = rng.integers(-128, 128, (4, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 3)).astype(np.int8)
    expected = a.astype(np.int32) @ b.astype(np.int32)
    f = lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),  # noqa: E731
                                     preferred_element_type=jnp.int32)
    for got in (f(a, b), fnx.jit(f)(a, b)):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got), expected)


def test_object_array_under_jit_is_a_type_error():
    with pytest.raises(TypeError, match="dtype object"):
        fnx.jit(lambda x: x)(np.array([1, "a"], dtype=object))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_])
def test_floor_and_ceil_keep_integer_dtypes(dtype, rng):
    jax = _jax()
    x = (rng.standard_normal(5) * 10).astype(dtype)
    for name in ("floor", "ceil"):
        got, expected = getattr(jnp, name)(x), getattr(jax.numpy, name)(x)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_singular_inv_and_solve_give_inf_nan_not_an_exception(rng):
    jax = _jax()
    ones = np.ones((3, 3), np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    for f, jf, args in [(jnp.linalg.inv, jax.numpy.linalg.inv, (ones,)),
                        (jnp.linalg.solve, jax.numpy.linalg.solve, (ones, b))]:
        expected = np.asarray(jf(*args))
        for got in (f(*args), fnx.jit(f)(*args)):
            assert not np.isfinite(np.asarray(got)).all()
            np.testing.assert_array_equal(np.isfinite(np.asarray(got)), np.isfinite(expected))
    regular = rng.standard_normal((3, 3)).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    batch = np.stack([np.zeros((3, 3), np.float32), regular])
    for inv in (fnx.vmap(jnp.linalg.inv), fnx.jit(fnx.vmap(jnp.linalg.inv))):
        out = np.asarray(inv(batch))
        assert not np.isfinite(out[0]).any()
        np.testing.assert_allclose(out[1], np.linalg.inv(regular), rtol=1e-5, atol=1e-6)
    bs = rng.standard_normal((2, 3)).astype(np.float32)
    out = np.asarray(fnx.jit(fnx.vmap(jnp.linalg.solve))(batch, bs))
    assert not np.isfinite(out[0]).all()
    np.testing.assert_allclose(out[1], np.linalg.solve(regular, bs[1]), rtol=1e-5, atol=1e-6)


def test_linear_transpose_of_a_nonlinear_function_raises(rng):
    x = rng.standard_normal(3).astype(np.float32)
    with pytest.raises(NotImplementedError, match="sin"):
        fnx.linear_transpose(jnp.sin, x)(x)
    with pytest.raises(ValueError, match="linear"):
        fnx.linear_transpose(lambda v: v * v, x)(x)
    c = rng.standard_normal(3).astype(np.float32)
    (got,) = fnx.linear_transpose(lambda v: v * c - 2.0 * v, x)(x)
    np.testing.assert_allclose(np.asarray(got), x * c - 2.0 * x, rtol=1e-6)


@pytest.mark.parametrize("to", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("src", ["float16", "bfloat16", "float32", "float64"])
def test_float_to_int_conversion_saturates_as_jax(src, to, rng):
    """Out-of-range floats clamp to the integer type's bounds and NaN becomes 0, as XLA
    converts (NumPy's cast is undefined there: +inf became INT_MIN)."""
    jax = _jax()
    special = [np.inf, -np.inf, np.nan, 3e38, -3e38, 1e5, -1e5, 2.0 ** 31, -2.0 ** 31, 255.5]
    with np.errstate(over="ignore"):        # float16 holds 3e38 as inf
        x = np.concatenate([special, rng.standard_normal(6) * 300]).astype(jnp.dtype(src))
    with jax.enable_x64(True):
        expected = np.asarray(jax.numpy.asarray(x).astype(to))
    for got in (jnp.asarray(x).astype(to), fnx.jit(lambda x: x.astype(to))(x)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(got), expected)

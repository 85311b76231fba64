"""The CPU executable: results equal to eager execution bit for bit, and its buffer plan never
writes over arguments, constants, returned results or buffers a live view reads."""
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.nn as nn
import fnx.numpy as jnp

F32 = np.float32
rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def on_the_cpu():
    """These tests look inside the CPU executable, whatever device is the default."""
    with fnx.default_device(fnx.devices("cpu")[0]):
        yield


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


def _compiled(f, *args):
    return fnx.jit(f).lower(*args).compile()


def test_arguments_and_constants_are_never_overwritten():
    c = np.linspace(-1, 1, 12).astype(F32).reshape(3, 4)
    c_copy = c.copy()

    def f(x):
        y = x * 2.0           # x dies here, but belongs to the caller
        z = y + c             # c is a constant of the program
        return jnp.tanh(z) * 3.0
    x = jnp.asarray(rng.standard_normal((3, 4)).astype(F32))
    x_copy = np.asarray(x).copy()
    out = fnx.jit(f)(x)
    _bits_equal(out, f(x))
    np.testing.assert_array_equal(np.asarray(x), x_copy)
    np.testing.assert_array_equal(c, c_copy)


def test_returned_values_and_live_views_are_not_reused():
    def f(x):
        a = x * 2.0
        r = jnp.reshape(a, (4, 3))     # a view of a's buffer, read after a dies
        b = a + 1.0
        c = b * b
        return a, c, r * 3.0
    x = jnp.asarray(rng.standard_normal((3, 4)).astype(F32))
    for got, want in zip(fnx.jit(f)(x), f(x)):
        _bits_equal(got, want)


@pytest.mark.parametrize("reduce", [jnp.max, jnp.min, jnp.sum, jnp.prod, jnp.all])
def test_a_reduction_over_no_axes_owns_its_result(reduce):
    # its operand's buffer dies at the reduction and is reused by the next step
    def f(g, x):
        accum = reduce(x + jnp.square(g), axis=())
        return x - 0.5 * g, accum
    g, x = (rng.standard_normal(5).astype(F32) for _ in range(2))
    for got, want in zip(fnx.jit(f)(g, x), f(g, x)):
        _bits_equal(got, want)


def test_a_select_of_one_value_in_both_cases_keeps_it():
    # a loop body runs without the jit's simplifications: select_n(m, y, y) reaches the
    # bitwise blend, which must not write over y while it still reads it as the false case
    def body(state):
        x, n = state
        y = x * 1.5
        return jnp.where(x > 0, y, y), n + 1
    x = rng.standard_normal(6).astype(F32)
    got = fnx.jit(lambda x: lax.while_loop(lambda s: s[1] < 3, body, (x, 0)))(x)[0]
    _bits_equal(got, x * F32(1.5) * F32(1.5) * F32(1.5))


def test_each_call_returns_fresh_arrays():
    f = fnx.jit(lambda x: (x * 2.0 + 1.0, jnp.exp(x)))
    x1, x2 = jnp.ones(5), jnp.full(5, 2.0)
    first = [np.asarray(o).copy() for o in f(x1)]
    keep = f(x1)
    f(x2)
    for o, e in zip(keep, first):
        np.testing.assert_array_equal(np.asarray(o), e)


def test_buffers_are_reused_in_a_dense_step():
    x = jnp.asarray(rng.standard_normal((8, 5)).astype(F32))
    w = jnp.asarray(rng.standard_normal((5, 4)).astype(F32))
    b = jnp.asarray(rng.standard_normal(4).astype(F32))

    def step(w, b, x):
        def loss(w, b):
            return jnp.sum(nn.relu(x @ w + b) ** 2)
        gw, gb = fnx.grad(loss, (0, 1))(w, b)
        return w - 0.1 * gw, b - 0.1 * gb
    exe = _compiled(step, w, b, x)
    assert exe.reused >= 3, exe.describe()
    for got, want in zip(fnx.jit(step)(w, b, x), step(w, b, x)):
        _bits_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_, np.int8])
def test_selects_pick_the_same_bits_as_eager(dtype):
    special = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, -1.5, 2.5, 1e-40] * 2)
    if np.dtype(dtype).kind == "f":
        vals = special.astype(dtype).reshape(4, 4)
    else:
        vals = rng.integers(-3, 4, (4, 4)).astype(dtype)
    other = np.flip(vals).copy()
    fns = [lambda p, a, b: lax.select(p, a, b),
           lambda p, a, b: jnp.where(p, a, jnp.zeros_like(a)),
           lambda p, a, b: jnp.where(p, jnp.zeros_like(a), b),
           lambda p, a, b: lax.select(p, a, a)]
    p = jnp.asarray(rng.random((4, 4)) > 0.5)
    for fn in fns:
        _bits_equal(fnx.jit(fn)(p, vals, other), fn(p, jnp.asarray(vals), jnp.asarray(other)))


def test_relu_of_special_values_matches_eager():
    x = jnp.asarray(np.array([[np.nan, -0.0, 0.0, -np.inf], [np.inf, -1.0, 3.0, 1e-40]], F32))
    _bits_equal(fnx.jit(nn.relu)(x), nn.relu(x))
    g = fnx.jit(fnx.grad(lambda x: jnp.sum(nn.relu(x) * 2.0)))
    _bits_equal(g(x), fnx.grad(lambda x: jnp.sum(nn.relu(x) * 2.0))(x))


def test_products_layouts_and_batches_match_eager():
    a = jnp.asarray(rng.standard_normal((3, 4, 5)).astype(F32))
    b = jnp.asarray(rng.standard_normal((3, 5, 2)).astype(F32))
    m = jnp.asarray(rng.standard_normal((4, 6)).astype(F32))
    fns = [lambda a, b, m: jnp.matmul(a, b) + 1.0,
           lambda a, b, m: jnp.einsum("bij,jk->bik", a[:, :, :4], m) * 2.0,
           lambda a, b, m: m.T @ m - 1.0,
           lambda a, b, m: lax.dot_general(a, a, (((2,), (2,)), ((0,), (0,)))) + 0.5]
    for fn in fns:
        _bits_equal(fnx.jit(fn)(a, b, m), fn(a, b, m))


def test_last_axis_pick_clamps_like_eager():
    x = jnp.asarray(rng.standard_normal((2, 3, 5)).astype(F32))
    idx = jnp.asarray(np.array([[[0], [4], [9]], [[-3], [2], [1]]], np.int32))
    f = lambda x, i: jnp.take_along_axis(x, i, axis=-1) * 2.0  # noqa: E731
    _bits_equal(fnx.jit(f)(x, idx), f(x, idx))


def test_broadcasts_read_by_elementwise_steps():
    x = jnp.asarray(rng.standard_normal((3, 4)).astype(F32))
    v = jnp.asarray(rng.standard_normal(4).astype(F32))
    col = jnp.asarray(rng.standard_normal((3, 1)).astype(F32))
    fns = [lambda x, v, c: x + v,
           lambda x, v, c: (v + c) * 2.0,          # both operands broadcast into the result
           lambda x, v, c: jnp.where(x > 0, v, c),
           lambda x, v, c: (jnp.broadcast_to(v, (3, 4)), x * v),
           lambda x, v, c: nn.sigmoid(x + c)]
    for fn in fns:
        got, want = fnx.jit(fn)(x, v, col), fn(x, v, col)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            _bits_equal(g, w)


def test_constant_results_are_computed_once_and_read_only():
    f = lambda x: x * jnp.full((2, 3), 2.0) + lax.broadcasted_iota(np.float32, (2, 3), 1)  # noqa
    x = jnp.ones((2, 3))
    exe = _compiled(f, x)
    assert exe.constants >= 1, exe.describe()
    assert all(not c.flags.writeable for c in exe.template if type(c) is np.ndarray)
    for _ in range(2):
        _bits_equal(fnx.jit(f)(x), f(x))


def test_returned_constants_are_fresh_per_call():
    g = fnx.jit(lambda x: (x, jnp.full((4,), 3.0)))
    (_, r1), (_, r2) = g(jnp.ones(2)), g(jnp.ones(2))
    _bits_equal(r1, jnp.full((4,), 3.0))
    assert not np.shares_memory(np.asarray(r1), np.asarray(r2))


# ---------------------------------------------------------------------------------------------
# Programs with loops and branches: the generated code's results are the interpreter's bits


def _lorenz_rk4(s, steps=50, dt=0.01):
    def f(s):
        x, y, z = s[0], s[1], s[2]
        return jnp.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])

    def body(i, s):
        k1 = f(s)
        k2 = f(s + dt / 2 * k1)
        k3 = f(s + dt / 2 * k2)
        k4 = f(s + dt * k3)
        return s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return lax.fori_loop(0, steps, body, s)


def _gru(h, xs, w):
    def step(h, x):
        z = nn.sigmoid(x @ w + h @ w.T)
        h = (1 - z) * h + z * jnp.tanh(x @ w.T + (z * h) @ w)
        return h, jnp.sum(h, axis=1)
    return lax.scan(step, h, xs)


def _newton(a):
    def cond(c):
        return jnp.any(jnp.abs(c[0] * c[0] - a) > 1e-5) & (c[1] < 50)
    return lax.while_loop(cond, lambda c: (0.5 * (c[0] + a / c[0]), c[1] + 1), (a, 0))


PROGRAMS = {
    "lorenz_fori": (_lorenz_rk4, [(3,)]),
    "gru_scan": (_gru, [(4, 4), (7, 4, 4), (4, 4)]),
    "newton_while": (_newton, [(5,)]),
    "reverse_scan_no_carry": (lambda xs: lax.scan(lambda c, x: (c, jnp.sin(x) * 2.0), None,
                                                   xs, reverse=True)[1], [(6, 3)]),
    "cumulative_reverse": (lambda xs: lax.scan(lambda c, x: (c + x, c * x), jnp.zeros(3),
                                               xs, reverse=True), [(5, 3)]),
    "fori_dynamic_bound": (lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 1.5 - i, x),
                           [(4,), "n"]),
    "nested_loops": (lambda x: lax.fori_loop(0, 3, lambda i, c: lax.scan(
        lambda k, y: (k * y + 1.0, k), c, jnp.stack([c, -c]))[0], x), [(3,)]),
    "cond_in_scan": (lambda xs: lax.scan(lambda c, x: lax.cond(
        jnp.sum(x) > 0, lambda: (c + x, x * 2.0), lambda: (c - x, jnp.exp(x))), xs[0], xs),
        [(8, 2)]),
    "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * v], x),
               ["i", (5,)]),
    "literal_body_result": (lambda x: lax.scan(lambda c, _: (c * 2.0, 1.0), x, None, length=4),
                            [()]),
    "empty_scan": (lambda x, ys: lax.scan(lambda c, y: (c + y, c), x, ys), [(2,), (0, 2)]),
    "straight_line": (lambda x, v: (jnp.concatenate([x[:2], v]).reshape(2, 2) * 3.0,
                                    jnp.tanh(x[1:] + 1.0).sum()), [(3,), (2,)]),
}


def _args(shapes, seed):
    r = np.random.default_rng(seed)
    out = []
    for s in shapes:
        if s == "n":
            out.append(np.int32(r.integers(1, 6)))
        elif s == "i":
            out.append(np.int32(r.integers(-1, 4)))     # out of range: clamped
        else:
            out.append(r.uniform(0.5, 2.0, s).astype(F32))
    return out


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_with_loops_match_eager_bit_for_bit(name):
    fn, shapes = PROGRAMS[name]
    for seed in rng.integers(0, 2 ** 31, 3):
        args = _args(shapes, seed)
        got = fnx.tree_util.tree_leaves(fnx.jit(fn)(*args))
        want = fnx.tree_util.tree_leaves(fn(*args))
        # with debug_nans on, loop bodies run equation by equation through the eager impls
        with fnx.config.option("debug_nans", True):
            interpreted = fnx.tree_util.tree_leaves(fnx.jit(fn)(*args))
        assert len(got) == len(want) == len(interpreted)
        for g, w, i in zip(got, want, interpreted):
            _bits_equal(g, w)
            _bits_equal(g, i)


def test_a_nan_inside_a_jitted_loop_names_the_users_line():
    def body(i, c):
        return jnp.log(c - 2.0)      # NaN once c < 2
    with fnx.config.option("debug_nans", True):
        with pytest.raises(fnx.debug.NaNError, match="'log'") as e:
            fnx.jit(lambda x: lax.fori_loop(0, 4, body, x))(jnp.full(3, 9.0))
    assert "test_cpu_executable.py" in str(e.value) and "(body)" in str(e.value)


def test_out_of_memory_inside_a_loop_names_the_step():
    def f(x):
        return lax.fori_loop(0, 2, lambda i, c: c + jnp.sum(jnp.ones((10 ** 6, 10 ** 6))), x)
    with pytest.raises(fnx.errors.OutOfMemoryError, match="broadcast_in_dim|reduce_sum"):
        fnx.jit(f)(jnp.ones(2))


def test_an_error_in_a_callback_inside_a_loop_reaches_the_user():
    def check(v):
        if v > 2:
            raise ValueError("too big")
    def body(i, c):
        fnx.debug.callback(check, c)
        return c + 1.0
    with pytest.raises(Exception, match="too big"):
        fnx.jit(lambda x: lax.fori_loop(0, 5, body, x))(jnp.float32(0.0))

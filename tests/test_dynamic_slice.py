"""lax.dynamic_slice, dynamic_update_slice and their in_dim forms: values against a NumPy
reference of XLA's start semantics (negative starts count from the end, then clamp so the
slice fits), with starts concrete and traced, under jit, grad, jvp and vmap, and the errors."""
import os

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax
from fnx.core.errors import DTypeError, ShapeError
from fnx.test_util import check_grads

HERE = os.path.basename(__file__)


def reference_starts(shape, starts, sizes):
    out = []
    for s, n, z in zip(starts, shape, sizes):
        s = s + n if s < 0 else s
        out.append(min(max(s, 0), n - z))
    return out


def reference_slice(x, starts, sizes):
    starts = reference_starts(x.shape, starts, sizes)
    return x[tuple(slice(s, s + z) for s, z in zip(starts, sizes))]


def reference_update(x, u, starts):
    starts = reference_starts(x.shape, starts, u.shape)
    out = np.array(x, np.float64)
    out[tuple(slice(s, s + z) for s, z in zip(starts, u.shape))] = u
    return out


def cases(count, seed):
    """(x, u, starts): random shapes of rank 1-3, sizes from 0 to the whole axis, and starts
    from well below zero to past the end."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        shape = tuple(int(n) for n in rng.integers(1, 6, rng.integers(1, 4)))
        sizes = tuple(int(rng.integers(0, n + 1)) for n in shape)
        starts = [int(s) for s in rng.integers(-8, 8, len(shape))]
        yield rng.standard_normal(shape), rng.standard_normal(sizes), starts


@pytest.mark.parametrize("x,u,starts", list(cases(40, seed=0)))
def test_values_with_starts_concrete_traced_and_in_an_array(x, u, starts):
    expected = reference_slice(x, starts, u.shape)
    traced = np.array(starts, np.int32)
    np.testing.assert_allclose(lax.dynamic_slice(x, starts, u.shape), expected)
    np.testing.assert_allclose(fnx.jit(lambda a, s: lax.dynamic_slice(
        a, [s[i] for i in range(len(starts))], u.shape))(x, traced), expected)
    np.testing.assert_allclose(fnx.jit(lambda a, s: lax.dynamic_slice(a, s, u.shape))(
        x, traced), expected)
    expected = reference_update(x, u, starts)
    np.testing.assert_allclose(lax.dynamic_update_slice(x, u, starts), expected)
    np.testing.assert_allclose(fnx.jit(lax.dynamic_update_slice)(x, u, traced), expected)


@pytest.mark.parametrize("x,u,starts", list(cases(6, seed=1)))
def test_derivatives_against_finite_differences(x, u, starts):
    traced = np.array(starts, np.int32)
    check_grads(lambda a: lax.dynamic_slice(a, traced, u.shape) ** 2, (x,), order=2)
    check_grads(lambda a, b: lax.dynamic_update_slice(a, b, traced) ** 3, (x, u), order=1)


def test_vmap_over_operand_update_and_starts():
    rng = np.random.default_rng(2)
    x, u = rng.standard_normal((3, 5, 4)), rng.standard_normal((3, 2, 3))
    starts = np.array([[-1, 0], [4, 3], [1, -9]], np.int32)
    got = fnx.vmap(lambda a, s: lax.dynamic_slice(a, s, (2, 3)))(x, starts)
    np.testing.assert_allclose(got, [reference_slice(a, s, (2, 3)) for a, s in zip(x, starts)])
    got = fnx.vmap(lax.dynamic_update_slice)(x, u, starts)
    np.testing.assert_allclose(got, [reference_update(a, b, s)
                                     for a, b, s in zip(x, u, starts)])
    got = fnx.vmap(lax.dynamic_update_slice, in_axes=(None, 0, None))(x[0], u, starts[0])
    np.testing.assert_allclose(got, [reference_update(x[0], b, starts[0]) for b in u])
    grads = fnx.vmap(fnx.grad(lambda a, s: jnp.sum(lax.dynamic_slice(a, s, (2, 3)) * a[0, 0])))(
        x, starts)
    for g, a, s in zip(np.asarray(grads), x, starts):
        expected = np.zeros_like(a)
        r, c = reference_starts(a.shape, s, (2, 3))
        expected[r:r + 2, c:c + 3] = a[0, 0]
        expected[0, 0] += reference_slice(a, s, (2, 3)).sum()
        np.testing.assert_allclose(g, expected)


def test_in_dim_forms():
    x = np.random.default_rng(3).standard_normal((4, 6))
    i = np.int32(-2)
    np.testing.assert_allclose(lax.dynamic_slice_in_dim(x, i, 3, axis=1), x[:, 3:6])
    np.testing.assert_allclose(fnx.jit(lambda a, j: lax.dynamic_index_in_dim(a, j, 1, False))(
        x, i), x[:, 4])
    np.testing.assert_allclose(lax.dynamic_index_in_dim(x, 1), x[1:2])
    row = np.arange(6.0)
    expected = x.copy()
    expected[2] = row
    np.testing.assert_allclose(fnx.jit(lambda a, j: lax.dynamic_update_index_in_dim(
        a, row, j, 0))(x, np.int32(2)), expected)
    expected = x.copy()
    expected[:, 4:6] = 1.0
    np.testing.assert_allclose(lax.dynamic_update_slice_in_dim(x, np.ones((4, 2)), 5, axis=1),
                               expected)


def test_scan_writes_one_row_per_step():
    """The common use: a loop filling a buffer at the step's index."""
    def fill(xs):
        def step(buf, i):
            return lax.dynamic_update_index_in_dim(buf, xs[i] * 2.0, i, 0), None
        return lax.scan(step, jnp.zeros_like(xs), jnp.arange(xs.shape[0]))[0]

    xs = np.random.default_rng(4).standard_normal((5, 3))
    np.testing.assert_allclose(fnx.jit(fill)(xs), xs * 2.0)
    np.testing.assert_allclose(fnx.grad(lambda a: jnp.sum(fill(a) ** 2))(xs), 8.0 * xs)


@pytest.mark.parametrize("call,error,words", [
    (lambda x: lax.dynamic_slice(x, (0,), (2,)), ShapeError, ("(3, 4) takes 2 start", "got 1")),
    (lambda x: lax.dynamic_slice(x, (0, 0), (2, 7)), ShapeError, ("(2, 7) do not fit", "(3, 4)")),
    (lambda x: lax.dynamic_slice(x, (0, 0.5), (2, 2)), DTypeError,
     ("integer scalars, got float", "of shape ()")),
    (lambda x: lax.dynamic_update_slice(x, np.ones(2), (0, 0)), ShapeError,
     ("update of shape (2,)", "operand's (3, 4)")),
    (lambda x: lax.dynamic_update_slice(x, np.ones((2, 2), np.float32), (0, 0)), DTypeError,
     ("float32 differs", "float64")),
])
def test_errors_name_shapes_dtypes_and_the_callers_line(call, error, words):
    x = np.zeros((3, 4))
    with pytest.raises(error) as excinfo:
        call(x)
    message = str(excinfo.value)
    assert all(w in message for w in words), message
    assert f"{HERE}:" in message, message      # the line of the call, in this file


@pytest.mark.cuda
def test_on_the_gpu_eager_jitted_and_differentiated(gpu):
    rng = np.random.default_rng(5)
    x, u = rng.standard_normal((6, 5)), rng.standard_normal((2, 3))
    starts = np.array([-1, 3], np.int32)
    xs, us, ss = (fnx.device_put(a, gpu) for a in (x.astype(np.float32),
                                                    u.astype(np.float32), starts))

    def loss(a, b, s):
        return jnp.sum(lax.dynamic_update_slice(a, b * lax.dynamic_slice(a, s, (2, 3)), s) ** 2)

    def reference_loss(a, b):
        return np.sum(reference_update(a, b * reference_slice(a, starts, (2, 3)), starts) ** 2)

    np.testing.assert_allclose(np.asarray(lax.dynamic_slice(xs, ss, (2, 3))),
                               reference_slice(x, starts, (2, 3)), rtol=1e-6)
    np.testing.assert_allclose(float(fnx.jit(loss)(xs, us, ss)), reference_loss(x, u),
                               rtol=1e-5)
    grads = fnx.jit(fnx.grad(loss, (0, 1)))(xs, us, ss)
    assert all(g._backend is gpu for g in grads)
    eps = 1e-6
    for g, which in zip(grads, (0, 1)):
        arg = (x, u)[which]
        numeric = np.zeros_like(arg)
        for index in np.ndindex(arg.shape):
            step = np.zeros_like(arg)
            step[index] = eps
            args = [x, u]
            args[which] = arg + step
            up = reference_loss(*args)
            args[which] = arg - step
            numeric[index] = (up - reference_loss(*args)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g), numeric, rtol=1e-4, atol=1e-4)

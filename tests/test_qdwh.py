"""fnx.lax.linalg.qdwh against jax.lax.linalg.qdwh on the CPU: the factors, the number of steps
and the convergence flag for a table of shapes, dtypes and options with fresh random matrices;
forward-mode derivatives; reverse mode refused as JAX refuses it; jit and vmap."""
import numpy as np
import pytest

import fnx

jax = pytest.importorskip("jax")
from jax.lax.linalg import qdwh as jax_qdwh  # noqa: E402

qdwh = fnx.lax.linalg.qdwh

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

# (shape, dtype, keyword arguments, tolerance on u and h)
CASES = {
    "tall-f32": ((7, 4), np.float32, {}, 2e-5),
    "square-f64": ((6, 6), np.float64, {}, 1e-12),
    "tall-f64": ((30, 20), np.float64, {}, 1e-12),
    "complex64": ((5, 4), np.complex64, {}, 2e-5),
    "complex128": ((5, 5), np.complex128, {}, 1e-12),
    "few-steps": ((8, 5), np.float64, {"max_iterations": 2}, 1e-12),
    "loose-eps": ((6, 4), np.float64, {"eps": 1e-3}, 1e-12),
    "padded": ((7, 5), np.float64, {"dynamic_shape": (5, 4)}, 1e-12),
    "hermitian": ((4, 4), np.float64, {"is_hermitian": True}, 1e-12),
}


def _matrix(rng, shape, dtype, dynamic_shape=None):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    if dynamic_shape is not None:
        x[dynamic_shape[0]:] = 0
        x[:, dynamic_shape[1]:] = 0
    return x.astype(dtype)


@pytest.mark.parametrize("case", CASES)
def test_matches_jax(case, rng):
    shape, dtype, kwargs, tol = CASES[case]
    x = _matrix(rng, shape, dtype, kwargs.get("dynamic_shape"))
    if kwargs.get("is_hermitian"):
        x = x + x.T
    ours, theirs = qdwh(x, **kwargs), jax_qdwh(x, **kwargs)
    for o, t in zip(ours, theirs):
        assert (o.shape, o.dtype, o.weak_type) == (t.shape, t.dtype, t.weak_type)
    u, h = np.asarray(ours[0]), np.asarray(ours[1])
    np.testing.assert_allclose(u, np.asarray(theirs[0]), atol=tol)
    np.testing.assert_allclose(h, np.asarray(theirs[1]), atol=tol * np.abs(x).max())
    assert int(ours[2]) == int(theirs[2]) and bool(ours[3]) == bool(theirs[3])
    if bool(ours[3]):
        np.testing.assert_allclose(u @ h, x, atol=tol * np.abs(x).max())


def test_forward_derivative_matches_jax(rng):
    x, direction = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    _, ours = fnx.jvp(lambda x: qdwh(x)[:2], (x,), (direction,))
    _, theirs = jax.jvp(lambda x: jax_qdwh(x)[:2], (x,), (direction,))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), atol=1e-11)


def test_reverse_mode_is_refused_as_in_jax(rng):
    x = rng.standard_normal((5, 3))
    with pytest.raises(ValueError, match="Reverse-mode"):
        jax.grad(lambda x: jax_qdwh(x)[0].sum())(x)
    with pytest.raises(fnx.lax.ReverseModeWhileLoopError):
        fnx.grad(lambda x: qdwh(x)[0].sum())(x)


def test_jit_and_vmap(rng):
    xs = rng.standard_normal((3, 5, 4))
    ours = fnx.jit(fnx.vmap(qdwh))(xs)
    theirs = jax.vmap(jax_qdwh)(xs)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), atol=1e-12)


@pytest.mark.parametrize("x, error", [
    (np.ones((3, 5)), ValueError),                 # wide
    (np.ones((2, 4, 3)), fnx.errors.ShapeError),   # a stack: JAX takes one matrix
    (np.eye(3, dtype=np.int32), TypeError),        # integers
])
def test_bad_input(x, error):
    with pytest.raises(error):
        qdwh(x)

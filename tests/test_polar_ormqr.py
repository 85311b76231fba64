"""fnx.scipy.linalg.polar (both methods) and fnx.lax.linalg.ormqr against JAX on the CPU, with
fresh random matrices: values, dtypes and shapes for a table of sides, shapes and dtypes;
jit and vmap; the errors JAX raises."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.scipy.linalg import polar

jax = pytest.importorskip("jax")
import jax.scipy.linalg as jsl  # noqa: E402
from jax.lax.linalg import ormqr as jax_ormqr  # noqa: E402

ormqr = fnx.lax.linalg.ormqr

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

_TOL = {np.float32: 2e-5, np.complex64: 2e-5, np.float64: 1e-12, np.complex128: 1e-12}


def _matrix(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _close(got, want, tol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                   want.shape, want.dtype)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


# (shape, side, method, dtype); the shapes QDWH does not reach are checked against JAX's SVD
POLAR_CASES = {
    "qdwh-tall-right": ((6, 4), "right", "qdwh", np.float32),
    "qdwh-square-right-f64": ((5, 5), "right", "qdwh", np.float64),
    "qdwh-wide-left": ((3, 5), "left", "qdwh", np.float64),
    "qdwh-batched": ((2, 3, 4, 4), "right", "qdwh", np.float32),
    "qdwh-complex": ((5, 4), "right", "qdwh", np.complex64),
    "qdwh-complex-left": ((3, 4), "left", "qdwh", np.complex128),
    "qdwh-square-left": ((4, 4), "left", "qdwh", np.float64),
    "qdwh-wide-right": ((3, 5), "right", "qdwh", np.float64),
    "svd-tall-left": ((6, 3), "left", "svd", np.float32),
    "svd-wide-right": ((3, 6), "right", "svd", np.float64),
    "svd-complex-left": ((4, 5), "left", "svd", np.complex64),
    "svd-batched-complex": ((2, 4, 3), "right", "svd", np.complex128),
}


@pytest.mark.parametrize("case", POLAR_CASES)
def test_polar_matches_jax(rng, case):
    shape, side, method, dtype = POLAR_CASES[case]
    a = _matrix(rng, shape, dtype)
    u, p = polar(a, side, method=method)
    try:
        want = jsl.polar(a, side, method=method)
    except NotImplementedError:    # JAX's QDWH refuses this shape; fnx computes it by the SVD
        want = jsl.polar(a, side, method="svd")
    _close(u, want[0], _TOL[dtype])
    _close(p, want[1], _TOL[dtype])
    again = (u @ p) if side == "right" else (p @ u)
    _close(again, a, _TOL[dtype])


def test_polar_qdwh_options_jit_and_vmap(rng):
    a = _matrix(rng, (3, 5, 4), np.float64)
    # JAX's polar cannot take eps (it reaches qdwh traced) and drops max_iterations: fnx
    # hands both to qdwh, so its factors are qdwh's
    for kw in ({"eps": 1e-4}, {"max_iterations": 1}):
        want = jax.lax.linalg.qdwh(a[0], **kw)
        got = polar(a[0], **kw)
        _close(got[0], want[0], 1e-12)
        _close(got[1], want[1], 1e-12)
    jitted = fnx.jit(lambda x: polar(x, "right"))(a)
    mapped = fnx.vmap(lambda x: polar(x, "right"))(a)
    want = jsl.polar(a, "right")
    for got in (jitted, mapped):
        _close(got[0], want[0], 1e-12)
        _close(got[1], want[1], 1e-12)


@pytest.mark.parametrize("a, kw, error", [
    (np.ones(3), {}, ValueError),
    (np.ones((3, 3)), {"side": "up"}, ValueError),
    (np.ones((3, 3)), {"method": "newton"}, ValueError),
    (np.ones((3, 3), np.int32), {}, ValueError),
])
def test_polar_errors(a, kw, error):
    with pytest.raises(error):
        polar(a, **kw)
    with pytest.raises(error):
        jsl.polar(a, **kw)


# (batch, m, n, k, left, transpose, dtype)
ORMQR_CASES = {
    "left": ((), 5, 3, 3, True, False, np.float32),
    "left-transpose": ((), 5, 3, 2, True, True, np.float64),
    "right": ((), 4, 4, 4, False, False, np.float64),
    "right-transpose": ((), 6, 2, 2, False, True, np.float32),
    "complex-left-transpose": ((), 5, 3, 3, True, True, np.complex128),
    "complex-right-transpose": ((), 4, 3, 3, False, True, np.complex64),
    "batched-left": ((2,), 5, 4, 4, True, False, np.float64),
    "batched-complex-right": ((3,), 4, 4, 3, False, False, np.complex128),
}


@pytest.mark.parametrize("case", ORMQR_CASES)
def test_ormqr_matches_jax(rng, case):
    batch, m, n, k, left, transpose, dtype = ORMQR_CASES[case]
    a = _matrix(rng, batch + (m, n), dtype)
    # taus in (0, 2) give reflectors near unitary, so the product's rounding stays small
    taus = (rng.uniform(0.2, 1.8, batch + (k,))).astype(dtype)
    c = _matrix(rng, batch + ((m, 3) if left else (2, m)), dtype)
    got = ormqr(a, taus, c, left=left, transpose=transpose)
    _close(got, jax_ormqr(a, taus, c, left=left, transpose=transpose), 20 * _TOL[dtype])
    mapped = fnx.vmap(lambda c: ormqr(a, taus, c, left=left, transpose=transpose))(
        np.stack([c, 2 * c]))
    _close(mapped[1], 2 * np.asarray(got), 40 * _TOL[dtype])


def test_ormqr_applies_q_of_a_qr(rng):
    a = _matrix(rng, (6, 4), np.float64)
    h, taus = jax.numpy.linalg.qr(a, mode="raw")
    q = np.asarray(jax.numpy.linalg.qr(a, mode="complete")[0])
    c = _matrix(rng, (6, 2), np.float64)
    h = np.asarray(h).T
    _close(ormqr(h, taus, c), q @ c, 1e-12)
    _close(ormqr(h, taus, c, transpose=True), q.T @ c, 1e-12)
    # a derivative in c: the map is linear, so its vjp applies Q^T
    ct = _matrix(rng, (6, 2), np.float64)
    _, vjp = fnx.vjp(lambda c: ormqr(h, taus, c), jnp.asarray(c))
    _close(vjp(jnp.asarray(ct))[0], q.T @ ct, 1e-12)


@pytest.mark.parametrize("shapes, left", [
    (((5, 3), (3,), (4, 2)), True),          # c's rows are not a's
    (((5, 3), (3,), (2, 4)), False),         # c's columns are not a's rows
    (((5, 3), (4,), (5, 2)), True),          # more reflectors than columns
])
def test_ormqr_shape_errors(shapes, left):
    a, taus, c = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError):
        ormqr(a, taus, c, left=left)

"""Index forms JAX programs use, against JAX on the CPU: Ellipsis beside integer arrays,
None, boolean masks (concrete), sequences inside an index, and ``.at[...]`` updates with them."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

INDEXERS = {
    "int_array_then_ellipsis": lambda i, m: (i, ...),
    "slice_int_array_ellipsis": lambda i, m: (slice(1, None), i[:2], ...),
    "int_array_ellipsis_int_array": lambda i, m: (i, ..., i),
    "int_array_none_ellipsis": lambda i, m: (i, None, ...),
    "int_array_ellipsis_none": lambda i, m: (i, ..., None),
    "ellipsis_none": lambda i, m: (..., None),
    "none_int_array_slice_int_array": lambda i, m: (None, i, slice(None), i),
    "two_d_int_array_ellipsis": lambda i, m: (i.reshape(3, 1), ...),
    "int_array_slice_none_int": lambda i, m: (i, slice(1, 3), None, -1),
    "list_ellipsis": lambda i, m: ([0, 2], ...),
    "tuple_inside_index": lambda i, m: ((0, 2),),
    "mask_ellipsis": lambda i, m: (m, ...),
    "ellipsis_mask_slice": lambda i, m: (..., np.array([True, False, True, False]), slice(None)),
    "mask": lambda i, m: m,
    "negative_step_and_int_array": lambda i, m: (i, slice(None, None, -1)),
}


def _args():
    rng = np.random.default_rng()
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    i = rng.integers(-3, 3, size=3).astype(np.int32)
    m = rng.random(3) > 0.4
    return x, i, m


@pytest.mark.parametrize("name", INDEXERS)
def test_getitem_matches_jax(name):
    x, i, m = _args()
    idx = INDEXERS[name](i, m)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[idx]), np.asarray(jjnp.asarray(x)[idx]))
    if "mask" not in name:         # masks need concrete values (JAX's rule too)
        f = fnx.jit(lambda x, i: x[INDEXERS[name](i, m)])
        np.testing.assert_array_equal(np.asarray(f(x, i)), np.asarray(jjnp.asarray(x)[idx]))


@pytest.mark.parametrize("name", INDEXERS)
@pytest.mark.parametrize("method", ["set", "add", "multiply", "divide", "power", "min", "get"])
def test_at_updates_match_jax(name, method):
    x, i, m = _args()
    idx = INDEXERS[name](i, m)
    args = () if method == "get" else (2.5,)
    mine = getattr(jnp.asarray(x).at[idx], method)(*args)
    theirs = getattr(jjnp.asarray(x).at[idx], method)(*args)
    # NumPy's and XLA's pow may differ in the last bit
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs),
                               rtol=1e-6 if method == "power" else 0)


def test_gradient_through_ellipsis_gather():
    x, i, _ = _args()
    g = fnx.grad(lambda x: jnp.sum(x[i, ..., None] ** 2))(x)
    gj = jax.grad(lambda x: jjnp.sum(x[i, ..., None] ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-6)

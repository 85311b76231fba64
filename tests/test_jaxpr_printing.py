"""make_jaxpr prints what JAX prints for programs whose lowering fnx shares with JAX: the same
programs traced by both, the texts compared (JAX on its CPU backend as the oracle)."""
import os

import numpy as np
import pytest

import fnx
import fnx.numpy as fnp

pytestmark = pytest.mark.x32


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    return pytest.importorskip("jax")


def _programs(np_, lax, jit):
    """The same programs written against one library's numpy, lax and jit."""

    def inner_jit(x):
        @jit
        def inner(y):
            return y + x * np_.ones(2)
        return x + inner(x - 2.0)

    def scanned(xs, c):
        def body(carry, pair):
            a, b = pair
            return carry + a * b + c, carry
        return lax.scan(body, 0.0, (xs, np_.ones(xs.shape)))

    return {
        "reduce_and_products": (lambda m, v: np_.sum(np_.dot(m + 1, v) + m @ v + v @ v),
                                [np.ones((3, 4), np.float32), np.ones(4, np.float32)]),
        "nested_jit_names": (inner_jit, [np.float32(1.5)]),
        "scan": (scanned, [np.ones(5, np.float32), np.float32(2.0)]),
        "slices": (lambda x: x[1:3] * x[::2].sum(), [np.arange(6, dtype=np.float32)]),
        "array_of_traced": (lambda *xs: np_.sum(np_.array(xs)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        "array_of_vectors": (lambda a, b: np_.array([a, b]),
                             [np.ones(3, np.float32), np.ones(3, np.float32)]),
        "constants_staged": (lambda x: np_.log(x) / np_.log(2.0), [np.float32(3.0)]),
        "many_variables": (lambda x: sum(np_.sin(x) * i for i in range(20)), [np.float32(1.0)]),
        "long_operand_list": (lambda *xs: np_.concatenate(xs), [np.ones(1, np.float32)] * 16),
        "vector_matmul": (lambda m, v: (v @ m, m @ v),
                          [np.ones((4, 4), np.float32), np.ones(4, np.float32)]),
    }


@pytest.mark.parametrize("name", list(_programs(fnp, fnx.lax, fnx.jit)))
def test_jaxpr_text_matches_jax(jax, name):
    ours, args = _programs(fnp, fnx.lax, fnx.jit)[name]
    theirs, _ = _programs(jax.numpy, jax.lax, jax.jit)[name]
    with jax.enable_x64(False):
        expected = str(jax.make_jaxpr(theirs)(*args))
    assert str(fnx.make_jaxpr(ours)(*args)) == expected


def test_jaxpr_text_of_a_traced_switch_index_is_clamped(jax):
    # the index is clamped into range before cond, whichever primitives do it
    text = str(fnx.make_jaxpr(lambda i, x: fnx.lax.switch(i, [fnp.sin, fnp.cos], x))(1, 2.0))
    assert "cond[" in text and "branches=" in text
    assert fnx.lax.switch(5, [fnp.sin, fnp.cos], 0.0) == 1.0


@pytest.mark.parametrize("shapes", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)),
                                    ((2, 3, 4), (4,)), ((4,), (2, 4, 5)), ((3, 4), (4, 5))])
def test_products_contracting_vectors_directly(shapes):
    # the one-contraction forms of matmul (no reshape to matrices): values and derivatives
    from fnx.test_util import check_grads
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s) for s in shapes)
    with fnx.enable_x64():
        np.testing.assert_allclose(np.asarray(fnp.matmul(a, b)), np.matmul(a, b), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(fnp.dot(a, b)) if len(shapes[1]) < 3
                                   else np.asarray(fnp.matmul(a, b)), np.matmul(a, b),
                                   rtol=1e-12)
        check_grads(fnp.matmul, (a, b), order=2)
        batched = fnx.vmap(fnp.matmul, in_axes=(None, 0))(a, np.stack([b, 2 * b]))
        np.testing.assert_allclose(np.asarray(batched), np.stack([a @ b, a @ (2 * b)]),
                                   rtol=1e-12)


def test_array_of_traced_values_converts_to_the_common_dtype():
    out = fnx.jit(lambda a, b: fnp.array([a, b]))(np.float32(1.5), 2)
    assert out.dtype == np.float32 and not out.weak_type
    np.testing.assert_array_equal(np.asarray(out), [1.5, 2.0])
    with pytest.raises(Exception):
        fnx.jit(lambda a, b: fnp.array([a, b]))(np.ones(2), np.ones(3))

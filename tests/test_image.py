"""fnx.image (resize, scale_and_translate) against jax.image on the CPU: every method, up- and
downsampling with and without antialiasing, gradients, and the dtype of integer images."""
import numpy as np
import pytest

import fnx

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.x32
METHODS = ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"]


@pytest.mark.parametrize("method", METHODS)
def test_resize_matches_jax(method, rng, jax_x64_as_fnx):
    x = rng.standard_normal((2, 7, 5, 3)).astype(np.float32)
    for shape in [(2, 13, 4, 3), (2, 3, 9, 3), (2, 7, 5, 3)]:
        for antialias in (True, False):
            if method == "cubic-pytorch" and antialias:
                with pytest.raises(ValueError, match="antialias"):
                    fnx.image.resize(x, shape, method)
                continue
            got = fnx.image.resize(x, shape, method, antialias=antialias)
            want = jax.image.resize(x, shape, method, antialias=antialias)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_scale_and_translate_and_gradients_match_jax(rng, jax_x64_as_fnx):
    x = rng.standard_normal((2, 7, 5, 3)).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, 2).astype(np.float32)
    shift = rng.uniform(-1.0, 1.0, 2).astype(np.float32)
    for method in ("linear", fnx.image.ResizeMethod.LANCZOS3):
        jmethod = method if isinstance(method, str) else jax.image.ResizeMethod.LANCZOS3
        got = fnx.image.scale_and_translate(x, (2, 10, 6, 3), (1, 2), scale, shift, method)
        want = jax.image.scale_and_translate(x, (2, 10, 6, 3), (1, 2), scale, shift, jmethod)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    g = fnx.grad(lambda x: (fnx.image.resize(x, (2, 3, 9, 3), "cubic") ** 2).sum())(x)
    h = jax.grad(lambda x: (jax.image.resize(x, (2, 3, 9, 3), "cubic") ** 2).sum())(x)
    np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-5)


def test_resize_of_integers_and_its_errors(jax_x64_as_fnx):
    ints = np.arange(4)
    np.testing.assert_array_equal(fnx.image.resize(ints, (7,), "nearest"),
                                  jax.image.resize(ints, (7,), "nearest"))
    assert fnx.image.resize(ints, (7,), "linear").dtype == np.float32
    with pytest.raises(ValueError, match="Unknown resize method"):
        fnx.image.resize(ints, (7,), "bogus")
    with pytest.raises(ValueError, match="shape must have length"):
        fnx.image.resize(ints, (7, 2), "linear")
    with pytest.raises(ValueError, match="Nearest neighbor"):
        fnx.image.scale_and_translate(ints, (7,), (0,), [2.0], [0.0], "nearest")

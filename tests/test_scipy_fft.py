"""fnx.scipy.fft's discrete cosine transforms against JAX (type 2, its only one) and SciPy
(types 1, 3, 4 and the "forward" norm), and under grad, jit and vmap."""
import numpy as np
import pytest
import scipy.fft as sfft

import fnx
from fnx.scipy import fft

jax = pytest.importorskip("jax")
import jax.scipy.fft as jfft  # noqa: E402

NORMS = [None, "backward", "ortho"]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["dct", "idct"])
def test_dct_matches_jax(name, norm, rng, jax_x64_as_fnx):
    x = rng.standard_normal((4, 7))
    for n, axis in [(None, -1), (5, 0), (9, 1)]:
        got = getattr(fft, name)(x, n=n, axis=axis, norm=norm)
        want = getattr(jfft, name)(x, n=n, axis=axis, norm=norm)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["dctn", "idctn"])
def test_dctn_matches_jax(name, norm, rng, jax_x64_as_fnx):
    x = rng.standard_normal((3, 4, 5))
    for s, axes in [(None, None), ([6], None), ([2, 6], (0, 2)), (None, (-1, 1)),
                    ([4, 3, 7], None)]:
        got = getattr(fft, name)(x, s=s, axes=axes, norm=norm)
        want = getattr(jfft, name)(x, s=s, axes=axes, norm=norm)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("type", [1, 2, 3, 4])
@pytest.mark.parametrize("norm", NORMS + ["forward"])
def test_every_type_matches_scipy(type, norm, rng):
    x = rng.standard_normal((5, 6))
    for ours, theirs, kw in [(fft.dct, sfft.dct, dict(n=8, axis=0)),
                             (fft.idct, sfft.idct, dict(n=4, axis=1)),
                             (fft.dctn, sfft.dctn, dict(s=[3, 7])),
                             (fft.idctn, sfft.idctn, dict(axes=(1, 0)))]:
        np.testing.assert_allclose(ours(x, type=type, norm=norm, **kw),
                                   theirs(x, type=type, norm=norm, **kw), rtol=1e-10,
                                   atol=1e-10)
        round_trip = {fft.dct: fft.idct, fft.dctn: fft.idctn}.get(ours)
        if round_trip is not None:
            np.testing.assert_allclose(round_trip(ours(x, type=type, norm=norm),
                                                  type=type, norm=norm), x, atol=1e-10)


def test_complex_input_transforms_both_parts(rng):
    x = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    np.testing.assert_allclose(fft.dct(x, type=3), sfft.dct(x, type=3), atol=1e-10)


@pytest.mark.parametrize("norm", NORMS)
def test_gradient_matches_jax(norm, rng, jax_x64_as_fnx):
    x, w = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))

    def loss(lib, mod):
        return lambda x: lib.numpy.sum(lib.numpy.sin(mod.dctn(x, norm=norm)) * w
                                       + mod.idct(x, axis=0, norm=norm) ** 2)
    np.testing.assert_allclose(fnx.grad(loss(fnx, fft))(x), jax.grad(loss(jax, jfft))(x),
                               rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("type", [1, 3, 4])
def test_other_types_differentiate(type, rng):
    from fnx.test_util import check_grads
    x = rng.standard_normal((4, 5))
    check_grads(lambda x: fft.dctn(x, type=type, norm="ortho") ** 2, (x,), order=2)


def test_jit_and_vmap_agree_with_eager(rng):
    x = rng.standard_normal((4, 8))
    eager = fft.dct(x, type=4)
    np.testing.assert_allclose(fnx.jit(lambda x: fft.dct(x, type=4))(x), eager, atol=1e-12)
    np.testing.assert_allclose(fnx.vmap(lambda r: fft.dct(r, type=4))(x), eager, atol=1e-12)
    np.testing.assert_allclose(fnx.vmap(lambda c: fft.idct(c, n=6), in_axes=1, out_axes=1)(x),
                               fft.idct(x, n=6, axis=0), atol=1e-12)


@pytest.mark.x32
def test_float32_by_default(jax_x64_as_fnx):
    x = np.arange(5.0)
    assert fft.dct(x).dtype == jfft.dct(x).dtype == np.float32
    assert fft.idctn(np.arange(6).reshape(2, 3)).dtype == np.float32


def test_bad_arguments():
    with pytest.raises(ValueError, match="type must be"):
        fft.dct(np.ones(3), type=5)
    with pytest.raises(ValueError, match="norm"):
        fft.dct(np.ones(3), norm="bad")
    with pytest.raises(ValueError, match="at least 2"):
        fft.dct(np.ones(1), type=1)
    with pytest.raises(ValueError, match="same length"):
        fft.dctn(np.ones((3, 3)), s=[2, 2], axes=[0])

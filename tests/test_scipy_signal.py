"""fnx.scipy.signal against jax.scipy.signal on the CPU, with fresh random inputs."""
import numpy as np
import pytest

import fnx
from fnx.scipy import signal

jax = pytest.importorskip("jax")
import jax.scipy.signal as jsignal  # noqa: E402

rng = np.random.default_rng()


pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

SHAPES = [((7,), (3,)), ((3,), (7,)), ((9, 8), (3, 4)), ((4, 5), (6, 7)),
          ((5, 4, 3), (2, 3, 2))]


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_jax(name, mode, shapes):
    a, b = (rng.standard_normal(s) for s in shapes)
    got = getattr(signal, name)(a, b, mode)
    want = getattr(jsignal, name)(a, b, mode)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
def test_2d_forms_and_their_gradient(name):
    for sa, sb in [((6, 5), (3, 2)), ((3, 2), (6, 5)), ((4, 4), (4, 4)), ((3, 5), (4, 5))]:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        for mode in ("full", "same", "valid"):
            np.testing.assert_allclose(np.asarray(getattr(signal, name)(a, b, mode)),
                                       np.asarray(getattr(jsignal, name)(a, b, mode)),
                                       rtol=1e-10, atol=1e-12)
    a, b = rng.standard_normal((6, 5)), rng.standard_normal((3, 2))
    loss = lambda lib, mod: lambda x: (getattr(mod, name)(x, b, "same") ** 2).sum()  # noqa
    np.testing.assert_allclose(np.asarray(fnx.grad(loss(fnx, signal))(a)),
                               np.asarray(jax.grad(loss(jax, jsignal))(a)), rtol=1e-9)


def test_errors():
    with pytest.raises(ValueError, match="smaller than the other"):
        signal.convolve(np.ones((3, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="mode"):
        signal.convolve(np.ones(3), np.ones(2), mode="circular")
    with pytest.raises(ValueError, match="same number of dimensions"):
        signal.convolve(np.ones((3, 3)), np.ones(2))

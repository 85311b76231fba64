"""fnx.scipy.signal against jax.scipy.signal on the CPU, with fresh random inputs."""
import warnings

import numpy as np
import pytest

import fnx
from fnx.test_util import check_grads
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


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", SHAPES[:4], ids=str)
def test_fftconvolve_matches_jax(mode, shapes):
    a, b = (rng.standard_normal(s) for s in shapes)
    got, want = signal.fftconvolve(a, b, mode), jsignal.fftconvolve(a, b, mode)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-10)


def test_fftconvolve_over_axes_and_complex():
    a, b = rng.standard_normal((4, 9, 5)), rng.standard_normal((4, 3, 5))
    np.testing.assert_allclose(np.asarray(signal.fftconvolve(a, b, "same", axes=1)),
                               np.asarray(jsignal.fftconvolve(a, b, "same", axes=1)), rtol=1e-9)
    c = rng.standard_normal(7) + 1j * rng.standard_normal(7)
    np.testing.assert_allclose(np.asarray(signal.convolve(c, a[0, :, 0], method="fft")),
                               np.asarray(jsignal.convolve(c, a[0, :, 0], method="fft")),
                               rtol=1e-9)


def test_detrend_matches_scipy_and_has_gradients():
    scipy_signal = pytest.importorskip("scipy.signal")
    x = rng.standard_normal((3, 40))
    for kw in [{}, {"type": "constant"}, {"bp": [9, 25]}, {"axis": 0, "bp": 2}]:
        np.testing.assert_allclose(np.asarray(signal.detrend(x, **kw)),
                                   scipy_signal.detrend(x, **kw), rtol=1e-9, atol=1e-12)
    check_grads(lambda x: signal.detrend(x, bp=[20]) ** 3, (x[0],), order=1)


WELCH_KW = [dict(nperseg=16), dict(nperseg=16, noverlap=10, nfft=20),
            dict(nperseg=15, window="hamming", detrend="linear"),
            dict(nperseg=8, return_onesided=False),
            dict(nperseg=16, scaling="spectrum", average="median"),
            dict(window=("kaiser", 3.0), nperseg=12, fs=3.0)]


@pytest.mark.parametrize("kw", WELCH_KW, ids=str)
def test_welch_and_csd_match_jax_and_scipy(kw):
    scipy_signal = pytest.importorskip("scipy.signal")
    x, y = rng.standard_normal((3, 50)), rng.standard_normal((3, 50))
    for got, want in [(signal.welch(x, **kw), jsignal.welch(x, **kw)),
                      (signal.csd(x, y, **kw), jsignal.csd(x, y, **kw)),
                      (signal.welch(x, **kw), scipy_signal.welch(x, **kw))]:
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(nperseg=16), dict(nperseg=16, boundary="even"),
                                dict(nperseg=15, boundary="odd", padded=False),
                                dict(nperseg=16, boundary=None, window="blackman"),
                                dict(nperseg=16, boundary="constant", detrend="constant",
                                     return_onesided=False)], ids=str)
def test_stft_matches_jax_and_istft_inverts_as_scipy(kw):
    scipy_signal = pytest.importorskip("scipy.signal")
    x = rng.standard_normal((2, 50))
    got, want = signal.stft(x, **kw), jsignal.stft(x, **kw)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)
    inverse_kw = {k: v for k, v in kw.items() if k in ("nperseg", "window")}
    inverse_kw.update(input_onesided=kw.get("return_onesided", True),
                      boundary=kw.get("boundary", "zeros") is not None)
    z = np.asarray(want[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # SciPy's NOLA warning where boundary=None
        ref = scipy_signal.istft(z, **inverse_kw)
    for g, w in zip(signal.istft(z, **inverse_kw), ref):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)


def test_istft_axes_match_jax():
    z = np.swapaxes(np.asarray(jsignal.stft(rng.standard_normal((3, 40)), nperseg=8)[2]), 1, 2)
    for g, w in zip(signal.istft(z, time_axis=1, freq_axis=2),
                    jsignal.istft(z, time_axis=1, freq_axis=2)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["welch", "stft", "istft", "fftconvolve"])
def test_gradients_under_jit_match_jax(name):
    losses = {
        "welch": lambda s, x: s.welch(x, nperseg=16)[1].sum(),
        "stft": lambda s, x: (abs(s.stft(x, nperseg=16)[2]) ** 2).sum(),
        "istft": lambda s, x: (s.istft(s.stft(x, nperseg=16)[2])[1] ** 2 * np.arange(48.)).sum(),
        "fftconvolve": lambda s, x: (s.fftconvolve(x, x[:5]) ** 2).sum()}
    x = rng.standard_normal(48)
    want = jax.grad(lambda x: losses[name](jsignal, x))(x)
    got = fnx.jit(fnx.grad(lambda x: losses[name](signal, x)))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-8, atol=1e-10)


def test_welch_vmaps():
    x = rng.standard_normal((3, 40))
    got = fnx.vmap(lambda row: signal.welch(row, nperseg=8)[1])(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jsignal.welch(x, nperseg=8)[1]),
                               rtol=1e-9)


@pytest.mark.x32
def test_spectral_default_dtypes_match_jax():
    x = rng.standard_normal(40).astype(np.float32)
    with jax.enable_x64(False):
        want = jsignal.welch(x, nperseg=8) + jsignal.stft(x, nperseg=8)
    got = signal.welch(x, nperseg=8) + signal.stft(x, nperseg=8)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


WINDOWS = ["boxcar", "triang", "parzen", "bohman", "blackman", "nuttall", "blackmanharris",
           "flattop", "bartlett", "barthann", "hamming", "hann", "cosine", "lanczos", "tukey",
           "exponential", ("tukey", 0.3), ("kaiser", 4.2), 2.5, ("gaussian", 1.7),
           ("general_gaussian", 1.5, 2.0), ("general_cosine", [0.4, 0.3, 0.3]),
           ("general_hamming", 0.6), ("exponential", None, 2.5), "rect", "gss"]


def test_windows_match_scipy():
    scipy_signal = pytest.importorskip("scipy.signal")
    for window in WINDOWS:
        for n in (1, 2, 7, 16):
            for fftbins in (True, False):
                try:
                    want = scipy_signal.get_window(window, n, fftbins=fftbins)
                except ValueError:
                    with pytest.raises(ValueError):
                        signal.get_window(window, n, fftbins=fftbins)
                    continue
                np.testing.assert_allclose(signal.get_window(window, n, fftbins=fftbins), want,
                                           rtol=1e-13, atol=1e-15, err_msg=str(window))
    with pytest.raises(ValueError, match="needs one or more parameters"):
        signal.get_window("kaiser", 8)


def test_spectral_errors():
    with pytest.raises(ValueError, match="noverlap"):
        signal.welch(np.ones(32), nperseg=8, noverlap=8)
    with pytest.raises(ValueError, match="nfft"):
        signal.stft(np.ones(32), nperseg=8, nfft=4)
    with pytest.raises(ValueError, match="differing time and frequency"):
        signal.istft(np.ones((5, 4)), time_axis=0, freq_axis=0)

"""jnp.fft and lax.fft against JAX on the CPU: values, dtypes, transposes, gradients, vmap, jit."""
import functools

import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx.test_util import check_grads

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


def _x64(f):
    """Run ``f`` with JAX in 64-bit mode (float64 inputs stay float64 in both libraries)."""
    @functools.wraps(f)
    def run(*a, **k):
        with jax.enable_x64(True):
            return f(*a, **k)
    return run


def _close(a, b, atol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, atol=atol, rtol=1e-6 if atol > 1e-7 else 1e-9)


def _complex(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


LENGTHS = [(5,), (6,), (1,), (3, 4), (2, 3, 5)]   # XLA transforms at most 3 axes at once


def _operand(rng, fft_type, lengths, lead=(2,)):
    if fft_type == "rfft":
        return rng.standard_normal(lead + lengths)
    if fft_type == "irfft":
        return _complex(rng, lead + lengths[:-1] + (lengths[-1] // 2 + 1,))
    return _complex(rng, lead + lengths)


@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("lengths", LENGTHS, ids=str)
@_x64
def test_lax_fft_and_its_transpose_match_jax(fft_type, lengths):
    rng = np.random.default_rng()
    x = _operand(rng, fft_type, lengths)
    _close(lax.fft(x, fft_type, lengths), jax.lax.fft(x, fft_type, lengths))
    out = np.asarray(jax.lax.fft(x, fft_type, lengths))
    ct = _complex(rng, out.shape) if out.dtype.kind == "c" else rng.standard_normal(out.shape)
    mine = fnx.linear_transpose(lambda v: lax.fft(v, fft_type, lengths), x)(ct)[0]
    theirs = jax.linear_transpose(lambda v: jax.lax.fft(v, fft_type, lengths), x)(ct)[0]
    _close(mine, theirs)


@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
def test_single_precision_stays_single(fft_type):
    rng = np.random.default_rng()
    x = _operand(rng, fft_type, (8,)).astype(np.float32 if fft_type == "rfft" else np.complex64)
    _close(lax.fft(x, fft_type, (8,)), jax.lax.fft(x, fft_type, (8,)), atol=1e-5)
    assert lax.fft(x, lax.FftType[fft_type.upper()], (8,)).dtype == \
        jax.lax.fft(x, fft_type, (8,)).dtype


@pytest.mark.x32     # JAX's default dtypes (x64 off), here and in JAX
def test_real_input_to_a_complex_fft_is_converted():
    x = np.arange(4.0, dtype=np.float32)
    _close(jnp.fft.fft(x), jjnp.fft.fft(x), atol=1e-6)
    _close(jnp.fft.fft(np.arange(4)), jjnp.fft.fft(np.arange(4)), atol=1e-6)
    with pytest.raises(ValueError):
        lax.fft(_complex(np.random.default_rng(0), (4,)), "rfft", (4,))


def _loss_through_every_kind(x, w, mod):
    """real -> real through RFFT, FFT, IFFT and IRFFT (with a complex weight in between)."""
    y = mod.fft.rfft(x) * w
    z = mod.fft.ifft(mod.fft.fft(y, axis=0), axis=0)
    return mod.fft.irfft(z, n=x.shape[-1]) ** 2 + mod.fft.hfft(z, n=x.shape[-1])


def test_gradients_match_jax_and_finite_differences():
    rng = np.random.default_rng()
    x = rng.standard_normal((3, 7)).astype(np.float32)
    w = _complex(rng, (3, 4), np.complex64)
    check_grads(lambda v: _loss_through_every_kind(v, w, jnp), [x], order=2, atol=1e-4,
                rtol=1e-3, rng=rng)
    g = fnx.grad(lambda v: jnp.sum(jnp.sin(_loss_through_every_kind(v, w, jnp))))(x)
    gj = jax.grad(lambda v: jjnp.sum(jjnp.sin(_loss_through_every_kind(v, w, jjnp))))(x)
    # float32 through six transforms and a sine: agreement to float32's accuracy at this scale
    assert np.asarray(g).dtype == np.asarray(gj).dtype
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=2e-3,
                               atol=2e-4 * float(np.abs(np.asarray(gj)).max()))


@_x64
def test_grad_of_a_complex_weight_matches_jax():
    # a gradient that lands on a complex input: JAX's convention (the conjugate of the
    # Wirtinger one) is what fnx's non-conjugating transposes give too
    rng = np.random.default_rng()
    x = rng.standard_normal((3, 8))
    w = _complex(rng, (3, 5))
    g = fnx.grad(lambda w: jnp.sum(jnp.fft.irfft(jnp.fft.rfft(x) * w) ** 2))(w)
    gj = jax.grad(lambda w: jjnp.sum(jjnp.fft.irfft(jjnp.fft.rfft(x) * w) ** 2))(w)
    _close(g, gj)
    for f in ("fft", "ifft"):
        g = fnx.grad(lambda w: jnp.sum(jnp.fft.irfft(getattr(jnp.fft, f)(w), n=8) ** 2))(w)
        gj = jax.grad(lambda w: jjnp.sum(jjnp.fft.irfft(getattr(jjnp.fft, f)(w), n=8) ** 2))(w)
        _close(g, gj)


def test_vmap_and_jit():
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 3, 6)).astype(np.float32)
    w = _complex(rng, (3, 4), np.complex64)
    f = lambda v: _loss_through_every_kind(v, w, jnp)   # noqa: E731
    expected = np.stack([np.asarray(f(v)) for v in x])
    np.testing.assert_allclose(np.asarray(fnx.vmap(f)(x)), expected, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(fnx.vmap(f, in_axes=2, out_axes=1)(x.transpose(1, 2, 0))),
                               expected.transpose(1, 0, 2), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(fnx.jit(f)(x[0])), expected[0], atol=1e-6)
    g = fnx.jit(fnx.vmap(fnx.grad(lambda v: jnp.sum(f(v)))))(x)
    gj = jax.vmap(jax.grad(lambda v: jjnp.sum(_loss_through_every_kind(v, w, jjnp))))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), atol=1e-4, rtol=1e-4)


# -- jnp.fft against jax.numpy.fft

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]
NORMS = [None, "backward", "ortho", "forward"]


def _input_for(name, rng, shape):
    real_in = name in ("rfft", "ihfft", "rfftn", "rfft2")
    return rng.standard_normal(shape) if real_in else _complex(rng, shape)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ONE_D)
@_x64
def test_one_dimensional_transforms_match_jax(name, norm):
    rng = np.random.default_rng()
    x = _input_for(name, rng, (3, 6, 5))
    mine, theirs = getattr(jnp.fft, name), getattr(jjnp.fft, name)
    for kw in ({}, {"n": 4}, {"n": 9}, {"axis": 0}, {"axis": -2, "n": 7}, {"axis": 1, "n": 1}):
        _close(mine(x, norm=norm, **kw), theirs(x, norm=norm, **kw))
    with pytest.raises(ValueError):
        mine(x, axis=(0, 1))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", N_D)
@_x64
def test_n_dimensional_transforms_match_jax(name, norm):
    rng = np.random.default_rng()
    x = _input_for(name, rng, (3, 4, 6, 2))
    mine, theirs = getattr(jnp.fft, name), getattr(jjnp.fft, name)
    cases = [{}, {"s": (5, 3)}, {"axes": (0, 2)}, {"axes": (-1, 0)}, {"s": (2, 4), "axes": (1, 0)}]
    if name.endswith("n"):
        cases += [{"axes": (0, 1, 2)}, {"s": (3, 2, 4)}, {"axes": (3,)}, {"axes": (0, 1, 2, 3)}]
    for kw in cases:
        _close(mine(x, norm=norm, **kw), theirs(x, norm=norm, **kw))


def test_single_precision_results_match_jax():
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 6)).astype(np.float32)
    c = _complex(rng, (4, 6), np.complex64)
    for name in ONE_D + N_D:
        arg = x if name in ("rfft", "ihfft", "rfftn", "rfft2") else c
        _close(getattr(jnp.fft, name)(arg), getattr(jjnp.fft, name)(arg), atol=2e-5)


def test_errors_match_jax():
    x = np.ones((2, 3), np.complex64)
    for bad in (dict(s=(0, 3)), dict(s=(2,), axes=(0, 1)), dict(axes=(0, 0))):
        with pytest.raises(ValueError):
            jnp.fft.fftn(x, **bad)
    with pytest.raises(ValueError):
        jnp.fft.fft2(x, axes=(0,))
    with pytest.raises(ValueError):
        jnp.fft.fft(x, norm="bad")


@pytest.mark.x32     # JAX's default dtypes (x64 off), here and in JAX
@pytest.mark.parametrize("n", [1, 4, 7])
def test_frequencies_and_shifts_match_jax(n):
    for d in (1.0, 0.1):
        _close(jnp.fft.fftfreq(n, d), jjnp.fft.fftfreq(n, d), atol=1e-7)
        _close(jnp.fft.rfftfreq(n, d), jjnp.fft.rfftfreq(n, d), atol=1e-7)
    _close(jnp.fft.fftfreq(n, dtype=jnp.float16), jjnp.fft.fftfreq(n, dtype=jjnp.float16),
           atol=1e-3)
    x = np.arange(n * 6, dtype=np.int32).reshape(n, 6)
    for axes in (None, 0, 1, (0, 1), (-1,)):
        _close(jnp.fft.fftshift(x, axes), jjnp.fft.fftshift(x, axes))
        _close(jnp.fft.ifftshift(x, axes), jjnp.fft.ifftshift(x, axes))


def _smooth(signal, cutoff, np_):
    """A JAX program: low-pass filter a batch of signals in the frequency domain."""
    spec = np_.fft.rfft(signal, axis=-1)
    freqs = np_.fft.rfftfreq(signal.shape[-1])
    gain = np_.exp(-(freqs / cutoff) ** 2)
    return np_.fft.irfft(spec * gain, n=signal.shape[-1], axis=-1)


def test_a_spectral_filter_runs_unchanged():
    rng = np.random.default_rng()
    x = rng.standard_normal((5, 32)).astype(np.float32)
    out = fnx.jit(lambda x, c: _smooth(x, c, jnp))(x, 0.1)
    np.testing.assert_allclose(np.asarray(out), _smooth(x, 0.1, np), atol=1e-5)
    g = fnx.grad(lambda c: jnp.sum(_smooth(x, c, jnp) ** 2))(0.1)
    gj = jax.grad(lambda c: jjnp.sum(_smooth(x, c, jjnp) ** 2))(0.1)
    np.testing.assert_allclose(float(g), float(gj), rtol=1e-4)

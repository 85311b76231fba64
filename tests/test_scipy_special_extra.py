"""fnx.scipy.special's Bessel, Fresnel, Faddeeva, sine/cosine integral, Owen's T,
hypergeometric and spherical-harmonic functions against JAX on CPU with fresh random inputs:
values (and SciPy where JAX is the less accurate), and derivatives where JAX defines them."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.scipy import special

jax = pytest.importorskip("jax")
sp = pytest.importorskip("scipy.special")
import jax.scipy.special as jsp  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _close(ours, want, rtol, atol=0.0):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(want), rtol=rtol, atol=atol)


def _grads(ours, theirs, args, argnums, rtol, atol=1e-13):
    got = fnx.vmap(fnx.grad(ours, argnums=argnums))(*map(jnp.asarray, args))
    want = jax.vmap(jax.grad(theirs, argnums=argnums))(*args)   # one compilation in JAX
    for g, w in zip(got, want):
        _close(g, w, rtol, atol)


def test_wofz_matches_jax_and_scipy(rng):
    z = rng.uniform(-8, 8, 60) + 1j * rng.uniform(-3, 8, 60)
    z = np.concatenate([z, rng.uniform(-30, 30, 10) + 0j, [0j, 1e-4j]])
    _close(special.wofz(z), jsp.wofz(z), 1e-12)
    _close(special.wofz(z), sp.wofz(z), 1e-13)
    x = rng.uniform(-5, 5, 10)
    _close(special.wofz(x), sp.wofz(x), 1e-13)
    # holomorphic: the JVP along any complex direction, against JAX's (whose values are the
    # less accurate, so the exact w' = 2i/sqrt(pi) - 2 z w with SciPy's w is the sharper check)
    direction = rng.standard_normal(z.shape) + 1j * rng.standard_normal(z.shape)
    _, ours = fnx.jvp(special.wofz, (jnp.asarray(z),), (jnp.asarray(direction),))
    _, theirs = jax.jvp(jsp.wofz, (z,), (direction,))
    _close(ours, theirs, 1e-9, 1e-12)
    _close(ours, (2j / np.sqrt(np.pi) - 2 * z * sp.wofz(z)) * direction, 1e-12, 1e-14)


def test_fresnel_matches_jax(rng):
    x = np.concatenate([rng.uniform(-10, 10, 80), rng.uniform(-2, 2, 20), [0.0, 1.5, -1.5]])
    for ours, theirs in zip(special.fresnel(x), jsp.fresnel(x)):
        _close(ours, theirs, 1e-13, 1e-300)
    for k in range(2):
        _grads(lambda v: special.fresnel(v)[k], lambda v: jsp.fresnel(v)[k], (x,), (0,), 1e-12)
    s, c = special.fresnel(np.array([np.inf, -np.inf]))
    assert np.asarray(s).tolist() == [0.5, -0.5] and np.asarray(c).tolist() == [0.5, -0.5]


def test_sici_matches_jax(rng):
    x = np.concatenate([rng.uniform(-30, 30, 80), rng.uniform(-4.5, 4.5, 20),
                        [0.0, 4.0, 1e6, np.inf, -np.inf]])
    for ours, theirs in zip(special.sici(x), jsp.sici(x)):
        # Ci has zeros (0.6165, 3.384, ...): relative error there is no measure
        _close(ours, theirs, 1e-12, 1e-13)
    y = x[:100]
    for k in range(2):
        _grads(lambda v: special.sici(v)[k], lambda v: jsp.sici(v)[k], (y,), (0,), 1e-12)


def test_owens_t_matches_jax_and_scipy(rng):
    h, a = rng.uniform(-5, 5, 80), rng.uniform(-6, 6, 80)
    _close(special.owens_t(h, a), jsp.owens_t(h, a), 1e-11, 1e-300)
    _grads(special.owens_t, jsp.owens_t, (h, a), (0, 1), 1e-12)
    # far in the tail JAX's 13-point rule loses digits; SciPy is the oracle there
    h, a = rng.uniform(5, 30, 40), rng.uniform(-60, 60, 40)
    _close(special.owens_t(h, a), sp.owens_t(h, a), 1e-11, 1e-300)
    _close(special.owens_t(np.array([0.0, 1.0]), np.array([3.0, np.inf])),
           sp.owens_t([0.0, 1.0], [3.0, np.inf]), 1e-14)


def test_bessel_jn_matches_jax(rng):
    z = rng.uniform(-20, 20, (4, 10))
    ours = special.bessel_jn(z, v=5)
    assert ours.shape == (6, 4, 10)
    _close(ours, jsp.bessel_jn(z, v=5), 1e-12, 1e-14)
    _close(ours, sp.jv(np.arange(6).reshape(6, 1, 1), z), 1e-11, 1e-13)
    # J_n' = (J_{n-1} - J_{n+1}) / 2, as JAX's derivative through its loop
    y = z.ravel()
    _grads(lambda v: special.bessel_jn(v, v=3)[3], lambda v: jsp.bessel_jn(v, v=3)[3],
           (y,), (0,), 1e-10, 1e-12)
    # where JAX returns NaN: z == 0, and float32-overflowing small z
    _close(special.bessel_jn(np.array([0.0, 1e-6]), v=2), sp.jv([[0], [1], [2]], [0.0, 1e-6]),
           1e-14, 1e-300)


def test_hyp2f1_matches_jax(rng):
    a, b = rng.uniform(0.1, 4, 40), rng.uniform(0.1, 4, 40)
    c, x = rng.uniform(0.5, 6, 40), rng.uniform(-0.8, 0.85, 40)
    _close(special.hyp2f1(a, b, c, x), jsp.hyp2f1(a, b, c, x), 1e-11)
    # derivatives (JAX takes seconds to compile its own): in x exactly (ab/c) 2F1(a+1, b+1;
    # c+1; x), in a, b, c by central differences of SciPy's values
    args = [v[:8] for v in (a, b, c, x)]
    got = fnx.vmap(fnx.grad(special.hyp2f1, argnums=(0, 1, 2, 3)))(*args)
    step = 1e-6
    for i in range(3):
        up, down = list(args), list(args)
        up[i], down[i] = args[i] + step, args[i] - step
        _close(got[i], (sp.hyp2f1(*up) - sp.hyp2f1(*down)) / (2 * step), 1e-7, 1e-9)
    a8, b8, c8, x8 = args
    _close(got[3], a8 * b8 / c8 * sp.hyp2f1(a8 + 1, b8 + 1, c8 + 1, x8), 1e-10)
    # near 1 (the connection formula) and far below 0 (Pfaff), where JAX's series stops short
    x = np.concatenate([rng.uniform(0.9, 0.999, 20), rng.uniform(-30, -1, 20)])
    _close(special.hyp2f1(a, b, c, x), sp.hyp2f1(a, b, c, x), 1e-9)
    edges = [(1.0, 1.0, 2.0, 0.0), (0.0, 2.0, 3.0, 0.5), (1.0, 2.0, 0.0, 0.5),
             (1.0, 2.0, -2.0, 0.5), (1.0, 2.0, 4.0, 1.0), (1.0, 2.0, 3.0, 1.0),
             (1.5, 2.0, 1.5, 0.3), (2.0, 1.5, 1.5, 0.3), (-2.0, 1.0, 3.0, 0.7),
             (1.0, 1.0, 2.0, 1.5)]
    args = [np.array(column) for column in zip(*edges)]
    _close(special.hyp2f1(*args), jsp.hyp2f1(*args), 1e-13)


def test_sph_harm_y_matches_jax(rng):
    n = rng.integers(0, 9, 60)
    m = np.array([rng.integers(-k, k + 1) for k in n])
    theta, phi = rng.uniform(0, np.pi, 60), rng.uniform(0, 2 * np.pi, 60)
    _close(special.sph_harm_y(n, m, theta, phi), jsp.sph_harm_y(n, m, theta, phi), 1e-11,
           1e-13)
    # a scalar theta, and n clipped to n_max, as JAX does
    low = np.abs(m) <= 4
    _close(special.sph_harm_y(n[low], m[low], 0.7, phi[low], n_max=4),
           jsp.sph_harm_y(n[low], m[low], 0.7, phi[low], n_max=4), 1e-11, 1e-13)
    _close(special.sph_harm_y(np.array([1, 2]), np.array([2, -3]), theta[:2], phi[:2]),
           sp.sph_harm_y([1, 2], [2, -3], theta[:2], phi[:2]), 0, 1e-300)
    # derivatives in the angles, of the real and imaginary parts
    for part in (np.real, np.imag):
        def ours(t, p, part=part):
            return getattr(jnp, part.__name__)(special.sph_harm_y(n[:1], m[:1], t, p)[0])

        def theirs(t, p, part=part):
            return getattr(jax.numpy, part.__name__)(jsp.sph_harm_y(n[:1], m[:1], t, p)[0])
        for i in (0, 1):
            _close(fnx.grad(ours, i)(theta[:1], phi[:1]), jax.grad(theirs, i)(theta[:1], phi[:1]),
                   1e-10, 1e-12)
    with pytest.raises(NotImplementedError):
        special.sph_harm_y(n, m, theta, phi, diff_n=1)


@pytest.mark.x32
def test_defaults_are_float32_and_complex64(rng):
    x = rng.uniform(0.5, 3, 5).astype(np.float32)
    assert special.wofz(x).dtype == np.complex64
    assert all(v.dtype == np.float32 for v in special.fresnel(x) + special.sici(x))
    assert special.owens_t(x, x).dtype == np.float32
    assert special.hyp2f1(0.5, 0.5, 1.5, x * 0.2).dtype == np.float32
    assert special.bessel_jn(x, v=2).dtype == np.float32
    got = special.sph_harm_y(np.array([2]), np.array([1]), x[:1], x[:1])
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(special.bessel_jn(x, v=2)),
                               sp.jv([[0], [1], [2]], x), rtol=1e-4, atol=1e-6)

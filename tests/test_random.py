"""fnx.random: Threefry bits against published vectors and JAX's keys, moments and frequencies of
every sampler, reproducibility, independence of split keys, and vmap/jit/grad."""
import math

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
import fnx.random as random

N = 200_000


def _np(x):
    """NumPy values of arrays, and of typed keys their data."""
    return np.asarray(random.key_data(x) if isinstance(x, fnx.prng.KeyArray) else x)


def _within(value, expected, std_error, sigmas=5.0):
    assert abs(value - expected) < sigmas * std_error, (value, expected, std_error)


# ---------------------------------------------------------------------------------------------
# Bits and keys


@pytest.mark.parametrize("key, count, expected", [
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry_known_answers(key, count, expected):
    # the Random123 test vectors for Threefry-2x32 with 20 rounds
    out = random.threefry_2x32(*map(np.uint32, key), *map(np.uint32, count))
    assert tuple(int(v) for v in out) == expected


def test_keys_and_split_match_jax():
    np.testing.assert_array_equal(_np(random.PRNGKey(42)), [0, 42])
    np.testing.assert_array_equal(_np(random.key_data(random.key(0))), [0, 0])
    assert random.PRNGKey(0).dtype == np.uint32
    # jax.random.split(jax.random.key(0)) with JAX's default (partitionable) Threefry
    np.testing.assert_array_equal(_np(random.split(random.PRNGKey(0))),
                                  [[1797259609, 2579123966], [928981903, 3453687069]])
    # split is fold-like: the i-th key is fold_in(key, i)
    k = random.key(123)
    ks = random.split(k, 5)
    for i in range(5):
        np.testing.assert_array_equal(_np(random.key_data(ks[i])),
                                      _np(random.key_data(random.fold_in(k, i))))


def test_seeds():
    # a Python int seed is an int64 with x64 on (both words), an int32 with it off (as JAX's)
    np.testing.assert_array_equal(_np(random.PRNGKey(-1)), [2**32 - 1, 2**32 - 1])
    with fnx.enable_x64(False):
        np.testing.assert_array_equal(_np(random.PRNGKey(-1)), [0, 2**32 - 1])
    np.testing.assert_array_equal(_np(random.PRNGKey(np.int64(2**40 + 5))), [2**8, 5])
    np.testing.assert_array_equal(_np(random.key_data(random.key(jnp.asarray(7)))), [0, 7])
    with pytest.raises(TypeError, match="integer"):
        random.key(1.5)
    with pytest.raises(TypeError, match="one key"):
        random.uniform(random.split(random.PRNGKey(0), 3), (2,))
    with pytest.raises(ValueError, match="single key"):
        random.uniform(random.split(random.key(0), 3), (2,))


def test_reproducible_and_key_sensitive():
    k = random.key(7)
    a = _np(random.normal(k, (100,)))
    np.testing.assert_array_equal(a, _np(random.normal(random.key(7), (100,))))
    assert not np.allclose(a, _np(random.normal(random.key(8), (100,))))
    assert not np.allclose(a, _np(random.normal(random.fold_in(k, 1), (100,))))


def test_split_keys_are_distinct_and_independent():
    keys = _np(random.key_data(random.split(random.key(3), 1000)))
    assert len({tuple(k) for k in keys}) == 1000
    k1, k2 = random.split(random.key(3))
    a, b = _np(random.normal(k1, (N,))), _np(random.normal(k2, (N,)))
    _within(np.corrcoef(a, b)[0, 1], 0.0, 1 / math.sqrt(N))
    assert random.split(random.key(0), (2, 3)).shape == (2, 3)
    assert random.split(random.PRNGKey(0), (2, 3)).shape == (2, 3, 2)


def test_bits_dtypes_and_uniformity():
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        b = random.bits(random.key(1), (1000,), dt)
        assert b.dtype == dt and b.shape == (1000,)
    b = _np(random.bits(random.key(1), (N,), np.uint32))
    # every bit is set half of the time
    ones = np.unpackbits(b.view(np.uint8)).reshape(N, 32).mean(0)
    np.testing.assert_allclose(ones, 0.5, atol=5 * 0.5 / math.sqrt(N))


# ---------------------------------------------------------------------------------------------
# Continuous distributions


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_moments_and_range(dtype):
    u = _np(random.uniform(random.key(0), (N,), dtype))
    assert u.dtype == dtype and u.min() >= 0 and u.max() < 1
    _within(u.mean(), 0.5, math.sqrt(1 / 12 / N))
    _within(u.var(), 1 / 12, math.sqrt(1 / 180 / N))
    v = _np(random.uniform(random.key(1), (N,), dtype, minval=-3.0, maxval=5.0))
    assert v.min() >= -3 and v.max() < 5
    _within(v.mean(), 1.0, 8 * math.sqrt(1 / 12 / N))


def test_uniform_float16_and_broadcast_bounds():
    u = _np(random.uniform(random.key(0), (1000,), jnp.float16))
    assert u.dtype == np.float16 and 0 <= u.min() and u.max() < 1
    lo = np.array([0.0, 10.0, 100.0], np.float32)
    v = _np(random.uniform(random.key(0), (N // 10, 3), minval=lo, maxval=lo + 1))
    assert (v >= lo).all() and (v < lo + 1).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_moments(dtype):
    z = _np(random.normal(random.key(5), (N,), dtype)).astype(np.float64)
    assert np.isfinite(z).all()
    _within(z.mean(), 0.0, 1 / math.sqrt(N))
    _within(z.var(), 1.0, math.sqrt(2 / N))
    _within(np.mean(z ** 3), 0.0, math.sqrt(15 / N))
    _within(np.mean(z ** 4), 3.0, math.sqrt(96 / N))
    # the empirical CDF at a few points
    for t in (-2.0, -0.5, 0.0, 1.0, 2.5):
        p = 0.5 * (1 + math.erf(t / math.sqrt(2)))
        _within(np.mean(z < t), p, math.sqrt(p * (1 - p) / N))


def test_truncated_normal():
    lower, upper = -0.5, 1.5
    z = _np(random.truncated_normal(random.key(2), lower, upper, (N,), jnp.float64))
    assert z.min() > lower and z.max() < upper
    pdf = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda t: 0.5 * (1 + math.erf(t / math.sqrt(2)))  # noqa: E731
    mass = cdf(upper) - cdf(lower)
    mean = (pdf(lower) - pdf(upper)) / mass
    var = 1 + (lower * pdf(lower) - upper * pdf(upper)) / mass - mean ** 2
    _within(z.mean(), mean, math.sqrt(var / N))
    _within(z.var(), var, 3 * var * math.sqrt(2 / N))
    shaped = random.truncated_normal(random.key(0), jnp.array([-1.0, 0.0]), 1.0)
    assert shaped.shape == (2,)


def test_exponential_and_gumbel():
    e = _np(random.exponential(random.key(0), (N,), jnp.float64))
    assert e.min() >= 0
    _within(e.mean(), 1.0, 1 / math.sqrt(N))
    g = _np(random.gumbel(random.key(0), (N,), jnp.float64))
    _within(g.mean(), np.euler_gamma, math.pi / math.sqrt(6 * N))


# ---------------------------------------------------------------------------------------------
# Discrete distributions


@pytest.mark.parametrize("p", [0.1, 0.5, 0.93])
def test_bernoulli_frequency(p):
    b = _np(random.bernoulli(random.key(11), p, (N,)))
    assert b.dtype == np.bool_
    _within(b.mean(), p, math.sqrt(p * (1 - p) / N))


def test_bernoulli_array_p():
    p = np.array([0.2, 0.7], np.float32)
    b = _np(random.bernoulli(random.key(0), p, (N // 2, 2)))
    np.testing.assert_allclose(b.mean(0), p, atol=5 * 0.5 / math.sqrt(N // 2))
    assert random.bernoulli(random.key(0), jnp.asarray(p)).shape == (2,)


@pytest.mark.x32
def test_randint_range_and_frequencies():
    r = _np(random.randint(random.key(4), (N,), 3, 10))
    assert r.dtype == np.int32 and r.min() == 3 and r.max() == 9
    counts = np.bincount(r - 3, minlength=7) / N
    np.testing.assert_allclose(counts, 1 / 7, atol=5 * math.sqrt(1 / 7 * 6 / 7 / N))
    r = _np(random.randint(random.key(4), (1000,), -5, -2, jnp.int8))
    assert r.dtype == np.int8 and set(np.unique(r)) == {-5, -4, -3}


def test_randint_edge_bounds():
    assert (_np(random.randint(random.key(0), (10,), 5, 3)) == 5).all()   # empty range -> minval
    full = _np(random.randint(random.key(0), (N,), -2**31, 2**31))
    assert full.min() < -2**30 and full.max() > 2**30
    _within(full.astype(np.float64).mean() / 2**31, 0.0, 1 / math.sqrt(3 * N))
    r = _np(random.randint(random.key(1), (1000, 2), jnp.array(0), jnp.array([2, 4])))
    assert r.min() == 0 and r[:, 0].max() == 1 and r[:, 1].max() == 3


def test_categorical_frequencies():
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    s = _np(random.categorical(random.key(9), jnp.log(jnp.asarray(probs)), shape=(N,)))
    np.testing.assert_allclose(np.bincount(s, minlength=4) / N, probs,
                               atol=5 * math.sqrt(0.25 / N))


def test_categorical_batched_logits_and_axis():
    logits = jnp.asarray(np.log(np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])))
    s = _np(random.categorical(random.key(1), logits, shape=(N // 10, 3)))
    assert s.shape == (N // 10, 3)
    np.testing.assert_allclose(s.mean(0), [0.1, 0.8, 0.5], atol=0.02)
    t = _np(random.categorical(random.key(1), logits.T, axis=0))
    assert t.shape == (3,)


def test_permutation():
    p = _np(random.permutation(random.key(0), 50))
    assert sorted(p.tolist()) == list(range(50)) and (p != np.arange(50)).any()
    x = np.arange(12.0).reshape(4, 3)
    rows = _np(random.permutation(random.key(1), x))
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.tolist()))
    cols = _np(random.permutation(random.key(1), x, axis=1, independent=True))
    for r, orig in zip(cols, x):
        assert sorted(r) == sorted(orig)
    # every element is equally likely to land first (vmap over 4000 keys)
    perms = _np(fnx.vmap(lambda k: random.permutation(k, 4))(random.split(random.key(2), 4000)))
    assert (np.sort(perms, 1) == np.arange(4)).all()
    np.testing.assert_allclose(np.bincount(perms[:, 0], minlength=4) / 4000, 0.25,
                               atol=5 * math.sqrt(0.25 * 0.75 / 4000))


def test_choice():
    c = _np(random.choice(random.key(0), 10, (5,), replace=False))
    assert len(set(c.tolist())) == 5 and c.min() >= 0 and c.max() < 10
    p = np.array([0.5, 0.25, 0.25])
    d = _np(random.choice(random.key(1), 3, (N // 4,), p=jnp.asarray(p)))
    np.testing.assert_allclose(np.bincount(d, minlength=3) / (N // 4), p, atol=0.01)
    e = _np(random.choice(random.key(2), jnp.asarray([10.0, 20.0, 30.0]), (3,), replace=False,
                          p=jnp.asarray(p)))
    assert sorted(e.tolist()) == [10.0, 20.0, 30.0]
    with pytest.raises(ValueError):
        random.choice(random.key(0), 3, (4,), replace=False)


# ---------------------------------------------------------------------------------------------
# Transformations


def test_vmap_over_keys_matches_a_loop():
    keys = random.split(random.key(0), 4)
    batched = _np(fnx.vmap(lambda k: random.normal(k, (3,)))(keys))
    looped = np.stack([_np(random.normal(k, (3,))) for k in keys])
    np.testing.assert_array_equal(batched, looped)
    split_b = _np(fnx.vmap(random.split)(keys))
    np.testing.assert_array_equal(split_b, np.stack([_np(random.split(k)) for k in keys]))
    folded = _np(fnx.vmap(lambda i: random.fold_in(random.key(0), i))(jnp.arange(3)))
    np.testing.assert_array_equal(folded, np.stack([_np(random.fold_in(random.key(0), i))
                                                    for i in range(3)]))


def test_traceable_and_jit():
    jaxpr = fnx.make_jaxpr(lambda k: random.uniform(k, (2,)))(random.key(0))
    assert "shift_right_logical" in str(jaxpr) and "bitcast_convert_type" in str(jaxpr)
    jit = getattr(fnx, "jit", None)
    if jit is None:
        pytest.skip("fnx.jit is not available")
    k = random.key(0)
    for f in (lambda k: random.normal(k, (5,)), lambda k: random.split(k, 3),
              lambda k: random.randint(k, (4,), 0, 9), lambda k: random.permutation(k, 6)):
        np.testing.assert_array_equal(_np(jit(f)(k)), _np(f(k)))


def test_grad_through_uniform_bounds():
    k = random.key(0)
    u = _np(random.uniform(k, (5,), jnp.float64))
    g = fnx.grad(lambda hi: jnp.sum(random.uniform(k, (5,), jnp.float64, 1.0, hi)))(np.float64(3.0))
    np.testing.assert_allclose(float(g), u.sum(), rtol=1e-12)


def _jax():
    """JAX on its CPU backend, where installed (the device machines have it)."""
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    if not jax.config.jax_threefry_partitionable:
        pytest.skip("this JAX splits keys with its older, non-partitionable scheme")
    return jax


@pytest.mark.x32
def test_same_numbers_as_jax():
    jax = _jax()
    k, fk = jax.random.key(0), random.key(0)
    same = [
        (jax.random.key_data(jax.random.split(k, (2, 3))), random.split(fk, (2, 3))),
        (jax.random.key_data(jax.random.fold_in(k, 7)), random.fold_in(fk, 7)),
        (jax.random.bits(k, (5, 3)), random.bits(fk, (5, 3))),
        (jax.random.bernoulli(k, 0.3, (100,)), random.bernoulli(fk, 0.3, (100,))),
        (jax.random.randint(k, (100,), -5, 10), random.randint(fk, (100,), -5, 10)),
        (jax.random.permutation(k, 20), random.permutation(fk, 20)),
        (jax.random.categorical(k, np.log(np.array([0.2, 0.3, 0.5], np.float32)), shape=(50,)),
         random.categorical(fk, np.log(np.array([0.2, 0.3, 0.5], np.float32)), shape=(50,))),
        (jax.random.choice(k, 10, (5,), replace=False), random.choice(fk, 10, (5,), replace=False)),
    ]
    for expected, ours in same:
        np.testing.assert_array_equal(_np(ours), np.asarray(expected))
    # XLA may fuse the scaling into an FMA (one ulp), and its erf_inv is a polynomial
    np.testing.assert_allclose(_np(random.uniform(fk, (100,), minval=-2, maxval=3)),
                               np.asarray(jax.random.uniform(k, (100,), minval=-2, maxval=3)),
                               atol=5e-7)
    np.testing.assert_allclose(_np(random.normal(fk, (1000,))),
                               np.asarray(jax.random.normal(k, (1000,))), atol=5e-5)


@pytest.mark.x32
def test_closed_form_samplers_follow_jax():
    jax = _jax()
    k, fk = jax.random.key(3), random.key(3)
    mean, cov = np.array([1.0, -1.0], np.float32), np.array([[2.0, 0.5], [0.5, 1.0]], np.float32)
    samplers = [   # of (random module, key): run with fnx.random and with jax.random
        lambda r, k: r.laplace(k, (200,)), lambda r, k: r.logistic(k, (200,)),
        lambda r, k: r.cauchy(k, (200,)), lambda r, k: r.lognormal(k, 0.5, (200,)),
        lambda r, k: r.maxwell(k, (200,)), lambda r, k: r.weibull_min(k, 2.0, 1.5, (200,)),
        lambda r, k: r.pareto(k, 3.0, (200,)), lambda r, k: r.rayleigh(k, 2.0, (200,)),
        lambda r, k: r.wald(k, 1.5, (200,)), lambda r, k: r.triangular(k, 0.0, 0.3, 1.0, (200,)),
        lambda r, k: r.rademacher(k, (200,)), lambda r, k: r.geometric(k, 0.3, (200,)),
        lambda r, k: r.double_sided_maxwell(k, 1.0, 2.0, (200,)),
        lambda r, k: r.multivariate_normal(k, mean, cov, (100,)),
        lambda r, k: r.orthogonal(k, 4, (3,)),
    ]
    for sample in samplers:
        ours, theirs = _np(sample(random, fk)), np.asarray(sample(jax.random, k))
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        # equal up to rounding (XLA's erf_inv, tan and fusions differ in the last bits)
        np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-4)


# ---------------------------------------------------------------------------------------------
# The other samplers of jax.random

M = 20_000
K = random.key(2024)
F64 = jnp.float64


def _stats():
    return pytest.importorskip("scipy.stats")


def _ks_below(x, dist, *args, n=M):
    """The Kolmogorov-Smirnov distance of ``x`` from ``dist`` is at most 2/sqrt(n): a correct
    sampler exceeds that with probability 7e-4, a wrong shape or parameter by far."""
    stat = _stats().kstest(np.asarray(x, np.float64).ravel(), dist, args=args).statistic
    assert stat < 2 / math.sqrt(n), (dist, args, stat)


CONTINUOUS = [   # (sampler of (key, shape, dtype), scipy distribution, its arguments)
    (lambda k, s, d: random.laplace(k, s, d), "laplace", ()),
    (lambda k, s, d: random.logistic(k, s, d), "logistic", ()),
    (lambda k, s, d: random.cauchy(k, s, d), "cauchy", ()),
    (lambda k, s, d: random.lognormal(k, 0.7, s, d), "lognorm", (0.7,)),
    (lambda k, s, d: random.maxwell(k, s, d), "maxwell", ()),
    (lambda k, s, d: random.weibull_min(k, 2.0, 1.5, s, d), "weibull_min", (1.5, 0, 2.0)),
    (lambda k, s, d: random.pareto(k, 3.0, s, d), "pareto", (3.0,)),
    (lambda k, s, d: random.rayleigh(k, 2.0, s, d), "rayleigh", (0, 2.0)),
    (lambda k, s, d: random.wald(k, 2.0, s, d), "invgauss", (2.0,)),
    (lambda k, s, d: random.triangular(k, -1.0, 0.5, 2.0, s, d), "triang", (0.5, -1, 3)),
    (lambda k, s, d: random.gamma(k, 0.3, s, d), "gamma", (0.3,)),
    (lambda k, s, d: random.gamma(k, 1.0, s, d), "gamma", (1.0,)),
    (lambda k, s, d: random.gamma(k, 7.5, s, d), "gamma", (7.5,)),
    (lambda k, s, d: jnp.exp(random.loggamma(k, 0.05, s, d)), "gamma", (0.05,)),
    (lambda k, s, d: random.chisquare(k, 3.0, s, d), "chi2", (3.0,)),
    (lambda k, s, d: random.f(k, 5.0, 10.0, s, d), "f", (5.0, 10.0)),
    (lambda k, s, d: random.t(k, 4.0, s, d), "t", (4.0,)),
    (lambda k, s, d: random.t(k, 0.7, s, d), "t", (0.7,)),
    (lambda k, s, d: random.beta(k, 0.5, 2.0, s, d), "beta", (0.5, 2.0)),
    (lambda k, s, d: random.beta(k, 0.4, 0.6, s, d), "beta", (0.4, 0.6)),
    (lambda k, s, d: random.generalized_normal(k, 1.5, s, d), "gennorm", (1.5,)),
    (lambda k, s, d: random.generalized_normal(k, 4.0, s, d), "gennorm", (4.0,)),
    (lambda k, s, d: random.double_sided_maxwell(k, 1.0, 2.0, s, d), "dsmaxwell", ()),
]


@pytest.mark.parametrize("sampler, dist, args", CONTINUOUS,
                         ids=[f"{d}{a}" for _, d, a in CONTINUOUS])
def test_continuous_distributions(sampler, dist, args):
    # float32 (the default) too where its range matters: the samplers with rejection loops
    dtypes = (F64, jnp.float32) if dist in ("gamma", "beta") else (F64,)
    for i, dtype in enumerate(dtypes):
        x = _np(sampler(random.fold_in(K, i), (M,), dtype))
        assert x.shape == (M,) and x.dtype == dtype and np.isfinite(x).all()
        if dist == "dsmaxwell":
            # loc + scale * sign * maxwell: symmetric about loc, |x - loc| / scale is Maxwell
            _within(np.mean(x > 1.0), 0.5, 0.5 / math.sqrt(M))
            _ks_below(np.abs(x - 1.0) / 2.0, "maxwell")
        else:
            _ks_below(x, dist, *args)


def test_ks_check_has_power():
    # the threshold rejects near misses: a gamma(0.33) sample is not gamma(0.3)
    x = _np(random.gamma(K, 0.33, (M,), F64))
    with pytest.raises(AssertionError):
        _ks_below(x, "gamma", 0.3)
    with pytest.raises(AssertionError):
        _ks_below(_np(random.beta(K, 0.5, 2.0, (M,), F64)), "beta", 0.55, 2.0)


@pytest.mark.x32
@pytest.mark.parametrize("lam", [0.7, 4.0, 9.9, 10.0, 35.0, 2000.0])
def test_poisson(lam):
    x = _np(random.poisson(K, lam, (M,)))
    assert x.dtype == np.int32 and x.min() >= 0
    _within(x.mean(), lam, math.sqrt(lam / M))
    _within(x.var(), lam, math.sqrt((lam + 2 * lam ** 2) / M))
    # the frequencies of the values that carry most of the mass, against the pmf
    stats = _stats()
    lo, hi = stats.poisson.ppf([0.01, 0.99], lam).astype(int)
    values = np.arange(lo, hi + 1)
    expected = stats.poisson.pmf(values, lam) * M
    observed = np.array([(x == v).sum() for v in values])
    chi2 = np.sum((observed - expected) ** 2 / expected)
    assert chi2 < stats.chi2.ppf(0.9999, len(values)), chi2


def test_poisson_edge_rates_and_dtype():
    x = _np(random.poisson(K, jnp.array([0.0, 1e-4, 1e6]), (1000, 3), jnp.int64))
    assert x.dtype == np.int64 and (x[:, 0] == 0).all() and x[:, 1].max() <= 1
    _within(x[:, 2].mean(), 1e6, 1e3 / math.sqrt(1000))


@pytest.mark.x32
def test_geometric_and_rademacher():
    p = 0.3
    g = _np(random.geometric(K, p, (M,)))
    assert g.dtype == np.int32 and g.min() == 1
    for v in (1, 2, 3, 6):
        q = (1 - p) ** (v - 1) * p
        _within(np.mean(g == v), q, math.sqrt(q * (1 - q) / M))
    _within(g.mean(), 1 / p, math.sqrt((1 - p) / p ** 2 / M))
    r = _np(random.rademacher(K, (M,)))
    assert r.dtype == np.int32 and set(np.unique(r)) == {-1, 1}
    _within(r.mean(), 0.0, 1 / math.sqrt(M))
    assert random.rademacher(K, (3,), jnp.float32).dtype == np.float32


def test_dirichlet():
    alpha = np.array([0.3, 1.0, 4.0])
    x = _np(random.dirichlet(K, jnp.asarray(alpha), (M,), F64))
    assert x.shape == (M, 3) and (x >= 0).all()
    np.testing.assert_allclose(x.sum(1), 1.0, rtol=1e-12)
    # each coordinate is beta(alpha_i, sum - alpha_i)
    for i in range(3):
        _ks_below(x[:, i], "beta", alpha[i], alpha.sum() - alpha[i])
    # a batch of parameter vectors, broadcast against shape
    batch = jnp.asarray([[1.0, 1.0], [50.0, 1.0]])
    y = _np(random.dirichlet(K, batch, (M // 4, 2)))
    assert y.shape == (M // 4, 2, 2)
    np.testing.assert_allclose(y[..., 0].mean(0), [0.5, 50 / 51], atol=0.01)
    # tiny concentrations still give finite points of the simplex
    z = _np(random.dirichlet(K, jnp.asarray([1e-3, 1e-3]), (100,)))
    assert np.isfinite(z).all() and np.allclose(z.sum(1), 1)


def test_multivariate_normal_methods():
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[1.0, 0.0, 0.0], [0.5, 1.2, 0.0], [-0.3, 0.4, 0.7]])
    cov = a @ a.T
    for method in ("cholesky", "eigh", "svd"):
        x = _np(random.multivariate_normal(K, jnp.asarray(mean), jnp.asarray(cov), (M,), F64,
                                           method=method))
        assert x.shape == (M, 3)
        np.testing.assert_allclose(x.mean(0), mean, atol=5 * math.sqrt(cov.max() / M))
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.05)
        # a projection is normal with the projected variance
        w = np.array([0.3, -1.0, 2.0])
        _ks_below(((x - mean) @ w) / math.sqrt(w @ cov @ w), "norm")
    # batch shapes: mean (2, 3) against one cov; shape defaults to the batch
    means = jnp.asarray(np.stack([mean, -mean]))
    assert random.multivariate_normal(K, means, jnp.asarray(cov)).shape == (2, 3)
    assert random.multivariate_normal(K, means, jnp.asarray(cov), (4, 2)).shape == (4, 2, 3)
    with pytest.raises(ValueError):
        random.multivariate_normal(K, jnp.zeros(2), jnp.eye(3))
    with pytest.raises(ValueError):
        random.multivariate_normal(K, jnp.zeros(3), jnp.asarray(cov), method="lu")


def test_orthogonal():
    q = _np(random.orthogonal(K, 3, (M // 4,), F64))
    assert q.shape == (M // 4, 3, 3)
    np.testing.assert_allclose(np.einsum("bji,bjk->bik", q, q), np.broadcast_to(np.eye(3), q.shape),
                               atol=1e-12)
    # Haar measure: an entry of a 3x3 Haar matrix is uniform on [-1, 1], and det is +-1 evenly
    _ks_below((q[:, 1, 2] + 1) / 2, "uniform", n=M // 4)
    _within(np.mean(np.linalg.det(q) > 0), 0.5, 0.5 / math.sqrt(M // 4))
    wide = _np(random.orthogonal(K, 2, dtype=F64, m=5))
    assert wide.shape == (2, 5)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-12)


def test_ball():
    for p, d in ((2.0, 3), (1.0, 2)):
        x = _np(random.ball(K, d, p, (M,), F64))
        assert x.shape == (M, d)
        r = np.sum(np.abs(x) ** p, axis=1) ** (1 / p)
        assert r.max() <= 1
        # uniform in the ball: the radius**d is uniform, and the directions are symmetric
        _ks_below(r ** d, "uniform")
        _within(np.mean(x[:, 0] > 0), 0.5, 0.5 / math.sqrt(M))


PARAMETRISED = {   # name: sampler of (key, first parameter, shape), the parameter's values
    "lognormal": (lambda k, v, s: random.lognormal(k, v, s), [0.5, 1.0, 2.0]),
    "weibull_min": (lambda k, v, s: random.weibull_min(k, 1.0, v, s), [0.5, 1.0, 3.0]),
    "pareto": (lambda k, v, s: random.pareto(k, v, s), [2.5, 3.0, 6.0]),
    "rayleigh": (lambda k, v, s: random.rayleigh(k, v, s), [0.5, 1.0, 2.0]),
    "wald": (lambda k, v, s: random.wald(k, v, s), [0.5, 1.0, 2.0]),
    "triangular": (lambda k, v, s: random.triangular(k, 0.0, v, 1.0, s), [0.1, 0.5, 0.9]),
    "gamma": (lambda k, v, s: random.gamma(k, v, s), [0.5, 2.0, 9.0]),
    "loggamma": (lambda k, v, s: random.loggamma(k, v, s), [0.5, 2.0, 9.0]),
    "chisquare": (lambda k, v, s: random.chisquare(k, v, s), [1.0, 3.0, 8.0]),
    "f": (lambda k, v, s: random.f(k, v, 20.0, s), [1.0, 3.0, 8.0]),
    "t": (lambda k, v, s: random.t(k, v, s), [3.0, 5.0, 9.0]),
    "beta": (lambda k, v, s: random.beta(k, v, 2.0, s), [0.5, 2.0, 9.0]),
    "generalized_normal": (lambda k, v, s: random.generalized_normal(k, v, s), [1.0, 2.0, 5.0]),
    "poisson": (lambda k, v, s: random.poisson(k, v, s), [0.5, 5.0, 30.0]),
    "geometric": (lambda k, v, s: random.geometric(k, v, s), [0.2, 0.5, 0.9]),
}
DISTS = {"lognormal": ("lognorm", lambda v: (v,)), "weibull_min": ("weibull_min", lambda v: (v,)),
         "pareto": ("pareto", lambda v: (v,)), "rayleigh": ("rayleigh", lambda v: (0, v)),
         "wald": ("invgauss", lambda v: (v,)), "triangular": ("triang", lambda v: (v,)),
         "gamma": ("gamma", lambda v: (v,)), "chisquare": ("chi2", lambda v: (v,)),
         "f": ("f", lambda v: (v, 20.0)), "t": ("t", lambda v: (v,)),
         "beta": ("beta", lambda v: (v, 2.0)), "generalized_normal": ("gennorm", lambda v: (v,))}


@pytest.mark.x32
@pytest.mark.parametrize("name", sorted(PARAMETRISED))
def test_parameters_broadcast_against_shape(name):
    sampler, values = PARAMETRISED[name]
    v = jnp.asarray(np.array(values, np.float32))
    assert sampler(K, v, None).shape == (3,)          # shape defaults to the parameters'
    x = _np(sampler(K, v, (M // 4, 3)))
    assert x.shape == (M // 4, 3)
    assert x.dtype == (np.int32 if name in ("poisson", "geometric") else np.float32)
    # every column follows its own parameter
    if name in DISTS:
        dist, args = DISTS[name]
        for j, value in enumerate(values):
            _ks_below(x[:, j], dist, *args(value), n=M // 4)
    elif name == "poisson":
        np.testing.assert_allclose(x.mean(0), values, rtol=0.05)
    elif name == "geometric":
        np.testing.assert_allclose(x.mean(0), 1 / np.array(values), rtol=0.05)
    else:   # loggamma: E[exp(x)] = a
        np.testing.assert_allclose(np.exp(x).mean(0), values, rtol=0.05)
    # the same key draws the same numbers
    np.testing.assert_array_equal(_np(sampler(K, v, (M // 4, 3))), x)
    with pytest.raises(ValueError, match="broadcast"):
        sampler(K, v, (4, 2))


# the loops of gamma, beta and poisson and two closed forms: every kind of sampler, while keeping
# the file fast (the other gamma-based samplers share gamma's loop)
@pytest.mark.parametrize("name", ["wald", "gamma", "beta", "poisson", "geometric"])
def test_jit_and_vmap_match_eager(name):
    sampler, values = PARAMETRISED[name]
    v = jnp.asarray(np.array(values, np.float32))
    f = lambda k: sampler(k, v, (2, 3))  # noqa: E731
    keys = random.split(random.key(5), 2)
    eager = np.stack([_np(f(k)) for k in keys])
    assert not np.array_equal(eager[0], eager[1])                # other key, other numbers
    np.testing.assert_allclose(_np(fnx.jit(f)(keys[0])), eager[0], rtol=1e-6)
    np.testing.assert_array_equal(_np(fnx.vmap(f)(keys)), eager)
    # vmap over the parameter: each row is the sample for that parameter value
    g = lambda p: sampler(keys[0], p, (4,))  # noqa: E731
    np.testing.assert_array_equal(_np(fnx.vmap(g)(v[1:])),
                                  np.stack([_np(g(v[i])) for i in (1, 2)]))


@pytest.mark.x32
def test_other_samplers_jit_and_vmap_match_eager():
    fs = [lambda k: random.laplace(k, (3,)), lambda k: random.logistic(k, (3,)),
          lambda k: random.cauchy(k, (3,)), lambda k: random.maxwell(k, (3,)),
          lambda k: random.rademacher(k, (3,)),
          lambda k: random.double_sided_maxwell(k, 1.0, jnp.asarray([1.0, 2.0]), (3,)),
          lambda k: random.dirichlet(k, jnp.asarray([0.5, 1.0, 2.0]), (2,)),
          lambda k: random.ball(k, 3, 1.5, (2,)), lambda k: random.orthogonal(k, 3),
          lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2) * 2.0, (2,))]
    keys = random.split(random.key(6), 2)
    for f in fs:
        eager = np.stack([_np(f(k)) for k in keys])
        assert not np.array_equal(eager[0], eager[1])
        # (a GPU's jit may fuse a multiply-add: one ulp)
        np.testing.assert_allclose(_np(fnx.jit(f)(keys[0])), eager[0], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(_np(fnx.vmap(f)(keys)), eager, rtol=1e-6, atol=1e-6)
    assert random.double_sided_maxwell(K, 0.0, jnp.ones(2), (3,)).shape == (3, 2)
    assert random.weibull_min(K, jnp.ones(2), 1.0).shape == (2,)


def test_gamma_edges_and_loggamma():
    a = jnp.asarray([0.0, -1.0, np.nan, 1e-3, 1e4])
    g = _np(random.gamma(K, a, dtype=F64))    # as JAX: 0 at a = 0, nan below and at nan
    assert g[0] == 0 and np.isnan(g[1:3]).all() and 0 < g[3] < 1e-10
    _within(g[4], 1e4, 5 * 100)
    a = jnp.asarray([0.05, 0.7, 3.0])
    np.testing.assert_allclose(np.exp(_np(random.loggamma(K, a, (100, 3), F64))),
                               _np(random.gamma(K, a, (100, 3), F64)), rtol=1e-10)
    # loggamma keeps the logs of samples far below float32's smallest normal number
    lg = _np(random.loggamma(K, 1e-3, (1000,)))
    assert np.isfinite(lg).all() and lg.min() < -200


def test_gamma_gradient_is_the_implicit_reparameterisation():
    special = pytest.importorskip("scipy.special")
    a = np.array([0.05, 0.8, 3.0, 40.0])
    f = lambda a: random.gamma(K, a, (200, 4), F64)  # noqa: E731
    z = _np(f(a))
    g = _np(fnx.jacfwd(lambda s: f(a * s))(np.float64(1.0))) / a   # d z_ij / d a_j
    # dz/da at a fixed CDF value, by central differences of scipy's inverse CDF
    u, h = special.gammainc(a, z), 1e-5 * a
    fd = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-12)
    # loggamma's derivative is d(log z)/da
    lg = _np(fnx.jacfwd(lambda s: random.loggamma(K, a * s, (200, 4), F64))(np.float64(1.0)))
    np.testing.assert_allclose(lg / a, fd / z, rtol=1e-5)
    # unbiased: E[dz/da] = dE[z]/da = 1, and for beta E[d x/da] = b / (a + b)**2
    mean_grad = fnx.grad(lambda a: jnp.mean(random.gamma(K, a, (M,), F64)))
    _within(float(mean_grad(np.float64(3.0))), 1.0, 0.005)
    beta_grad = fnx.grad(lambda a: jnp.mean(random.beta(K, a, 2.0, (M,), F64)))
    _within(float(beta_grad(np.float64(1.5))), 2.0 / 3.5 ** 2, 0.002)
    # grad under jit and vmap over keys agrees with eager
    g = fnx.grad(lambda k, a: jnp.sum(random.chisquare(k, a, (3,))), argnums=1)
    keys = random.split(K, 2)
    eager = [float(g(k, 2.5)) for k in keys]
    np.testing.assert_allclose(float(fnx.jit(g)(keys[0], 2.5)), eager[0], rtol=1e-6)
    np.testing.assert_allclose(_np(fnx.vmap(g, in_axes=(0, None))(keys, 2.5)), eager, rtol=1e-6)
    # stop_gradient makes the samples constants
    c = float(random.gamma(K, 2.0))
    out = fnx.grad(lambda a: a * random.gamma(K, fnx.lax.stop_gradient(a)))(2.0)
    np.testing.assert_allclose(float(out), c, rtol=1e-6)


@pytest.mark.parametrize("n, p", [(12, 0.3), (100, 0.04), (60, 0.5), (1000, 0.93)])
def test_binomial(n, p):
    x = _np(random.binomial(K, float(n), p, (M,), F64))
    assert x.dtype == np.float64 and x.min() >= 0 and x.max() <= n and (x == np.floor(x)).all()
    _within(x.mean(), n * p, math.sqrt(n * p * (1 - p) / M))
    stats = _stats()
    lo, hi = stats.binom.ppf([0.01, 0.99], n, p).astype(int)
    values = np.arange(lo, hi + 1)
    expected = stats.binom.pmf(values, n, p) * M
    observed = np.array([(x == v).sum() for v in values])
    chi2 = np.sum((observed - expected) ** 2 / expected)
    assert chi2 < stats.chi2.ppf(0.9999, len(values)), chi2


@pytest.mark.x32
def test_binomial_edges_broadcast_and_vmap():
    n, p = jnp.asarray([0.0, 5.0, 5.0, 7.0]), jnp.asarray([0.5, 0.0, 1.0, 1.5])
    x = _np(random.binomial(K, n, p))
    np.testing.assert_array_equal(x[:3], [0, 0, 5])
    assert np.isnan(x[3])
    n = jnp.asarray([5.0, 500.0])
    y = _np(random.binomial(K, n, 0.5, (M // 4, 2)))
    assert y.shape == (M // 4, 2) and y.dtype == np.float32
    np.testing.assert_allclose(y.mean(0), [2.5, 250], rtol=0.02)
    f = lambda k: random.binomial(k, n, 0.3, (3, 2))  # noqa: E731
    keys = random.split(random.key(1), 2)
    np.testing.assert_array_equal(_np(fnx.vmap(f)(keys)), np.stack([_np(f(k)) for k in keys]))
    np.testing.assert_array_equal(_np(fnx.jit(f)(keys[0])), _np(f(keys[0])))


def test_multinomial():
    p = np.array([0.2, 0.3, 0.1, 0.4])
    n = 30
    x = _np(random.multinomial(K, float(n), jnp.asarray(p), shape=(M // 4, 4), dtype=F64))
    assert x.shape == (M // 4, 4) and (x >= 0).all() and (x.sum(1) == n).all()
    np.testing.assert_allclose(x.mean(0), n * p, atol=5 * math.sqrt(n * 0.25 / (M // 4)))
    # the covariance of two categories is -n p_i p_j
    _within(np.cov(x[:, 0], x[:, 1])[0, 1], -n * p[0] * p[1], 0.15)
    # batched trial counts, and unnormalised p
    y = _np(random.multinomial(K, jnp.asarray([5.0, 100.0]), jnp.asarray([1.0, 1.0]),
                               shape=(2, 2)))
    assert y.shape == (2, 2)
    np.testing.assert_array_equal(y.sum(1), [5, 100])


@pytest.mark.x32
def test_typed_keys_as_jax():
    jax = _jax()
    k, fk = jax.random.key(42), random.key(42)
    assert repr(fk) == repr(k) and str(fk) == str(k)
    assert str(fnx.typeof(fk)) == str(jax.typeof(k)) == "key<fry>[]"
    assert fk.shape == k.shape and str(fk.dtype) == str(k.dtype)
    assert random.key_impl(fk) == str(jax.random.key_impl(k))
    assert jnp.issubdtype(fk.dtype, fnx.dtypes.prng_key)
    assert not jnp.issubdtype(jnp.float32, fnx.dtypes.prng_key)
    ks, fks = jax.random.split(k, 3), random.split(fk, 3)
    assert repr(fks) == repr(ks) and fks.shape == (3,) and fks[1].shape == ()
    np.testing.assert_array_equal(_np(random.key_data(fks)), np.asarray(jax.random.key_data(ks)))
    data = np.array([[1, 2], [3, 4]], np.uint32)
    w, fw = jax.random.wrap_key_data(data), random.wrap_key_data(data)
    assert repr(fw) == repr(w)
    np.testing.assert_array_equal(_np(random.bits(fw[1], (4,))),
                                  np.asarray(jax.random.bits(w[1], (4,))))
    # keys through jit, vmap, a scan carry, unpacking, reshape
    np.testing.assert_array_equal(_np(fnx.jit(lambda k: random.fold_in(k, 3))(fk)),
                                  np.asarray(jax.random.key_data(jax.random.fold_in(k, 3))))
    np.testing.assert_array_equal(_np(fnx.vmap(lambda k: random.bits(k, (2,)))(fks)),
                                  np.asarray(jax.vmap(lambda k: jax.random.bits(k, (2,)))(ks)))
    out = fnx.vmap(random.split)(fks)
    assert isinstance(out, fnx.prng.KeyArray) and out.shape == (3, 2)

    def step(key, _):
        key, sub = random.split(key)
        return key, random.bits(sub)

    def jstep(key, _):
        key, sub = jax.random.split(key)
        return key, jax.random.bits(sub)
    last, draws = fnx.lax.scan(step, fk, None, length=4)
    jlast, jdraws = jax.lax.scan(jstep, k, None, length=4)
    np.testing.assert_array_equal(_np(draws), np.asarray(jdraws))
    assert repr(last) == repr(jlast)
    a, b = random.split(fk)
    ja, jb = jax.random.split(k)
    assert repr(b) == repr(jb)
    assert fks.reshape(3, 1).shape == (3, 1) and repr(fks.reshape(3, 1)) == repr(ks.reshape(3, 1))
    np.testing.assert_array_equal(np.asarray(fks == fks), [True] * 3)
    with pytest.raises(ValueError, match="single key"):
        random.normal(fks)
    with pytest.raises(TypeError):
        np.asarray(fk)


@pytest.mark.x32
def test_typed_keys_through_control_flow_and_grad_as_jax():
    jax = _jax()

    def program(lib):
        r = lib.random
        k = r.key(1)
        seen = [repr(lib.vmap(r.key)(lib.numpy.arange(3))),
                repr(lib.lax.fori_loop(0, 3, lambda i, k: r.fold_in(k, i), k)),
                repr(lib.lax.cond(True, lambda k: r.split(k)[0], lambda k: k, k))]
        printed = []
        lib.jit(lambda k: printed.append(repr(k)) or r.uniform(k))(k)
        seen.append(printed[0])
        g = lib.grad(lambda w, k: (w * r.normal(k, (2,))).sum())(lib.numpy.ones(2), k)
        seen.append(np.round(np.asarray(g), 5).tolist())
        state = lib.jit(lambda s: s)({"k": k, "w": lib.numpy.ones(2)})
        seen.append(str(state["k"].dtype))
        return seen
    assert program(fnx) == program(jax)

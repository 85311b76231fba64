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
    return np.asarray(x)


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
    np.testing.assert_array_equal(_np(random.key(0)), [0, 0])
    assert random.key(0).dtype == np.uint32
    # jax.random.split(jax.random.key(0)) with JAX's default (partitionable) Threefry
    np.testing.assert_array_equal(_np(random.split(random.key(0))),
                                  [[1797259609, 2579123966], [928981903, 3453687069]])
    # split is fold-like: the i-th key is fold_in(key, i)
    k = random.key(123)
    ks = random.split(k, 5)
    for i in range(5):
        np.testing.assert_array_equal(_np(ks[i]), _np(random.fold_in(k, i)))


def test_seeds():
    np.testing.assert_array_equal(_np(random.key(-1)), [0, 2**32 - 1])
    np.testing.assert_array_equal(_np(random.key(np.int64(2**40 + 5))), [2**8, 5])
    np.testing.assert_array_equal(_np(random.key(jnp.asarray(7))), [0, 7])
    with pytest.raises(TypeError, match="integer"):
        random.key(1.5)
    with pytest.raises(TypeError, match="one key"):
        random.uniform(random.split(random.key(0), 3), (2,))


def test_reproducible_and_key_sensitive():
    k = random.key(7)
    a = _np(random.normal(k, (100,)))
    np.testing.assert_array_equal(a, _np(random.normal(random.key(7), (100,))))
    assert not np.allclose(a, _np(random.normal(random.key(8), (100,))))
    assert not np.allclose(a, _np(random.normal(random.fold_in(k, 1), (100,))))


def test_split_keys_are_distinct_and_independent():
    keys = _np(random.split(random.key(3), 1000))
    assert len({tuple(k) for k in keys}) == 1000
    k1, k2 = random.split(random.key(3))
    a, b = _np(random.normal(k1, (N,))), _np(random.normal(k2, (N,)))
    _within(np.corrcoef(a, b)[0, 1], 0.0, 1 / math.sqrt(N))
    assert random.split(random.key(0), (2, 3)).shape == (2, 3, 2)


def test_bits_dtypes_and_uniformity():
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        b = random.bits(random.key(1), (1000,), dt)
        assert b.dtype == dt and b.shape == (1000,)
    b = _np(random.bits(random.key(1), (N,)))
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

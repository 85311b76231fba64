"""The PRNG implementations other than the default against JAX on the CPU: ``rbg`` and
``unsafe_rbg`` keys (Philox bits, as XLA's RngBitGenerator), ``jax_default_prng_impl``,
Threefry's original scheme (``jax_threefry_partitionable=False``) and
``lax.rng_bit_generator``, with fresh seeds (printed in each message)."""
import contextlib

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
import fnx.random as random

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

RBG = ["rbg", "unsafe_rbg"]


def _seed():
    return int(np.random.default_rng().integers(0, 2 ** 31))


def _same_bits(ours, theirs, what):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (what, ours.dtype,
                                                                        theirs.dtype)
    np.testing.assert_array_equal(ours, theirs, err_msg=str(what))


@contextlib.contextmanager
def _both(option, value):
    """A JAX option set in fnx and in JAX, restored after."""
    old_fnx, old_jax = getattr(fnx.config, option), getattr(jax.config, "jax_" + option)
    fnx.config.update("jax_" + option, value)
    jax.config.update("jax_" + option, value)
    try:
        yield
    finally:
        fnx.config.update("jax_" + option, old_fnx)
        jax.config.update("jax_" + option, old_jax)


# sampler(r, key) -> array, with r one of fnx.random / jax.random; bits compare exactly
DRAWS = {
    "key_data": lambda r, k: r.key_data(k),
    "split": lambda r, k: r.key_data(r.split(k, (2, 3))),
    "fold_in": lambda r, k: r.key_data(r.fold_in(k, 987654321)),
    "bits8": lambda r, k: r.bits(k, (3, 5), np.uint8),
    "bits16": lambda r, k: r.bits(k, (7,), np.uint16),
    "bits32": lambda r, k: r.bits(k, (3, 5)),
    "bits64": lambda r, k: r.bits(k, (5,), np.uint64),
    "randint": lambda r, k: r.randint(k, (9,), -5, 100),
    "permutation": lambda r, k: r.permutation(k, 12),
    "uniform": lambda r, k: r.uniform(k, (4, 3)),
    "choice": lambda r, k: r.choice(k, 10, (4,), replace=False),
}
# floats through XLA's own log/erf: a few ulps
FLOATS = {
    "normal": lambda r, k: r.normal(k, (50,), np.float32),
    "gamma": lambda r, k: r.gamma(k, np.array([0.3, 2.0, 9.0], np.float32), (2, 3),
                                  np.float32),
}


@pytest.mark.parametrize("impl", RBG)
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_rbg_keys_draw_jax_bits(impl, name):
    seed = _seed()
    draw = DRAWS[name]
    theirs = draw(jax.random, jax.random.key(seed, impl=impl))
    _same_bits(draw(random, random.key(seed, impl=impl)), theirs, (impl, name, seed))
    jitted = fnx.jit(lambda k: draw(random, k))
    _same_bits(jitted(random.key(seed, impl=impl)), theirs, (impl, name, seed, "jit"))


@pytest.mark.parametrize("impl", RBG)
@pytest.mark.parametrize("name", sorted(FLOATS))
def test_rbg_keys_sample_like_jax(impl, name):
    seed = _seed()
    draw = FLOATS[name]
    np.testing.assert_allclose(draw(random, random.key(seed, impl=impl)),
                               draw(jax.random, jax.random.key(seed, impl=impl)),
                               rtol=1e-5, err_msg=str((impl, name, seed)))


@pytest.mark.parametrize("impl", RBG)
def test_rbg_keys_under_vmap_and_their_dtype(impl):
    seed = _seed()
    keys = random.split(random.key(seed, impl=impl), 3)
    assert keys.dtype == random.key_dtype(impl) and str(keys.dtype) == str(
        jax.random.key_dtype(impl)) and random.key_impl(keys) == impl
    # JAX does not promise these keys the same bits under vmap (its batched generator draws
    # from the first key); fnx's are: each key's own, as drawn one at a time
    theirs = np.stack([jax.random.bits(k, (4,))
                       for k in jax.random.split(jax.random.key(seed, impl=impl), 3)])
    _same_bits(fnx.vmap(lambda k: random.bits(k, (4,)))(keys), theirs, (impl, seed))
    assert repr(random.key(0, impl=impl)) == repr(jax.random.key(0, impl=impl))
    data = random.key_data(keys)
    assert random.key_impl(random.wrap_key_data(data, impl=impl)) == impl
    with pytest.raises(TypeError, match=r"uint32\[\.\.\., 4\]"):
        random.wrap_key_data(data[..., :2], impl=impl)


@pytest.mark.parametrize("impl", RBG)
def test_the_default_impl_option_makes_raw_keys_of_that_impl(impl):
    seed = _seed()
    with _both("default_prng_impl", impl):
        raw, theirs = random.PRNGKey(seed), jax.random.PRNGKey(seed)
        _same_bits(raw, theirs, (impl, seed))
        _same_bits(random.split(raw), jax.random.split(theirs), (impl, seed, "split"))
        _same_bits(random.bits(raw, (6,)), jax.random.bits(theirs, (6,)), (impl, seed))
        assert random.key(seed).dtype == random.key_dtype(impl)
    with pytest.raises(fnx.errors.ArgumentTypeError, match=r"uint32\[2\]"):
        random.bits(raw, (2,))      # four-word data read as a default (Threefry) key


def test_an_unknown_impl_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown PRNG implementation 'philox'"):
        random.key(0, impl="philox")
    with pytest.raises(ValueError, match="default_prng_impl"):
        fnx.config.update("jax_default_prng_impl", "philox")
    assert fnx.config.default_prng_impl == "threefry2x32"


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_threefry_original_scheme_draws_jax_bits(name):
    seed = _seed()
    draw = DRAWS[name]
    with _both("threefry_partitionable", False):
        theirs = draw(jax.random, jax.random.key(seed))
        _same_bits(draw(random, random.key(seed)), theirs, (name, seed))


def test_seeds_keep_their_high_word_with_x64():
    seeds = [-1, 2 ** 40 + 3, -2 ** 40, int(np.random.default_rng().integers(2 ** 33, 2 ** 62))]
    for seed in seeds:
        _same_bits(random.key_data(random.key(seed)),
                   jax.random.key_data(jax.random.key(seed)), seed)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_rng_bit_generator_matches_xla_philox(dtype):
    rng = np.random.default_rng()
    words = rng.integers(0, 2 ** 32, 4, dtype=np.uint64).astype(np.uint32)
    # a counter about to carry out of its low words, and a fresh one
    for state in (np.array([words[0], words[1], 2 ** 32 - 2, 2 ** 32 - 1], np.uint32), words):
        ours = fnx.lax.rng_bit_generator(jnp.asarray(state), (3, 7), dtype)
        theirs = jax.lax.rng_bit_generator(state, (3, 7), dtype)
        for a, b, what in zip(ours, theirs, ("state", "bits")):
            _same_bits(a, b, (what, state, dtype))
    with pytest.raises(NotImplementedError, match="RNG_THREE_FRY"):
        fnx.lax.rng_bit_generator(jnp.asarray(words), (2,),
                                  algorithm=fnx.lax.RandomAlgorithm.RNG_THREE_FRY)

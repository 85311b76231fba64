"""fnx.random: counter-based pseudo-random numbers with JAX's API and bits.

A key is a ``uint32[2]`` array (JAX's raw "legacy" keys). Every sampler hashes a counter with
Threefry-2x32 (20 rounds), built from fnx primitives (uint32 add, xor and shifts), so sampling
works under ``jit``, ``vmap`` and ``grad`` and gives the same bits on every backend. Keys are split
and folded with JAX's current scheme (``jax_threefry_partitionable=True``, JAX's default since
0.5), and the samplers follow JAX's algorithms, so a program ported from JAX draws the same
numbers.

>>> import fnx.random as random
>>> key = random.key(0)
>>> key, sub = random.split(key)
>>> x = random.normal(sub, (3,))
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import numpy as jnp
from .core import dtypes, lax
from .core.api import stop_gradient
from .core.core import Tracer, get_aval

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_U32 = dtypes.uint32


# ---------------------------------------------------------------------------------------------
# Threefry-2x32


def _u32(v: int):
    return np.uint32(v)


def _rotate_left(x, r: int):
    return lax.bitwise_or(lax.shift_left(x, _u32(r)), lax.shift_right_logical(x, _u32(32 - r)))


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry_2x32(k1, k2, x1, x2):
    """The Threefry-2x32 block cipher (20 rounds) of counters ``(x1, x2)`` under key
    ``(k1, k2)``: all uint32, the key words 0-d. Returns the two output words.

    >>> [hex(int(w)) for w in threefry_2x32(*[np.uint32(0)] * 4)]
    ['0x6b200159', '0x99ba4efe']
    """
    ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _u32(0x1BD11BDA)))
    x = [lax.add(x1, ks[0]), lax.add(x2, ks[1])]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x[0] = lax.add(x[0], x[1])
            x[1] = lax.bitwise_xor(x[0], _rotate_left(x[1], r))
        x[0] = lax.add(x[0], ks[(i + 1) % 3])
        x[1] = lax.add(lax.add(x[1], ks[(i + 2) % 3]), _u32(i + 1))
    return x[0], x[1]


# ---------------------------------------------------------------------------------------------
# Keys


def _check_key(key, name: str):
    aval = get_aval(key)
    if aval.shape != (2,) or aval.dtype != _U32:
        raise TypeError(f"random.{name} expects one key, a uint32[2] array from random.key or "
                        f"random.split, got {aval.str_short()}; for a batch of keys use "
                        "fnx.vmap")
    return key


def _key_words(key):
    return (lax.reshape(lax.slice_in_dim(key, 0, 1), ()),
            lax.reshape(lax.slice_in_dim(key, 1, 2), ()))


def _seed_words(seed):
    """The (high, low) uint32 words of an integer seed."""
    if isinstance(seed, (bool, float, complex)):
        raise TypeError(f"a PRNG seed must be an integer, got {seed!r}")
    if isinstance(seed, int):
        return _u32(0), _u32(seed % 2 ** 32)   # JAX's 32-bit default keeps the low word
    if isinstance(seed, (np.integer, np.ndarray)):
        s = np.asarray(seed)
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"a PRNG seed must be an integer scalar, got {s.dtype}{s.shape}")
        v = int(s)
        hi = (v >> 32) % 2 ** 32 if s.dtype.itemsize == 8 else 0
        return _u32(hi), _u32(v % 2 ** 32)
    seed = jnp.asarray(seed)
    if seed.shape != () or seed.dtype.kind not in "iu":
        raise TypeError(f"a PRNG seed must be an integer scalar, got {seed.dtype}{seed.shape}")
    lo = lax.convert_element_type(seed, _U32)
    if seed.dtype.itemsize == 8:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed, np.array(32, seed.dtype)), _U32)
    else:
        hi = lax.full((), 0, _U32)
    return hi, lo


def PRNGKey(seed) -> jnp.ndarray:  # noqa: N802 - JAX's name
    """A key from an integer seed: ``uint32[2]``, as ``jax.random.PRNGKey``.

    >>> PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    hi, lo = _seed_words(seed)
    return jnp.stack([jnp.asarray(hi, _U32), jnp.asarray(lo, _U32)])


def key(seed) -> jnp.ndarray:
    """A key from an integer seed. fnx keys are raw ``uint32[2]`` arrays, so this equals
    ``PRNGKey(seed)``.

    >>> key(0)
    Array([0, 0], dtype=uint32)
    """
    return PRNGKey(seed)


def key_data(keys):
    """The raw ``uint32`` data of keys (fnx keys are already raw)."""
    return jnp.asarray(keys)


def wrap_key_data(key_bits):
    """Keys from raw ``uint32[..., 2]`` data."""
    return jnp.asarray(key_bits, _U32)


def _iota_2x32(shape):
    """The flat index of every position of ``shape`` as (high, low) uint32 words."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError("fnx.random draws fewer than 2**32 numbers per call")
    lo = lax.reshape(lax.iota(_U32, size), shape)
    return lax.full(shape, 0, _U32), lo


def split(key, num: int | Sequence[int] = 2):
    """``num`` new keys (an array of shape ``(num, 2)``, or ``(*num, 2)`` for a shape).

    >>> k1, k2 = split(key(0))
    """
    _check_key(key, "split")
    shape = (int(num),) if isinstance(num, (int, np.integer)) else tuple(int(n) for n in num)
    k1, k2 = _key_words(key)
    b1, b2 = threefry_2x32(k1, k2, *_iota_2x32(shape))
    return jnp.stack([b1, b2], axis=len(shape))


def fold_in(key, data):
    """A new key from ``key`` and an integer (e.g. a step number), as ``jax.random.fold_in``.

    >>> k = fold_in(key(0), 7)
    """
    _check_key(key, "fold_in")
    hi, lo = _seed_words(data)
    k1, k2 = _key_words(key)
    b1, b2 = threefry_2x32(k1, k2, hi, lo)
    return jnp.stack([jnp.asarray(b1, _U32), jnp.asarray(b2, _U32)])


# ---------------------------------------------------------------------------------------------
# Bits


def _shape(shape, name):
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"random.{name}: shape must be a tuple of ints, got {shape!r}") from None


def _random_bits(key, bit_width: int, shape):
    k1, k2 = _key_words(key)
    b1, b2 = threefry_2x32(k1, k2, *_iota_2x32(shape))
    if bit_width == 64:
        hi = lax.convert_element_type(b1, dtypes.uint64)
        lo = lax.convert_element_type(b2, dtypes.uint64)
        return lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, _UINT[bit_width])


def bits(key, shape=(), dtype=None):
    """Uniform random unsigned integers filling every bit of ``dtype`` (default uint32).

    >>> bits(key(0), (2,))
    """
    _check_key(key, "bits")
    dtype = dtypes.canonicalize(dtype or _U32)
    if dtype.kind != "u":
        raise TypeError(f"random.bits needs an unsigned integer dtype, got {dtype}")
    return _random_bits(key, 8 * dtype.itemsize, _shape(shape, "bits"))


# ---------------------------------------------------------------------------------------------
# Continuous distributions


def _float_dtype(dtype, name):
    dtype = dtypes.canonicalize(dtype if dtype is not None else dtypes.default_float)
    if dtypes.kind(dtype) != "f":
        raise TypeError(f"random.{name} needs a floating-point dtype, got {dtype}")
    return dtype


def _as_dtype(v, dtype):
    # Python numbers go through NumPy so that a float64 bound keeps every bit
    if isinstance(v, (int, float)) or isinstance(v, np.generic):
        return lax.convert_element_type_p.bind(np.asarray(v, dtype), new_dtype=dtype,
                                               weak_type=False)
    return jnp.asarray(v, dtype)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)``: random mantissa bits under the exponent of 1.0.

    >>> uniform(key(0), (2, 3), minval=-1.0, maxval=1.0)
    """
    _check_key(key, "uniform")
    dtype = _float_dtype(dtype, "uniform")
    shape = _shape(shape, "uniform")
    minval = jnp.broadcast_to(_as_dtype(minval, dtype), shape)
    maxval = jnp.broadcast_to(_as_dtype(maxval, dtype), shape)
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits
    raw = _random_bits(key, rng_bits, shape)
    uint = _UINT[nbits]
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint)
    one_bits = np.array(1.0, dtype).view(uint)
    float_bits = lax.bitwise_or(lax.shift_right_logical(raw, uint.type(rng_bits - nmant)),
                                one_bits)
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.array(1.0, dtype))
    return lax.max_(minval, lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval))


def normal(key, shape=(), dtype=None):
    """Standard normal samples: ``sqrt(2) * erf_inv(u)`` with ``u`` uniform on (-1, 1).

    >>> normal(key(0), (1000,)).std()   # about 1
    """
    _check_key(key, "normal")
    dtype = _float_dtype(dtype, "normal")
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform(key, shape, dtype, lo, 1.0)
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal samples conditioned on ``lower < x < upper``.

    >>> truncated_normal(key(0), -2.0, 2.0, (5,))
    """
    _check_key(key, "truncated_normal")
    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = _as_dtype(lower, dtype), _as_dtype(upper, dtype)
    shape = _shape(shape, "truncated_normal") if shape is not None else \
        jnp.broadcast_shapes(lower.shape, upper.shape)
    sqrt2 = np.array(np.sqrt(2), dtype)
    a, b = lax.erf(lower / sqrt2), lax.erf(upper / sqrt2)
    u = uniform(key, shape, dtype, a, b)
    out = lax.erf_inv(u) * sqrt2
    # rounding may land on the bounds; keep the interval open
    low = jnp.nextafter(stop_gradient(lower), np.array(np.inf, dtype))
    high = jnp.nextafter(stop_gradient(upper), np.array(-np.inf, dtype))
    return jnp.clip(out, low, high)


def exponential(key, shape=(), dtype=None):
    """Exponential samples with rate 1."""
    _check_key(key, "exponential")
    dtype = _float_dtype(dtype, "exponential")
    return -jnp.log1p(-uniform(key, shape, dtype))


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel samples ``-log(-log(u))``."""
    _check_key(key, "gumbel")
    dtype = _float_dtype(dtype, "gumbel")
    u = uniform(key, shape, dtype, dtypes.finfo(dtype).tiny, 1.0)
    return -jnp.log(-jnp.log(u))


# ---------------------------------------------------------------------------------------------
# Discrete distributions


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p``.

    >>> bernoulli(key(0), 0.3, (4,))
    """
    _check_key(key, "bernoulli")
    p = jnp.asarray(p)
    if dtypes.kind(p.dtype) != "f":
        p = p.astype(dtypes.default_float)
    shape = p.shape if shape is None else _shape(shape, "bernoulli")
    return uniform(key, shape, p.dtype) < jnp.broadcast_to(p, shape)


def _int_bound(v, dtype):
    """``v`` clipped into ``dtype``'s range, and whether it was above the range."""
    info = np.iinfo(dtype)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = int(v)
        return jnp.asarray(min(max(v, info.min), info.max), dtype), v > info.max
    v = jnp.asarray(v)
    if v.dtype.kind not in "iu":
        raise TypeError(f"random.randint bounds must be integers, got {v.dtype}")
    vinfo = np.iinfo(v.dtype)
    above = v > info.max if vinfo.max > info.max else jnp.zeros(v.shape, bool)
    if vinfo.max > info.max or vinfo.min < info.min:
        v = jnp.clip(v, max(info.min, vinfo.min), min(info.max, vinfo.max))
    return v.astype(dtype), above


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform in ``[minval, maxval)``, from two words of bits per draw (so the bias
    for spans that are not powers of two is tiny), as ``jax.random.randint``.

    >>> randint(key(0), (3,), 0, 10)
    """
    _check_key(key, "randint")
    dtype = dtypes.canonicalize(dtype or dtypes.default_int)
    if dtype.kind not in "iu":
        raise TypeError(f"random.randint needs an integer dtype, got {dtype}")
    shape = _shape(shape, "randint")
    minval, _ = _int_bound(minval, dtype)
    maxval, above = _int_bound(maxval, dtype)
    minval, maxval = jnp.broadcast_to(minval, shape), jnp.broadcast_to(maxval, shape)
    above = jnp.broadcast_to(jnp.asarray(above), shape)
    nbits = 8 * dtype.itemsize
    unsigned = _UINT[nbits]
    k1, k2 = split(key)
    higher, lower = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    one = jnp.ones(shape, unsigned)
    span = jnp.where(maxval <= minval, one, span)
    # a maxval just past the dtype's range makes the span one larger (0 for the full range)
    span = jnp.where(above & (maxval > minval), lax.add(span, one), span)
    full_range = span == 0
    safe = jnp.where(full_range, one, span)
    # the remainder of the 2*nbits-bit number (higher, lower) by span, without overflow
    multiplier = lax.rem(jnp.full(shape, 2 ** (nbits // 2), unsigned), safe)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), safe)
    offset = lax.add(lax.mul(lax.rem(higher, safe), multiplier), lax.rem(lower, safe))
    offset = jnp.where(full_range, lower, lax.rem(offset, safe))
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def categorical(key, logits, axis: int = -1, shape=None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the
    Gumbel-max trick).

    >>> categorical(key(0), jnp.log(jnp.array([0.2, 0.8])), shape=(5,))
    """
    _check_key(key, "categorical")
    logits = jnp.asarray(logits)
    if dtypes.kind(logits.dtype) != "f":
        logits = logits.astype(dtypes.default_float)
    axis = axis % logits.ndim
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch_shape if shape is None else _shape(shape, "categorical")
    if tuple(shape[len(shape) - len(batch_shape):]) != batch_shape:
        raise ValueError(f"random.categorical: shape {shape} must end with the logits' batch "
                         f"shape {batch_shape}")
    prefix = tuple(shape[:len(shape) - len(batch_shape)])
    noise_shape = list(shape[len(shape) - len(batch_shape):])
    noise_shape.insert(axis, logits.shape[axis])
    noise = gumbel(key, prefix + tuple(noise_shape), logits.dtype)
    expanded = jnp.reshape(logits, (1,) * len(prefix) + logits.shape)
    return jnp.argmax(noise + expanded, axis=axis + len(prefix))


def _shuffle(key, x, axis):
    # sorting by random 32-bit keys; enough rounds that ties (which keep order) are unlikely
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, sub = split(key)
        sort_keys = _random_bits(sub, 32, x.shape)
        _, x = lax.sort([sort_keys, x], dimension=axis, num_keys=1)
    return x


def permutation(key, x, axis: int = 0, independent: bool = False):
    """A random permutation of ``arange(x)`` for an int ``x``, else of ``x`` along ``axis``
    (each slice permuted separately with ``independent=True``).

    >>> permutation(key(0), 5)
    """
    _check_key(key, "permutation")
    if isinstance(x, (int, np.integer)) or (not isinstance(x, Tracer) and np.ndim(x) == 0
                                            and np.asarray(x).dtype.kind in "iu"):
        return _shuffle(key, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    if x.ndim == 0:
        raise TypeError("random.permutation needs an integer or an array of rank >= 1")
    axis = axis % x.ndim
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, order, axis=axis)


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0):
    """Samples from ``a`` (an array, or ``arange(a)`` for an int) along ``axis``, with or
    without replacement, uniformly or with probabilities ``p``.

    >>> choice(key(0), 10, (3,), replace=False)
    """
    _check_key(key, "choice")
    shape = _shape(shape, "choice")
    if isinstance(a, (int, np.integer)):
        arr, n = None, int(a)
    else:
        arr = jnp.asarray(a)
        axis = axis % max(arr.ndim, 1)
        n = arr.shape[axis] if arr.ndim else int(arr)
        arr = arr if arr.ndim else None
    draws = math.prod(shape)
    if n <= 0:
        raise ValueError("random.choice needs a non-empty population")
    if not replace and draws > n:
        raise ValueError(f"random.choice cannot take {draws} samples from {n} without "
                         "replacement")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n)
        else:
            ind = jnp.reshape(permutation(key, n)[:draws], shape)
    else:
        p = jnp.asarray(p)
        if p.shape != (n,):
            raise ValueError(f"random.choice: p must have shape ({n},), got {p.shape}")
        if replace:
            cumulative = jnp.cumsum(p)
            r = cumulative[-1] * (1 - uniform(key, shape, cumulative.dtype))
            ind = jnp.searchsorted(cumulative, r).astype(dtypes.default_int)
        else:
            # Gumbel top-k: the largest perturbed log-probabilities are a sample without
            # replacement
            g = gumbel(key, (n,), p.dtype) + jnp.log(p)
            ind = jnp.reshape(jnp.argsort(-g)[:draws], shape)
    if arr is None:
        return ind
    return jnp.take(arr, ind, axis=axis)


__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform",
           "normal", "truncated_normal", "exponential", "gumbel", "bernoulli", "randint",
           "categorical", "permutation", "choice", "threefry_2x32"]

"""The bits behind PRNG keys, one set of rules per implementation, as JAX's:

* ``threefry2x32`` (the default): the Threefry-2x32 block cipher of a counter. Keys are split
  and bits drawn with JAX's current scheme (``jax_threefry_partitionable=True``) or, with that
  option off, with JAX's original one, so a program that sets it draws JAX's numbers either way;
* ``rbg`` and ``unsafe_rbg``: four-word keys whose bits come from XLA's ``RngBitGenerator``
  (Philox-4x32, 10 rounds, over a 128-bit counter: the key's first two words and its last two,
  as XLA's CPU and GPU backends compute it). ``rbg`` splits and folds each half of its key with
  Threefry; ``unsafe_rbg`` splits and folds with the generator's own bits.

Everything is built from uint32 ``lax`` operations on one key's data, so every transformation
applies. ``rng_bit_generator`` is ``lax.rng_bit_generator`` for four-word Philox states.

>>> import fnx.numpy as jnp
>>> state, bits = rng_bit_generator(jnp.array([1, 2, 3, 4], jnp.uint32), (3,))
>>> [int(w) for w in state]
[1, 2, 4, 4]
"""
from __future__ import annotations

import math

import numpy as np

from . import numpy as jnp
from .core import dtypes, lax
from .core.config import config
from .lax.bits import _mulhi_unsigned

_U32 = dtypes.uint32
_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


def _u32(v: int):
    return np.uint32(v)


def _word(data, i: int):
    return lax.reshape(lax.slice_in_dim(data, i, i + 1), ())


# ---------------------------------------------------------------------------------------------
# Threefry-2x32

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotate_left(x, r: int):
    return lax.bitwise_or(lax.shift_left(x, _u32(r)), lax.shift_right_logical(x, _u32(32 - r)))


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


def threefry_flat(key, counts):
    """JAX's ``threefry_2x32(key, counts)`` of a flat uint32 array: its halves are the two
    counter words (a zero pads an odd length)."""
    n = counts.shape[0]
    if n % 2:
        counts = lax.concatenate([counts, lax.full((1,), 0, _U32)], 0)
    half = counts.shape[0] // 2
    y1, y2 = threefry_2x32(_word(key, 0), _word(key, 1), lax.slice_in_dim(counts, 0, half),
                           lax.slice_in_dim(counts, half, 2 * half))
    return lax.slice_in_dim(lax.concatenate([y1, y2], 0), 0, n)


def iota_2x32(shape):
    """The flat index of every position of ``shape`` as (high, low) uint32 words."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError("fnx.random draws fewer than 2**32 numbers per call")
    lo = lax.reshape(lax.iota(_U32, size), shape)
    return lax.full(shape, 0, _U32), lo


def _threefry_split(key, shape):
    if config.threefry_partitionable:
        b1, b2 = threefry_2x32(_word(key, 0), _word(key, 1), *iota_2x32(shape))
        return jnp.stack([b1, b2], axis=len(shape))
    num = math.prod(shape)
    return lax.reshape(threefry_flat(key, lax.iota(_U32, 2 * num)), tuple(shape) + (2,))


def _threefry_fold_in(key, hi, lo):
    b1, b2 = threefry_2x32(_word(key, 0), _word(key, 1), hi, lo)
    return jnp.stack([jnp.asarray(b1, _U32), jnp.asarray(b2, _U32)])


def _threefry_bits(key, bit_width: int, shape):
    if config.threefry_partitionable:
        b1, b2 = threefry_2x32(_word(key, 0), _word(key, 1), *iota_2x32(shape))
        if bit_width == 64:
            return _join64(b1, b2)
        bits = lax.bitwise_xor(b1, b2)
        return bits if bit_width == 32 else lax.convert_element_type(bits, _UINT[bit_width])
    size = math.prod(shape)
    count = -(-bit_width * size // 32)
    if count >= 2 ** 32 - 1:
        raise NotImplementedError("fnx.random draws fewer than 2**32 numbers per call")
    bits = threefry_flat(key, lax.iota(_U32, count))
    if bit_width == 64:
        bits = _join64(lax.slice_in_dim(bits, 0, size), lax.slice_in_dim(bits, size, 2 * size))
    elif bit_width < 32:       # each word's narrow fields, lowest first
        per = 32 // bit_width
        shifts = lax.mul(_u32(bit_width), lax.broadcasted_iota(_U32, (count, per), 1))
        fields = lax.shift_right_logical(lax.broadcast_in_dim(bits, (count, per), (0,)), shifts)
        bits = lax.convert_element_type(lax.reshape(fields, (count * per,)), _UINT[bit_width])
        bits = lax.slice_in_dim(bits, 0, size)
    return lax.reshape(bits, tuple(shape))


def _join64(hi, lo):
    u64 = dtypes.uint64
    return lax.bitwise_or(lax.shift_left(lax.convert_element_type(hi, u64), np.uint64(32)),
                          lax.convert_element_type(lo, u64))


# ---------------------------------------------------------------------------------------------
# Philox-4x32, as XLA's RngBitGenerator

_PHILOX_MUL = (_u32(0xD2511F53), _u32(0xCD9E8D57))
_PHILOX_STEP = (0x9E3779B9, 0xBB67AE85)


def philox_4x32(x, k0, k1):
    """Ten Philox-4x32 rounds of the counter words ``x`` (four uint32 arrays) under the key
    ``(k0, k1)`` (Python ints or 0-d uint32). Returns the four output words."""
    x = list(x)
    for _ in range(10):
        h0, l0 = _mulhi_unsigned(x[0], _PHILOX_MUL[0], 16, _U32), lax.mul(x[0], _PHILOX_MUL[0])
        h1, l1 = _mulhi_unsigned(x[2], _PHILOX_MUL[1], 16, _U32), lax.mul(x[2], _PHILOX_MUL[1])
        x = [lax.bitwise_xor(lax.bitwise_xor(h1, x[1]), k0), l1,
             lax.bitwise_xor(lax.bitwise_xor(h0, x[3]), k1), l0]
        k0, k1 = lax.add(k0, _u32(_PHILOX_STEP[0])), lax.add(k1, _u32(_PHILOX_STEP[1]))
    return x


def _philox_blocks(state, blocks: int):
    """Philox of ``blocks`` consecutive counters: the counter is 128 bits, its low 64 the
    state's last two words and its high 64 the first two (the key), as XLA lays out a
    two-word state; the state's counter advances by ``blocks``."""
    s = [_word(state, i) for i in range(4)]
    i = lax.iota(_U32, blocks)
    x0 = lax.add(s[2], i)
    c0 = lax.convert_element_type(lax.lt(x0, s[2]), _U32)
    x1 = lax.add(s[3], c0)
    c1 = lax.bitwise_and(c0, lax.convert_element_type(lax.eq(x1, _u32(0)), _U32))
    x2 = lax.add(s[0], c1)
    c2 = lax.bitwise_and(c1, lax.convert_element_type(lax.eq(x2, _u32(0)), _U32))
    x3 = lax.add(s[1], c2)
    words = philox_4x32([x0, x1, x2, x3], s[0], s[1])
    low = lax.add(s[2], _u32(blocks))
    high = lax.add(s[3], lax.convert_element_type(lax.lt(low, s[2]), _U32))
    new_state = lax.concatenate([lax.reshape(w, (1,)) for w in (s[0], s[1], low, high)], 0)
    return new_state, words


def _interleaved(words, count: int):
    stacked = lax.concatenate([lax.reshape(w, (w.shape[0], 1)) for w in words], 1)
    return lax.slice_in_dim(lax.reshape(stacked, (stacked.shape[0] * len(words),)), 0, count)


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=None, *, out_sharding=None):
    """``lax.rng_bit_generator``: XLA's ``RngBitGenerator`` with Philox-4x32 (its default
    algorithm on CPU and GPU) for a ``uint32[4]`` state. Returns ``(new_state, bits)`` with
    ``bits`` of ``shape`` and the unsigned ``dtype``.

    >>> state, bits = rng_bit_generator(jnp.zeros(4, jnp.uint32), (2,))
    >>> bits.dtype, [int(w) for w in state]
    (dtype('uint32'), [0, 0, 1, 0])
    """
    name = getattr(algorithm, "name", "RNG_DEFAULT")
    if name not in ("RNG_DEFAULT", "RNG_PHILOX"):
        raise NotImplementedError(f"rng_bit_generator draws with Philox (RNG_DEFAULT, "
                                  f"RNG_PHILOX); {name} is not supported")
    state = jnp.asarray(key)
    if state.dtype != _U32 or state.shape != (4,):
        raise TypeError(f"rng_bit_generator needs a uint32[4] key, got "
                        f"{state.dtype}{list(state.shape)}")
    dtype = dtypes.canonicalize(dtype, "rng_bit_generator")
    if dtype.kind != "u":
        raise TypeError(f"rng_bit_generator draws unsigned integers, got {dtype}")
    width = 8 * dtype.itemsize
    shape = tuple(int(d) for d in shape)
    n = math.prod(shape)
    if width == 64:
        state, w = _philox_blocks(state, -(-n // 2))
        bits = _interleaved([_join64(w[1], w[0]), _join64(w[3], w[2])], n)
    else:
        state, w = _philox_blocks(state, -(-n // 4))
        bits = _interleaved(w, n)
        if width < 32:
            bits = lax.convert_element_type(bits, dtype)
    return state, lax.convert_element_type(lax.reshape(bits, shape), dtype)


# ---------------------------------------------------------------------------------------------
# rbg and unsafe_rbg: four-word keys over the Philox generator


def _halves(key):
    return lax.slice_in_dim(key, 0, 2), lax.slice_in_dim(key, 2, 4)


def _rbg_split(key, shape):
    return lax.concatenate([_threefry_split(h, shape) for h in _halves(key)], len(shape))


def _rbg_fold_in(key, hi, lo):
    return lax.concatenate([_threefry_fold_in(h, hi, lo) for h in _halves(key)], 0)


def _rbg_bits(key, bit_width: int, shape):
    return rng_bit_generator(key, shape, _UINT[bit_width])[1]


def _unsafe_rbg_split(key, shape):
    # ten draws of the generator per key as a hash, as JAX's
    num = math.prod(shape)
    _, words = rng_bit_generator(key, (10 * num, 4), _U32)
    return lax.reshape(lax.slice(words, (0, 0), (10 * num, 4), (10, 1)), tuple(shape) + (4,))


def _unsafe_rbg_fold_in(key, hi, lo):
    _, words = rng_bit_generator(seed("rbg", hi, lo), (10, 4), _U32)
    return lax.bitwise_xor(key, lax.reshape(lax.slice_in_dim(words, 9, 10), (4,)))


# ---------------------------------------------------------------------------------------------
# The rule table


def seed(impl: str, hi, lo):
    """One key's data from a seed's (high, low) uint32 words."""
    half = jnp.stack([jnp.asarray(hi, _U32), jnp.asarray(lo, _U32)])
    return half if impl == "threefry2x32" else lax.concatenate([half, half], 0)


SPLIT = {"threefry2x32": _threefry_split, "rbg": _rbg_split, "unsafe_rbg": _unsafe_rbg_split}
FOLD_IN = {"threefry2x32": _threefry_fold_in, "rbg": _rbg_fold_in,
           "unsafe_rbg": _unsafe_rbg_fold_in}
RANDOM_BITS = {"threefry2x32": _threefry_bits, "rbg": _rbg_bits, "unsafe_rbg": _rbg_bits}

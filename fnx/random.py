"""fnx.random: counter-based pseudo-random numbers with JAX's API and bits.

``key(seed)`` gives a typed key array (dtype ``key<fry>``, ``fnx.prng.KeyArray``) and
``PRNGKey(seed)`` a raw ``uint32[2]`` array (JAX's "legacy" keys); every function takes either,
and ``split``/``fold_in`` return keys of the kind they are given. Every sampler hashes a
counter with Threefry-2x32 (20 rounds), built from fnx primitives (uint32 add, xor and
shifts), so sampling works under ``jit``, ``vmap`` and ``grad`` and gives the same bits on every
backend. Keys are split and folded with JAX's current scheme (``jax_threefry_partitionable``,
JAX's default since 0.5), or its original one with that option off. Keys of JAX's ``rbg`` and
``unsafe_rbg`` implementations (``key(seed, impl="rbg")`` or ``jax_default_prng_impl``) draw
XLA's Philox bits (``fnx.prng_impls``). Every sampler follows JAX's algorithm and
key-splitting order, so a program ported
from JAX draws JAX's numbers: bit for bit where the sampler is made of bits, comparisons and
exact float steps (``bits``, ``randint``, ``split``, ``permutation``, ``choice``,
``categorical``, ``bernoulli``, ``binomial``, ...), and to the last bits of XLA's own log, exp,
erf and fused multiply-adds elsewhere (``normal`` uses XLA's erf_inv polynomial for that). As in
JAX, ``gamma`` draws each element with its own key and rejection loop, and ``poisson`` and
``binomial`` redraw the whole array until every element has accepted. ``gamma`` and the
samplers built on it are differentiable in their parameters by implicit reparameterisation.

>>> import fnx.random as random
>>> key = random.key(0)
>>> key, sub = random.split(key)
>>> x = random.normal(sub, (3,))
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from . import numpy as jnp
from .core import dtypes, lax
from .core.api import stop_gradient, vmap
from .core.control_flow import while_loop
from .core.custom_derivatives import custom_jvp
from .core.core import Tracer, get_aval
from .core.errors import ArgumentTypeError, DTypeError
from .numpy._core import canonicalize_axis, promote_dtypes_inexact
from . import prng_impls as _impls
from .prng import IMPLS, KeyArray, resolve_impl
from .prng import KEY_DTYPES as _KEY_DTYPES
from .prng_impls import threefry_2x32
from .lax.special import digamma, lgamma

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_U32 = dtypes.uint32


# ---------------------------------------------------------------------------------------------
# Keys


def _check_key(key, name: str) -> KeyArray:
    """One key as a typed key (raw data is read as the default implementation's, as JAX's)."""
    if isinstance(key, KeyArray):
        if key.shape != ():
            raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                             f"{key.shape} != (). Use fnx.vmap for batching.")
        return key
    impl = resolve_impl()
    aval = get_aval(key)
    if aval.shape != IMPLS[impl].key_shape or aval.dtype != _U32:
        width = IMPLS[impl].key_shape[0]
        raise ArgumentTypeError(f"random.{name} expects one key, a uint32[{width}] array from "
                                f"random.PRNGKey or random.split ({impl} keys), got "
                                f"{aval.str_short()}; for a batch of keys use fnx.vmap")
    return KeyArray(key, impl)


def _seed_words(seed):
    """The (high, low) uint32 words of an integer seed."""
    if isinstance(seed, (bool, float, complex)):
        raise ArgumentTypeError(f"a PRNG seed must be an integer, got {seed!r}")
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 63:      # JAX converts the seed to int64 first
            raise OverflowError(f"PRNG seed {seed} does not fit in a 64-bit signed integer")
        if not dtypes.x64_enabled:      # JAX's 32-bit default keeps the low word
            return np.uint32(0), np.uint32(seed % 2 ** 32)
        return np.uint32((seed >> 32) % 2 ** 32), np.uint32(seed % 2 ** 32)
    if isinstance(seed, (np.integer, np.ndarray)):
        s = np.asarray(seed)
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"a PRNG seed must be an integer scalar, got {s.dtype}{s.shape}")
        v = int(s)
        hi = (v >> 32) % 2 ** 32 if s.dtype.itemsize == 8 else 0
        return np.uint32(hi), np.uint32(v % 2 ** 32)
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


def PRNGKey(seed, *, impl=None) -> jnp.ndarray:  # noqa: N802 - JAX's name
    """A raw key from an integer seed, as ``jax.random.PRNGKey``: ``uint32[2]`` for
    Threefry-2x32, ``uint32[4]`` for ``rbg`` and ``unsafe_rbg`` (``impl`` or the
    ``jax_default_prng_impl`` option).

    >>> PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    return _impls.seed(resolve_impl(impl), *_seed_words(seed))


def key(seed, *, impl=None) -> KeyArray:
    """A typed key (shape ``()``) from an integer seed, as ``jax.random.key``: of
    Threefry-2x32 (dtype ``key<fry>``), ``"rbg"`` or ``"unsafe_rbg"`` (``impl`` or the
    ``jax_default_prng_impl`` option).

    >>> key(0)
    Array((), dtype=key<fry>) overlaying:
    [0 0]
    >>> key(0, impl="rbg").dtype
    key<rbg>
    """
    impl = resolve_impl(impl)
    return KeyArray(_impls.seed(impl, *_seed_words(seed)), impl)


def key_dtype(impl_spec=None):
    """The dtype of typed keys of the PRNG implementation ``impl_spec`` (the default one if
    ``None``).

    >>> key_dtype()
    key<fry>
    """
    return _KEY_DTYPES[resolve_impl(impl_spec)]


def key_data(keys):
    """The raw ``uint32[..., W]`` data of typed keys (raw keys are returned as they are).

    >>> key_data(key(42))
    Array([ 0, 42], dtype=uint32)
    """
    return keys._data if isinstance(keys, KeyArray) else jnp.asarray(keys)


def wrap_key_data(key_bits, *, impl=None, dtype=None) -> KeyArray:
    """Typed keys over raw ``uint32[..., W]`` data (the inverse of ``key_data``) of the
    implementation ``impl``, or of the key dtype ``dtype`` (the default one if neither).

    >>> wrap_key_data(jnp.array([0, 42], jnp.uint32)).shape
    ()
    """
    if dtype is not None and impl is None:
        impl = next((name for name, dt in _KEY_DTYPES.items() if dt == dtype), None)
        if impl is None:
            raise ValueError(f"wrap_key_data: {dtype!r} is not a key dtype")
    impl = resolve_impl(impl)
    if isinstance(key_bits, KeyArray):
        raise TypeError("wrap_key_data takes raw uint32 data, got a typed key array")
    data = jnp.asarray(key_bits)
    width = IMPLS[impl].key_shape[0]
    if data.dtype != _U32 or data.ndim < 1 or data.shape[-1] != width:
        raise TypeError(f"wrap_key_data needs uint32[..., {width}] data for {impl} keys, got "
                        f"{get_aval(data).str_short()}")
    return KeyArray(data, impl)


def key_impl(keys) -> str:
    """The name of the PRNG implementation behind typed keys (``'threefry2x32'``, ``'rbg'``
    or ``'unsafe_rbg'``).

    >>> fnx.random.key_impl(fnx.random.key(0))
    'threefry2x32'
    """
    if not isinstance(keys, KeyArray):
        raise TypeError(f"key_impl takes a typed key array, got {get_aval(keys).str_short()}")
    return keys.impl.name


def clone(keys):
    """The keys themselves (JAX copies keys for its stateful implementations; fnx's keys are
    immutable values).

    >>> key = fnx.random.key(0)
    >>> bool((fnx.random.key_data(fnx.random.clone(key)) == fnx.random.key_data(key)).all())
    True
    """
    return keys


def split(key, num: int | Sequence[int] = 2):
    """``num`` new keys (an array of shape ``(num, 2)``, or ``(*num, 2)`` for a shape).

    >>> k1, k2 = split(key(0))
    """
    typed = isinstance(key, KeyArray)
    key = _check_key(key, "split")
    shape = (int(num),) if isinstance(num, (int, np.integer)) else tuple(int(n) for n in num)
    out = _impls.SPLIT[key._impl](key._data, shape)
    return KeyArray(out, key._impl) if typed else out


def fold_in(key, data):
    """A new key from ``key`` and an integer (e.g. a step number), as ``jax.random.fold_in``.

    >>> k = fold_in(key(0), 7)
    """
    typed = isinstance(key, KeyArray)
    key = _check_key(key, "fold_in")
    out = _impls.FOLD_IN[key._impl](key._data, *_seed_words(data))
    return KeyArray(out, key._impl) if typed else out


# ---------------------------------------------------------------------------------------------
# Bits


def _shape(shape, name):
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(operator.index(s) for s in shape)     # 2.5 is an error, not 2
    except TypeError:
        raise DTypeError(f"random.{name}: shape must be a tuple of ints, got {shape!r}") from None


def _random_bits(key: KeyArray, bit_width: int, shape):
    return _impls.RANDOM_BITS[key._impl](key._data, bit_width, tuple(shape))


def bits(key, shape=(), dtype=None):
    """Uniform random unsigned integers filling every bit of ``dtype`` (default uint32, uint64
    with x64 on, as in JAX).

    >>> bits(key(0), (2,))
    Array([4070199207, 4202968722], dtype=uint32)
    """
    key = _check_key(key, "bits")
    dtype = dtypes.canonicalize(dtype or dtypes.default_uint, "bits")
    if dtype.kind != "u":
        raise TypeError(f"random.bits needs an unsigned integer dtype, got {dtype}")
    return _random_bits(key, 8 * dtype.itemsize, _shape(shape, "bits"))


# ---------------------------------------------------------------------------------------------
# Continuous distributions


def _float_dtype(dtype, name):
    dtype = dtypes.canonicalize(dtype if dtype is not None else dtypes.default_float, name)
    if dtypes.kind(dtype) != "f":     # a ValueError, as JAX's
        raise ValueError(f"dtype argument to random.{name} must be a float dtype, got {dtype}")
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
    Array([[ 0.895334  ,  0.95715976, -0.33541703],
           [-0.06266308,  0.13977742, -0.66899395]], dtype=float32)
    """
    key = _check_key(key, "uniform")
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


# XLA's erf_inv (what jax.random.normal calls): Giles' single-precision polynomial in
# w = -log1p(-x**2), and for float64 a three-piece one; the same polynomials give JAX's normals
# to an ulp or two (XLA's log1p and fused multiply-adds differ in the last bits), where a
# correctly rounded erf_inv differs by tens of ulps
_ERF_INV_F32 = ((5.0, 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                            0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                            1.50140941)),
                (None, 3.0, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                             0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                             2.83297682)))
_ERF_INV_F64 = (
    (6.25, 3.125, (-3.6444120640178196996e-21, -1.685059138182016589e-19,
                   1.2858480715256400167e-18, 1.115787767802518096e-17,
                   -1.333171662854620906e-16, 2.0972767875968561637e-17,
                   6.6376381343583238325e-15, -4.0545662729752068639e-14,
                   -8.1519341976054721522e-14, 2.6335093153082322977e-12,
                   -1.2975133253453532498e-11, -5.4154120542946279317e-11,
                   1.051212273321532285e-09, -4.1126339803469836976e-09,
                   -2.9070369957882005086e-08, 4.2347877827932403518e-07,
                   -1.3654692000834678645e-06, -1.3882523362786468719e-05,
                   0.0001867342080340571352, -0.00074070253416626697512,
                   -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, (2.2137376921775787049e-09, 9.0756561938885390979e-08,
                  -2.7517406297064545428e-07, 1.8239629214389227755e-08,
                  1.5027403968909827627e-06, -4.013867526981545969e-06,
                  2.9234449089955446044e-06, 1.2475304481671778723e-05,
                  -4.7318229009055733981e-05, 6.8284851459573175448e-05,
                  2.4031110387097893999e-05, -0.0003550375203628474796,
                  0.00095328937973738049703, -0.0016882755560235047313,
                  0.0024914420961078508066, -0.0037512085075692412107,
                  0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)),
    (None, 5.0, (-2.7109920616438573243e-11, -2.5556418169965252055e-10,
                 1.5076572693500548083e-09, -3.7894654401267369937e-09,
                 7.6157012080783393804e-09, -1.4960026627149240478e-08,
                 2.9147953450901080826e-08, -6.7711997758452339498e-08,
                 2.2900482228026654717e-07, -9.9298272942317002539e-07,
                 4.5260625972231537039e-06, -1.9681778105531670567e-05,
                 7.5995277030017761139e-05, -0.00021503011930044477347,
                 -0.00013871931833623122026, 1.0103004648645343977, 4.8499064014085844221)))


def _erf_inv(x):
    """erf_inv as XLA computes it (JAX's numbers to an ulp or two): a polynomial in
    ``w - center`` for small ``w = -log1p(-x**2)`` and in ``sqrt(w) - center`` beyond, Horner
    steps from the highest degree; half precision goes through float32, as in XLA."""
    dtype = x.dtype
    if dtype != dtypes.float64 and dtype != dtypes.float32:
        return lax.convert_element_type(_erf_inv(lax.convert_element_type(x, dtypes.float32)),
                                        dtype)
    pieces = _ERF_INV_F64 if dtype == dtypes.float64 else _ERF_INV_F32
    w = -jnp.log1p(-(x * x))
    out = None
    for i, (bound, center, coefficients) in enumerate(pieces):
        t = w - _c(center, dtype) if i == 0 else jnp.sqrt(w) - _c(center, dtype)
        p = jnp.full_like(x, coefficients[0])
        for coefficient in coefficients[1:]:
            p = _c(coefficient, dtype) + p * t
        out = p if out is None else jnp.where(w < _c(previous, dtype), out, p)
        previous = bound
    out = out * x
    return jnp.where(jnp.abs(x) == _c(1, dtype), x * _c(np.inf, dtype), out)


def normal(key, shape=(), dtype=None):
    """Standard normal samples: ``sqrt(2) * erf_inv(u)`` with ``u`` uniform on (-1, 1); for a
    complex ``dtype``, real and imaginary parts of variance 1/2 each.

    >>> normal(key(0), (1000,)).std()   # about 1
    Array(0.9840744, dtype=float32)
    """
    key = _check_key(key, "normal")
    if dtype is not None and dtypes.kind(dtypes.canonicalize(dtype, "normal")) == "c":
        # independent real and imaginary parts of variance 1/2 each, JAX's draws
        dtype = dtypes.canonicalize(dtype, "normal")
        real_dtype = np.zeros((), dtype).real.dtype
        key_re, key_im = split(key)
        re, im = normal(key_re, shape, real_dtype), normal(key_im, shape, real_dtype)
        return lax.div(lax.complex_(re, im), np.array(np.sqrt(2), dtype))
    dtype = _float_dtype(dtype, "normal")
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform(key, shape, dtype, lo, 1.0)
    return lax.mul(np.array(np.sqrt(2), dtype), _erf_inv(u))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal samples conditioned on ``lower < x < upper``.

    >>> truncated_normal(key(0), -2.0, 2.0, (5,))
    Array([ 1.455959  ,  1.7147484 , -0.4126753 , -0.07503343,  0.16800097], dtype=float32)
    """
    key = _check_key(key, "truncated_normal")
    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = _as_dtype(lower, dtype), _as_dtype(upper, dtype)
    shape = _shape(shape, "truncated_normal") if shape is not None else \
        jnp.broadcast_shapes(lower.shape, upper.shape)
    sqrt2 = np.array(np.sqrt(2), dtype)
    a, b = lax.erf(lower / sqrt2), lax.erf(upper / sqrt2)
    u = uniform(key, shape, dtype, a, b)
    out = sqrt2 * _erf_inv(u)
    # rounding may land on the bounds; keep the interval open
    low = jnp.nextafter(stop_gradient(lower), np.array(np.inf, dtype))
    high = jnp.nextafter(stop_gradient(upper), np.array(-np.inf, dtype))
    return jnp.clip(out, low, high)


def exponential(key, shape=(), dtype=None):
    """Exponential samples with rate 1.

    >>> x = fnx.random.exponential(fnx.random.key(0), (3,))
    >>> x.shape, bool((x > 0).all())
    ((3,), True)
    """
    key = _check_key(key, "exponential")
    dtype = _float_dtype(dtype, "exponential")
    return -jnp.log1p(-uniform(key, shape, dtype))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel samples ``-log(-log(u))``. ``mode="high"`` draws two uniforms per
    sample for the values below 1/2, which extends the largest sample from about 16 to about
    32 in float32 (``"highest"`` is taken as ``"high"``), as JAX's modes.

    >>> fnx.random.gumbel(fnx.random.key(0), (2, 3)).shape
    (2, 3)
    """
    key = _check_key(key, "gumbel")
    dtype = _float_dtype(dtype, "gumbel")
    mode = _check_mode("gumbel", mode, ("low", "high", "highest"))
    finfo = dtypes.finfo(dtype)
    if mode == "low":
        u = uniform(key, shape, dtype, finfo.tiny, 1.0)
        return -jnp.log(-jnp.log(u))
    high, low = uniform(key, (2,) + _shape(shape, "gumbel"), dtype)
    x = jnp.where(high >= _c(0.5, dtype), high,
                  high + _c(2.0 ** -finfo.nmant, dtype) * low + _c(finfo.tiny, dtype))
    return -jnp.log(-jnp.log1p(-x))


def _check_mode(name, mode, modes):
    mode = "low" if mode is None else mode
    if mode not in modes:
        raise ValueError(f"random.{name}: mode must be one of {modes}, got {mode!r}")
    return mode


# ---------------------------------------------------------------------------------------------
# Parametrised distributions


def _param_shape(name, shape, *param_shapes):
    """JAX's rule for a sampler's shape: the parameters' broadcast shape when ``shape`` is
    None, otherwise ``shape``, which the parameters must broadcast to."""
    if shape is None:
        return tuple(jnp.broadcast_shapes(*param_shapes)) if param_shapes else ()
    shape = _shape(shape, name)
    try:
        ok = tuple(jnp.broadcast_shapes(shape, *param_shapes)) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"random.{name}: the parameters' shapes "
                         f"{', '.join(map(str, param_shapes))} do not broadcast to shape {shape}")
    return shape


def _float_params(name, key, shape, dtype, *params):
    """The checked key, the float ``dtype``, the sample shape, and the parameters in ``dtype``
    broadcast to that shape: the preamble every parametrised sampler shares."""
    key = _check_key(key, name)
    dtype = _float_dtype(dtype, name)
    params = [_as_dtype(p, dtype) for p in params]
    shape = _param_shape(name, shape, *(p.shape for p in params))
    return dtype, shape, [jnp.broadcast_to(p, shape) for p in params]


def _c(value, dtype):
    return np.array(value, dtype)


def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples (density ``exp(-|x|) / 2``), by inverting the CDF.

    >>> laplace(key(0), (3,))
    Array([-2.2569816 , -3.1502788 ,  0.40859547], dtype=float32)
    """
    key = _check_key(key, "laplace")
    dtype = _float_dtype(dtype, "laplace")
    # u in (-1, 1) keeps log1p(-|u|) finite
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform(key, shape, dtype, lo, 1.0)
    return lax.mul(lax.sign(u), jnp.log1p(-jnp.abs(u)))


def logistic(key, shape=(), dtype=None):
    """Standard logistic samples ``log(u / (1 - u))``.

    >>> logistic(key(0), (3,))
    Array([ 2.896376 ,  3.8217716, -0.6978392], dtype=float32)
    """
    key = _check_key(key, "logistic")
    dtype = _float_dtype(dtype, "logistic")
    u = uniform(key, shape, dtype, dtypes.finfo(dtype).tiny, 1.0)
    return jnp.log(u) - jnp.log1p(-u)


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples ``tan(pi * (u - 1/2))``.

    >>> cauchy(key(0), (3,))
    Array([ 6.0274944 , 14.837895  , -0.58172226], dtype=float32)
    """
    key = _check_key(key, "cauchy")
    dtype = _float_dtype(dtype, "cauchy")
    # u > 0 keeps tan away from the pole at -pi/2
    u = uniform(key, shape, dtype, dtypes.finfo(dtype).eps, 1.0)
    return jnp.tan(_c(np.pi, dtype) * (u - _c(0.5, dtype)))


def lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal samples ``exp(sigma * z)``, ``z`` standard normal.

    >>> lognormal(key(0), 0.5, (3,))
    Array([2.2508798 , 2.7528381 , 0.80509317], dtype=float32)
    """
    dtype, shape, (sigma,) = _float_params("lognormal", key, shape, dtype, sigma)
    return jnp.exp(normal(key, shape, dtype) * sigma)


def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell samples (density proportional to ``x**2 exp(-x**2 / 2)``): the norm of
    three standard normals.

    >>> maxwell(key(0), (3,))
    Array([2.6310966, 0.9910329, 0.9649306], dtype=float32)
    """
    key = _check_key(key, "maxwell")
    dtype = _float_dtype(dtype, "maxwell")
    z = normal(key, _shape(shape, "maxwell") + (3,), dtype)
    return jnp.sqrt(jnp.sum(z * z, axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples ``loc + scale * s * m``, ``m`` Maxwell and ``s`` a random
    sign; the result has shape ``shape + broadcast(loc, scale).shape``, where, as in JAX, an
    empty ``shape`` counts as ``broadcast(loc, scale).shape``.

    >>> double_sided_maxwell(key(0), 0.0, 2.0, (3,))
    Array([ 3.0914419,  3.148255 , -4.165061 ], dtype=float32)
    """
    key = _check_key(key, "double_sided_maxwell")
    dtype = _float_dtype(dtype, "double_sided_maxwell")
    loc, scale = _as_dtype(loc, dtype), _as_dtype(scale, dtype)
    param_shape = tuple(jnp.broadcast_shapes(loc.shape, scale.shape))
    shape = (_shape(shape, "double_sided_maxwell") or param_shape) + param_shape
    k1, k2 = split(key)
    return rademacher(k2, shape, dtype) * maxwell(k1, shape, dtype) * scale + loc


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples ``scale * (-log(1 - u)) ** (1 / concentration)`` with ``u`` of shape
    ``shape``; as in JAX, the result is broadcast with the parameters (so the default
    ``shape=()`` draws one ``u`` for all of them).

    >>> weibull_min(key(0), 1.0, 2.0, (3,))
    Array([1.7175937 , 1.9604654 , 0.63553405], dtype=float32)
    """
    key = _check_key(key, "weibull_min")
    dtype = _float_dtype(dtype, "weibull_min")
    scale, conc = _as_dtype(scale, dtype), _as_dtype(concentration, dtype)
    e = exponential(key, _shape(shape, "weibull_min"), dtype)
    return jnp.power(e, _c(1, dtype) / conc) * scale


def pareto(key, b, shape=None, dtype=None):
    """Pareto samples (density ``b / x**(b + 1)`` on ``x >= 1``): ``exp(e / b)``, ``e``
    exponential.

    >>> pareto(key(0), 3.0, (3,))
    Array([2.673467 , 3.6007476, 1.1441184], dtype=float32)
    """
    dtype, shape, (b,) = _float_params("pareto", key, shape, dtype, b)
    return jnp.exp(exponential(key, shape, dtype) / b)


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh samples ``scale * sqrt(-2 log(u))``.

    >>> rayleigh(key(0), 1.0, (3,))
    Array([0.32787833, 0.20810027, 1.4844142 ], dtype=float32)
    """
    dtype, shape, (scale,) = _float_params("rayleigh", key, shape, dtype, scale)
    # u > 0 keeps the log finite
    u = uniform(key, shape, dtype, dtypes.finfo(dtype).tiny, 1.0)
    return jnp.sqrt(_c(-2, dtype) * jnp.log(u)) * scale


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian, unit shape parameter) samples by Michael, Schucany and Haas'
    transformation of a chi-square(1) draw.

    >>> wald(key(0), 2.0, (3,))
    Array([0.533422  , 0.59811544, 0.7254839 ], dtype=float32)
    """
    dtype, shape, (mean,) = _float_params("wald", key, shape, dtype, mean)
    k1, k2 = split(key)
    v = normal(k1, shape, dtype)
    z = uniform(k2, shape, dtype)
    # the smaller root, in JAX's form (its cancellation included, for JAX's numbers)
    y = v * v
    mean_sq = mean * mean
    root = jnp.sqrt(_c(4, dtype) * mean * y + mean_sq * (y * y))
    x = mean + mean_sq * y / _c(2, dtype) - mean / _c(2, dtype) * root
    return jnp.where(z <= mean / (mean + x), x, mean_sq / x)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on ``[left, right]`` peaking at ``mode``, by inverting the CDF.

    >>> triangular(key(0), 0.0, 0.3, 1.0, (3,))
    Array([0.8086023 , 0.87754965, 0.3163364 ], dtype=float32)
    """
    dtype, shape, (left, mode, right) = _float_params("triangular", key, shape, dtype,
                                                      left, mode, right)
    u = uniform(key, shape, dtype)
    width = right - left
    below = left + jnp.sqrt(u * width * (mode - left))
    above = right - jnp.sqrt((_c(1, dtype) - u) * width * (right - mode))
    return jnp.where(u < (mode - left) / width, below, above)


# ---------------------------------------------------------------------------------------------
# Gamma and the distributions built from it


def _gamma_one(key, alpha, log_space: bool):
    """One gamma(alpha) sample (its log with ``log_space``) from one key, drawn as JAX draws it.

    Marsaglia and Tsang's method: ``d * v`` with ``v = (1 + c x)**3``, ``x`` normal (redrawn
    while ``v <= 0``), accepted by a squeeze or a log test; alpha < 1 samples alpha + 1 and
    multiplies by ``u**(1/alpha)`` (adds ``log(u) / alpha`` in log space). The key is split in
    JAX's order, so every element gets JAX's sample; the samplers vmap this over one key per
    element, and vmap runs each rejection loop until every element has accepted.
    """
    dtype = alpha.dtype
    zero, one, two = _c(0, dtype), _c(1, dtype), _c(2, dtype)
    boost = alpha >= one
    alpha_orig = alpha
    alpha = jnp.where(boost, alpha, alpha + one)
    d = alpha - _c(1 / 3, dtype)
    c = _c(1 / 3, dtype) / jnp.sqrt(d)

    def rejected(carry):
        _, x2, v, u = carry
        return ((u >= one - _c(0.0331, dtype) * (x2 * x2))
                & (jnp.log(u) >= x2 * _c(0.5, dtype) + d * ((one - v) + jnp.log(v))))

    def next_x(carry):
        key, sub = split(carry[0])
        x = normal(sub, (), dtype)
        return key, x, one + x * c

    def propose(carry):
        key, x_key, u_key = split(carry[0], 3)
        _, x, v = while_loop(lambda carry: carry[2] <= zero, next_x, (x_key, zero, -one))
        return key, x * x, v * v * v, uniform(u_key, (), dtype)

    key, boost_key = split(key)
    # u = 2 starts the loop: the first candidate is always drawn
    v = while_loop(rejected, propose, (key, zero, one, two))[2]
    if log_space:
        log_u = -exponential(boost_key, (), dtype)
        log_boost = jnp.where(boost | (log_u == zero), zero, log_u * (one / alpha_orig))
        return (jnp.log(d) + jnp.log(v)) + log_boost
    u = one - uniform(boost_key, (), dtype)
    return (d * v) * jnp.where(boost, one, jnp.power(u, one / alpha_orig))


def _marsaglia_tsang(key, a, log_space: bool):
    """Gamma(a) samples (their logs with ``log_space``) for a float array ``a``: one key per
    element, split from ``key`` in JAX's order."""
    keys = split(key, a.size)
    samples = vmap(lambda k, alpha: _gamma_one(k, alpha, log_space))(keys, jnp.ravel(a))
    return jnp.reshape(samples, a.shape)


# gamma(key, a) with its derivative in ``a`` defined below (the rejection loop has none)
_gamma_draw = custom_jvp(_marsaglia_tsang, nondiff_argnums=(0, 2))


@_gamma_draw.defjvp
def _gamma_draw_jvp(key, log_space, primals, tangents):
    # implicit reparameterisation, as JAX: the sample moves with ``a`` at a fixed CDF value
    (a,), (a_dot,) = primals, tangents
    out = _gamma_draw(key, a, log_space)
    log_z = out if log_space else jnp.log(out)
    dlog_z = _gamma_dlog_sample(stop_gradient(a), stop_gradient(log_z))
    return out, (dlog_z if log_space else dlog_z * stop_gradient(out)) * a_dot


def _gamma_dlog_sample(a, log_z):
    """d log(z) / da for gamma(a) samples z at a fixed CDF value P(a, z): -dP/da / (z p(z; a)).

    With P's series P = e**-z z**a / Gamma(a + 1) * S, S = sum_n t_n, t_n = prod_{k<=n} z / (a+k)
    and T = sum_n t_n H_n, H_n = sum_{k<=n} 1 / (a + k), that is
    -(S (log z - psi(a + 1)) - T) / a. The sums run until their terms are negligible, in float64
    because they cancel when z lies far above a.
    """
    from .core.config import enable_x64
    with enable_x64():      # the series needs float64 even when x64 is off
        return _gamma_dlog_sample_f64(a, log_z).astype(a.dtype)


def _gamma_dlog_sample_f64(a, log_z):
    a, log_z = a.astype(dtypes.float64), log_z.astype(dtypes.float64)
    z = jnp.exp(log_z)
    one = _c(1, dtypes.float64)

    def cond(carry):
        n, term, _, total, _ = carry
        return jnp.any(term > _c(1e-17, dtypes.float64) * total) & (n < 10 ** 6)

    def body(carry):
        n, term, harmonic, total, weighted = carry
        n = n + one
        term = term * z / (a + n)
        harmonic = harmonic + one / (a + n)
        return n, term, harmonic, total + term, weighted + term * harmonic

    ones, zeros = jnp.ones_like(a), jnp.zeros_like(a)
    _, _, _, s, t_sum = while_loop(cond, body, (_c(0, dtypes.float64), ones, zeros, ones, zeros))
    return -(s * (log_z - digamma(a + one)) - t_sum) / a


def _gamma(name, key, a, shape, dtype, log_space):
    dtype, shape, (a,) = _float_params(name, key, shape, dtype, a)
    return _gamma_draw(key, a, log_space)


def gamma(key, a, shape=None, dtype=None):
    """Standard gamma samples (density proportional to ``x**(a-1) exp(-x)``), by Marsaglia and
    Tsang's rejection method. Divide by a rate (or multiply by a scale) for other gammas.
    Differentiable in ``a`` by implicit reparameterisation (the sample moves with ``a`` at a
    fixed value of its CDF), as in JAX.

    >>> gamma(key(0), jnp.array([0.5, 2.0]))
    Array([0.8845648, 1.7599413], dtype=float32)
    """
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key, a, shape=None, dtype=None):
    """Logs of standard gamma samples, computed in log space, which keeps precision for the
    tiny samples of ``a << 1``: ``exp(loggamma(k, a))`` is close to ``gamma(k, a)``.

    >>> loggamma(key(0), 0.01, (3,))
    Array([ -11.478928,   -9.828522, -137.9457  ], dtype=float32)
    """
    return _gamma("loggamma", key, a, shape, dtype, True)


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square samples with ``df`` degrees of freedom: twice a gamma(df / 2).

    >>> chisquare(key(0), 3.0, (3,))
    Array([2.205084 , 2.4899669, 1.4557134], dtype=float32)
    """
    dtype, shape, (df,) = _float_params("chisquare", key, shape, dtype, df)
    return jnp.exp(_gamma_draw(key, df * _c(0.5, dtype), True)) * _c(2, dtype)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution samples: the ratio of two chi-squares, each divided by its ``df``.

    >>> f(key(0), 5.0, 10.0, (3,))
    Array([1.9465712 , 0.34100607, 0.28313386], dtype=float32)
    """
    dtype, shape, (dfnum, dfden) = _float_params("f", key, shape, dtype, dfnum, dfden)
    key_den, key_num = split(key)
    num = chisquare(key_num, dfnum, shape, dtype) / dfnum
    return num / (chisquare(key_den, dfden, shape, dtype) / dfden)


def t(key, df, shape=(), dtype=None):
    """Student's t samples ``z * sqrt(df / chi2(df))``; the default shape is ``df``'s.

    >>> t(key(0), 4.0, (3,))
    Array([ 0.7160013, -2.417441 , -1.414403 ], dtype=float32)
    """
    dtype, shape, (df,) = _float_params("t", key, shape or None, dtype, df)
    key_n, key_g = split(key)
    half_df = df * _c(0.5, dtype)
    g = _gamma_draw(key_g, half_df, False)
    return normal(key_n, shape, dtype) * jnp.sqrt(half_df / g)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples ``g_a / (g_a + g_b)`` from two gammas, computed from their logs so
    that small ``a`` and ``b`` do not give 0/0.

    >>> beta(key(0), 2.0, 5.0, (3,))
    Array([0.16956758, 0.27408373, 0.49690527], dtype=float32)
    """
    dtype, shape, (a, b) = _float_params("beta", key, shape, dtype, a, b)
    key_a, key_b = split(key)
    log_a = _gamma_draw(key_a, a, True)
    log_b = _gamma_draw(key_b, b, True)
    log_max = jnp.maximum(log_a, log_b)
    ga, gb = jnp.exp(log_a - log_max), jnp.exp(log_b - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet samples: normalised gammas along the last axis of ``alpha``. ``shape`` is the
    batch shape (``alpha.shape[:-1]`` by default); the result has shape
    ``shape + alpha.shape[-1:]``.

    >>> dirichlet(key(0), jnp.array([1.0, 2.0, 3.0]), (4,))
    Array([[0.1422856 , 0.40488258, 0.4528318 ],
           [0.28478524, 0.35153106, 0.36368373],
           [0.13108926, 0.10866259, 0.7602482 ],
           [0.10009737, 0.25625998, 0.64364266]], dtype=float32)
    """
    key = _check_key(key, "dirichlet")
    dtype = _float_dtype(dtype, "dirichlet")
    alpha = _as_dtype(alpha, dtype)
    if alpha.ndim < 1:
        raise ValueError("random.dirichlet needs alpha with at least one dimension")
    shape = _param_shape("dirichlet", shape, alpha.shape[:-1]) + alpha.shape[-1:]
    log_g = _gamma_draw(key, jnp.broadcast_to(alpha, shape), True)
    # softmax of the log-gammas: stable when every gamma underflows
    log_g = log_g - jnp.max(log_g, axis=-1, keepdims=True)
    g = jnp.exp(log_g)
    return g / jnp.sum(g, axis=-1, keepdims=True)


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal samples (density proportional to ``exp(-|x|**p)``):
    ``s * g**(1/p)`` with ``g`` gamma(1/p) and ``s`` a random sign.

    >>> generalized_normal(key(0), 1.5, (3,))
    Array([ 1.0603918 ,  0.08920828, -1.3751339 ], dtype=float32)
    """
    dtype, shape, (p,) = _float_params("generalized_normal", key, shape, dtype, p)
    k1, k2 = split(key)
    g = _gamma_draw(k1, _c(1, dtype) / p, False)
    return rademacher(k2, shape, dtype) * jnp.power(g, _c(1, dtype) / p)


def ball(key, d: int, p=2, shape=(), dtype=None):
    """Points uniform in the ``d``-dimensional unit Lp ball, shape ``shape + (d,)`` (Barthe,
    Guedon, Mendelson and Naor: generalized normals over their Lp norm plus an exponential).

    >>> points = ball(key(0), 3, shape=(4,))
    >>> points.shape, bool((jnp.linalg.norm(points, axis=-1) <= 1).all())
    ((4, 3), True)
    """
    key = _check_key(key, "ball")
    dtype = _float_dtype(dtype, "ball")
    shape = _shape(shape, "ball")
    d = int(d)
    if d < 0:
        raise ValueError(f"random.ball needs a non-negative dimension, got {d}")
    k1, k2 = split(key)
    g = generalized_normal(k1, p, shape + (d,), dtype)
    e = exponential(k2, shape, dtype)
    p = _as_dtype(p, dtype)
    norm = jnp.power(jnp.sum(jnp.power(jnp.abs(g), p), axis=-1) + e, _c(1, dtype) / p)
    return g / norm[..., None]


# ---------------------------------------------------------------------------------------------
# Multivariate distributions


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method: str = "cholesky"):
    """Multivariate normal samples ``mean + A z`` with ``A A^T = cov`` from ``method``
    ("cholesky", "eigh" or "svd"; the latter two allow singular ``cov``). ``shape`` is the batch
    shape (``broadcast(mean.shape[:-1], cov.shape[:-2])`` by default); the result has shape
    ``shape + mean.shape[-1:]``.

    >>> multivariate_normal(key(0), jnp.zeros(2), jnp.array([[2.0, 1.0], [1.0, 2.0]]), (5,))
    Array([[ 2.2947626 ,  3.627814  ],
           [-0.6131951 , -0.40288377],
           [ 0.24903013, -1.0660462 ],
           [-0.70045817,  0.25525856],
           [ 0.9395318 , -0.69394195]], dtype=float32)
    """
    key = _check_key(key, "multivariate_normal")
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"random.multivariate_normal: method must be 'cholesky', 'eigh' or "
                         f"'svd', got {method!r}")
    dtype = _float_dtype(dtype, "multivariate_normal")
    mean, cov = _as_dtype(mean, dtype), _as_dtype(cov, dtype)
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != mean.shape[-1:] * 2:
        raise ValueError(f"random.multivariate_normal: mean must have shape (..., n) and cov "
                         f"(..., n, n), got {mean.shape} and {cov.shape}")
    shape = _param_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "cholesky":
        factor = jnp.linalg.cholesky(cov)
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(jnp.maximum(w, _c(0, dtype)))[..., None, :]
    else:
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s)[..., None, :]
    z = normal(key, shape + mean.shape[-1:], dtype)
    return mean + jnp.sum(factor * z[..., None, :], axis=-1)


def orthogonal(key, n: int, shape=(), dtype=None, m: int | None = None):
    """Matrices uniform (Haar) on the orthogonal group O(n), shape ``shape + (n, n)`` (or with
    orthonormal columns/rows, ``(n, m)``, given ``m``): the Q of the QR factorisation of a
    normal matrix, its columns' signs fixed by R's diagonal.

    >>> orthogonal(key(0), 3)
    Array([[ 0.95541006,  0.29413578,  0.02599558],
           [-0.04628982,  0.23614088, -0.9706156 ],
           [-0.2916314 ,  0.9261326 ,  0.23922686]], dtype=float32)
    """
    key = _check_key(key, "orthogonal")
    dtype = _float_dtype(dtype, "orthogonal")
    shape = _shape(shape, "orthogonal")
    n = int(n)
    m = n if m is None else int(m)
    z = normal(key, shape + (max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    diag = jnp.diagonal(r, 0, -2, -1)
    # a zero diagonal (probability 0) keeps its column rather than zeroing it
    q = q * jnp.where(diag < 0, _c(-1, dtype), _c(1, dtype))[..., None, :]
    return jnp.swapaxes(q, -1, -2) if n < m else q


# ---------------------------------------------------------------------------------------------
# Discrete distributions


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p``. ``mode="high"`` compares with two
    uniforms' worth of bits, which is right for ``p`` below about 1e-7 in float32, as JAX.

    >>> bernoulli(key(0), 0.3, (4,))
    Array([False, False, False, False], dtype=bool)
    """
    key = _check_key(key, "bernoulli")
    p = jnp.asarray(p)
    if dtypes.kind(p.dtype) != "f":
        p = p.astype(dtypes.default_float)
    shape = p.shape if shape is None else _shape(shape, "bernoulli")
    if _check_mode("bernoulli", mode, ("low", "high")) == "high":
        u1, u2 = uniform(key, (2,) + shape, p.dtype)
        u2 = u2 * _c(2.0 ** -dtypes.finfo(p.dtype).nmant, p.dtype)
        return u2 < p - u1
    return uniform(key, shape, p.dtype) < jnp.broadcast_to(p, shape)


def rademacher(key, shape=(), dtype=None):
    """Random signs: -1 or 1 with equal probability, in ``dtype`` (default int).

    >>> rademacher(key(0), (4,))
    Array([-1, -1,  1,  1], dtype=int32)
    """
    key = _check_key(key, "rademacher")
    dtype = dtypes.canonicalize(dtype or dtypes.default_int, "rademacher")
    b = bernoulli(key, 0.5, _shape(shape, "rademacher"))
    return jnp.where(b, jnp.asarray(1, dtype), jnp.asarray(-1, dtype))


def _int_params(name, key, shape, dtype, *params):
    """The checked key, an integer ``dtype``, the sample shape and the float parameters
    broadcast to it, for the counting distributions."""
    key = _check_key(key, name)
    dtype = dtypes.canonicalize(dtype or dtypes.default_int, name)
    if dtype.kind not in "iu":
        raise TypeError(f"random.{name} needs an integer dtype, got {dtype}")
    params = [jnp.asarray(p) for p in params]
    fdtype = np.result_type(*[p.dtype if dtypes.kind(p.dtype) == "f"
                              else dtypes.default_float for p in params])
    params = [_as_dtype(p, fdtype) for p in params]
    shape = _param_shape(name, shape, *(p.shape for p in params))
    return dtype, shape, [jnp.broadcast_to(p, shape) for p in params]


def geometric(key, p, shape=None, dtype=None):
    """Geometric samples: the number of Bernoulli(p) trials up to the first success (>= 1),
    ``floor(log(u) / log(1 - p)) + 1``.

    >>> geometric(key(0), 0.3, (4,))
    Array([1, 1, 4, 3], dtype=int32)
    """
    dtype, shape, (p,) = _int_params("geometric", key, shape, dtype, p)
    u = uniform(key, shape, p.dtype)
    # as JAX: u = 0 counts as 1, which keeps the log finite and JAX's numbers
    u = jnp.where(u == 0, _c(1, p.dtype), u)
    return (jnp.floor(jnp.log(u) / jnp.log1p(-p)) + _c(1, p.dtype)).astype(dtype)


def _poisson_knuth(key, lam, dtype):
    """Knuth's method: multiply uniforms until the product drops below ``exp(-lam)``; the
    number of factors before that is Poisson(lam). About ``lam + 1`` rounds, so used for small
    rates only; each round draws for the whole array (JAX's stream)."""
    def cond(carry):
        return jnp.any(carry[2] > -lam)

    def body(carry):
        key, k, log_prod = carry
        key, sub = split(key)
        k = jnp.where(log_prod > -lam, k + _c(1, dtype), k)
        return key, k, log_prod + jnp.log(uniform(sub, lam.shape, lam.dtype))

    init = (key, jnp.zeros(lam.shape, dtype), jnp.zeros(lam.shape, lam.dtype))
    return while_loop(cond, body, init)[1] - _c(1, dtype)


def _first_accepted(key, propose, shape, dtype):
    """Rounds of ``propose(key) -> (candidates, accepted)`` for the whole array until every
    element has accepted one; each keeps its first (-1 until then). The round's key is split
    three ways, as JAX does, and the two subkeys go to ``propose``."""
    def cond(carry):
        return jnp.any(~carry[2])

    def body(carry):
        key, out, done = carry
        key, sub0, sub1 = split(key, 3)
        candidates, accepted = propose(sub0, sub1)
        return key, jnp.where(accepted, candidates, out), done | accepted

    init = (key, jnp.full(shape, -1, dtype), jnp.zeros(shape, bool))
    return while_loop(cond, body, init)[1]


def _poisson_rejection(key, lam):
    """Hormann's transformed rejection with squeeze (PTRS), for rates >= 10: about 1.1 rounds
    per sample, every round drawing for the whole array."""
    dtype = lam.dtype
    log_lam = jnp.log(lam)
    b = _c(0.931, dtype) + _c(2.53, dtype) * jnp.sqrt(lam)
    a = _c(-0.059, dtype) + _c(0.02483, dtype) * b
    inv_alpha = _c(1.1239, dtype) + _c(1.1328, dtype) / (b - _c(3.4, dtype))
    v_r = _c(0.9277, dtype) - _c(3.6224, dtype) / (b - _c(2, dtype))
    half = _c(0.5, dtype)

    def propose(sub0, sub1):
        u = uniform(sub0, lam.shape, dtype) - half
        v = uniform(sub1, lam.shape, dtype)
        us = half - jnp.abs(u)
        k = jnp.floor((_c(2, dtype) * a / us + b) * u + lam + _c(0.43, dtype))
        s = jnp.log(v * inv_alpha / (a / (us * us) + b))
        log_pmf = -lam + k * log_lam - lgamma(k + _c(1, dtype))
        squeezed = (us >= _c(0.07, dtype)) & (v <= v_r)
        rejected = (k < 0) | ((us < _c(0.013, dtype)) & (v > us))
        return k, squeezed | (~rejected & (s <= log_pmf))

    return _first_accepted(key, propose, lam.shape, dtype)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson samples with rate ``lam`` (>= 0): Knuth's multiplication method for rates below
    10 and Hormann's transformed rejection above, as JAX, NumPy and TensorFlow do. As in JAX,
    the rate is taken in float32 whatever its dtype, and both methods draw from ``key``.

    >>> poisson(key(0), jnp.array([0.5, 40.0]))
    Array([ 0, 37], dtype=int32)
    """
    dtype, shape, (lam,) = _int_params("poisson", key, shape, dtype, lam)
    lam = lam.astype(dtypes.float32)
    knuth = jnp.isnan(lam) | (lam < _c(10, lam.dtype))
    # each method sees a rate it handles quickly where the other's result is used
    small = _poisson_knuth(key, jnp.where(knuth, lam, _c(0, lam.dtype)), dtype)
    large = _poisson_rejection(key, jnp.where(knuth, _c(1e5, lam.dtype), lam))
    out = jnp.where(knuth, small, large.astype(dtype))
    return jnp.where(lam == 0, jnp.zeros_like(out), out)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.010411265261972, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """log(k!) minus its Stirling approximation: tabulated for k <= 9, else the series (in k
    clipped to 9, as JAX has it, which makes the BTRS bound a little looser for large k)."""
    dtype = k.dtype
    table = jnp.asarray(np.array(_STIRLING_TAIL, dtype))
    tabulated = k <= _c(9, dtype)
    k = jnp.clip(k, _c(0, dtype), _c(9, dtype))
    kp1sq = (k + _c(1, dtype)) * (k + _c(1, dtype))
    series = (_c(1 / 12, dtype) - (_c(1 / 360, dtype) - _c(1 / 1260, dtype) / kp1sq) / kp1sq) \
        / (k + _c(1, dtype))
    return jnp.where(tabulated, jnp.take(table, jnp.floor(k).astype(dtypes.int32)), series)


def _binomial_inversion(key, n, p):
    """Successes among ``n`` Bernoulli(p) trials, counted by jumping from success to success
    with geometric waiting times: about ``n p + 1`` rounds, so used for small means."""
    dtype = p.dtype
    log_q = jnp.log1p(-p)       # -0.0 for p = 0: the waiting time is +inf, no success

    def cond(carry):
        return jnp.any(carry[2] <= n)

    def body(carry):
        key, count, position = carry
        sub, key = split(key)
        count = jnp.where(position <= n, count + _c(1, dtype), count)
        u = uniform(sub, n.shape, dtype)
        return key, count, position + jnp.ceil(jnp.log(u) / log_q)

    zeros = jnp.zeros(n.shape, dtype)
    return while_loop(cond, body, (key, zeros, zeros))[1] - _c(1, dtype)


def _binomial_btrs(key, n, p):
    """Hormann's BTRS transformed rejection for means above 10 and p <= 1/2: about 1.2 rounds
    per sample."""
    dtype = p.dtype
    one, half = _c(1, dtype), _c(0.5, dtype)
    spq = jnp.sqrt(n * p * (one - p))
    b = _c(1.15, dtype) + _c(2.53, dtype) * spq
    a = _c(-0.0873, dtype) + _c(0.0248, dtype) * b + _c(0.01, dtype) * p
    c = n * p + half
    v_r = _c(0.92, dtype) - _c(4.2, dtype) / b
    r = p / (one - p)
    alpha = (_c(2.83, dtype) + _c(5.1, dtype) / b) * spq
    m = jnp.floor((n + one) * p)

    def propose(sub0, sub1):
        u = uniform(sub0, n.shape, dtype) - half
        v = uniform(sub1, n.shape, dtype)
        us = half - jnp.abs(u)
        squeezed = (us >= _c(0.07, dtype)) & (v <= v_r)
        k = jnp.floor((_c(2, dtype) * a / us + b) * u + c)
        outside = (k < 0) | (k > n)
        log_v = jnp.log(v * alpha / (a / (us * us) + b))
        bound = ((m + half) * jnp.log((m + one) / (r * (n - m + one)))
                 + (n + one) * jnp.log((n - m + one) / (n - k + one))
                 + (k + half) * jnp.log(r * (n - k + one) / (k + one))
                 + _stirling_tail(m) + _stirling_tail(n - m)
                 - _stirling_tail(k) - _stirling_tail(n - k))
        return k, squeezed | (~outside & (log_v <= bound))

    return _first_accepted(key, propose, n.shape, dtype)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial samples: successes in ``n`` trials of probability ``p``, as floats (like JAX).
    Inversion by geometric jumps for means up to 10, Hormann's BTRS rejection above, both on
    ``min(p, 1 - p)`` and drawing from ``key``, as JAX does; NaN for invalid parameters.

    >>> binomial(key(0), 20.0, jnp.array([0.1, 0.5]))
    Array([ 2., 10.], dtype=float32)
    """
    key = _check_key(key, "binomial")
    dtype = _float_dtype(dtype, "binomial")
    (p,) = promote_dtypes_inexact(jnp.asarray(p))
    n = jnp.asarray(n).astype(p.dtype)
    shape = _param_shape("binomial", shape, n.shape, p.shape)
    n, p = jnp.broadcast_to(n, shape), jnp.broadcast_to(p, shape)
    low = p < _c(0.5, p.dtype)
    q = jnp.where(low, p, _c(1, p.dtype) - p)
    n_invalid = jnp.isnan(n) | (n < 0)
    n_inf = jnp.isinf(n)
    q_nan, q_negative = jnp.isnan(q), q < 0
    q = jnp.where(q_nan | q_negative, _c(0.01, p.dtype), q)
    inversion = n_invalid | (n * q <= _c(10, p.dtype))
    n = jnp.floor(n)
    # each method sees parameters it handles quickly where the other's result is used
    inverted = _binomial_inversion(key, jnp.where(inversion, n, _c(0, p.dtype)), q)
    rejected = _binomial_btrs(key, jnp.where(inversion, _c(10000, p.dtype), n),
                              jnp.where(inversion, _c(0.5, p.dtype), q))
    k = jnp.where(inversion, inverted, rejected).astype(dtype)
    invalid = q_negative | q_nan | n_invalid
    k = jnp.where(invalid, _c(np.nan, dtype), k)
    k = jnp.where(n_inf & ~invalid, _c(np.inf, dtype), k)
    return jnp.where(low | n_invalid | q_nan | n_inf, k, n.astype(dtype) - k)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of ``n`` draws among the categories on the last axis of ``p``, as floats (like
    JAX): one binomial per category, of the draws left, with probability ``p`` over the
    probability left. ``shape`` includes the category axis (default ``p.shape``). ``unroll``
    is accepted for JAX compatibility (the categories are a Python loop).

    >>> multinomial(key(0), 10.0, jnp.array([0.2, 0.3, 0.5]))
    Array([1., 1., 8.], dtype=float32)
    """
    del unroll
    key = _check_key(key, "multinomial")
    dtype = _float_dtype(dtype, "multinomial")
    n, p = promote_dtypes_inexact(jnp.asarray(n), jnp.asarray(p))
    if p.ndim < 1:
        raise ValueError("random.multinomial needs p with a category axis")
    shape = p.shape if shape is None else _shape(shape, "multinomial")
    remaining_n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining_p = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = p / jnp.where(remaining_p == 0, _c(1, p.dtype), remaining_p)
    keys = split(key, shape[-1])
    counts = []
    for i in range(shape[-1]):
        count = binomial(keys[i], remaining_n, jnp.clip(ratios[i], 0, 1),
                         dtype=remaining_n.dtype)
        counts.append(count)
        remaining_n = remaining_n - count
    return jnp.stack(counts, axis=-1).astype(dtype)


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
    Array([9, 0, 2], dtype=int32)
    """
    key = _check_key(key, "randint")
    dtype = dtypes.canonicalize(dtype or dtypes.default_int, "randint")
    if dtype.kind not in "iu":
        raise TypeError(f"random.randint needs an integer dtype, got {dtype}")
    shape = _shape(shape, "randint")
    if dtype.itemsize < 4:   # sampled in 32 bits (less bias) and cast, as JAX does
        info = np.iinfo(dtype)
        minval = jnp.clip(jnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype(np.int32), int(info.min),
                          int(info.max) + 1)
        return randint(key, shape, minval, maxval, np.int32).astype(dtype)
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


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode=None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis``: with
    replacement by the Gumbel-max trick, without (``replace=False``, at most as many draws as
    categories) by the Gumbel top-k trick. ``mode`` is ``gumbel``'s.

    >>> categorical(key(0), jnp.log(jnp.array([0.2, 0.8])), shape=(5,))
    Array([1, 1, 1, 1, 0], dtype=int32)
    """
    key = _check_key(key, "categorical")
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
    if not replace:
        draws = math.prod(prefix)
        if draws > logits.shape[axis]:
            raise ValueError(f"random.categorical: {draws} draws without replacement from "
                             f"{logits.shape[axis]} categories")
        perturbed = logits + gumbel(key, logits.shape, logits.dtype, mode)
        _, top = lax.top_k(jnp.moveaxis(perturbed, axis, -1), draws)
        return jnp.reshape(jnp.moveaxis(top, -1, 0), shape)      # int32, as JAX's top_k
    noise_shape = list(shape[len(shape) - len(batch_shape):])
    noise_shape.insert(axis, logits.shape[axis])
    noise = gumbel(key, prefix + tuple(noise_shape), logits.dtype, mode)
    expanded = jnp.reshape(logits, (1,) * len(prefix) + logits.shape)
    return jnp.argmax(noise + expanded, axis=axis + len(prefix)).astype(dtypes.default_int)


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
    Array([0, 1, 4, 3, 2], dtype=int32)
    """
    key = _check_key(key, "permutation")
    if isinstance(x, (int, np.integer)) or (not isinstance(x, Tracer) and np.ndim(x) == 0
                                            and np.asarray(x).dtype.kind in "iu"):
        return _shuffle(key, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    if x.ndim == 0:
        raise TypeError("random.permutation needs an integer or an array of rank >= 1")
    axis = canonicalize_axis(axis, x.ndim, "random.permutation")
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, order, axis=axis)


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0):
    """Samples from ``a`` (an array, or ``arange(a)`` for an int) along ``axis``, with or
    without replacement, uniformly or with probabilities ``p``.

    >>> choice(key(0), 10, (3,), replace=False)
    Array([0, 1, 8], dtype=int32)
    """
    key = _check_key(key, "choice")
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
            ind = jnp.reshape(lax.top_k(g, draws)[1], shape).astype(dtypes.default_int)
    if arr is None:
        return ind
    return jnp.take(arr, ind, axis=axis)


__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "clone", "split", "fold_in", "bits", "uniform",
           "normal", "truncated_normal", "exponential", "gumbel", "laplace", "logistic", "cauchy",
           "lognormal", "maxwell", "double_sided_maxwell", "weibull_min", "pareto", "rayleigh",
           "wald", "triangular", "gamma", "loggamma", "chisquare", "f", "t", "beta", "dirichlet",
           "generalized_normal", "ball", "multivariate_normal", "orthogonal", "bernoulli",
           "rademacher", "geometric", "poisson", "binomial", "multinomial", "randint",
           "categorical", "permutation", "choice", "threefry_2x32"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

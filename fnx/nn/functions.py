"""Activations, softmax and friends, written with fnx.numpy so every transformation applies.

Numerically delicate functions (logsumexp, softplus, log_softmax) shift by a stop-gradient
maximum so they neither overflow nor produce NaN gradients."""
from __future__ import annotations

import math
import operator

from functools import partial

import numpy as np

from .. import numpy as jnp
from ..core import dtypes, lax
from ..core.api import stop_gradient
from ..core.core import default_backend
from ..core.custom_derivatives import custom_jvp
from ..core.errors import DTypeError, UnavailableImplementationError
from ..numpy._core import promote_dtypes_inexact


def relu(x):
    """``max(x, 0)``; a NaN stays NaN and the derivative at 0 is 0, as in JAX.

    >>> fnx.nn.relu(jnp.array([-1.0, 0.0, 2.0]))
    Array([0., 0., 2.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x) if not jnp.issubdtype(jnp.asarray(x).dtype, np.integer) \
        else (jnp.asarray(x),)
    return _relu(x)


@custom_jvp
def _relu(x):
    return jnp.maximum(x, 0)


@_relu.defjvp
def _relu_jvp(primals, tangents):
    # the mask ``x > 0`` is what the GPU's dense layers keep for their backward pass
    (x,), (t,) = primals, tangents
    return _relu(x), jnp.where(x > 0, t, 0)


def relu6(x):
    """``min(max(x, 0), 6)``; a NaN stays NaN and the derivative at 0 and at 6 is 0, as in
    JAX.

    >>> fnx.nn.relu6(jnp.array([-1.0, 3.0, 8.0]))
    Array([0., 3., 6.], dtype=float32)
    """
    return _relu6(jnp.asarray(x))


@custom_jvp
def _relu6(x):
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


@_relu6.defjvp
def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _relu6(x), jnp.where((x > 0) & (x < 6), t, 0)


def leaky_relu(x, negative_slope: float = 1e-2):
    """``x`` for ``x >= 0``, else ``negative_slope * x``.

    >>> fnx.nn.leaky_relu(jnp.array([-2.0, 3.0]), negative_slope=0.1)
    Array([-0.2,  3. ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def elu(x, alpha: float = 1.0):
    """Exponential linear unit: ``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``.

    >>> fnx.nn.elu(jnp.array([-1.0, 1.0]))
    Array([-0.63212055,  1.        ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    safe = jnp.where(x > 0, jnp.zeros_like(x), x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe))


def celu(x, alpha: float = 1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * min(exp(x / alpha) - 1, 0)``.

    >>> fnx.nn.celu(jnp.array([-1.0, 1.0]))
    Array([-0.63212055,  1.        ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x):
    """Scaled exponential linear unit (the self-normalizing constants of Klambauer et al.).

    >>> fnx.nn.selu(jnp.array([-1.0, 1.0]))
    Array([-1.1113307,  1.050701 ], dtype=float32)
    """
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(x, alpha)


def sigmoid(x):
    """``1 / (1 + exp(-x))``.

    >>> fnx.nn.sigmoid(jnp.array([0.0, 100.0]))
    Array([0.5, 1. ], dtype=float32)
    """
    return lax.logistic(jnp.asarray(x))     # integers are refused, as JAX's are


def log_sigmoid(x):
    """``log(sigmoid(x))``, computed without overflow as ``-softplus(-x)``.

    >>> fnx.nn.log_sigmoid(jnp.array([0.0]))
    Array([-0.6931472], dtype=float32)
    """
    return -softplus(-jnp.asarray(x))


def silu(x):
    """``x * sigmoid(x)`` (also called swish).

    >>> fnx.nn.silu(jnp.array([0.0, 1.0]))
    Array([0.       , 0.7310...], dtype=float32)
    """
    x = jnp.asarray(x)
    return x * sigmoid(x)     # integers are refused, as JAX's are


swish = silu


def softplus(x):
    """``log(1 + exp(x))`` without overflow.

    >>> fnx.nn.softplus(jnp.array([0.0, 100.0]))
    Array([  0.6931..., 100.       ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return jnp.logaddexp(x, 0.0)


def soft_sign(x):
    """``x / (1 + |x|)``.

    >>> fnx.nn.soft_sign(jnp.array([-1.0, 3.0]))
    Array([-0.5 ,  0.75], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return x / (jnp.abs(x) + 1)


def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``.

    >>> fnx.nn.hard_tanh(jnp.array([-2.0, 0.5, 3.0]))
    Array([-1. ,  0.5,  1. ], dtype=float32)
    """
    x = jnp.asarray(x)     # integers stay integers; the slope at NaN is 1, as in JAX
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit; ``approximate=True`` uses the tanh form (JAX's default).

    >>> fnx.nn.gelu(jnp.array([-1.0, 0.0, 1.0]))
    Array([-0.1588...,  0.      ,  0.8411...], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + jnp.tanh(c * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + lax.erf(x / jnp.asarray(math.sqrt(2), x.dtype)))


def glu(x, axis: int = -1):
    """Gated linear unit: ``x`` split in two halves ``a, b`` along ``axis``, then ``a *
    sigmoid(b)``.

    >>> fnx.nn.glu(jnp.array([1.0, 2.0, 0.0, 100.0]))
    Array([0.5, 2. ], dtype=float32)
    """
    a, b = jnp.split(x, 2, axis)
    return a * sigmoid(b)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """``log(sum(b * exp(a)))`` over ``axis`` (the elements ``where`` selects), stable for
    large inputs and with stable gradients (a softmax). A negative sum gives NaN unless
    ``return_sign`` asks for ``(log(abs(sum)), sign(sum))``, as in JAX.

    >>> fnx.nn.logsumexp(jnp.array([0.0, 0.0]))
    Array(0.6931..., dtype=float32)
    """
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a, b = promote_dtypes_inexact(a, b)
        a = jnp.where(b != 0, a, -jnp.inf)    # a zero weight drops its term, inf or not
    else:
        (a,) = promote_dtypes_inexact(a)
    axes = tuple(range(a.ndim)) if axis is None else \
        ((axis,) if isinstance(axis, int) else tuple(axis))
    axes = tuple(ax % a.ndim for ax in axes) if a.ndim else axes
    amax = jnp.max(jnp.real(a), axis=axes, keepdims=True, where=where, initial=-jnp.inf)
    amax = stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
    e = jnp.exp(a - amax.astype(a.dtype))
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axes, keepdims=True, where=where)
    sign = jnp.sign(s)
    if return_sign or not jnp.iscomplexobj(s):
        s = jnp.abs(s)
    out = jnp.log(s) + amax.astype(s.dtype)
    if not keepdims:
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    if b is not None and not jnp.iscomplexobj(out):
        out = jnp.where(sign < 0, jnp.asarray(np.nan, out.dtype), out)
    return out


def _row_max(x, axis, where):
    if where is None:
        return jnp.max(x, axis=axis, keepdims=True)
    return jnp.max(x, axis=axis, keepdims=True, where=where, initial=-jnp.inf)


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x, axis)``, computed stably; over the elements ``where`` selects (the
    others are -inf), if given.

    >>> fnx.nn.log_softmax(jnp.array([0.0, 0.0]))
    Array([-0.6931..., -0.6931...], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    top = _row_max(x, axis, where)
    shifted = x - stop_gradient(top)
    total = jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True) if where is None else \
        jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True, where=where)
    out = shifted - jnp.log(total)
    return out if where is None else jnp.where(where, out, -jnp.inf)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x), axis)``, computed stably; over the elements ``where`` selects
    (the others are 0), if given.

    >>> fnx.nn.softmax(jnp.array([0.0, 0.0, jnp.log(2.0)]))
    Array([0.25, 0.25, 0.5 ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    if where is None:
        return _softmax(x, axis)
    return _masked_softmax(x, jnp.asarray(where), axis)


# Differentiated by hand, as JAX does: ``d softmax = y * (dx - sum(y * dx))`` keeps only the
# result ``y`` for the backward pass, where differentiating the division would keep the
# exponentials, their sum and its square as well (four arrays of x's size instead of one).
@partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis):
    unnormalized = jnp.exp(x - stop_gradient(_row_max(x, axis, None)))
    return unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    (x,), (t,) = primals, tangents
    y = _softmax(x, axis)
    return y, y * (t - jnp.sum(y * t, axis=axis, keepdims=True))


@partial(custom_jvp, nondiff_argnums=(2,))
def _masked_softmax(x, where, axis):
    unnormalized = jnp.exp(x - stop_gradient(_row_max(x, axis, where)))
    out = unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True, where=where)
    return jnp.where(where, out, 0.0)


@_masked_softmax.defjvp
def _masked_softmax_jvp(axis, primals, tangents):
    (x, where), (t, _) = primals, tangents
    y = _masked_softmax(x, where, axis)
    return y, y * (t - jnp.sum(y * t, axis=axis, keepdims=True, where=where))


def standardize(x, axis=-1, mean=None, variance=None, epsilon: float = 1e-5, where=None,
                algorithm: str = "fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis`` (``normalize`` is the same
    function); the mean and variance are those of ``x`` (its elements ``where`` selects)
    unless given. As in JAX, ``algorithm="fast"`` (the default) takes the variance as
    ``mean(x**2) - mean(x)**2`` clipped at 0, ``"stable"`` as ``mean((x - mean)**2)``.

    >>> x = jnp.array([1., 2., 3.])
    >>> fnx.nn.standardize(x, epsilon=0.0, algorithm="stable") * jnp.sqrt(2 / 3)
    Array([-1.,  0.,  1.], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(x - mean), axis, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = jnp.clip(jnp.mean(jnp.square(x), axis, keepdims=True, where=where)
                                - jnp.square(mean), 0)
        else:
            raise ValueError(f"standardize: unknown algorithm {algorithm!r}; expected 'fast' "
                             "or 'stable'")
    return (x - mean) * lax.rsqrt(variance + epsilon)


normalize = standardize


def _norm_axes(x, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % x.ndim for a in axes))


def _stats_dtype(x):
    """Normalisation statistics are computed in at least float32, so a bfloat16 or float16
    input is centred and scaled without half-precision round-off (as Flax's norms do)."""
    return jnp.promote_types(x.dtype, jnp.float32)


def layer_norm(x, scale=None, bias=None, *, axis=-1, epsilon: float = 1e-6):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` over ``axis`` (an int or a tuple),
    with the statistics and the normalisation in float32 for half-precision inputs; the result
    has the dtype of ``x``, ``scale`` and ``bias`` together.

    >>> layer_norm(jnp.array([[1.0, 3.0]]))
    Array([[-0.9999995,  0.9999995]], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    out_dtype = jnp.result_type(x, *(p for p in (scale, bias) if p is not None))
    axes = _norm_axes(x, axis)
    xf = x.astype(_stats_dtype(x))
    centered = xf - jnp.mean(xf, axes, keepdims=True)
    y = centered * lax.rsqrt(jnp.mean(jnp.square(centered), axes, keepdims=True) + epsilon)
    if scale is not None:
        y = y * _along(scale, x.ndim, axes, xf.dtype)
    if bias is not None:
        y = y + _along(bias, x.ndim, axes, xf.dtype)
    return y.astype(out_dtype)


def rms_norm(x, scale=None, *, axis=-1, epsilon: float = 1e-6):
    """``x / sqrt(mean(x**2) + epsilon) * scale`` over ``axis``, computed in float32 for
    half-precision inputs; the result has the dtype of ``x`` and ``scale`` together.

    >>> rms_norm(jnp.array([[3.0, -3.0]]), epsilon=0.0)
    Array([[ 1., -1.]], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    out_dtype = jnp.result_type(x, scale) if scale is not None else x.dtype
    axes = _norm_axes(x, axis)
    xf = x.astype(_stats_dtype(x))
    y = xf * lax.rsqrt(jnp.mean(jnp.square(xf), axes, keepdims=True) + epsilon)
    if scale is not None:
        y = y * _along(scale, x.ndim, axes, xf.dtype)
    return y.astype(out_dtype)


def _along(param, ndim, axes, dtype):
    """``param`` (shaped like the normalised axes) broadcast against an array of ``ndim``."""
    param = jnp.asarray(param).astype(dtype)
    if param.ndim == len(axes):
        return lax.broadcast_in_dim(param, tuple(
            param.shape[axes.index(a)] if a in axes else 1 for a in range(ndim)), axes)
    return param


def one_hot(x, num_classes: int, dtype=None, axis=-1):
    """One-hot encoding of integer labels; out-of-range labels give all-zero rows. The dtype
    defaults to the default float (float64 with x64 on), as JAX's ``jnp.float_``.

    >>> one_hot(jnp.array([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    x = jnp.asarray(x)
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise DTypeError(f"one_hot: num_classes must be an int, got {num_classes!r}") from None
    classes = lax.broadcasted_iota(x.dtype, x.shape + (num_classes,), x.ndim)
    hot = jnp.expand_dims(x, -1) == classes
    out = hot.astype(dtypes.default_float if dtype is None else dtype)
    return jnp.moveaxis(out, -1, axis) if axis != -1 else out


# ---------------------------------------------------------------------------------------------
# More activations (jax.nn's)


def identity(x):
    """``x`` itself, as an array.

    >>> fnx.nn.identity(jnp.array([-1.0, 2.0]))
    Array([-1.,  2.], dtype=float32)
    """
    return jnp.asarray(x)


def tanh(x):
    """The hyperbolic tangent (``jnp.tanh``).

    >>> fnx.nn.tanh(jnp.array([0.0]))
    Array([0.], dtype=float32)
    """
    return jnp.tanh(x)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``, a piecewise-linear sigmoid.

    >>> hard_sigmoid(jnp.array([-4.0, 0.0, 4.0]))
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called hard swish).

    >>> fnx.nn.hard_silu(jnp.array([-4.0, 0.0, 1.0]))
    Array([-0.       ,  0.       ,  0.6666...], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    """``x * tanh(softplus(x))``.

    >>> fnx.nn.mish(jnp.array([0.0, 1.0]))
    Array([0.       , 0.8650...], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return x * jnp.tanh(softplus(x))


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth relu.

    >>> squareplus(jnp.array(0.0))
    Array(1., dtype=float32, weak_type=True)
    """
    (x,) = promote_dtypes_inexact(x)
    return (x + jnp.sqrt(x * x + b)) / 2


def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` between -1 and 1, ``x`` for ``x >= 1``.

    >>> fnx.nn.sparse_plus(jnp.array([-2.0, 0.0, 2.0]))
    Array([0.  , 0.25, 2.  ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)``, the derivative of sparse_plus.

    >>> fnx.nn.sparse_sigmoid(jnp.array([-2.0, 0.0, 2.0]))
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x``.

    >>> log1mexp(jnp.array(1e-8))   # about log(1e-8)
    Array(-18.420681, dtype=float32, weak_type=True)
    """
    (x,) = promote_dtypes_inexact(x)
    return _log1mexp(x)


@custom_jvp
def _log1mexp(x):
    # -expm1 is exact near 0, log1p(-exp) for large x; log(2) is where they trade places
    return jnp.where(x < math.log(2), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


@_log1mexp.defjvp
def _log1mexp_jvp(primals, tangents):
    # one expression (JAX's), so the branch where does not take adds no NaN at x = 0
    (x,), (t,) = primals, tangents
    return _log1mexp(x), t / jnp.expm1(x)


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """``log(mean(exp(x)))`` over ``axis``, stably; ``where`` masks the entries that count.

    >>> logmeanexp(jnp.array([0.0, 0.0]))
    Array(0., dtype=float32)
    """
    (x,) = promote_dtypes_inexact(x)
    if where is None:
        axes = range(x.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
        log_count = math.log(math.prod(x.shape[a] for a in axes))
    else:
        log_count = jnp.log(jnp.sum(jnp.broadcast_to(where, x.shape), axis=axis,
                                    keepdims=keepdims, dtype=x.dtype))
        x = jnp.where(where, x, -jnp.inf)
    return logsumexp(x, axis=axis, keepdims=keepdims) - log_count


# ---------------------------------------------------------------------------------------------
# Attention


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """Scaled dot-product attention, ``softmax(scale * q @ k^T + bias, masked) @ v``, as
    ``jax.nn.dot_product_attention``'s pure-array ("xla") implementation.

    ``query`` is (B, T, N, H), ``key`` and ``value`` (B, S, K, H) with N a multiple of K (each
    group of N // K query heads shares a key/value head); the batch axis may be left out.
    ``bias`` and the boolean ``mask`` (True keeps) broadcast to (B, N, T, S). ``scale``
    defaults to ``1 / sqrt(H)``. ``is_causal`` keeps ``key <= query`` positions, counted from
    the start of both sequences as in JAX. ``query_seq_lengths`` / ``key_value_seq_lengths``
    (B,) mask padding; ``local_window_size`` (int or (left, right)) keeps keys within the
    window. Masked logits become a large negative number rather than -inf, so a fully masked
    row averages the values (as in JAX) instead of giving NaN. ``implementation='cudnn'``
    raises ``UnavailableImplementationError`` (a RuntimeError) off the GPU, as JAX's does.

    >>> q = k = v = jnp.ones((2, 5, 4, 8))
    >>> dot_product_attention(q, k, v, is_causal=True).shape
    (2, 5, 4, 8)
    """
    _check_attention_implementation(implementation)
    query, key, value = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
    unbatched = query.ndim == 3
    if unbatched:
        query, key, value = query[None], key[None], value[None]
    if query.ndim != 4 or key.ndim != 4 or value.shape != key.shape:
        raise ValueError(f"dot_product_attention: query {query.shape}, key {key.shape} and "
                         f"value {value.shape} must be (B, T, N, H), (B, S, K, H), (B, S, K, H)")
    B, T, N, H = query.shape
    S, K = key.shape[1], key.shape[2]
    if key.shape[0] != B or key.shape[3] != H or N % K:
        raise ValueError(f"dot_product_attention: key {key.shape} does not fit query "
                         f"{query.shape} (same B and H, and N a multiple of K)")
    if K != N:
        key, value = jnp.repeat(key, N // K, axis=2), jnp.repeat(value, N // K, axis=2)
    logits_dtype = jnp.result_type(query.dtype, jnp.float32)
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    logits = jnp.einsum("btnh,bsnh->bnts", query.astype(logits_dtype), key.astype(logits_dtype))
    logits = logits * jnp.asarray(scale, logits_dtype)
    if bias is not None:
        logits = logits + jnp.asarray(bias).astype(logits_dtype)

    keep = None if mask is None else jnp.asarray(mask, bool)
    q_pos = lax.broadcasted_iota(jnp.int32, (T, S), 0)
    k_pos = lax.broadcasted_iota(jnp.int32, (T, S), 1)
    if is_causal:
        keep = _and(keep, k_pos <= q_pos)
    if local_window_size is not None:
        left, right = (local_window_size, local_window_size) \
            if isinstance(local_window_size, int) else local_window_size
        keep = _and(keep, (q_pos <= k_pos + left) & (q_pos >= k_pos - right))
    if query_seq_lengths is not None:
        q_lens = jnp.asarray(query_seq_lengths).reshape(B, 1, 1, 1)
        keep = _and(keep, q_pos < q_lens)
    if key_value_seq_lengths is not None:
        kv_lens = jnp.asarray(key_value_seq_lengths).reshape(B, 1, 1, 1)
        keep = _and(keep, k_pos < kv_lens)
    if keep is not None:
        large_negative = jnp.asarray(-0.7 * jnp.finfo(logits_dtype).max, logits_dtype)
        logits = jnp.where(keep, logits, large_negative)

    probs = softmax(logits, axis=-1).astype(value.dtype)
    out = jnp.einsum("bnts,bsnh->btnh", probs, value)
    if query_seq_lengths is not None:     # padded query rows give zeros, as in JAX
        out = out * (q_pos[:, :1] < q_lens[:, 0]).reshape(B, T, 1, 1).astype(out.dtype)
    out = out.astype(query.dtype)
    return out[0] if unbatched else out


def _check_attention_implementation(implementation):
    """``None`` and ``'xla'`` are the array program every backend runs (the GPU compiler hands
    the attention it recognises to cuDNN); ``'cudnn'`` insists on cuDNN, so like JAX's it
    raises where there is none."""
    if implementation not in (None, "xla", "cudnn"):
        raise ValueError(f"dot_product_attention: unsupported implementation option "
                         f"{implementation!r}; use None, 'xla' or 'cudnn'")
    if implementation == "cudnn" and default_backend() != "gpu":
        raise UnavailableImplementationError(
            f"dot_product_attention(implementation='cudnn'): cuDNN is not detected (the "
            f"default backend is {default_backend()!r}); use implementation=None or 'xla'")


def _and(a, b):
    return b if a is None else a & b

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # modules.py's defaults are the public functions

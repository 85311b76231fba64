"""Neural-network layers as pytrees: a module's arrays (and sub-modules) are its leaves, its
static configuration is aux data, so a module passes straight through ``grad``, ``vmap``, ``jit``
and optimizers.

>>> import fnx, fnx.nn as nn, fnx.random as random
>>> model = nn.MLP(random.key(0), [4, 32, 3])
>>> grads = fnx.grad(lambda m, x: m(x).sum())(model, x)   # grads is an MLP too
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .. import numpy as jnp
from .. import random
from ..core import dtypes, lax
from ..core.convolution import conv_general_dilated
from ..core.pytree import register_pytree_node
from . import initializers as init
from ..core.errors import ShapeError
from .functions import layer_norm, relu, rms_norm, softmax


def _const(value, like):
    """``value`` as a 0-d array of ``like``'s dtype, exactly: a weak Python float would pass
    through float32 first."""
    dtype = np.dtype(like.dtype)
    return lax.convert_element_type_p.bind(np.asarray(value, dtype), new_dtype=dtype,
                                           weak_type=False)


class Module:
    """Base class: subclasses are registered as pytrees when defined.

    Every instance attribute is a child (an array, a sub-module, a list of them, or None)
    except the names in ``static_fields``, which are kept as hashable aux data (sizes, flags,
    activation functions), so changing them retraces ``jit``.

    >>> class Linear(fnx.nn.Module):
    ...     def __init__(self, w):
    ...         self.w = w
    ...     def __call__(self, x):
    ...         return x @ self.w
    >>> model = Linear(jnp.ones((2, 1)))
    >>> fnx.grad(lambda m: m(jnp.array([1.0, 2.0])).sum())(model).w
    Array([[1.],
           [2.]], dtype=float32)
    """
    static_fields: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_pytree_node(cls, _flatten_module, lambda aux, children, cls=cls:
                             _unflatten_module(cls, aux, children))

    def __repr__(self):
        fields = []
        for name, value in vars(self).items():
            if name in type(self).static_fields:
                shown = getattr(value, "__name__", repr(value))
            elif hasattr(value, "shape") and hasattr(value, "dtype"):
                shown = f"{np.dtype(value.dtype).name}{list(value.shape)}"
            else:
                shown = repr(value)
            fields.append(f"{name}={shown}")
        return f"{type(self).__name__}({', '.join(fields)})"


def _flatten_module(m):
    static = type(m).static_fields
    names = tuple(sorted(k for k in vars(m) if k not in static))
    aux = (names, tuple((k, getattr(m, k)) for k in static if k in vars(m)))
    return [getattr(m, k) for k in names], aux


def _unflatten_module(cls, aux, children):
    names, static = aux
    obj = object.__new__(cls)
    for k, v in zip(names, children):
        object.__setattr__(obj, k, v)
    for k, v in static:
        object.__setattr__(obj, k, v)
    return obj


# ---------------------------------------------------------------------------------------------
# Dense layers


class Linear(Module):
    """``y = x @ weight + bias`` with ``weight`` of shape (in_features, out_features).

    Weights start LeCun-normal (truncated), biases at zero, as in Flax's Dense.

    >>> layer = Linear(random.key(0), 3, 2); layer(jnp.ones((5, 3))).shape
    (5, 2)
    """
    static_fields = ("in_features", "out_features")

    def __init__(self, key, in_features: int, out_features: int, use_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable = init.zeros, dtype=None):
        self.in_features, self.out_features = int(in_features), int(out_features)
        w_init = w_init or init.lecun_normal()
        wkey, bkey = random.split(key)
        self.weight = w_init(wkey, (self.in_features, self.out_features), dtype)
        self.bias = b_init(bkey, (self.out_features,), dtype) if use_bias else None

    def __call__(self, x):
        y = jnp.matmul(x, self.weight)
        return y + self.bias if self.bias is not None else y


class MLP(Module):
    """A stack of Linear layers with ``activation`` between them (and ``final_activation``
    after the last, if given). ``sizes`` lists the features: ``[in, hidden..., out]``.

    >>> mlp = MLP(random.key(0), [64, 128, 10]); mlp(jnp.ones((8, 64))).shape
    (8, 10)
    """
    static_fields = ("activation", "final_activation")

    def __init__(self, key, sizes: Sequence[int], activation: Callable = relu,
                 final_activation: Callable | None = None, use_bias: bool = True, dtype=None):
        sizes = [int(s) for s in sizes]
        if len(sizes) < 2:
            raise ValueError(f"MLP needs at least an input and an output size, got {sizes}")
        keys = random.split(key, len(sizes) - 1)
        self.layers = [Linear(k, a, b, use_bias, dtype=dtype)
                       for k, a, b in zip(keys, sizes[:-1], sizes[1:])]
        self.activation = activation
        self.final_activation = final_activation

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        x = self.layers[-1](x)
        return self.final_activation(x) if self.final_activation is not None else x


class Embedding(Module):
    """A lookup table: ``ids`` (any integer shape) -> vectors of ``embedding_dim``. Rows start
    standard normal, as in PyTorch.

    >>> emb = Embedding(random.key(0), 100, 16); emb(jnp.array([1, 2])).shape
    (2, 16)
    """
    static_fields = ("num_embeddings", "embedding_dim")

    def __init__(self, key, num_embeddings: int, embedding_dim: int,
                 w_init: Callable | None = None, dtype=None):
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        w_init = w_init or init.normal(1.0)
        self.weight = w_init(key, (self.num_embeddings, self.embedding_dim), dtype)

    def __call__(self, ids):
        return jnp.take(self.weight, jnp.asarray(ids), axis=0)


# ---------------------------------------------------------------------------------------------
# Normalisation and regularisation


class LayerNorm(Module):
    """Normalise over the trailing ``shape`` axes to zero mean and unit variance, then scale and
    shift by learned ``weight`` (ones) and ``bias`` (zeros). Needs no key.

    >>> ln = LayerNorm(16); ln(jnp.ones((4, 16))).shape
    (4, 16)
    """
    static_fields = ("shape", "eps")

    def __init__(self, shape: int | Sequence[int], eps: float = 1e-5,
                 use_weight: bool = True, use_bias: bool = True, dtype=None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(int(s) for s in shape)
        self.eps = float(eps)
        self.weight = init.ones(None, self.shape, dtype) if use_weight else None
        self.bias = init.zeros(None, self.shape, dtype) if use_bias else None

    def __call__(self, x):
        x = jnp.asarray(x)
        if tuple(x.shape[x.ndim - len(self.shape):]) != self.shape:
            raise ShapeError(f"LayerNorm over {self.shape} got input of shape {x.shape}")
        axes = tuple(range(x.ndim - len(self.shape), x.ndim))
        return layer_norm(x, self.weight, self.bias, axis=axes, epsilon=self.eps)


class RMSNorm(Module):
    """Divide by the root mean square over the trailing ``shape`` axes, then scale by a learned
    ``weight`` (ones). Needs no key.

    >>> norm = RMSNorm(16); norm(jnp.ones((4, 16))).shape
    (4, 16)
    """
    static_fields = ("shape", "eps")

    def __init__(self, shape: int | Sequence[int], eps: float = 1e-6, use_weight: bool = True,
                 dtype=None):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(int(s) for s in shape)
        self.eps = float(eps)
        self.weight = init.ones(None, self.shape, dtype) if use_weight else None

    def __call__(self, x):
        x = jnp.asarray(x)
        if tuple(x.shape[x.ndim - len(self.shape):]) != self.shape:
            raise ShapeError(f"RMSNorm over {self.shape} got input of shape {x.shape}")
        axes = tuple(range(x.ndim - len(self.shape), x.ndim))
        return rms_norm(x, self.weight, axis=axes, epsilon=self.eps)


class Dropout(Module):
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)``.
    Randomness comes from an explicit ``key``; with ``key=None`` or ``deterministic=True`` it
    is the identity (evaluation mode).

    >>> drop = Dropout(0.5)
    >>> drop(jnp.ones(6), key=random.key(1))
    Array([2., 0., 2., 2., 0., 0.], dtype=float32)
    """
    static_fields = ("rate",)

    def __init__(self, rate: float = 0.5):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"Dropout rate must be in [0, 1), got {rate}")
        self.rate = float(rate)

    def __call__(self, x, key=None, deterministic: bool = False):
        x = jnp.asarray(x)
        if deterministic or key is None or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        mask = random.bernoulli(key, keep, x.shape)
        return jnp.where(mask, x / _const(keep, x), jnp.zeros_like(x))


# ---------------------------------------------------------------------------------------------
# Convolution


def _pair(v, name):
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError(f"Conv2d {name} must be an int or a pair, got {v}")
    return v


class Conv2d(Module):
    """2-D convolution over NCHW input (or CHW, unbatched) with an OIHW ``weight``, by
    ``lax.conv_general_dilated`` (one convolution primitive forward, and in each gradient).

    ``padding`` is an int, a pair, ``((top, bottom), (left, right))``, "VALID" or "SAME".

    >>> conv = Conv2d(random.key(0), 3, 8, 3, padding="SAME"); conv(jnp.ones((2, 3, 16, 16))).shape
    (2, 8, 16, 16)
    """
    static_fields = ("in_channels", "out_channels", "kernel_size", "stride", "padding",
                     "dilation")

    def __init__(self, key, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, dilation=1, use_bias: bool = True, w_init: Callable | None = None,
                 dtype=None):
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        self.padding = padding if isinstance(padding, str) else _padding_pairs(padding)
        w_init = w_init or init.lecun_normal(in_axis=1, out_axis=0)
        wkey, bkey = random.split(key)
        self.weight = w_init(wkey, (self.out_channels, self.in_channels) + self.kernel_size,
                             dtype)
        self.bias = init.zeros(bkey, (self.out_channels,), dtype) if use_bias else None

    def __call__(self, x):
        x = jnp.asarray(x)
        unbatched = x.ndim == 3
        if unbatched:
            x = x[None]
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"Conv2d expects (N, {self.in_channels}, H, W) input, got "
                             f"{x.shape}")
        y = conv2d(x, self.weight, self.stride, self.padding, self.dilation)
        if self.bias is not None:
            y = y + self.bias[None, :, None, None]
        return y[0] if unbatched else y


def _padding_pairs(padding):
    if isinstance(padding, (int, np.integer)):
        return ((int(padding),) * 2,) * 2
    padding = tuple(padding)
    if all(isinstance(p, (int, np.integer)) for p in padding):
        return tuple((int(p), int(p)) for p in padding)
    return tuple((int(lo), int(hi)) for lo, hi in padding)


def conv2d(x, weight, stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1)):
    """Cross-correlation of NCHW ``x`` with OIHW ``weight`` (what deep-learning libraries call
    convolution): ``lax.conv_general_dilated`` with kernel dilation, operands promoted to a
    common dtype first.

    >>> fnx.nn.conv2d(jnp.ones((1, 1, 3, 3)), jnp.ones((1, 1, 2, 2)))
    Array([[[[4., 4.],
             [4., 4.]]]], dtype=float32)
    """
    x, weight = jnp.asarray(x), jnp.asarray(weight)
    dtype = jnp.result_type(x, weight)
    return conv_general_dilated(x.astype(dtype), weight.astype(dtype), stride, padding,
                                rhs_dilation=dilation)


# ---------------------------------------------------------------------------------------------
# Attention


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention over (..., length, embed_dim) inputs: query,
    key and value projections, ``num_heads`` heads, and an output projection.

    Self-attention by default; pass ``context`` to attend to another sequence. ``mask`` is
    boolean, True where attention is allowed, broadcastable to (..., num_heads, q_len, k_len).

    >>> mha = MultiHeadAttention(random.key(0), 32, 4)
    >>> x = random.normal(random.key(1), (10, 32))
    >>> causal = jnp.tril(jnp.ones((10, 10), bool))
    >>> mha(x, mask=causal).shape
    (10, 32)
    """
    static_fields = ("embed_dim", "num_heads")

    def __init__(self, key, embed_dim: int, num_heads: int, use_bias: bool = True, dtype=None):
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        kq, kk, kv, ko = random.split(key, 4)
        self.query = Linear(kq, embed_dim, embed_dim, use_bias, dtype=dtype)
        self.key = Linear(kk, embed_dim, embed_dim, use_bias, dtype=dtype)
        self.value = Linear(kv, embed_dim, embed_dim, use_bias, dtype=dtype)
        self.out = Linear(ko, embed_dim, embed_dim, use_bias, dtype=dtype)

    def _heads(self, x):
        # (..., L, E) -> (..., H, L, E/H)
        x = jnp.reshape(x, x.shape[:-1] + (self.num_heads, self.embed_dim // self.num_heads))
        return jnp.swapaxes(x, -2, -3)

    def __call__(self, x, mask=None, context=None):
        x = jnp.asarray(x)
        context = x if context is None else jnp.asarray(context)
        q = self._heads(self.query(x))
        k = self._heads(self.key(context))
        v = self._heads(self.value(context))
        scale = _const(1.0 / math.sqrt(q.shape[-1]), q)
        logits = jnp.matmul(q, jnp.swapaxes(k, -1, -2)) * scale
        if mask is not None:
            big_neg = _const(dtypes.finfo(logits.dtype).min, logits)
            logits = jnp.where(jnp.asarray(mask), logits, big_neg)
        weights = softmax(logits, axis=-1)
        attended = jnp.swapaxes(jnp.matmul(weights, v), -2, -3)    # (..., L, H, E/H)
        attended = jnp.reshape(attended, attended.shape[:-2] + (self.embed_dim,))
        return self.out(attended)


__all__ = ["Module", "Linear", "MLP", "Embedding", "LayerNorm", "Dropout", "Conv2d", "conv2d",
           "MultiHeadAttention"]

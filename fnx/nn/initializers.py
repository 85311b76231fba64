"""Parameter initialisers with ``jax.nn.initializers``' API: each factory returns
``init(key, shape, dtype=float32, out_sharding=None) -> array`` (the sharding, JAX's explicit
placement, leaves the values as they are).

>>> import fnx.nn.initializers as init, fnx.random as random
>>> w = init.glorot_uniform()(random.key(0), (64, 32))
"""
from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from .. import numpy as jnp
from .. import random
from ..core import dtypes


class Initializer(Protocol):
    """The type of every initializer here: ``init(key, shape, dtype=None) -> Array`` (for
    annotations, as ``jax.nn.initializers.Initializer``).

    >>> def dense_init(key, w_init: Initializer = lecun_normal()):
    ...     return w_init(key, (3, 2))
    >>> dense_init(random.key(0)).shape
    (3, 2)
    """

    def __call__(self, key: Any, shape: Any, dtype: Any = None) -> Any: ...


def _dtype(dtype):
    return dtypes.canonicalize(dtype if dtype is not None else dtypes.default_float,
                              "initializer")


def zeros(key, shape, dtype=None):
    """All zeros (the key is unused).

    >>> fnx.nn.initializers.zeros(fnx.random.PRNGKey(0), (2,))
    Array([0., 0.], dtype=float32)
    """
    return jnp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None):
    """All ones (the key is unused).

    >>> fnx.nn.initializers.ones(fnx.random.PRNGKey(0), (2,))
    Array([1., 1.], dtype=float32)
    """
    return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None):
    """An initialiser filling with ``value``.

    >>> fnx.nn.initializers.constant(0.5)(fnx.random.PRNGKey(0), (2,))
    Array([0.5, 0.5], dtype=float32)
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        return jnp.full(shape, value, _dtype(dtype))
    return init


def normal(stddev: float = 1e-2, dtype=None):
    """Normal with mean 0 and standard deviation ``stddev``.

    >>> fnx.nn.initializers.normal(0.01)(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        dt = _dtype(dtype)
        return random.normal(key, shape, dt) * np.asarray(stddev, dt)
    return init


def uniform(scale: float = 1e-2, dtype=None):
    """Uniform on ``[0, scale)``.

    >>> fnx.nn.initializers.uniform(0.01)(fnx.random.PRNGKey(0), (3, 2)).dtype
    dtype('float32')
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        dt = _dtype(dtype)
        return random.uniform(key, shape, dt) * np.asarray(scale, dt)
    return init


def truncated_normal(stddev: float = 1e-2, lower: float = -2.0, upper: float = 2.0,
                     dtype=None):
    """Normal with standard deviation ``stddev`` truncated to ``[lower, upper] * stddev``.

    >>> fnx.nn.initializers.truncated_normal(0.01)(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dt) * np.asarray(stddev, dt)
    return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """Fan-in and fan-out; dimensions other than in/out/batch form the receptive field."""
    if len(shape) < 2:
        raise ValueError(f"variance-scaling initialisers need a shape of rank >= 2, got {shape}")
    in_axes = (in_axis,) if isinstance(in_axis, int) else tuple(in_axis)
    out_axes = (out_axis,) if isinstance(out_axis, int) else tuple(out_axis)
    batch_axes = (batch_axis,) if isinstance(batch_axis, int) else tuple(batch_axis)
    in_size = math.prod(shape[a] for a in in_axes)
    out_size = math.prod(shape[a] for a in out_axes)
    batch_size = math.prod(shape[a] for a in batch_axes)
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


# the standard deviation of a standard normal truncated to (-2, 2)
_TRUNCATED_STD = 0.87962566103423978


def variance_scaling(scale: float, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None):
    """Samples with variance ``scale / fan`` (``mode``: "fan_in", "fan_out", "fan_avg") from a
    "truncated_normal", "normal" or "uniform" distribution, as in JAX.

    >>> he = variance_scaling(2.0, "fan_in", "truncated_normal")
    """
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling mode must be fan_in, fan_out or fan_avg, got {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError("variance_scaling distribution must be truncated_normal, normal or "
                         f"uniform, got {distribution!r}")

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = tuple(int(s) for s in shape)
        dt = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / denominator
        if distribution == "truncated_normal":
            std = np.sqrt(variance) / _TRUNCATED_STD
            return random.truncated_normal(key, -2.0, 2.0, shape, dt) * np.asarray(std, dt)
        if distribution == "normal":
            return random.normal(key, shape, dt) * np.asarray(np.sqrt(variance), dt)
        limit = np.sqrt(3 * variance)
        return random.uniform(key, shape, dt, -limit, limit)
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Glorot/Xavier uniform: ``U(-a, a)`` with ``a = sqrt(6 / (fan_in + fan_out))``.

    >>> fnx.nn.initializers.glorot_uniform()(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Glorot/Xavier normal (truncated): variance ``2 / (fan_in + fan_out)``.

    >>> fnx.nn.initializers.glorot_normal()(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """LeCun uniform: variance ``1 / fan_in``.

    >>> fnx.nn.initializers.lecun_uniform()(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """LeCun normal (truncated): variance ``1 / fan_in``.

    >>> fnx.nn.initializers.lecun_normal()(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """He/Kaiming uniform: variance ``2 / fan_in`` (for ReLU networks).

    >>> fnx.nn.initializers.he_uniform()(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """He/Kaiming normal (truncated): variance ``2 / fan_in``.

    >>> fnx.nn.initializers.he_normal()(fnx.random.PRNGKey(0), (3, 2)).shape
    (3, 2)
    """
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample, times
    ``scale``.

    >>> w = fnx.nn.initializers.orthogonal()(fnx.random.PRNGKey(0), (3, 3))
    >>> bool(jnp.allclose(w.T @ w, jnp.eye(3), atol=1e-5))
    True
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = tuple(int(s) for s in shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initialiser needs rank >= 2, got shape {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        a = random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols)), dt)
        q, r = jnp.linalg.qr(a)
        q = q * jnp.sign(jnp.diagonal(r))      # uniform over the orthogonal group
        if n_rows < n_cols:
            q = q.T
        q = jnp.reshape(q, (n_rows,) + (n_cols,))
        q = jnp.moveaxis(jnp.reshape(q, tuple(np.delete(shape, column_axis % len(shape)))
                                     + (n_cols,)), -1, column_axis)
        return q * np.asarray(scale, dt)
    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=None):
    """A convolution kernel (rank 3 to 5) that is zero except at its spatial centre, which
    holds an ``orthogonal`` matrix of shape ``shape[-2:]`` (needs ``fan_in <= fan_out``).

    >>> w = fnx.nn.initializers.delta_orthogonal()(fnx.random.PRNGKey(0), (3, 2, 2))
    >>> bool(jnp.allclose(w[1].T @ w[1], jnp.eye(2), atol=1e-5)), float(abs(w[0]).sum())
    (True, 0.0)
    """
    def init(key, shape, dtype=dtype):
        shape = tuple(int(s) for s in shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, got "
                             f"{shape}")
        if shape[-2] > shape[-1]:
            raise ValueError(f"`fan_in` must be less or equal than `fan_out`, got shape "
                             f"{shape}")
        matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:], dtype)
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, matrix.dtype).at[centre].set(matrix)
    return init


__all__ = ["zeros", "ones", "constant", "normal", "uniform", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal",
           "Initializer"]

"""``gaussian_kde``: a kernel density estimate with Gaussian kernels, as jax.scipy.stats's (a
pytree of its arrays, so it passes through ``jit``, ``vmap`` and ``grad``)."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as jnp
from .. import random
from ..core.pytree import register_pytree_node_class
from . import linalg
from .special import logsumexp, ndtr

_FIELDS = ("neff", "dataset", "weights", "covariance", "inv_cov")


@register_pytree_node_class
class gaussian_kde:
    """A Gaussian kernel density estimate of ``dataset`` (shape ``(n,)``, or ``(d, n)`` for n
    points in d dimensions), with optional ``weights`` and a bandwidth ``bw_method``:
    ``"scott"`` (the default), ``"silverman"``, a scalar factor, or a function of the
    estimate. ``integrate_box`` and ``set_bandwidth`` are not supported, as in JAX.

    >>> from fnx.scipy.stats import gaussian_kde
    >>> kde = gaussian_kde(jnp.array([0.0, 1.0, 2.0, 4.0]))
    >>> kde.evaluate(jnp.array([1.0, 3.0]))
    Array([0.196654..., 0.142948...], dtype=float32)
    """
    __slots__ = _FIELDS

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = jnp.atleast_2d(jnp.asarray(dataset))
        if jnp.issubdtype(dataset.dtype, jnp.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError(f"gaussian_kde: the dataset needs several elements, got shape "
                             f"{dataset.shape}")
        d, n = dataset.shape
        if weights is None:
            dataset = _inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            dtype = jnp.result_type(dataset, weights, float)
            dataset = dataset.astype(dtype)
            weights = jnp.atleast_1d(jnp.asarray(weights, dtype))
            if weights.shape != (n,):
                raise ValueError(f"gaussian_kde: weights must have shape ({n},), one per "
                                 f"data point, got {weights.shape}")
            weights = weights / jnp.sum(weights)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1.0 / jnp.sum(weights ** 2))
        factor = self._bandwidth_factor("scott" if bw_method is None else bw_method, neff, d)
        data_covariance = jnp.atleast_2d(jnp.cov(dataset, rowvar=1, bias=False,
                                                 aweights=weights))
        self._set("covariance", data_covariance * factor ** 2)
        self._set("inv_cov", jnp.linalg.inv(data_covariance) / factor ** 2)

    def _bandwidth_factor(self, bw_method, neff, d):
        if isinstance(bw_method, str):
            if bw_method == "scott":
                return jnp.power(neff, -1.0 / (d + 4))
            if bw_method == "silverman":
                return jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif callable(bw_method):
            return bw_method(self)
        elif jnp.ndim(bw_method) == 0:
            return bw_method
        raise ValueError(f"gaussian_kde: bw_method should be 'scott', 'silverman', a scalar or "
                         f"a callable, got {bw_method!r}")

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        raise AttributeError(f"gaussian_kde is immutable: cannot set {name!r}")

    def tree_flatten(self):
        return tuple(getattr(self, name) for name in _FIELDS), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        for name, value in zip(_FIELDS, children):
            kde._set(name, value)
        return kde

    @property
    def d(self) -> int:
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """The number of data points."""
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The estimated density at ``points`` (shape ``(d, m)``, or ``(m,)`` in one
        dimension, or one point of shape ``(d,)``)."""
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, points):
        """The log of the estimated density at ``points``."""
        points = self._points(points)
        # with L L^T the precision, each kernel is exp(-|L^T (x - x_i)|^2 / 2) |L| / (2pi)^(d/2)
        whitening = jnp.linalg.cholesky(self.inv_cov)
        data, queries = self.dataset.T @ whitening, points.T @ whitening
        log_norm = jnp.sum(jnp.log(jnp.diagonal(whitening))) - 0.5 * self.d * math.log(2 * math.pi)
        squared = jnp.sum((queries[:, None, :] - data[None, :, :]) ** 2, axis=-1)
        return logsumexp(log_norm - 0.5 * squared, axis=1, b=self.weights[None, :])

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the Gaussian density ``N(mean, cov)``."""
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
        cov = jnp.atleast_2d(jnp.asarray(cov))
        if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
            raise ValueError(f"integrate_gaussian: mean and cov must have shapes ({self.d},) and "
                             f"({self.d}, {self.d}), got {mean.shape} and {cov.shape}")
        return self._convolved(self.covariance + cov, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The integral of a one-dimensional estimate from ``low`` to ``high`` (scalars)."""
        if self.d != 1:
            raise ValueError(f"integrate_box_1d: only one-dimensional estimates, this one has "
                             f"{self.d} dimensions")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("integrate_box_1d: the limits must be scalars")
        sigma = jnp.sqrt(self.covariance[0, 0])
        low = (low - self.dataset[0]) / sigma
        high = (high - self.dataset[0]) / sigma
        return jnp.sum(self.weights * (ndtr(high) - ndtr(low)))

    def integrate_kde(self, other):
        """The integral of the product of this estimate and ``other``."""
        if other.d != self.d:
            raise ValueError(f"integrate_kde: the estimates have {self.d} and {other.d} "
                             f"dimensions")
        small, large = (self, other) if self.n < other.n else (other, self)
        covariance = self.covariance + other.covariance
        values = [self._convolved(covariance, large.dataset, large.weights, small.dataset[:, i])
                  for i in range(small.n)]
        return jnp.sum(jnp.stack(values) * small.weights)

    @staticmethod
    def _convolved(covariance, dataset, weights, mean):
        """sum_i w_i N(mean; x_i, covariance)."""
        factor = linalg.cho_factor(covariance)
        norm = jnp.sqrt(2 * math.pi) ** covariance.shape[0] * jnp.prod(jnp.diag(factor[0]))
        diff = dataset - mean[:, None]
        exponent = 0.5 * jnp.sum(diff * linalg.cho_solve(factor, diff), axis=0)
        return jnp.sum(jnp.exp(-exponent) * weights) / norm

    def resample(self, key, shape=()):
        """Draws from the estimate: shape ``(d,) + shape``, JAX's draws for the same key (for a
        multi-dimensional ``shape`` JAX transposes its noise, and fails unless it is square;
        fnx gives the shape it documents)."""
        index_key, noise_key = random.split(key)
        index = random.choice(index_key, self.n, shape=shape, p=self.weights)
        noise = random.multivariate_normal(noise_key, jnp.zeros(self.d, self.covariance.dtype),
                                           self.covariance, shape=shape,
                                           dtype=self.dataset.dtype)
        noise = jnp.moveaxis(noise, -1, 0)
        return self.dataset[:, index] + noise

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not supported, as in JAX: use ``integrate_box_1d``."""
        raise NotImplementedError("gaussian_kde.integrate_box: only one-dimensional boxes are "
                                  "supported; use integrate_box_1d")

    def set_bandwidth(self, bw_method=None):
        """Not supported, as in JAX: make a new estimate with the bandwidth."""
        raise NotImplementedError("gaussian_kde.set_bandwidth: the bandwidth is fixed; make a "
                                  "new gaussian_kde with bw_method")

    def _points(self, points):
        points = jnp.atleast_2d(jnp.asarray(points))
        if jnp.issubdtype(points.dtype, jnp.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(f"gaussian_kde: points of shape {points.shape} have dimension {d}; "
                             f"the dataset has dimension {self.d}")
        return points


def _inexact(x):
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(float))


__all__ = ["gaussian_kde"]

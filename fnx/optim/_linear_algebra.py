"""The linear algebra optax exports: power iteration, inverse p-th roots by coupled Newton
iterations (Shampoo's), non-negative least squares by accelerated projected gradient."""
from __future__ import annotations

from .. import numpy as jnp
from .. import random
from ..core.control_flow import scan, switch, while_loop
from ..core.lax.products import Precision
from .tree_utils import tree_norm, tree_scale, tree_sub, tree_vdot


def _normalize(tree):
    return tree_scale(1.0 / tree_norm(tree), tree)


def power_iteration(matrix, *, v0=None, num_iters=100, error_tolerance=1e-6,
                    precision=Precision.HIGHEST, key=None):
    """``(eigenvalue, eigenvector)`` of the eigenvalue of largest modulus of ``matrix`` (an
    array, or a function applying a symmetric operator to a pytree, with ``v0`` then
    required), iterating until the residual is within ``error_tolerance`` of it.

    >>> value, vector = power_iteration(jnp.array([[2.0, 0.0], [0.0, 1.0]]))
    >>> round(float(value), 4)
    2.0
    """
    if callable(matrix):
        if v0 is None:
            raise ValueError("power_iteration: pass v0 when matrix is a function")
        mvp = matrix
    else:
        mvp = lambda v: jnp.matmul(matrix, v, precision=precision)  # noqa: E731
        if v0 is None:
            key = random.PRNGKey(0) if key is None else key
            v0 = random.uniform(key, matrix.shape[-1:], matrix.dtype, -1.0, 1.0)
    v0 = _normalize(v0)

    def not_converged(state):
        vec, z, eig, i = state
        residual = tree_norm(tree_sub(z, tree_scale(eig, vec)))
        return ~(jnp.abs(residual / eig) < error_tolerance) & (i < num_iters)

    def step(state):
        _, z, _, i = state
        vec = _normalize(z)
        z = mvp(vec)
        return vec, z, tree_vdot(vec, z), i + 1
    _, z, eig, _ = while_loop(not_converged, step, (v0, mvp(v0), jnp.asarray(0.0),
                                                    jnp.asarray(0)))
    return eig, _normalize(z)


def matrix_inverse_pth_root(matrix, p, num_iters=100, ridge_epsilon=1e-6, error_tolerance=1e-6,
                            precision=Precision.HIGHEST):
    """``(matrix + eps * I) ** (-1 / p)`` for a symmetric positive semi-definite ``matrix``
    and ``p`` in 1, 2, 4, 8, by coupled Newton iterations (Shampoo's), with ``eps`` =
    ``ridge_epsilon`` times the largest eigenvalue; returns ``(root, error)``.

    >>> root, _ = matrix_inverse_pth_root(jnp.array([[4.0, 0.0], [0.0, 16.0]]), 2)
    >>> jnp.round(root, 3)
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    size = matrix.shape[0]
    alpha = jnp.asarray(-1.0 / p, jnp.float32)
    identity = jnp.eye(size, dtype=jnp.float32)
    max_ev, _ = power_iteration(matrix, num_iters=100, error_tolerance=1e-6,
                                precision=precision)
    ridge_epsilon = ridge_epsilon * jnp.maximum(max_ev, 1e-16)
    matmul = lambda a, b: jnp.matmul(a, b, precision=precision)  # noqa: E731

    def squarings(k):
        def power(m):
            for _ in range(k):
                m = matmul(m, m)
            return m
        return power

    def running(state):
        i, _, _, _, error, improving = state
        return (i < num_iters) & (error > error_tolerance) & improving

    def step(state):
        i, mat_m, mat_h, _, error, _ = state
        mat_m_i = (1 - alpha) * identity + alpha * mat_m
        powered = switch(jnp.asarray(jnp.round(jnp.log2(p)), jnp.int32),
                         [squarings(k) for k in range(4)], mat_m_i)
        new_m = matmul(powered, mat_m)
        new_error = jnp.max(jnp.abs(new_m - identity))
        return i + 1, new_m, matmul(mat_h, mat_m_i), mat_h, new_error, new_error < error * 1.2

    if size == 1:
        return (matrix + ridge_epsilon) ** alpha, 0
    damped = matrix + ridge_epsilon * identity
    z = (1 + p) / (2 * jnp.linalg.norm(damped))
    mat_m0 = damped * z
    mat_h0 = identity * jnp.power(z, 1.0 / p)
    _, mat_m, mat_h, old_h, _, converged = while_loop(
        running, step, (0, mat_m0, mat_h0, mat_h0, jnp.max(jnp.abs(mat_m0 - identity)), True))
    error = jnp.max(jnp.abs(mat_m - identity))
    # a step that made the error worse is undone
    converged = jnp.asarray(converged, old_h.dtype)
    root = converged * mat_h + (1 - converged) * old_h
    return jnp.asarray(root, matrix.dtype), error


def _spectral_radius_bound(matrix):
    fro = jnp.linalg.matrix_norm(matrix, ord="fro")
    return jnp.minimum(fro, jnp.linalg.matrix_norm(matrix, ord=1) if matrix.size else 0)


def nnls(A, b, iters: int, unroll=1, L=None):
    """``argmin_{x >= 0} ||A x - b||^2`` (``b`` a vector or a matrix of right-hand sides)
    after ``iters`` steps of Nesterov-accelerated projected gradient descent with step
    ``1 / L`` (``L`` defaults to a bound on the largest eigenvalue of ``A^T A``).

    >>> x = nnls(jnp.array([[1.0, 0.0], [0.0, 1.0]]), jnp.array([2.0, -1.0]), iters=50)
    >>> jnp.round(x, 4)
    Array([2., 0.], dtype=float32)
    """
    if A.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(f"nnls: A must be a matrix and b a vector or matrix with as many rows, "
                         f"got shapes {A.shape} and {b.shape}")
    Q, q = A.mT @ A, A.mT @ b
    L = _spectral_radius_bound(Q) if L is None else L
    L = jnp.where(L == 0, 1, L)

    def step(carry, _):
        x, p, c = carry
        cn = (1 + jnp.sqrt(1 + 4 * c ** 2)) / 2
        xn = (p - (Q @ p - q) / L).clip(0)
        return (xn, xn + (c - 1) / cn * (xn - x), cn), None
    x = jnp.zeros_like(b, shape=A.shape[-1:] + b.shape[1:])
    (x, _, _), _ = scan(step, (x, x, 0.0), length=iters, unroll=unroll)
    return x


class MultiNormalDiagFromLogScale:
    """A normal distribution with independent coordinates, parametrized by its mean and the
    log of its standard deviations.

    >>> dist = MultiNormalDiagFromLogScale(jnp.zeros(2), jnp.zeros(2))
    >>> dist.sample((3,), fnx.random.PRNGKey(0)).shape
    (3, 2)
    """

    def __init__(self, loc, log_scale):
        self._log_scale = jnp.asarray(log_scale)
        self._scale = jnp.exp(log_scale)
        self._mean = jnp.asarray(loc)
        self._param_shape = jnp.broadcast_shapes(self._mean.shape, self._scale.shape)

    def sample(self, shape, key):
        return (random.normal(key, tuple(shape) + self._param_shape) * self._scale
                + self._mean)

    def log_prob(self, x):
        # jax.scipy.stats.norm.logpdf's arithmetic, summed over the parameter axes
        x = jnp.asarray(x)
        log_normalizer = jnp.log(2 * jnp.pi * jnp.square(self._scale))
        quadratic = jnp.square(x - self._mean) / jnp.square(self._scale)
        log_prob = (log_normalizer + quadratic) / -2
        return jnp.sum(log_prob, axis=[-(i + 1) for i in range(len(self._param_shape))])

    @property
    def log_scale(self):
        return self._log_scale

    @property
    def params(self):
        return [self._mean, self._log_scale]


def multi_normal(loc, log_scale) -> MultiNormalDiagFromLogScale:
    """A diagonal normal distribution of mean ``loc`` and standard deviation
    ``exp(log_scale)``.

    >>> multi_normal(jnp.zeros(2), jnp.zeros(2)).log_prob(jnp.zeros(2))
    Array(-1.8378772, dtype=float32)
    """
    return MultiNormalDiagFromLogScale(loc, log_scale)

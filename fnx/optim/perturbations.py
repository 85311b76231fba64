"""fnx.optim.perturbations: differentiable Monte-Carlo smoothing of any function
(optax.perturbations), after Berthet et al. (2020), "Learning with Differentiable Perturbed
Optimizers".

``make_perturbed_fun(f)`` estimates ``E_z f(x + sigma * z)`` from values of ``f`` alone; its
derivatives of every order, taken by ``grad``, estimate those of the smoothed function (the
score-function estimator, written with the DiCE "magic box"), so ``f`` may be piecewise
constant.

>>> f = lambda x: jnp.sum(jnp.maximum(x, 0.0))
>>> smooth = make_perturbed_fun(f, num_samples=100, sigma=0.5, noise=Normal())
>>> fnx.grad(smooth, argnums=1)(fnx.random.key(0), jnp.zeros(3)).shape
(3,)
"""
from __future__ import annotations

from .. import numpy as jnp
from .. import random
from ..core.api import stop_gradient, vmap
from ..core.pytree import tree_map
from .tree_utils import tree_add_scale, tree_random_like, tree_scale, tree_sum


class Normal:
    """The standard normal noise: ``sample`` and the unnormalized ``log_prob``.

    >>> Normal().log_prob(jnp.array(2.0))
    Array(-2., dtype=float32, weak_type=True)
    """

    def sample(self, key, sample_shape=(), dtype=float):
        return random.normal(key, sample_shape, dtype)

    def log_prob(self, inputs):
        return -0.5 * inputs ** 2


class Gumbel:
    """The standard Gumbel noise: ``sample`` and the unnormalized ``log_prob``.

    >>> Gumbel().log_prob(jnp.array(0.0))
    Array(-1., dtype=float32, weak_type=True)
    """

    def sample(self, key, sample_shape=(), dtype=float):
        return random.gumbel(key, sample_shape, dtype)

    def log_prob(self, inputs):
        return -inputs - jnp.exp(-inputs)


def _magic_box(x):
    # 1 in value; d/dx of it is itself: the score function enters every derivative
    return jnp.exp(x - stop_gradient(x))


def make_perturbed_fun(fun, num_samples=1000, sigma=0.1, noise=Gumbel(), use_baseline=True):
    """``f(key, x)``: the mean of ``fun(x + sigma * z)`` over ``num_samples`` draws of
    ``noise`` (pytrees in and out), differentiable in ``x`` even where ``fun`` is not;
    ``use_baseline`` subtracts ``fun(x)`` in the derivatives to reduce their variance.

    >>> f = make_perturbed_fun(lambda x: jnp.argmax(x) * 1.0, num_samples=10)
    >>> f(fnx.random.key(0), jnp.array([0.0, 5.0])).item()
    1.0
    """
    def sample_estimate(key, x, baseline):
        z = tree_random_like(key, x, sampler=noise.sample)
        shifted = stop_gradient(tree_map(lambda x, z: x + sigma * z, x, z))
        z = tree_map(lambda x, y: (y - x) / sigma, x, shifted)
        box = _magic_box(tree_sum(tree_map(noise.log_prob, z)))
        out = tree_scale(box, fun(shifted))
        return tree_add_scale(out, 1 - box, baseline) if use_baseline else out

    def perturbed(key, x):
        baseline = fun(stop_gradient(x)) if use_baseline else None
        out = vmap(sample_estimate, in_axes=(0, None, None))(
            random.split(key, num_samples), x, baseline)
        return tree_map(lambda v: jnp.mean(v, axis=0), out)
    return perturbed


__all__ = ["Gumbel", "Normal", "make_perturbed_fun"]

"""Sophia (Liu et al., 2023): momentum divided by a running estimate of the Hessian's
diagonal, clipped."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.api import grad, jvp
from ...core.control_flow import cond
from ...core.pytree import tree_map
from .._base import GradientTransformationExtraArgs, chain, with_extra_args_support
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from .._transforms import scale_by_learning_rate
from ..tree_utils import (tree_bias_correction, tree_cast, tree_dtype, tree_random_like,
                          tree_sum, tree_update_moment, tree_zeros_like)


class HutchinsonState(NamedTuple):
    """``hutchinson_estimator_diag_hessian``'s state.

    >>> HutchinsonState._fields
    ('key',)
    """
    key: Any


def hutchinson_estimator_diag_hessian(random_seed=None) -> GradientTransformationExtraArgs:
    """Hutchinson's estimate of the Hessian's diagonal of ``obj_fn`` (passed to ``update``)
    at ``params``: ``z * (H z)`` for random signs ``z``.

    >>> est = hutchinson_estimator_diag_hessian()
    >>> f = lambda x: jnp.sum(x ** 2)
    >>> x = jnp.ones(3)
    >>> est.update(x, est.init(x), x, obj_fn=f)[0]
    Array([2., 2., 2.], dtype=float32)
    """
    def init(params):
        from ... import random
        return HutchinsonState(random.PRNGKey(0) if random_seed is None else random_seed)

    def update(updates, state, params=None, obj_fn=None, **extra_args):
        from ... import random
        if params is None or obj_fn is None:
            raise ValueError("hutchinson_estimator_diag_hessian.update needs params and obj_fn=")
        key, subkey = random.split(state.key)
        signs = tree_random_like(subkey, params, random.rademacher, dtype=jnp.float32)
        signs = tree_cast(signs, tree_dtype(params, "lowest"))
        hvp = jvp(grad(obj_fn), (params,), (signs,))[1]
        return tree_map(lambda h, r: h * r, hvp, signs), HutchinsonState(key)
    return GradientTransformationExtraArgs(init, update)


class SophiaState(NamedTuple):
    """``scale_by_sophia``'s state.

    >>> SophiaState._fields
    ('count', 'mu', 'nu', 'hessian_fn_state')
    """
    count: Any
    mu: Any
    nu: Any
    hessian_fn_state: Any


def scale_by_sophia(b1: float = 0.965, b2: float = 0.99, eps: float = 1e-8,
                    gamma: float = 0.01, clip_threshold: float | None = 1.0,
                    update_interval: int = 10, hessian_diagonal_fn=None, mu_dtype=None,
                    verbose: bool = False,
                    print_win_rate_every_n_steps: int = 0) -> GradientTransformationExtraArgs:
    """Sophia's rescaling: ``clip(m_hat / max(gamma * h, eps))``, with ``h`` an average of
    ``hessian_diagonal_fn``'s estimates (by default Hutchinson's, which needs ``obj_fn=``)
    refreshed every ``update_interval`` steps.

    >>> opt = scale_by_sophia()
    """
    hessian_fn = with_extra_args_support(hessian_diagonal_fn or
                                         hutchinson_estimator_diag_hessian())

    def init(params):
        return SophiaState(jnp.zeros((), jnp.int32), tree_zeros_like(params, dtype=mu_dtype),
                           tree_zeros_like(params), hessian_fn.init(params))

    def update(updates, state, params=None, **hess_fn_kwargs):
        if params is None:
            raise ValueError("sophia needs params: call update(updates, state, params)")
        count = safe_increment(state.count)
        grads = updates
        mu = tree_update_moment(updates, state.mu, b1, 1)
        mu_hat = tree_bias_correction(mu, b1, count)
        out = tree_map(lambda m, h: m / jnp.maximum(gamma * h, eps), mu_hat, state.nu)
        if clip_threshold is not None:
            if verbose:
                from ...debug import print as debug_print
                win = tree_sum(tree_map(lambda u: jnp.abs(u) < clip_threshold, out))
                cond(count % max(print_win_rate_every_n_steps, 1) == 0,
                     lambda: debug_print("Sophia optimizer win rate: {}", win), lambda: None)
            out = tree_map(lambda u: jnp.clip(u, -clip_threshold, clip_threshold), out)

        def refresh(hess_state, nu):
            diag, hess_state = hessian_fn.update(grads, hess_state, params=params,
                                                 **hess_fn_kwargs)
            return hess_state, tree_update_moment(diag, nu, b2, 1)
        hess_state, nu = cond(state.count % update_interval == 0, refresh,
                              lambda h, n: (h, n), state.hessian_fn_state, state.nu)
        return out, SophiaState(count, tree_cast(mu, mu_dtype), nu, hess_state)
    return GradientTransformationExtraArgs(init, update)


def sophia(learning_rate, b1: float = 0.965, b2: float = 0.99, eps: float = 1e-8,
           weight_decay: float = 1e-4, weight_decay_mask=None, gamma: float = 0.01,
           clip_threshold: float | None = 1.0, update_interval: int = 10,
           hessian_diagonal_fn=None, mu_dtype=None, verbose: bool = False,
           print_win_rate_every_n_steps: int = 0) -> GradientTransformationExtraArgs:
    """Sophia with decoupled weight decay. Pass ``obj_fn=`` (the loss of the params) to
    ``update`` for the default Hutchinson estimator.

    >>> opt = sophia(1e-3)
    """
    return chain(scale_by_sophia(b1, b2, eps, gamma, clip_threshold, update_interval,
                                 hessian_diagonal_fn, mu_dtype, verbose,
                                 print_win_rate_every_n_steps),
                 add_decayed_weights(weight_decay, weight_decay_mask),
                 scale_by_learning_rate(learning_rate))

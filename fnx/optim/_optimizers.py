"""The optimizers (optax's aliases): chains of the building blocks, with a learning rate."""
from __future__ import annotations

from .. import numpy as jnp
from ._base import GradientTransformation, chain, identity
from ._clipping import clip_by_block_rms
from ._constrain import add_decayed_weights
from ._factorized import scale_by_factored_rms
from ._wrappers import masked
from ._transforms import (add_noise, ema, scale, scale_by_adan, scale_by_novograd,
                          scale_by_optimistic_gradient, scale_by_polyak, scale_by_rprop,
                          scale_by_sm3, scale_by_adadelta, scale_by_adam, scale_by_adamax,
                          scale_by_amsgrad, scale_by_belief, scale_by_learning_rate, scale_by_lion,
                          scale_by_param_block_rms, scale_by_radam, scale_by_rms, scale_by_rss,
                          scale_by_sign, scale_by_stddev, scale_by_trust_ratio, scale_by_yogi,
                          trace)


def sgd(learning_rate, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    >>> opt = sgd(0.1, momentum=0.9)
    """
    # an identity in momentum's place keeps optax's state structure (a tuple of two)
    accumulate = trace(momentum, nesterov) if momentum is not None else identity()
    return chain(accumulate, scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         eps_root: float = 0.0, mu_dtype=None, *, nesterov: bool = False
         ) -> GradientTransformation:
    """Adam (Kingma & Ba, 2015); Nadam with ``nesterov``.

    >>> opt = adam(1e-3)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, mu_dtype=None, weight_decay: float = 1e-4, mask=None, *,
          nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019); the decay is scaled by
    the learning rate, as in optax (whose argument order this keeps).

    >>> opt = adamw(1e-3, weight_decay=1e-2)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            eps_in_sqrt: bool = True, centered: bool = False, momentum: float | None = None,
            nesterov: bool = False, bias_correction: bool = False) -> GradientTransformation:
    """RMSProp (Tieleman & Hinton, 2012), optionally centred and with momentum, as in optax
    (whose argument order this keeps).

    >>> opt = rmsprop(1e-3, momentum=0.9)
    """
    scale_by = scale_by_stddev if centered else scale_by_rms
    accumulate = trace(momentum, nesterov) if momentum is not None else identity()
    return chain(scale_by(decay, eps, initial_scale, eps_in_sqrt, bias_correction),
                 scale_by_learning_rate(learning_rate), accumulate)


def nadam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0) -> GradientTransformation:
    """Adam with Nesterov momentum (Dozat, 2016), as optax's ``nadam``.

    >>> opt = nadam(1e-3)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=True),
                 scale_by_learning_rate(learning_rate))


def adamax(learning_rate, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> GradientTransformation:
    """Adamax, Adam under the infinity norm (Kingma & Ba, 2015).

    >>> opt = adamax(2e-3)
    """
    return chain(scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
            eps_root: float = 0.0) -> GradientTransformation:
    """AMSGrad (Reddi et al., 2018).

    >>> opt = amsgrad(1e-3)
    """
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adagrad(learning_rate, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad (Duchi et al., 2011).

    >>> opt = adagrad(1e-1)
    """
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1: float = 0.9, b2: float = 0.99, weight_decay: float = 1e-3,
         mask=None) -> GradientTransformation:
    """Lion (Chen et al., 2023), with decoupled weight decay as in optax.

    >>> opt = lion(1e-4)
    """
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6,
         eps_root: float = 0.0, weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """LAMB (You et al., 2020): Adam's step with weight decay, scaled layerwise by the trust
    ratio.

    >>> opt = lamb(1e-3, weight_decay=1e-2)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


def radam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, threshold: float = 5.0, *,
          nesterov: bool = False) -> GradientTransformation:
    """Rectified Adam (Liu et al., 2020).

    >>> opt = radam(1e-3)
    """
    return chain(scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16,
              eps_root: float = 1e-16, *, nesterov: bool = False) -> GradientTransformation:
    """AdaBelief (Zhuang et al., 2020).

    >>> opt = adabelief(1e-3)
    """
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adafactor(learning_rate=None, min_dim_size_to_factor: int = 128, decay_rate: float = 0.8,
              decay_offset: int = 0, multiply_by_parameter_scale: bool = True,
              clipping_threshold: float | None = 1.0, momentum: float | None = None,
              dtype_momentum=jnp.float32, weight_decay_rate: float | None = None,
              eps: float = 1e-30, factored: bool = True,
              weight_decay_mask=None) -> GradientTransformation:
    """The Adafactor optimizer (Shazeer and Stern, 2018) with optax's defaults and steps:
    factored second moments, update clipping, steps relative to each parameter's scale.

    >>> params = {"w": jnp.ones((4, 3))}
    >>> opt = adafactor(learning_rate=1e-2)
    >>> state = opt.init(params)
    >>> updates, state = opt.update({"w": jnp.full((4, 3), 0.5)}, state, params)
    >>> updates["w"][0]
    Array([-0.01, -0.01, -0.01], dtype=float32)
    """
    tx = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor,
                                eps)]
    if clipping_threshold is not None:
        tx.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(scale_by_param_block_rms())
    if momentum is not None:
        tx.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    tx.append(scale(-1))
    return chain(*tx)


def sign_sgd(learning_rate) -> GradientTransformation:
    """SGD on the signs of the gradients (Bernstein et al., 2018).

    >>> tx = fnx.optim.sign_sgd(0.1)
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(None))[0]
    {'w': Array([-0.1,  0.1], dtype=float32)}
    """
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def signum(learning_rate, beta: float = 0.9, accumulator_dtype=None) -> GradientTransformation:
    """SGD on the signs of a moving average of the gradients.

    >>> tx = fnx.optim.signum(0.1)
    >>> params = {"w": jnp.zeros(2)}
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params))[0]
    {'w': Array([-0.1,  0.1], dtype=float32)}
    """
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), scale_by_sign(),
                 scale_by_learning_rate(learning_rate))


def yogi(learning_rate, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-3) -> GradientTransformation:
    """The Yogi optimizer (Zaheer et al., 2018).

    >>> tx = fnx.optim.yogi(0.1)
    >>> params = {"w": jnp.zeros(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params))[0]["w"], 3)
    Array([-0.1,  0.1], dtype=float32)
    """
    return chain(scale_by_yogi(b1=b1, b2=b2, eps=eps), scale_by_learning_rate(learning_rate))


def adadelta(learning_rate=None, rho: float = 0.9, eps: float = 1e-6,
             weight_decay: float = 0.0, weight_decay_mask=None) -> GradientTransformation:
    """The Adadelta optimizer (Zeiler, 2012); without a learning rate, its own step.

    >>> tx = fnx.optim.adadelta(1.0)
    >>> params = {"w": jnp.zeros(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)[0]["w"], 4)
    Array([-0.0032,  0.0032], dtype=float32)
    """
    lr = [] if learning_rate is None else [scale_by_learning_rate(learning_rate)]
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 scale_by_adadelta(rho=rho, eps=eps), *lr)


def adamaxw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
            weight_decay: float = 1e-4, mask=None) -> GradientTransformation:
    """Adamax with decoupled weight decay.

    >>> tx = fnx.optim.adamaxw(0.1)
    >>> params = {"w": jnp.ones(2)}
    >>> jnp.round(tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)[0]["w"], 4)
    Array([-0.1,  0.1], dtype=float32)
    """
    return chain(scale_by_adamax(b1=b1, b2=b2, eps=eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def nadamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
           eps_root: float = 0.0, mu_dtype=None, weight_decay: float = 1e-4,
           mask=None) -> GradientTransformation:
    """AdamW with Nesterov's momentum (optax's ``adamw(..., nesterov=True)``).

    >>> tx = fnx.optim.nadamw(0.1)
    >>> params = {"w": jnp.ones(2)}
    >>> tx.update({"w": jnp.array([0.5, -2.0])}, tx.init(params), params)[0]["w"].shape
    (2,)
    """
    return adamw(learning_rate, b1=b1, b2=b2, eps=eps, eps_root=eps_root,
                 weight_decay=weight_decay, mask=mask, nesterov=True)


def adan(learning_rate, b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8,
         eps_root: float = 1e-8, weight_decay: float = 0.0, mask=None) -> GradientTransformation:
    """Adan (Xie et al., 2022): Nesterov-style moments of gradients and their differences.

    >>> opt = adan(1e-3)
    """
    return chain(scale_by_adan(b1, b2, b3, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def fromage(learning_rate, min_norm: float = 1e-6) -> GradientTransformation:
    """Fromage (Bernstein et al., 2020): trust-ratio steps shrunk by ``1 / sqrt(1 + lr^2)``.

    >>> opt = fromage(1e-2)
    """
    if not callable(learning_rate):
        mult = 1 / (1 + learning_rate ** 2) ** 0.5
        return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(learning_rate * mult),
                     add_decayed_weights(mult - 1))
    mult_lr = lambda c: 1 / (1 + learning_rate(c) ** 2) ** 0.5  # noqa: E731
    return chain(scale_by_trust_ratio(min_norm),
                 scale_by_learning_rate(lambda c: mult_lr(c) * learning_rate(c)),
                 add_decayed_weights(lambda c: mult_lr(c) - 1))


def lars(learning_rate, weight_decay: float = 0.0, weight_decay_mask=True,
         trust_coefficient: float = 0.001, eps: float = 0.0, trust_ratio_mask=True,
         momentum: float = 0.9, nesterov: bool = False) -> GradientTransformation:
    """LARS (You et al., 2017): layer-wise trust ratios with momentum.

    >>> opt = lars(0.1)
    """
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps),
                        trust_ratio_mask),
                 scale_by_learning_rate(learning_rate), trace(decay=momentum, nesterov=nesterov))


def noisy_sgd(learning_rate, eta: float = 0.01, gamma: float = 0.55, key=None, *,
              seed=None) -> GradientTransformation:
    """SGD with annealed Gaussian gradient noise (see ``add_noise``).

    >>> opt = noisy_sgd(0.1, key=0)
    """
    return chain(add_noise(eta, gamma, key, seed=seed), scale_by_learning_rate(learning_rate))


def novograd(learning_rate, b1: float = 0.9, b2: float = 0.25, eps: float = 1e-6,
             eps_root: float = 0.0, weight_decay: float = 0.0) -> GradientTransformation:
    """NovoGrad (Ginsburg et al., 2019): layer-wise normalized gradients with momentum.

    >>> opt = novograd(1e-2)
    """
    return chain(scale_by_novograd(b1, b2, eps, eps_root, weight_decay),
                 scale_by_learning_rate(learning_rate))


def optimistic_gradient_descent(learning_rate, alpha: float = 1.0,
                                beta: float = 1.0) -> GradientTransformation:
    """Optimistic gradient descent (for min-max games): steps along
    ``(alpha + beta) * g - beta * g_previous``.

    >>> opt = optimistic_gradient_descent(0.1)
    """
    return chain(scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))


def optimistic_adam_v2(learning_rate, *, alpha: float = 1.0, beta: float = 1.0,
                       b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                       eps_root: float = 0.0, mu_dtype=None,
                       nesterov: bool = True) -> GradientTransformation:
    """Optimistic Adam: Adam's direction made optimistic (``scale_by_optimistic_gradient``).

    >>> opt = optimistic_adam_v2(1e-3)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype=mu_dtype, nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))


def optimistic_adam(learning_rate, optimism=None, b1: float = 0.9, b2: float = 0.999,
                    eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None, *,
                    nesterov: bool = True) -> GradientTransformation:
    """Optimistic Adam, optax's first form (``optimism`` defaults to the learning rate; no
    schedules): prefer ``optimistic_adam_v2``.

    >>> opt = optimistic_adam(1e-3)
    """
    if callable(learning_rate):
        raise ValueError("optimistic_adam takes no learning rate schedule; "
                         "optimistic_adam_v2 does")
    optimism = learning_rate if optimism is None else optimism
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype=mu_dtype, nesterov=nesterov),
                 scale_by_optimistic_gradient(learning_rate, optimism),
                 scale_by_learning_rate(1.0))


def polyak_sgd(max_learning_rate: float = 1.0, scaling=1.0, f_min: float = 0.0, eps: float = 0.0,
               variant: str = "sps") -> GradientTransformation:
    """SGD with Polyak's step size: ``update`` takes the loss, ``update(g, state, params,
    value=loss)``.

    >>> opt = polyak_sgd()
    >>> opt.update(jnp.array([2.0]), opt.init(jnp.zeros(1)), value=0.5)[0]
    Array([-0.25], dtype=float32)
    """
    return chain(sgd(learning_rate=scaling),
                 scale_by_polyak(f_min, max_learning_rate, eps, variant))


def rprop(learning_rate, eta_minus: float = 0.5, eta_plus: float = 1.2,
          min_step_size: float = 1e-6, max_step_size: float = 50.0) -> GradientTransformation:
    """Rprop (Riedmiller and Braun, 1993): sign steps with a size per entry.

    >>> opt = rprop(1e-2)
    """
    return chain(scale_by_rprop(learning_rate, eta_minus, eta_plus, min_step_size,
                                max_step_size), scale(-1.0))


def sm3(learning_rate, momentum: float = 0.9) -> GradientTransformation:
    """SM3 (Anil et al., 2019): a memory-efficient Adagrad with momentum.

    >>> opt = sm3(0.1)
    """
    return chain(scale_by_sm3(momentum), scale(-learning_rate))

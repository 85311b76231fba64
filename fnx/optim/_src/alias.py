"""``optax._src.alias``: the optimizers
(re-exported from fnx.optim)."""
from .. import (
    MaskOrFn, adabelief, adadelta, adafactor, adagrad, adam, adamax, adamaxw, adamw, adan,
    amsgrad, fromage, lamb, lars, lbfgs, lion, nadam, nadamw, noisy_sgd, novograd,
    optimistic_adam, optimistic_adam_v2, optimistic_gradient_descent, polyak_sgd, radam,
    rmsprop, rprop, sgd, sign_sgd, signum, sm3, yogi,
)

__all__ = [
    'MaskOrFn', 'adabelief', 'adadelta', 'adafactor', 'adagrad', 'adam', 'adamax',
    'adamaxw', 'adamw', 'adan', 'amsgrad', 'fromage', 'lamb', 'lars', 'lbfgs', 'lion',
    'nadam', 'nadamw', 'noisy_sgd', 'novograd', 'optimistic_adam', 'optimistic_adam_v2',
    'optimistic_gradient_descent', 'polyak_sgd', 'radam', 'rmsprop', 'rprop', 'sgd',
    'sign_sgd', 'signum', 'sm3', 'yogi',
]

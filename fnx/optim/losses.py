"""fnx.optim.losses: optax.losses' functions, with its names and signatures. Each returns one
loss per example (no reduction: take ``.mean()``), as optax.

>>> from fnx.optim import losses
>>> import fnx.numpy as jnp
>>> logits, labels = jnp.array([[2.0, 0.0], [0.0, 2.0]]), jnp.array([0, 0])
>>> losses.softmax_cross_entropy_with_integer_labels(logits, labels)
Array([0.12692805, 2.126928  ], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from ..core.api import stop_gradient
from ..core.custom_derivatives import custom_jvp
from ..core.errors import DTypeError
from ..nn.functions import log_sigmoid, log_softmax, softmax, sparse_plus
from ..numpy._core import promote_dtypes_inexact


def _inexact(*xs):
    return promote_dtypes_inexact(*(jnp.asarray(x) for x in xs))


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """``-sum(labels * log_softmax(logits))`` over ``axis``, for ``labels`` a distribution
    over classes (one-hot or soft); ``where`` masks out classes.

    >>> softmax_cross_entropy(jnp.array([[2.0, 0.0]]), jnp.array([[1.0, 0.0]]))
    Array([0.12692805], dtype=float32)
    """
    logits, labels = _inexact(logits, labels)
    if where is not None:
        # masked classes take no part in the normalizer either
        logits = jnp.where(where, logits, -jnp.inf)
    logp = log_softmax(logits, axis=axis)
    terms = labels * logp
    if where is not None:
        terms = jnp.where(where, terms, 0)
    return -jnp.sum(terms, axis=axis)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """Cross-entropy with integer class ids ``labels`` (``logits``' shape without ``axis``):
    ``logsumexp(logits) - logits[label]``.

    >>> softmax_cross_entropy_with_integer_labels(jnp.array([[2.0, 0.0]]), jnp.array([0]))
    Array([0.12692805], dtype=float32)
    """
    (logits,) = _inexact(logits)
    labels = jnp.asarray(labels)
    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError(f"labels must be integers, got {labels.dtype}")
    axis = axis % logits.ndim
    if where is not None:
        logits = jnp.where(where, logits, -jnp.inf)
    # the max is a constant shift: it keeps exp in range without changing the gradient
    shifted = logits - stop_gradient(jnp.max(logits, axis=axis, keepdims=True))
    label_logits = jnp.take_along_axis(shifted, jnp.expand_dims(labels.astype(jnp.int32), axis),
                                       axis=axis)
    label_logits = jnp.squeeze(label_logits, axis)
    return jnp.log(jnp.sum(jnp.exp(shifted), axis=axis)) - label_logits


def sigmoid_binary_cross_entropy(logits, labels):
    """Elementwise cross-entropy of ``sigmoid(logits)`` against ``labels`` in [0, 1].

    >>> sigmoid_binary_cross_entropy(jnp.array([0.0]), jnp.array([1.0]))
    Array([0.6931472], dtype=float32)
    """
    logits, labels = _inexact(logits, labels)
    return -labels * log_sigmoid(logits) - (1.0 - labels) * log_sigmoid(-logits)


def squared_error(predictions, targets=None):
    """``(predictions - targets) ** 2`` elementwise (``targets`` default 0).

    >>> fnx.optim.losses.squared_error(jnp.array([1.0, 2.0]), jnp.array([0.0, 4.0]))
    Array([1., 4.], dtype=float32)
    """
    (predictions,) = _inexact(predictions)
    errors = predictions if targets is None else predictions - targets
    return jnp.square(errors)


def l2_loss(predictions, targets=None):
    """Half the squared error, ``0.5 * (predictions - targets) ** 2``, as optax.

    >>> l2_loss(jnp.array([3.0]), jnp.array([1.0]))
    Array([2.], dtype=float32)
    """
    return 0.5 * squared_error(predictions, targets)


def huber_loss(predictions, targets=None, *, delta: float = 1.0):
    """Quadratic for errors up to ``delta``, linear beyond: ``0.5 * e**2`` or
    ``delta * (|e| - 0.5 * delta)``.

    >>> huber_loss(jnp.array([0.5, 3.0]))
    Array([0.125, 2.5  ], dtype=float32)
    """
    (predictions,) = _inexact(predictions)
    errors = predictions if targets is None else predictions - targets
    abs_errors = jnp.abs(errors)
    quadratic = jnp.minimum(abs_errors, delta)
    return 0.5 * quadratic ** 2 + delta * (abs_errors - quadratic)


def log_cosh(predictions, targets=None):
    """``log(cosh(predictions - targets))``, computed without overflow.

    >>> fnx.optim.losses.log_cosh(jnp.array([0.0, 1.0]), jnp.array([0.0, 0.0]))
    Array([0.       , 0.4337...], dtype=float32)
    """
    (predictions,) = _inexact(predictions)
    errors = predictions if targets is None else predictions - targets
    return jnp.logaddexp(errors, -errors) - np.log(2.0).astype(errors.dtype)


def cosine_similarity(predictions, targets, *, epsilon: float = 0.0, axis=-1, where=None):
    """The cosine of the angle between ``predictions`` and ``targets`` along ``axis``, each
    norm at least ``sqrt(epsilon)``.

    >>> cosine_similarity(jnp.array([1.0, 0.0]), jnp.array([1.0, 1.0]))
    Array(0.70710677, dtype=float32)
    """
    a, b = _inexact(predictions, targets)
    a_norm = jnp.sqrt(jnp.clip(jnp.sum(jnp.square(a), axis=axis, where=where, keepdims=True),
                               epsilon))
    b_norm = jnp.sqrt(jnp.clip(jnp.sum(jnp.square(b), axis=axis, where=where, keepdims=True),
                               epsilon))
    return jnp.sum((a / a_norm) * (b / b_norm), axis=axis, where=where)


def cosine_distance(predictions, targets, *, epsilon: float = 0.0, axis=-1, where=None):
    """``1 - cosine_similarity(predictions, targets)``.

    >>> cosine_distance(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]))
    Array(1., dtype=float32)
    """
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis,
                                   where=where)


def hinge_loss(predictor_outputs, targets):
    """``max(0, 1 - predictor_outputs * targets)`` for targets in {-1, 1}.

    >>> fnx.optim.losses.hinge_loss(jnp.array([2.0, 0.5, -1.0]), jnp.array([1.0, 1.0, 1.0]))
    Array([0. , 0.5, 2. ], dtype=float32)
    """
    (predictor_outputs,) = _inexact(predictor_outputs)
    return jnp.maximum(0, 1 - predictor_outputs * targets)


def kl_divergence(log_predictions, targets, axis=-1, where=None):
    """``sum(targets * (log(targets) - log_predictions))`` over ``axis`` (0 where a target is
    0): the information lost predicting ``targets`` by ``exp(log_predictions)``.

    >>> kl_divergence(jnp.log(jnp.array([0.5, 0.5])), jnp.array([1.0, 0.0]))
    Array(0.6931472, dtype=float32)
    """
    log_predictions, targets = _inexact(log_predictions, targets)
    log_targets = jnp.where(targets == 0, 0, jnp.log(jnp.where(targets == 0, 1, targets)))
    return jnp.sum(targets * (log_targets - log_predictions), axis=axis, where=where)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """:func:`kl_divergence` with the targets given as log-probabilities.

    >>> log_p = jnp.log(jnp.array([0.5, 0.5]))
    >>> kl_divergence_with_log_targets(log_p, jnp.log(jnp.array([1.0, 1e-30])))
    Array(0.6931472, dtype=float32)
    """
    log_predictions, log_targets = _inexact(log_predictions, log_targets)
    return jnp.sum(jnp.exp(log_targets) * (log_targets - log_predictions), axis=axis,
                   where=where)


def smooth_labels(labels, alpha, axis=-1, where=None):
    """One-hot ``labels`` mixed with the uniform distribution: ``(1 - alpha) * labels +
    alpha / num_classes``.

    >>> smooth_labels(jnp.array([1.0, 0.0, 0.0, 0.0]), 0.2)
    Array([0.85, 0.05, 0.05, 0.05], dtype=float32)
    """
    (labels,) = _inexact(labels)
    count = jnp.size(labels, axis) if where is None else jnp.sum(where, axis, keepdims=True)
    return (1.0 - alpha) * labels + alpha / count


def perceptron_loss(predictor_outputs, targets):
    """``max(0, -y * t)`` for targets in {-1, 1}.

    >>> perceptron_loss(jnp.array([0.5, -2.0]), jnp.array([1.0, 1.0]))
    Array([0., 2.], dtype=float32)
    """
    predictor_outputs, targets = _inexact(predictor_outputs, targets)
    return jnp.maximum(0, -predictor_outputs * targets)


def _one_hot(labels, n, dtype):
    return (jnp.asarray(labels)[..., None] == jnp.arange(n)).astype(dtype)


def multiclass_hinge_loss(scores, labels):
    """``max(scores + 1 - onehot) - scores[label]``: the multiclass hinge loss.

    >>> multiclass_hinge_loss(jnp.array([[2.0, 0.0]]), jnp.array([0]))
    Array([0.], dtype=float32)
    """
    (scores,) = _inexact(scores)
    one_hot = _one_hot(labels, scores.shape[-1], scores.dtype)
    return jnp.max(scores + 1.0 - one_hot, axis=-1) - jnp.sum(scores * one_hot, axis=-1)


def multiclass_perceptron_loss(scores, labels):
    """``max(scores) - scores[label]``.

    >>> multiclass_perceptron_loss(jnp.array([[2.0, 3.0]]), jnp.array([0]))
    Array([1.], dtype=float32)
    """
    (scores,) = _inexact(scores)
    one_hot = _one_hot(labels, scores.shape[-1], scores.dtype)
    return jnp.max(scores, axis=-1) - jnp.sum(scores * one_hot, axis=-1)


def poly_loss_cross_entropy(logits, labels, *, epsilon=2.0, axis=-1, where=None):
    """PolyLoss (Leng et al., 2022): cross-entropy plus ``epsilon * (1 - p_target)``.

    >>> poly_loss_cross_entropy(jnp.array([[0.0, 0.0]]), jnp.array([[1.0, 0.0]]))
    Array([1.6931472], dtype=float32)
    """
    from ..nn.functions import softmax
    logits, labels = _inexact(logits, labels)
    masked = logits if where is None else jnp.where(where, logits, -jnp.inf)
    p = softmax(masked, axis=axis)
    terms = labels * (1 - p)
    if where is not None:
        terms = jnp.where(where, terms, 0)
    return (softmax_cross_entropy(logits, labels, axis=axis, where=where)
            + epsilon * jnp.sum(terms, axis=axis))


def generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """The KL divergence for unnormalized measures: ``kl_divergence + sum(exp(log_p) - t)``.

    >>> generalized_kl_divergence(jnp.log(jnp.array([[0.5, 0.5]])), jnp.array([[0.5, 0.5]]))
    Array([0.], dtype=float32)
    """
    log_predictions, targets = _inexact(log_predictions, targets)
    extra = jnp.exp(log_predictions) - targets
    if where is not None:
        extra = jnp.where(where, extra, 0)
    return kl_divergence(log_predictions, targets, axis=axis, where=where) + jnp.sum(extra,
                                                                                     axis=axis)


convex_kl_divergence = generalized_kl_divergence


def sigmoid_focal_loss(logits, labels, alpha=None, gamma=2.0):
    """Focal loss (Lin et al., 2017): the sigmoid cross-entropy weighted by
    ``(1 - p_t) ** gamma`` (and by ``alpha`` for positives, ``1 - alpha`` for negatives).

    >>> sigmoid_focal_loss(jnp.array([0.0]), jnp.array([1.0]), gamma=1.0)
    Array([0.3465736], dtype=float32)
    """
    (logits,) = _inexact(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    p = jnp.exp(log_sigmoid(logits))
    p_t = p * labels + (1 - p) * (1 - labels)
    loss = sigmoid_binary_cross_entropy(logits, labels) * (1 - p_t) ** gamma
    if alpha is None:
        return loss
    return (alpha * labels + (1 - alpha) * (1 - labels)) * loss


def sparsemax_loss(logits, labels):
    """The binary sparsemax loss: ``sparse_plus(-logits)`` where ``labels`` is 1, else
    ``sparse_plus(logits)`` (zero past a margin of 1, as a hinge that is smooth near it).

    >>> sparsemax_loss(jnp.array([2.0, 0.0, -2.0]), jnp.array([1, 1, 0]))
    Array([0.  , 0.25, 0.  ], dtype=float32)
    """
    logits = jnp.asarray(logits)
    return sparse_plus(jnp.where(jnp.asarray(labels), -logits, logits))


@custom_jvp
def _weighted_log_softmax(x, weights):
    # 0 * log_softmax stays 0 where the logit is -inf (a masked class)
    return jnp.where(weights != 0.0, weights * log_softmax(x, axis=-1), 0.0)


@_weighted_log_softmax.defjvp
def _weighted_log_softmax_jvp(primals, tangents):
    x, weights = primals
    x_dot, weights_dot = tangents
    logsm = log_softmax(x, axis=-1)
    out = jnp.where(weights != 0.0, weights * logsm, 0.0)
    tangent = (weights * x_dot - weights * jnp.sum(x_dot * softmax(x, axis=-1), axis=-1,
                                                   keepdims=True)
               + weights_dot * jnp.where(weights != 0.0, logsm, 0.0))
    return out, tangent


def safe_softmax_cross_entropy(logits, labels):
    """:func:`softmax_cross_entropy` that stays finite (value and gradient) where logits of
    classes with zero label are ``-inf``.

    >>> safe_softmax_cross_entropy(jnp.array([0.0, -jnp.inf, 0.0]), jnp.array([1.0, 0.0, 0.0]))
    Array(0.6931472, dtype=float32)
    """
    logits, labels = _inexact(logits, labels)
    if not jnp.issubdtype(logits.dtype, jnp.floating):
        raise DTypeError(f"safe_softmax_cross_entropy takes floating logits, got {logits.dtype}")
    return -jnp.sum(_weighted_log_softmax(logits, labels), axis=-1)


__all__ = ["softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
           "sigmoid_binary_cross_entropy", "squared_error", "l2_loss", "huber_loss", "log_cosh",
           "cosine_similarity", "cosine_distance", "hinge_loss", "kl_divergence",
           "kl_divergence_with_log_targets", "smooth_labels"]

__all__ += ["perceptron_loss", "multiclass_hinge_loss", "multiclass_perceptron_loss",
            "poly_loss_cross_entropy", "generalized_kl_divergence", "convex_kl_divergence",
            "sigmoid_focal_loss"]

from ._ctc import ctc_loss, ctc_loss_with_forward_probs  # noqa: E402
from ._metric_losses import (binary_dice_loss, dice_loss, multiclass_generalized_dice_loss,  # noqa
                             ntxent, ranking_softmax_loss, triplet_margin_loss)

__all__ += ["sparsemax_loss", "safe_softmax_cross_entropy", "ctc_loss",
            "ctc_loss_with_forward_probs", "ntxent", "triplet_margin_loss", "dice_loss",
            "binary_dice_loss", "multiclass_generalized_dice_loss", "ranking_softmax_loss"]

from ._fenchel_young import make_fenchel_young_loss, multiclass_sparsemax_loss  # noqa: E402

__all__ += ["make_fenchel_young_loss", "multiclass_sparsemax_loss"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""Losses on embeddings (contrastive, triplet), segmentations (Dice) and rankings."""
from __future__ import annotations

from .. import numpy as jnp
from ..core.api import stop_gradient
from ..core.errors import ShapeError
from ..nn.functions import log_softmax, sigmoid, softmax


def _cosine_similarity(a, b, epsilon):
    def unit(x):
        return x / jnp.sqrt(jnp.clip(jnp.sum(jnp.square(x), axis=-1, keepdims=True), epsilon))
    return jnp.sum(unit(a) * unit(b), axis=-1)


def ntxent(embeddings, labels, temperature: float = 0.07):
    """The normalized temperature-scaled cross entropy (SimCLR's contrastive loss): each
    embedding should be nearer (in cosine similarity) to those sharing its label than to the
    others.

    >>> emb = jnp.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> bool(ntxent(emb, jnp.array([0, 0, 1, 1])) < ntxent(emb, jnp.array([0, 1, 0, 1])))
    True
    """
    embeddings, labels = jnp.asarray(embeddings), jnp.asarray(labels)
    if labels.shape[0] != embeddings.shape[0]:
        raise ShapeError(f"ntxent: labels {tuple(labels.shape)} and embeddings "
                         f"{tuple(embeddings.shape)} need the same leading dimension")
    eps = jnp.finfo(embeddings.dtype).eps
    xcs = _cosine_similarity(embeddings[None, :, :], embeddings[:, None, :], eps) / temperature
    same = labels[:, None] == labels[None, :]
    diffs = ~same
    matches = same & ~jnp.eye(same.shape[0], dtype=bool)
    xcs_diffs = jnp.where(diffs, xcs, -jnp.inf)
    xcs_matches = jnp.where(matches, xcs, -jnp.inf)
    top = stop_gradient(jnp.max(jnp.concatenate((xcs_diffs, xcs_matches), axis=-1), axis=1,
                                keepdims=True))
    shifted_diffs, shifted_matches = xcs_diffs - top, xcs_matches - top
    denom = jnp.sum(jnp.exp(shifted_diffs), axis=1, keepdims=True) + jnp.exp(shifted_matches)
    log_softm = shifted_matches - jnp.log(denom)
    return -jnp.where(matches, log_softm, 0.0).sum() / matches.sum()


def triplet_margin_loss(anchors, positives, negatives, axis: int = -1, norm_degree=2,
                        margin: float = 1.0, eps: float = 1e-6):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``norm_degree`` distance.

    >>> triplet_margin_loss(jnp.zeros((1, 2)), jnp.zeros((1, 2)), jnp.ones((1, 2)))
    Array([0.], dtype=float32)
    """
    anchors, positives, negatives = map(jnp.asarray, (anchors, positives, negatives))

    def distance(x):
        return jnp.power(jnp.power(anchors - x, norm_degree).sum(axis) + eps, 1 / norm_degree)
    return jnp.maximum(distance(positives) - distance(negatives) + margin, 0)


def _reduce(loss, reduction, axis=None):
    if reduction == "mean":
        return jnp.mean(loss, axis=axis)
    if reduction == "sum":
        return jnp.sum(loss, axis=axis)
    if reduction == "none":
        return loss
    raise ValueError(f"unsupported reduction {reduction!r}: 'mean', 'sum' or 'none'")


def dice_loss(predictions, targets, *, class_weights=None, smooth: float = 1.0,
              alpha: float = 0.5, beta: float = 0.5, apply_softmax: bool = True,
              reduction: str = "mean", ignore_background: bool = False, axis=None):
    """The (Tversky-generalized) Dice loss ``1 - (|P n T| + s) / (|P n T| + alpha |P - T| +
    beta |T - P| + s)`` per example and class, over the spatial axes (all but the first and
    the last, the classes); ``reduction`` over the classes.

    >>> t = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> dice_loss(100 * t, t, smooth=0.0)
    Array([0.], dtype=float32)
    """
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim - 1:
        predictions = predictions[..., None]
    if targets.ndim == predictions.ndim - 1:
        targets = targets[..., None]
    if predictions.shape != targets.shape:
        raise ShapeError(f"dice_loss: predictions {tuple(predictions.shape)} and targets "
                         f"{tuple(targets.shape)} differ")
    probs = predictions
    if apply_softmax:
        probs = sigmoid(predictions) if predictions.shape[-1] == 1 else softmax(predictions,
                                                                                 axis=-1)
    axis = tuple(range(1, probs.ndim - 1)) if axis is None else axis
    intersection = jnp.sum(probs * targets, axis=axis)
    pred_sum, target_sum = jnp.sum(probs, axis=axis), jnp.sum(targets, axis=axis)
    coeff = (intersection + smooth) / (intersection + alpha * (pred_sum - intersection)
                                       + beta * (target_sum - intersection) + smooth)
    loss = 1.0 - coeff
    if class_weights is not None:
        loss = loss * jnp.asarray(class_weights)
    if ignore_background and probs.shape[-1] > 1:
        loss = loss[..., 1:]
    return _reduce(loss, reduction, axis=-1)


def multiclass_generalized_dice_loss(predictions, targets, *, smooth: float = 1.0,
                                     apply_softmax: bool = True,
                                     ignore_background: bool = False):
    """The Dice loss with classes weighted by the inverse square of their frequency.

    >>> t = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> multiclass_generalized_dice_loss(100 * t, t, smooth=0.0)
    Array(0., dtype=float32)
    """
    targets = jnp.asarray(targets)
    frequencies = jnp.sum(targets, axis=tuple(range(targets.ndim - 1)))
    weights = 1.0 / (frequencies ** 2 + 1e-7)
    weights = weights / jnp.sum(weights) * len(weights)
    return jnp.mean(dice_loss(predictions, targets, class_weights=weights, smooth=smooth,
                              apply_softmax=apply_softmax, reduction="none",
                              ignore_background=ignore_background))


def binary_dice_loss(predictions, targets, *, smooth: float = 1.0, apply_sigmoid: bool = True):
    """The Dice loss of one foreground class (logits through a sigmoid).

    >>> binary_dice_loss(jnp.array([[10.0, -10.0]]), jnp.array([[1.0, 0.0]]), smooth=0.0)
    Array([4.541874e-05], dtype=float32)
    """
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim and predictions.shape[-1] != 1:
        predictions, targets = predictions[..., None], targets[..., None]
    return dice_loss(predictions, targets, smooth=smooth, apply_softmax=apply_sigmoid,
                     reduction="mean")


def ranking_softmax_loss(logits, labels, *, where=None, weights=None, reduce_fn=jnp.mean):
    """The listwise softmax cross entropy of a ranking: ``-sum(labels * log_softmax(logits))``
    over the list (the last axis), then ``reduce_fn`` (None: per list).

    >>> ranking_softmax_loss(jnp.array([2.0, 1.0, 0.0]), jnp.array([1.0, 0.0, 0.0]))
    Array(0.407606, dtype=float32)
    """
    logits = jnp.asarray(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    if where is not None:
        labels = jnp.where(where, labels, jnp.zeros_like(labels))
        logits = jnp.where(where, logits, -jnp.inf)
    if weights is not None:
        labels = labels * weights
    loss = -jnp.sum(labels * log_softmax(logits, axis=-1), axis=-1, where=where)
    if where is not None:
        where = jnp.any(where, axis=-1)
    out = reduce_fn(loss, where=where) if reduce_fn is not None else loss
    if reduce_fn is jnp.mean:   # lists left all out give 0, not nan
        out = jnp.where(jnp.isnan(out) & ~jnp.any(jnp.isnan(loss)), 0.0, out)
    if reduce_fn is None and where is not None:
        out = jnp.where(where, out, 0.0)
    return out

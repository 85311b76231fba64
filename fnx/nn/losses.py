"""Loss functions. As in optax, the cross-entropies return one loss per example (reduce them
with ``.mean()``), while ``mse`` is the mean by definition; every loss takes
``reduction="none" | "mean" | "sum"`` to choose.

>>> import fnx.nn as nn
>>> nn.softmax_cross_entropy(logits, labels).mean()   # labels: integer ids or one-hot rows
"""
from __future__ import annotations

from .. import numpy as jnp
from ..numpy._core import promote_dtypes_inexact
from .functions import log_softmax


def _reduce(loss, reduction: str):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def softmax_cross_entropy(logits, labels, axis: int = -1, reduction: str = "none"):
    """Cross-entropy between ``softmax(logits)`` and ``labels``: integer class ids (shape
    ``logits.shape`` without ``axis``) or a distribution over classes (one-hot or soft, same
    shape as ``logits``). Computed from ``log_softmax``, so it is stable for large logits.

    >>> softmax_cross_entropy(jnp.array([[2.0, 0.0]]), jnp.array([0]))
    Array([0.12692805], dtype=float32)
    """
    (logits,) = promote_dtypes_inexact(logits)
    labels = jnp.asarray(labels)
    logp = log_softmax(logits, axis=axis)
    if labels.dtype.kind in "iub" and labels.ndim == logits.ndim - 1:
        picked = jnp.take_along_axis(logp, jnp.expand_dims(labels.astype(jnp.int32), axis),
                                     axis)
        loss = -jnp.squeeze(picked, axis)
    else:
        if labels.shape != logits.shape:
            raise ValueError(f"softmax_cross_entropy: labels of shape {labels.shape} are "
                             f"neither class ids nor distributions for logits {logits.shape}")
        loss = -jnp.sum(labels.astype(logp.dtype) * logp, axis=axis)
    return _reduce(loss, reduction)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis: int = -1,
                                              reduction: str = "none"):
    """``softmax_cross_entropy`` with integer class ids (optax's name).

    >>> fnx.nn.softmax_cross_entropy_with_integer_labels(jnp.zeros((2, 4)), jnp.array([0, 3]))
    Array([1.3862..., 1.3862...], dtype=float32)
    """
    labels = jnp.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise TypeError(f"integer labels expected, got {labels.dtype}")
    return softmax_cross_entropy(logits, labels, axis, reduction)


def binary_cross_entropy(logits, labels, reduction: str = "none"):
    """Elementwise cross-entropy of ``sigmoid(logits)`` against 0/1 (or soft) ``labels``,
    computed from the logits as ``max(x, 0) - x * z + log1p(exp(-|x|))``, which never
    overflows.

    >>> binary_cross_entropy(jnp.array([1e4, -1e4]), jnp.array([0.0, 1.0]))   # finite
    Array([10000., 10000.], dtype=float32)
    """
    (logits,) = promote_dtypes_inexact(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    loss = jnp.maximum(logits, 0) - logits * labels + jnp.log1p(jnp.exp(-jnp.abs(logits)))
    return _reduce(loss, reduction)


sigmoid_binary_cross_entropy = binary_cross_entropy


def squared_error(predictions, targets=None):
    """Elementwise ``(predictions - targets) ** 2`` (targets default to zero).

    >>> fnx.nn.squared_error(jnp.array([1.0, 2.0]), jnp.array([0.0, 4.0]))
    Array([1., 4.], dtype=float32)
    """
    (predictions,) = promote_dtypes_inexact(predictions)
    diff = predictions if targets is None else predictions - jnp.asarray(targets)
    return jnp.square(diff)


def mse(predictions, targets, reduction: str = "mean"):
    """Mean squared error (``reduction="none"`` gives the elementwise squared errors).

    >>> mse(jnp.array([1.0, 2.0]), jnp.array([1.0, 4.0]))
    Array(2., dtype=float32)
    """
    return _reduce(squared_error(predictions, targets), reduction)


__all__ = ["softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
           "binary_cross_entropy", "sigmoid_binary_cross_entropy", "squared_error", "mse"]

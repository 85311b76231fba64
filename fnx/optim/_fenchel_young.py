"""Fenchel-Young losses (Blondel et al., 2020): a loss from any convex "max" of scores."""
from __future__ import annotations

from .. import numpy as jnp
from ..core.api import vmap
from .projections import projection_simplex


def make_fenchel_young_loss(max_fun):
    """``loss(scores, targets, *args) = max_fun(scores, *args) - <targets, scores>`` over the
    last axis (``max_fun`` maps a vector to a scalar, a log-sum-exp say).

    >>> loss = make_fenchel_young_loss(fnx.scipy.special.logsumexp)
    >>> loss(jnp.array([[0.0, 0.0]]), jnp.array([[1.0, 0.0]]))
    Array([0.6931472], dtype=float32)
    """
    vdot_last = jnp.vectorize(jnp.vdot, signature="(n),(n)->()")
    max_last = jnp.vectorize(max_fun, signature="(n)->()")

    def fenchel_young_loss(scores, targets, *args, **kwargs):
        return max_last(scores, *args, **kwargs) - vdot_last(targets, scores)
    return fenchel_young_loss


def _sparsemax_loss_one(scores, label):
    scores = jnp.asarray(scores)
    proba = projection_simplex(scores)
    # the Gini negentropy's conjugate, less the label's score
    scores = (scores - scores[label]).at[label].set(0.0)
    return jnp.dot(proba, jnp.where(proba, scores, 0.0)) + 0.5 * (1.0 - jnp.dot(proba, proba))


def multiclass_sparsemax_loss(scores, labels):
    """The sparsemax loss (Martins and Astudillo, 2016) of ``scores`` (batch, classes) against
    integer ``labels`` (batch,): zero once the label's score leads the others by 1.

    >>> multiclass_sparsemax_loss(jnp.array([[3.0, 0.0], [0.0, 0.0]]), jnp.array([0, 0]))
    Array([0.  , 0.25], dtype=float32)
    """
    return vmap(_sparsemax_loss_one)(scores, labels)

"""The connectionist temporal classification loss (Graves et al., 2006), by the forward
algorithm in log space over the blank-interleaved label sequence."""
from __future__ import annotations

from .. import numpy as jnp
from ..core.control_flow import scan
from ..core.errors import ShapeError
from ..nn.functions import log_softmax, one_hot


def ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings, *,
                                blank_id: int = 0, log_epsilon: float = -1e5):
    """:func:`ctc_loss` and the forward log probabilities: ``(per_seq_loss, logalpha_phi,
    logalpha_emit)``, the latter two of shapes ``(T, B, N + 1)`` and ``(T, B, N)`` (being in
    a blank before label ``n``, or emitting label ``n``, after each frame).

    >>> logits = jnp.zeros((1, 2, 3))
    >>> loss, phi, emit = ctc_loss_with_forward_probs(logits, jnp.zeros((1, 2)),
    ...                                               jnp.array([[1]]), jnp.zeros((1, 1)))
    >>> phi.shape, emit.shape
    ((2, 1, 2), (2, 1, 1))
    """
    logits, labels = jnp.asarray(logits), jnp.asarray(labels)
    logit_paddings, label_paddings = jnp.asarray(logit_paddings), jnp.asarray(label_paddings)
    if logits.ndim != 3 or labels.ndim != 2:
        raise ShapeError(f"ctc_loss expects logits (B, T, K) and labels (B, N), got "
                         f"{tuple(logits.shape)} and {tuple(labels.shape)}")
    if labels.shape != label_paddings.shape or logits.shape[:2] != logit_paddings.shape:
        raise ShapeError(f"ctc_loss: paddings must match, got labels {tuple(labels.shape)} with "
                         f"label_paddings {tuple(label_paddings.shape)}, logits "
                         f"{tuple(logits.shape)} with logit_paddings "
                         f"{tuple(logit_paddings.shape)}")
    batch, _, num_classes = logits.shape
    if labels.shape[0] != batch:
        raise ShapeError(f"ctc_loss: labels have batch size {labels.shape[0]}, logits {batch}")
    max_label_len = labels.shape[1]
    logprobs = log_softmax(logits)
    dtype = logprobs.dtype
    label_lens = max_label_len - jnp.sum(label_paddings, axis=1).astype(jnp.int32)
    # a repeated label needs a blank between its two emissions
    repeat = jnp.pad((labels[:, :-1] == labels[:, 1:]).astype(dtype), ((0, 0), (0, 1)))
    logprobs_phi = jnp.transpose(logprobs[:, :, blank_id:blank_id + 1], (1, 0, 2))
    logprobs_emit = jnp.transpose(
        jnp.einsum("btk,bnk->btn", logprobs, one_hot(labels, num_classes, dtype=dtype)),
        (1, 0, 2))
    phi0 = jnp.full((batch, max_label_len + 1), log_epsilon, dtype).at[:, 0].set(0.0)
    emit0 = jnp.full((batch, max_label_len), log_epsilon, dtype)

    def add_to_phi(phi, score):
        return jnp.concatenate([phi[:, :1], jnp.logaddexp(phi[:, 1:], score)], axis=-1)

    def step(prev, x):
        prev_phi, prev_emit = prev
        logprob_emit, logprob_phi, pad = x
        phi = add_to_phi(prev_phi, prev_emit + log_epsilon * repeat)
        next_emit = jnp.logaddexp(phi[:, :-1] + logprob_emit, prev_emit + logprob_emit)
        next_phi = add_to_phi(phi + logprob_phi,
                              prev_emit + logprob_phi + log_epsilon * (1.0 - repeat))
        pad = pad.reshape((batch, 1)).astype(dtype)
        next_emit = pad * prev_emit + (1.0 - pad) * next_emit
        next_phi = pad * prev_phi + (1.0 - pad) * next_phi
        return (next_phi, next_emit), (next_phi, next_emit)

    xs = (logprobs_emit, logprobs_phi, logit_paddings.transpose((1, 0)))
    _, (logalpha_phi, logalpha_emit) = scan(step, (phi0, emit0), xs)
    last = add_to_phi(logalpha_phi[-1], logalpha_emit[-1])
    logalpha_phi = logalpha_phi.at[-1].set(last)
    per_seq_loss = -jnp.einsum("bn,bn->b", last,
                               one_hot(label_lens, max_label_len + 1, dtype=dtype))
    return per_seq_loss, logalpha_phi, logalpha_emit


def ctc_loss(logits, logit_paddings, labels, label_paddings, *, blank_id: int = 0,
             log_epsilon: float = -1e5):
    """The CTC loss per sequence: ``-log p(labels | logits)`` summed over the alignments.
    ``logits`` are (B, T, K), ``labels`` (B, N) integers; paddings are 1.0 at padded
    frames/labels (which come last).

    >>> logits = jnp.zeros((1, 1, 2))     # one frame, two equally likely classes
    >>> ctc_loss(logits, jnp.zeros((1, 1)), jnp.array([[1]]), jnp.zeros((1, 1)))
    Array([0.6931472], dtype=float32)
    """
    return ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings,
                                       blank_id=blank_id, log_epsilon=log_epsilon)[0]

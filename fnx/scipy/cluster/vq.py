"""fnx.scipy.cluster.vq: vector quantization (SciPy's ``scipy.cluster.vq.vq``, as in JAX).

>>> codes, dist = vq(jnp.array([[0.0, 1.0]]), jnp.array([[0.0, 0.0], [0.0, 2.0]]))
>>> codes
Array([0], dtype=int32)
"""
from __future__ import annotations

from ... import numpy as jnp
from ...numpy._core import promote_dtypes_inexact

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
    """The index of the nearest code (Euclidean distance) for each observation, and that
    distance: ``obs`` of shape ``(M, N)`` (or ``(M,)``, one number each) against
    ``code_book`` of shape ``(K, N)`` (or ``(K,)``); ``check_finite`` is unused, as in JAX.

    >>> obs = jnp.array([[1.1, 2.1, 3.1], [5.9, 4.8, 6.2]])
    >>> book = jnp.array([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [3.0, 4.0, 5.0], [4.0, 5.0, 6.0]])
    >>> codes, distances = vq(obs, book)
    >>> codes
    Array([0, 3], dtype=int32)
    """
    del check_finite
    obs, code_book = promote_dtypes_inexact(jnp.asarray(obs), jnp.asarray(code_book))
    if obs.ndim != code_book.ndim:
        raise ValueError(f"Observation and code_book should have the same rank, got shapes "
                         f"{obs.shape} and {code_book.shape}")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"ndim different than 1 or 2 are not supported, got shape {obs.shape}")
    dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(dist, axis=-1)
    return code, jnp.take_along_axis(dist, code[:, None], axis=1)[:, 0]

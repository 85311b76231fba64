"""Muon (Jordan et al., 2024): momentum orthogonalized by Newton-Schulz iterations for matrix
parameters, AdamW for the others."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

from ... import numpy as jnp
from ...core import lax
from ...core.api import vmap
from ...core.pytree import tree_map
from .._base import EmptyState, GradientTransformation, chain
from .._constrain import add_decayed_weights
from .._numerics import safe_increment
from .._optimizers import adamw
from .._transforms import scale_by_learning_rate
from .._wrappers import multi_transform
from ..tree_utils import tree_bias_correction, tree_cast, tree_update_moment, tree_zeros_like

_DEFAULT_NS_COEFFS = (3.4445, -4.775, 2.0315)
_NS_COEFFS_PRESETS = {
    "standard": _DEFAULT_NS_COEFFS,
    "dion": ((4.0848, -6.8946, 2.927), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
             (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012)),
}
_PRECONDITIONINGS = ("frobenius", "spectral", "aol", "schatten")


class MuonDimensionNumbers(NamedTuple):
    """Which axes of a parameter are its matrix' input (``reduction_axis``) and output
    (``output_axis``) axes; the others are batch axes, orthogonalized separately.

    >>> MuonDimensionNumbers._fields
    ('reduction_axis', 'output_axis')
    """
    reduction_axis: Sequence[int] | int = 0
    output_axis: Sequence[int] | int = 1


def _is_dim_nums(x):
    return x is None or isinstance(x, MuonDimensionNumbers)


def _axes(x, dim_nums):
    def norm(axes):
        return tuple(a % x.ndim for a in ((axes,) if isinstance(axes, int) else axes))
    return norm(dim_nums.reduction_axis), norm(dim_nums.output_axis)


def _fans(x, dim_nums):
    reduction, output = _axes(x, dim_nums)
    return math.prod(x.shape[a] for a in reduction), math.prod(x.shape[a] for a in output)


def _as_matrices(x, dim_nums):
    """``x`` as a (batch, fan_in, fan_out) stack, and the inverse."""
    if x.ndim < 2:
        raise ValueError(f"muon orthogonalizes parameters of rank >= 2, got shape {x.shape}")
    reduction, output = _axes(x, dim_nums)
    if set(reduction) & set(output):
        raise ValueError(f"muon: reduction axes {reduction} and output axes {output} overlap "
                         f"for shape {x.shape}")
    batch = tuple(sorted(set(range(x.ndim)) - set(reduction) - set(output)))
    order = batch + reduction + output
    inverse = tuple(sorted(range(x.ndim), key=lambda i: order[i]))
    sizes = [tuple(x.shape[a] for a in axes) for axes in (batch, reduction, output)]
    flat = tuple(math.prod(s) for s in sizes)
    return (lambda y: y.transpose(order).reshape(flat),
            lambda y: y.reshape(sum(sizes, ())).transpose(inverse))


def _ns_step(x, c, first_rescale=None, eps=1e-8):
    a = x @ x.T.conj()
    if first_rescale == "aol":
        s = lax.rsqrt(jnp.clip(jnp.abs(a).sum(axis=-1), min=eps))[:, None]
        x, a = x * s, a * s * s.T
    elif first_rescale == "schatten":
        s = lax.rsqrt(jnp.clip(jnp.linalg.norm(a, ord="fro"), min=eps))
        x, a = x * s, a * s ** 2
    return c[0] * x + (c[1] * a + c[2] * a @ a) @ x


def orthogonalize_via_newton_schulz(x, ns_coeffs, ns_steps: int = 5,
                                    preconditioning: str = "frobenius", eps: float = 1e-8,
                                    dimension_numbers: MuonDimensionNumbers | None = None):
    """The orthogonal factor of ``x`` (``U V^T`` of its SVD), approximately, by ``ns_steps``
    Newton-Schulz iterations with coefficients ``ns_coeffs`` (one triple, or one per step).

    >>> q = orthogonalize_via_newton_schulz(jnp.array([[2.0, 0.0], [0.0, 0.5]]),
    ...                                     jnp.array([1.5, -0.5, 0.0]), ns_steps=20)
    >>> jnp.round(q, 3)
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    if x.ndim != 2 and not isinstance(dimension_numbers, MuonDimensionNumbers):
        raise ValueError(f"orthogonalize_via_newton_schulz takes a matrix or dimension_numbers; "
                         f"got shape {x.shape}")
    if x.ndim == 2:
        dimension_numbers = MuonDimensionNumbers(0, 1)
    ns_coeffs = jnp.asarray(ns_coeffs)
    if ns_coeffs.ndim > 2 or ns_coeffs.shape[-1] != 3:
        raise ValueError(f"Newton-Schulz coefficients must have shape (3,) or (n, 3), got "
                         f"{ns_coeffs.shape}")
    if preconditioning not in _PRECONDITIONINGS:
        raise ValueError(f"unknown preconditioning {preconditioning!r}: one of "
                         f"{_PRECONDITIONINGS}")

    def orthogonalize(m):
        transposed = m.shape[0] > m.shape[1]
        if transposed:
            m = m.T
        if preconditioning == "frobenius":
            m = m / (jnp.linalg.norm(m, ord="fro") + eps)
        elif preconditioning == "spectral":
            m = m / (jnp.linalg.norm(m, ord=2) + eps)
        coeffs = ns_coeffs.astype(m.dtype)
        steps = [coeffs] * ns_steps if coeffs.ndim == 1 else list(coeffs)
        for i, c in enumerate(steps):
            rescale = preconditioning if i == 0 and preconditioning in ("aol", "schatten") else None
            m = _ns_step(m, c, rescale)
        return m.T if transposed else m

    to_matrices, back = _as_matrices(x, dimension_numbers)
    return back(vmap(orthogonalize)(to_matrices(x)))


def _resolve(dim_nums, updates):
    if callable(dim_nums):
        dim_nums = dim_nums(updates)
    if dim_nums is None or isinstance(dim_nums, MuonDimensionNumbers):
        one = dim_nums or MuonDimensionNumbers()
        return tree_map(lambda u: one, updates)
    return dim_nums


def _map_matrices(f, dim_nums, updates):
    """``f(update, dim_nums)`` for the leaves with dimension numbers; the others unchanged."""
    def apply(d, u):
        return u if d is None or u is None else f(u, d)
    return tree_map(apply, _resolve(dim_nums, updates), updates, is_leaf=_is_dim_nums)


def scale_by_shape(weight_dimension_numbers=None, consistent_rms=None) -> GradientTransformation:
    """Scale each matrix update by ``sqrt(max(1, fan_out / fan_in))`` (or, with
    ``consistent_rms``, by ``consistent_rms * sqrt(max(fan_in, fan_out))``).

    >>> tx = scale_by_shape()
    >>> tx.update(jnp.ones((2, 8)), tx.init(None))[0][0, 0]
    Array(2., dtype=float32)
    """
    def scaled(u, d):
        fan_in, fan_out = _fans(u, d)
        if consistent_rms is not None:
            return math.sqrt(max(fan_in, fan_out)) * consistent_rms * u
        return math.sqrt(max(1, fan_out / fan_in)) * u

    return GradientTransformation(
        lambda params: EmptyState(),
        lambda updates, state, params=None: (_map_matrices(scaled, weight_dimension_numbers,
                                                           updates), state))


class MuonState(NamedTuple):
    """``scale_by_muon``'s state.

    >>> MuonState._fields
    ('count', 'mu', 'ns_coeffs')
    """
    count: Any
    mu: Any
    ns_coeffs: Any


def scale_by_muon(ns_coeffs=_DEFAULT_NS_COEFFS, ns_steps: int = 5, beta: float = 0.95,
                  eps: float = 1e-8, mu_dtype=None, *, nesterov: bool = True,
                  adaptive: bool = False, preconditioning: str = "frobenius",
                  weight_dimension_numbers=None) -> GradientTransformation:
    """Muon's rescaling: the (Nesterov) momentum, orthogonalized.

    >>> opt = fnx.optim.chain(scale_by_muon(), fnx.optim.scale(-0.02))
    """
    def init(params):
        coeffs = jnp.asarray(ns_coeffs)
        if coeffs.ndim > 2 or coeffs.shape[-1] != 3:
            raise ValueError(f"ns_coeffs must have shape (3,) or (n, 3), got {coeffs.shape}")
        if coeffs.ndim == 2:
            if coeffs.shape[0] > ns_steps:
                raise ValueError(f"scale_by_muon: {coeffs.shape[0]} coefficient rows for "
                                 f"{ns_steps} steps")
            coeffs = coeffs[-ns_steps:]
        return MuonState(jnp.zeros((), jnp.int32), tree_zeros_like(params, dtype=mu_dtype),
                         coeffs)

    def update(updates, state, params=None):
        mu = tree_update_moment(updates, state.mu, beta, 1)
        count = safe_increment(state.count)
        if nesterov:
            mu_hat = tree_map(lambda m, g: beta * m + (1 - beta) * g,
                              tree_bias_correction(mu, beta, safe_increment(count)),
                              tree_bias_correction(updates, beta, count))
        else:
            mu_hat = tree_bias_correction(mu, beta, count)
        out = _map_matrices(
            lambda x, d: orthogonalize_via_newton_schulz(x, state.ns_coeffs, ns_steps,
                                                         preconditioning, eps, d),
            weight_dimension_numbers, mu_hat)
        if adaptive:
            out = tree_map(lambda m, o: jnp.sum(m.conj() * o) * o, mu_hat, out)
        return out, MuonState(count, tree_cast(mu, mu_dtype), state.ns_coeffs)
    return GradientTransformation(init, update)


def muon(learning_rate, ns_coeffs=_DEFAULT_NS_COEFFS, ns_steps: int = 5, beta: float = 0.95,
         eps: float = 1e-8, weight_decay: float = 0.0, weight_decay_mask=None, mu_dtype=None,
         *, nesterov: bool = True, adaptive: bool = False, preconditioning: str = "frobenius",
         adam_b1: float = 0.9, adam_b2: float = 0.999, adam_eps_root: float = 0.0,
         adam_weight_decay: float = 0.0, adam_learning_rate=None,
         muon_weight_dimension_numbers=None, consistent_rms=None) -> GradientTransformation:
    """Muon for the matrix parameters (rank 2, or those given dimension numbers) and AdamW
    for the rest.

    >>> opt = muon(0.02)
    >>> params = {"w": jnp.ones((3, 4)), "b": jnp.zeros(4)}
    >>> updates, state = opt.update(params, opt.init(params), params)
    """
    adam_learning_rate = learning_rate if adam_learning_rate is None else adam_learning_rate
    if isinstance(ns_coeffs, str):
        if ns_coeffs not in _NS_COEFFS_PRESETS:
            raise ValueError(f"unknown ns_coeffs preset {ns_coeffs!r}: one of "
                             f"{sorted(_NS_COEFFS_PRESETS)}")
        ns_coeffs = _NS_COEFFS_PRESETS[ns_coeffs]
    dims = muon_weight_dimension_numbers

    def labels(params):
        if dims is None:
            return tree_map(lambda x: "muon" if x.ndim == 2 else "adam", params)
        given = dims(params) if callable(dims) else dims
        return tree_map(lambda d, sub: tree_map(lambda _: "adam" if d is None else "muon", sub),
                        given, params, is_leaf=_is_dim_nums)

    muon_dims = dims if dims is not None else MuonDimensionNumbers()
    return multi_transform({
        "muon": chain(scale_by_muon(ns_coeffs, ns_steps, beta, eps, mu_dtype, nesterov=nesterov,
                                    adaptive=adaptive, preconditioning=preconditioning,
                                    weight_dimension_numbers=muon_dims),
                      scale_by_shape(muon_dims, consistent_rms),
                      add_decayed_weights(weight_decay, weight_decay_mask),
                      scale_by_learning_rate(learning_rate)),
        "adam": adamw(adam_learning_rate, adam_b1, adam_b2, eps, adam_eps_root, mu_dtype,
                      weight_decay=adam_weight_decay, nesterov=nesterov),
    }, labels)

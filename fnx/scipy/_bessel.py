"""Bessel functions of the first kind of integer order, by Miller's backward recurrence."""
from __future__ import annotations

import operator

from .. import numpy as jnp
from ..core.control_flow import scan


def _miller(z, order: int, start: int):
    """J_0 .. J_order at z (|z| not tiny): ``f_k = 2 (k+1) f_{k+1} / z - f_{k+2}`` from
    ``f_{start+1} = tiny`` down to k = 0, normalized by ``J_0 + 2 (J_2 + J_4 + ...) = 1``.
    Values grow by up to 2 start / |z| a step, so the carry is scaled down past ``limit`` and
    each stored value remembers how many times that has happened."""
    limit = 1e150 if z.dtype == jnp.float64 else 1e18
    zero = jnp.zeros_like(z)

    def step(carry, k):
        f2, f1, even_sum, rescales = carry
        f = 2.0 * (k + 1.0) * f1 / z - f2
        even_sum = even_sum + jnp.where(k % 2 == 0, 2.0 * f, 0.0)
        big = jnp.abs(f) > limit
        scale = jnp.where(big, 1.0 / limit, 1.0)
        rescales = rescales + jnp.where(big, 1.0, 0.0)
        return (f1 * scale, f * scale, even_sum * scale, rescales), (f * scale, rescales)

    init = (zero, jnp.full_like(z, 1e-30), zero, zero)
    ks = jnp.arange(start + 1, dtype=z.dtype)
    (_, f0, even_sum, total), (values, counts) = scan(step, init, ks, reverse=True)
    values, counts = values[:order + 1], counts[:order + 1]
    # f_k was stored in units limit**counts_k; the sums are in units limit**total
    values = values * jnp.power(jnp.asarray(limit, z.dtype), counts - total)
    return values / (even_sum - f0)


def _leading_terms(z, order: int):
    """J_k(z) = (z/2)^k / k! (1 - (z/2)^2 / (k+1)) + O(z^(k+4)), for tiny |z|."""
    half = 0.5 * z
    rows, power = [], jnp.ones_like(z)
    for k in range(order + 1):
        if k:
            power = power * half / k
        rows.append(power * (1.0 - half * half / (k + 1)))
    return jnp.stack(rows)


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """The Bessel functions of the first kind ``J_0(z)`` to ``J_v(z)`` for real ``z``, stacked
    on a new leading axis: shape ``(v + 1, *z.shape)``. The recurrence starts at order
    ``n_iter``, which must be well above ``|z|`` (as in JAX). Unlike JAX, ``z == 0`` gives
    ``J_0 = 1`` and small float32 ``z`` does not overflow.

    >>> from fnx.scipy.special import bessel_jn
    >>> bessel_jn(1.0, v=2)
    Array([0.7651977 , 0.44005057, 0.1149034...], dtype=float32)
    """
    v = operator.index(v)
    n_iter = int(n_iter)
    z = jnp.asarray(z)
    if jnp.issubdtype(z.dtype, jnp.complexfloating):
        raise ValueError(f"bessel_jn: complex arguments are not supported, got {z.dtype}")
    if not jnp.issubdtype(z.dtype, jnp.floating):
        z = z.astype(jnp.result_type(float))
    tiny = jnp.abs(z) < (1.2e-4 if z.dtype == jnp.float64 else 2e-2)
    recurred = _miller(jnp.where(tiny, 1.0, z), v, max(n_iter, v + 1))
    return jnp.where(tiny, _leading_terms(z, v), recurred)


__all__ = ["bessel_jn"]

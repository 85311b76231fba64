"""Special functions defined by integrals: the sine and cosine integrals ``sici`` and Owen's T
function ``owens_t``. Each has its derivative in closed form (a custom JVP), as in JAX."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as jnp
from ..core.control_flow import fori_loop
from ..core.custom_derivatives import custom_jvp
from ..core.lax import erf
from ..lax.special import erfc

_EULER = 0.5772156649015329


def _real(x, name):
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise ValueError(f"{name}: the argument must be real, got {x.dtype}")
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.result_type(float))


# ---- sine and cosine integrals --------------------------------------------------------------

_SICI_SERIES_LIMIT = 4.0     # terms up to 4**k / k! (one digit of cancellation)
_SICI_SERIES_TERMS = 40
_SICI_FRACTION_DEPTH = 60    # enough at x = 4 for float64


def _sici_series(x):
    """Si(x) = sum (-1)^k x^(2k+1) / ((2k+1) (2k+1)!), Ci(x) = gamma + log x +
    sum_{k>=1} (-1)^k x^(2k) / (2k (2k)!), for 0 < x <= 4."""
    si = jnp.zeros(x.shape, x.dtype)
    ci = _EULER + jnp.log(x)
    term = jnp.ones(x.shape, x.dtype)           # x^j / j!
    for j in range(1, 2 * _SICI_SERIES_TERMS):
        term = term * x / j
        sign = -1.0 if (j // 2) % 2 else 1.0
        if j % 2:
            si = si + sign * term / j
        else:
            ci = ci + sign * term / j
    return si, ci


def _sici_fraction(x):
    """Si and Ci for x >= 4 from ``E1(ix) = -Ci(x) + i (Si(x) - pi/2)``, with
    ``exp(z) E1(z) = 1 / (z + 1 - 1 / (z + 3 - 4 / (z + 5 - ...)))`` summed from the bottom."""
    z = 1j * x
    depth = _SICI_FRACTION_DEPTH

    def step(i, tail):
        n = depth - 1 - i
        return z + (2.0 * n + 1.0) - (n + 1.0) ** 2 / tail

    tail = fori_loop(0, depth, step, z + (2.0 * depth + 1.0))
    e1 = (jnp.cos(x) - 1j * jnp.sin(x)) / tail
    return 0.5 * math.pi + e1.imag, -e1.real


@custom_jvp
def _sici(x):
    ax = jnp.abs(x)
    near = ax <= _SICI_SERIES_LIMIT
    si_near, ci_near = _sici_series(jnp.where(near & (ax > 0), ax, 1.0))
    far_x = jnp.where(near | jnp.isinf(ax), 2.0 * _SICI_SERIES_LIMIT, ax)
    si_far, ci_far = _sici_fraction(far_x)
    si = jnp.where(near, si_near, jnp.where(jnp.isinf(ax), 0.5 * math.pi, si_far))
    ci = jnp.where(near, ci_near, jnp.where(jnp.isinf(ax), 0.0, ci_far))
    si = jnp.where(ax == 0, 0.0, si)
    ci = jnp.where(ax == 0, -jnp.inf, ci)
    return jnp.sign(x) * si, jnp.where(jnp.isneginf(x), jnp.nan, ci)


@_sici.defjvp
def _(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    safe = jnp.where(x == 0, 1.0, x)
    sinc = jnp.where(x == 0, 1.0, jnp.sin(safe) / safe)
    return _sici(x), (sinc * x_dot, jnp.cos(x) / x * x_dot)


def sici(x):
    """The sine and cosine integrals ``(Si(x), Ci(x))``: ``Si(x) = int_0^x sin(t)/t dt`` and
    ``Ci(x) = gamma + log(x) + int_0^x (cos(t) - 1)/t dt``; for negative x, as in JAX,
    ``Si`` is odd and ``Ci(x) = Ci(|x|)``.

    >>> from fnx.scipy.special import sici
    >>> sici(1.0)
    (Array(0.946083..., dtype=float32), Array(0.337403..., dtype=float32))
    """
    return _sici(_real(x, "sici"))


# ---- Owen's T function ----------------------------------------------------------------------

# T(h, a) = exp(-h^2/2) / (2 pi) int_0^a exp(-h^2 u^2 / 2) / (1 + u^2) du for 0 <= a <= 1; the
# integrand is below exp(-72) of its peak past u = 12 / h, so the integral stops there and 48
# Gauss-Legendre nodes see a smooth bump, whatever h
_OWENS_NODES, _OWENS_WEIGHTS = np.polynomial.legendre.leggauss(48)
_OWENS_CUTOFF = 12.0


def _owens_t_unit(h, a):
    """T(h, a) for h >= 0 and 0 <= a <= 1."""
    end = jnp.minimum(a, _OWENS_CUTOFF / jnp.maximum(h, 1e-300))
    nodes = jnp.asarray(0.5 * (_OWENS_NODES + 1.0), h.dtype)
    weights = jnp.asarray(0.5 * _OWENS_WEIGHTS, h.dtype)
    u = end[..., None] * nodes
    h2 = (h * h)[..., None]
    integrand = jnp.exp(-0.5 * h2 * (1.0 + u * u)) / (1.0 + u * u)
    return end * (integrand * weights).sum(-1) / (2 * math.pi)


def _upper_normal_tail(x):
    return 0.5 * erfc(x / math.sqrt(2.0))


@custom_jvp
def _owens_t(h, a):
    h, abs_a = jnp.abs(h), jnp.abs(a)
    wide = abs_a > 1.0
    inner_a = jnp.where(wide, 1.0 / jnp.where(wide, abs_a, 1.0), abs_a)
    inner_h = jnp.where(wide, abs_a * h, h)
    inner = _owens_t_unit(inner_h, inner_a)
    # T(h, a) + T(ah, 1/a) = (p + r) / 2 - p r, p and r the normal tails at h and ah
    p, r = _upper_normal_tail(h), _upper_normal_tail(inner_h)
    value = jnp.where(wide, 0.5 * (p + r) - p * r - inner, inner)
    value = jnp.where(jnp.isinf(abs_a), 0.5 * p, value)
    return jnp.sign(a) * value


@_owens_t.defjvp
def _(primals, tangents):
    (h, a), (h_dot, a_dot) = primals, tangents
    d_h = -jnp.exp(-0.5 * h * h) * erf(a * h / math.sqrt(2.0)) / (2 * math.sqrt(2 * math.pi))
    d_a = jnp.exp(-0.5 * (1.0 + a * a) * h * h) / (2 * math.pi * (1.0 + a * a))
    return _owens_t(h, a), d_h * h_dot + d_a * a_dot


def owens_t(h, a):
    """Owen's T function,
    ``T(h, a) = 1/(2 pi) int_0^a exp(-h**2 (1 + x**2) / 2) / (1 + x**2) dx``: Gauss-Legendre quadrature over the part of the integral that counts, and the
    identity ``T(h, a) + T(ah, 1/a) = (p + r)/2 - p r`` (p, r the normal tails at h and ah)
    for ``|a| > 1``.

    >>> from fnx.scipy.special import owens_t
    >>> owens_t(0.5, 2.0)
    Array(0.1415806..., dtype=float32)
    """
    dtype = jnp.result_type(h, a)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    h, a = jnp.broadcast_arrays(*[_real(v, "owens_t").astype(dtype) for v in (h, a)])
    return _owens_t(h, a)


__all__ = ["sici", "owens_t"]

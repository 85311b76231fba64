"""fnx.scipy.special: jax.scipy.special's functions, elementwise and differentiable.

>>> from fnx.scipy import special
>>> special.gammaln(5.0)     # log(4!)
Array(3.1780539, dtype=float32, weak_type=True)
"""
from __future__ import annotations

import math

from .. import numpy as jnp
from ..core import lax as _lax
from ..core.custom_derivatives import custom_jvp
from ..lax.special import digamma, erfc, erfc_tail, lgamma
from ..core.errors import DTypeValueError
from ..numpy._core import promote_dtypes_inexact as _inexact
from ..lax.zeta import polygamma as _lax_polygamma, zeta as _lax_zeta
from ._bessel import bessel_jn  # noqa: F401
from ._common import floats as _floats, gamma, gamma_sign as _gamma_sign, one_float as _float
from ._faddeeva import fresnel, wofz  # noqa: F401
from ._harmonics import sph_harm_y  # noqa: F401
from ._hypergeometric import hyp2f1  # noqa: F401
from ._integrals import owens_t, sici  # noqa: F401
from ._series import (betainc, dawsn, exp1, expi, expn, gammainc, gammaincc,  # noqa: F401
                      hyp1f1, i0, i0e, i1, i1e, spence)
from ..nn import log_softmax, logsumexp, sigmoid as expit, softmax  # noqa: F401

gammaln = lgamma
psi = digamma


def erf(x):
    """The error function; integers become floats, as in JAX.

    >>> erf(0.5)
    Array(0.5204999, dtype=float32, weak_type=True)
    """
    return _lax.erf(_inexact(x)[0])


def erfinv(x):
    """The inverse of ``erf`` on (-1, 1); integers become floats, as in JAX.

    >>> erfinv(0.5)
    Array(0.47693628, dtype=float32, weak_type=True)
    """
    return _lax.erf_inv(_inexact(x)[0])


def betaln(a, b):
    """``log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``.

    >>> betaln(2.0, 3.0)     # log(1/12)
    Array(-2.4849062, dtype=float32)
    """
    a, b = _floats(a, b)
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def beta(a, b):
    """The beta function B(a, b) (positive arguments).

    >>> beta(2.0, 3.0)
    Array(0.08333337, dtype=float32)
    """
    return jnp.exp(betaln(a, b))


def multigammaln(a, d: int):
    """The log of the multivariate gamma function of dimension ``d``.

    >>> multigammaln(3.0, 2)
    Array(1.5501949, dtype=float32)
    """
    a = _float(a)
    return (d * (d - 1) / 4 * math.log(math.pi)
            + sum(lgamma(a - j / 2) for j in range(int(d))))


def factorial(n, exact: bool = False):
    """``n!`` as ``Gamma(n + 1)`` (0 for negative ``n``); ``exact=True`` is not supported, as
    in JAX.

    >>> factorial(5.0)   # 5!, as exp(gammaln(6))
    Array(119.9999, dtype=float32)
    """
    if exact:
        raise NotImplementedError("factorial(exact=True): only the floating-point form exists")
    n = _float(n)
    return jnp.where(n < 0, 0.0, jnp.exp(lgamma(n + 1.0)))


def logit(p):
    """``log(p / (1 - p))``, the inverse of ``expit``.

    >>> logit(0.25)
    Array(-1.0986123, dtype=float32)
    """
    p = _float(p)
    return jnp.log(p) - jnp.log1p(-p)


def _zero_at_zero_x(log_fn, log_derivative):
    """``x * log_fn(y)``, and 0 where ``x == 0``, with JAX's derivatives ``log_fn(y)`` in x and
    ``x log_fn'(y)`` in y (so -inf and NaN where x == 0 at log_fn's pole, as in JAX)."""
    @custom_jvp
    def f(x, y):
        zero = x == 0
        return jnp.where(zero, 0.0, x * log_fn(jnp.where(zero, 1.0, y)))

    @f.defjvp
    def _(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return f(x, y), x_dot * log_fn(y) + y_dot * x * log_derivative(y)

    return f


_xlogy = _zero_at_zero_x(jnp.log, jnp.reciprocal)
_xlog1py = _zero_at_zero_x(jnp.log1p, lambda y: jnp.reciprocal(1.0 + y))


def xlogy(x, y):
    """``x * log(y)``, and 0 where ``x == 0`` (even where ``y == 0``).

    >>> xlogy(0.0, 0.0)
    Array(0., dtype=float32)
    """
    return _xlogy(*jnp.broadcast_arrays(*_floats(x, y)))


def xlog1py(x, y):
    """``x * log1p(y)``, and 0 where ``x == 0`` (even where ``y == -1``).

    >>> xlog1py(0.0, -1.0)
    Array(0., dtype=float32)
    """
    return _xlog1py(*jnp.broadcast_arrays(*_floats(x, y)))


def entr(x):
    """``-x log x`` for x > 0, 0 at 0 and -inf below.

    >>> entr(0.5)
    Array(0.3465736, dtype=float32)
    """
    x = _float(x)
    return jnp.where(x < 0, -jnp.inf, -xlogy(x, x))


def rel_entr(x, y):
    """``x log(x / y)`` for x, y > 0; 0 where x == 0 and y >= 0; inf elsewhere.

    >>> rel_entr(0.5, 0.25)
    Array(0.3465736, dtype=float32)
    """
    x, y = jnp.broadcast_arrays(*_floats(x, y))
    inside = (x > 0) & (y > 0)
    safe_x, safe_y = jnp.where(inside, x, 1.0), jnp.where(inside, y, 1.0)
    value = jnp.where(inside, safe_x * jnp.log(safe_x / safe_y), jnp.inf)
    return jnp.where((x == 0) & (y >= 0), 0.0, value)


def kl_div(x, y):
    """``rel_entr(x, y) - x + y``, scipy's elementwise Kullback-Leibler term.

    >>> kl_div(0.5, 0.25)
    Array(0.09657359, dtype=float32)
    """
    x, y = jnp.broadcast_arrays(*_floats(x, y))
    return rel_entr(x, y) - x + y


def ndtr(x):
    """The standard normal CDF.

    >>> ndtr(0.0)
    Array(0.5, dtype=float32)
    """
    x = _float(x)
    return 0.5 * erfc(-x / math.sqrt(2.0))


def ndtri(p):
    """The inverse of ``ndtr``.

    >>> ndtri(0.975)     # about 1.96
    Array(1.9599643, dtype=float32)
    """
    p = _float(p)
    return math.sqrt(2.0) * erfinv(2.0 * p - 1.0)


def log_ndtr(x):
    """``log(ndtr(x))``, accurate in both tails: through erfc's continued fraction in the lower
    tail (where ndtr underflows), ``log1p`` in the upper one.

    >>> log_ndtr(-30.0)
    Array(-454.32123, dtype=float32)
    """
    x = _float(x)
    # ndtr(x) = erfc(y) / 2 with y = -x / sqrt(2); for y >= 3 take the log of erfc's tail form
    y = -x / math.sqrt(2.0)
    far = y >= 3.0
    y_far = jnp.where(far, y, 3.0)
    tail = -math.log(2.0) - y_far * y_far - jnp.log(math.sqrt(math.pi) * erfc_tail(y_far))
    near = jnp.where(far, 0.0, x)
    middle = jnp.where(near > 0, jnp.log1p(-ndtr(-near)), jnp.log(ndtr(near)))
    return jnp.where(far, tail, middle)


def loggamma(x):
    """``log(Gamma(x))`` for real x > 0 (NaN below, as in JAX for real input).

    >>> loggamma(5.0)
    Array(3.1780539, dtype=float32)
    """
    x = _float(x)
    return jnp.where(x < 0, jnp.nan, lgamma(x))


def gammasgn(x):
    """The sign of Gamma(x): 1 or -1, NaN at the poles 0 > x = -1, -2, ...

    >>> gammasgn(-1.5)
    Array(1., dtype=float32)
    """
    return _gamma_sign(_float(x))


def poch(z, m):
    """The Pochhammer symbol (rising factorial) ``Gamma(z + m) / Gamma(z)``.

    >>> poch(2.0, 3.0)   # 2 * 3 * 4
    Array(24., dtype=float32)
    """
    z, m = jnp.broadcast_arrays(*_floats(z, m))
    value = gammasgn(z + m) * gammasgn(z) * jnp.exp(lgamma(z + m) - lgamma(z))
    return jnp.where(m == 0, 1.0, value)


def comb(N, k, *, repetition: bool = False):
    """The number of combinations of ``N`` things taken ``k`` at a time, in floating point
    (0 where ``k < 0`` or ``k > N``).

    >>> comb(5.0, 2.0)      # 10, through gammaln
    Array(9.9999..., dtype=float32)
    """
    N, k = jnp.broadcast_arrays(*_floats(N, k))
    if repetition:
        N = N + k - 1.0
    value = jnp.exp(lgamma(N + 1.0) - lgamma(k + 1.0) - lgamma(N - k + 1.0))
    return jnp.where((k < 0) | (k > N) | (N < 0), 0.0, value)


def boxcox(x, lmbda):
    """The Box-Cox transform ``(x**lmbda - 1) / lmbda``, and ``log(x)`` where lmbda is 0.

    >>> boxcox(2.0, 0.0)
    Array(0.6931472, dtype=float32)
    """
    x, lmbda = jnp.broadcast_arrays(*_floats(x, lmbda))
    return _box_cox_of_log(jnp.log(x), lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of ``1 + x``, accurate for small x.

    >>> boxcox1p(1.0, 0.0)
    Array(0.6931472, dtype=float32)
    """
    x, lmbda = jnp.broadcast_arrays(*_floats(x, lmbda))
    return _box_cox_of_log(jnp.log1p(x), lmbda)


def _box_cox_of_log(log_x, lmbda):
    zero = lmbda == 0
    safe = jnp.where(zero, 1.0, lmbda)
    return jnp.where(zero, log_x, jnp.expm1(safe * log_x) / safe)


def erfcx(x):
    """The scaled complementary error function ``exp(x**2) * erfc(x)``, finite for large x.

    >>> erfcx(30.0)
    Array(0.01879589, dtype=float32)
    """
    x = _float(x)
    far = x >= 2.0
    y = jnp.where(far, x, 2.0)
    tail = 1.0 / (math.sqrt(math.pi) * erfc_tail(y))
    near = jnp.where(far, 0.0, x)
    return jnp.where(far, tail, jnp.exp(near * near) * erfc(near))


def bernoulli(n: int):
    """The Bernoulli numbers B_0 .. B_n (with B_1 = -1/2), as one array.

    >>> bernoulli(4)
    Array([ 1.        , -0.5       ,  0.16666667,  0.        , -0.03333334], dtype=float32)
    """
    from fractions import Fraction
    n = int(n)
    if n < 0:
        raise ValueError(f"bernoulli(n): n must be >= 0, got {n}")
    numbers = [Fraction(1)]
    for m in range(1, n + 1):       # sum_{k<=m} C(m+1, k) B_k = 0
        numbers.append(-sum(math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
    return jnp.asarray([float(b) for b in numbers], jnp.result_type(float))


def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_k (k + q) ** -x`` (``fnx.lax.zeta``, with its edge
    values); as in JAX, ``q`` is required.

    >>> zeta(2.0, 1.0)     # pi**2 / 6
    Array(1.644934, dtype=float32)
    """
    if q is None:
        raise NotImplementedError(
            "zeta(x, q=None): the Riemann zeta function is not implemented; pass q "
            "(q=1.0 gives it)")
    return _lax_zeta(*_floats(x, q))


def polygamma(n, x):
    """The n-th derivative of the digamma function (``fnx.lax.polygamma``); as in JAX, ``n``
    must have an integer dtype.

    >>> polygamma(1, 1.0)  # pi**2 / 6
    Array(1.644934, dtype=float32)
    """
    n_dtype = jnp.result_type(n)
    if not jnp.issubdtype(n_dtype, jnp.integer):
        raise DTypeValueError(f"polygamma(n, x): n must have an integer dtype, got {n_dtype}")
    if jnp.issubdtype(jnp.result_type(x), jnp.complexfloating):
        raise DTypeValueError(f"polygamma(n, x): x must be real, got {jnp.result_type(x)}")
    return _lax_polygamma(*_floats(n, x))


__all__ = ["gammaln", "digamma", "psi", "gamma", "beta", "betaln", "multigammaln", "factorial",
           "erf", "erfc", "erfinv", "expit", "logit", "logsumexp", "softmax", "log_softmax",
           "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "ndtr", "ndtri", "log_ndtr",
           "loggamma", "gammasgn", "poch", "comb", "boxcox", "boxcox1p", "erfcx", "bernoulli",
           "gammainc", "gammaincc", "betainc", "expn", "exp1", "expi", "i0e", "i0", "i1e", "i1",
           "zeta", "polygamma", "dawsn", "spence", "hyp1f1", "bessel_jn", "fresnel", "hyp2f1",
           "owens_t", "sici", "sph_harm_y", "wofz"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

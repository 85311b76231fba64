"""fnx.scipy.optimize: ``minimize`` with BFGS, as jax.scipy.optimize.

The iteration and its line search (strong Wolfe conditions, Nocedal & Wright's algorithms 3.5,
3.6 and 6.1) are JAX's, written as ``lax.while_loop``s over a state of arrays, so
``minimize`` runs under ``jit`` and ``vmap`` and gives the iterates JAX gives. Gradients of
``fun`` come from ``value_and_grad``.

>>> from fnx.scipy.optimize import minimize
>>> res = minimize(lambda x: jnp.sum((x - 3.0) ** 2), jnp.zeros(2), method="BFGS")
>>> res.x
Array([3., 3.], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core.api import value_and_grad
from ..core.control_flow import while_loop


class OptimizeResults(NamedTuple):
    """What ``minimize`` found: ``x``, ``success``, ``status`` (0 converged, 1 maximum
    iterations, 3 line search failed in zoom, 5 line search reached its maximum iterations,
    -1 undefined), ``fun``, ``jac`` (the gradient at ``x``), ``hess_inv`` (BFGS's estimate of
    the inverse Hessian), ``nfev``, ``njev`` and ``nit``.

    >>> result = fnx.scipy.optimize.minimize(lambda x: ((x - 1.0) ** 2).sum(), jnp.zeros(2),
    ...                                      method="BFGS")
    >>> bool(result.success), jnp.round(result.x, 3)
    (True, Array([1., 1.], dtype=float32))
    """
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _i32(v):
    return jnp.asarray(v, jnp.int32)


def _bool(v):
    return jnp.asarray(v, jnp.bool_)


def _where(pred, new: dict, state):
    """``state`` with each field in ``new`` replaced where ``pred`` holds (both branches are
    computed: no ``cond``, as in JAX, so that it batches under ``vmap``)."""
    return state._replace(**{k: jnp.where(pred, v, getattr(state, k)) for k, v in new.items()})


# ---------------------------------------------------------------------------------------------
# Line search


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    C = fpa
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    r1, r2 = fb - fa - C * db, fc - fa - C * dc
    A = (dc ** 2 * r1 - db ** 2 * r2) / denom
    B = (-dc ** 3 * r1 + db ** 3 * r2) / denom
    return a + (-B + jnp.sqrt(B * B - 3.0 * A * C)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The minimizer of the quadratic through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    B = (fb - fa - fpa * db) / db ** 2
    return a - fpa / (2.0 * B)


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _zoom(phi_dphi, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0,
          pass_through):
    """Narrow [a_lo, a_hi] to a step satisfying the strong Wolfe conditions (Nocedal & Wright,
    algorithm 3.6), trying cubic, then quadratic interpolation, then bisection."""
    dtype = a_lo.dtype
    state = _ZoomState(
        done=_bool(False), failed=_bool(False), j=_i32(0),
        a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
        a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
        a_star=jnp.ones((), dtype), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0,
        nfev=_i32(0), ngev=_i32(0))
    # an interval this narrow means no step satisfies the conditions: the search fails, and
    # so does the minimization
    threshold = 1e-10 if np.dtype(dtype).itemsize >= 8 else 1e-5

    def body(s):
        dalpha = s.a_hi - s.a_lo
        lo, hi = jnp.minimum(s.a_hi, s.a_lo), jnp.maximum(s.a_hi, s.a_lo)
        cchk, qchk = 0.2 * dalpha, 0.1 * dalpha
        s = s._replace(failed=s.failed | (dalpha <= threshold))
        # the cubic's minimizer may be NaN; the bounds check then rejects it
        a_cubic = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (a_cubic > lo + cchk) & (a_cubic < hi - cchk)
        a_quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ~use_cubic & (a_quad > lo + qchk) & (a_quad < hi - qchk)
        a_j = jnp.where(use_cubic, a_cubic,
                        jnp.where(use_quad, a_quad, (s.a_lo + s.a_hi) / 2.0))
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)

        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s.phi_lo)
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j

        s = _where(hi_to_j, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi,
                                 phi_rec=s.phi_hi), s)
        s = _where(star_to_j, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j),
                   s._replace(done=star_to_j | s.done))
        s = _where(hi_to_lo, dict(a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo,
                                  a_rec=s.a_hi, phi_rec=s.phi_hi), s)
        s = _where(lo_to_j & ~hi_to_lo, dict(a_rec=s.a_lo, phi_rec=s.phi_lo), s)
        s = _where(lo_to_j, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j), s)
        # more tries than SciPy's 10, as JAX allows
        return s._replace(j=s.j + 1, failed=s.failed | (s.j + 1 >= 30))

    return while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


class _LineSearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


class _LineSearchResults(NamedTuple):
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1: float = 1e-4,
                c2: float = 0.9, maxiter: int = 20):
    """A step along descent direction ``pk`` from ``xk`` that satisfies the strong Wolfe
    conditions with constants ``c1``, ``c2`` (Nocedal & Wright, algorithm 3.5; JAX's
    version: the first trial step comes from the last decrease, later ones double).

    >>> f = lambda x: jnp.sum((x - 1.0) ** 2)
    >>> x = jnp.zeros(2)
    >>> res = line_search(f, x, -fnx.grad(f)(x))
    >>> res.a_k, res.f_k
    (Array(0.5, dtype=float32), Array(0., dtype=float32))
    """
    xk, pk = jnp.asarray(xk), jnp.asarray(pk)
    dtype = jnp.result_type(xk, pk, jnp.float32)
    xk, pk = xk.astype(dtype), pk.astype(dtype)

    def phi_dphi(t):
        phi, g = value_and_grad(f)(xk + t.astype(dtype) * pk)
        return phi, jnp.dot(g, pk), g

    fresh = old_fval is None or gfk is None
    if fresh:
        phi_0, dphi_0, gfk = phi_dphi(jnp.zeros((), dtype))
    else:
        phi_0, dphi_0 = jnp.asarray(old_fval), jnp.dot(gfk, pk)
    if old_old_fval is not None:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = jnp.where(candidate > 1, jnp.ones((), dtype), candidate.astype(dtype))
    else:
        start = jnp.ones((), dtype)

    def wolfe_one(a, phi):      # the sufficient decrease condition fails
        return phi > phi_0 + c1 * a * dphi_0

    def wolfe_two(dphi):        # the curvature condition holds
        return jnp.abs(dphi) <= -c2 * dphi_0

    state = _LineSearchState(
        done=_bool(False), failed=_bool(False), i=_i32(1),   # from 1, as Nocedal & Wright
        a_i1=jnp.zeros((), dtype), phi_i1=phi_0, dphi_i1=dphi_0,
        nfev=_i32(1 if fresh else 0), ngev=_i32(1 if fresh else 0),
        a_star=jnp.zeros((), dtype), phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

    def body(s):
        a_i = jnp.where(s.i == 1, start, s.a_i1 * 2.0)
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
        to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
        to_i = wolfe_two(dphi_i) & ~to_zoom1
        to_zoom2 = (dphi_i >= 0.0) & ~to_zoom1 & ~to_i
        # both zooms run (each passes through at once unless chosen), as in JAX
        zoom1 = _zoom(phi_dphi, wolfe_one, wolfe_two, s.a_i1, s.phi_i1, s.dphi_i1, a_i,
                      phi_i, dphi_i, gfk, ~to_zoom1)
        zoom2 = _zoom(phi_dphi, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, s.a_i1, s.phi_i1,
                      s.dphi_i1, gfk, ~to_zoom2)
        s = s._replace(nfev=s.nfev + zoom1.nfev + zoom2.nfev,
                       ngev=s.ngev + zoom1.ngev + zoom2.ngev)
        star = ("a_star", "phi_star", "dphi_star", "g_star")
        s = _where(to_zoom1, {k: getattr(zoom1, k) for k in star},
                   s._replace(done=to_zoom1 | s.done, failed=(to_zoom1 & zoom1.failed)
                              | s.failed))
        s = _where(to_i, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i),
                   s._replace(done=to_i | s.done))
        s = _where(to_zoom2, {k: getattr(zoom2, k) for k in star},
                   s._replace(done=to_zoom2 | s.done, failed=(to_zoom2 & zoom2.failed)
                              | s.failed))
        return s._replace(i=s.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    s = while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = jnp.where(s.failed, _i32(1), jnp.where(s.i > maxiter, _i32(3), _i32(0)))
    # below float64, a tiny step would stall the minimization on a zero direction
    a_k = s.a_star
    if np.dtype(dtype).itemsize < 8:
        a_k = jnp.where(jnp.abs(a_k) < 1e-8, jnp.sign(a_k) * 1e-8, a_k)
    return _LineSearchResults(failed=s.failed | ~s.done, nit=s.i - 1, nfev=s.nfev,
                              ngev=s.ngev, k=s.i, a_k=a_k, f_k=s.phi_star, g_k=s.g_star,
                              status=status)


# ---------------------------------------------------------------------------------------------
# BFGS


class _BFGSState(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    line_search_status: Any


def _norm(g, ord):
    return jnp.linalg.norm(g, ord=ord)


def minimize_bfgs(fun: Callable, x0, maxiter: int | None = None, norm=np.inf,
                  gtol: float = 1e-5, line_search_maxiter: int = 10) -> OptimizeResults:
    """BFGS (Nocedal & Wright, algorithm 6.1) from ``x0`` (a vector) until the ``norm`` of the
    gradient is below ``gtol``, the line search fails, or ``maxiter`` (default
    ``200 * x0.size``) iterations.

    >>> res = minimize_bfgs(lambda x: jnp.sum(x ** 2), jnp.ones(3))
    """
    x0 = jnp.asarray(x0)
    x0 = x0.astype(jnp.result_type(x0, jnp.float32))
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be a vector (n,), got shape {x0.shape}, as in JAX")
    maxiter = 200 * x0.size if maxiter is None else maxiter
    d = x0.shape[0]
    eye = jnp.eye(d, dtype=x0.dtype)
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _BFGSState(
        converged=_norm(g_0, norm) < gtol, failed=_bool(False), k=_i32(0), nfev=_i32(1),
        ngev=_i32(1), x_k=x0, f_k=f_0, g_k=g_0, H_k=eye,
        old_old_fval=f_0 + jnp.linalg.norm(g_0) / 2, line_search_status=_i32(0))

    def body(s):
        p_k = -(s.H_k @ s.g_k)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                         gfk=s.g_k, maxiter=line_search_maxiter)
        s_k = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho_k = 1.0 / jnp.dot(y_k, s_k)
        w = eye - rho_k * (s_k[:, None] * y_k[None, :])
        H = w @ s.H_k @ w.T + rho_k * (s_k[:, None] * s_k[None, :])
        # no curvature along the step (y.s = 0): keep the old estimate
        H = jnp.where(jnp.isfinite(rho_k), H, s.H_k)
        return _BFGSState(
            converged=_norm(ls.g_k, norm) < gtol, failed=ls.failed, k=s.k + 1,
            nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=s.x_k + s_k, f_k=ls.f_k,
            g_k=ls.g_k, H_k=H, old_old_fval=s.f_k, line_search_status=ls.status)

    s = while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    status = jnp.where(s.converged, _i32(0),
                       jnp.where(s.k == maxiter, _i32(1),
                                 jnp.where(s.failed, 2 + s.line_search_status, _i32(-1))))
    return OptimizeResults(x=s.x_k, success=s.converged & ~s.failed, status=status,
                           fun=s.f_k, jac=s.g_k, hess_inv=s.H_k, nfev=s.nfev, njev=s.ngev,
                           nit=s.k)


def minimize(fun: Callable, x0, args: tuple = (), *, method: str = "BFGS", tol=None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` over vectors ``x`` from ``x0`` (jax.scipy.optimize.minimize).
    ``method`` is "BFGS" (JAX requires it; here it is the default); ``options`` are
    ``maxiter``, ``norm``, ``gtol`` and ``line_search_maxiter``; ``tol``, when given, is
    ``gtol`` unless ``options`` sets it (SciPy's meaning; JAX ignores ``tol``). Runs under
    ``jit`` and ``vmap``.

    >>> res = minimize(lambda x, c: jnp.sum((x - c) ** 2), jnp.zeros(3), args=(1.0,))
    >>> res.x, res.success
    (Array([1., 1., 1.], dtype=float32), Array(True, dtype=bool))
    """
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to fnx.scipy.optimize.minimize must be a tuple, got "
                        f"{args!r}")
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    if method.lower() != "bfgs":
        raise ValueError(f"Method {method} not recognized (fnx has 'BFGS', as JAX)")
    return minimize_bfgs(lambda x: fun(x, *args), x0, **options)


__all__ = ["OptimizeResults", "minimize", "minimize_bfgs", "line_search"]

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line

"""``odeint``: adaptive Dormand-Prince (Runge-Kutta 4(5)) integration with JAX's
``jax.experimental.ode`` interface and steps, differentiated by the adjoint method (the solution
run backwards with its vector-Jacobian products, Chen et al. 2018, appendix C).

>>> import fnx.numpy as jnp
>>> ys = odeint(lambda y, t, k: -k * y, jnp.array(1.0), jnp.array([0.0, 1.0]), 2.0)
>>> bool(abs(ys[1] - jnp.exp(-2.0)) < 1e-6)
True
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.api import vjp, vmap
from ..core.config import default_matmul_precision
from ..core.custom_derivatives import closure_convert, custom_vjp
from ..core.jit import jit
from ..flatten_util import ravel_pytree
from ..tree_util import tree_leaves, tree_map

# The Dormand-Prince tableau: nodes, stage weights, the 5th-order solution, the error estimate
# (5th minus embedded 4th order) and the midpoint of the dense-output interpolant.
_NODES = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_STAGES = [[1 / 5, 0, 0, 0, 0, 0, 0], [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
           [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
           [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
           [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
           [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_SOLUTION = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_ERROR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
          -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.]
_MIDPOINT = [6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
             -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
             -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]


def _interpolant(y0, y1, k, dt):
    """The quartic through the step (coefficients, highest power first) for dense output."""
    dt = dt.astype(y0.dtype)
    y_mid = y0 + dt * jnp.dot(jnp.array(_MIDPOINT, y0.dtype), k)
    dy0, dy1 = k[0], k[-1]
    return jnp.asarray([
        -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid,
        5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid,
        -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid,
        dt * dy0,
        y0])


def _initial_step_size(fun, t0, y0, order, rtol, atol, f0):
    """Hairer, Norsett and Wanner's starting step (Solving ODEs I, section II.4)."""
    scale = (atol + jnp.abs(y0) * rtol).astype(y0.dtype)
    d0, d1 = jnp.linalg.norm(y0 / scale), jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
    return jnp.minimum(100. * h0, h1)


def _runge_kutta_step(fun, y0, f0, t0, dt):
    """One Dormand-Prince step: the new state, its derivative, the error estimate, the stages."""
    nodes, stages = jnp.array(_NODES, dt.dtype), jnp.array(_STAGES, f0.dtype)
    step = dt.astype(f0.dtype)

    def stage(i, k):
        return k.at[i, :].set(fun(y0 + step * jnp.dot(stages[i - 1, :], k),
                                  t0 + dt * nodes[i - 1]))
    k = lax.fori_loop(1, 7, stage, jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0))
    y1 = step * jnp.dot(jnp.array(_SOLUTION, f0.dtype), k) + y0
    return y1, k[-1], step * jnp.dot(jnp.array(_ERROR, f0.dtype), k), k


def _error_ratio(error, rtol, atol, y0, y1):
    tolerance = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    ratio = error / tolerance.astype(error.dtype)
    squared = ratio.real ** 2 + ratio.imag ** 2 if jnp.iscomplexobj(ratio) else ratio ** 2
    return jnp.sqrt(jnp.mean(squared))


def _next_step_size(last_step, ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
    dfactor = jnp.where(ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor, jnp.maximum(ratio ** (-1.0 / order) * safety, dfactor))
    return jnp.where(ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
    """The solution of ``dy/dt = func(y, t, *args)`` from ``y0`` at the increasing times ``t``:
    ``y0``'s pytree with a leading axis of ``len(t)``. ``rtol``/``atol`` bound each step's local
    error, ``mxstep`` the steps between two output times, ``hmax`` the step size.
    Differentiable in ``y0``, ``t``, ``args`` and the values ``func`` closes over.

    >>> decay = lambda y, t, k: -k * y
    >>> ts = jnp.array([0.0, 1.0])
    >>> g = fnx.grad(lambda k: odeint(decay, 1.0, ts, k)[-1])(2.0)
    >>> bool(abs(g + jnp.exp(-2.0)) < 1e-5)                       # d/dk exp(-k)
    True
    """
    for arg in tree_leaves(args):
        if not hasattr(arg, "dtype") and not isinstance(arg, (int, float, complex, bool)):
            raise TypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
    t = jnp.asarray(t)
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    converted, consts = closure_convert(func, y0, t[0], *args)
    return _odeint_raveled(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_raveled(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    y0, unravel = ravel_pytree(y0)

    def flat_func(y, t, *args):
        return ravel_pytree(func(unravel(y), t, *args))[0]
    return vmap(unravel)(_odeint(flat_func, rtol, atol, mxstep, hmax, y0, ts, *args))


@partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    with default_matmul_precision("highest"):
        return _integrate(partial(_call, func, args), rtol, atol, mxstep, hmax, y0, ts)


def _call(func, args, y, t):
    return func(y, t, *args)


def _integrate(fun, rtol, atol, mxstep, hmax, y0, ts):
    def to_time(carry, target_t):
        def not_there(state):
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def attempt(state):
            i, y, f, t, dt, last_t, coeffs = state
            next_y, next_f, error, k = _runge_kutta_step(fun, y, f, t, dt)
            ratio = _error_ratio(error, rtol, atol, y, next_y)
            next_dt = jnp.clip(_next_step_size(dt, ratio), min=0., max=hmax)
            taken = [i + 1, next_y, next_f, t + dt, next_dt, t, _interpolant(y, next_y, k, dt)]
            kept = [i + 1, y, f, t, next_dt, last_t, coeffs]
            return [jnp.where(ratio <= 1., a, b) for a, b in zip(taken, kept)]

        _, *carry = lax.while_loop(not_there, attempt, [0] + carry)
        _, _, t, _, last_t, coeffs = carry
        fraction = (target_t - last_t) / (t - last_t)
        return carry, jnp.polyval(coeffs, fraction.astype(coeffs.dtype))

    f0 = fun(y0, ts[0])
    dt = jnp.clip(_initial_step_size(fun, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
    carry = [y0, f0, ts[0], dt, ts[0], jnp.array([y0] * 5)]
    _, ys = lax.scan(to_time, carry, ts[1:])
    return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, residuals, g):
    ys, ts, args = residuals
    ys, ts, g = jnp.asarray(ys), jnp.asarray(ts), jnp.asarray(g)   # indexed by a traced step

    def augmented(state, t, *args):
        """The system run backwards in time, carrying the adjoint and the parameters' VJPs."""
        y, y_bar, *_ = state
        y_dot, pullback = vjp(func, y, -t, *args)
        return (-y_dot, *pullback(y_bar))

    def between_outputs(carry, i):
        y_bar, t0_bar, args_bar = carry
        t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            augmented, (ys[i], y_bar, t0_bar, args_bar), jnp.array([-ts[i], -ts[i - 1]]),
            *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
        y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    with default_matmul_precision("highest"):
        init = (g[-1], 0., tree_map(jnp.zeros_like, args))
        (y_bar, t0_bar, args_bar), ts_bar = lax.scan(
            between_outputs, init, jnp.arange(len(ts) - 1, 0, -1))
        ts_bar = jnp.concatenate([jnp.array([t0_bar]), ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)

__all__ = ["odeint"]

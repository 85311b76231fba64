"""Line searches that scale an update direction by a step size meeting decrease (Armijo) and,
for the zoom search, curvature (Wolfe) conditions. They are ``GradientTransformationExtraArgs``
whose ``update`` takes the objective: ``update(updates, state, params, value=, grad=,
value_fn=, **value_fn_kwargs)``; the search runs in a ``lax.while_loop``, so under ``jit``."""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

from .. import numpy as jnp
from ..core.api import value_and_grad
from ..core.control_flow import cond, while_loop
from ..core.pytree import tree_leaves, tree_map
from ._base import GradientTransformationExtraArgs
from ._numerics import safe_increment
from .tree_utils import (tree_add_scale, tree_cast_like, tree_conj, tree_get, tree_real,
                         tree_scale, tree_vdot, tree_where, tree_zeros_like)


def _value_dtype(params):
    return jnp.real(jnp.empty((), tree_leaves(params)[0].dtype)).dtype


def _split_kwargs(value_fn, extra_args, who):
    """The keyword arguments ``value_fn`` takes; any other is the caller's mistake."""
    names = set(inspect.signature(value_fn).parameters)
    unused = sorted(k for k in extra_args if k not in names)
    if unused:
        raise TypeError(f"{who}.update got keyword arguments {unused} that value_fn does not "
                        "take")
    return {k: v for k, v in extra_args.items() if k in names}


def _slope(updates, grad):
    return tree_real(tree_vdot(updates, tree_conj(grad)))


class BacktrackingLinesearchInfo(NamedTuple):
    """``scale_by_backtracking_linesearch``'s diagnostics.

    >>> BacktrackingLinesearchInfo._fields
    ('num_linesearch_steps', 'decrease_error')
    """
    num_linesearch_steps: Any
    decrease_error: Any


class ScaleByBacktrackingLinesearchState(NamedTuple):
    """``scale_by_backtracking_linesearch``'s state.

    >>> ScaleByBacktrackingLinesearchState._fields
    ('learning_rate', 'value', 'grad', 'info')
    """
    learning_rate: Any
    value: Any
    grad: Any
    info: BacktrackingLinesearchInfo


class BacktrackingLineSearchState(NamedTuple):
    learning_rate: Any
    new_value: Any
    new_grad: Any
    decrease_error: Any
    iter_num: Any


def scale_by_backtracking_linesearch(
        max_backtracking_steps: int, slope_rtol: float = 1e-4, decrease_factor: float = 0.8,
        increase_factor: float = 1.5, max_learning_rate: float = 1.0, atol: float = 0.0,
        rtol: float = 0.0, store_grad: bool = False,
        verbose: bool = False) -> GradientTransformationExtraArgs:
    """Shrink the step by ``decrease_factor`` from ``increase_factor`` times the last one
    (at most ``max_learning_rate``) until ``f(x + s u) <= (1 + rtol) f(x) + slope_rtol s
    <u, grad> + atol``. With ``store_grad`` the state keeps the gradient at the new point.

    >>> f = lambda x: jnp.sum(x ** 2)
    >>> opt = chain(sgd(1.0), scale_by_backtracking_linesearch(max_backtracking_steps=15))
    >>> x = jnp.array([1.0, -2.0])
    >>> state = opt.init(x)
    >>> value, grad = fnx.value_and_grad(f)(x)
    >>> updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=f)
    >>> bool(f(apply_updates(x, updates)) < value)
    True
    """
    def init(params):
        dtype = _value_dtype(params)
        return ScaleByBacktrackingLinesearchState(
            jnp.asarray(1.0, dtype), jnp.asarray(jnp.inf, dtype),
            tree_zeros_like(params) if store_grad else None,
            BacktrackingLinesearchInfo(jnp.asarray(0), jnp.asarray(jnp.inf, dtype)))

    def update(updates, state, params, *, value, grad, value_fn, **extra_args):
        kwargs = _split_kwargs(value_fn, extra_args, "scale_by_backtracking_linesearch")
        dtype = state.learning_rate.dtype
        value = jnp.asarray(value).astype(dtype)
        slope = _slope(updates, grad).astype(dtype)

        def decrease_error(step, new_value):
            err = new_value - (1.0 + rtol) * value - step * slope_rtol * slope
            return jnp.maximum(jnp.where(jnp.isnan(err), jnp.inf, err), 0.0).astype(dtype)

        def body(s):
            lr = jnp.where(s.iter_num > 0, decrease_factor * s.learning_rate,
                           s.learning_rate).astype(dtype)
            new_params = tree_add_scale(params, lr, updates)
            if store_grad:
                new_value, new_grad = value_and_grad(value_fn)(new_params, **kwargs)
                new_grad = tree_cast_like(new_grad, s.new_grad)
            else:
                new_value, new_grad = value_fn(new_params, **kwargs), s.new_grad
            new_value = jnp.asarray(new_value).astype(dtype)
            return BacktrackingLineSearchState(lr, new_value, new_grad,
                                               decrease_error(lr, new_value), s.iter_num + 1)

        def keep_going(s):
            return ~(s.decrease_error <= atol) & (s.iter_num <= max_backtracking_steps)

        start = jnp.minimum(increase_factor * state.learning_rate,
                            max_learning_rate).astype(dtype)
        s = while_loop(keep_going, body, BacktrackingLineSearchState(
            start, value, tree_zeros_like(params), jnp.asarray(jnp.inf, dtype),
            jnp.asarray(0)))
        lr = jnp.where(jnp.isinf(s.decrease_error), 0.0, s.learning_rate).astype(dtype)
        new_state = ScaleByBacktrackingLinesearchState(
            lr, s.new_value, s.new_grad if store_grad else None,
            BacktrackingLinesearchInfo(s.iter_num, s.decrease_error))
        return tree_scale(lr, updates), new_state
    return GradientTransformationExtraArgs(init, update)


class ZoomLinesearchState(NamedTuple):
    """The zoom search's loop state (optax's fields)."""
    count: Any
    params: Any
    updates: Any
    stepsize_guess: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    value_init: Any
    slope_init: Any
    decrease_error: Any
    curvature_error: Any
    error: Any
    interval_found: Any
    done: Any
    failed: Any
    low: Any
    value_low: Any
    slope_low: Any
    high: Any
    value_high: Any
    slope_high: Any
    cubic_ref: Any
    value_cubic_ref: Any
    safe_stepsize: Any
    safe_value: Any
    safe_grad: Any


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    ra, rb = fb - fa - fpa * db, fc - fa - fpa * dc
    big_a = (dc ** 2 * ra - db ** 2 * rb) / denom
    big_b = (-dc ** 3 * ra + db ** 3 * rb) / denom
    radical = big_b * big_b - 3.0 * big_a * fpa
    return a + (-big_b + jnp.sqrt(radical)) / (3.0 * big_a)


def _quadmin(a, fa, fpa, b, fb):
    """The minimizer of the parabola through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    return a - fpa / (2.0 * ((fb - fa - fpa * db) / db ** 2))


def zoom_linesearch(max_linesearch_steps: int, max_stepsize=None, tol: float = 0.0,
                    increase_factor: float = 2.0, slope_rtol: float = 1e-4,
                    curv_rtol: float = 0.9, approx_dec_rtol: float | None = 1e-6,
                    interval_threshold: float = 1e-5, verbose: bool = False):
    """The zoom line search (Nocedal and Wright, Algorithms 3.5 and 3.6, with Hager and
    Zhang's approximate decrease condition) as ``(init, step, cond)`` for a while loop.

    >>> init, step, keep_going = zoom_linesearch(max_linesearch_steps=10)
    """
    def on_line(value_and_grad_fn, params, stepsize, updates, kwargs):
        value, grad = value_and_grad_fn(tree_add_scale(params, stepsize, updates), **kwargs)
        return value, grad, _slope(updates, grad)

    def decrease_error_of(stepsize, value, slope, value_init, slope_init):
        err = value - value_init - slope_rtol * stepsize * slope_init
        if approx_dec_rtol is not None:
            approx = jnp.maximum(slope - (2 * slope_rtol - 1.0) * slope_init,
                                 value - value_init - approx_dec_rtol * jnp.abs(value_init))
            err = jnp.minimum(approx, err)
        err = jnp.maximum(err, 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def curvature_error_of(slope, slope_init):
        err = jnp.maximum(jnp.abs(slope) - curv_rtol * jnp.abs(slope_init), 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def try_safe_step(state):
        use_safe = (state.safe_stepsize > 0.0) | jnp.isinf(state.decrease_error)
        stepsize, value, grad = tree_where(use_safe,
                                           [state.safe_stepsize, state.safe_value,
                                            state.safe_grad],
                                           [state.stepsize, state.value, state.grad])
        return tree_cast_like(state._replace(stepsize=stepsize, value=value, grad=grad), state)

    def search_interval(state, value_and_grad_fn, kwargs):
        k = state.count
        new_step = jnp.where(k == 0, state.stepsize_guess, increase_factor * state.stepsize)
        if max_stepsize is not None:
            max_reached = new_step >= max_stepsize
            new_step = jnp.minimum(new_step, max_stepsize)
        else:
            max_reached = jnp.asarray(False)
        value, grad, slope = on_line(value_and_grad_fn, state.params, new_step, state.updates,
                                     kwargs)
        dec = decrease_error_of(new_step, value, slope, state.value_init, state.slope_init)
        curv = curvature_error_of(slope, state.slope_init)
        error = jnp.maximum(dec, curv)
        safe_step, safe_value, safe_grad = tree_where(
            dec <= tol, [new_step, value, grad],
            [state.safe_stepsize, state.safe_value, state.safe_grad])
        high_to_new = (dec > 0.0) | (value >= state.value) & (k > 0)
        low_to_new = (slope >= 0.0) & ~high_to_new
        prev = [state.stepsize, state.value, state.slope]
        new = [new_step, value, slope]
        low, value_low, slope_low, high, value_high, slope_high = tree_where(
            low_to_new, new + prev, prev + new)
        found = high_to_new | low_to_new | (error <= tol)
        done = (error <= tol) | max_reached & ~found
        failed = (k + 1 >= max_linesearch_steps) & ~done
        out = ZoomLinesearchState(
            safe_increment(k), state.params, state.updates, state.stepsize_guess, new_step,
            value, grad, slope, state.value_init, state.slope_init, dec, curv, error,
            jnp.asarray(found), jnp.asarray(done), jnp.asarray(failed), low, value_low,
            slope_low, high, value_high, slope_high, low, value_low, safe_step, safe_value,
            safe_grad)
        return tree_cast_like(out, state)

    def zoom_into_interval(state, value_and_grad_fn, kwargs):
        s = state
        delta = jnp.abs(s.high - s.low)
        left, right = jnp.minimum(s.high, s.low), jnp.maximum(s.high, s.low)
        cubic = _cubicmin(s.low, s.value_low, s.slope_low, s.high, s.value_high, s.cubic_ref,
                          s.value_cubic_ref)
        use_cubic = (cubic > left + 0.2 * delta) & (cubic < right - 0.2 * delta)
        quad = _quadmin(s.low, s.value_low, s.slope_low, s.high, s.value_high)
        use_quad = ~use_cubic & (quad > left + 0.1 * delta) & (quad < right - 0.1 * delta)
        middle = jnp.where(use_cubic, cubic, s.cubic_ref)
        middle = jnp.where(use_quad, quad, middle)
        middle = jnp.where(~use_cubic & ~use_quad, (s.low + s.high) / 2.0, middle)
        value, grad, slope = on_line(value_and_grad_fn, s.params, middle, s.updates, kwargs)
        dec = decrease_error_of(middle, value, slope, s.value_init, s.slope_init)
        curv = curvature_error_of(slope, s.slope_init)
        error = jnp.maximum(dec, curv)
        safe_step, safe_value, safe_grad = tree_where(
            (dec <= tol) & (value < s.safe_value), [middle, value, grad],
            [s.safe_stepsize, s.safe_value, s.safe_grad])
        done = error <= tol
        high_to_middle = (dec > 0.0) | (value >= s.value_low)
        high_to_low = (slope * (s.high - s.low) >= 0.0) & ~high_to_middle
        low_to_middle = ~high_to_middle
        mid, lo, hi = [middle, value, slope], [s.low, s.value_low, s.slope_low], [
            s.high, s.value_high, s.slope_high]
        new_high = tree_where(high_to_low, lo, tree_where(high_to_middle, mid, hi))
        new_low = tree_where(low_to_middle, mid, lo)
        cubic_ref, value_cubic_ref = tree_where(high_to_middle | high_to_low,
                                                [s.high, s.value_high], [s.low, s.value_low])
        presumably_failed = (s.count + 1 >= max_linesearch_steps) | (
            (delta <= interval_threshold) & (safe_step > 0.0))
        out = ZoomLinesearchState(
            safe_increment(s.count), s.params, s.updates, s.stepsize_guess, middle, value,
            grad, slope, s.value_init, s.slope_init, dec, curv, error, s.interval_found, done,
            presumably_failed & ~done, *new_low, *new_high, cubic_ref, value_cubic_ref,
            safe_step, safe_value, safe_grad)
        return tree_cast_like(out, s)

    def init(updates, params, *, value, grad, prev_stepsize=1.0,
             initial_guess_strategy: str = "one"):
        dtype = _value_dtype(params)
        if initial_guess_strategy == "one":
            guess = jnp.asarray(1.0, dtype)
        elif initial_guess_strategy == "keep":
            guess = jnp.asarray(prev_stepsize).astype(dtype)
        else:
            raise ValueError(f"unknown initial_guess_strategy {initial_guess_strategy!r}: "
                             "'one' or 'keep'")
        value = jnp.asarray(value).astype(dtype)
        slope = _slope(updates, grad).astype(dtype)
        zero, inf = jnp.asarray(0.0, dtype), jnp.asarray(jnp.inf, dtype)
        false = jnp.asarray(False)
        return ZoomLinesearchState(
            jnp.asarray(0), params, updates, guess, zero, value, grad, slope, value, slope,
            inf, inf, inf, false, false, false, zero, value, slope, zero, value, slope, zero,
            value, zero, value, grad)

    def step(state, *, value_and_grad_fn, fn_kwargs):
        new = cond(state.interval_found,
                   lambda s: zoom_into_interval(s, value_and_grad_fn, fn_kwargs),
                   lambda s: search_interval(s, value_and_grad_fn, fn_kwargs), state)
        new = cond(new.failed, try_safe_step, lambda s: s, new)
        return tree_cast_like(new, state)

    def keep_going(state):
        return ~(state.done | state.failed)
    return init, step, keep_going


class ZoomLinesearchInfo(NamedTuple):
    """``scale_by_zoom_linesearch``'s diagnostics.

    >>> ZoomLinesearchInfo._fields
    ('num_linesearch_steps', 'decrease_error', 'curvature_error')
    """
    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    """``scale_by_zoom_linesearch``'s state.

    >>> ScaleByZoomLinesearchState._fields
    ('learning_rate', 'value', 'grad', 'info')
    """
    learning_rate: Any
    value: Any
    grad: Any
    info: ZoomLinesearchInfo


def scale_by_zoom_linesearch(
        max_linesearch_steps: int, max_learning_rate=None, tol: float = 0.0,
        increase_factor: float = 2.0, slope_rtol: float = 1e-4, curv_rtol: float = 0.9,
        approx_dec_rtol: float | None = 1e-6, stepsize_precision: float = 1e-5,
        initial_guess_strategy: str = "keep",
        verbose: bool = False) -> GradientTransformationExtraArgs:
    """Scale the update direction by a step size meeting the strong Wolfe conditions, found
    by the zoom line search. The state keeps the value and gradient at the new point, which
    :func:`value_and_grad_from_state` reuses.

    >>> f = lambda x: jnp.sum((x - 1.0) ** 2)
    >>> opt = chain(sgd(1.0), scale_by_zoom_linesearch(max_linesearch_steps=15))
    >>> x = jnp.zeros(2)
    >>> state = opt.init(x)
    >>> value, grad = fnx.value_and_grad(f)(x)
    >>> updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=f)
    >>> apply_updates(x, updates)
    Array([1., 1.], dtype=float32)
    """
    init_ls, step_ls, keep_going = zoom_linesearch(
        max_linesearch_steps, max_learning_rate, tol, increase_factor, slope_rtol, curv_rtol,
        approx_dec_rtol, stepsize_precision, verbose)

    def init(params):
        dtype = _value_dtype(params)
        inf = jnp.asarray(jnp.inf, dtype)
        return ScaleByZoomLinesearchState(jnp.asarray(1.0, dtype), inf, tree_zeros_like(params),
                                          ZoomLinesearchInfo(jnp.asarray(0), inf, inf))

    def update(updates, state, params, *, value, grad, value_fn, **extra_args):
        kwargs = _split_kwargs(value_fn, extra_args, "scale_by_zoom_linesearch")
        start = init_ls(updates, params, value=value, grad=grad,
                        prev_stepsize=state.learning_rate,
                        initial_guess_strategy=initial_guess_strategy)
        final = while_loop(keep_going, lambda s: step_ls(
            s, value_and_grad_fn=value_and_grad(value_fn), fn_kwargs=kwargs), start)
        new_state = ScaleByZoomLinesearchState(
            final.stepsize, final.value, final.grad,
            ZoomLinesearchInfo(final.count, final.decrease_error, final.curvature_error))
        return tree_scale(final.stepsize, updates), tree_cast_like(new_state, state)
    return GradientTransformationExtraArgs(init, update)


def value_and_grad_from_state(value_fn: Callable) -> Callable:
    """``value_and_grad(value_fn)`` that reuses the value and gradient a line search left in
    ``state`` (computing them only when the state holds none, at the first step). Call it as
    ``value_and_grad(params, *args, state=opt_state, **kwargs)``.

    >>> f = lambda x: jnp.sum(x ** 2)
    >>> opt = lbfgs()
    >>> x = jnp.array([1.0, 2.0])
    >>> state = opt.init(x)
    >>> value, grad = value_and_grad_from_state(f)(x, state=state)
    >>> value
    Array(5., dtype=float32)
    """
    def from_state(params, *fn_args, state, **fn_kwargs):
        value, grad = tree_get(state, "value"), tree_get(state, "grad")
        if value is None or grad is None:
            raise ValueError("value_and_grad_from_state: the optimizer state holds no 'value' "
                             "and 'grad' (chain a line search that stores them)")
        fresh = ~jnp.isinf(value) & ~jnp.isnan(value)
        return cond(fresh, lambda p, a, kw: (value, grad),
                    lambda p, a, kw: value_and_grad(value_fn)(p, *a, **kw),
                    params, fn_args, fn_kwargs)
    return from_state

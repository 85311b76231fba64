"""jax.lax's implicitly differentiated solvers, ``custom_root`` and ``custom_linear_solve``.

The solver runs without being differentiated; derivatives come from the implicit function
theorem through Newton corrections whose value is zero: ``x + (c - stop_gradient(c))`` with
``c = -J(x)⁻¹ f(x)``. One correction gives the first derivative; Newton's method doubles the
order of accuracy per step, so two give derivatives up to third order. Forward and reverse mode
both work without new primitives, and the values closed over by ``f`` or ``matvec`` get their
derivatives. The tangent solvers are
differentiated in their right-hand side, so they must be built of differentiable operations
(a ``while_loop`` solver works in forward mode only).

>>> def sqrt(y):
...     f = lambda x: x ** 2 - y
...     newton = lambda f, x0: lax.fori_loop(0, 20, lambda i, x: x - f(x) / (2 * x), x0)
...     return lax.custom_root(f, 1.0, newton, lambda g, r: r / g(1.0))
>>> fnx.grad(sqrt)(4.0)      # 1 / (2 sqrt(4))
Array(0.25, dtype=float32, weak_type=True)
"""
from __future__ import annotations

from ..core.api import jvp, stop_gradient
from ..core.pytree import tree_map

_NEWTON_STEPS = 2       # derivatives exact to third order


def _zero_valued(correction):
    """``correction - stop_gradient(correction)``: zero, with ``correction``'s derivative."""
    return tree_map(lambda c: c - stop_gradient(c), correction)


def _add(x, y):
    return tree_map(lambda a, b: a + b, x, y)


def _split_aux(out, has_aux):
    return out if has_aux else (out, None)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """The root ``x`` of ``f`` found by ``solve(f, initial_guess)``, differentiated implicitly:
    ``tangent_solve(g, y)`` must solve the linear ``g(x) = y`` (``g`` is ``f``'s Jacobian at
    the root). With ``has_aux``, ``solve`` returns ``(root, aux)`` and aux is not
    differentiated.

    >>> lax.custom_root(lambda x: x - 3.0, 0.0, lambda f, x0: x0 - f(x0),
    ...                 lambda g, y: y / g(1.0))
    Array(3., dtype=float32, weak_type=True)
    """
    root, aux = _split_aux(solve(f, stop_gradient(initial_guess)), has_aux)
    out = stop_gradient(root)
    for _ in range(_NEWTON_STEPS):
        x = out

        def jacobian(t, x=x):
            return jvp(f, (x,), (t,))[1]
        # x(θ) solves f(x, θ) = 0, so dx = -J⁻¹ ∂f/∂θ dθ: the derivative of -J⁻¹ f(x, θ)
        out = _add(x, _zero_valued(tree_map(lambda c: -c, tangent_solve(jacobian, f(x)))))
    return (out, tree_map(stop_gradient, aux)) if has_aux else out


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """``x`` with ``matvec(x) = b``, found by ``solve(matvec, b)`` and differentiated
    implicitly in ``b`` and in the values ``matvec`` closes over (``transpose_solve`` and
    ``symmetric`` are accepted for JAX's signature; fnx differentiates ``solve`` in its
    right-hand side instead).

    >>> a = jnp.array([[2.0, 0.0], [0.0, 4.0]])
    >>> lax.custom_linear_solve(lambda x: a @ x, jnp.array([2.0, 2.0]),
    ...                         lambda mv, b: b / jnp.diag(a))
    Array([1. , 0.5], dtype=float32)
    """
    x, aux = _split_aux(solve(matvec, stop_gradient(b)), has_aux)
    out = stop_gradient(x)
    for _ in range(_NEWTON_STEPS):
        # A(θ) x = b: dx = A⁻¹ (db - dA x), the derivative of A⁻¹ (b - A(θ) x)
        residual = tree_map(lambda bi, ai: bi - ai, b, matvec(out))
        out = _add(out, _zero_valued(_split_aux(solve(matvec, residual), has_aux)[0]))
    return (out, tree_map(stop_gradient, aux)) if has_aux else out

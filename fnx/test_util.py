"""Testing helpers: numerical gradient checks in float64 (complex128 for complex values), as
JAX's ``check_grads``.

Complex values pair with their cotangents bilinearly, ``<ct, t> = Re(sum(ct * t))``, the pairing
fnx's (and JAX's) transpose rules are written for."""
from __future__ import annotations

import numpy as np

from .core.api import jvp, vjp
from .core.jaxpr import subjaxprs
from .core.pytree import tree_flatten, tree_map


def _wide(x):
    """``x`` as a float64 array, or complex128 if it is complex."""
    x = np.asarray(x)
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _f64(tree):
    return tree_map(_wide, tree)


def _random_like(tree, rng):
    def draw(x):
        r = rng.standard_normal(np.shape(x))
        if np.iscomplexobj(np.asarray(x)):
            r = r + 1j * rng.standard_normal(np.shape(x))
        return r
    return tree_map(draw, tree)


def _inner(a, b):
    la, lb = tree_flatten(a)[0], tree_flatten(b)[0]
    return sum(float(np.real(np.sum(_wide(x) * _wide(y)))) for x, y in zip(la, lb))


def _add(tree, direction, eps):
    return tree_map(lambda x, d: x + eps * d, tree, direction)


def _numerical_jvp(f, args, tangents, eps):
    plus = f(*_add(args, tangents, eps))
    minus = f(*_add(args, tangents, -eps))
    return tree_map(lambda p, m: (_wide(p) - _wide(m)) / (2 * eps), plus, minus)


def _assert_close(actual, expected, atol, rtol, what):
    la, lb = tree_flatten(actual)[0], tree_flatten(expected)[0]
    for a, b in zip(la, lb):
        np.testing.assert_allclose(_wide(a), _wide(b), atol=atol, rtol=rtol, err_msg=what)


def assert_close(actual, expected, rtol=1e-12, atol=1e-12):
    """Assert the same shape and values close in float64.

    >>> assert_close(fnx.numpy.ones(2), [1.0, 1.0])
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(_wide(actual), _wide(expected), rtol=rtol, atol=atol)


def check_jvp(f, args, *, atol=1e-5, rtol=1e-5, eps=1e-6, rng=None):
    """``jvp`` agrees with central finite differences along a random direction.

    >>> with fnx.enable_x64():   # finite differences want float64
    ...     fnx.test_util.check_jvp(jnp.sin, (np.array([0.5, 1.0]),))
    """
    rng = rng or np.random.default_rng(0)
    tangents = _random_like(args, rng)
    _, t_out = jvp(f, tuple(args), tuple(tangents))
    expected = _numerical_jvp(f, args, tangents, eps)
    _assert_close(t_out, expected, atol, rtol, "jvp vs finite differences")


def check_vjp(f, args, *, atol=1e-5, rtol=1e-5, eps=1e-6, rng=None):
    """``<vjp(ct), t> == <ct, jvp(t)>`` and the VJP agrees with finite differences.

    >>> with fnx.enable_x64():
    ...     fnx.test_util.check_vjp(jnp.sin, (np.array([0.5, 1.0]),))
    """
    rng = rng or np.random.default_rng(1)
    tangents = _random_like(args, rng)
    out, pullback = vjp(f, *args)
    ct = _random_like(out, rng)
    ct = tree_map(lambda c, o: np.asarray(c, dtype=np.asarray(o).dtype), ct, out)
    cts_in = pullback(ct)
    numerical = _numerical_jvp(f, args, tangents, eps)
    lhs = _inner(cts_in, tangents)
    rhs = _inner(ct, numerical)
    np.testing.assert_allclose(lhs, rhs, atol=atol * max(1.0, abs(rhs)), rtol=rtol,
                               err_msg="vjp inner product vs finite differences")
    _, t_out = jvp(f, tuple(args), tuple(tangents))
    np.testing.assert_allclose(_inner(ct, t_out), lhs, atol=atol * max(1.0, abs(lhs)), rtol=rtol,
                               err_msg="<ct, jvp(t)> vs <vjp(ct), t>")


def check_grads(f, args, order: int = 2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5,
                eps=1e-6, rng=None):
    """Check ``f``'s derivatives up to ``order`` in float64 (complex128 for complex arguments)
    against finite differences (x64 is on while it runs).

    >>> check_grads(fnx.numpy.sin, (np.float64(0.3),), order=2)
    """
    from .core.config import enable_x64
    with enable_x64():      # float64 needs x64 on, as in JAX's tests
        args = tuple(_f64(a) for a in args)
        rng = rng or np.random.default_rng(0)
        _check(f, args, order, tuple(modes), atol, rtol, eps, rng)


def _check(f, args, order, modes, atol, rtol, eps, rng):
    if "fwd" in modes:
        check_jvp(f, args, atol=atol, rtol=rtol, eps=eps, rng=rng)
    if "rev" in modes:
        check_vjp(f, args, atol=atol, rtol=rtol, eps=eps, rng=rng)
    if order > 1:
        # differentiate the derivative maps themselves
        if "fwd" in modes:
            tangents = _random_like(args, rng)

            def f_jvp(*primals):
                return jvp(f, primals, tangents)[1]
            _check(f_jvp, args, order - 1, modes, atol * 10, rtol * 10, eps, rng)
        if "rev" in modes:
            out = f(*args)
            ct = _random_like(out, rng)
            ct = tree_map(lambda c, o: np.asarray(c, dtype=np.asarray(o).dtype), ct, out)

            def f_vjp(*primals):
                return vjp(f, *primals)[1](ct)
            _check(f_vjp, args, order - 1, modes, atol * 10, rtol * 10, eps, rng)


def primitives_in(jaxpr, acc=None) -> set:
    """The names of the primitives ``jaxpr`` uses, those inside jit calls, loop bodies and
    branches included.

    >>> "sin" in primitives_in(fnx.make_jaxpr(fnx.numpy.sin)(1.0).jaxpr)
    True
    """
    acc = set() if acc is None else acc
    for eqn in jaxpr.eqns:
        acc.add(eqn.primitive.name)
        for sub in subjaxprs(eqn):
            primitives_in(sub, acc)
    return acc

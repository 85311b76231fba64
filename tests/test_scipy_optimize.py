"""fnx.scipy.optimize.minimize (BFGS) against jax.scipy.optimize on the CPU (the same
iterates, counts and status in float32), and fnx.scipy.sparse.linalg's Krylov solvers against
dense solves and jax.scipy.sparse.linalg."""
import jax
import jax.scipy.optimize as jopt
import jax.scipy.sparse.linalg as jsparse
import numpy as np
import pytest
import scipy.optimize

import fnx
import fnx.numpy as jnp
from fnx.scipy import optimize
from fnx.scipy.sparse import linalg as sparse
from fnx.test_util import assert_close

jax.config.update("jax_platforms", "cpu")


def rosenbrock(np_):
    def f(x):
        return np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return f


def quadratic(np_, a, c):
    def f(x, shift):
        return 0.5 * x @ a @ x - c @ x + np_.cos(x[0] - shift)
    return f


def _same_result(res, ref, rtol, hess_tol=None):
    assert type(res).__name__ == "OptimizeResults" and res._fields == ref._fields
    for name in ("success", "status", "nfev", "njev", "nit"):
        assert int(getattr(res, name)) == int(getattr(ref, name)), name
    for name in ("x", "fun", "jac"):
        assert_close(np.asarray(getattr(res, name)), np.asarray(getattr(ref, name)),
                     rtol=rtol, atol=rtol)
    # the last update of the estimate divides by y.s, small near the minimum
    tol = hess_tol or rtol
    assert_close(np.asarray(res.hess_inv), np.asarray(ref.hess_inv), rtol=tol, atol=tol)


def test_minimize_bfgs_matches_jax(rng):
    # float64: the same iterates, counts and status as JAX's (which stops early from some
    # starts, reporting a failed line search: so does fnx)
    for x0 in (np.array([-1.2, 1.0, -0.5, 0.3]), rng.standard_normal(4)):
        res = optimize.minimize(rosenbrock(jnp), x0, method="BFGS")
        with jax.enable_x64(True):
            ref = jopt.minimize(rosenbrock(jax.numpy), x0, method="BFGS")
        assert res.x.dtype == np.float64
        _same_result(res, ref, 1e-7)
    # float32, on a well-conditioned problem with extra args
    m = rng.standard_normal((3, 3))
    a, c = (m @ m.T + 3 * np.eye(3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    x0 = rng.standard_normal(3).astype(np.float32)
    res = optimize.minimize(quadratic(jnp, a, c), x0, args=(0.5,), method="bfgs")
    ref = jopt.minimize(quadratic(jax.numpy, a, c), x0, args=(0.5,), method="BFGS")
    assert bool(res.success) and res.x.dtype == np.float32
    _same_result(res, ref, 1e-4, hess_tol=2e-3)


def test_minimize_float64_options_jit_and_vmap(rng):
    x0 = np.array([-1.2, 1.0, -0.5, 0.3])
    res = optimize.minimize(rosenbrock(jnp), x0)
    ref = scipy.optimize.minimize(rosenbrock(np), x0, method="BFGS")
    assert bool(res.success)
    assert_close(np.asarray(res.x), ref.x, rtol=1e-5, atol=1e-5)
    capped = optimize.minimize(rosenbrock(jnp), x0, options={"maxiter": 3})
    assert int(capped.nit) == 3 and int(capped.status) == 1 and not bool(capped.success)
    # tol is SciPy's gtol
    loose = optimize.minimize(rosenbrock(jnp), x0, tol=1e-1)
    assert int(loose.nit) < int(res.nit) and bool(loose.success)
    x32 = x0.astype(np.float32)
    jitted = fnx.jit(lambda x: optimize.minimize(rosenbrock(jnp), x, method="BFGS"))(x32)
    eager = optimize.minimize(rosenbrock(jnp), x32, method="BFGS")
    assert_close(np.asarray(jitted.x), np.asarray(eager.x), rtol=1e-6, atol=1e-6)
    starts = np.stack([x0, 0.5 * x0, rng.standard_normal(4)])
    xs = fnx.vmap(lambda x: optimize.minimize(rosenbrock(jnp), x, method="BFGS").x)(starts)
    ref = [optimize.minimize(rosenbrock(jnp), x, method="BFGS").x for x in starts]
    assert_close(np.asarray(xs), np.stack([np.asarray(x) for x in ref]), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="Nelder"):
        optimize.minimize(rosenbrock(jnp), x0, method="Nelder-Mead")
    with pytest.raises(TypeError, match="tuple"):
        optimize.minimize(quadratic(jnp, np.eye(4), np.ones(4)), x0, args=0.5)


def _systems(rng, n=12):
    a = rng.standard_normal((n, n)) + 2 * np.sqrt(n) * np.eye(n)
    s = a @ a.T / n + np.eye(n)
    return a, s, rng.standard_normal(n)


@pytest.mark.parametrize("solver", ["cg", "gmres", "bicgstab"])
def test_sparse_solvers_against_dense_and_jax(rng, solver):
    a, s, b = _systems(rng)
    m = s if solver == "cg" else a
    fn, ref_fn = getattr(sparse, solver), getattr(jsparse, solver)
    x, info = fn(m, b, tol=1e-12)
    assert_close(np.asarray(x), np.linalg.solve(m, b), rtol=1e-9, atol=1e-9)
    x, info = fn(lambda v: jnp.asarray(m) @ v, b, x0=b, tol=1e-12, atol=0.0)
    assert_close(np.asarray(x), np.linalg.solve(m, b), rtol=1e-9, atol=1e-9)
    m32, b32 = m.astype(np.float32), b.astype(np.float32)
    x, _ = fnx.jit(lambda m, b: fn(lambda v: m @ v, b, tol=1e-6))(m32, b32)
    ref, _ = ref_fn(lambda v: m32 @ v, b32, tol=1e-6)
    assert x.dtype == np.float32
    assert_close(np.asarray(x), np.asarray(ref), rtol=1e-4, atol=1e-4)
    # a pytree right-hand side, and a (Jacobi) preconditioner
    tree = {"u": b[:5], "w": b[5:].reshape(7, 1)}

    def op(t):
        y = jnp.asarray(m) @ jnp.concatenate([t["u"], t["w"][:, 0]])
        return {"u": y[:5], "w": y[5:, None]}
    inv_diag = 1.0 / np.diag(m)
    pre = lambda t: {"u": t["u"] * inv_diag[:5], "w": t["w"] * inv_diag[5:, None]}  # noqa
    x, _ = fn(op, tree, tol=1e-12, M=pre)
    flat = np.concatenate([np.asarray(x["u"]), np.asarray(x["w"])[:, 0]])
    assert_close(flat, np.linalg.solve(m, b), rtol=1e-9, atol=1e-9)


def test_gmres_restarts_breakdown_and_info(rng):
    a, _, b = _systems(rng, 20)
    x, info = sparse.gmres(a, b, restart=3, tol=1e-12)
    assert_close(np.asarray(x), np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
    assert int(info) == 0
    x, info = sparse.gmres(np.eye(20), b)       # the Krylov space is exhausted at once
    assert_close(np.asarray(x), b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="solve_method"):
        sparse.gmres(a, b, solve_method="qr")

"""fnx.experimental.ode.odeint against JAX's on the CPU (the same Dormand-Prince steps, so the
same values to float32 rounding), and its adjoint-method gradients against finite differences."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.experimental.ode import odeint

jax = pytest.importorskip("jax")
from jax.experimental.ode import odeint as jax_odeint  # noqa: E402


def pendulum(state, t, length):
    theta, omega = state["theta"], state["omega"]
    return {"theta": omega, "omega": -9.81 / length * jnp.sin(theta) - 0.1 * omega + 0.01 * t}


def jax_pendulum(state, t, length):
    import jax.numpy as jjnp
    theta, omega = state["theta"], state["omega"]
    return {"theta": omega, "omega": -9.81 / length * jjnp.sin(theta) - 0.1 * omega + 0.01 * t}


def test_odeint_matches_jax_on_a_pytree_state(rng, jax_x64_as_fnx):
    y0 = {"theta": rng.uniform(0.1, 1.0, 3), "omega": rng.uniform(-1, 1, 3)}
    ts = np.linspace(0.0, 2.0, 7)
    length = rng.uniform(0.5, 2.0)
    got = odeint(pendulum, y0, ts, length, rtol=1e-7, atol=1e-7)
    want = jax_odeint(jax_pendulum, y0, ts, length, rtol=1e-7, atol=1e-7)
    for key in y0:
        assert got[key].shape == (7, 3)
        np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=1e-9)


def test_odeint_gradients_match_finite_differences(rng):
    y0, ts, k = rng.uniform(0.5, 1.0, 2), np.array([0.0, 0.4, 1.0]), rng.uniform(0.5, 2.0)

    def field(y, t, k):
        return jnp.stack([y[1], -k * y[0] - 0.2 * y[1] * t])

    def loss(y0, ts, k):
        return jnp.sum(odeint(field, y0, ts, k, rtol=1e-10, atol=1e-10) ** 2)
    grads = fnx.grad(loss, argnums=(0, 1, 2))(y0, ts, k)
    # central differences along a random direction of each argument (custom_vjp: no jvp)
    eps = 1e-5
    for i, (arg, grad) in enumerate(zip((y0, ts, k), grads)):
        d = rng.standard_normal(np.shape(arg))
        args_up = [y0, ts, k]
        args_dn = [y0, ts, k]
        args_up[i], args_dn[i] = arg + eps * d, arg - eps * d
        fd = (loss(*args_up) - loss(*args_dn)) / (2 * eps)
        np.testing.assert_allclose(np.sum(np.asarray(grad) * d), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.x32
def test_odeint_vmaps_over_a_closed_over_parameter(jax_x64_as_fnx):
    ks, ts = np.array([1.0, 4.0], np.float32), np.linspace(0.0, 3.0, 4).astype(np.float32)

    def solve(odeint, jnp):
        return lambda k: odeint(lambda y, t: jnp.stack([y[1], -k * y[0]]), jnp.ones(2), ts)
    import jax.numpy as jjnp
    got = fnx.vmap(solve(odeint, jnp))(ks)
    want = jax.vmap(solve(jax_odeint, jjnp))(ks)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_odeint_refuses_integer_times():
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(lambda y, t: -y, jnp.ones(2), np.arange(3))

"""ODE integration: RK4 by lax.scan, and Dormand-Prince by jax.experimental.ode.odeint, its gradient
(the adjoint method) and its vmap over a parameter the vector field closes over."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental.ode import odeint

def lotka_volterra(y, t, alpha, beta, delta, gamma):
    prey, pred = y
    return jnp.array([alpha * prey - beta * prey * pred, delta * prey * pred - gamma * pred])

def rk4_step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt / 2 * k1, t + dt / 2, *args)
    k3 = f(y + dt / 2 * k2, t + dt / 2, *args)
    k4 = f(y + dt * k3, t + dt, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

def rk4_integrate(f, y0, ts, *args):
    def step(y, t_pair):
        t0, t1 = t_pair
        y = rk4_step(f, y, t0, t1 - t0, *args)
        return y, y
    _, ys = lax.scan(step, y0, (ts[:-1], ts[1:]))
    return jnp.concatenate([y0[None], ys])

ts = jnp.linspace(0.0, 5.0, 51)
y0 = jnp.array([1.0, 0.5])
params = (1.1, 0.4, 0.1, 0.4)
ys_rk4 = jax.jit(rk4_integrate, static_argnums=0)(lotka_volterra, y0, ts, *params)
ys_dp = odeint(lotka_volterra, y0, ts, *params, rtol=1e-6, atol=1e-6)

def loss(params):
    ys = odeint(lotka_volterra, y0, ts, *params)
    return jnp.sum(ys[-1] ** 2)
g = jax.grad(loss)(params)
g_rk4 = jax.grad(lambda p: jnp.sum(rk4_integrate(lotka_volterra, y0, ts, *p)[-1] ** 2))(params)

def damped(y, t, k):
    return jnp.stack([y[1], -k * y[0] - 0.1 * y[1]])
batched = jax.vmap(lambda k: odeint(damped, jnp.array([1.0, 0.0]), ts, k))(jnp.array([1.0, 2.0, 4.0]))
TOLERANCE = 1e-3
RESULT = dict(rk4=ys_rk4, dp=ys_dp, g=g, g_rk4=g_rk4, batched=batched)

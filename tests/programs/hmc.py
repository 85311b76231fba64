"""Hamiltonian Monte Carlo on a banana-shaped density: leapfrog steps in lax.fori_loop, grad of the
log density, a Metropolis accept through lax.cond(operand=...), chains by lax.scan and vmap."""
import jax
import jax.numpy as jnp
from jax import lax, random
from functools import partial

def log_density(theta):
    # banana-shaped 2-d density plus a Gaussian prior
    x, y = theta[0], theta[1]
    return -0.5 * (x ** 2 / 4.0 + (y - 0.5 * x ** 2) ** 2) - 0.01 * jnp.sum(theta ** 2)

def leapfrog(theta, p, step_size, n_steps):
    grad_fn = jax.grad(log_density)
    p = p + 0.5 * step_size * grad_fn(theta)
    def body(i, state):
        theta, p = state
        theta = theta + step_size * p
        p = p + step_size * grad_fn(theta)
        return theta, p
    theta, p = lax.fori_loop(0, n_steps - 1, body, (theta, p))
    theta = theta + step_size * p
    p = p + 0.5 * step_size * grad_fn(theta)
    return theta, -p

@partial(jax.jit, static_argnames=("n_steps",))
def hmc_step(key, theta, step_size, n_steps=10):
    k_mom, k_acc = random.split(key)
    p0 = random.normal(k_mom, theta.shape)
    theta_new, p_new = leapfrog(theta, p0, step_size, n_steps)
    h0 = -log_density(theta) + 0.5 * jnp.sum(p0 ** 2)
    h1 = -log_density(theta_new) + 0.5 * jnp.sum(p_new ** 2)
    log_accept = jnp.minimum(0.0, h0 - h1)
    accept = jnp.log(random.uniform(k_acc)) < log_accept
    theta = lax.cond(accept, lambda _: theta_new, lambda _: theta, operand=None)
    return theta, jnp.exp(log_accept)

def sample(key, theta0, n_samples, step_size):
    def one(carry, key):
        theta, = carry
        theta, acc = hmc_step(key, theta, step_size)
        return (theta,), (theta, acc)
    keys = random.split(key, n_samples)
    _, (thetas, accs) = lax.scan(one, (theta0,), keys)
    return thetas, accs

thetas, accs = jax.jit(sample, static_argnums=2)(random.PRNGKey(0), jnp.zeros(2), 50, 0.2)
# several chains with vmap
chains, chain_accs = jax.vmap(lambda k: sample(k, jnp.ones(2), 20, 0.1))(random.split(random.PRNGKey(1), 3))
RESULT = dict(thetas=thetas, accs=accs, mean=thetas.mean(0), chains=chains, chain_accs=chain_accs)

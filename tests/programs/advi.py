"""JAX's examples/advi.py: variational inference on a funnel density (vmap over random keys,
scipy.stats.norm, jit with static callables); no plotting."""
from functools import partial
from jax import jit, grad, vmap
from jax import random
from jax.example_libraries import optimizers
import jax.numpy as jnp
import jax.scipy.stats.norm as norm

def diag_gaussian_sample(rng, mean, log_std):
    return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)

def diag_gaussian_logpdf(x, mean, log_std):
    return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))

def elbo(logprob, rng, mean, log_std):
    sample = diag_gaussian_sample(rng, mean, log_std)
    return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)

def batch_elbo(logprob, rng, params, num_samples):
    rngs = random.split(rng, num_samples)
    vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
    return jnp.mean(vectorized_elbo(rngs, *params))

@jit(static_argnums=(0, 1, 2, 4))
def _mesh_eval(func, x_limits, y_limits, params, num_ticks):
    x = jnp.linspace(*x_limits, num=num_ticks)
    y = jnp.linspace(*y_limits, num=num_ticks)
    X, Y = jnp.meshgrid(x, y)
    xy_vec = jnp.stack([X.ravel(), Y.ravel()]).T
    zs = vmap(func, in_axes=(0, None))(xy_vec, params)
    return X, Y, zs.reshape(X.shape)

def mesh_eval(func, x_limits, y_limits, params, num_ticks=11):
    return _mesh_eval(func, x_limits, y_limits, params, num_ticks)

def funnel_log_density(params):
    return norm.logpdf(params[0], 0, jnp.exp(params[1])) + \
           norm.logpdf(params[1], 0, 1.35)

TOLERANCE = 2e-3   # twenty momentum steps amplify float32 rounding
num_samples = 40
@jit
def objective(params, t):
    rng = random.key(t)
    return -batch_elbo(funnel_log_density, rng, params, num_samples)

x_limits = (-2, 2)
y_limits = (-4, 2)
target_dist = lambda x, _: jnp.exp(funnel_log_density(x))
approx_dist = lambda x, params: jnp.exp(diag_gaussian_logpdf(x, *params))
D = 2
init_mean = jnp.zeros(D)
init_std  = jnp.zeros(D)
init_params = (init_mean, init_std)
opt_init, opt_update, get_params = optimizers.momentum(step_size=0.1, mass=0.9)
opt_state = opt_init(init_params)

@jit
def update(i, opt_state):
    params = get_params(opt_state)
    gradient = grad(objective)(params, i)
    return opt_update(i, gradient, opt_state)

bounds = []
for t in range(20):
    opt_state = update(t, opt_state)
    params = get_params(opt_state)
    bounds.append(objective(params, t))
X, Y, Z = mesh_eval(target_dist, x_limits, y_limits, 1)
X2, Y2, Z2 = mesh_eval(approx_dist, x_limits, y_limits, params)
rngs = random.split(random.key(3), num_samples)
samples = vmap(diag_gaussian_sample, in_axes=(0, None, None))(rngs, *params)
RESULT = dict(bounds=jnp.stack(bounds), Z=Z, Z2=Z2, X=X, samples=samples, params=params)

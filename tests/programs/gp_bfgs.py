"""Gaussian-process regression: the marginal likelihood by Cholesky, its hyperparameters fitted by
jax.scipy.optimize.minimize (BFGS) over ravel_pytree, predictions by cho_solve, a Hessian-vector
product and scipy.stats densities."""
import jax
import jax.numpy as jnp
from jax import random
from jax.scipy.optimize import minimize
from jax.scipy.linalg import cho_factor, cho_solve
import jax.scipy.stats as stats
from jax.flatten_util import ravel_pytree
import numpy as np

def rbf(x1, x2, log_ls, log_amp):
    d = (x1[:, None, :] - x2[None, :, :]) / jnp.exp(log_ls)
    return jnp.exp(2 * log_amp) * jnp.exp(-0.5 * jnp.sum(d ** 2, -1))

def neg_log_marginal(params, x, y):
    K = rbf(x, x, params["log_ls"], params["log_amp"]) + (jnp.exp(2 * params["log_noise"]) + 1e-6) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    alpha = cho_solve((L, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)

rng = np.random.default_rng(0)
x = np.sort(rng.uniform(-3, 3, (20, 1)), axis=0).astype(np.float32)
y = (np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(20)).astype(np.float32)
params0 = {"log_ls": jnp.array([0.0]), "log_amp": jnp.array(0.0), "log_noise": jnp.array(-1.0)}
flat0, unravel = ravel_pytree(params0)
obj = jax.jit(lambda p: neg_log_marginal(unravel(p), x, y))
res = minimize(obj, flat0, method="BFGS", options={"maxiter": 50})
params = unravel(res.x)

xs = jnp.linspace(-3, 3, 7)[:, None]
K = rbf(x, x, params["log_ls"], params["log_amp"]) + jnp.exp(2 * params["log_noise"]) * jnp.eye(20)
cf = cho_factor(K, lower=True)
Ks = rbf(xs, x, params["log_ls"], params["log_amp"])
mean = Ks @ cho_solve(cf, y)
var = jnp.exp(2 * params["log_amp"]) - jnp.sum(Ks * cho_solve(cf, Ks.T).T, axis=1)
lp = stats.norm.logpdf(y, loc=0.0, scale=1.0).sum()
mvn = stats.multivariate_normal.logpdf(y, jnp.zeros(20), K)
hvp = jax.jvp(jax.grad(obj), (flat0,), (jnp.ones_like(flat0),))[1]
TOLERANCE = 2e-3
RESULT = dict(fun=res.fun, x=res.x, success=res.success, mean=mean, var=var, lp=lp, mvn=mvn,
              hvp=hvp, nit=res.nit > 0)

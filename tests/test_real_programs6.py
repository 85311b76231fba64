"""More real JAX programs, each run twice: by JAX on the CPU and by fnx with only its imports
changed (as a user ports it). They are JAX's documentation notebooks (MAML, autobatched log
densities, generalized convolutions, score matching) and public programs in plain JAX (a
Kalman filter by lax.scan, Lennard-Jones molecular dynamics, SVGD for Bayesian logistic
regression, two Sinkhorn solvers), shortened to run in seconds: fewer steps, smaller sizes, no
plotting, and the seed ``SEED`` drawn fresh for each run. Each leaves its results in ``RESULT``;
both runs must give the same values, shapes and dtypes."""
import warnings

import numpy as np
import pytest

import test_real_programs
from test_real_programs import _leaves, ported

pytest.importorskip("jax")
pytest.importorskip("optax")

pytestmark = pytest.mark.x32
# JAX's executables kept between runs, as for the other real programs
_jax_compilation_cache = test_real_programs._jax_compilation_cache

PROGRAMS = {}

# JAX docs, docs/notebooks/maml.md ("MAML Tutorial with JAX", Eric Jang): gradients of
# gradients, sinusoid regression with stax and optimizers.adam, MAML through tree_map of an
# inner SGD step, and MAML batched over tasks by vmap. (The notebook's tree_multimap, since
# removed from JAX, is tree_map.)
PROGRAMS["maml"] = '''
import numpy as np
import jax.numpy as jnp
from jax import grad
from jax import vmap
from functools import partial
from jax import jit
from jax import random
from jax.example_libraries import stax
from jax.example_libraries.stax import Conv, Dense, MaxPool, Relu, Flatten, LogSoftmax
from jax.example_libraries import optimizers
from jax.tree_util import tree_map

np.random.seed(SEED)
out = {}
f = lambda x : jnp.exp(x)
g = lambda x : jnp.square(x)
out["grads"] = [grad(f)(1.), grad(grad(f))(1.), grad(grad(grad(f)))(1.),
                grad(g)(2.), grad(grad(g))(2.), grad(grad(grad(g)))(2.)]

net_init, net_apply = stax.serial(
    Dense(40), Relu,
    Dense(40), Relu,
    Dense(1)
)
rng = random.PRNGKey(SEED)
in_shape = (-1, 1,)
out_shape, net_params = net_init(rng, in_shape)

def loss(params, inputs, targets):
    # Computes average loss for the batch
    predictions = net_apply(params, inputs)
    return jnp.mean((targets - predictions)**2)

xrange_inputs = jnp.linspace(-5,5,100).reshape((100, 1)) # (k, 1)
targets = jnp.sin(xrange_inputs)
predictions = vmap(partial(net_apply, net_params))(xrange_inputs)
losses = vmap(partial(loss, net_params))(xrange_inputs, targets) # per-input loss
out["initial"] = [predictions, losses]

opt_init, opt_update, get_params = optimizers.adam(step_size=1e-2)
opt_state = opt_init(net_params)

@jit
def step(i, opt_state, x1, y1):
    p = get_params(opt_state)
    g = grad(loss)(p, x1, y1)
    return opt_update(i, g, opt_state)

for i in range(20):
    opt_state = step(i, opt_state, xrange_inputs, targets)
net_params = get_params(opt_state)
out["fitted"] = vmap(partial(loss, net_params))(xrange_inputs, targets)

g = lambda x, y : jnp.square(x) + y
x0 = 2.
y0 = 1.
def maml_objective(x, y):
    return g(x - grad(g)(x, y), y)
out["toy"] = [grad(g)(x0, y0), x0 - grad(g)(x0, y0), maml_objective(x0, y0),
              x0 - grad(maml_objective)(x0, y0)]

alpha = .1
def inner_update(p, x1, y1):
    grads = grad(loss)(p, x1, y1)
    inner_sgd_fn = lambda g, state: (state - alpha*g)
    return tree_map(inner_sgd_fn, grads, p)

def maml_loss(p, x1, y1, x2, y2):
    p2 = inner_update(p, x1, y1)
    return loss(p2, x2, y2)

x1 = xrange_inputs
y1 = targets
x2 = jnp.array([0.])
y2 = jnp.array([0.])
out["maml_loss"] = maml_loss(net_params, x1, y1, x2, y2)

opt_init, opt_update, get_params = optimizers.adam(step_size=1e-3)
out_shape, net_params = net_init(rng, in_shape)
opt_state = opt_init(net_params)

@jit
def step(i, opt_state, x1, y1, x2, y2):
    p = get_params(opt_state)
    g = grad(maml_loss)(p, x1, y1, x2, y2)
    l = maml_loss(p, x1, y1, x2, y2)
    return opt_update(i, g, opt_state), l
K=20

np_maml_loss = []
for i in range(8):
    A = np.random.uniform(low=0.1, high=.5)
    phase = np.random.uniform(low=0., high=jnp.pi)
    x1 = np.random.uniform(low=-5., high=5., size=(K,1))
    y1 = A * np.sin(x1 + phase)
    x2 = np.random.uniform(low=-5., high=5.)
    y2 = A * np.sin(x2 + phase)
    opt_state, l = step(i, opt_state, x1, y1, x2, y2)
    np_maml_loss.append(l)
net_params = get_params(opt_state)
out["maml_losses"] = jnp.array(np_maml_loss)

def sample_tasks(outer_batch_size, inner_batch_size):
    # Select amplitude and phase for the task
    As = []
    phases = []
    for _ in range(outer_batch_size):
        As.append(np.random.uniform(low=0.1, high=.5))
        phases.append(np.random.uniform(low=0., high=jnp.pi))
    def get_batch():
        xs, ys = [], []
        for A, phase in zip(As, phases):
            x = np.random.uniform(low=-5., high=5., size=(inner_batch_size, 1))
            y = A * np.sin(x + phase)
            xs.append(x)
            ys.append(y)
        return jnp.stack(xs), jnp.stack(ys)
    x1, y1 = get_batch()
    x2, y2 = get_batch()
    return x1, y1, x2, y2

opt_init, opt_update, get_params = optimizers.adam(step_size=1e-3)
out_shape, net_params = net_init(rng, in_shape)
opt_state = opt_init(net_params)

def batch_maml_loss(p, x1_b, y1_b, x2_b, y2_b):
    task_losses = vmap(partial(maml_loss, p))(x1_b, y1_b, x2_b, y2_b)
    return jnp.mean(task_losses)

@jit
def step(i, opt_state, x1, y1, x2, y2):
    p = get_params(opt_state)
    g = grad(batch_maml_loss)(p, x1, y1, x2, y2)
    l = batch_maml_loss(p, x1, y1, x2, y2)
    return opt_update(i, g, opt_state), l

np_batched_maml_loss = []
K=20
for i in range(8):
    x1_b, y1_b, x2_b, y2_b = sample_tasks(4, K)
    opt_state, l = step(i, opt_state, x1_b, y1_b, x2_b, y2_b)
    np_batched_maml_loss.append(l)
net_params = get_params(opt_state)
out["batched_maml_losses"] = jnp.array(np_batched_maml_loss)

x1 = np.random.uniform(low=-5., high=5., size=(10,1))
y1 = 1. * np.sin(x1 + 0.)
shots = []
for i in range(1,3):
    net_params = inner_update(net_params, x1, y1)
    shots.append(vmap(partial(net_apply, net_params))(xrange_inputs))
out["shots"] = shots
out["smoothed"] = np.convolve(np_batched_maml_loss, [.05]*4)
RESULT = out
'''

# JAX docs, docs/notebooks/vmapped_log_probs.md ("Autobatching log-densities example"): a
# Bayesian logistic regression log-joint, batched by hand and by vmap, and ADVI by SGD on a
# jitted value_and_grad of the ELBO. (The data's seed and the PRNG key are the run's seed.)
PROGRAMS["vmapped_log_probs"] = '''
import functools
import itertools
import re
import sys
import time

import jax

from jax import lax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import random

import numpy as np
import scipy as sp
import scipy.special

np.random.seed(SEED)

num_features = 10
num_points = 100

true_beta = np.random.randn(num_features).astype(jnp.float32)
all_x = np.random.randn(num_points, num_features).astype(jnp.float32)
y = (np.random.rand(num_points) < sp.special.expit(all_x.dot(true_beta))).astype(jnp.int32)

out = {}

def log_joint(beta):
    result = 0.
    # Note that no `axis` parameter is provided to `jnp.sum`.
    result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.))
    result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
    return result

out["log_joint"] = log_joint(np.random.randn(num_features))

caught = None
try:
  batch_size = 10
  batched_test_beta = np.random.randn(batch_size, num_features)

  log_joint(np.random.randn(batch_size, num_features))
except ValueError as e:
  caught = "ValueError"
out["caught"] = np.array(caught)

def batched_log_joint(beta):
    result = 0.
    result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.),
                           axis=-1)
    result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta.T).T)),
                           axis=-1)
    return result

batch_size = 10
batched_test_beta = np.random.randn(batch_size, num_features)

out["by_hand"] = batched_log_joint(batched_test_beta)
vmap_batched_log_joint = jax.vmap(log_joint)
out["by_vmap"] = vmap_batched_log_joint(batched_test_beta)

@jax.jit
def log_joint(beta):
    result = 0.
    # Note that no `axis` parameter is provided to `jnp.sum`.
    result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=10.))
    result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
    return result

batched_log_joint = jax.jit(jax.vmap(log_joint))

def elbo(beta_loc, beta_log_scale, epsilon):
    beta_sample = beta_loc + jnp.exp(beta_log_scale) * epsilon
    return jnp.mean(batched_log_joint(beta_sample), 0) + jnp.sum(beta_log_scale - 0.5 * np.log(2*np.pi))

elbo = jax.jit(elbo)
elbo_val_and_grad = jax.jit(jax.value_and_grad(elbo, argnums=(0, 1)))

def normal_sample(key, shape):
    """Convenience function for quasi-stateful RNG."""
    new_key, sub_key = random.split(key)
    return new_key, random.normal(sub_key, shape)

normal_sample = jax.jit(normal_sample, static_argnums=(1,))

key = random.PRNGKey(SEED)

beta_loc = jnp.zeros(num_features, jnp.float32)
beta_log_scale = jnp.zeros(num_features, jnp.float32)

step_size = 0.01
batch_size = 128
epsilon_shape = (batch_size, num_features)
elbos = []
for i in range(30):
    key, epsilon = normal_sample(key, epsilon_shape)
    elbo_val, (beta_loc_grad, beta_log_scale_grad) = elbo_val_and_grad(
        beta_loc, beta_log_scale, epsilon)
    beta_loc += step_size * beta_loc_grad
    beta_log_scale += step_size * beta_log_scale_grad
    if i % 10 == 0:
        elbos.append('{}\\t{:.1f}'.format(i, elbo_val))
out["elbo"] = elbo_val
out["posterior"] = [beta_loc, beta_loc + 2*jnp.exp(beta_log_scale), beta_loc - 2*jnp.exp(beta_log_scale)]
RESULT = out
TOLERANCE = 2e-4
'''

# JAX docs, docs/notebooks/convolutions.md ("Generalized Convolutions in JAX"): jnp.convolve,
# jax.scipy.signal.convolve, lax.conv, lax.conv_with_general_padding and conv_general_dilated
# with dimension numbers (strides, atrous and transposed convolutions, 1-D and 3-D). Smaller
# images; a random image stands in for scipy's removed misc.face().
PROGRAMS["convolutions"] = '''
from jax import random
import jax.numpy as jnp
import numpy as np

out = {}
key = random.key(SEED)

x = jnp.linspace(0, 10, 500)
y = jnp.sin(x) + 0.2 * random.normal(key, shape=(500,))

window = jnp.ones(10) / 10
y_smooth = jnp.convolve(y, window, mode='same')
out["smooth_1d"] = y_smooth

import jax.scipy as jsp

image = jnp.array(np.random.default_rng(SEED).uniform(0, 255, (48, 64)))
noisy_image = image + 50 * random.normal(key, image.shape)
x = jnp.linspace(-3, 3, 7)
window = jsp.stats.norm.pdf(x) * jsp.stats.norm.pdf(x[:, None])
smooth_image = jsp.signal.convolve(noisy_image, window, mode='same')
out["smooth_2d"] = smooth_image

# 2D kernel - HWIO layout
kernel = jnp.zeros((3, 3, 3, 3), dtype=jnp.float32)
kernel += jnp.array([[1, 1, 0],
                     [1, 0,-1],
                     [0,-1,-1]])[:, :, jnp.newaxis, jnp.newaxis]

# NHWC layout
img = jnp.zeros((1, 40, 38, 3), dtype=jnp.float32)
for k in range(3):
  x = 6 + 12*k
  y = 4 + 12*k
  img = img.at[0, x:x+5, y:y+5, k].set(1.0)
img = img + 0.1 * random.normal(key, img.shape)

from jax import lax
out["conv"] = lax.conv(jnp.transpose(img,[0,3,1,2]),    # lhs = NCHW image tensor
               jnp.transpose(kernel,[3,2,0,1]), # rhs = OIHW conv kernel tensor
               (1, 1),  # window strides
               'SAME') # padding mode

out["general_padding"] = lax.conv_with_general_padding(
  jnp.transpose(img,[0,3,1,2]),    # lhs = NCHW image tensor
  jnp.transpose(kernel,[2,3,0,1]), # rhs = IOHW conv kernel tensor
  (1, 1),  # window strides
  ((2,2),(2,2)), # general padding 2x2
  (1,1),  # lhs/image dilation
  (1,1))  # rhs/kernel dilation

dn = lax.conv_dimension_numbers(img.shape,     # only ndim matters, not shape
                                kernel.shape,  # only ndim matters, not shape
                                ('NHWC', 'HWIO', 'NHWC'))  # the important bit
out["dn"] = np.array(str(dn))

out["same"] = lax.conv_general_dilated(img, kernel, (1,1), 'SAME', (1,1), (1,1), dn)
out["valid"] = lax.conv_general_dilated(img, kernel, (1,1), 'VALID', (1,1), (1,1), dn)
out["strided"] = lax.conv_general_dilated(img, kernel, (2,2), 'SAME', (1,1), (1,1), dn)
out["atrous"] = lax.conv_general_dilated(img, kernel, (1,1), 'VALID', (1,1), (6,6), dn)
out["lhs_dilated"] = lax.conv_general_dilated(img, kernel, (1,1), ((0, 0), (0, 0)), (2,2),
                                              (1,1), dn)

kernel_rot = jnp.rot90(jnp.rot90(kernel, axes=(0,1)), axes=(0,1))
padding = ((2, 1), (2, 1))
out["transposed"] = lax.conv_general_dilated(img, kernel_rot, (1,1), padding, (2,2), (1,1), dn)

# 1D kernel - WIO layout
kernel = jnp.array([[[1, 0, -1], [-1,  0,  1]],
                    [[1, 1,  1], [-1, -1, -1]]],
                    dtype=jnp.float32).transpose([2,1,0])
# 1D data - NWC layout
data = np.zeros((1, 200, 2), dtype=jnp.float32)
for i in range(2):
  for k in range(2):
      x = 35*i + 30 + 60*k
      data[0, x:x+30, k] = 1.0

dn = lax.conv_dimension_numbers(data.shape, kernel.shape,
                                ('NWC', 'WIO', 'NWC'))
out["dn_1d"] = np.array(str(dn))
out["conv_1d"] = lax.conv_general_dilated(data, kernel, (1,), 'SAME', (1,), (1,), dn)

# Random 3D kernel - HWDIO layout
kernel = jnp.array([
  [[0, 0,  0], [0,  1,  0], [0,  0,   0]],
  [[0, -1, 0], [-1, 0, -1], [0,  -1,  0]],
  [[0, 0,  0], [0,  1,  0], [0,  0,   0]]],
  dtype=jnp.float32)[:, :, :, jnp.newaxis, jnp.newaxis]

# 3D data - NHWDC layout
data = jnp.zeros((1, 12, 12, 12, 1), dtype=jnp.float32)
x, y, z = np.mgrid[0:1:12j, 0:1:12j, 0:1:12j]
data += (jnp.sin(2*x*jnp.pi)*jnp.cos(2*y*jnp.pi)*jnp.cos(2*z*jnp.pi))[None,:,:,:,None]

dn = lax.conv_dimension_numbers(data.shape, kernel.shape,
                                ('NHWDC', 'HWDIO', 'NHWDC'))
out["dn_3d"] = np.array(str(dn))
out["conv_3d"] = lax.conv_general_dilated(data, kernel, (1,1,1), 'SAME', (1,1,1), (1,1,1), dn)
RESULT = out
'''

# JAX docs, docs/notebooks/score_matching.md ("Generative Modeling by Estimating Gradients of
# Data Distribution"): a stax score network trained by the trace of its jacfwd Jacobian, then
# by sliced score matching (jvp of a jitted partial), and sampled by Langevin dynamics.
PROGRAMS["score_matching"] = '''
import numpy as np

from sklearn.datasets import make_swiss_roll

np.random.seed(SEED)

def sample_batch(size, noise=1.0):
    x, _= make_swiss_roll(size, noise=noise)
    x = x[:, [0, 2]] / 10.0
    return np.array(x)

import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers
from jax.example_libraries import stax
from functools import partial

net_init, net_apply = stax.serial(
    stax.Dense(32), stax.Softplus,
    stax.Dense(32), stax.Softplus,
    stax.Dense(2),
)

opt_init, opt_update, get_params = optimizers.adam(1e-3)

@jax.jit
def compute_loss(net_params, inputs):
    # v-- a function that computes jacobian by forward mode differentiation
    jacobian = jax.jacfwd(net_apply, argnums=-1)

    # we use jax.vmap to vectorize jacobian function along batch dimension
    batch_jacobian = jax.vmap(partial(jacobian, net_params))(inputs)  # [batch, dim, dim]

    trace_jacobian = jnp.trace(batch_jacobian, axis1=1, axis2=2)
    output_norm_sq = jnp.square(net_apply(net_params, inputs)).sum(axis=1)

    return jnp.mean(trace_jacobian + 1/2 * output_norm_sq)


@jax.jit
def train_step(step_i, opt_state, batch):
    net_params = get_params(opt_state)
    loss = compute_loss(net_params, batch)
    grads = jax.grad(compute_loss, argnums=0)(net_params, batch)
    return loss, opt_update(step_i, grads, opt_state)

out_shape, net_params = net_init(jax.random.PRNGKey(seed=SEED), input_shape=(-1, 2))
opt_state = opt_init(net_params)

loss_history = []
for i in range(10):
    x = sample_batch(size=32)
    loss, opt_state = train_step(i, opt_state, x)
    loss_history.append(loss.item())

net_params = get_params(opt_state)
xx = jnp.stack(jnp.meshgrid(jnp.linspace(-1.5, 2.0, 10), jnp.linspace(-1.5, 2.0, 10)), axis=-1).reshape(-1, 2)
scores = net_apply(net_params, xx)
scores_norm = jnp.linalg.norm(scores, axis=-1, ord=2, keepdims=True)
scores_log1p = scores / (scores_norm + 1e-9) * jnp.log1p(scores_norm)
out = {"losses": np.array(loss_history), "scores": scores_log1p,
       "mean_loss": jnp.mean(jnp.array(loss_history[-32:]))}

def sample_langevin(x_initial, *, net_params, key, eps=1e-2, eps_decay=0.9, num_steps=15, temperature=1.0):
    """ sample x ~ p(x) by applying approximate Langvenin Dynamics, return a sequence of x_t """
    x_t, x_sequence = x_initial, [x_initial]

    for t in range(num_steps):
        key, subkey = jax.random.split(key)
        z_t = jax.random.normal(subkey, shape=x_t.shape)
        x_t = x_t + eps / 2 * net_apply(net_params, x_t) + jnp.sqrt(eps) * temperature * z_t
        x_sequence.append(x_t)
        eps *= eps_decay

    return jnp.stack(x_sequence)

key = jax.random.PRNGKey(SEED)
chains = []
for x_initial in jnp.array([[-1.5, -1.5], [0, 0], [1.5, 0]]):
    key, subkey = jax.random.split(key)
    xx = sample_langevin(x_initial, key=subkey, net_params=net_params)
    deltas = (xx[1:] - xx[:-1])
    deltas = deltas - deltas / jnp.linalg.norm(deltas, keepdims=True, axis=-1) * 0.04
    chains.append(deltas)
out["chains"] = chains

@jax.jit
def compute_ssm_loss(net_params, inputs, key):
    apply = jax.jit(partial(net_apply, net_params))
    batch_dot = partial(jnp.einsum, 'bu,bu->b')

    # generate random vectors from N(0, I)
    v = jax.random.normal(key, shape=inputs.shape)

    # predict score and comput jacobian of score times v
    score, jac_v = jax.jvp(apply, [inputs], [v])

    return jnp.mean(batch_dot(v, jac_v) + 1/2 * batch_dot(v, score) ** 2)

@jax.jit
def train_step(step_i, opt_state, batch, key):
    # the new compute_loss is random key dependent, thus we need a new train_step function
    net_params = get_params(opt_state)
    loss = compute_ssm_loss(net_params, batch, key)
    grads = jax.grad(compute_ssm_loss, argnums=0)(net_params, batch, key)
    return loss, opt_update(step_i, grads, opt_state)

key = jax.random.PRNGKey(SEED)
key, subkey = jax.random.split(key)
out_shape, net_params = net_init(subkey, input_shape=(-1, 2))
opt_state = opt_init(net_params)

loss_history = []
for i in range(10):
    x = sample_batch(size=32)
    key, subkey = jax.random.split(key)
    loss, opt_state = train_step(i, opt_state, x, subkey)
    loss_history.append(loss.item())
out["ssm_losses"] = np.array(loss_history)
RESULT = out
'''

# github.com/pnkraemer/code-robust-state-estimation-singular-noise, src/ckf/ckf.py: a Kalman
# filter whose predict/update steps run in lax.scan (called with xs= and init= keywords) over
# the data; here on a random walk observed with noise.
PROGRAMS["kalman_filter"] = '''
import jax.numpy as jnp
import jax

def kalman_filter():
    def kf(data, /, *, init, latent, observe):
        n, _ = data.shape
        d, = init[0].shape
        ms = jnp.zeros((n, d))
        cs = jnp.zeros((n, d, d))

        rv = init
        body = body_fun(latent, observe)
        _, (ms, cs) = jax.lax.scan(body, xs=data, init=init, reverse=False)
        return ms, cs

    def body_fun(latent, observe):
        def fun(rv, datum):
            rv = predict(rv, latent)
            rv = update(rv, datum, observe)
            return rv, rv
        return fun

    return kf

def predict(rv, model):
    A, Q = model
    m, C = rv

    m = A @ m
    C = A @ C @ A.T + Q
    return m, C

def update(rv, data, model):
    A, Q = model
    m, C = rv

    z = A @ m
    S = A @ C @ A.T + Q
    K = C @ A.T @ jnp.linalg.inv(S)

    m = m - K @ (z - data)
    C = C - K @ A @ C
    return (m, C)

key = jax.random.PRNGKey(SEED)
k1, k2, k3 = jax.random.split(key, 3)
d, k, n = 4, 2, 30
dt = 0.1
latent = (jnp.eye(d) + dt * jnp.eye(d, k=2), 0.01 * jnp.eye(d))
observe = (jnp.eye(k, d), 0.1 * jnp.eye(k))
states = jnp.cumsum(0.1 * jax.random.normal(k1, (n, d)), axis=0)
data = states[:, :k] + 0.3 * jax.random.normal(k2, (n, k))
init = (jax.random.normal(k3, (d,)), jnp.eye(d))

kf = kalman_filter()
ms, cs = kf(data, init=init, latent=latent, observe=observe)
ms_jit, cs_jit = jax.jit(kf)(data, init=init, latent=latent, observe=observe)
RESULT = {"ms": ms, "cs": cs, "ms_jit": ms_jit, "cs_jit": cs_jit}
TOLERANCE = 2e-4
'''

# github.com/comecattin/JAX-MD, src/jax_md/dynamics.py (with initialize_system of
# src/dynamics.py): Lennard-Jones molecular dynamics in a periodic box, forces by vmap(grad)
# of a jitted pair potential called with keyword arguments, velocity Verlet steps. Eight
# particles and forty steps.
PROGRAMS["lennard_jones"] = '''
from functools import partial
from typing import Tuple

import jax
import jax.numpy as jnp
from jax import random


def initialize_system(num_particule, box_size, key):
    """Initialize the system."""
    key, subkey_pos, subkey_vel = random.split(key, 3)
    # Positions within the box
    pos = random.uniform(subkey_pos, (num_particule, 3)) * box_size
    # Random velocities
    vel = random.normal(subkey_vel, (num_particule, 3))

    return pos, vel


@jax.jit
def lennard_jones(
        r: jnp.ndarray,
        epsilon: float = 1.0,
        sigma: float = 1.0,
    ) -> jnp.ndarray:
    """Lenard Jones potential."""
    r6 = (sigma / r) ** 6
    r12 = r6 ** 2
    return 4.0 * epsilon * (r12 - r6)


@jax.jit
def compute_forces_and_potential_energy(
    pos: jnp.ndarray,
    box_size: float,
    epsilon: float = 1.0,
    sigma: float = 1.0
    ) -> Tuple[jnp.ndarray, float]:
    """Compute the forces and the potential energy."""
    num_particule = pos.shape[0]
    # distance matrix in 3D
    rij = pos[:, None, :] - pos[None, :, :]
    # PBC
    rij = rij - jnp.round(rij / box_size) * box_size
    # Distance matrix
    r = jnp.sqrt(jnp.sum(rij ** 2, axis=-1))
    r = jnp.where(r < 1e-6, 1e-6, r)
    # Unit vector
    uij = rij / r[:, :, None]

    # Compute the forces from the grad
    lennard_jones_fixed = partial(lennard_jones, epsilon=epsilon, sigma=sigma)
    grad = jax.grad(lennard_jones_fixed)
    f = - jax.vmap(grad)(r.reshape(-1))
    f = f.at[::num_particule + 1].set(0)
    f = f.reshape((num_particule, num_particule))[:, :, None] * uij
    f = jnp.sum(f, axis=1)

    # Potential energy
    potential_energy = jnp.sum(
        lennard_jones(
            r,
            epsilon=epsilon,
            sigma=sigma
            ).reshape(-1).at[::num_particule + 1].set(0)
    )

    return f, potential_energy


def step(position, velocity, force, dt, box_size, epsilon=1.0, sigma=1.0):
    """Updade the position, velocity and force of the system."""
    # Update the position
    new_position = position + velocity * dt + 0.5 * force * dt ** 2
    new_position = jnp.mod(new_position, box_size)
    # Compute the new forces
    new_force, _ = compute_forces_and_potential_energy(
        new_position,
        box_size,
        sigma=sigma,
        epsilon=epsilon
    )
    # Update the velocity
    new_velocity = velocity + 0.5 * (force + new_force) * dt
    return new_position, new_velocity, new_force


@jax.jit
def compute_kinetic_energy(velocity):
    """Compute the kinetic energy."""
    return jnp.sum(velocity ** 2)


def dynamics(position, velocity, dt, box_size, epsilon=1.0, sigma=1.0, n_steps=1000):
    """Run the dynamics of the system."""
    force, _ = compute_forces_and_potential_energy(
        position,
        box_size,
        sigma=sigma,
        epsilon=epsilon
    )
    position_list = []
    kinetic_energy_list = []
    potential_energy_list = []
    total_energy_list = []

    for step_i in range(n_steps):
        position, velocity, force = step(
            position,
            velocity,
            force,
            dt,
            box_size,
            sigma=sigma,
            epsilon=epsilon
        )
        position_list.append(position)
        if step_i % 10 == 0:
            kinetic_energy = compute_kinetic_energy(velocity)
            _, potential_energy = compute_forces_and_potential_energy(
                position,
                box_size,
                sigma=sigma,
                epsilon=epsilon
            )
            kinetic_energy_list.append(kinetic_energy)
            potential_energy_list.append(potential_energy)
            total_energy_list.append(kinetic_energy + potential_energy)
    return (
        jnp.array(position_list),
        kinetic_energy_list,
        potential_energy_list,
        total_energy_list
    )


epsilon = 1.0
sigma = 1.0
num_particule = 8
box_size = 10.0
key = random.PRNGKey(SEED)

pos, vel = initialize_system(num_particule, box_size, key)
(
    pos_list,
    kinetic_energy_list,
    potential_energy_list,
    total_energy_list
) = dynamics(pos, vel, 0.001, box_size, epsilon, sigma, n_steps=40)
RESULT = {"positions": pos_list, "kinetic": jnp.array(kinetic_energy_list),
          "potential": jnp.array(potential_energy_list),
          "total": jnp.array(total_energy_list)}
TOLERANCE = 1e-3
'''

# github.com/brpuneet898/stein-project, high_dimensionality_test_scripts/svgd_jax.py: Stein
# variational gradient descent for Bayesian logistic regression (vmap of grad per particle, an
# RBF kernel with the median heuristic, jit with static particle count and step size). tqdm's
# trange is range; a random data set in place of the study's.
PROGRAMS["svgd"] = '''
import time
from typing import Tuple
import numpy as np
import jax
import jax.numpy as jnp
from jax import grad, vmap, jit
from functools import partial
trange = range

# Prior sigma
PRIOR_STD = 1.0

def sigmoid(x):
    return 1 / (1 + jnp.exp(-x))

def log_prior(w):
    # Gaussian prior N(0, PRIOR_STD^2)
    return -0.5 * jnp.sum((w / PRIOR_STD) ** 2)

def log_likelihood_single(w, x, y):
    logits = jnp.dot(x, w)
    # Bernoulli log-likelihood
    return y * jnp.log(sigmoid(logits) + 1e-12) + (1 - y) * jnp.log(1 - sigmoid(logits) + 1e-12)

def log_posterior(w, X, y):
    # w: (D,)
    ll = jnp.sum(vmap(lambda xi, yi: log_likelihood_single(w, xi, yi))(X, y))
    return ll + log_prior(w)

def rbf_kernel_matrix(theta):
    # theta: (n_particles, dim)
    pairwise_dists = jnp.sum((theta[:, None, :] - theta[None, :, :]) ** 2, axis=-1)
    # median heuristic
    h = jnp.median(pairwise_dists)
    h = jnp.where(h <= 0.0, 1.0, h)
    h = h / jnp.log(theta.shape[0] + 1.0)  # slightly shrink
    K = jnp.exp(-pairwise_dists / (h + 1e-8))
    return K, h

@partial(jit, static_argnums=(3,4))
def svgd_update(theta, X, y, n_particles, step_size, rng_key):
    # theta: (n_particles, dim)
    dim = theta.shape[1]

    # gradient of log posterior for each particle
    grad_logp = jax.vmap(lambda w: jax.grad(lambda ww: log_posterior(ww, X, y))(w))(theta)  # (n_particles, dim)

    K, h = rbf_kernel_matrix(theta)
    # kernel gradient term
    grad_K = -2 * (theta[:, None, :] - theta[None, :, :]) * (K[:, :, None] / (h + 1e-8))
    # combine
    phi = (K @ grad_logp) / n_particles + jnp.sum(grad_K, axis=1) / n_particles
    theta_new = theta + step_size * phi
    return theta_new, phi

def run_svgd(X: np.ndarray, y: np.ndarray, n_particles=100, n_iter=1000, step_size=1e-3, seed=0):
    X_j = jnp.array(X)
    y_j = jnp.array(y)
    n_particles = int(n_particles)
    dim = X.shape[1]
    rng = jax.random.PRNGKey(seed)
    rng, sub = jax.random.split(rng)
    # init particles from prior
    theta = jax.random.normal(sub, (n_particles, dim)) * PRIOR_STD

    start = time.time()
    for it in trange(n_iter):
        rng, sub = jax.random.split(rng)
        theta, phi = svgd_update(theta, X_j, y_j, n_particles, step_size, sub)
    duration = time.time() - start
    # return particles as numpy
    return np.array(theta), duration

data = np.random.default_rng(SEED)
X = data.standard_normal((60, 5))
y = (data.uniform(size=60) < 1 / (1 + np.exp(-X @ data.standard_normal(5)))).astype(np.float64)
theta, _ = run_svgd(X, y, n_particles=24, n_iter=20, step_size=1e-2, seed=SEED)
RESULT = {"particles": theta}
TOLERANCE = 2e-4
'''

# github.com/ucu-computational-ot/ot-algorithm-comparison, algorithms/sinkhorn.py: log-domain
# Sinkhorn by lax.fori_loop over logsumexp, its cost read back by .item(). (Its line switching
# jax_enable_x64 on is left out: the test runs with JAX's default of x64 off.)
PROGRAMS["sinkhorn_fori_loop"] = '''
import jax
import jax.numpy as jnp

def sinkhorn(mu, nu, C, epsilon=0.001, niter=1000):

    ln_K = -C / epsilon
    ln_mu = jnp.log(mu)
    ln_nu = jnp.log(nu)
    ln_u = jnp.ones_like(ln_mu)
    ln_v = jnp.ones_like(ln_nu)

    def body(i, ln_uv):
        ln_u, ln_v = ln_uv
        ln_u = ln_mu - jax.scipy.special.logsumexp(ln_K + ln_v[None, :], axis=1)
        ln_v = ln_nu - jax.scipy.special.logsumexp(ln_K.T + ln_u[None, :], axis=1)
        return ln_u, ln_v

    ln_u, ln_v = jax.lax.fori_loop(0, niter, body, (ln_u, ln_v))

    transport_plan = jnp.exp(ln_u[:, None] + ln_K + ln_v[None, :])
    cost = jnp.sum(transport_plan * C).item()
    return transport_plan, cost

key = jax.random.PRNGKey(SEED)
kx, ky, ka, kb = jax.random.split(key, 4)
x = jax.random.normal(kx, (12, 2))
y = jax.random.normal(ky, (9, 2)) + 1.0
C = jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)
mu = jax.nn.softmax(jax.random.normal(ka, (12,)))
nu = jax.nn.softmax(jax.random.normal(kb, (9,)))
plan, cost = sinkhorn(mu, nu, C, epsilon=0.1, niter=200)
RESULT = {"plan": plan, "cost": cost, "rows": plan.sum(1), "cols": plan.sum(0)}
TOLERANCE = 2e-4
'''

# A public GitHub file, "Sinkhorn Algorithm in a log-sum-exp style": lax.while_loop on a
# (step, log_u, log_v, error) carry that starts from the Python values 0 and jnp.inf, with
# .at[None, :].get() broadcasts and an L1 stopping error.
PROGRAMS["sinkhorn_while_loop"] = '''
import jax.numpy as jnp
import jax


def sinkhorn(C, eta, r, c, tol, iter_max):
    """
    Sinkhorn Algorithm in a log-sum-exp style
    """
    n = C.shape[0]
    log_v = jnp.zeros(n)
    log_u = jnp.zeros(n)
    log_b1 = jnp.log(r)
    log_a1 = jnp.log(c)
    cost_over_reg = -C / eta

    def criterion(inps):
        n_iter, log_u, log_v, err = inps
        return (n_iter < iter_max) & (err > tol)

    def iter_fun(inps):
        n_iter, log_u, log_v, _ = inps

        # sinkhorn step 1
        _log_denominator_u = cost_over_reg + log_v.at[None, :].get()
        log_denominator_u = jax.scipy.special.logsumexp(_log_denominator_u, axis=1, keepdims=False)
        log_u = log_a1 - log_denominator_u
        # error computation
        _ = cost_over_reg + log_u.at[:, None].get()

        log_r = log_v + jax.scipy.special.logsumexp(_, axis=0, keepdims=False)
        error = jnp.linalg.norm(jnp.exp(log_r) - r, ord=1)
        # sinkhorn step 2
        _log_denominator_v = cost_over_reg + log_u.at[:, None].get()
        log_denominator_v = jax.scipy.special.logsumexp(_log_denominator_v, axis=0, keepdims=False)
        log_v = log_b1 - log_denominator_v
        # error computation
        _ = cost_over_reg + log_v.at[None, :].get()
        log_s = log_u + jax.scipy.special.logsumexp(_, axis=1, keepdims=False)
        error += jnp.linalg.norm(jnp.exp(log_s) - c, ord=1)
        return n_iter + 1, log_u, log_v, error

    inps = (0, log_u, log_v, jnp.inf)
    n_iter, log_u, log_v, _ = jax.lax.while_loop(criterion, iter_fun, inps)
    X = log_u.at[:, None].get() + cost_over_reg + log_v.at[None, :].get()
    X = jnp.exp(X)
    return X, n_iter

key = jax.random.PRNGKey(SEED)
kx, ky, kr, kc = jax.random.split(key, 4)
x = jax.random.uniform(kx, (10, 1))
y = jax.random.uniform(ky, (10, 1))
C = (x - y.T) ** 2
r = jax.nn.softmax(jax.random.normal(kr, (10,)))
c = jax.nn.softmax(jax.random.normal(kc, (10,)))
X, n_iter = sinkhorn(C, 0.05, r, c, 1e-4, 500)
X_jit, n_iter_jit = jax.jit(sinkhorn, static_argnums=(5,))(C, 0.05, r, c, 1e-4, 500)
RESULT = {"plan": X, "plan_jit": X_jit}
TOLERANCE = 2e-4
'''


# optax's examples/contrib/rosenbrock_ademamix.ipynb: Adam and AdEMAMix (with a b3 schedule
# and a linear alpha schedule) on the Rosenbrock function, in lax.scan with a debug print
# under lax.cond; the notebook imports optax._src.base. 300 steps instead of 100000.
PROGRAMS["rosenbrock_ademamix"] = """
from functools import partial

import optax
import jax
import jax.numpy as jnp
import numpy as np

from optax.schedules import linear_schedule
from optax._src import base


def cond_print(cond, fmt, *args):
    return jax.lax.cond(cond, lambda: (jax.debug.print(fmt, *args), 0)[1], lambda: 0)

def rosenbrock(x):
    return jnp.square(1 - x[0]) + 100.0 * jnp.square(x[1] - jnp.square(x[0]))

num_iterations = 300

def _body_fn(carry, _, *, solver, b1):
    params, opt_state, i = carry
    grad = jax.grad(rosenbrock)(params)
    updates, opt_state = solver.update(grad, opt_state, params)
    params = optax.apply_updates(params, updates)
    cond_print(
        i % 25000 == 0,
        "Objective function for b1={} at iteration {} = {}",
        b1,
        i,
        rosenbrock(params),
    )
    return (params, opt_state, i + 1), params

all_b1_params = []
for b1 in [0.9, 0.99, 0.999, 0.9999]:
    solver = optax.adam(learning_rate=0.003, b1=b1, b2=0.9999)
    params = jnp.array([-3.0, 5.0])
    opt_state = solver.init(params)

    _, all_params = jax.lax.scan(
        partial(_body_fn, solver=solver, b1=b1),
        (params, opt_state, 0),
        length=num_iterations
    )
    all_b1_params.append(jnp.concatenate([params[None, ...], all_params], 0))
all_b1_params_array = jnp.array(all_b1_params)

alpha = 0.8
alpha = linear_schedule(0, alpha, num_iterations)

def b3_scheduler(beta_end: float, beta_start: float = 0, warmup: int = 0):
    def f(beta):
        return jnp.log(0.5) / jnp.log(beta) - 1
    def f_inv(t):
        return jnp.power(0.5, 1 / (t + 1))
    def schedule(step):
        is_warmup = jnp.array(step < warmup).astype(jnp.float32)
        alpha = step / float(warmup)
        return is_warmup * f_inv(
            (1.0 - alpha) * f(beta_start) + alpha * f(beta_end)
        ) + beta_end * (1.0 - is_warmup)
    return schedule

def _body_fn(carry, _, *, solver, b3):
    params, opt_state, i = carry
    grad = jax.grad(rosenbrock)(params)
    updates, opt_state = solver.update(grad, opt_state, params)
    params = optax.apply_updates(params, updates)
    cond_print(
        i % 25000 == 0,
        "Objective function for b3={} at iteration {} = {}",
        b3(i),
        i,
        rosenbrock(params),
    )
    return (params, opt_state, i + 1), params

all_ademamix_params = []
for b3 in [0.999, 0.9999]:
    b3 = b3_scheduler(b3, 0, num_iterations)
    solver = optax.contrib.ademamix(
        learning_rate=0.003, b1=0.99, b2=0.999, b3=b3, alpha=alpha
    )
    params = jnp.array([-3.0, 5.0])
    opt_state = solver.init(params)
    _, all_params = jax.lax.scan(
        partial(_body_fn, solver=solver, b3=b3),
        (params, opt_state, 0),
        length=num_iterations
    )
    all_ademamix_params.append(jnp.concatenate([params[None, ...], all_params], 0))
all_ademamix_params_array = jnp.array(all_ademamix_params)
RESULT = {"adam": all_b1_params_array[:, ::10], "ademamix": all_ademamix_params_array[:, ::10],
          "is_transformation": np.array(isinstance(solver, base.GradientTransformation))}
TOLERANCE = 1e-3
"""

# optax's examples/ogda_example.ipynb: SGD, optimistic gradient descent, Adam and optimistic
# Adam (both with nesterov=True) on the bilinear game f(x, y) = x * y, the second gradient
# negated by .at[1].apply, run by lax.scan with only a length. 200 steps instead of 10**4.
PROGRAMS["ogda"] = """
import functools
import jax
import optax
from jax import lax, numpy as jnp

def f(params):
    x, y = params
    return x * y

def update(optimizer, state, _):
    params, opt_state = state
    grads = jax.grad(f)(params)
    grads = grads.at[1].apply(jnp.negative)
    updates, new_opt_state = optimizer.update(grads, opt_state, params)
    new_params = optax.apply_updates(params, updates)
    return (new_params, new_opt_state), params

def optimize(optimizer, params, iters):
    opt_state = optimizer.init(params)
    _, params_hist = lax.scan(functools.partial(update, optimizer), (params, opt_state), length=iters)
    return params_hist

params = jax.random.uniform(jax.random.PRNGKey(SEED), (2,), minval=0.5, maxval=1.5)
out = {}
for label, optimizer in [
    ("SGD", optax.sgd(0.1)),
    ("Optimistic GD", optax.optimistic_gradient_descent(0.1)),
    ("Adam", optax.adam(0.05, nesterov=True)),
    ("Optimistic Adam", optax.optimistic_adam(0.05, 0.5, nesterov=True)),
]:
    params_hist = optimize(optimizer, params, 200)
    distances_to_origin = jnp.hypot(*params_hist.T)
    out[label] = [params_hist[::10], distances_to_origin[::10]]
RESULT = out
TOLERANCE = 2e-4
"""

# optax's examples/meta_learning.ipynb: RMSProp's learning rate, set through
# inject_hyperparams's state inside the differentiated outer loss, learned by Adam; the data
# come from a generator of PRNG draws. 15 outer steps instead of 2000.
PROGRAMS["meta_learning"] = """
from typing import Iterator, Tuple
import jax
import jax.numpy as jnp
import numpy as np
import optax

def generator() -> Iterator[Tuple[jax.Array, jax.Array]]:
  rng = jax.random.PRNGKey(SEED)

  while True:
    rng, k1, k2 = jax.random.split(rng, num=3)
    x = jax.random.uniform(k1, minval=0.0, maxval=10.0)
    y = 10.0 * x + jax.random.normal(k2)
    yield x, y

g = generator()

def f(theta: jax.typing.ArrayLike, x: jax.typing.ArrayLike) -> jax.typing.ArrayLike:
  return x * theta

theta = jax.random.normal(jax.random.PRNGKey(42))

init_learning_rate = jnp.array(0.1)
meta_learning_rate = jnp.array(0.03)

opt = optax.inject_hyperparams(optax.rmsprop)(learning_rate=init_learning_rate)
meta_opt = optax.adam(learning_rate=meta_learning_rate)

def loss(theta, x, y):
  return optax.l2_loss(y, f(theta, x))


def step(theta, state, x, y):
  grad = jax.grad(loss)(theta, x, y)
  updates, state = opt.update(grad, state)
  theta = optax.apply_updates(theta, updates)
  return theta, state

def outer_loss(eta, theta, state, samples):
  state.hyperparams['learning_rate'] = jax.nn.sigmoid(eta)

  for x, y in samples[:-1]:
    theta, state = step(theta, state, x, y)

  x, y = samples[-1]

  return loss(theta, x, y), (theta, state)


@jax.jit
def outer_step(eta, theta, meta_state, state, samples):
  grad, (theta, state) = jax.grad(
      outer_loss, has_aux=True)(eta, theta, state, samples)

  meta_updates, meta_state = meta_opt.update(grad, meta_state)
  eta = optax.apply_updates(eta, meta_updates)

  return eta, theta, meta_state, state

state = opt.init(theta)
# inverse sigmoid, to match the value we initialized the inner optimizer with.
eta = -np.log(1. / init_learning_rate - 1)
meta_state = meta_opt.init(eta)

N = 7
learning_rates = []
thetas = []

for i in range(15):
  samples = [next(g) for i in range(N)]
  eta, theta, meta_state, state = outer_step(eta, theta, meta_state, state, samples)
  learning_rates.append(jax.nn.sigmoid(eta))
  thetas.append(theta)
RESULT = {"learning_rates": jnp.array(learning_rates), "thetas": jnp.array(thetas)}
TOLERANCE = 2e-4
"""

# JAX's examples/hmm_em.py: expectation maximization for a hidden Markov model, the E step as
# the gradient of a lax.scan log-normalizer, under jit with the step count traced into
# fori_loop; sampling by random.categorical in a scan. A short text in place of the source of
# jax.core, 5 EM steps instead of 50.
PROGRAMS["hmm_em"] = """
from functools import partial

import jax
import jax.numpy as np
from jax.scipy.special import logsumexp
from jax import lax, random
from jax import jit, grad


def log_normalizer(params, seq):
  log_pi, log_A, log_B = params
  def marginalize(log_alpha, obs):
    log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs]
    return log_alpha, None
  log_alpha, _ = lax.scan(marginalize, log_pi, seq)
  return logsumexp(log_alpha)

@jit
def EM(params, seq, num_steps):
  def update(i, params):
    moments = grad(log_normalizer)(params, seq)                     # E step
    return [np.log(x / x.sum(-1, keepdims=True)) for x in moments]  # M step
  return lax.fori_loop(0, num_steps, update, params)

@partial(jit, static_argnums=(2,))
def sample(key, params, length):
  log_pi, log_A, log_B = params
  def sample_one(state, key):
    k1, k2 = random.split(key)
    obs = random.categorical(k1, log_B[state])
    state = random.categorical(k2, log_A[state])
    return state, obs
  k1, k2 = random.split(key)
  init_state = random.categorical(k1, log_pi)
  _, seq = lax.scan(sample_one, init_state, random.split(k2, length))
  return seq

from collections import defaultdict
from itertools import count

def build_dataset(string):
  encodings = defaultdict(partial(next, count()))
  data = np.array([encodings[c] for c in string])
  decodings = {i:c for c, i in encodings.items()}
  return data, decodings

text = "the quick brown fox jumps over the lazy dog and then the dog sleeps in the sun " * 3
seq, decodings = build_dataset(text)

num_states = 6
num_obs = len(decodings)

keys = map(random.PRNGKey, count(SEED))
log_pi = random.normal(next(keys), (num_states,))
log_A = random.normal(next(keys), (num_states, num_states))
log_B = random.normal(next(keys), (num_states, num_obs))
params = [log_pi, log_A, log_B]

new_params = EM(params, seq, 5)

sampled_seq = sample(next(keys), new_params, 80)
RESULT = {"params": new_params, "log_normalizer": log_normalizer(new_params, seq),
          "sample": sampled_seq, "text": [decodings[int(i)] for i in sampled_seq]}
TOLERANCE = 2e-4
"""

# JAX's examples/pca_from_scratch.py: PCA by jnp.linalg.svd under jit with a static
# n_components (static_argnames), and batched by jit(vmap(pca, in_axes=(0, None))) with the
# same static_argnames; smaller data, no timing or plotting.
PROGRAMS["pca_from_scratch"] = """
import jax
import jax.numpy as jnp
from jax import jit, vmap
from functools import partial

@partial(jit, static_argnames=['n_components'])
def pca(X: jnp.ndarray, n_components: int = 2):
    mean = jnp.mean(X, axis=0)
    X_centered = X - mean

    # SVD via XLA
    U, S, Vt = jnp.linalg.svd(X_centered, full_matrices=False)

    # Truncate components
    components = Vt[:n_components]

    # Project data
    X_projected = X_centered @ components.T

    # Calculate explained variance
    explained_variance = S**2 / (X.shape[0] - 1)
    explained_variance_ratio = explained_variance[:n_components] / jnp.sum(explained_variance)

    return X_projected, components, explained_variance_ratio

batched_pca = jit(vmap(pca, in_axes=(0, None)), static_argnames=['n_components'])

key = jax.random.PRNGKey(SEED)
n_samples, n_features = 400, 8
base_data = jax.random.normal(key, (n_samples, n_features))
scales = jnp.array([10.0, 5.0] + [1.0] * (n_features - 2))
scaled_data = base_data * scales
key, subkey = jax.random.split(key)
random_matrix = jax.random.normal(subkey, (n_features, n_features))
rotation, _ = jnp.linalg.qr(random_matrix)
X = scaled_data @ rotation

X_proj, comp, evr = pca(X, n_components=2)

batch_size = 4
key, subkey = jax.random.split(key)
base_batch = jax.random.normal(subkey, (batch_size, 200, n_features))
scaled_batch = base_batch * scales
X_batch = scaled_batch @ rotation
X_proj_batch, comp_batch, evr_batch = batched_pca(X_batch, 2)
# the signs of singular vectors are arbitrary: compare their outer products
RESULT = {"evr": evr, "evr_batch": evr_batch,
          "projector": comp.T @ comp, "projector_batch": jnp.einsum("bki,bkj->bij", comp_batch, comp_batch),
          "projected_norms": jnp.linalg.norm(X_proj_batch, axis=-1)}
TOLERANCE = 1e-3
"""


def run(source: str, name: str, seed: int):
    scope = {"__name__": "__main__", "SEED": seed}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, f"<{name}>", "exec"), scope)
    return dict(_leaves("", scope["RESULT"])), scope.get("TOLERANCE", 1e-4)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_gives_jax_results(name, jax_x64_as_fnx):
    seed = int(np.random.default_rng().integers(2 ** 31))
    expected, _ = run(PROGRAMS[name], name, seed)
    actual, tolerance = run(ported(PROGRAMS[name]), name, seed)
    assert actual.keys() == expected.keys()
    for key, want in expected.items():
        got = actual[key]
        assert (got.shape, got.dtype) == (want.shape, want.dtype), (key, seed)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance,
                                       err_msg=f"{key} (seed {seed})")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{key} (seed {seed})")


_OPTAX_PRIVATE = ["alias", "base", "combine", "constrain", "factorized", "linear_algebra",
                  "linesearch", "lookahead", "numerics", "schedule", "transform", "update",
                  "utils", "wrappers"]


@pytest.mark.parametrize("module", _OPTAX_PRIVATE)
def test_optax_private_modules_port_by_their_imports(module):
    """``from optax._src import base`` (rosenbrock_ademamix above) ports as
    ``from fnx.optim._src import base``; each module holds the fnx.optim names optax's does."""
    import importlib
    import typing

    import fnx.optim
    theirs = importlib.import_module(f"optax._src.{module}")
    ours = importlib.import_module(f"fnx.optim._src.{module}")
    for name in ours.__all__:
        assert hasattr(theirs, name), name
    shared = [n for n in dir(theirs) if not n.startswith("_") and n not in dir(typing)
              and hasattr(fnx.optim, n) and not isinstance(getattr(theirs, n), type(typing))]
    for name in shared:
        assert getattr(ours, name) is getattr(fnx.optim, name), name


def test_optax_numerics_abs_sq_as_optax():
    import jax.numpy
    from optax._src import numerics as theirs

    import fnx.numpy as fnp
    from fnx.optim._src import numerics as ours
    rng = np.random.default_rng()
    x = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    for value in (x, x.real):
        got, want = ours.abs_sq(fnp.asarray(value)), theirs.abs_sq(jax.numpy.asarray(value))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError):
        ours.abs_sq(3.0)
    with pytest.raises(ValueError):
        theirs.abs_sq(3.0)


def test_ported_rewrites_optax_submodule_imports():
    source = "import optax.tree\nfrom optax._src import base\nfrom optax import contrib\n"
    assert ported(source) == ("import fnx.optim.tree; import fnx.optim as optax\n"
                              "from fnx.optim._src import base\nfrom fnx.optim import contrib\n")

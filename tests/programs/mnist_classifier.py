"""JAX's examples/mnist_classifier.py (stax + optimizers), run with four optimizers and step-size
schedules (tests/test_example_libraries.py checks the rest); random images in place of MNIST."""
import itertools
import numpy as np
import numpy.random as npr
import jax.numpy as jnp
from jax import jit, grad, random
from jax.example_libraries import optimizers
from jax.example_libraries import stax
from jax.example_libraries.stax import Dense, Relu, LogSoftmax

def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)

init_random_params, predict = stax.serial(
    Dense(32), Relu,
    Dense(32), Relu,
    Dense(10), LogSoftmax)

rng = random.key(0)
step_size = 0.01
batch_size = 16
momentum_mass = 0.9
r = npr.RandomState(1)
train_images = r.rand(64, 49).astype("float32")
train_labels = np.eye(10, dtype="float32")[r.randint(0, 10, 64)]
num_train = train_images.shape[0]
num_complete_batches, leftover = divmod(num_train, batch_size)
num_batches = num_complete_batches + bool(leftover)
def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(num_train)
    for i in range(num_batches):
      batch_idx = perm[i * batch_size:(i + 1) * batch_size]
      yield train_images[batch_idx], train_labels[batch_idx]
batches = data_stream()
out = {}
for name, opt in [("momentum", optimizers.momentum(step_size, mass=momentum_mass)),
                  ("adam", optimizers.adam(optimizers.exponential_decay(0.01, 10, 0.5))),
                  ("rmsprop_momentum", optimizers.rmsprop_momentum(
                      optimizers.piecewise_constant([5, 10], [0.1, 0.01, 0.001]))),
                  ("adagrad", optimizers.adagrad(optimizers.polynomial_decay(0.1, 10, 0.001, 2.0)))]:
  opt_init, opt_update, get_params = opt
  @jit
  def update(i, opt_state, batch):
    params = get_params(opt_state)
    g = grad(loss)(params, batch)
    g = optimizers.clip_grads(g, 1.0)
    return opt_update(i, g, opt_state)
  _, init_params = init_random_params(rng, (-1, 49))
  opt_state = opt_init(init_params)
  itercount = itertools.count()
  for _ in range(2 * num_batches):
    opt_state = update(next(itercount), opt_state, next(batches))
  params = get_params(opt_state)
  out[name] = dict(loss=loss(params, (train_images, train_labels)),
                   acc=accuracy(params, (train_images, train_labels)))
  packed = optimizers.unpack_optimizer_state(opt_state)
  opt_state2 = optimizers.pack_optimizer_state(packed)
  out[name]["p2"] = get_params(opt_state2)[0][0]
out["l2"] = optimizers.l2_norm(params)
RESULT = out

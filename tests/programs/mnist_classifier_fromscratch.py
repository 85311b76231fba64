"""JAX's examples/mnist_classifier_fromscratch.py: an MLP trained by jit(grad) of a log-softmax
loss; random images in place of MNIST, fewer and smaller layers."""
import numpy as np
import numpy.random as npr
from jax import jit, grad
from jax.scipy.special import logsumexp
import jax.numpy as jnp

def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
  return [(scale * rng.randn(m, n), scale * rng.randn(n))
          for m, n, in zip(layer_sizes[:-1], layer_sizes[1:])]

def predict(params, inputs):
  activations = inputs
  for w, b in params[:-1]:
    outputs = jnp.dot(activations, w) + b
    activations = jnp.tanh(outputs)
  final_w, final_b = params[-1]
  logits = jnp.dot(activations, final_w) + final_b
  return logits - logsumexp(logits, axis=1, keepdims=True)

def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)

layer_sizes = [64, 32, 32, 10]
param_scale = 0.1
step_size = 0.01
batch_size = 16
r = npr.RandomState(1)
train_images = r.rand(64, 64).astype("float32")
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

@jit
def update(params, batch):
  grads = grad(loss)(params, batch)
  return [(w - step_size * dw, b - step_size * db)
          for (w, b), (dw, db) in zip(params, grads)]

params = init_random_params(param_scale, layer_sizes)
losses = []
for epoch in range(3):
  for _ in range(num_batches):
    params = update(params, next(batches))
  losses.append(loss(params, (train_images, train_labels)))
acc = accuracy(params, (train_images, train_labels))
RESULT = dict(losses=jnp.stack(losses), acc=acc, w0=params[0][0])

"""JAX's examples/differentially_private_sgd.py: per-example clipped gradients by vmap(grad) of a
stax convnet, with Gaussian noise; random 12x12 images in place of MNIST, no privacy accounting."""
import itertools
import numpy as np
from jax import grad, jit, random, vmap
from jax.example_libraries import optimizers
from jax.example_libraries import stax
import jax.numpy as jnp
from jax.tree_util import tree_flatten, tree_unflatten
import numpy.random as npr

init_random_params, predict = stax.serial(
    stax.Conv(4, (3, 3), padding='SAME', strides=(2, 2)),
    stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Conv(8, (2, 2), padding='VALID', strides=(2, 2)),
    stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Flatten,
    stax.Dense(16),
    stax.Relu,
    stax.Dense(10),
)

def loss(params, batch):
  inputs, targets = batch
  logits = predict(params, inputs)
  logits = stax.logsoftmax(logits)
  return -jnp.mean(jnp.sum(logits * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)

def clipped_grad(params, l2_norm_clip, single_example_batch):
  grads = grad(loss)(params, single_example_batch)
  nonempty_grads, tree_def = tree_flatten(grads)
  total_grad_norm = jnp.linalg.norm(
      jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
  divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
  normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
  return tree_unflatten(tree_def, normalized_nonempty_grads)

def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
  clipped_grads = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
  clipped_grads_flat, grads_treedef = tree_flatten(clipped_grads)
  aggregated_clipped_grads = [g.sum(0) for g in clipped_grads_flat]
  rngs = random.split(rng, len(aggregated_clipped_grads))
  noised_aggregated_clipped_grads = [
      g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape)
      for r, g in zip(rngs, aggregated_clipped_grads)]
  normalized_noised_aggregated_clipped_grads = [
      g / batch_size for g in noised_aggregated_clipped_grads]
  return tree_unflatten(grads_treedef, normalized_noised_aggregated_clipped_grads)

def shape_as_image(images, labels, dummy_dim=False):
  target_shape = (-1, 1, 12, 12, 1) if dummy_dim else (-1, 12, 12, 1)
  return jnp.reshape(images, target_shape), labels

BATCH = 8
r = npr.RandomState(3)
train_images = r.rand(32, 144).astype("float32")
train_labels = np.eye(10, dtype="float32")[r.randint(0, 10, 32)]
num_train = train_images.shape[0]
num_complete_batches, leftover = divmod(num_train, BATCH)
num_batches = num_complete_batches + bool(leftover)
key = random.key(0)
def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(num_train)
    for i in range(num_batches):
      batch_idx = perm[i * BATCH:(i + 1) * BATCH]
      yield train_images[batch_idx], train_labels[batch_idx]
batches = data_stream()
opt_init, opt_update, get_params = optimizers.sgd(0.15)

@jit
def update(_, i, opt_state, batch):
  params = get_params(opt_state)
  return opt_update(i, grad(loss)(params, batch), opt_state)

@jit
def private_update(rng, i, opt_state, batch):
  params = get_params(opt_state)
  rng = random.fold_in(rng, i)
  return opt_update(i, private_grad(params, batch, rng, 1.0, 1.1, BATCH), opt_state)

_, init_params = init_random_params(key, (-1, 12, 12, 1))
opt_state = opt_init(init_params)
opt_state2 = opt_init(init_params)
itercount = itertools.count()
losses = []
for epoch in range(2):
  for _ in range(num_batches):
    b = next(batches)
    i = next(itercount)
    opt_state = private_update(key, i, opt_state, shape_as_image(*b, dummy_dim=True))
    opt_state2 = update(key, i, opt_state2, shape_as_image(*b))
  params = get_params(opt_state)
  losses.append(loss(params, shape_as_image(train_images, train_labels)))
  losses.append(loss(get_params(opt_state2), shape_as_image(train_images, train_labels)))
RESULT = dict(losses=jnp.stack(losses), acc=accuracy(params, shape_as_image(train_images, train_labels)))

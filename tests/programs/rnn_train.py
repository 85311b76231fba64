"""An LSTM language model trained on a toy sequence task: lax.scan over time, batch norm with
running statistics as explicit state, dropout, optax MultiSteps over multi_transform with
label smoothing; per-example gradients by vmap(grad); pmap, shard_map and NamedSharding on one
device."""
import functools
import jax
import jax.numpy as jnp
from jax import lax, random
import optax
import numpy as np

H, V, T, B = 16, 11, 6, 8

def init(key):
    k1, k2, k3, k4 = random.split(key, 4)
    glorot = jax.nn.initializers.glorot_normal()
    return {"embed": random.normal(k1, (V, H)) * 0.1,
            "cell": {"wx": glorot(k2, (H, 4 * H)), "wh": jax.nn.initializers.orthogonal()(k3, (H, 4 * H)),
                     "b": jnp.zeros(4 * H).at[H:2 * H].set(1.0)},
            "out": {"w": glorot(k4, (H, V)), "b": jnp.zeros(V)},
            "bn": {"scale": jnp.ones(H), "bias": jnp.zeros(H)}}

def lstm_step(p, carry, x):
    h, c = carry
    z = x @ p["wx"] + h @ p["wh"] + p["b"]
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h

def batch_norm(p, stats, x, train, momentum=0.9):
    if train:
        mean, var = x.mean((0, 1)), x.var((0, 1))
        stats = jax.tree.map(lambda s, n: momentum * s + (1 - momentum) * n, stats, {"mean": mean, "var": var})
    else:
        mean, var = stats["mean"], stats["var"]
    return (x - mean) * lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"], stats

def forward(params, stats, tokens, key, train):
    x = params["embed"][tokens]                       # B, T, H
    carry = (jnp.zeros((tokens.shape[0], H)), jnp.zeros((tokens.shape[0], H)))
    _, hs = lax.scan(functools.partial(lstm_step, params["cell"]), carry, jnp.swapaxes(x, 0, 1))
    hs = jnp.swapaxes(hs, 0, 1)
    hs, stats = batch_norm(params["bn"], stats, hs, train)
    if train:
        keep = random.bernoulli(key, 0.9, hs.shape)
        hs = jnp.where(keep, hs / 0.9, 0.0)
    return hs @ params["out"]["w"] + params["out"]["b"], stats

def loss_fn(params, stats, batch, key):
    tokens, targets = batch
    logits, stats = forward(params, stats, tokens, key, True)
    labels = optax.smooth_labels(jax.nn.one_hot(targets, V), 0.1)
    return optax.softmax_cross_entropy(logits, labels).mean(), stats

labels = lambda p: jax.tree_util.tree_map_with_path(lambda path, _: "embed" if "embed" in jax.tree_util.keystr(path) else "rest", p)
tx = optax.MultiSteps(optax.chain(
    optax.clip_by_global_norm(1.0),
    optax.multi_transform({"embed": optax.sgd(0.1, momentum=0.9), "rest": optax.adam(optax.exponential_decay(3e-3, 5, 0.8))}, labels)),
    every_k_schedule=2)

@jax.jit
def step(params, stats, opt_state, batch, key):
    (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, stats, batch, key)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), stats, opt_state, loss

rng = np.random.default_rng(0)
seq = rng.integers(0, V, (64, T + 1))
seq[:, 1:] = (seq[:, :-1] + 3) % V
params = init(random.key(0))
stats = {"mean": jnp.zeros(H), "var": jnp.ones(H)}
opt_state = tx.init(params)
losses = []
key = random.key(1)
for i in range(8):
    key, sub = random.split(key)
    b = seq[(i * B) % 64:(i * B) % 64 + B]
    params, stats, opt_state, loss = step(params, stats, opt_state, (b[:, :-1], b[:, 1:]), sub)
    losses.append(loss)

# per-example gradient norms with vmap
def example_loss(params, tokens, targets):
    logits, _ = forward(params, stats, tokens[None], None, False)
    return optax.softmax_cross_entropy_with_integer_labels(logits[0], targets).mean()
per_ex = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, seq[:4, :-1], seq[:4, 1:])
norms = jax.vmap(lambda g: optax.global_norm(g))(per_ex)

# pmap over the one local device; shard_map with a one-device mesh
n = jax.local_device_count()
pm = jax.pmap(lambda x: lax.psum(x ** 2, "d"), axis_name="d")(jnp.arange(float(n))[:, None] * jnp.ones((n, 3)))
from jax.sharding import Mesh, PartitionSpec as P, NamedSharding
mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
from jax.experimental.shard_map import shard_map
sm = shard_map(lambda x: lax.psum(x.sum(0, keepdims=True), "data"), mesh=mesh, in_specs=P("data"), out_specs=P())(jnp.arange(8.0).reshape(4, 2))
sharded = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("data")))
jitted = jax.jit(lambda x: x * 2, out_shardings=NamedSharding(mesh, P()))(sharded)
TOLERANCE = 1e-3
RESULT = dict(losses=jnp.stack(losses), norms=norms, stats=stats, pm=pm, sm=sm, jitted=jitted,
              count=opt_state.mini_step)

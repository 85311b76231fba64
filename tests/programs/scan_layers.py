"""Scan over layers: parameters of identical layers stacked by vmap(init) (and by tree.map over
a list), a checkpointed lax.scan body, checked against the unrolled loop, trained by optax.lion."""
import functools
import jax
import jax.numpy as jnp
from jax import lax, random
import optax

D, L = 8, 4

def init_layer(key):
    k1, k2 = random.split(key)
    return {"w1": random.normal(k1, (D, 2 * D)) / jnp.sqrt(D), "w2": random.normal(k2, (2 * D, D)) / jnp.sqrt(2 * D),
            "ln": jnp.ones(D)}

keys = random.split(random.key(0), L)
stacked = jax.vmap(init_layer)(keys)                      # every leaf gets a leading L axis
listed = [init_layer(k) for k in keys]
restacked = jax.tree.map(lambda *xs: jnp.stack(xs), *listed)

def layer(x, p):
    h = x * p["ln"] / jnp.sqrt(jnp.mean(x ** 2, -1, keepdims=True) + 1e-6)
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]

def model(params, x):
    body = jax.checkpoint(lambda c, p: (layer(c, p), None), prevent_cse=False)
    y, _ = lax.scan(body, x, params)
    return y

def unrolled(params, x):
    for i in range(L):
        x = layer(x, jax.tree.map(lambda a: a[i], params))
    return x

x = random.normal(random.key(1), (5, D))
y = jax.random.normal(random.key(2), (5, D))
loss = lambda p: jnp.mean((model(p, x) - y) ** 2)
opt = optax.lion(1e-3, weight_decay=0.01)
state = opt.init(stacked)
params = stacked
losses = []
for _ in range(5):
    l, g = jax.jit(jax.value_and_grad(loss))(params)
    upd, state = opt.update(g, state, params)
    params = optax.apply_updates(params, upd)
    losses.append(l)
grads_scan = jax.grad(loss)(stacked)
grads_unrolled = jax.grad(lambda p: jnp.mean((unrolled(p, x) - y) ** 2))(stacked)
same_stack = jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.allclose(a, b)), stacked, restacked))
RESULT = dict(losses=jnp.stack(losses), same=same_stack,
              grad_diff=max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(grads_scan), jax.tree.leaves(grads_unrolled))) < 1e-5,
              out=model(params, x), shapes=str(jax.tree.map(jnp.shape, stacked)))

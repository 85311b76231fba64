"""An Equinox-like module pattern without a library: modules as classes registered with
register_pytree_node_class, jit and grad over them, tree_util.Partial, tree.map with is_leaf,
key paths, eval_shape with ShapeDtypeStruct."""
import jax
import jax.numpy as jnp
from jax import random
from jax.tree_util import register_pytree_node_class, Partial
import dataclasses

@register_pytree_node_class
class Linear:
    def __init__(self, weight, bias, activation="relu"):
        self.weight = weight
        self.bias = bias
        self.activation = activation   # static
    def tree_flatten(self):
        return (self.weight, self.bias), self.activation
    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, activation=aux)
    @classmethod
    def init(cls, key, din, dout, activation="relu"):
        wkey, bkey = random.split(key)
        w = jax.nn.initializers.lecun_normal()(wkey, (din, dout))
        b = jax.nn.initializers.zeros(bkey, (dout,))
        return cls(w, b, activation)
    def __call__(self, x):
        y = x @ self.weight + self.bias
        return jax.nn.relu(y) if self.activation == "relu" else y

@register_pytree_node_class
class MLP:
    def __init__(self, layers):
        self.layers = layers
    def tree_flatten(self):
        return (self.layers,), None
    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

@dataclasses.dataclass
class Config:
    width: int = 16
    depth: int = 2

def make_mlp(key, cfg, din, dout):
    keys = random.split(key, cfg.depth + 1)
    sizes = [din] + [cfg.width] * cfg.depth + [dout]
    layers = [Linear.init(k, a, b, "relu" if i < cfg.depth else "none")
              for i, (k, a, b) in enumerate(zip(keys, sizes[:-1], sizes[1:]))]
    return MLP(layers)

def is_array(x):
    return isinstance(x, jax.Array)

def partition(tree):
    dyn = jax.tree.map(lambda x: x if is_array(x) else None, tree)
    static = jax.tree.map(lambda x: None if is_array(x) else x, tree)
    return dyn, static

@jax.jit
def loss_fn(model, x, y):
    pred = jax.vmap(model)(x)
    return jnp.mean((pred - y) ** 2)

@jax.jit
def step(model, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(model, x, y)
    model = jax.tree.map(lambda p, g: p - 0.05 * g, model, grads)
    return model, loss

key = random.PRNGKey(0)
model = make_mlp(key, Config(), 3, 2)
x = random.normal(random.PRNGKey(1), (32, 3))
y = jnp.stack([jnp.sin(x[:, 0]), x[:, 1] * x[:, 2]], -1)
losses = []
for _ in range(10):
    model, l = step(model, x, y)
    losses.append(l)

# Partial as a pytree through jit
scale = Partial(jnp.multiply, jnp.float32(3.0))
apply_partial = jax.jit(lambda f, v: f(v))(scale, jnp.arange(3.0))
# tree utilities with is_leaf, paths, keystr
leaves_with_path = jax.tree_util.tree_leaves_with_path(model)
path_names = [jax.tree_util.keystr(p) for p, _ in leaves_with_path]
norms = jax.tree_util.tree_map_with_path(lambda p, v: jnp.linalg.norm(v), model)
counts = jax.tree.map(lambda l: l.weight.size + l.bias.size, model.layers,
                      is_leaf=lambda n: isinstance(n, Linear))
n_leaves = len(jax.tree.leaves(model))
struct = jax.tree.structure(model)
rebuilt = jax.tree.unflatten(struct, jax.tree.leaves(model))
shapes = jax.eval_shape(lambda m, v: jax.vmap(m)(v), model, jax.ShapeDtypeStruct((7, 3), jnp.float32))
RESULT = dict(losses=jnp.stack(losses), apply_partial=apply_partial, counts=jnp.array(counts),
              n_leaves=n_leaves, norm=jax.tree.leaves(norms), shape=jnp.array(shapes.shape),
              same=jnp.allclose(rebuilt(x), model(x)), path_len=len(path_names),
              paths_ok=path_names[0] == ".layers[0].weight" or path_names[0])

"""A tiny GPT-2 trainer: embeddings, causal attention with a mask, layer norm, checkpointed blocks,
optax adamw with a warmup-cosine schedule, a weight-decay mask and gradient clipping, jit with
donate_argnums, a checkpoint through tree utilities and greedy decoding in a fori_loop."""
import functools
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import random

VOCAB, CTX, D, HEADS, LAYERS = 32, 8, 16, 2, 1

def init_params(key):
    keys = iter(random.split(key, 4 + 4 * LAYERS))
    normal = jax.nn.initializers.normal(0.02)
    params = {
        "wte": normal(next(keys), (VOCAB, D)),
        "wpe": normal(next(keys), (CTX, D)),
        "ln_f": {"scale": jnp.ones(D), "bias": jnp.zeros(D)},
        "blocks": [],
    }
    for _ in range(LAYERS):
        params["blocks"].append({
            "ln1": {"scale": jnp.ones(D), "bias": jnp.zeros(D)},
            "attn": {"w_qkv": normal(next(keys), (D, 3 * D)), "b_qkv": jnp.zeros(3 * D),
                     "w_out": normal(next(keys), (D, D)), "b_out": jnp.zeros(D)},
            "ln2": {"scale": jnp.ones(D), "bias": jnp.zeros(D)},
            "mlp": {"w_in": jax.nn.initializers.xavier_uniform()(next(keys), (D, 4 * D)),
                    "b_in": jnp.zeros(4 * D),
                    "w_out": jax.nn.initializers.he_normal()(next(keys), (4 * D, D)),
                    "b_out": jnp.zeros(D)},
        })
    return params

def layer_norm(p, x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["scale"] + p["bias"]

def attention(p, x, mask):
    T = x.shape[0]
    qkv = x @ p["w_qkv"] + p["b_qkv"]
    q, k, v = jnp.split(qkv, 3, axis=-1)
    split = lambda t: t.reshape(T, HEADS, D // HEADS).transpose(1, 0, 2)
    q, k, v = map(split, (q, k, v))
    att = jnp.einsum("htd,hsd->hts", q, k) / jnp.sqrt(D // HEADS).astype(x.dtype)
    att = jnp.where(mask[None], att, jnp.finfo(att.dtype).min)
    att = jax.nn.softmax(att, axis=-1)
    y = jnp.einsum("hts,hsd->htd", att, v).transpose(1, 0, 2).reshape(T, D)
    return y @ p["w_out"] + p["b_out"]

def block(p, x, mask):
    x = x + attention(p["attn"], layer_norm(p["ln1"], x), mask)
    h = jax.nn.gelu(layer_norm(p["ln2"], x) @ p["mlp"]["w_in"] + p["mlp"]["b_in"], approximate=True)
    return x + h @ p["mlp"]["w_out"] + p["mlp"]["b_out"]

def forward(params, tokens):
    T = tokens.shape[0]
    x = params["wte"][tokens] + params["wpe"][jnp.arange(T)]
    mask = jnp.tril(jnp.ones((T, T), dtype=bool))
    for p in params["blocks"]:
        x = jax.checkpoint(block)(p, x, mask)
    x = layer_norm(params["ln_f"], x)
    return x @ params["wte"].T

def loss_fn(params, batch):
    inputs, targets = batch[:, :-1], batch[:, 1:]
    logits = jax.vmap(forward, in_axes=(None, 0))(params, inputs)
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()

schedule = optax.warmup_cosine_decay_schedule(0.0, 3e-3, warmup_steps=3, decay_steps=12, end_value=1e-4)
mask_fn = lambda p: jax.tree_util.tree_map_with_path(lambda path, x: x.ndim > 1, p)
optimizer = optax.chain(optax.clip_by_global_norm(1.0),
                        optax.adamw(schedule, b1=0.9, b2=0.95, weight_decay=0.1, mask=mask_fn))

@functools.partial(jax.jit, donate_argnums=(0, 1))
def train_step(params, opt_state, batch):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss, optax.global_norm(grads)

rng = np.random.default_rng(0)
data = rng.integers(0, VOCAB, size=(64, CTX + 1)).astype(np.int32)
data[:, 1::2] = (data[:, 0::2][:, :data[:, 1::2].shape[1]] + 1) % VOCAB   # learnable pattern
params = init_params(random.PRNGKey(0))
opt_state = optimizer.init(params)
losses, norms = [], []
for step in range(12):
    batch = jnp.asarray(data[(step * 8) % 64:(step * 8) % 64 + 8])
    params, opt_state, loss, gnorm = train_step(params, opt_state, batch)
    losses.append(loss); norms.append(gnorm)

# checkpointing with tree utilities: flatten to a dict of numpy arrays and back
leaves, treedef = jax.tree_util.tree_flatten(params)
ckpt = {f"{i}": np.asarray(x) for i, x in enumerate(leaves)}
restored = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(ckpt[f"{i}"]) for i in range(len(leaves))])
flat_with_paths = jax.tree_util.tree_flatten_with_path(params)[0]
names = sorted(jax.tree_util.keystr(p) for p, _ in flat_with_paths)
n_params = sum(x.size for x in jax.tree.leaves(params))
same = all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), params, restored)))

# greedy decoding with a fixed-size buffer in lax.fori_loop
@jax.jit
def generate(params, prompt):
    buf = jnp.zeros(CTX, jnp.int32).at[0].set(prompt)
    def body(i, buf):
        logits = forward(params, buf)
        nxt = jnp.argmax(logits[i - 1]).astype(jnp.int32)
        return buf.at[i].set(nxt)
    return jax.lax.fori_loop(1, CTX, body, buf)

TOLERANCE = 2e-3
RESULT = dict(losses=jnp.stack(losses), norms=jnp.stack(norms), n_params=n_params, same=same,
              n_names=len(names), first=names[0], lr=schedule(5),
              gen=generate(params, 3))

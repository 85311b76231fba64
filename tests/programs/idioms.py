"""Idioms of real JAX code, one after another: debug.print inside jit, stop_gradient, the nn
initializers, fold_in and the samplers, vmap with dict in_axes, static_argnames, einsum paths,
associative_scan, checkpoint policies, custom_vjp with nondiff_argnums, custom_jvp, key paths,
eval_shape, jax.dtypes, control flow and jax.nn functions."""
import functools
from functools import partial
import jax
import jax.numpy as jnp
from jax import lax, random
import numpy as np

out = {}
key = random.PRNGKey(42)
k1, k2, k3 = random.split(key, 3)

# jax.debug.print inside jit (output goes to stdout; the value must be unaffected)
@jax.jit
def noisy(x):
    jax.debug.print("x sum = {s}", s=x.sum())
    jax.debug.print("first {}", x[0])
    return x * 2
out["debug"] = noisy(jnp.arange(3.0))

# stop_gradient
f = lambda x: jnp.sum(x ** 2 + lax.stop_gradient(x) * x)
out["stopgrad"] = jax.grad(f)(jnp.arange(3.0))

# initializers
for name, init in [("glorot_u", jax.nn.initializers.glorot_uniform()),
                   ("glorot_n", jax.nn.initializers.glorot_normal()),
                   ("lecun_n", jax.nn.initializers.lecun_normal()),
                   ("he_u", jax.nn.initializers.he_uniform()),
                   ("kaiming_n", jax.nn.initializers.kaiming_normal()),
                   ("orth", jax.nn.initializers.orthogonal()),
                   ("trunc", jax.nn.initializers.truncated_normal(0.02)),
                   ("vs", jax.nn.initializers.variance_scaling(2.0, "fan_out", "uniform")),
                   ("const", jax.nn.initializers.constant(0.5)),
                   ("uniform", jax.nn.initializers.uniform(0.1))]:
    out["init_" + name] = init(k1, (4, 6), jnp.float32)

# fold_in, split, various samplers
out["fold"] = random.key_data(random.fold_in(random.key(0), 7))
out["fold_old"] = random.fold_in(key, 3)
out["samples"] = dict(
    normal=random.normal(k2, (3,)), uniform=random.uniform(k2, (3,), minval=-1, maxval=2),
    randint=random.randint(k2, (4,), 0, 10), perm=random.permutation(k2, 6),
    choice=random.choice(k2, 10, (3,), replace=False), bern=random.bernoulli(k2, 0.3, (5,)),
    cat=random.categorical(k2, jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(6,)),
    gumbel=random.gumbel(k2, (2,)), tn=random.truncated_normal(k2, -1.0, 1.0, (3,)),
    mvn=random.multivariate_normal(k2, jnp.zeros(2), jnp.eye(2), (2,)),
    shuffle_keys=random.split(k3, 4))

# vmap with dict in_axes
def model(params, x):
    return params["w"] @ x + params["b"]
params = {"w": random.normal(k1, (3, 2)), "b": jnp.ones(3)}
xs = random.normal(k2, (5, 2))
out["vmap_dict"] = jax.vmap(model, in_axes=({"w": None, "b": None}, 0))(params, xs)
out["vmap_dict2"] = jax.vmap(model, in_axes=({"w": 0, "b": None}, None))(
    {"w": jnp.stack([params["w"]] * 2), "b": params["b"]}, xs[0])
out["vmap_out"] = jax.vmap(lambda x: (x, x * 2), out_axes=(0, 1))(jnp.ones((2, 3)))[1]

# jit with static_argnames
@partial(jax.jit, static_argnames=("n", "mode"))
def power(x, n, mode="sum"):
    y = x ** n
    return y.sum() if mode == "sum" else y.mean()
out["static"] = jnp.stack([power(jnp.arange(4.0), n=2), power(jnp.arange(4.0), n=3, mode="mean")])

# einsum with paths
a, b, c = random.normal(k1, (3, 4)), random.normal(k2, (4, 5)), random.normal(k3, (5, 2))
out["einsum"] = jnp.einsum("ij,jk,kl->il", a, b, c, optimize="optimal")
out["einsum_greedy"] = jnp.einsum("ij,jk,kl->il", a, b, c, optimize="greedy")
path, _ = jnp.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
out["einsum_path_len"] = len(path)
out["einsum_trace"] = jnp.einsum("ii", a[:, :3])
out["einsum_ellipsis"] = jnp.einsum("...ij,...jk->...ik", jnp.ones((2, 3, 4)), jnp.ones((2, 4, 1)))

# associative_scan
out["cumsum_scan"] = lax.associative_scan(jnp.add, jnp.arange(1.0, 9.0))
def lin_combine(e1, e2):
    a1, b1 = e1
    a2, b2 = e2
    return a1 * a2, a2 * b1 + b2
aa, bb = random.uniform(k1, (8,)), random.normal(k2, (8,))
out["linrec"] = lax.associative_scan(lin_combine, (aa, bb))[1]
out["rev_scan"] = lax.associative_scan(jnp.maximum, bb, reverse=True)

# checkpoint with policy, and remat
def mlp(x, w):
    return jnp.tanh(jnp.tanh(x @ w) @ w.T).sum()
w = random.normal(k1, (4, 4)) * 0.5
xx = random.normal(k2, (3, 4))
out["ckpt"] = jax.grad(jax.checkpoint(mlp, policy=jax.checkpoint_policies.nothing_saveable), argnums=1)(xx, w)
out["remat"] = jax.grad(jax.remat(mlp), argnums=1)(xx, w)
out["ckpt_dots"] = jax.grad(jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable), argnums=1)(xx, w)

# custom_vjp with nondiff_argnums
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def clip_gradient(lo_hi, x):
    return x
def clip_fwd(lo_hi, x):
    return x, None
def clip_bwd(lo_hi, res, g):
    lo, hi = lo_hi
    return (jnp.clip(g, lo, hi),)
clip_gradient.defvjp(clip_fwd, clip_bwd)
out["clipgrad"] = jax.grad(lambda x: jnp.sum(clip_gradient((-0.5, 0.5), x) * jnp.arange(4.0)))(jnp.ones(4))

# custom_jvp
@jax.custom_jvp
def safe_log1pexp(x):
    return jnp.log1p(jnp.exp(x))
@safe_log1pexp.defjvp
def _(primals, tangents):
    x, = primals
    t, = tangents
    return safe_log1pexp(x), t * jax.nn.sigmoid(x)
out["custom_jvp"] = jax.vmap(jax.grad(safe_log1pexp))(jnp.array([-100.0, 0.0, 100.0]))

# tree utilities
tree = {"a": [1.0, jnp.ones(2)], "b": (jnp.zeros(3), {"c": 2.0})}
out["paths"] = ",".join(jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0])
out["with_path"] = jax.tree_util.tree_leaves(jax.tree_util.tree_map_with_path(
    lambda p, x: jnp.sum(jnp.asarray(x)) + len(p), tree))
out["reduce"] = jax.tree_util.tree_reduce(lambda s, x: s + jnp.sum(x), tree, 0.0)
out["transpose"] = jax.tree.leaves(jax.tree_util.tree_transpose(
    jax.tree.structure([0, 0]), jax.tree.structure((0, 0)), [(1, 2), (3, 4)]))
out["all"] = jax.tree_util.tree_all(jax.tree.map(lambda x: bool(jnp.all(jnp.asarray(x) >= 0)), tree))
out["map_none"] = jax.tree.leaves(jax.tree.map(lambda x: x is None, {"x": None, "y": 1}, is_leaf=lambda x: x is None))
out["keys"] = [str(k) for k in jax.tree_util.tree_flatten_with_path({"z": 1, "a": 2})[0][0][0]]

# eval_shape / ShapeDtypeStruct
def big(x, y):
    return jnp.dot(x, y), (x.sum(0), jnp.zeros((7,), jnp.int32))
shapes = jax.eval_shape(big, jax.ShapeDtypeStruct((3, 4), jnp.float32), jax.ShapeDtypeStruct((4, 5), jnp.float32))
out["eval_shape"] = str(jax.tree.map(lambda s: (s.shape, str(s.dtype)), shapes))

# lax control flow bits
out["switch"] = jnp.stack([lax.switch(i, [jnp.sin, jnp.cos, lambda x: -x], 1.0) for i in range(3)])
out["while"] = lax.while_loop(lambda c: c[1] < 100, lambda c: (c[0] + 1, c[1] * 2), (0, 1))[0]
out["scan_unroll"] = lax.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(5.0), unroll=2)[1]
out["map"] = lax.map(lambda x: x ** 2, jnp.arange(4.0))
out["fori_static"] = lax.fori_loop(0, 5, lambda i, x: x + i, 0.0)
out["dyn_slice"] = lax.dynamic_update_slice(jnp.zeros(6), jnp.ones(2), (3,))
out["select_n"] = lax.select(jnp.array([True, False]), jnp.ones(2), jnp.zeros(2))

# jacobians, hessians, linearize, vjp with has_aux
def fn(x):
    return jnp.sin(x) * x.sum(), x.prod()
out["jacfwd"] = jax.jacfwd(lambda x: fn(x)[0])(jnp.arange(1.0, 4.0))
out["jacrev_aux"] = jax.jacrev(fn, has_aux=True)(jnp.arange(1.0, 4.0))[0]
out["hess"] = jax.hessian(lambda x: jnp.sum(x ** 3))(jnp.arange(3.0))
y, f_jvp = jax.linearize(jnp.sin, 1.0)
out["linearize"] = f_jvp(2.0)
out["vag_aux"] = jax.value_and_grad(lambda x: (x ** 2, x * 3), has_aux=True)(2.0)[1]

# dtype idioms
out["dtypes"] = ",".join(str(v) for v in [jnp.zeros(2).dtype, jnp.arange(3).dtype,
    (jnp.ones(2, jnp.int8) + 1).dtype, (jnp.ones(2, jnp.bfloat16) * 2.0).dtype,
    jnp.result_type(jnp.float16, 1.0), jnp.promote_types(jnp.int8, jnp.uint8),
    jnp.finfo(jnp.float32).eps, jnp.iinfo(jnp.int32).max])
out["canon"] = str(jax.dtypes.canonicalize_dtype(np.float64))
out["issub"] = bool(jnp.issubdtype(jnp.bfloat16, jnp.floating))

# nn functions
z = random.normal(k3, (2, 5))
out["nn"] = dict(relu=jax.nn.relu(z), gelu=jax.nn.gelu(z), silu=jax.nn.silu(z),
                 softmax=jax.nn.softmax(z), lsm=jax.nn.log_softmax(z, axis=0),
                 onehot=jax.nn.one_hot(jnp.array([0, 2]), 3), lse=jax.nn.logsumexp(z, axis=-1),
                 standardize=jax.nn.standardize(z, axis=-1), glu=jax.nn.glu(jnp.ones((2, 4))),
                 elu=jax.nn.elu(z), swish=jax.nn.swish(z), softplus=jax.nn.softplus(z),
                 dpa=jax.nn.dot_product_attention(jnp.ones((1, 3, 2, 4)), jnp.ones((1, 3, 2, 4)),
                                                  jnp.ones((1, 3, 2, 4)), is_causal=True))
RESULT = out

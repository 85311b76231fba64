"""Advanced autodiff and lax idioms: custom_root, custom_linear_solve, cg and gmres, jacobians of
pytrees, linear_transpose, lax.reduce, cumulative reductions, top_k, vectorize with signatures,
pure_callback and debug.callback, defjvps, custom_gradient, checkpoint with static arguments,
scan without xs, Hessian-vector products and grad with allow_int."""
import functools
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

out = {}
# implicit differentiation of a fixed point with custom_root
def newton_sqrt(a):
    f = lambda x: x ** 2 - a
    solve = lambda g, y: lax.while_loop(lambda x: jnp.abs(g(x)) > 1e-6, lambda x: x - g(x) / (2 * x + 1e-12), 1.0)
    tangent_solve = lambda g, y: y / g(1.0)
    return lax.custom_root(f, 1.0, solve, tangent_solve)
out["custom_root"] = jnp.stack([newton_sqrt(2.0), jax.grad(newton_sqrt)(2.0)])

# custom_linear_solve
A = jnp.array([[4.0, 1.0], [1.0, 3.0]])
mv = lambda x: A @ x
def solve(matvec, b):
    return jnp.linalg.solve(A, b)
out["custom_linear_solve"] = jax.grad(lambda b: lax.custom_linear_solve(mv, b, solve, symmetric=True).sum())(jnp.ones(2))
out["cg"] = jax.scipy.sparse.linalg.cg(mv, jnp.ones(2), tol=1e-8)[0]
out["gmres"] = jax.scipy.sparse.linalg.gmres(mv, jnp.ones(2), tol=1e-8)[0]

# jacobian of pytree in/out
def f(p):
    return {"y": jnp.sin(p["a"]) * p["b"], "z": p["a"].sum()}
jac = jax.jacobian(f)({"a": jnp.arange(3.0), "b": 2.0})
out["jac"] = jac["y"]["a"]
out["jac_b"] = jac["y"]["b"]
out["linear_transpose"] = jax.linear_transpose(lambda x: (x * 2.0, x.sum()), jnp.ones(3))((jnp.ones(3), 1.0))[0]

# reductions
x = jnp.arange(12.0).reshape(3, 4)
out["reduce"] = lax.reduce(x, 0.0, lax.add, (0,))
out["avg_pool"] = lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID") / 4.0
out["cummax"] = lax.cummax(jnp.array([1.0, 3.0, 2.0, 5.0]))
out["cumlogsumexp"] = lax.cumlogsumexp(jnp.array([0.0, 1.0, 2.0]))
out["top_k"] = lax.top_k(jnp.array([3.0, 1.0, 4.0, 1.5]), 2)[0]

# vectorize with signature
matvec = jnp.vectorize(lambda m, v: m @ v, signature="(n,m),(m)->(n)")
out["vectorize"] = matvec(jnp.ones((5, 2, 3)), jnp.arange(3.0))
out["vectorize_excl"] = jnp.vectorize(lambda a, n: a ** n, excluded={1})(jnp.arange(3.0), 2)

# callbacks
def host_fn(x):
    return np.sin(np.asarray(x)).astype(np.float32)
pc = jax.pure_callback(host_fn, jax.ShapeDtypeStruct((3,), jnp.float32), jnp.arange(3.0))
out["pure_callback"] = pc
out["pure_callback_vmap"] = jax.vmap(lambda v: jax.pure_callback(host_fn, jax.ShapeDtypeStruct((), jnp.float32), v, vmap_method="sequential"))(jnp.arange(3.0))
seen = []
jax.jit(lambda v: (jax.debug.callback(lambda a: seen.append(float(a)), v.sum()), v)[1])(jnp.ones(2))
out["debug_callback"] = jnp.array(seen)

# custom derivatives
@jax.custom_jvp
def f2(x, y):
    return x * y
f2.defjvps(lambda t, ans, x, y: t * y * 2, lambda t, ans, x, y: t * x)
out["defjvps"] = jnp.stack(jax.grad(f2, argnums=(0, 1))(2.0, 3.0))

@jax.custom_gradient
def clip_grad_fn(x):
    return x ** 2, lambda g: (jnp.clip(g * 2 * x, -1.0, 1.0),)
out["custom_gradient"] = jax.vmap(jax.grad(clip_grad_fn))(jnp.array([0.1, 2.0]))

@functools.partial(jax.checkpoint, static_argnums=(1,))
def repeated(x, n):
    for _ in range(n):
        x = jnp.sin(x)
    return x
out["ckpt_static"] = jax.grad(repeated)(1.0, 3)

# scan without xs, fori with unroll, named_call
out["scan_len"] = lax.scan(lambda c, _: (c * 2, c), 1.0, None, length=4)[1]
out["fori_unroll"] = lax.fori_loop(0, 6, lambda i, c: c + i, 0, unroll=2)
with jax.named_scope("block"):
    out["named"] = jax.named_call(lambda x: x + 1, name="inc")(1.0)
part = jax.tree_util.Partial(jnp.add, 1.0)
out["partial_vmap"] = jax.vmap(lambda f, x: f(x), in_axes=(None, 0))(part, jnp.arange(3.0))

# higher-order: hvp, jvp of grad, jacfwd(jacrev)
g = lambda v: jnp.sum(jnp.tanh(v) ** 2)
v = jnp.array([0.1, 0.2, 0.3])
out["hvp"] = jax.jvp(jax.grad(g), (v,), (jnp.ones(3),))[1]
out["hess"] = jax.jacfwd(jax.jacrev(g))(v)
out["vjp_tuple"] = jax.vjp(lambda a, b: a * b, 2.0, 3.0)[1](1.0)
out["value_and_grad_argnums"] = jax.value_and_grad(lambda a, b: a * b ** 2, argnums=(0, 1))(2.0, 3.0)[1]
out["grad_holomorphic"] = jax.grad(lambda z: z ** 2, holomorphic=True)(1.0 + 1.0j)
out["grad_allow_int"] = jax.grad(lambda x, n: x * n, allow_int=True)(2.0, 3)
RESULT = out

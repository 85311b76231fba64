"""Snippets in the style of JAX's documentation: explicit state, pytrees (register_dataclass, keys),
.at[] updates, size-static NumPy, linear algebra, FFTs, convolutions, AOT lowering, PRNG keys
and vmap with collectives."""
import functools
from dataclasses import dataclass
from typing import NamedTuple, Any
import jax
import jax.numpy as jnp
from jax import lax, random
import numpy as np

out = {}

# --- stateful computations (JAX docs) ---
class CounterState(NamedTuple):
    count: jnp.ndarray

def count(state: CounterState, inc):
    return CounterState(state.count + inc), state.count

state = CounterState(jnp.int32(0))
vals = []
for i in range(3):
    state, v = jax.jit(count)(state, 2)
    vals.append(v)
out["counter"] = jnp.stack(vals)

class Params(NamedTuple):
    weight: jnp.ndarray
    bias: jnp.ndarray

def init(rng):
    weights_key, bias_key = random.split(rng)
    return Params(random.normal(weights_key, ()), random.normal(bias_key, ()))

def loss(params, x, y):
    pred = params.weight * x + params.bias
    return jnp.mean((pred - y) ** 2)

@jax.jit
def update(params, x, y):
    grad = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.005 * g, params, grad)

xs = np.random.default_rng(0).normal(size=(100,)).astype(np.float32)
noise = np.random.default_rng(1).normal(size=(100,)).astype(np.float32)
ys = xs * 3 - 1 + noise
params = init(random.key(123))
for _ in range(50):
    params = update(params, xs, ys)
out["linreg"] = jnp.stack([params.weight, params.bias])

# --- pytrees: dataclasses, register_pytree_node, register_dataclass, keys ---
@functools.partial(jax.tree_util.register_dataclass, data_fields=["x", "y"], meta_fields=["op"])
@dataclass
class MyContainer:
    x: jnp.ndarray
    y: jnp.ndarray
    op: str

c = MyContainer(jnp.ones(2), jnp.arange(2.0), "add")
out["dataclass"] = jax.jit(lambda c: c.x + c.y if c.op == "add" else c.x)(c)
out["dataclass_leaves"] = len(jax.tree.leaves(c))

class Special:
    def __init__(self, x, y):
        self.x = x
        self.y = y

jax.tree_util.register_pytree_node(
    Special, lambda s: ((s.x, s.y), None), lambda aux, ch: Special(*ch))
out["special"] = sum(jnp.sum(v) for v in jax.tree.leaves(jax.tree.map(lambda v: v * 10, Special(1.0, jnp.ones(2)))))

class WithKeys:
    def __init__(self, a, b):
        self.a, self.b = a, b
jax.tree_util.register_pytree_with_keys(
    WithKeys,
    lambda t: (((jax.tree_util.GetAttrKey("a"), t.a), (jax.tree_util.GetAttrKey("b"), t.b)), None),
    lambda aux, ch: WithKeys(*ch))
out["keys_path"] = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(WithKeys(1, [2, 3]))[0]]
out["keys_simple"] = jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path({"q": [0, 7]})[0][1][0], simple=True, separator="/")

# --- immutable updates ---
x = jnp.arange(6.0)
out["at"] = dict(set=x.at[2].set(10.0), add=x.at[::2].add(1.0), mul=x.at[1:3].multiply(2.0),
                 mn=x.at[jnp.array([0, 0])].min(-1.0), mx=x.at[-1].max(100.0),
                 get=x.at[jnp.array([1, 10])].get(mode="fill", fill_value=-5.0),
                 drop=x.at[jnp.array([1, 10])].set(7.0, mode="drop"),
                 clip=x.at[10].get(mode="clip"), div=x.at[1].divide(2.0), pw=x.at[2].power(2.0),
                 apply=x.at[3].apply(jnp.sin))

# --- size-static numpy ---
y = jnp.array([0, 3, 0, 5, 3, 1])
out["np"] = dict(nonzero=jnp.nonzero(y, size=5, fill_value=-1)[0],
                 where=jnp.where(y > 1, size=4)[0],
                 unique=jnp.unique(y, size=5, fill_value=9),
                 unique_counts=jnp.unique(y, return_counts=True, size=4)[1],
                 bincount=jnp.bincount(y, length=7), argsort=jnp.argsort(y, stable=True),
                 searchsorted=jnp.searchsorted(jnp.array([1.0, 2.0, 4.0]), jnp.array([0.5, 2.0, 5.0]), side="right"),
                 quantile=jnp.quantile(jnp.arange(10.0), jnp.array([0.1, 0.5, 0.9])),
                 percentile=jnp.percentile(jnp.arange(10.0), 25.0, method="nearest"),
                 hist=jnp.histogram(jnp.arange(10.0), bins=3)[0],
                 cumprod=jnp.cumprod(jnp.arange(1.0, 5.0)), diff=jnp.diff(y, n=2),
                 take=jnp.take(jnp.arange(5), jnp.array([0, 7]), mode="clip"),
                 roll=jnp.roll(jnp.arange(6).reshape(2, 3), 1, axis=1),
                 pad=jnp.pad(jnp.ones((2, 2)), ((1, 0), (0, 2)), mode="reflect"),
                 tri=jnp.triu(jnp.ones((3, 3)), k=1), kron=jnp.kron(jnp.eye(2), jnp.ones((2, 2))),
                 meshgrid=jnp.meshgrid(jnp.arange(2), jnp.arange(3), indexing="ij")[1],
                 lexsort=jnp.lexsort((jnp.array([1, 0, 1]), jnp.array([2, 2, 1]))),
                 interp=jnp.interp(jnp.array([0.5, 1.5]), jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 10.0, 0.0])),
                 clip=jnp.clip(jnp.arange(5), min=1, max=3), nan=jnp.nanmean(jnp.array([1.0, jnp.nan, 3.0])))

# --- linear algebra ---
A = random.normal(random.key(1), (4, 4))
S = A @ A.T + 4 * jnp.eye(4)
b = random.normal(random.key(2), (4,))
w, v = jnp.linalg.eigh(S)
out["linalg"] = dict(solve=jnp.linalg.solve(S, b), eigh=w, chol=jnp.linalg.cholesky(S),
                     slogdet=jnp.linalg.slogdet(S)[1], inv=jnp.linalg.inv(S),
                     svdvals=jnp.linalg.svd(A, compute_uv=False), norm=jnp.linalg.norm(A, ord="fro"),
                     qr_r_diag=jnp.abs(jnp.diag(jnp.linalg.qr(A)[1])), pinv=jnp.linalg.pinv(A[:, :3]),
                     lstsq=jnp.linalg.lstsq(A[:, :3], b)[0], det=jnp.linalg.det(S),
                     matrix_power=jnp.linalg.matrix_power(S / 10, 3),
                     cho_solve=jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(S), b),
                     tri_solve=jax.scipy.linalg.solve_triangular(jnp.tril(S), b, lower=True),
                     expm=jax.scipy.linalg.expm(S / 10))

# --- fft ---
sig = jnp.sin(jnp.linspace(0, 8 * jnp.pi, 32))
out["fft"] = dict(rfft=jnp.abs(jnp.fft.rfft(sig)), irfft=jnp.fft.irfft(jnp.fft.rfft(sig)),
                  fftfreq=jnp.fft.fftfreq(8, d=0.5), fftshift=jnp.fft.fftshift(jnp.arange(6)),
                  fft2=jnp.abs(jnp.fft.fft2(jnp.ones((4, 4)))))

# --- convolutions ---
img = random.normal(random.key(3), (1, 8, 8, 2))
kern = random.normal(random.key(4), (3, 3, 2, 4))
dn = lax.conv_dimension_numbers(img.shape, kern.shape, ("NHWC", "HWIO", "NHWC"))
out["conv"] = dict(
    general=lax.conv_general_dilated(img, kern, (1, 1), "SAME", (1, 1), (1, 1), dn),
    dilated=lax.conv_general_dilated(img, kern, (2, 2), ((1, 1), (2, 2)), lhs_dilation=(1, 1), rhs_dilation=(2, 2), dimension_numbers=dn),
    grouped=lax.conv_general_dilated(img, kern[:, :, :1, :], (1, 1), "VALID", dimension_numbers=dn, feature_group_count=2),
    transpose=lax.conv_transpose(img, kern, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
    conv1d=jnp.convolve(jnp.arange(5.0), jnp.array([1.0, 0.5]), mode="same"),
    conv2d=jax.scipy.signal.convolve2d(jnp.ones((4, 4)), jnp.ones((2, 2)), mode="valid"),
    nchw=lax.conv(jnp.transpose(img, (0, 3, 1, 2)), jnp.transpose(kern, (3, 2, 0, 1)), (1, 1), "SAME"),
    pool=lax.reduce_window(img, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))

# --- AOT and introspection ---
f = jax.jit(lambda x, y: jnp.sin(x) @ y)
lowered = f.lower(jnp.ones((2, 3)), jnp.ones((3, 2)))
compiled = lowered.compile()
out["aot"] = compiled(jnp.ones((2, 3)), jnp.ones((3, 2)))
out["jaxpr_eqns"] = len(jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0).jaxpr.eqns)
out["typeof"] = str(jax.typeof(jnp.ones((2, 3), jnp.bfloat16)))
out["devices"] = len(jax.devices()) >= 1
out["block"] = jax.block_until_ready(jnp.ones(3) * 2)
out["device_put"] = jax.device_put(np.arange(3), jax.devices()[0])

# --- random keys ---
k = random.key(0)
out["keys"] = dict(data=random.key_data(random.split(k, 3)), wrap=random.key_data(random.wrap_key_data(random.key_data(k))),
                   shape=random.split(k, (2, 2)).shape, fold_many=random.key_data(jax.vmap(random.fold_in, (None, 0))(k, jnp.arange(3))),
                   bits=random.bits(k, (3,), jnp.uint32), exponential=random.exponential(k, (2,)),
                   rademacher=random.rademacher(k, (4,)), laplace=random.laplace(k, (2,)),
                   cauchy=random.cauchy(k, (2,)), logistic=random.logistic(k, (2,)),
                   orth=random.orthogonal(k, 3))
# rejection samplers draw other bits than JAX's: compare their shapes and dtypes only
out["rejection_samplers"] = str([(x.shape, str(x.dtype)) for x in [
    random.dirichlet(k, jnp.ones(3)), random.gamma(k, 2.0, (2,)), random.beta(k, 2.0, 3.0, (2,)),
    random.poisson(k, 3.0, (4,)), random.t(k, 3.0, (2,)), random.binomial(k, 10, 0.3, (3,)),
    random.ball(k, 2, shape=(2,))]])

# --- vmap extras ---
out["vmap"] = dict(
    axis_size=jax.vmap(lambda: jnp.ones(2), axis_size=3)(),
    spmd=jax.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.arange(4.0)),
    pmean=jax.vmap(lambda x: x - lax.pmean(x, "b"), axis_name="b")(jnp.arange(4.0)),
    nested=jax.vmap(jax.vmap(lambda a, b: a * b, (0, None)), (None, 0))(jnp.arange(3.0), jnp.arange(2.0)),
    axis_index=jax.vmap(lambda x: x * lax.axis_index("j"), axis_name="j")(jnp.ones(3)))
RESULT = out

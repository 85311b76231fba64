"""JAX programs (the quickstart, the autodiff cookbook) with only their imports changed, checked
against float64 NumPy written independently."""
import numpy as np

import fnx as jax
import fnx.numpy as jnp
from fnx import grad, jacfwd, jacrev, jvp, vjp, vmap

rng = np.random.default_rng(42)


# --- quickstart ------------------------------------------------------------------------------

def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


def test_quickstart_selu_and_grad():
    x = rng.standard_normal(1000)
    np.testing.assert_allclose(np.asarray(selu(x)),
                               1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67), rtol=1e-12)
    x_small = jnp.arange(3.0)
    s = 1 / (1 + np.exp(-np.arange(3.0)))
    np.testing.assert_allclose(np.asarray(grad(sum_logistic)(x_small)), s * (1 - s), rtol=1e-6)


def test_quickstart_finite_differences_agree():
    def first_finite_differences(f, x, eps=1e-3):
        return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                          for v in jnp.eye(len(x))])
    x = jnp.arange(3.0)
    np.testing.assert_allclose(np.asarray(first_finite_differences(sum_logistic, x)),
                               np.asarray(grad(sum_logistic)(x)), rtol=1e-3)


def test_quickstart_vmap_matrix_vector_products():
    mat = rng.standard_normal((150, 100))
    batched_x = rng.standard_normal((10, 100))

    def apply_matrix(v):
        return jnp.dot(mat, v)
    out = vmap(apply_matrix)(batched_x)
    np.testing.assert_allclose(np.asarray(out), batched_x @ mat.T, rtol=1e-12)
    out2 = vmap(apply_matrix, in_axes=0)(batched_x)
    np.testing.assert_allclose(np.asarray(out2), batched_x @ mat.T, rtol=1e-12)


# --- autodiff cookbook -----------------------------------------------------------------------

def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)


def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)


inputs = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
targets = np.array([True, True, False, True])


def loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))


def _np_loss_grads(W, b):
    z = inputs @ W + b
    p = 1 / (1 + np.exp(-z))
    d = p - targets          # d loss / d z for the logistic negative log-likelihood
    return inputs.T @ d, d.sum()


def test_cookbook_grad_with_argnums():
    # a Python float argument is a weak float32, as in JAX; float64 inputs stay float64
    W, b = rng.standard_normal(3), np.float64(rng.standard_normal())
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    ref_W, ref_b = _np_loss_grads(W, b)
    np.testing.assert_allclose(np.asarray(W_grad), ref_W, rtol=1e-10)
    np.testing.assert_allclose(float(b_grad), ref_b, rtol=1e-10)
    loss_value, Wb_grad = jax.value_and_grad(loss, (0, 1))(W, b)
    np.testing.assert_allclose(float(loss_value), float(loss(W, b)))


def test_cookbook_pytree_params():
    W, b = rng.standard_normal(3), np.float64(rng.standard_normal())

    def loss2(params_dict):
        preds = predict(params_dict["W"], params_dict["b"], inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))
    g = grad(loss2)({"W": W, "b": b})
    ref_W, ref_b = _np_loss_grads(W, b)
    np.testing.assert_allclose(np.asarray(g["W"]), ref_W, rtol=1e-10)
    np.testing.assert_allclose(float(g["b"]), ref_b, rtol=1e-10)


def test_cookbook_jacobians_and_hessian():
    W = rng.standard_normal(3)
    f = lambda W: predict(W, 0.3, inputs)  # noqa: E731
    J1, J2 = jacfwd(f)(W), jacrev(f)(W)
    p = 1 / (1 + np.exp(-(inputs @ W + 0.3)))
    J_ref = (p * (1 - p))[:, None] * inputs
    np.testing.assert_allclose(np.asarray(J1), J_ref, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(J2), J_ref, rtol=1e-10)

    def hessian(f):
        return jacfwd(jacrev(f))
    H = hessian(f)(W)
    H_ref = ((p * (1 - p) * (1 - 2 * p))[:, None, None] * inputs[:, :, None]
             * inputs[:, None, :])
    np.testing.assert_allclose(np.asarray(H), H_ref, rtol=1e-9, atol=1e-12)


def test_cookbook_hessian_vector_products():
    def f(x):
        return jnp.sum(jnp.sin(x) * x ** 2)

    def hvp(f, x, v):
        return jvp(grad(f), (x,), (v,))[1]

    def hvp_revfwd(f, x, v):
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    H = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))
    np.testing.assert_allclose(np.asarray(hvp(f, x, v)), H @ v, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(hvp_revfwd(f, x, v)), H @ v, rtol=1e-10)


def test_cookbook_vjp_and_jvp():
    W = rng.standard_normal(3)
    f = lambda W: predict(W, 0.1, inputs)  # noqa: E731
    y, vjp_fun = vjp(f, W)
    u = rng.standard_normal(4)
    (vjp_out,) = vjp_fun(u)
    p = 1 / (1 + np.exp(-(inputs @ W + 0.1)))
    J = (p * (1 - p))[:, None] * inputs
    np.testing.assert_allclose(np.asarray(vjp_out), u @ J, rtol=1e-10)
    t = rng.standard_normal(3)
    _, jvp_out = jvp(f, (W,), (t,))
    np.testing.assert_allclose(np.asarray(jvp_out), J @ t, rtol=1e-10)


def test_per_example_gradients():
    W, b = rng.standard_normal(3), np.float64(rng.standard_normal())

    def example_loss(W, b, x, t):
        p = predict(W, b, x)
        return -(t * jnp.log(p) + (1 - t) * jnp.log(1 - p))
    per_ex = vmap(grad(example_loss), in_axes=(None, None, 0, 0))(W, b, inputs, targets * 1.0)
    p = 1 / (1 + np.exp(-(inputs @ W + b)))
    np.testing.assert_allclose(np.asarray(per_ex), (p - targets)[:, None] * inputs, rtol=1e-10)


def test_custom_jvp_log1pexp_from_the_docs():
    @jax.custom_jvp
    def log1pexp(x):
        return jnp.log(1. + jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = log1pexp(x)
        ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
        return ans, ans_dot
    assert float(grad(log1pexp)(100.)) == 1.0
    np.testing.assert_allclose(np.asarray(vmap(grad(log1pexp))(jnp.arange(3.))),
                               1 / (1 + np.exp(-np.arange(3.))), rtol=1e-6)

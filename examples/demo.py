"""A tour of fnx in one screen: grad, vmap, jacobians and the jaxpr behind them.

Run: python examples/demo.py
"""
import numpy as np

import fnx
import fnx.numpy as jnp
import fnx.nn as nn


def predict(params, x):
    for w, b in params[:-1]:
        x = nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, labels):
    logits = predict(params, x)
    return -jnp.mean(jnp.sum(nn.log_softmax(logits) * nn.one_hot(labels, 3), axis=-1))


def main():
    rng = np.random.default_rng(0)
    sizes = [4, 16, 3]
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
               np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    # three Gaussian blobs, one per class
    centers = rng.standard_normal((3, 4)).astype(np.float32) * 3
    labels = rng.integers(0, 3, 300).astype(np.int32)
    x = centers[labels] + rng.standard_normal((300, 4)).astype(np.float32)

    print("jaxpr of the loss:")
    print(fnx.make_jaxpr(loss)(params, x[:2], labels[:2]))

    grad_loss = fnx.value_and_grad(loss)
    for step in range(201):
        value, grads = grad_loss(params, x, labels)
        params = fnx.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
        if step % 50 == 0:
            print(f"step {step:3d}  loss {float(value):.4f}")
    accuracy = float(jnp.mean(jnp.argmax(predict(params, x), -1) == labels))
    print(f"training accuracy: {accuracy:.3f}")

    per_example = fnx.vmap(fnx.grad(loss), in_axes=(None, 0, 0))(params, x[:5, None], labels[:5, None])
    print("per-example gradient of the first weight matrix:", per_example[0][0].shape)
    print("hessian of sum(sin(x) * x) at [0.5, 1.0]:")
    print(fnx.hessian(lambda v: jnp.sum(jnp.sin(v) * v))(jnp.array([0.5, 1.0])))


if __name__ == "__main__":
    main()

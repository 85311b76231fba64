"""Train an MLP to read handwritten digits, then plot its loss and accuracy.

The data is scikit-learn's 8x8 digits (1,797 images, shipped inside the package). The model is
an ``fnx.nn.MLP``, the optimizer ``fnx.optim.adam`` with a cosine schedule, and the train step
is compiled with ``fnx.jit`` (where fnx has it). fnx puts the arrays on the GPU when CuPy finds
one, else on the CPU.

Run: python examples/train_digits.py      (writes loss_accuracy.png)
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
import fnx.optim as optim
import fnx.random as random


def load_data(seed: int = 0, test_fraction: float = 0.2):
    """Digits scaled to [0, 1], split into train and test sets (stratified by class)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    return train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)


def loss_fn(model, x, y):
    return nn.softmax_cross_entropy(model(x), y).mean()


def accuracy(model, x, y) -> float:
    return float(jnp.mean(jnp.argmax(model(x), axis=-1) == y))


def make_train_step(opt):
    def train_step(model, opt_state, x, y):
        loss, grads = fnx.value_and_grad(loss_fn)(model, x, y)
        updates, opt_state = opt.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss
    return fnx.jit(train_step)


def train(epochs: int = 20, batch_size: int = 64, hidden=(128, 128), learning_rate=3e-3,
          seed: int = 0, progress: bool = True):
    """Train and evaluate. Returns a dict with the ``model``, the final ``test_accuracy`` and a
    ``history`` of per-epoch ``loss``, ``train_accuracy`` and ``test_accuracy``."""
    x_train, x_test, y_train, y_test = load_data(seed)
    x_train, y_train = jnp.asarray(x_train), jnp.asarray(y_train)
    x_test, y_test = jnp.asarray(x_test), jnp.asarray(y_test)
    n = x_train.shape[0]
    steps_per_epoch = n // batch_size          # whole batches only: one shape, one compile
    key, model_key = random.split(random.key(seed))
    model = nn.MLP(model_key, [x_train.shape[1], *hidden, 10])
    schedule = optim.cosine_decay_schedule(learning_rate, epochs * steps_per_epoch, alpha=0.05)
    opt = optim.adam(schedule)
    opt_state = opt.init(model)
    train_step = make_train_step(opt)

    history = {"loss": [], "train_accuracy": [], "test_accuracy": []}
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=epochs * steps_per_epoch, unit="step", desc="training")
    for epoch in range(epochs):
        key, shuffle_key = random.split(key)
        order = np.asarray(random.permutation(shuffle_key, n))
        losses = []
        for i in range(steps_per_epoch):
            idx = jnp.asarray(order[i * batch_size:(i + 1) * batch_size])
            model, opt_state, loss = train_step(model, opt_state, x_train[idx], y_train[idx])
            losses.append(loss)
            if bar is not None:
                bar.update()
        history["loss"].append(float(np.mean([float(v) for v in losses])))
        history["train_accuracy"].append(accuracy(model, x_train, y_train))
        history["test_accuracy"].append(accuracy(model, x_test, y_test))
        if bar is not None:
            bar.set_postfix(loss=f"{history['loss'][-1]:.4f}",
                            test_acc=f"{history['test_accuracy'][-1]:.3f}")
    if bar is not None:
        bar.close()
    return {"model": model, "test_accuracy": history["test_accuracy"][-1], "history": history}


def plot(history, path: str = "loss_accuracy.png") -> None:
    """Loss and accuracy per epoch, side by side, saved to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    epochs = np.arange(1, len(history["loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["loss"], color="tab:blue")
    ax_loss.set(title="training loss", xlabel="epoch", ylabel="cross-entropy", yscale="log")
    ax_acc.plot(epochs, history["train_accuracy"], label="train")
    ax_acc.plot(epochs, history["test_accuracy"], label="test")
    ax_acc.set(title="accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0.8, 1.0))
    ax_acc.legend(loc="lower right")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", default="loss_accuracy.png")
    args = parser.parse_args()
    print(f"fnx {fnx.__version__} on {fnx.default_backend()}, train step "
          f"{'compiled with fnx.jit' if hasattr(fnx, 'jit') else 'run eagerly (no fnx.jit)'}")
    start = time.perf_counter()
    result = train(epochs=args.epochs, batch_size=args.batch_size)
    seconds = time.perf_counter() - start
    print(f"test accuracy: {result['test_accuracy']:.4f} after {args.epochs} epochs "
          f"({seconds:.1f} s)")
    plot(result["history"], args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

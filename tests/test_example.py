"""The main example (examples/train_digits.py) trains to high accuracy in a few epochs and
plots its curves. Needs the ``examples`` extra (scikit-learn, matplotlib)."""
import importlib.util
import os

import numpy as np
import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "train_digits.py")


@pytest.fixture(scope="module")
def train_digits():
    pytest.importorskip("sklearn", reason="the example needs scikit-learn (the examples extra)")
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def result(train_digits):
    return train_digits.train(epochs=5, progress=False)


def test_training_reaches_high_test_accuracy(result):
    assert result["test_accuracy"] > 0.9
    history = result["history"]
    assert len(history["loss"]) == 5
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert np.all(np.isfinite(history["loss"]))


def test_plot_writes_a_png(train_digits, result, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "loss_accuracy.png"
    train_digits.plot(result["history"], str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

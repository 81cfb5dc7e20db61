"""The main job's training step on a small slice of the real Fashion-MNIST data."""
import os
import sys

import numpy as np
import pytest

import gt
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples"))
import fashion_mnist  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(fashion_mnist.DATA_DIR),
                                reason="dataset-fashion-mnist is not installed")


def test_idx_reader_and_shapes():
    x, y = fashion_mnist.load("test")
    assert x.shape == (10000, 784) and x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0
    assert y.shape == (10000,) and set(np.unique(y)) == set(range(10))


def test_training_steps_reduce_the_loss():
    gt.manual_seed(0)
    x, y = fashion_mnist.load("train")
    x, y = x[:2048], y[:2048]
    model = fashion_mnist.MLP()
    opt = gt.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for epoch in range(3):
        for i in range(0, len(x), 128):
            losses.append(fashion_mnist.train_step(model, opt, x[i:i + 128], y[i:i + 128]).item())
    assert np.mean(losses[:4]) > 2.0  # about ln(10) at the start
    assert np.mean(losses[-4:]) < 0.6 * np.mean(losses[:4])
    assert fashion_mnist.accuracy(model, x[:512], y[:512]) > 0.6

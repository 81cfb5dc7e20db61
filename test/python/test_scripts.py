"""PyTorch-style scripts run on GT unchanged (`import gt as torch`), issue 24: the CNN example
on real Fashion-MNIST data with a checkpoint resumed bit for bit, and test/python/scripts/."""
import os
import sys

import numpy as np
import pytest

import gt
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "test", "python", "scripts"))
import cnn_fashion_mnist  # noqa: E402
import hooks_and_grad  # noqa: E402
import tiny_gpt  # noqa: E402

needs_data = pytest.mark.skipif(not os.path.exists(cnn_fashion_mnist.DATA_DIR),
                                reason="dataset-fashion-mnist is not installed")


@needs_data
def test_cnn_trains_and_a_resumed_checkpoint_continues_bit_for_bit(tmp_path):
    common = ["--limit", "1024", "--batch-size", "64"]
    straight, acc = cnn_fashion_mnist.main(common + ["--epochs", "2", "--checkpoint", str(tmp_path / "a.pt")])
    assert acc > 0.6  # 2 epochs of 1024 images (about 0.68); the full run reaches 90 % (examples/)
    path = str(tmp_path / "b.pt")
    cnn_fashion_mnist.main(common + ["--epochs", "1", "--checkpoint", path])
    resumed, _ = cnn_fashion_mnist.main(common + ["--epochs", "2", "--checkpoint", path, "--resume"])
    a, b = straight.state_dict(), resumed.state_dict()
    assert sorted(a) == sorted(b) and "bn1.running_mean" in a and "bn2.num_batches_tracked" in a
    for name in a:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy(), err_msg=name)
    saved = gt.load(path)
    assert saved["epoch"] == 2 and saved["scheduler"]["last_epoch"] == 2


def test_hooks_and_autograd_grad_script():
    losses, stats, backward_calls = hooks_and_grad.main(["--steps", "30"])
    assert losses[-1] < 0.7 * losses[0]
    assert len(stats) == 30
    # the head's backward hook runs in autograd.grad's pass and in backward()'s, as PyTorch's
    assert len(backward_calls) == 60 and backward_calls[0] == (256, 1)


def test_tiny_gpt_trains_with_param_groups_and_samples_with_topk_and_multinomial():
    losses, text, opt = tiny_gpt.main(["--steps", "120"])
    assert losses[0] > 3.0 and losses[-1] < 0.5 * losses[0]
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    assert all(p.dim() >= 2 for p in opt.param_groups[0]["params"])
    assert len(text) == 41 and set(text) <= set(tiny_gpt.TEXT)  # prompt + 40 sampled characters

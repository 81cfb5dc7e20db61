"""CTC loss (against a float64 NumPy dynamic program and central differences), max_unpool,
Softmax2d, and SyncBatchNorm (whole-batch statistics on a data-parallel batch)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import gt
import gt.nn as nn
import gt.nn.functional as F

RNG = np.random.default_rng(0)


def ctc_np(lp, target):
    """-log p(target | lp) for (T, C) log-probabilities, blank 0 (Graves et al. 2006, eqs. 6-8)."""
    ext = [0]
    for label in target:
        ext += [label, 0]
    alpha = np.full(len(ext), -np.inf)
    alpha[0] = lp[0, 0]
    if len(ext) > 1:
        alpha[1] = lp[0, ext[1]]
    for t in range(1, len(lp)):
        new = np.full(len(ext), -np.inf)
        for s in range(len(ext)):
            terms = [alpha[s]] + ([alpha[s - 1]] if s else [])
            if s >= 2 and ext[s] != 0 and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
        alpha = new
    return -np.logaddexp.reduce(alpha[-2:] if len(ext) > 1 else alpha[-1:])


def log_softmax_np(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


TARGETS = [[1, 2, 2], [3], [4, 1, 4, 2]]  # a repeated label needs a blank between its two copies
IN_LENS = [12, 9, 10]


def padded():
    out = np.zeros((3, 4), dtype=np.int64)
    for i, t in enumerate(TARGETS):
        out[i, :len(t)] = t
    return out


def test_ctc_loss_matches_the_forward_algorithm():
    x = RNG.standard_normal((12, 3, 5))
    lp = log_softmax_np(x)
    want = np.array([ctc_np(lp[:IN_LENS[i], i], TARGETS[i]) for i in range(3)])
    lens = [len(t) for t in TARGETS]
    got = F.ctc_loss(gt.tensor(lp), gt.tensor(padded()), IN_LENS, lens, reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    concatenated = gt.tensor(np.concatenate(TARGETS))  # the 1-D form of targets
    np.testing.assert_allclose(F.ctc_loss(gt.tensor(lp), concatenated, gt.tensor(IN_LENS), gt.tensor(lens),
                                          reduction="sum").item(), want.sum(), rtol=1e-10)
    np.testing.assert_allclose(nn.CTCLoss()(gt.tensor(lp), gt.tensor(padded()), IN_LENS, lens).item(),
                               np.mean(want / np.array(lens)), rtol=1e-10)
    # unbatched (T, C)
    np.testing.assert_allclose(F.ctc_loss(gt.tensor(lp[:, 0]), gt.tensor(TARGETS[0]), [12], [3]).item(),
                               want[0] / 3, rtol=1e-10)


def test_ctc_loss_gradient_matches_central_differences():
    x = RNG.standard_normal((6, 2, 4))
    targets, in_lens, lens = np.array([[1, 1], [2, 3]]), [6, 5], [2, 2]

    def loss_np(v):
        lp = log_softmax_np(v)
        return sum(ctc_np(lp[:in_lens[i], i], list(targets[i][:lens[i]])) for i in range(2))
    X = gt.tensor(x, requires_grad=True)
    F.ctc_loss(F.log_softmax(X, -1), gt.tensor(targets), in_lens, lens, reduction="sum").backward()
    eps, numeric = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        numeric[idx] = (loss_np(x + d) - loss_np(x - d)) / (2 * eps)
    np.testing.assert_allclose(X.grad.numpy(), numeric, rtol=1e-5, atol=1e-7)


def test_ctc_loss_of_a_target_no_alignment_fits():
    lp = log_softmax_np(RNG.standard_normal((12, 3, 5)))
    lens = [len(t) for t in TARGETS]
    loss = F.ctc_loss(gt.tensor(lp), gt.tensor(padded()), [2, 9, 10], lens, reduction="none").numpy()
    assert np.isinf(loss[0]) and np.isfinite(loss[1:]).all()
    X = gt.tensor(lp, requires_grad=True)
    zero = F.ctc_loss(X, gt.tensor(padded()), [2, 9, 10], lens, reduction="sum", zero_infinity=True)
    zero.backward()
    assert np.isfinite(zero.item()) and np.isfinite(X.grad.numpy()).all()
    assert np.abs(X.grad.numpy()[:, 0]).max() == 0.0  # the impossible element gets no gradient
    with pytest.raises(ValueError, match="not the blank"):
        F.ctc_loss(gt.tensor(lp), gt.tensor([[0, 1, 1, 1]] * 3), IN_LENS, [2, 2, 2])
    with pytest.raises(ValueError, match="input_lengths must be in"):
        F.ctc_loss(gt.tensor(lp), gt.tensor(padded()), [13, 9, 10], lens)


def test_max_unpool_puts_each_maximum_back():
    x = gt.tensor(RNG.standard_normal((2, 3, 4, 6)).astype(np.float32))
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    up = nn.MaxUnpool2d(2)(y, idx)
    xn, un = x.numpy(), up.numpy()
    assert un.shape == (2, 3, 4, 6)
    kept = un != 0
    np.testing.assert_array_equal(un[kept], xn[kept])  # each window's maximum, at its place
    assert kept.reshape(2, 3, 2, 2, 3, 2).sum(axis=(3, 5)).max() == 1
    assert F.max_unpool2d(y, idx, 2, output_size=(5, 7)).shape == (2, 3, 5, 7)
    y1, i1 = F.max_pool1d(gt.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
    assert nn.MaxUnpool1d(2)(y1, i1).numpy().tolist() == [[[0.0, 3.0, 2.0, 0.0]]]
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(y, idx, 2, output_size=(9, 9))


def test_softmax2d_normalizes_over_channels():
    x = RNG.standard_normal((2, 3, 4, 5))
    want = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax2d()(gt.tensor(x)).numpy(), want, rtol=1e-12)


def test_convert_sync_batchnorm_keeps_the_parameters():
    m = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(3)))
    m[1].eval()
    weight, mean = m[1].weight, m[1].running_mean
    out = nn.SyncBatchNorm.convert_sync_batchnorm(m)
    assert out is m and type(m[1]) is nn.SyncBatchNorm and type(m[2][0]) is nn.SyncBatchNorm
    assert m[1].weight is weight and m[1].running_mean is mean and not m[1].training
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                    "1.num_batches_tracked", "2.0.weight", "2.0.bias", "2.0.running_mean",
                                    "2.0.running_var", "2.0.num_batches_tracked"]


SYNC_BN_SCRIPT = """
import gt, sys, json, numpy as np
gt.gpu_workers(2)
if sys.argv[1] != "none":
    gt.load_config(sys.argv[1])
with gt.signal.context("params"):
    bn = gt.nn.SyncBatchNorm(3)
x = np.random.default_rng(0).standard_normal((8, 3, 2, 2)).astype(np.float32)
x[4:] += 5.0  # the second worker's half of the batch differs from the first's
y = bn(gt.signal.tensor(gt.tensor(x), name="data"))
print(json.dumps({"y": y.numpy().tolist(), "mean": bn.running_mean.numpy().tolist(),
                  "var": bn.running_var.numpy().tolist(),
                  "collectives": [w["collective_ops"] for w in gt.debug.stats()["by_worker"].values()]}))
"""


def test_sync_batchnorm_statistics_are_the_whole_batchs_on_a_data_parallel_batch(tmp_path):
    script = tmp_path / "sync_bn.py"
    script.write_text(SYNC_BN_SCRIPT)
    config = tmp_path / "dp.yaml"
    config.write_text("data:\n  shard: {axis: 0}\nparams:\n  replicated: true\n")
    runs = []
    for cfg in ("none", str(config)):
        p = subprocess.run([sys.executable, str(script), cfg], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    one, sharded = runs
    assert min(sharded["collectives"]) > 0  # the batch was split and its statistics all-reduced
    for key in ("y", "mean", "var"):
        np.testing.assert_allclose(sharded[key], one[key], rtol=1e-5, atol=1e-6)
    x = np.random.default_rng(0).standard_normal((8, 3, 2, 2)).astype(np.float64)
    x[4:] += 5.0
    np.testing.assert_allclose(one["mean"], 0.1 * x.mean(axis=(0, 2, 3)), rtol=1e-5)

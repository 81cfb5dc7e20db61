"""gt.nn.utils.prune (torch.nn.utils.prune): masks against NumPy's choice of entries, PyTorch's
state_dict keys, the gradient reaching only the kept entries, pruning again among the kept
ones, removal, and PyTorch's errors."""
import numpy as np
import pytest

import gt
import gt.nn as nn
import gt.nn.utils.prune as prune


def linear(seed=0, shape=(6, 5)):
    gt.manual_seed(seed)
    return nn.Linear(shape[1], shape[0]).double()


def smallest(values, k):
    """Flat indices of the k smallest entries of `values` (no ties in these tests)."""
    return set(np.argsort(values.reshape(-1), kind="stable")[:k].tolist())


def test_l1_unstructured_masks_the_smallest_entries_and_only_kept_ones_learn():
    m = linear()
    w0 = m.weight.numpy().copy()
    prune.l1_unstructured(m, "weight", amount=0.3)  # round(0.3 * 30) = 9 entries
    assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert [name for name, _ in m.named_parameters()] == ["bias", "weight_orig"]
    mask = m.weight_mask.numpy()
    assert set(np.flatnonzero(mask == 0).tolist()) == smallest(np.abs(w0), 9)
    np.testing.assert_array_equal(m.weight.numpy(), w0 * mask)
    assert prune.is_pruned(m) and not prune.is_pruned(nn.Linear(2, 2))

    x = np.random.default_rng(1).standard_normal((4, 5))
    m(gt.tensor(x)).sum().backward()
    # d/dW of sum(x W^T + b) is the column sums of x in every row; the mask zeroes the pruned ones.
    np.testing.assert_allclose(m.weight_orig.grad.numpy(), np.tile(x.sum(0), (6, 1)) * mask, rtol=1e-12)
    opt = gt.optim.SGD(m.parameters(), lr=0.1)
    opt.step()
    m(gt.tensor(x))  # the forward pre-hook recomputes weight = weight_orig * weight_mask
    assert np.all(m.weight.numpy()[mask == 0] == 0)


def test_pruning_again_prunes_among_the_kept_entries():
    m = linear()
    w0 = np.abs(m.weight.numpy())
    prune.l1_unstructured(m, "weight", amount=10)
    prune.l1_unstructured(m, "weight", amount=0.5)  # half of the 20 kept: 10 more
    mask = m.weight_mask.numpy()
    assert int((mask == 0).sum()) == 20
    assert set(np.flatnonzero(mask == 0).tolist()) == smallest(w0, 20)
    hooks = [h for h in m._call_state()["forward_pre"].values()]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2


def test_ln_structured_prunes_whole_channels_by_their_norm():
    m = linear()
    w0 = m.weight.numpy().copy()
    prune.ln_structured(m, "weight", amount=2, n=2, dim=0)  # the two rows of least L2 norm
    rows = set(np.argsort(np.linalg.norm(w0, axis=1))[:2].tolist())
    mask = m.weight_mask.numpy()
    assert {i for i in range(6) if np.all(mask[i] == 0)} == rows
    assert all(np.all(mask[i] == 1) for i in range(6) if i not in rows)
    prune.ln_structured(m, "weight", amount=1, n=1, dim=1)  # then the column of least L1 norm
    col = int(np.argmin(np.abs(w0 * m.weight_mask.numpy()).sum(0) + np.where(np.all(mask == 0, 0), np.inf, 0)))
    assert np.all(m.weight_mask.numpy()[:, col] == 0)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)


def test_random_pruning_prunes_the_amount_and_follows_the_seed():
    counts = []
    for _ in range(2):
        m = linear()
        gt.manual_seed(7)
        prune.random_unstructured(m, "weight", amount=0.5)
        counts.append(m.weight_mask.numpy())
    assert int((counts[0] == 0).sum()) == 15
    np.testing.assert_array_equal(counts[0], counts[1])
    m = linear()
    prune.random_structured(m, "weight", amount=0.5, dim=1)  # 2 or 3 of 5 columns: round(2.5) = 2
    mask = m.weight_mask.numpy()
    assert sum(np.all(mask[:, j] == 0) for j in range(5)) == 2


def test_global_unstructured_ranks_entries_across_tensors():
    a, b = linear(0), linear(1, (4, 6))
    values = np.concatenate([np.abs(a.weight.numpy()).ravel(), np.abs(b.weight.numpy()).ravel()])
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.25)
    masks = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel()])
    assert set(np.flatnonzero(masks == 0).tolist()) == smallest(values, round(0.25 * 54))


def test_remove_makes_the_pruning_permanent_and_checkpoints_keep_pytorchs_keys(tmp_path):
    m = linear()
    prune.l1_unstructured(m, "weight", amount=0.5)
    path = str(tmp_path / "pruned.pt")
    gt.save(m.state_dict(), path)
    other = linear(3)
    prune.identity(other, "weight")
    other.load_state_dict(gt.load(path))
    x = gt.tensor(np.random.default_rng(2).standard_normal((3, 5)))
    np.testing.assert_array_equal(other(x).numpy(), m(x).numpy())

    pruned = m.weight.numpy().copy()
    orig = m.weight_orig
    prune.remove(m, "weight")
    assert sorted(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    assert m.weight is orig  # the parameter an optimizer holds
    np.testing.assert_array_equal(m.weight.numpy(), pruned)
    assert not prune.is_pruned(m)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_bad_amounts_raise_what_pytorch_raises():
    m = linear()
    with pytest.raises(TypeError, match="Must be int or float"):
        prune.l1_unstructured(m, "weight", amount="half")
    with pytest.raises(ValueError, match="non-negative integer"):
        prune.l1_unstructured(m, "weight", amount=-1)
    with pytest.raises(ValueError, match="in the range"):
        prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(ValueError, match="smaller than the number of parameters"):
        prune.l1_unstructured(m, "weight", amount=31)
    with pytest.raises(ValueError, match="same shape"):
        prune.l1_unstructured(m, "weight", amount=1, importance_scores=gt.ones(3))


def test_the_pruning_tutorials_inspection_works():
    # PyTorch's pruning tutorial prints named_buffers() and _forward_pre_hooks.
    m = linear()
    assert len(m._forward_pre_hooks) == 0
    prune.random_unstructured(m, "weight", amount=0.3)
    assert [name for name, _ in m.named_buffers()] == ["weight_mask"]
    (hook,) = m._forward_pre_hooks.values()
    assert isinstance(hook, prune.RandomUnstructured) and hook._tensor_name == "weight"


def test_ln_structured_of_order_minus_inf_and_float64_scores():
    # n=-inf ranks channels by their smallest |w| (every norm came out 1); float64 weights are
    # ranked in float64 (cast to float32, near-equal magnitudes tied)
    lin = gt.nn.Linear(3, 3, bias=False)
    with gt.no_grad():
        lin.weight.copy_(gt.tensor([[5.0, 0.1, 5.0], [1.0, 1.0, 1.0], [3.0, 2.0, 4.0]]))
    gt.nn.utils.prune.ln_structured(lin, "weight", amount=1, n=float("-inf"), dim=0)
    assert lin.weight_mask.sum(1).tolist() == [0.0, 3.0, 3.0]  # (row 0's smallest is 0.1)
    w = gt.nn.Linear(2, 1, bias=False).double()
    with gt.no_grad():
        w.weight.copy_(gt.tensor([[1.0 + 1e-12, 1.0]], dtype=gt.float64))
    gt.nn.utils.prune.l1_unstructured(w, "weight", amount=1)
    assert w.weight_mask.tolist() == [[1.0, 0.0]]


def test_averaged_model_averages_integer_buffers_as_pytorch():
    from gt.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    for kw, want in (({}, 12), ({"multi_avg_fn": get_ema_multi_avg_fn(0.8)}, 9)):  # (PyTorch's values)
        m = gt.nn.Sequential(gt.nn.Linear(2, 3), gt.nn.BatchNorm1d(3))
        avg = AveragedModel(m, use_buffers=True, **kw)
        for _ in range(5):
            for _ in range(4):
                m(gt.randn(4, 2))
            avg.update_parameters(m)
        assert int(avg.module[1].num_batches_tracked) == want

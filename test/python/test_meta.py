"""The meta device: tensors with a shape and a dtype and no values, as torch.device("meta")."""
import pytest

import gt
import gt.nn as nn
import gt.nn.functional as F


def test_meta_tensors_have_shapes_and_no_values():
    m = gt.ones(2, 3, device="meta")
    assert m.is_meta and m.device == gt.device("meta") and m.shape == (2, 3) and m.dtype == gt.float32
    assert not m.is_cpu and not m.is_cuda
    assert repr(m) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(gt.zeros(2, dtype=gt.float64, device="meta")) == "tensor(..., device='meta', size=(2,), dtype=gt.float64)"
    assert repr(gt.randn(4, device="meta", requires_grad=True)) == "tensor(..., device='meta', size=(4,), requires_grad=True)"
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
        m.sum().item()
    with pytest.raises(RuntimeError, match="cannot be called on meta tensors"):
        bool(m.sum() > 0)
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        m.numpy()
    for read in (m.tolist, m.cpu, lambda: m.to("cpu")):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            read()
    real = gt.ones(2, 3)
    assert not real.is_meta and real.device != "meta"


def test_a_meta_tensor_larger_than_any_worker_holds_nothing():
    # the reasoning_about_shapes recipe: a convolution on a 48 TiB input, shapes only
    x = gt.randn(1 << 20, 1 << 10, 1 << 10, 3, device="meta")
    conv = nn.Conv2d(3, 5, 2, device="meta")
    assert conv.weight.is_meta
    y = conv(x.permute(0, 3, 1, 2))
    assert y.is_meta and y.shape == (1 << 20, 5, 1023, 1023)
    assert gt.empty(1 << 45, device="meta").shape == (1 << 45,)


def test_ops_on_meta_tensors_infer_shapes_and_raise_shape_errors():
    a, b = gt.randn(4, 5, device="meta"), gt.randn(5, 6, device="meta")
    c = (a @ b).relu().softmax(-1)
    assert c.is_meta and c.shape == (4, 6)
    mixed = a + gt.ones(4, 5)  # an ordinary operand: still meta (PyTorch raises unless it is 0-d)
    assert mixed.is_meta
    with pytest.raises(RuntimeError):
        a @ a  # (4, 5) @ (4, 5): the op table's shape error, as for ordinary tensors
    for like in (gt.zeros_like(a), gt.randn_like(a), gt.full_like(a, 2.0), a.new_zeros(3), a.new_empty(2), a[0]):
        assert like.is_meta


def test_meta_autograd_gives_meta_gradients():
    x = gt.ones(3, device="meta", requires_grad=True)
    y = (x * 2).sum()
    assert y.is_meta and y.requires_grad
    y.backward()
    assert x.grad is not None and x.grad.is_meta and x.grad.shape == (3,)


def test_with_device_meta_builds_a_model_then_to_empty_and_assign():
    with gt.device("meta"):
        model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
        assert gt.zeros(2).is_meta
    assert not gt.zeros(2).is_meta
    assert all(p.is_meta for p in model.parameters())
    assert repr(model[0].weight) == "Parameter containing:\ntensor(..., device='meta', size=(8, 4), requires_grad=True)"
    nn.init.normal_(model[0].weight)  # an init on a meta tensor keeps it meta
    assert model[0].weight.is_meta
    out = model(gt.randn(3, 4, device="meta"))
    assert out.is_meta and out.shape == (3, 2)
    with pytest.raises(NotImplementedError, match="Please use torch.nn.Module.to_empty\\(\\)"):
        model.to("cpu")
    params = list(model.parameters())
    model.to_empty(device="cpu")
    assert [p is q for p, q in zip(params, model.parameters())] == [True] * 6
    assert not any(p.is_meta for p in model.parameters())
    assert model[0].weight.tolist() == [[0.0] * 4] * 8
    model[0].reset_parameters()
    assert model(gt.randn(3, 4)).shape == (3, 2)
    # meta again, then load real weights with assign=True
    model.to("meta")
    assert all(p.is_meta for p in model.parameters())
    real = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    model.load_state_dict(real.state_dict(), assign=True)
    x = gt.randn(3, 4)
    assert gt.equal(model(x), real(x))


def test_copies_into_and_out_of_meta_tensors():
    m = gt.zeros(2, 2, device="meta")
    m.copy_(gt.ones(2, 2))  # values into a meta tensor: it stays meta
    assert m.is_meta
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        gt.zeros(2, 2).copy_(gt.ones(2, 2, device="meta"))
    r = gt.ones(2, 2, requires_grad=True)
    t = r.to("meta")
    assert t.is_meta and t.requires_grad and t.shape == (2, 2)
    p = nn.Linear(2, 3, device="meta")
    assert p.weight.is_meta and p.bias.is_meta
    assert F.linear(gt.ones(1, 2, device="meta"), p.weight, p.bias).shape == (1, 3)


def test_meta_tensors_cost_the_workers_nothing():
    gt.ones(1).numpy()  # the session is open
    client = gt._runtime.client()
    before = client.stats()["by_worker"]
    tensors = [gt.randn(1000, 1000, device="meta") * 2 for _ in range(50)]
    del tensors
    after = client.stats()["by_worker"]
    held = lambda stats: sum(w.get("bytes_held", 0) for w in stats.values())
    assert held(after) <= held(before)


def test_deepcopy_of_a_meta_model(tmp_path):
    import copy
    with gt.device("meta"):
        model = nn.Linear(3, 2)
    twin = copy.deepcopy(model)
    assert twin.weight.is_meta and twin.weight.shape == (2, 3) and isinstance(twin.weight, nn.Parameter)
    with pytest.raises(TypeError, match="meta"):  # (PyTorch saves meta tensors without data; GT does not yet)
        gt.save(model.state_dict(), tmp_path / "meta.pt")

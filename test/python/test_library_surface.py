"""What PyTorch Lightning 2.6, torchmetrics 1.9 and accelerate 1.15 need of torch beyond a
training script (issue 24): they import private names, rebuild loaders from their attributes,
call every optimizer with a closure, patch pickle, and reduce 0-d tensors. Each test holds
what one of them did that GT refused or computed otherwise; with these, Lightning's fit /
validate / test / predict / checkpoint resume, torchmetrics' metrics and accelerate's prepare /
save_state ran unchanged and matched PyTorch."""
import importlib
import io
import math
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import gt
import gt.nn as nn
from conftest import check


def test_private_names_libraries_import():
    for module, names in {
        "gt.nn.modules.module": ["Module", "_IncompatibleKeys"],
        "gt.nn.modules.batchnorm": ["_BatchNorm", "_NormBase"],
        "gt.nn.modules.conv": ["_ConvNd", "_ConvTransposeNd"],
        "gt.nn.modules.loss": ["_Loss", "_WeightedLoss"],
        "gt.nn.modules.pooling": ["_MaxPoolNd", "_AvgPoolNd", "_MaxUnpoolNd"],
        "gt.nn.modules.padding": ["_PadNd", "_ConstantPadNd"],
        "gt.nn.modules.rnn": ["RNNBase", "RNNCellBase"],
        "gt.nn.parallel.distributed": ["DistributedDataParallel"],
        "gt.utils.data": ["DistributedSampler"],
        "gt.utils.data.dataloader": ["_BaseDataLoaderIter", "_MultiProcessingDataLoaderIter"],
        "gt.utils.hooks": ["RemovableHandle"],
        "gt.utils.flop_counter": ["FlopCounterMode"],
        "gt.utils._pytree": ["PyTree", "_get_node_type"],
        "gt.overrides": ["TorchFunctionMode", "has_torch_function"],
        "gt.autograd.profiler": ["EventList", "emit_nvtx"],
        "gt.distributed.tensor": ["DTensor"],
        "gt._dynamo": ["OptimizedModule"],
        "gt.fx": ["GraphModule"],
        "gt.jit": ["ScriptModule"],
        "gt": ["ScriptModule", "UntypedStorage", "PyTorchFileReader", "PyTorchFileWriter", "trapz"],
    }.items():
        m = importlib.import_module(module)
        for name in names:
            assert getattr(m, name) is not None, f"{module}.{name}"
    assert isinstance(nn.BatchNorm2d(3), importlib.import_module("gt.nn.modules.batchnorm")._BatchNorm)
    assert isinstance(nn.L1Loss(), importlib.import_module("gt.nn.modules.loss")._WeightedLoss)
    assert not gt.profiler.kineto_available() and not gt.overrides.has_torch_function((gt.ones(1),))
    with gt.overrides.TorchFunctionMode():  # entered and left; GT dispatches nothing to it
        check(gt.ones(2) + 1, [2.0, 2.0])
    from gt.utils import _pytree
    import collections
    Point = collections.namedtuple("Point", "x y")
    node = _pytree.SUPPORTED_NODES[_pytree._get_node_type(Point(1, 2))]
    children, context = node.flatten_fn(Point(1, 2))
    assert node.unflatten_fn(children, context) == Point(1, 2)
    gt._C._log_api_usage_once("torchmetrics.metric")
    assert gt._C._nn._parse_to("cpu", gt.float64)[:2] == (gt.device("cpu"), gt.float64)
    assert gt._C._nn._parse_to(gt.ones(1, dtype=gt.float16))[1] == gt.float16


def test_every_optimizer_takes_a_closure_and_returns_its_loss():
    for make in (lambda p: gt.optim.SGD(p, lr=0.1), lambda p: gt.optim.Adam(p), lambda p: gt.optim.AdamW(p),
                 lambda p: gt.optim.RMSprop(p), lambda p: gt.optim.Adagrad(p), lambda p: gt.optim.Adadelta(p),
                 lambda p: gt.optim.Adamax(p), lambda p: gt.optim.NAdam(p), lambda p: gt.optim.RAdam(p),
                 lambda p: gt.optim.ASGD(p), lambda p: gt.optim.Rprop(p)):
        w = nn.Parameter(gt.tensor([1.0, -2.0]))
        opt = make([w])
        calls = []

        def closure():
            opt.zero_grad()
            calls.append(gt.is_grad_enabled())
            loss = (w * w).sum()
            loss.backward()
            return loss

        with gt.no_grad():  # the closure runs with grad enabled, as PyTorch's optimizers call it
            loss = opt.step(closure)
        assert calls == [True] and loss.item() == 5.0, type(opt).__name__
        assert not np.allclose(w.detach().numpy(), [1.0, -2.0]), type(opt).__name__
        assert opt.step() is None


def test_load_works_while_pickle_unpickler_is_patched():
    # Lightning's pl_legacy_patch rebinds pickle.Unpickler around every checkpoint load
    buf = io.BytesIO()
    gt.save({"state_dict": {"w": gt.ones(2)}, "epoch": 1}, buf)

    class Redirecting(pickle._Unpickler):
        def find_class(self, module, name):
            return super().find_class(module, name)

    original = pickle.Unpickler
    pickle.Unpickler = Redirecting
    try:
        buf.seek(0)
        loaded = gt.load(buf, weights_only=False)
    finally:
        pickle.Unpickler = original
    assert loaded["epoch"] == 1 and loaded["state_dict"]["w"].tolist() == [1.0, 1.0]


def test_forward_hooks_with_kwargs_prepend_and_always_call():
    class Scale(nn.Module):
        def forward(self, x, *, factor=1.0):
            if factor < 0:
                raise ValueError("negative")
            return x * factor

    m = Scale()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append("plain"))
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(("kw", kwargs["factor"])) or out + 1,
                            with_kwargs=True, prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": kwargs["factor"] * 2}), with_kwargs=True)
    always = m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    check(m(gt.ones(2), factor=3.0), [7.0, 7.0])  # factor doubled to 6, then + 1
    assert seen == [("kw", 6.0), "plain", ("always", seen[2][1])]
    seen.clear()
    with pytest.raises(ValueError, match="negative"):
        m(gt.ones(2), factor=-1.0)
    assert seen == [("always", None)]  # only the always_call hook ran
    with always:  # a handle removes its hook on leaving a with block
        pass
    m(gt.ones(2), factor=1.0)
    assert ("always", None) not in seen[1:] and len(seen) == 3


def test_loader_attributes_and_rng_and_anomaly_switches():
    loader = gt.utils.data.DataLoader([1, 2, 3], batch_size=2, worker_init_fn=print, prefetch_factor=None,
                                      persistent_workers=False, multiprocessing_context=None, in_order=True)
    assert loader.worker_init_fn is print and loader.in_order and loader.pin_memory_device == ""
    assert isinstance(iter(loader), gt.utils.data.dataloader._BaseDataLoaderIter)
    assert gt.cuda.get_rng_state_all() == [] and gt.cuda.set_rng_state_all([]) is None  # no GPU workers here
    state = gt.cuda.get_rng_state()
    a = gt.rand(3).tolist()
    gt.cuda.set_rng_state(state)
    assert gt.rand(3).tolist() == a
    assert not gt.autograd.is_anomaly_enabled()
    gt.autograd.set_detect_anomaly(False)
    with pytest.warns(UserWarning, match="does not check"):
        with gt.autograd.detect_anomaly():
            assert gt.autograd.is_anomaly_enabled()
    assert not gt.autograd.is_anomaly_enabled()
    assert gt.ones(3).untyped_storage().nbytes() == 12
    x = gt.ones(3)
    assert x.untyped_storage().data_ptr() == x.detach().untyped_storage().data_ptr()
    assert x.storage().size() == 3 and x.storage().dtype == gt.float32


def test_reductions_of_a_0d_tensor_over_dim_0():
    t, i = gt.tensor(3.0), gt.tensor(7)
    for value in (t.sum(0), t.sum(-1), t.sum(0, keepdim=True), t.mean(0), t.prod(0), t.amax(0), t.max(0).values,
                  t.cumsum(0), t.logsumexp(0)):
        assert value.shape == () and value.item() == 3.0
    assert i.sum(dim=0).item() == 7 and gt.sum(i, dim=0).item() == 7 and gt.prod(i, 0).item() == 7
    assert t.argmax(0).item() == 0 and t.softmax(0).item() == 1.0 and t.std(0, correction=0).item() == 0.0
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        t.sum(1)


def test_scalar_bool_indices_add_an_axis():
    x = gt.arange(6.0).reshape(2, 3)
    assert x[True].shape == (1, 2, 3) and x[False].shape == (0, 2, 3) and x[0, True].shape == (1, 3)
    s = gt.tensor(2.0)
    check(s[gt.tensor(True)], [2.0])
    assert s[gt.tensor(False)].shape == (0,)
    y = gt.tensor(5.0)
    y[gt.tensor(True)] = 1 - s[gt.tensor(True)] / 4  # torchmetrics' r2_score
    assert y.item() == 0.5
    y[gt.tensor(False)] = 9.0
    assert y.item() == 0.5


def test_where_one_argument_cumsum_dtype_and_trapz():
    m = gt.tensor([[True, False], [False, True]])
    rows, cols = gt.where(m)
    assert rows.tolist() == [0, 1] and cols.tolist() == [0, 1]
    x = gt.tensor([1, 2, 3])
    c = x.cumsum(0, dtype=gt.float64)
    assert c.dtype == gt.float64 and c.tolist() == [1.0, 3.0, 6.0]
    assert gt.cumsum(x, 0, dtype=gt.float32).dtype == gt.float32 and x.prod(dtype=gt.float64).dtype == gt.float64
    assert gt.mean(x, dtype=gt.float32).item() == 2.0
    y, xs = np.array([1.0, 3.0, 2.0, 5.0]), np.array([0.0, 0.5, 2.0, 3.0])
    assert math.isclose(gt.trapz(gt.tensor(y), gt.tensor(xs)).item(), np.trapezoid(y, xs), rel_tol=1e-6)
    running = [np.trapezoid(y[:k + 2], xs[:k + 2]) for k in range(3)]
    check(gt.cumulative_trapezoid(gt.tensor(y), gt.tensor(xs)), running, 1e-6)
    check(gt.cumulative_trapezoid(gt.tensor(y), dx=2.0), [4.0, 9.0, 16.0])


def test_max_and_argmax_along_a_dim_return_the_first_nan():
    q = gt.tensor([[1.0, float("nan"), 3.0, float("nan")], [0.5, 0.2, 0.1, 0.3]])
    values, indices = q.max(dim=1)
    assert math.isnan(values[0].item()) and indices.tolist() == [1, 0]
    assert q.argmax(1).tolist() == [1, 0] and q.argmin(1).tolist() == [1, 2] and q.argmax().item() == 1
    assert q.min(dim=1).indices.tolist() == [1, 2]
    assert gt.tensor([float("nan")] * 3).argmax().item() == 0


def test_bools_order_false_before_true():
    # the lowering compared bools as signed 1-bit integers (True = -1): every ordering came out inverted
    a, b = gt.tensor([True, False, True, False]), gt.tensor([False, False, True, True])
    assert (a > b).tolist() == [True, False, False, False] and (a < b).tolist() == [False, False, False, True]
    assert (a >= b).tolist() == [True, True, True, False] and (a <= b).tolist() == [False, True, True, True]
    assert gt.zeros(3, 5, dtype=gt.bool).amax(-1).tolist() == [False] * 3 and not gt.zeros(2, dtype=gt.bool).max().item()
    assert a.max().item() and not a.min().item() and gt.ones(2, dtype=gt.bool).amin().item()
    values, indices = gt.tensor([[False, True, True], [False, False, False]]).max(1)  # SAM's batched_mask_to_box
    assert values.tolist() == [True, False] and indices.tolist() == [1, 0]
    assert gt.tensor([True, False]).min(0).indices.item() == 1 and gt.cummax(b, 0).values.tolist() == [False] * 2 + [True] * 2


def test_multi_head_attention_forward_and_torchvision_names():
    gt.manual_seed(0)
    E, H, L, N = 8, 2, 5, 3
    mha = nn.MultiheadAttention(E, H, kdim=6, vdim=6)  # separate q/k/v weights, as CLIP's AttentionPool2d
    x, kv = gt.randn(L, N, E), gt.randn(L, N, 6)
    expected, _ = mha(x[:1], kv, kv, need_weights=False)
    y, weights = gt.nn.functional.multi_head_attention_forward(
        query=x[:1], key=kv, value=kv, embed_dim_to_check=E, num_heads=H, in_proj_weight=None,
        in_proj_bias=mha.in_proj_bias, bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
        out_proj_weight=mha.out_proj.weight, out_proj_bias=mha.out_proj.bias, use_separate_proj_weight=True,
        q_proj_weight=mha.q_proj_weight, k_proj_weight=mha.k_proj_weight, v_proj_weight=mha.v_proj_weight,
        training=False)
    check(y, expected.detach().numpy(), 1e-6)
    assert weights.shape == (N, 1, L)
    from gt.vision.models._utils import IntermediateLayerGetter
    from gt.vision.ops.misc import interpolate
    from gt import vision
    body = IntermediateLayerGetter(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)), {"0": "feat", "1": "act"})
    out = body(gt.ones(2, 4))
    assert list(out) == ["feat", "act"] and out["act"].shape == (2, 3) and len(body) == 2
    assert interpolate is gt.nn.functional.interpolate and vision._is_tracing() is False


def test_norms_keep_a_half_input_dtype_with_float32_parameters():
    x = gt.randn(2, 4, 3, 3).half()  # CLIP's fp16 build keeps its norm layers in float32
    for layer in (nn.BatchNorm2d(4).eval(), nn.GroupNorm(2, 4), nn.LayerNorm(3), nn.InstanceNorm2d(4, affine=True)):
        y = layer(x)
        assert y.dtype == gt.float16, type(layer).__name__
        expected = layer(x.float()).detach().numpy()
        np.testing.assert_allclose(y.detach().float().numpy(), expected, atol=2e-3, rtol=2e-3)
    with pytest.raises(RuntimeError, match="mixed dtype"):  # as PyTorch's: no promotion to the parameters' dtype
        gt.nn.functional.layer_norm(gt.ones(2, 4), (4,), gt.ones(4, dtype=gt.float64))


def test_writes_to_a_modules_tables_change_its_attributes():
    # accelerate and diffusers load weights by writing module._parameters[name]: forward must see it
    m = nn.Linear(2, 3)
    p = nn.Parameter(gt.ones(3, 2))
    m._parameters["weight"] = p
    assert m.weight is p
    check(m(gt.ones(1, 2)) - m.bias, [[2.0, 2.0, 2.0]], 1e-6)
    del m.bias  # out of the table too, as PyTorch's
    assert "bias" not in m._parameters and not hasattr(m, "bias")
    s = nn.Sequential(nn.Linear(1, 1), nn.ReLU())
    s._modules["1"] = nn.Tanh()
    assert isinstance(s[1], nn.Tanh) and isinstance(getattr(s, "1"), nn.Tanh)
    m._buffers["scale"] = gt.full((1,), 2.0)
    assert m.scale.item() == 2.0 and "scale" in m.state_dict()
    import copy
    twin = copy.deepcopy(m)  # a copy's tables write the copy's attributes
    twin._parameters["weight"] = nn.Parameter(gt.zeros(3, 2))
    assert twin.weight.sum().item() == 0.0 and m.weight.sum().item() == 6.0

    class Configured(nn.Module):
        def __init__(self):
            self.config = {"hidden": 4}  # diffusers' config decorator sets plain attributes before __init__
            super().__init__()
            self.layer = nn.Linear(4, 4)
    assert Configured().config == {"hidden": 4}

    class Early(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(1, 1)
    with pytest.raises(AttributeError, match="cannot assign module before Module.__init__"):
        Early()


def test_load_from_state_dict_overrides_extra_state_and_container_methods():
    class Renamed(nn.Linear):  # a module renaming an old checkpoint's keys, as libraries do
        def _load_from_state_dict(self, state_dict, prefix, *args):
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, *args)

    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Renamed(2, 2)
            self.step = 0

        def get_extra_state(self):
            return {"step": self.step}

        def set_extra_state(self, state):
            self.step = state["step"]

    m = WithExtra()
    m.step = 7
    sd = m.state_dict()
    assert sd["_extra_state"] == {"step": 7}
    n = WithExtra()
    n.load_state_dict({"_extra_state": {"step": 3}, "inner.w": gt.ones(2, 2), "inner.bias": gt.zeros(2)})
    assert n.step == 3 and n.inner.weight.sum().item() == 4.0
    with pytest.raises(RuntimeError, match=r"size mismatch for inner.bias"):
        n.load_state_dict({"_extra_state": {"step": 1}, "inner.weight": gt.ones(2, 2), "inner.bias": gt.zeros(3)})
    missing, unexpected = nn.Linear(2, 2).load_state_dict({"weight": gt.ones(2, 2), "extra": gt.ones(1)}, strict=False)
    assert missing == ["bias"] and unexpected == ["extra"]
    tied = nn.Module()
    tied.a = nn.Linear(2, 2)
    tied.b = tied.a
    assert [n for n, _ in tied.named_parameters(remove_duplicate=False)] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    d = nn.ModuleDict({"x": nn.ReLU()})
    d.update({"y": nn.Tanh()})
    assert list(d) == ["x", "y"]
    d.clear()
    assert len(d) == 0
    pd = nn.ParameterDict({"a": gt.ones(1)})
    pd |= {"b": gt.zeros(1)}
    assert list(pd) == ["a", "b"] and pd.setdefault("c", gt.ones(2)).shape == (2,) and pd.popitem()[0] == "c"
    seq = nn.Sequential(nn.ReLU()) + nn.Sequential(nn.Tanh())
    assert len(seq) == 2 and isinstance(seq[1], nn.Tanh)
    handles = {}
    h = gt.utils.hooks.RemovableHandle(handles)  # accelerate's hook registries: the handle gives the key
    handles[h.id] = print
    h.remove()
    assert handles == {}


def test_tensor_attributes_to_none_and_names_diffusers_and_peft_import():
    p = nn.Parameter(gt.ones(2))
    p._no_weight_decay = True  # (timm, mamba: per-parameter flags)
    import copy
    assert copy.deepcopy(p)._no_weight_decay and p.__dict__ == {"_no_weight_decay": True}
    x = gt.arange(3)
    assert x.to(None) is x and x.to(None).dtype == gt.int64
    from gt.distributed.device_mesh import DeviceMesh, init_device_mesh  # noqa: F401
    from gt.distributions.relaxed_bernoulli import RelaxedBernoulli
    from gt.distributions.wishart import Wishart
    from gt.vision.transforms.v2 import functional as F2, ToDtype  # noqa: F401
    assert gt.Stream is gt.cuda.Stream and gt.distributed.ProcessGroup and gt.get_device_module().__name__ == "gt.cpu"
    assert gt.nn.init._calculate_correct_fan(gt.ones(3, 4), "fan_out") == 3
    with pytest.warns(FutureWarning, match="deprecated in favor of `nn.init.normal_`"):
        gt.nn.init.normal(gt.ones(2))
    A = gt.tensor(np.random.RandomState(0).randn(6, 4))
    U, S, V = gt.svd_lowrank(A, q=2)
    exact = np.linalg.svd(A.numpy(), compute_uv=False)
    check(S, exact[:2], 1e-10)
    # PyTorch 2.15's values: RelaxedBernoulli(0.5, probs=[0.3, 0.8]).log_prob([0.2, 0.9]); Wishart(5, I3).log_prob(I3)
    check(RelaxedBernoulli(0.5, probs=gt.tensor([0.3, 0.8])).log_prob(gt.tensor([0.2, 0.9])),
          [-0.2527947425842285, 0.30788445472717285], 1e-6)
    assert abs(Wishart(gt.tensor(5.0), covariance_matrix=gt.eye(3)).log_prob(gt.eye(3)).item() + 8.579599380493164) < 1e-5


def test_scans_of_float32_accumulate_in_float64():
    # DDPM's alphas_cumprod: PyTorch's CPU kernels accumulate float32 scans in double
    alphas = 1.0 - gt.linspace(0.0001, 0.02, 1000)
    exact = np.cumprod(alphas.numpy().astype(np.float64))
    assert np.max(np.abs(gt.cumprod(alphas, 0).numpy() - exact) / exact) < 1e-7
    sums = np.cumsum(alphas.numpy().astype(np.float64))
    assert np.max(np.abs(gt.cumsum(alphas, 0).numpy() - sums) / sums) < 1e-7
    assert gt.cumprod(alphas, 0).dtype == gt.float32 and gt.cumsum(alphas, 0).dtype == gt.float32


def test_initializers_write_through_data_and_norms_have_zero_gradients_at_zero():
    conv = nn.Conv2d(16, 32, 3)
    nn.init.normal_(conv.weight.data, 0.0, 0.02)  # PyTorch-GAN's weights_init_normal
    nn.init.constant_(conv.bias.data, 0.0)
    assert abs(float(conv.weight.detach().std()) - 0.02) < 0.003 and conv.bias.abs().max().item() == 0.0
    z = gt.tensor([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]], requires_grad=True)
    z.norm(2, dim=1).sum().backward()  # WGAN-GP's penalty meets a zero row: PyTorch's gradient there is 0
    check(z.grad, [[0.0, 0.0, 0.0], [0.6, 0.8, 0.0]], 1e-6)
    y = gt.zeros(3, requires_grad=True)
    gt.linalg.vector_norm(y).backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.0]
    y.grad = None
    gt.nn.functional.normalize(y, dim=0).sum().backward()
    assert np.isfinite(y.grad.numpy()).all()
    x = gt.ones(3, requires_grad=True)
    g, = gt.autograd.grad((x ** 3).sum(), x, only_inputs=True)  # (PyTorch's deprecated argument)
    check(g, [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        gt.autograd.grad((x * 2).sum(), [x, gt.ones(1, requires_grad=True)])
    with pytest.warns(UserWarning, match="requires_grad=True to a scalar"):
        float((x * 2).sum())
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        nn.InstanceNorm2d(4)(gt.ones(2, 4, 1, 1))


def test_legacy_cuda_types_empty_products_and_complex_parameters_loaded():
    Tensor = gt.cuda.FloatTensor if gt.cuda.is_available() else gt.FloatTensor  # PyTorch-GAN's idiom
    assert Tensor is gt.FloatTensor and repr(gt.cuda.FloatTensor) == "<class 'gt.cuda.FloatTensor'>"
    assert isinstance(gt.ones(1), gt.FloatTensor) and not isinstance(gt.ones(1), gt.cuda.FloatTensor)
    assert gt.cuda.LongTensor(2).dtype == gt.int64
    assert (gt.ones(3, 0) @ gt.ones(0, 4)).tolist() == [[0.0] * 4] * 3  # an empty sum is 0 (was leftover memory)
    assert gt.nn.functional.linear(gt.ones(2, 0), gt.ones(3, 0)).tolist() == [[0.0] * 3] * 2
    assert gt.einsum("ij,jk->ik", gt.ones(3, 0), gt.ones(0, 4)).tolist() == [[0.0] * 4] * 3
    assert gt.einsum("bi,bi->b", gt.ones(0, 2), gt.ones(1, 2)).shape == (0,)
    assert gt.jit.annotate(list, []) == []
    spectrum = gt.fft.rfft(gt.tensor([1.0, 2.0, 3.0, 4.0]))  # the zero and Nyquist terms of a real signal: imag +0
    assert [math.copysign(1, v) for v in spectrum.imag.numpy()[[0, 2]]] == [1.0, 1.0]
    assert spectrum.imag.numpy()[[0, 2]].tolist() == [0.0, 0.0]

    class Spectral(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(gt.randn(2, 2, dtype=gt.cfloat))

    m, saved = Spectral(), Spectral()
    m.load_state_dict(saved.state_dict())  # the parameter keeps training (its parts stay leaves)
    assert m.w.requires_grad and m.w.real.requires_grad
    before = m.w.detach().numpy()
    opt = gt.optim.SGD(m.parameters(), lr=0.1)
    m.w.abs().sum().backward()
    opt.step()
    assert np.abs(m.w.detach().numpy() - before).max() > 0
    check(before, saved.w.detach().numpy())


def test_as_torch_runs_code_modules_and_forkserver_children(tmp_path):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", "-c", "import torch, sys; print(torch.ones(2).sum().item(), sys.argv[1:])", "a"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["2.0", "['a']"], out.stderr
    script = tmp_path / "forkserver_child.py"
    script.write_text(
        "import multiprocessing as mp\n"
        "import torch\n"
        "def child(q):\n"
        "    import torch\n"
        "    q.put(torch.ones(2).sum().item())\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('forkserver')\n"
        "    q = ctx.Queue()\n"
        "    p = ctx.Process(target=child, args=(q,))\n"
        "    p.start(); p.join(60)\n"
        "    print(p.exitcode, q.get(timeout=10))\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(script)], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and out.stdout.split() == ["0", "2.0"], out.stderr[-2000:]


def test_deprecated_addcmul_addcdiv_spelling_and_legacy_tensor_methods(tmp_path):
    # Ranger (torch-optimizer, pytorch_ranger) calls exp_avg_sq.addcmul_(1 - b2, g, g) and
    # p.addcdiv_(-step, exp_avg, denom): value first, as PyTorch still accepts (with a warning)
    a, b, c = gt.tensor([1.0, 2.0, 3.0]), gt.tensor([0.5, -1.0, 2.0]), gt.tensor([2.0, 3.0, 4.0])
    with pytest.warns(UserWarning, match="This overload of addcdiv is deprecated") as caught:
        check(gt.addcdiv(a, 0.1, b, c), [1.025, 2.0 - 0.1 / 3.0, 3.05])
    assert caught[0].filename == __file__  # (the warning names the user's line)
    with pytest.warns(UserWarning, match="addcmul"):
        check(a.clone().addcmul_(0.1, b, c), [1.1, 1.7, 3.8])
    check(gt.addcdiv(a, b, c, value=0.1), [1.025, 2.0 - 0.1 / 3.0, 3.05])
    # Tensor.new (SWATS, Shampoo): the legacy constructor in x's dtype; resize_
    p = nn.Parameter(gt.ones(2, 3, dtype=gt.float64))
    assert p.new().shape == (0,) and p.new(2, 2).dtype == gt.float64 and p.new(gt.Size([4])).shape == (4,)
    check(p.new([1, 2]), [1.0, 2.0]), check(p.data.new(1).fill_(0), [0.0])
    with pytest.raises(TypeError, match="expected gt.float64"):
        p.new(gt.ones(2))
    assert gt.Tensor(gt.Size([2, 3])).shape == (2, 3) and gt.Tensor(gt.Size([])).shape == ()
    x = gt.arange(6.0)
    check(x.resize_(2, 2), [[0, 1], [2, 3]]), check(x.resize_((3,)), [0, 1, 2])
    assert x.resize_as_(gt.zeros(2, 2)).shape == (2, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        p.resize_(6)
    # randint_like(..., memory_format=) (Adahessian's Rademacher vectors)
    r = gt.randint_like(p, high=2, memory_format=gt.preserve_format)
    assert r.dtype == gt.float64 and r.shape == (2, 3) and set(np.unique(r.numpy())) <= {0.0, 1.0}
    # gt.save(pickle_module=, pickle_protocol=) (fastai's Learner.export) and gt.load(pickle_module=)
    obj = {"w": gt.arange(3.0), "m": nn.Linear(2, 2)}
    gt.save(obj, tmp_path / "p4.pt", pickle_module=pickle, pickle_protocol=4)
    back = gt.load(tmp_path / "p4.pt", pickle_module=pickle, weights_only=False)
    check(back["w"], [0.0, 1.0, 2.0])
    assert isinstance(back["m"], nn.Linear)
    with pytest.raises(TypeError, match="pickle_module='builtins' is not supported"):
        gt.save(obj, tmp_path / "x.pt", pickle_module=importlib.import_module("builtins"))
    # a module with dumps (cloudpickle: fastai's export default) gets what pickle cannot name
    calls = []

    class ByValue:
        @staticmethod
        def dumps(o, protocol=None):
            calls.append(o)
            return pickle.dumps(o.__name__, protocol)  # (stands in for cloudpickle's by-value bytes)

    fn = lambda x: x  # noqa: E731
    gt.save({"fn": fn, "t": gt.ones(2)}, tmp_path / "cp.pt", pickle_module=ByValue)
    back = gt.load(tmp_path / "cp.pt", weights_only=False)
    assert calls == [fn] and back["fn"] == "<lambda>" and back["t"].tolist() == [1.0, 1.0]
    # typing.get_type_hints(a module) (fastai's BaseLoss), as PyTorch's Module is annotated
    import typing
    assert typing.get_type_hints(nn.CrossEntropyLoss())["training"] is bool


def test_linspace_values_are_pytorchs_bits():
    # PyTorch's CPU kernel: step in the dtype, start + step * i for the first half and
    # end - step * (n - 1 - i) for the rest, fma-rounded (values printed by PyTorch 2.15)
    assert gt.linspace(0, 1, 7).tolist() == [0.0, 0.1666666716337204, 0.3333333432674408, 0.5, 0.6666666269302368,
                                             0.8333333134651184, 1.0]
    assert gt.linspace(-3.0, 2.5, 11).tolist()[3:7] == [-1.3499999046325684, -0.7999999523162842,
                                                        -0.2500000596046448, 0.2999999523162842]
    betas = gt.linspace(1e-4, 0.02, 1000)  # DDPM's schedule
    assert betas[[7, 499, 500, 998]].tolist() == [0.00023943943961057812, 0.010040040127933025,
                                                  0.010059959255158901, 0.01998008042573929]
    assert gt.linspace(1e-4, 0.02, 1000, dtype=gt.float64)[[7, 500]].tolist() == [0.00023943943943943944,
                                                                                   0.01005995995995996]
    assert gt.linspace(-3, 2.5, 11, dtype=gt.int64).tolist() == [-3, -2, -2, -1, -1, 0, 0, 0, 1, 1, 2]
    assert gt.linspace(0.1, 0.7, 9, dtype=gt.bfloat16).tolist() == [0.10009765625, 0.1748046875, 0.25, 0.32421875,
                                                                     0.400390625, 0.474609375, 0.55078125, 0.625,
                                                                     0.69921875]
    assert gt.linspace(2, 5, 1).tolist() == [2.0] and gt.linspace(0, 1, 0).shape == (0,)
    assert gt.linspace(gt.tensor(0.0), gt.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        gt.linspace(0, 1, -1)


def test_writes_with_repeated_indices_keep_the_last_value_and_tuple_keys_pair():
    # PyTorch's CPU kernels write listed values in order: a position listed twice keeps the
    # last one (GT stored the mean, a value never written: kornia's conv_quad_interp3d lookup)
    idx = gt.tensor([3, 5, 3, 7, 5, 9, 1, 3, 11, 0, 7, 2])
    for d in (gt.int32, gt.int64, gt.float32):
        t = gt.full((12,), -1, dtype=d)
        t[idx] = gt.arange(12, dtype=d)
        assert t.tolist() == [9, 6, 11, 7, -1, 4, -1, 10, -1, 5, -1, 8]
    t = gt.zeros(2, 3)
    t[gt.tensor([0, 0, 1]), gt.tensor([1, 1, 2])] = gt.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [[0, 2, 0], [0, 0, 3]]
    t = gt.zeros(3, 2)
    t[gt.tensor([0, 0])] = gt.tensor([[1.0, 1.0], [2.0, 2.0]])
    assert t.tolist() == [[2, 2], [0, 0], [0, 0]]
    v = gt.arange(5.0) + 1
    i = gt.tensor([3, 5, 3, 7, 5])
    assert gt.zeros(8).scatter_(0, i, v).tolist() == [0, 0, 0, 3, 0, 5, 0, 4]
    assert gt.zeros(8).index_copy_(0, i, v).tolist() == [0, 0, 0, 3, 0, 5, 0, 4]
    assert gt.zeros(8).index_put_((i,), v).tolist() == [0, 0, 0, 3, 0, 5, 0, 4]
    assert gt.zeros(8).index_put_((i,), v, accumulate=True).tolist() == [0, 0, 0, 4, 0, 7, 0, 4]
    src = gt.arange(12.0).reshape(3, 4)
    check(gt.zeros(3, 4).scatter(0, gt.tensor([[0, 1, 2, 0], [2, 0, 0, 1]]), src),
          [[0, 5, 6, 3], [0, 1, 0, 7], [4, 0, 2, 0]])
    # the gradient reaches the value written (not one written over), and x where nothing was
    x = gt.zeros(4, requires_grad=True)
    w = gt.ones(3, requires_grad=True)
    y = x * 1
    y[gt.tensor([1, 1, 2])] = w * gt.tensor([5.0, 6.0, 7.0])
    (y * gt.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    check(y, [0, 6, 7, 0]), check(w.grad, [0, 12, 21]), check(x.grad, [1, 0, 0, 4])
    # t[(0, 1), (0, 1), a:b] = v pairs the tuples (they were crossed: all 4 combinations written)
    t = gt.zeros(2, 2, 3, 3)
    t[(0, 1), (0, 1), 1:2, 1:2] = 1.0
    assert t.sum((2, 3)).tolist() == [[1, 0], [0, 1]]
    t = gt.zeros(2, 2, 3)
    t[(0, 1), (0, 1)] = 1.0
    assert t.sum(2).tolist() == [[3, 0], [0, 3]]


def test_scatter_reduce_matches_pytorch():
    # values and gradients printed by PyTorch 2.15 for the same call
    x = gt.tensor([[1.0, 9.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    idx = gt.tensor([[0, 1, 1, 3], [3, 3, 0, 1]])
    src = gt.tensor([[2.0, 8.0, 10.0, -1.0], [4.0, 0.0, 6.0, 7.0]], requires_grad=True)
    want = {("sum", True): [[3, 27, 3, 3], [11, 13, 7, 12]], ("sum", False): [[2, 18, 3, -1], [6, 7, 7, 4]],
            ("mean", True): [[1.5, 9, 3, 1.5], [5.5, 6.5, 7, 4]], ("mean", False): [[2, 9, 3, -1], [6, 7, 7, 2]],
            ("amax", True): [[2, 10, 3, 4], [6, 7, 7, 8]], ("amax", False): [[2, 10, 3, -1], [6, 7, 7, 4]],
            ("amin", True): [[1, 8, 3, -1], [5, 6, 7, 0]], ("amin", False): [[2, 8, 3, -1], [6, 7, 7, 0]]}
    for (reduce, include_self), values in want.items():
        xx = x.clone().requires_grad_()
        out = xx.scatter_reduce(1, idx, src, reduce, include_self=include_self)
        check(out, values)
        (out * gt.arange(8.0).reshape(2, 4)).sum().backward()
        if (reduce, include_self) == ("mean", True):
            check(src.grad, [[0, 1 / 3, 1 / 3, 1.5], [7 / 3, 7 / 3, 2, 2.5]], atol=1e-6)
            check(xx.grad, [[0, 1 / 3, 2, 1.5], [2, 2.5, 6, 7 / 3]], atol=1e-6)
        src.grad = None
    assert gt.tensor([1, 2, 3, 4]).scatter_reduce(0, gt.tensor([0, 0, 2]), gt.tensor([5, 6, 7]), "mean").tolist() == \
        [4, 2, 5, 4]  # (an integer mean rounds down)
    # prod: a segmented product scan (values printed by PyTorch 2.15)
    assert gt.zeros(4).scatter_reduce(0, gt.tensor([0, 0, 0, 2, 2]), gt.tensor([2.0, 3.0, 4.0, 5.0, 0.0]), "prod",
                                      include_self=False).tolist() == [24, 0, 0, 0]
    xx = x.clone().requires_grad_()
    out = xx.scatter_reduce(1, idx, src, "prod")
    check(out, [[2, 720, 3, -4], [30, 42, 7, 0]])
    out.sum().backward()
    check(src.grad, [[1, 90, 72, 4], [0, 32, 5, 6]])  # (through the zero too)
    check(xx.grad, [[2, 80, 1, -1], [6, 7, 1, 0]])
    with pytest.raises(RuntimeError, match="reduce argument must be"):
        x.scatter_reduce(1, idx, src, "max")


def test_layout_views_write_through_as_pytorchs():
    # gpytorch's psd_safe_cholesky adds jitter with A.diagonal(dim1=-2, dim2=-1).add_(jitter);
    # pyro's GP adds noise with K.view(-1)[::n + 1] += noise: both changed nothing before
    a = gt.eye(3) * 2
    a.diagonal(dim1=-2, dim2=-1).add_(0.5)
    check(a, np.eye(3) * 2.5)
    k = gt.zeros(3, 3)
    k.view(-1)[::4] += 1.5
    check(k, np.eye(3) * 1.5)
    b = gt.arange(6.0).reshape(2, 3)
    b.t().mul_(2)
    b.T[0] = -1
    check(b, [[-1, 2, 4], [-1, 8, 10]])
    c = gt.zeros(2, 3)
    c.unsqueeze(0).fill_(3)
    gt.flatten(c)[2:4] = 7
    check(c, [[3, 3, 7], [7, 3, 3]])
    d = gt.zeros(2, 2, 2)
    d.permute(2, 0, 1)[0] = 1
    check(d, [[[1, 0], [1, 0]], [[1, 0], [1, 0]]])
    m = gt.zeros(2, 3, 3)
    m.diagonal(offset=1, dim1=1, dim2=2).fill_(5)
    check(m, np.broadcast_to(np.eye(3, k=1) * 5, (2, 3, 3)))
    # a write through a view is recorded: the gradient flows as through PyTorch's CopySlices
    x = gt.ones(3, 3, requires_grad=True)
    y = x * 1
    y.diagonal().mul_(3)
    y.sum().backward()
    check(x.grad, np.ones((3, 3)) + 2 * np.eye(3))
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x.diagonal().add_(1)
    # reading is not linked back: a view read before x changed shows the old values (documented)
    e = gt.zeros(4)
    v = e.view(2, 2)
    e.add_(1)
    v[0, 0] = 5  # (written: read again first)
    check(e, [5, 1, 1, 1])
    assert gt.t(gt.ones(2, 3)).shape == (3, 2) and gt.ravel(gt.ones(2, 3)).shape == (6,)
    assert gt.ones(2, 3).adjoint().shape == (3, 2)


def test_train_calls_each_childs_train_and_backward_adds_into_the_existing_grad():
    calls = []

    class Child(nn.Module):
        def train(self, mode=True):  # gpytorch clears its caches in such an override
            calls.append(mode)
            return super().train(mode)

    parent = nn.Sequential(nn.Linear(2, 2), Child())
    parent.eval()
    parent.train()
    assert calls == [False, True] and parent[1].training and parent[0].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        parent.train("no")
    # backward adds into the existing .grad object (PyTorch adds in place): a held reference sees the sum
    w = nn.Parameter(gt.tensor([1.0, 2.0]))
    (w * 3).sum().backward()
    g = w.grad
    (w * 5).sum().backward()
    assert g is w.grad and g.tolist() == [8.0, 8.0]
    x = gt.tensor([1.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    first = x.grad
    (x * x).sum().backward(create_graph=True)  # (with create_graph a new tensor, with history)
    assert x.grad is not first and x.grad.tolist() == [4.0]


def test_tensor_subclass_idioms():
    # fastai's TensorBase: __new__ returns x.as_subclass(cls), then Python calls __init__(res, x),
    # which must change nothing (it rebuilt the tensor as float32 from x's values)
    class Sub(gt.Tensor):
        def __new__(cls, x):
            return x.as_subclass(cls)

    s = Sub(gt.tensor([[1], [0]], dtype=gt.int8))
    assert type(s) is Sub and s.dtype == gt.int8 and s.tolist() == [[1], [0]]
    t = gt.tensor(7)
    gt.Tensor.__init__(t, 7)
    assert t.dtype == gt.int64 and t.item() == 7
    # as_subclass stays on the autograd graph; _make_subclass is detached
    x = gt.ones(2, requires_grad=True)
    y = x.as_subclass(Sub)
    assert type(y) is Sub and not y.is_leaf
    (y * 2).sum().backward()
    check(x.grad, [2.0, 2.0])
    p = gt.Tensor._make_subclass(Sub, gt.ones(2), True)
    assert type(p) is Sub and p.requires_grad and p.is_leaf
    with pytest.raises(TypeError, match="subclass of torch.Tensor"):
        x.as_subclass(int)

    class Opted(gt.Tensor):
        __torch_function__ = gt._C._disabled_torch_function_impl

    assert gt.Tensor.__torch_function__(gt.add, (gt.Tensor,), (gt.ones(1), 1)).tolist() == [2.0]
    assert type(gt.ones(2).as_subclass(Opted) + 1) is gt.Tensor  # (ops return gt.Tensor: documented)


def test_lu_family_and_the_ex_forms_match_lapacks():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 4))
    A = gt.tensor(a)
    LU, piv = gt.linalg.lu_factor(A)
    P, L, U = gt.lu_unpack(LU, piv)
    check(P @ L @ U, a, atol=1e-12)
    assert piv.dtype == gt.int32 and piv.tolist()[0] == [4, 3, 3, 4]  # (LAPACK's 1-based pivots, as PyTorch printed)
    P2, L2, U2 = gt.linalg.lu(A)
    check(L2, L.numpy())
    b = rng.standard_normal((2, 4, 3))
    B = gt.tensor(b, requires_grad=True)
    X = gt.linalg.lu_solve(LU, piv, B)
    check(X, np.linalg.solve(a, b), atol=1e-12)
    check(gt.linalg.lu_solve(LU, piv, B, adjoint=True), np.linalg.solve(np.swapaxes(a, -1, -2), b), atol=1e-12)
    X.sum().backward()  # (differentiable in B: gB = A^-T 1)
    check(B.grad, np.linalg.solve(np.swapaxes(a, -1, -2), np.ones((2, 4, 3))), atol=1e-12)
    s = a @ np.swapaxes(a, -1, -2) + np.eye(4)
    Lc = gt.linalg.cholesky(gt.tensor(s))
    check(gt.cholesky_solve(gt.tensor(b), Lc), np.linalg.solve(s, b), atol=1e-10)
    check(gt.cholesky_inverse(Lc[0]), np.linalg.inv(s[0]), atol=1e-10)
    check(gt.triangular_solve(gt.tensor(b), Lc, upper=False).solution, np.linalg.solve(np.tril(Lc.numpy()), b), atol=1e-10)
    # info as LAPACK's: the order of the first leading minor that is not positive-definite
    _, info = gt.linalg.cholesky_ex(gt.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]))
    assert info.tolist() == [0, 2]
    inverse, info = gt.linalg.inv_ex(gt.tensor([[1.0, 2.0], [2.0, 4.0]]))
    assert info.item() == 2 and np.isnan(inverse.numpy()).all()
    with pytest.raises(gt.linalg.LinAlgError):
        gt.linalg.cholesky_ex(gt.tensor([[1.0, 2.0], [2.0, 1.0]]), check_errors=True)
    with pytest.raises(NotImplementedError, match="no gradient of the LU"):
        gt.linalg.lu_factor(gt.tensor(a, requires_grad=True))


def test_unique_along_a_dim_as_strided_and_segment_reduce():
    p = gt.tensor([[0, 3], [1, 2], [0, 3], [1, 1]])
    v, inv, c = gt.unique(p, dim=0, return_inverse=True, return_counts=True)  # (opacus' ghost clipping)
    assert v.tolist() == [[0, 3], [1, 1], [1, 2]] and inv.tolist() == [0, 2, 0, 1] and c.tolist() == [2, 1, 1]
    out = gt.unique_consecutive(gt.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True)
    assert [t.tolist() for t in out] == [[1, 2, 3, 1, 2], [0, 0, 1, 1, 2, 3, 3, 4], [2, 2, 1, 2, 1]]
    a = gt.arange(12.0).reshape(3, 4)
    assert gt.as_strided(a, (2, 2), (1, 2)).tolist() == [[0, 2], [1, 3]]  # (PyTorch's values)
    assert a.as_strided((3, 3), (4, 1), 1).tolist() == [[1, 2, 3], [5, 6, 7], [9, 10, 11]]
    w = gt.ones(5, requires_grad=True)
    gt.as_strided(w, (2, 2), (1, 1)).sum().backward()
    assert w.grad.tolist() == [1, 2, 1, 0, 0]
    with pytest.raises(RuntimeError, match="reach past"):
        gt.as_strided(a, (2, 2), (12, 1))
    data = gt.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert gt._segment_reduce(data, "max", lengths=gt.tensor([2, 0, 3])).tolist() == [2, float("-inf"), 5]
    assert gt._segment_reduce(data, "sum", offsets=gt.tensor([0, 2, 2, 5])).tolist() == [3, 0, 12]
    assert gt.div(gt.tensor([-7, 7, -6, 7]), gt.tensor([2, 2, 3, -2]), rounding_mode="trunc").tolist() == [-3, 3, -2, -3]
    assert gt.tensor([-7.5, 7.5]).div(2, rounding_mode="trunc").tolist() == [-3.0, 3.0]
    assert gt.normal(0, 2.0, size=(3,), device=gt.device("cpu")).shape == (3,)
    assert type((1,) + gt.Size([2])) is gt.Size and type(gt.broadcast_shapes((2, 1), (3,))) is gt.Size
    assert gt.ones(2, 3).sum_to_size(1, 3).tolist() == [[2, 2, 2]]
    assert gt.nextafter(gt.tensor([1.0]), gt.tensor([2.0])).item() == np.nextafter(np.float32(1), np.float32(2))


def test_names_libraries_import_resolve():
    import importlib
    for module, name in [("gt.nn.modules.utils", "_pair"), ("gt.futures", "Future"), ("gt.utils.dlpack", "from_dlpack"),
                         ("gt.nn.parallel.scatter_gather", "scatter"), ("gt._subclasses.fake_tensor", "is_fake"),
                         ("gt.fx.experimental.proxy_tensor", "get_proxy_mode"), ("gt.backends.mkldnn", "is_available"),
                         ("gt.distributed.rpc", "is_available"), ("gt.distributed.fsdp", "fully_shard"),
                         ("gt.distributed._composable.fsdp", "FSDPModule"),
                         ("gt.distributed._tensor.experimental", "implicit_replication"),
                         ("gt.utils.data._utils.collate", "default_convert"), ("gt.amp.grad_scaler", "OptState"),
                         ("gt._utils", "_flatten_dense_tensors"), ("gt.__config__", "show"), ("gt.types", "Number")]:
        assert hasattr(importlib.import_module(module), name), (module, name)
    assert importlib.import_module("gt.nn.modules.utils")._pair(3) == (3, 3)
    assert gt.ones(2).layout == gt.strided and not gt.ones(1).is_inference() and not isinstance(3, gt.SymInt)
    check(gt.conv2d(gt.ones(1, 1, 3, 3), gt.ones(1, 1, 3, 3)), [[[[9.0]]]])
    assert gt.ops.aten.clone.default is gt.clone
    unknown = gt.ops.aten._to_copy.default  # (PyG keys tables by ATen ops GT has no function for)
    with pytest.raises(NotImplementedError, match="_to_copy"):
        unknown(gt.ones(1))
    assert importlib.import_module("gt._tensor_str")._tensor_str(gt.tensor([1.5, 2.0]), 0) == "[1.5, 2. ]"
    assert gt._segment_reduce(gt.tensor([1.0, 3.0, 2.0]), "amax", lengths=gt.tensor([2, 1])).tolist() == [3, 2]
    fut = gt.futures.Future()
    chained = fut.then(lambda f: f.wait() + 1)
    fut.set_result(1)
    assert chained.wait() == 2 and gt.futures.wait_all([fut]) == [1]
    flat = gt._utils._flatten_dense_tensors([gt.ones(2), gt.zeros(1, 2)])
    assert flat.tolist() == [1, 1, 0, 0] and gt._utils._unflatten_dense_tensors(flat, [gt.ones(2), gt.zeros(1, 2)])[1].shape == (1, 2)
    gt._assert_async(gt.tensor(True))
    gt._assert_async(gt.tensor(False), "the check failed")
    with pytest.raises(ValueError, match="the check failed"):
        gt.ones(1).item()  # (read at the next wait for values)
    sampler = gt.utils.data.WeightedRandomSampler([0.0, 1.0, 0.0], 5)
    assert list(sampler) == [1] * 5 and len(sampler) == 5
    assert gt.Generator().device == gt.device("cpu") and gt.optim.lr_scheduler._LRScheduler is gt.optim.lr_scheduler.LRScheduler
    out, jvp_fn = gt.func.linearize(gt.sin, gt.tensor([0.0, 1.0]))
    check(jvp_fn(gt.tensor([1.0, 1.0])), np.cos([0.0, 1.0]), atol=1e-6)


def test_module_internals_and_reset_parameters():
    m = nn.Linear(2, 2)
    assert m._version == 1 and not m._backward_hooks and not m._state_dict_hooks

    class Renamed(nn.Linear):  # (opacus' DPMultiheadAttention overrides it)
        def _save_to_state_dict(self, destination, prefix, keep_vars):
            super()._save_to_state_dict(destination, prefix + "inner.", keep_vars)

    assert list(nn.Sequential(Renamed(2, 2)).state_dict()) == ["0.inner.weight", "0.inner.bias"]
    bn = nn.BatchNorm1d(3)
    with gt.no_grad():
        bn.weight.fill_(5.0)
        bn.running_mean.fill_(2.0)
    bn.reset_parameters()
    assert bn.weight.tolist() == [1, 1, 1] and bn.running_mean.tolist() == [0, 0, 0]
    for module in (nn.LayerNorm(3), nn.GroupNorm(1, 3), nn.RMSNorm(3), nn.Embedding(4, 3, padding_idx=0),
                   nn.GRUCell(2, 3), nn.LSTMCell(2, 3), nn.PReLU(), nn.Bilinear(2, 2, 3), nn.EmbeddingBag(4, 3)):
        module.reset_parameters()
    e = nn.Embedding(4, 3, padding_idx=1)
    e.reset_parameters()
    assert e.weight[1].tolist() == [0, 0, 0]

    class Broadcast(gt.autograd.Function):  # gpytorch's kernels return a broadcast-shaped gradient
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.expand(3, 4)

    x = gt.ones(4, requires_grad=True)
    Broadcast.apply(x).sum().backward()
    assert x.grad.tolist() == [3, 3, 3, 3]


def test_original_spectral_norm_matches_pytorchs():
    # values printed by PyTorch 2.15 for the same weights, u, v and input
    m = nn.Linear(4, 3)
    with gt.no_grad():
        m.weight.copy_(gt.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.5))
        m.bias.zero_()
    m = nn.utils.spectral_norm(m)
    with gt.no_grad():
        m.weight_u.copy_(gt.tensor([0.6, -0.8, 0.0]))
        m.weight_v.copy_(gt.tensor([0.5, 0.5, -0.5, 0.5]))
    assert sorted(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    x = gt.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
    for _ in range(3):
        y = m(x)
        y.sum().backward()
    check(y, [[0.82257, 0.02493, -0.77271], [-0.5733, 0.22434, 1.02197]], atol=2e-5)
    check(m.weight_orig.grad, [[-1.71623, -0.1843, 1.34764, 2.87957], [-2.33268, -0.84302, 0.64663, 2.13629],
                               [-2.94913, -1.50175, -0.05437, 1.39301]], atol=2e-5)
    check(m.weight_u, [0.59837, -0.0984, -0.79516], atol=2e-5)
    nn.utils.remove_spectral_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    c = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 3, 3))
    assert c.weight_u.shape == (3,) and c.weight_v.shape == (18,)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(nn.Linear(2, 2))


def test_a_loaders_iterator_made_from_the_loader_alone():
    from gt.utils.data.dataloader import _DatasetKind, _SingleProcessDataLoaderIter

    class Fake:  # fastai's _FakeLoader drives PyTorch's iterator so
        _auto_collation, _dataset_kind, _index_sampler = False, _DatasetKind.Iterable, None
        collate_fn = staticmethod(lambda x: x * 10)

        def __init__(self):
            self.dataset = [1, 2, 3]

        def __len__(self):
            return 3

    assert list(_SingleProcessDataLoaderIter(Fake())) == [10, 20, 30]
    loader = gt.utils.data.DataLoader(gt.utils.data.TensorDataset(gt.arange(6.0)), batch_size=4)
    assert [b[0].tolist() for b in _SingleProcessDataLoaderIter(loader, iter(loader))] == [[0, 1, 2, 3], [4, 5]]


def test_round_of_monai_e3nn_metric_learning_findings():
    import collections.abc
    import warnings
    # x[[rows, cols]]: a list holding sequences is a tuple of indices, as PyTorch 2.15 (with its warning)
    m = gt.arange(12.0).reshape(3, 4)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        assert m[[[0, 1], [1, 2]]].tolist() == [1.0, 6.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert m[[0, 2]].shape == (2, 4)  # (a list of ints stays one index)
    # fill_diagonal_ (pytorch-metric-learning's pair masks)
    a = gt.ones(3, 4)
    a.fill_diagonal_(0)
    assert a.tolist() == [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1]]
    b = gt.zeros(7, 3)
    b.fill_diagonal_(1, wrap=True)
    assert b[4].tolist() == [1, 0, 0] and b[3].tolist() == [0, 0, 0]
    # cdist of a point set with itself: exact zeros on the diagonal (direct differences up to 25 rows, as PyTorch)
    pts = gt.tensor(np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32))
    assert np.diag(gt.cdist(pts, pts).numpy()).max() == 0.0
    check(gt.cdist(pts, pts, compute_mode="use_mm_for_euclid_dist"), gt.cdist(pts, pts).numpy(), atol=1e-3)
    w = pts.clone().requires_grad_()
    gt.cdist(w, w).sum().backward()
    assert np.isfinite(w.grad.numpy()).all()
    with pytest.raises(RuntimeError, match="same dtype, but found Double and Float"):
        gt.dot(gt.ones(2, dtype=gt.float64), gt.ones(2))
    assert gt.Tensor().shape == (0,) and gt.Tensor().dtype == gt.float32
    assert gt.linalg.lstsq(gt.eye(3, dtype=gt.float64) * 2, gt.ones(3, dtype=gt.float64)).solution.tolist() == [0.5] * 3
    gt._assert(True, "fine")
    with pytest.raises(AssertionError, match="boom"):
        gt._assert(False, "boom")
    # a hook registered before an in-place op sees the gradient of the values before it (smp's BN -> ReLU(inplace))
    x = gt.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    y = x * 1.0
    seen = {}
    y.register_hook(lambda g: seen.update(g=g.tolist()))
    gt.relu_(y)
    (y * gt.tensor([10.0, 20.0, 30.0, 40.0])).sum().backward()
    assert seen["g"] == [0, 20, 0, 40] and x.grad.tolist() == [0, 20, 0, 40]
    # lerp rounds as PyTorch's kernel (fma): these float32 values are PyTorch 2.15's
    assert gt.lerp(gt.tensor([2.0]), gt.tensor([3.0]), 0.97).item() == 2.9700000286102295
    assert gt.lerp(gt.tensor([0.1]), gt.tensor([0.7]), gt.tensor([0.3])).item() == 0.2800000011920929
    # quantile / nanquantile (MONAI's percentile metrics), tensors are Iterable, allclose(equal_nan=)
    x2 = gt.tensor([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]])
    assert gt.quantile(x2, 0.3, dim=1).tolist() == [1.4000000953674316, 3.4000000953674316]
    assert gt.quantile(x2, gt.tensor([0.25, 0.5, 0.9]), dim=0, keepdim=True).shape == (3, 1, 5)
    for interpolation, want in (("lower", [1, 3]), ("higher", [3, 5]), ("midpoint", [2, 4]), ("nearest", [1, 3])):
        assert gt.quantile(x2, 0.3, dim=1, interpolation=interpolation).tolist() == want
    y2 = gt.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]])
    assert np.isnan(gt.quantile(y2, 0.5, dim=1)[0].item()) and gt.nanquantile(y2, 0.5, dim=1).tolist() == [2, 5]
    assert isinstance(gt.ones(2), collections.abc.Iterable) and [t.item() for t in gt.arange(3)] == [0, 1, 2]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(gt.tensor(1.0)).__next__()
    assert gt.allclose(gt.tensor([float("nan"), 1.0]), gt.tensor([float("nan"), 1.0]), equal_nan=True)
    from typing import Dict, List, Optional
    assert gt.jit.isinstance([1, 2], List[int]) and not gt.jit.isinstance([1, "a"], List[int])
    assert gt.jit.isinstance({"a": gt.ones(1)}, Dict[str, gt.Tensor]) and gt.jit.isinstance(None, Optional[int])
    class G(gt.fx.GraphModule):  # (e3nn subclasses it at import)
        pass
    assert issubclass(G, nn.Module)


def test_a_view_of_a_view_links_to_the_first_base_up_to_32_deep():
    x = gt.zeros(2, 6)
    v = x.view(2, 2, 3).transpose(1, 2)  # (holds no intermediate: linked to x, weakly)
    v[0, 0, 1] = 5
    assert x[0, 3].item() == 5
    r = x[1]  # a basic view, then layout views of it
    r.view(2, 3).t()[2, 1] = 7
    assert x[1, 5].item() == 7
    a = gt.ones(4, 4)
    chain = a
    for _ in range(5):
        chain = chain.view(16).view(4, 4).t()
    chain[0, 0] = 9
    assert a[0, 0].item() == 9
    for _ in range(20):  # (a loop reshaping one variable: past 32 deep its views stand alone)
        chain = chain.view(16).view(4, 4).t()
    chain[0, 0] = 3
    assert a[0, 0].item() == 9


def test_create_graph_links_a_gradient_to_the_forward_tensors_its_formula_reads():
    # PyTorch's relu gradient (threshold_backward) reads the input: a second backward reaches the
    # bias with zeros (RealNVP losses built on jacobian(create_graph=True)); linear ops' do not
    for act in (gt.relu, gt.abs):
        x = gt.tensor([0.5, -1.0], requires_grad=True)
        w = gt.tensor([2.0, 3.0], requires_grad=True)
        b = gt.tensor([0.1, 0.2], requires_grad=True)
        (g,) = gt.autograd.grad(act(w * x + b).sum(), x, create_graph=True)
        g.sum().backward()
        assert b.grad is not None and b.grad.tolist() == [0.0, 0.0]
    x = gt.ones(2, requires_grad=True)
    (g,) = gt.autograd.grad((2 * x).sum(), x, create_graph=True)
    assert not g.requires_grad  # (as PyTorch: 2 * x's gradient does not depend on x)
    (g,) = gt.autograd.grad((x * x).sum(), x, create_graph=True)
    assert g.requires_grad


def test_batchnorm_loads_an_old_state_dict_without_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    old = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    bn.load_state_dict(old)  # (version none: a plain dict, torchvision's pre-0.4.1 checkpoints)
    versioned = OrderedDict(old)
    versioned._metadata = {"": {"version": 2}}  # (PyTorch's state_dict of today says version 2)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(versioned)


def test_names_sentence_transformers_thop_fvcore_and_botorch_import():
    import importlib
    import sys
    assert gt.nn.modules.module._EXTRA_STATE_KEY_SUFFIX == "_extra_state" and "gt._dynamo" in sys.modules
    m = gt.nn.Linear(2, 2)
    m.register_buffer("running", gt.ones(1), persistent=False)
    assert m._non_persistent_buffers_set == {"running"} and m._get_name() == "Linear"
    assert gt.utils.checkpoint.get_device_states(gt.ones(1)) == ([], [])
    with pytest.raises(NotImplementedError, match="dispatcher"):
        with importlib.import_module("gt.utils._python_dispatch").TorchDispatchMode():
            pass
    q = importlib.import_module("gt.ao.quantization").QuantStub()
    assert q(gt.ones(2)).tolist() == [1.0, 1.0]
    for name in ("FractionalMaxPool2d", "FractionalMaxPool3d"):
        with pytest.raises(NotImplementedError):
            getattr(gt.nn, name)(2)
    assert importlib.import_module("gt.optim.adam").Adam is gt.optim.Adam
    assert importlib.import_module("gt.optim.optimizer").Optimizer is gt.optim.Optimizer
    a = gt.arange(6).reshape(2, 3)
    assert (a @ a.T).tolist() == [[5, 14], [14, 50]] and (a @ a.T).dtype == gt.int64
    out = gt.empty(2, 2)
    assert gt.linalg.cholesky(gt.tensor([[4.0, 2.0], [2.0, 3.0]]), out=out) is out
    assert np.allclose(out.numpy(), [[2.0, 0.0], [1.0, 2.0 ** 0.5]])
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = gt.tensor([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0] and y.grad is None
    gt.autograd.backward([(x * y).sum()], grad_tensors=[gt.tensor(2.0)])
    assert x.grad.tolist() == [9.0, 12.0] and y.grad.tolist() == [2.0, 4.0]


def test_sobol_engine_unscrambled_points_are_pytorchs():
    e = gt.quasirandom.SobolEngine(3)
    assert e.draw(4).tolist() == [[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75]]
    assert e.draw(2).tolist() == [[0.375, 0.375, 0.625], [0.875, 0.875, 0.125]] and e.num_generated == 6
    assert repr(gt.quasirandom.SobolEngine(2, scramble=True, seed=0)) == "SobolEngine(dimension=2, scramble=True, seed=0)"
    assert gt.quasirandom.SobolEngine(5).draw_base2(3).shape == (8, 5)


def test_a_multivariate_normal_subclass_may_provide_its_unbroadcasted_scale_tril():
    D = gt.distributions

    class Lazy(D.MultivariateNormal):  # gpytorch's lazy MVN skips MultivariateNormal.__init__
        def __init__(self, loc, cov):
            self.loc, self._cov = loc, cov
            D.Distribution.__init__(self, loc.shape[:-1], loc.shape[-1:], validate_args=False)

        @property
        def _unbroadcasted_scale_tril(self):
            return gt.linalg.cholesky(self._cov)

    cov = gt.tensor([[2.0, 0.5], [0.5, 1.0]])
    lazy, plain = Lazy(gt.zeros(2), cov), D.MultivariateNormal(gt.zeros(2), cov)
    v = gt.tensor([0.3, -0.2])
    assert lazy.log_prob(v).item() == pytest.approx(plain.log_prob(v).item(), rel=1e-6)
    assert np.allclose(lazy.variance.numpy(), [2.0, 1.0]) and lazy.rsample((3,)).shape == (3, 2)
    assert plain._unbroadcasted_scale_tril.shape == (2, 2) and D.multivariate_normal.Distribution is D.Distribution
    assert "real" in D.constraints.__all__ and issubclass(D.ExponentialFamily, D.Distribution)


def test_names_found_with_new_code_families():
    """What deepxde/torchcde/sbi, torchattacks, pykeen and opt_einsum reached for."""
    import importlib
    for name in ("gt.utils.tensorboard.writer", "gt.nn.utils.clip_grad", "gt.nn.utils.weight_norm", "gt.cuda.random",
                 "gt.distributed.optim"):
        importlib.import_module(name)
    assert callable(gt.nn.utils.weight_norm)  # (still the function, as PyTorch's)
    from gt.nn.parameter import Buffer, UninitializedParameter, UninitializedTensorMixin  # (tensordict)
    assert Buffer is gt.nn.Buffer and isinstance(UninitializedParameter(), UninitializedTensorMixin)
    assert str(gt.qint8).endswith(".qint8") and gt.quint8 != gt.uint8
    from gt import TensorType  # noqa: F401 (open_clip)
    from gt.nn.utils import skip_init  # (OpenNMT-py)
    assert skip_init(nn.Linear, 2, 3, device="cpu").weight.shape == (3, 2)
    import gt.onnx.operators as ops  # (fairseq)
    assert ops.shape_as_tensor(gt.ones(2, 3)).tolist() == [2, 3]
    assert ops.reshape_from_tensor_shape(gt.ones(6), gt.tensor([2, 3])).shape == (2, 3)

    from gt.optim.optimizer import required  # noqa: F401 (flair)
    from gt.hub import tqdm, _get_torch_home  # noqa: F401 (torchio)
    assert issubclass(gt.jit.TracerWarning, Warning)  # (ultralytics)
    assert gt.arange(end=3).tolist() == [0, 1, 2]
    m = gt.tensor([0.5, -1.0, 2.0])
    m.gt_(0.0)
    assert m.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="linalg.eigh"):
        gt.symeig(gt.eye(2))  # (removed in PyTorch too: its hint)
    with pytest.warns(UserWarning, match="uint8 condition"):
        assert gt.where(gt.tensor([1, 0], dtype=gt.uint8), 1.0, 0.0).tolist() == [1.0, 0.0]

    class Twice(gt.autograd.Function):  # custom_fwd/custom_bwd (OpenNMT's sparse activations)
        @staticmethod
        @gt.amp.custom_fwd(device_type="cpu", cast_inputs=gt.float32)
        def forward(ctx, x):
            ctx.dtype = x.dtype
            return x * 2

        @staticmethod
        @gt.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2
    x = gt.ones(3, dtype=gt.bfloat16, requires_grad=True)
    with gt.autocast("cpu"):
        y = Twice.apply(x)
    assert y.dtype == gt.float32  # (cast to cast_inputs inside autocast)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    gt.cuda.random.manual_seed(0)
    # nextafter of 0-d tensors (torchdiffeq's dopri5)
    x = gt.tensor(1.0)
    assert gt.nextafter(x, gt.tensor(0.0)).shape == () and gt.nextafter(x, gt.tensor(0.0)).item() < 1.0
    # finfo of a complex dtype is its parts' (pykeen), norms of complex tensors are of the magnitudes
    assert gt.finfo(gt.complex64).eps == gt.finfo(gt.float32).eps and gt.finfo(gt.complex128).bits == 64
    z = gt.view_as_complex(gt.tensor([[[3.0, 4.0], [1.0, -1.0]]]))
    np.testing.assert_allclose(z.norm(p=2, dim=-1).numpy(), [math.sqrt(27)], rtol=1e-6)
    np.testing.assert_allclose(gt.linalg.vector_norm(z, ord=1, dim=-1).numpy(), [5 + math.sqrt(2)], rtol=1e-6)


def test_a_complex_tensor_is_a_torch_tensor_by_name_under_as_torch():
    # opt_einsum (tensorly, neuraloperator's TFNO) picks its backend by type(x).__module__
    import subprocess
    import sys
    code = ("import torch, pickle, io\n"
            "z = torch.randn(2, 3, dtype=torch.cfloat)\n"
            "print(type(z).__module__, type(z).__name__)\n"
            "b = io.BytesIO(); torch.save({'z': z}, b); b.seek(0)\n"
            "print(torch.load(b)['z'].dtype, pickle.loads(pickle.dumps(z)).dtype)\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["torch", "Tensor", "torch.complex64", "torch.complex64"], out.stderr[-2000:]


def test_masked_fill_takes_bool_masks_only():
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        gt.ones(2).masked_fill(gt.tensor([1, 0], dtype=gt.uint8), 0.0)
    assert gt.ones(2).masked_fill(gt.tensor([True, False]), 0.0).tolist() == [0.0, 1.0]


def test_names_of_checkpoint_func_rnn_and_nn_utils():
    from gt.utils.checkpoint import (CheckpointError, CheckpointPolicy, create_selective_checkpoint_contexts,  # noqa
                                     detach_variable, noop_context_fn, set_checkpoint_early_stop)
    x = gt.ones(2, requires_grad=True)
    (d,) = detach_variable((x * 2,))
    assert d.requires_grad and d.is_leaf
    from gt.nn.utils.rnn import invert_permutation, pack_sequence
    assert invert_permutation(gt.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    packed = pack_sequence([gt.ones(3, 2), gt.ones(2, 2)])
    assert packed.double().data.dtype == gt.float64 and not packed.is_pinned()
    from gt.nn.utils import clip_grad_norm, fuse_conv_bn_eval  # noqa: F401
    from gt.nn.utils.parametrize import type_before_parametrizations
    lin = nn.Linear(2, 2)
    gt.nn.utils.parametrizations.weight_norm(lin)
    assert type_before_parametrizations(lin) is nn.Linear and type(lin) is not nn.Linear
    seq = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    gt.func.replace_all_batch_norm_modules_(seq)
    assert seq[1].running_mean is None and seq(input=gt.randn(4, 2)).shape == (4, 3)
    assert gt.func.functionalize(abs) is abs

"""PyTorch spellings that scripts use in their first minutes (issue 24): devices, f-strings of
tensors, next(model.parameters()), the legacy gt.Tensor(...) constructor, __version__."""
import collections
import importlib
import os
import subprocess
import sys

import warnings

import numpy as np
import pytest

import gt
import gt.nn as nn
import gt.nn.functional as F
from conftest import ROOT, check


def test_device_names_parse_and_compare_as_torch_device():
    assert gt.device("cuda:1") == gt.device("cuda", 1) == "cuda:1"
    assert gt.device("cuda").index is None and gt.device("cpu").type == "cpu" and gt.device(0) == "cuda:0"
    assert repr(gt.device("cuda", 2)) == "device(type='cuda', index=2)" and str(gt.device("cpu")) == "cpu"
    assert gt.device("cpu") != "cuda" and gt.device("cpu") != "not a device"
    assert len({gt.device("cpu"), gt.device("cpu")}) == 1
    for bad in ("gpu", "cuda:x", "cuda:-1", ""):
        with pytest.raises(RuntimeError, match="device"):
            gt.device(bad)
    with pytest.raises(RuntimeError, match="must not include an index"):
        gt.device("cuda:0", 1)


def test_tensors_stay_on_the_sessions_workers_whatever_device_a_script_names():
    # The tests' workers are CPU workers: x.device says so, and the idiom below picks "cpu".
    device = "cuda" if gt.cuda.is_available() else "cpu"
    assert device == "cpu" and gt.cuda.device_count() == 0
    x = gt.tensor([1.0, 2.0], device=device)
    assert x.device == gt.device("cpu") and not x.is_cuda
    assert x.to("cuda") is x and x.cuda() is x and x.cpu() is x and x.to(gt.device("cuda", 3)) is x
    y = x.to("cuda:0", gt.float64)
    assert y.dtype == gt.float64 and y.device.type == "cpu"
    check(y, [1.0, 2.0])
    assert x.to(gt.zeros(1, dtype=gt.int64)).dtype == gt.int64  # to(other): other's dtype
    assert x.to(dtype=gt.float32) is x
    c = x.to(gt.float32, copy=True)
    assert c is not x
    check(c, [1.0, 2.0])
    for make in (lambda d: gt.zeros(2, device=d), lambda d: gt.ones(2, 2, device=d), lambda d: gt.randn(3, device=d),
                 lambda d: gt.arange(4, device=d), lambda d: gt.full((2,), 1.5, device=d),
                 lambda d: gt.zeros_like(x, device=d), lambda d: gt.eye(2, device=d), lambda d: gt.randperm(3, device=d)):
        assert make("cuda").device == "cpu"
        with pytest.raises(RuntimeError, match="device type at start of device string: gpu"):
            make("gpu")
    with pytest.raises(RuntimeError, match="device type"):
        x.to("gpu")


def test_modules_take_and_ignore_devices():
    model = nn.Sequential(nn.Linear(3, 4, device="cuda"), nn.LayerNorm(4, device="cuda"),
                          nn.Embedding(5, 4, device="cpu"))
    assert model.to("cuda") is model and model.cuda() is model and model.cpu() is model
    assert model.to(gt.device("cuda"), gt.float64) is model
    assert all(p.dtype == gt.float64 for p in model.parameters())
    with pytest.raises(RuntimeError, match="device type"):
        nn.Linear(2, 2, device="tpu")
    with pytest.raises(RuntimeError, match="device type"):
        model.to("tpu")


def test_is_available_before_the_session_opens_follows_GT_DEVICE():
    # Answered from GT_DEVICE without starting the daemons (no CUDA worker could start here).
    code = "import gt; from gt import _runtime; print(gt.cuda.is_available(), _runtime._client is None)"
    for device, want in (("cuda", "True True"), ("cpu", "False True")):
        env = dict(os.environ, GT_DEVICE=device, PYTHONPATH=os.path.join(ROOT, "python"))
        env.pop("GT_SERVER", None)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0 and out.stdout.split() == want.split(), out.stderr[-2000:]


def test_format_of_tensors():
    loss = gt.tensor(0.123456)
    # As PyTorch: a 0-d tensor formats as its number (an empty spec too), others only as str().
    assert f"{loss:.4f}" == "0.1235" and f"{gt.tensor(7):3d}" == "  7" and f"{loss}" == format(loss.item())
    assert f"{gt.ones(2)}" == str(gt.ones(2))
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{gt.ones(2):.2f}"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{gt.tensor([7]):d}"


def test_parameters_is_a_list_and_an_iterator():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    assert next(model.parameters()).shape == (3, 2)  # as PyTorch's generator
    params = model.parameters()
    assert [next(params).shape for _ in range(4)] == [(3, 2), (3,), (1, 3), (1,)]
    with pytest.raises(StopIteration):
        next(params)
    assert len(model[0].parameters() + model[1].parameters()) == 4  # the original GT's spelling


def test_legacy_tensor_constructor_and_version():
    t = gt.Tensor([1, 2])
    assert t.dtype == gt.float32 and t.numpy().tolist() == [1.0, 2.0]
    assert gt.Tensor(np.zeros((2, 2), np.float64)).dtype == gt.float32
    z = gt.Tensor(2, 3)
    assert z.shape == (2, 3) and z.dtype == gt.float32 and not z.numpy().any()
    assert isinstance(gt.__version__, str) and gt.__version__.count(".") >= 1


def test_in_place_ops_on_data_change_the_tensor_itself():
    # pytorch/examples' regression trains with `param.data.add_(-0.1 * param.grad)`; weight
    # initializations write `p.data.normal_()` / `p.data.copy_(w)`. They used to change a copy.
    p = nn.Parameter(gt.ones(3))
    (p * gt.tensor([1.0, 2.0, 3.0])).sum().backward()
    p.data.add_(-0.1 * p.grad)
    check(p, [0.9, 0.8, 0.7])
    assert p.requires_grad and p.is_leaf and p.grad is not None
    p.data.copy_(gt.tensor([1.0, 2.0, 3.0]))
    p.data.mul_(2)
    check(p, [2.0, 4.0, 6.0])
    p.data.zero_()
    check(p, [0.0, 0.0, 0.0])
    p.data = gt.arange(4, dtype=gt.float32)  # a new shape, as PyTorch allows
    assert p.shape == (4,) and p.requires_grad
    check(p, [0.0, 1.0, 2.0, 3.0])
    d = p.data
    assert not d.requires_grad and d.grad_fn is None
    with pytest.raises(TypeError, match="must be set to a Tensor"):
        p.data = [1.0]


def test_a_burst_of_releases_is_cut_into_batches_the_dispatcher_takes():
    # A backward pass over a long unrolled RNN releases its graph's saved tensors at once; the
    # frees were one batch (10856 instructions after a 600-step LSTM), which the dispatcher
    # refused (it takes 8192), losing every gradient of that backward pass.
    many = [gt.full((1,), float(i)) for i in range(9000)]
    assert many[-1].item() == 8999.0
    del many
    check(gt.ones(2) * 3, [3.0, 3.0])
    cell = nn.LSTMCell(1, 4)
    h = c = gt.zeros(2, 4)
    x = gt.tensor(rng_data(2, 700))
    for t in range(700):
        h, c = cell(x[:, t:t + 1], (h, c))
    h.sum().backward()
    assert np.isfinite(cell.weight_hh.grad.numpy()).all()


def rng_data(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def test_as_torch_makes_every_torch_module_gts_own(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "import torch, torch.nn as nn, torch.optim as optim, torch.autograd, torch.nn.functional as F\n"
        "import gt\n"
        "assert torch is gt and optim is gt.optim and torch.autograd is gt.autograd and F is gt.nn.functional\n"
        "p = nn.Parameter(torch.ones(2))\n"
        "opt = optim.LBFGS([p], lr=0.5)\n"
        "def closure():\n"
        "    opt.zero_grad(); loss = ((p - 3) ** 2).sum(); loss.backward(); return loss\n"
        "opt.step(closure)\n"  # LBFGS updates under torch.no_grad, which the tensors see
        "print('done', sys.argv[1:], [round(v, 4) for v in p.tolist()])\n"
        "print(p.shape, p.dtype, torch.zeros(2, device='meta', dtype=torch.float64))\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(script), "--flag"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "done ['--flag'] [3.0, 3.0]" in out.stdout
    # printed as PyTorch prints them once torch means GT
    assert "torch.Size([2]) torch.float32 tensor(..., device='meta', size=(2,), dtype=torch.float64)" in out.stdout
    assert repr(gt.float32) == "gt.float32" and repr(gt.ones(2).shape) == "gt.Size([2])"  # (not in this process)
    out = subprocess.run([sys.executable, "-c", "import gt.as_torch, torch.vision"], capture_output=True, text=True,
                         timeout=60)
    assert "No module named 'torch.vision'" in out.stderr
    out = subprocess.run([sys.executable, "-c", "import gt.as_torch, gt, torchvision\n"
                          "from torchvision import datasets, transforms\n"
                          "assert torchvision is gt.vision and transforms is gt.vision.transforms"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]


def test_as_torch_children_spawned_by_torch_multiprocessing_see_torch_as_gt(tmp_path):
    # pytorch/examples' mnist_hogwild: mp.set_start_method('spawn'); each child runs the main
    # script again as __mp_main__, where `import torch` must be GT too.
    script = tmp_path / "hogwild.py"
    script.write_text(
        "import sys\n"
        "import torch\n"
        "import torch.multiprocessing as mp\n"
        "def work(rank, path):\n"
        "    import gt\n"
        "    assert torch is gt\n"
        "    open(f'{path}.{rank}', 'w').write(str((torch.ones(3) * (rank + 1)).sum().item()))\n"
        "if __name__ == '__main__':\n"
        "    mp.set_start_method('spawn', force=True)\n"
        "    ps = [mp.Process(target=work, args=(r, sys.argv[1])) for r in range(2)]\n"
        "    for p in ps: p.start()\n"
        "    for p in ps: p.join()\n"
        "    print('exit codes', [p.exitcode for p in ps])\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(script), str(tmp_path / "out")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "exit codes [0, 0]" in out.stdout, out.stderr[-2000:]
    assert [float((tmp_path / f"out.{r}").read_text()) for r in range(2)] == [3.0, 6.0]


def test_what_pytorch_examples_word_language_model_names():
    # torch.nn.modules.<file>.<Class>: GT's classes under PyTorch's file names.
    assert nn.modules.linear.Linear is nn.Linear and nn.modules.rnn.LSTM is nn.LSTM
    assert nn.modules.activation.MultiheadAttention is nn.MultiheadAttention
    assert issubclass(nn.modules.linear.NonDynamicallyQuantizableLinear, nn.Linear)
    assert isinstance(nn.MultiheadAttention(4, 2).out_proj, nn.modules.linear.NonDynamicallyQuantizableLinear)
    assert nn.modules.transformer.TransformerEncoderLayer is nn.TransformerEncoderLayer
    # The legacy typed constructors: sizes give zeros, data gives a tensor of that dtype.
    x = gt.LongTensor(6).zero_().view(-1, 2)
    assert x.dtype == gt.int64 and x.shape == (3, 2) and x.tolist() == [[0, 0]] * 3
    assert gt.FloatTensor([1, 2]).dtype == gt.float32 and gt.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
    assert gt.BoolTensor([1, 0]).tolist() == [True, False] and gt.IntTensor(2, 2).dtype == gt.int32
    with pytest.raises(TypeError, match="LongTensor"):
        gt.LongTensor([1], 2)
    # torch.accelerator: the session's workers (CPU here unless GT_DEVICE asks for CUDA).
    assert gt.accelerator.is_available() == gt.cuda.is_available()
    assert (gt.accelerator.current_accelerator() is None) == (not gt.cuda.is_available())
    # torch.onnx imports; exporting says GT cannot.
    assert not gt.onnx.is_in_onnx_export()
    with pytest.raises(NotImplementedError, match="cannot export ONNX"):
        gt.onnx.export(nn.Linear(2, 2), (gt.ones(1, 2),), "m.onnx")
    lstm = nn.LSTM(3, 4)
    lstm.flatten_parameters()  # cuDNN's packed weights: nothing to do
    assert len(list(lstm.parameters())) == 4


def test_torch_cuda_amp_version_and_random_modules():
    # `from torch.cuda.amp import autocast, GradScaler` (older scripts), torch.version.cuda,
    # torch.random.fork_rng: importable modules, as in PyTorch.
    import importlib
    amp = importlib.import_module("gt.cuda.amp")
    assert gt.cuda.amp is amp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with amp.autocast():
            y = gt.ones(2, 2) @ gt.ones(2, 2)
    # autocast("cuda") computes in float16 on GPU workers, and is off without them (as PyTorch's)
    assert y.dtype == (gt.float16 if gt.cuda.is_available() else gt.float32)
    if gt.cuda.is_available():
        assert amp.GradScaler().is_enabled()
    else:
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not amp.GradScaler().is_enabled()
    assert gt.version.cuda is None and gt.version.__version__ == gt.__version__
    gt.manual_seed(3)
    with gt.random.fork_rng():
        inside = gt.randn(4).numpy()
    after = gt.randn(4).numpy()
    np.testing.assert_array_equal(inside, after)  # the draws inside did not move the stream
    assert gt.random.initial_seed() == gt.initial_seed()


def test_out_keyword_writes_into_the_given_tensor():
    # PyTorch's tensor tutorials: torch.matmul(a, b, out=c) is c (the same object), and so
    # for creation functions, tuples of results, and a resized out
    a, b = gt.rand(2, 3), gt.rand(3, 2)
    c = gt.zeros(2, 2)
    assert gt.matmul(a, b, out=c) is c
    check(c, a.numpy() @ b.numpy())
    assert gt.rand(2, 2, out=c) is c and float(c.max()) < 1
    v, i = gt.zeros(2), gt.zeros(2, dtype=gt.int64)
    gt.max(a, 1, out=(v, i))
    check(v, a.numpy().max(1))
    check(i, a.numpy().argmax(1))
    n = gt.zeros(1, dtype=gt.float64)  # a float32 result cast to out's float64; out resized
    with pytest.warns(UserWarning, match="resized"):
        gt.add(gt.ones(3), 1, out=n)
    assert n.shape == (3,) and n.dtype == gt.float64
    check(n, np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="can't be cast"):
        gt.add(gt.ones(2), 0.5, out=gt.zeros(2, dtype=gt.int64))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        gt.mul(gt.ones(2, requires_grad=True), 2, out=gt.zeros(2))
    with pytest.raises(TypeError, match="must be Tensor"):
        gt.exp(gt.ones(2), out=np.zeros(2))


def test_size_in_place_functions_and_grad_fn_names():
    s = gt.ones(3, 4).size()
    assert isinstance(s, gt.Size) and isinstance(s, tuple) and s == (3, 4) == gt.ones(3, 4).shape
    assert repr(s) == "gt.Size([3, 4])" and s.numel() == 12 and isinstance(s[1:], gt.Size) and s[1] == 4
    # x.shape is the same Size (isinstance checks, x.shape.numel(), printing), for the results of
    # ops, of backward passes and of tensors made in Python; indexing gives ints, slices Sizes.
    w = gt.ones(2, 3, requires_grad=True)
    (w * 2).sum().backward()
    for shape in (gt.ones(3, 4).shape, (gt.ones(3, 4) + 1).shape, w.grad.shape, gt.tensor([[1.0]]).shape,
                  gt.ones(2, 3, 4).T.shape):
        assert type(shape) is gt.Size, shape
    shape = gt.ones(2, 3, 4).shape
    assert str(shape) == "gt.Size([2, 3, 4])" and shape.numel() == 24 and type(shape[0]) is int
    assert shape[1:] == (3, 4) and type(shape[::2]) is gt.Size and type(shape + (5,)) is gt.Size
    import pickle
    assert pickle.loads(pickle.dumps(shape)) == shape and hash(shape) == hash((2, 3, 4))
    x = gt.tensor([0.0, 0.5])
    assert gt.sin_(x) is x and x.cos_() is x  # torch.sin_ / Tensor.cos_ (the introyt tensor tutorial)
    check(x, np.cos(np.sin([0.0, 0.5])))
    y = gt.tensor([4.0]).atan2_(gt.tensor([3.0]))
    check(y, np.arctan2([4.0], [3.0]))
    assert gt.eye(2, requires_grad=True).requires_grad and gt.linspace(0, 1, 3, requires_grad=True).requires_grad
    assert gt.rand_like(gt.ones(2), requires_grad=True).requires_grad
    check(gt.logspace(0, 2, 3), [1.0, 10.0, 100.0])
    w = gt.ones(3, requires_grad=True)
    z = (w * 2 + 1).sum()
    assert repr(z.grad_fn).startswith("<SumBackward0 object at") and z.grad_fn.name() == "SumBackward0"
    (add, _), = z.grad_fn.next_functions
    assert add.name() == "AddBackward0"
    (mul, _), (none, _) = add.next_functions
    assert mul.name() == "MulBackward0" and none is None
    (acc, _), _ = mul.next_functions
    assert isinstance(acc, gt.autograd.AccumulateGrad) and acc.variable is w

    class Double(gt.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    assert Double.apply(w).grad_fn.name() == "DoubleBackward"


def test_tensors_print_as_pytorch_prints_them():
    # torch/_tensor_str.py's rules: 4 decimals, whole numbers as "1.", scientific notation
    # for wide ranges, one width for every element
    assert repr(gt.tensor([0.0, 0.7854])) == "tensor([0.0000, 0.7854])"
    assert repr(gt.tensor([[1.0, 561.0], [1.0, 1.0]])) == "tensor([[  1., 561.],\n        [  1.,   1.]])"
    assert repr(gt.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(gt.tensor(4.0)) == "tensor(4.)"
    assert repr(gt.tensor([-1.5, float("nan"), float("inf")])) == "tensor([-1.5000,     nan,     inf])"
    assert repr(gt.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(gt.tensor([0.5], dtype=gt.float64)) == "tensor([0.5000], dtype=gt.float64)"
    w = gt.ones(2, requires_grad=True)
    assert repr(w) == "tensor([1., 1.], requires_grad=True)"
    assert repr(w + 2) == "tensor([3., 3.], grad_fn=<AddBackward0>)"
    # Line breaks where PyTorch's come (80 columns, its closing brackets not counted), a suffix
    # past column 80 on a line of its own, bools padded only when one is False.
    row = [0.5438, -0.4057, 1.1341, -0.1473, 0.6272, 1.0935, 0.0939, 1.2381]
    assert repr(gt.tensor([row, row])) == ("tensor([[ 0.5438, -0.4057,  1.1341, -0.1473,  0.6272,  1.0935,  0.0939,  "
                                           "1.2381],\n        [ 0.5438, -0.4057,  1.1341, -0.1473,  0.6272,  1.0935,  "
                                           "0.0939,  1.2381]])")
    assert repr(gt.tensor(row, requires_grad=True)).endswith("1.2381],\n       requires_grad=True)")
    assert repr(gt.ones(1, 2, dtype=gt.bool)) == "tensor([[True, True]])"
    assert repr(gt.tensor([True, False])) == "tensor([ True, False])"


def test_scatter_with_a_0d_index_into_a_vector():
    # the transforms tutorial's one-hot target: zeros(10).scatter_(0, tensor(y), value=1)
    t = gt.zeros(10).scatter_(0, gt.tensor(3), value=1)
    check(t, np.eye(10, dtype=np.float32)[3])
    check(gt.zeros(4).scatter_add(0, gt.tensor(1), gt.tensor(2.0)), np.array([0, 2, 0, 0], dtype=np.float32))


def test_what_pytorchs_intermediate_tutorials_use():
    import warnings
    F = nn.functional
    # x[mask] = values in the order of the True positions (reinforcement_q_learning's
    # next_state_values[non_final_mask] = ...), and a leading 1 dropped from a value (seq2seq)
    a = gt.zeros(4)
    a[gt.tensor([True, False, True, True])] = gt.tensor([1.0, 2.0, 3.0])
    check(a, [1, 0, 2, 3])
    b = gt.zeros(3, 2)
    b[gt.tensor([False, True, True])] = gt.tensor([[1.0, 2.0], [3.0, 4.0]])
    check(b, [[0, 0], [1, 2], [3, 4]])
    e = gt.zeros(2, 4)
    e[0] = gt.ones(1, 4)
    check(e, [[1, 1, 1, 1], [0, 0, 0, 0]])
    # in-place ops that change the shape (char_rnn_generation: tensor.unsqueeze_(-1))
    t = gt.tensor([1, 2, 3])
    assert t.unsqueeze_(-1) is t and t.shape == (3, 1)
    assert t.t_().shape == (1, 3) and t.squeeze_().shape == (3,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = gt.zeros(3)
        p.add_(-0.5, gt.ones(3))  # PyTorch's deprecated add_(alpha, other)
        check(p, [-0.5] * 3)
        x, y = gt.randn(4, 3).log_softmax(1), gt.tensor([0, 1, 2, 1])
        check(F.nll_loss(x, y, size_average=False), F.nll_loss(x, y, reduction="sum").numpy())
        assert nn.MSELoss(reduce=False)(x, x).shape == (4, 3)
    from gt.backends.cuda import SDPBackend, sdp_kernel  # noqa: F401
    with gt.backends.cudnn.flags(enabled=False, allow_tf32=False):
        assert gt.backends.cudnn.allow_tf32 is False
    assert gt.backends.cudnn.allow_tf32 is True
    check(gt.dist(gt.ones(3), gt.zeros(3)), np.sqrt(3))
    assert gt.autograd.Variable(gt.ones(2), requires_grad=True).requires_grad
    assert gt.ones(3)[1:]._is_view() and not gt.ones(3)._is_view()
    assert nn.Identity(128, bias=True)(gt.ones(2)).shape == (2,)
    gt.set_default_device("cpu")
    assert gt.get_default_device() == "cpu"
    gt.set_default_device(None)
    from gt import _dynamo
    _dynamo.config.suppress_errors = True
    _dynamo.reset()
    assert repr(gt.randn(2, 3, requires_grad=True).log_softmax(1).grad_fn).startswith("<LogSoftmaxBackward0")


def test_a_fully_masked_query_attends_to_nothing():
    # PyTorch's attention gives 0 (and a 0 gradient) for a query every key of which is masked;
    # softmax alone gives NaN (transformer_building_blocks' padded sequences)
    F = nn.functional
    q = gt.randn(1, 3, 4, requires_grad=True)
    mask = gt.full((3, 3), float("-inf"))
    mask[:2, :2] = 0
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    check(out[0, 2], np.zeros(4))
    out.sum().backward()
    assert not np.isnan(q.grad.numpy()).any()
    allowed = gt.tensor([[True, False, False], [True, True, False], [False, False, False]])
    check(F.scaled_dot_product_attention(q, q, q, attn_mask=allowed)[0, 2], np.zeros(4))
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    o, _ = mha(q, q, q, key_padding_mask=gt.tensor([[True, True, True]]), need_weights=False)
    assert not np.isnan(o.numpy()).any()


def test_gradcheck_and_gradgradcheck():
    x = gt.randn(3, dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradcheck(gt.sin, (x,)) and gt.autograd.gradgradcheck(lambda a: (a ** 3).sum(), (x,))

    class Wrong(gt.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3
    with pytest.raises(gt.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gt.autograd.gradcheck(Wrong.apply, (x,))
    assert gt.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_what_pytorchs_recipes_use():
    # `with torch.device(...)` sets the default device for the block (it places nothing).
    before = gt.get_default_device()
    with gt.device("meta") as d:
        assert d == "meta" and gt.get_default_device() == "meta"
        with gt.device("cpu"):
            assert gt.get_default_device() == "cpu"
        assert gt.get_default_device() == "meta"
    assert gt.get_default_device() == before
    # load_state_dict(assign=True) takes the state dict's tensors, dtypes included.
    m = gt.nn.Linear(3, 2)
    old_weight = m.weight
    sd = {"weight": gt.ones(2, 3, dtype=gt.float64), "bias": gt.zeros(2, dtype=gt.float64)}
    result = m.load_state_dict(sd, assign=True)
    assert repr(result) == "<All keys matched successfully>" and result == ([], [])
    assert m.weight is not old_weight and isinstance(m.weight, gt.nn.Parameter) and m.weight.requires_grad
    assert m.weight.dtype == gt.float64 and m.weight.tolist() == [[1.0] * 3] * 2
    assert [p.dtype for p in m.parameters()] == [gt.float64, gt.float64]
    m2 = gt.nn.Linear(3, 2)
    m2.load_state_dict(sd)  # copies, cast to the module's dtype
    assert m2.weight.dtype == gt.float32 and m2.weight.tolist() == [[1.0] * 3] * 2
    with pytest.raises(RuntimeError, match='(?s)for Linear:\n\tMissing key\\(s\\) in state_dict: "bias". \n\t'
                                           'Unexpected key\\(s\\) in state_dict: "extra". '):
        m2.load_state_dict({"weight": gt.ones(2, 3), "extra": gt.ones(1)})
    assert m2.load_state_dict({"weight": gt.ones(2, 3)}, strict=False).missing_keys == ["bias"]


def test_compiler_cpu_and_compile_switches_as_recipes_use_them():
    @gt.compile
    def f(x):
        return x + 1 if gt.compiler.is_compiling() else x - 1

    assert f(gt.zeros(2)).tolist() == [1.0, 1.0] and not gt.compiler.is_compiling()
    with gt.compiler.set_stance("force_eager"):
        assert f(gt.zeros(2)).tolist() == [-1.0, -1.0]
    assert f(gt.zeros(2)).tolist() == [1.0, 1.0]
    eager = gt.compiler.set_stance("force_eager")(f)
    assert eager(gt.zeros(2)).tolist() == [-1.0, -1.0] and f(gt.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="Unknown stance"):
        gt.compiler.set_stance("fast")
    assert gt._dynamo.is_compiling() is False
    gt.compiler.reset()
    gt._logging.set_logs(dynamo=10)
    gt._inductor.config.coordinate_descent_tuning = True
    lin = nn.Linear(2, 2)
    assert gt.jit.freeze(gt.jit.trace(lin, gt.ones(1, 2))) is lin
    with gt.no_grad(), gt.cpu.amp.autocast():
        assert lin(gt.ones(1, 2)).dtype == gt.bfloat16
    assert gt.cpu.is_available() and gt.cpu.device_count() == 1


def test_float_functions_of_integer_tensors_compute_in_float32():
    # torch.exp(torch.arange(4)) is float32 (the tensors_deeper tutorial's adaptation hit this).
    x = np.arange(4)
    for name in ("cos", "sin", "exp", "log", "sqrt", "sigmoid", "tanh", "rsqrt", "log1p", "erf", "atan"):
        for t in (gt.arange(4), gt.tensor(x, dtype=gt.uint8), gt.tensor([True, False, True, True])):
            r = getattr(gt, name)(t)
            assert r.dtype == gt.float32, (name, t.dtype)
            want = getattr(gt, name)(t.float())
            np.testing.assert_array_equal(r.numpy(), want.numpy(), err_msg=name)
    assert gt.arange(4).exp().dtype == gt.float32
    with pytest.raises(gt.DTypeError, match="mean"):  # as PyTorch: mean of ints has no dtype
        gt.arange(4).mean()


def test_random_functions_take_a_generator_and_randint_requires_grad():
    def draw(seed):
        g = gt.Generator().manual_seed(seed)
        return gt.rand(3, generator=g).tolist(), gt.randn(2, generator=g).tolist(), gt.randint(0, 100, (4,), generator=g)
    a, b = draw(3), draw(3)
    assert a[:2] == b[:2] and a[2].tolist() == b[2].tolist() and draw(4)[0] != a[0]
    x = gt.randint(1, 10, (2, 3), dtype=gt.float32, requires_grad=True)
    assert x.dtype == gt.float32 and x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        gt.randint(1, 10, (2,), requires_grad=True)


def test_what_pytorchs_beginner_tutorials_call():
    # linalg spellings (tensors_deeper), in-place functional forms (custom_function_conv_bn),
    # use_deterministic_algorithms (dcgan), cuda memory queries.
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(gt.linalg.cross(gt.tensor(a), gt.tensor(b)).numpy(), np.cross(a, b), rtol=1e-12)
    with pytest.raises(RuntimeError, match="must have length 3"):
        gt.linalg.cross(gt.ones(2, 4), gt.ones(2, 4))
    np.testing.assert_allclose(gt.linalg.vecdot(gt.tensor(a), gt.tensor(b)).numpy(), (a * b).sum(-1), rtol=1e-12)
    assert gt.linalg.matmul(gt.ones(2, 3), gt.ones(3, 4)).tolist() == [[3.0] * 4] * 2
    chain = [rng.standard_normal(s) for s in [(10,), (10, 100), (100, 5), (5, 50), (50,)]]
    np.testing.assert_allclose(gt.linalg.multi_dot([gt.tensor(m) for m in chain]).numpy(),
                               np.linalg.multi_dot(chain), rtol=1e-10)
    chain = [rng.standard_normal(s) for s in [(3, 10), (10, 100), (100, 5)]]
    np.testing.assert_allclose(gt.linalg.multi_dot([gt.tensor(m) for m in chain]).numpy(),
                               np.linalg.multi_dot(chain), rtol=1e-10)
    A, B = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    r = gt.linalg.lstsq(gt.tensor(A), gt.tensor(B))
    np.testing.assert_allclose(r.solution.numpy(), np.linalg.lstsq(A, B, rcond=None)[0], rtol=1e-10)
    assert r.rank.item() == 3 and r.residuals.numel() == 0
    x = gt.tensor([-1.0, 2.0])
    assert nn.functional.relu_(x) is x and x.tolist() == [0.0, 2.0]
    x = gt.tensor([-1.0, 2.0])
    nn.functional.leaky_relu_(x, 0.5)
    assert x.tolist() == [-0.5, 2.0]
    gt.use_deterministic_algorithms(True, warn_only=True)
    assert gt.are_deterministic_algorithms_enabled() and gt.is_deterministic_algorithms_warn_only_enabled()
    gt.use_deterministic_algorithms(False)
    assert not gt.are_deterministic_algorithms_enabled()
    if not gt.cuda.is_available():
        assert gt.cuda.memory_allocated() == gt.cuda.max_memory_allocated() == 0


def test_optimizers_print_and_default_as_pytorchs():
    p = gt.nn.Parameter(gt.zeros(2))
    opt = gt.optim.SGD([p], lr=0.01)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                         "    fused: None\n    lr: 0.01\n    maximize: False\n    momentum: 0\n    nesterov: False\n"
                         "    weight_decay: 0\n)")
    assert gt.optim.SGD([p]).param_groups[0]["lr"] == 1e-3  # PyTorch 2's default
    two = gt.optim.Adam([{"params": [p]}, {"params": [gt.nn.Parameter(gt.zeros(1))], "lr": 0.1}])
    assert "Parameter Group 1" in repr(two) and "    lr: 0.1\n" in repr(two) and "weight_decay: 0\n" in repr(two)
    assert "    weight_decay: 0\n\nParameter Group 1\n" in repr(two)  # a blank line between groups


def test_histogram_default_generator_and_empty_or_default_dtype_printing():
    # torch.histogram (makemore's part 3 plots activations with it), as np.histogram
    h, edges = gt.histogram(gt.tensor([1.0, 1.0, 1.0]), bins=4)
    assert h.tolist() == [0.0, 0.0, 3.0, 0.0] and edges.tolist() == [0.5, 0.75, 1.0, 1.25, 1.5]
    r = gt.tensor([0.0, 1.0, 2.0, 3.0]).histogram(3, range=(0.0, 3.0), weight=gt.tensor([1.0, 2.0, 3.0, 4.0]),
                                                  density=True)
    assert np.allclose(r.hist.numpy(), [0.1, 0.2, 0.7]) and r.bin_edges.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert gt.histogram(gt.tensor([0.0, 1.0, 2.0, 5.0]), bins=gt.tensor([0.0, 1.0, 3.0, 5.0]))[0].tolist() == [1, 2, 1]
    with pytest.raises(RuntimeError, match="histogram"):
        gt.histogram(gt.tensor([1, 2]))
    # manual_seed returns the default generator, which draws from the same stream
    g = gt.manual_seed(3)
    assert g is gt.default_generator and g is gt.random.default_generator and g.initial_seed() == 3
    a = gt.randn(3)
    gt.manual_seed(3)
    assert gt.equal(a, gt.randn(3, generator=gt.default_generator))
    # printing: an empty tensor as PyTorch's, and no dtype for the default float dtype
    assert repr(gt.zeros(0)) == "tensor([])" and repr(gt.zeros(2, 0)) == "tensor([], size=(2, 0))"
    assert repr(gt.zeros(0, dtype=gt.int64)) == "tensor([], dtype=gt.int64)"
    # nan and inf take the finite values' width, never set it
    inf, nan = float("inf"), float("nan")
    assert repr(gt.tensor([-inf, 5.0])) == "tensor([-inf, 5.])"
    assert repr(gt.tensor([inf, 5.0, 1.5])) == "tensor([   inf, 5.0000, 1.5000])"
    assert repr(gt.tensor([nan, inf])) == "tensor([nan, inf])" and repr(gt.tensor([0.0, nan])) == "tensor([0., nan])"
    before = gt.get_default_dtype()
    gt.set_default_dtype(gt.float64)
    try:
        assert repr(gt.ones(2)) == "tensor([1., 1.])"
        assert repr(gt.ones(2, dtype=gt.float32)) == "tensor([1., 1.], dtype=gt.float32)"
    finally:
        gt.set_default_dtype(before)


def test_constants_none_comparisons_and_as_torch_script_folder(tmp_path):
    import math
    assert gt.inf == math.inf and math.isnan(gt.nan) and gt.pi == math.pi and gt.e == math.e and gt.newaxis is None
    x = gt.ones(2)
    assert (x == None) is False and (x != None) is True  # noqa: E711 (generate(eos_id=None) compares so)
    assert x[gt.newaxis].shape == (1, 2)
    # `python -m gt.as_torch dir/script.py` imports modules beside the script, as `python dir/script.py`
    (tmp_path / "helpers.py").write_text("VALUE = 7\n")
    (tmp_path / "main.py").write_text("import torch, helpers\nfrom importlib.metadata import version\n"
                                      "print('value', helpers.VALUE, -torch.inf, version('torch') == torch.__version__)\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(tmp_path / "main.py")], capture_output=True,
                         text=True, timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "value 7 -inf True" in out.stdout
    # a relative script path: __file__ is absolute, as python's (paths built from it work anywhere)
    (tmp_path / "where.py").write_text("print(__file__)\n")
    rel = subprocess.run([sys.executable, "-m", "gt.as_torch", "where.py"], capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path))
    assert rel.returncode == 0 and rel.stdout.strip() == str(tmp_path / "where.py"), rel.stderr[-2000:]
    missing = subprocess.run([sys.executable, "-m", "gt.as_torch", str(tmp_path / "nope.py")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "can't open file" in missing.stderr and "Traceback" not in missing.stderr
    # data_ptr names a tensor's values: shared by a tied weight and detach()
    a, b = nn.Linear(2, 3), nn.Linear(2, 3)
    b.weight = a.weight
    assert a.weight.data_ptr() == b.weight.data_ptr() == a.weight.detach().data_ptr() != a.bias.data_ptr() != 0


def test_return_types_print_and_inference_mode_enabled():
    x = gt.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    assert repr(x.max(1)) == "gt.return_types.max(\nvalues=tensor([3., 5.]),\nindices=tensor([0, 1]))"
    for r, name in ((x.min(0), "min"), (x.sort(), "sort"), (x.topk(2), "topk"), (x.kthvalue(2), "kthvalue"),
                    (x.median(1), "median")):
        assert repr(r).startswith(f"gt.return_types.{name}(\nvalues=") and len(r) == 2 and r.values is r[0]
    assert not gt.is_inference_mode_enabled()
    with gt.inference_mode():
        assert gt.is_inference_mode_enabled() and not gt.is_grad_enabled()
        with gt.inference_mode(False):
            assert not gt.is_inference_mode_enabled() and gt.is_grad_enabled()
    assert not gt.is_inference_mode_enabled() and gt.is_grad_enabled()
    assert gt.inference_mode()(lambda: gt.is_inference_mode_enabled())()
    # the decorators without parentheses, as PyTorch 2 takes them
    x = gt.ones(2, requires_grad=True)
    assert gt.no_grad(lambda: (x * 2).requires_grad)() is False
    assert gt.inference_mode(lambda: gt.is_inference_mode_enabled())() is True
    with gt.no_grad():
        assert gt.enable_grad(lambda: (x * 2).requires_grad)() is True


def test_safetensors_torch_under_as_torch(tmp_path):
    # safetensors' own torch module needs PyTorch's storages; under gt.as_torch it is GT's
    script = tmp_path / "st.py"
    script.write_text(
        "import torch\n"
        "from safetensors.torch import load_file, save_file, safe_open, save_model, load_model\n"
        "m = torch.nn.Linear(3, 2)\n"
        f"path = {str(tmp_path / 'w.safetensors')!r}\n"
        "save_file({'w': m.weight.detach().to(torch.bfloat16), 'b': m.bias.detach()}, path, metadata={'k': 'v'})\n"
        "d = load_file(path)\n"
        "with safe_open(path, framework='pt') as f:\n"
        "    keys, meta, b = sorted(f.keys()), f.metadata(), f.get_tensor('b')\n"
        "import safetensors\n"  # (the top-level reader transformers uses, and a slice read alone)
        "with safetensors.safe_open(path, framework='pt', device='cpu') as f:\n"
        "    assert f.get_slice('b').get_shape() == [2] and torch.equal(f.get_slice('b')[1:], m.bias[1:])\n"
        "m2 = torch.nn.Linear(3, 2)\n"
        "save_model(m, path)\n"
        "print('ok', sorted(d), d['w'].dtype, keys, meta, torch.equal(b, m.bias), load_model(m2, path),\n"
        "      torch.equal(m2.weight, m.weight))\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ok ['b', 'w'] torch.bfloat16 ['b', 'w'] {'k': 'v'} True ([], []) True" in out.stdout


def test_from_numpy_takes_only_an_ndarray():
    # torch.from_numpy raises for a NumPy scalar or a list (gt.tensor takes those); a 0-d array is fine.
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got numpy.float64\)"):
        gt.from_numpy(np.float64(1.5))
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        gt.from_numpy([1, 2])
    assert gt.from_numpy(np.array(2.5)).item() == 2.5


def test_grad_fn_names_are_pytorchs_for_composed_functions():
    # GT composes these from other ops; their grad_fn names are PyTorch 2.15's (printed losses
    # and model outputs show them: tensor(2.30, grad_fn=<NllLossBackward0>)).
    F = gt.nn.functional
    x = gt.randn(4, 5, requires_grad=True)
    x3 = gt.randn(2, 4, 5, requires_grad=True)
    w, b = gt.randn(3, 5, requires_grad=True), gt.randn(3, requires_grad=True)
    labels = gt.tensor([0, 1, 2, 3])
    expected = {
        "NllLossBackward0": [F.cross_entropy(x, labels), F.nll_loss(F.log_softmax(x, 1), labels),
                             F.cross_entropy(x, labels, reduction="none")],
        "NllLoss2DBackward0": [F.cross_entropy(x3, gt.zeros(2, 5, dtype=gt.int64))],
        "MseLossBackward0": [F.mse_loss(x, x.detach() * 2), gt.nn.MSELoss()(x, x.detach())],
        "AddmmBackward0": [F.linear(x, w, b), gt.addmm(b, x, w.t())],
        "MmBackward0": [F.linear(x, w), x @ w.t(), gt.mm(x, w.t())],
        "UnsafeViewBackward0": [F.linear(x3, w, b), x3 @ w.t()],
        "BmmBackward0": [gt.bmm(x3, x3.transpose(1, 2))],
        "SelectBackward0": [x[0], x[1:3, 0], x[..., 0]],
        "SliceBackward0": [x[0, 1:3], x[:, 1:3]],
        "UnsqueezeBackward0": [x[None], x.unsqueeze(0), x[0, None]],
        "IndexBackward0": [x[[0, 1]], x[x > 0]],
        "SqueezeBackward0": [x[None].squeeze()],
        "SqueezeBackward1": [x[None].squeeze(0)],
        "ViewBackward0": [x.view(20), x.reshape(20), x.flatten()],
        "PermuteBackward0": [x.T, x.permute(1, 0)],
        "TransposeBackward0": [x.transpose(0, 1), x3.mT],
        "TBackward0": [x.t()],
        "CatBackward0": [gt.cat([x, x])],
        "StackBackward0": [gt.stack([x, x])],
        "ExpandBackward0": [x[:1].expand(3, 5)],
        "SumBackward0": [x.sum()],
        "SumBackward1": [x.sum(1), x.sum(dim=0, keepdim=True)],
        "MeanBackward1": [x.mean(1)],
        "MaxBackward1": [x.max()],
        "MaxBackward0": [x.max(1).values, x.max(dim=1)[0]],
        "ClampBackward1": [x.clamp(0, 1), x.clamp(min=0)],
        "ClampMinBackward0": [x.clamp_min(0)],
        "PowBackward0": [x ** 2, x.square()],
        "PowBackward1": [x ** x],
        "RsubBackward1": [1 - x],
        "LinalgVectorNormBackward0": [x.norm(), x.norm(dim=1)],
        "NativeLayerNormBackward0": [F.layer_norm(x, (5,))],
        "EmbeddingBackward0": [F.embedding(labels, x)],
        "SiluBackward0": [F.silu(x), gt.nn.SiLU()(x)],
        "MulBackward0": [F.dropout(x, 0.5)],
        "SplitBackward0": [x.split(2, 1)[0], x.chunk(2)[1]],
        "UnbindBackward0": [x.unbind(0)[0]],
        "TopkBackward0": [x.topk(2).values],
        "ToCopyBackward0": [x.double()],
        "CloneBackward0": [x.clone()],
        "UpsampleNearest2DBackward0": [F.interpolate(x[None, None], scale_factor=2)],
        "ConstantPadNdBackward0": [F.pad(x, (1, 1))],
        "MaxPool2DWithIndicesBackward0": [F.max_pool2d(x[None, None], 2)],
    }
    for name, ys in expected.items():
        for y in ys:
            assert y.grad_fn.name() == name and type(y.grad_fn).__name__ in ("Node", name)
    # A function that returns its input leaves that input's node alone.
    y = x * 2
    assert F.dropout(y, 0.0) is y and y.grad_fn.name() == "MulBackward0"
    # The name survives the backward pass that releases the graph.
    loss = F.cross_entropy(x, labels)
    loss.backward()
    assert "grad_fn=<NllLossBackward0>" in repr(loss)


def test_promote_types_result_type_can_cast_and_einsum_promotion():
    assert gt.promote_types(gt.float32, gt.float64) == gt.float64
    assert gt.promote_types(gt.int64, gt.float16) == gt.float16 and gt.promote_types(gt.uint8, gt.int8) == gt.int16
    assert gt.promote_types(gt.bfloat16, gt.float16) == gt.float32 and gt.promote_types(gt.bool, gt.int32) == gt.int32
    assert gt.result_type(gt.ones(1), gt.ones(1, dtype=gt.float64)) == gt.float64
    assert gt.result_type(gt.ones(2, dtype=gt.int32), 2.5) == gt.float32  # a float number over an int tensor
    assert gt.result_type(gt.ones(2), gt.tensor(1.0, dtype=gt.float64)) == gt.float32  # the 0-d one does not decide
    assert gt.result_type(gt.ones(2, dtype=gt.int32), gt.tensor(1.0, dtype=gt.float64)) == gt.float64
    assert gt.result_type(3, 4) == gt.int64
    assert gt.can_cast(gt.float64, gt.float32) and not gt.can_cast(gt.float32, gt.int64)
    assert not gt.can_cast(gt.int64, gt.bool) and gt.can_cast(gt.bool, gt.uint8)
    # einsum without a summed letter is a product that promotes (mamba-minimal in float64 with a
    # float32 tensor); with one it is a matrix product, which refuses mixed dtypes (as PyTorch's)
    r = gt.einsum("bld,dn->bldn", gt.ones(1, 2, 3, dtype=gt.float64), gt.ones(3, 4))
    assert r.dtype == gt.float64 and r.shape == (1, 2, 3, 4)
    with pytest.raises(gt.DTypeError):
        gt.einsum("ij,jk->ik", gt.ones(2, 3, dtype=gt.float64), gt.ones(3, 4))


def test_split_size_keyword_and_clip_grad_norm_keywords():
    x = gt.arange(12.0).reshape(2, 6)
    assert [t.shape for t in x.split(split_size=[2, 4], dim=-1)] == [(2, 2), (2, 4)]
    assert [t.shape for t in x.split(split_size=3, dim=1)] == [(2, 3), (2, 3)]
    p = gt.nn.Parameter(gt.ones(3))
    p.grad = gt.tensor([1.0, float("inf"), 2.0])
    with pytest.raises(RuntimeError, match="total norm of order 2.0 .* is non-finite"):
        gt.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert p.grad.tolist()[0] == 1.0  # not scaled
    assert gt.nn.utils.clip_grad_norm_([p], 1.0, foreach=True).item() == float("inf")


def test_types_print_as_torchs_under_as_torch(tmp_path):
    (tmp_path / "types.py").write_text("import torch\nprint(type(torch.ones(1)), type(torch.nn.Parameter(torch.ones(1))))\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(tmp_path / "types.py")], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "<class 'torch.Tensor'> <class 'torch.nn.parameter.Parameter'>", out.stderr[-2000:]


def test_as_torch_version_configs_and_pytree(tmp_path):
    # torch.__version__ is the PyTorch API GT follows and compares as a version (einx refused
    # "0.1.0"); torch._dynamo/_inductor/_functorch.config import as modules (gpt-fast's
    # generate.py); torch.utils._pytree (x-transformers imports it).
    (tmp_path / "v.py").write_text(
        "import torch, torchvision, torch._dynamo.config, torch._inductor.config, torch._functorch.config\n"
        "from torch.utils._pytree import tree_flatten, tree_unflatten, tree_map\n"
        "from packaging import version\n"
        "v = torch.__version__\n"
        "assert v >= '2.2' and v >= (2, 0) and not v < '2.2' and version.parse(v) >= version.parse('2.2'), v\n"
        "assert v.endswith('+gt' + __import__('importlib.metadata').metadata.version('gt')) or '+gt' in v, v\n"
        "assert torchvision.__version__ >= '0.13' and torch.version.__version__ == v\n"
        "torch._dynamo.config.cache_size_limit = 64\n"
        "assert torch._dynamo.config.cache_size_limit == 64\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(tmp_path / "v.py")], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
    assert gt.__version__ == "0.1.0" or not isinstance(gt.__version__, gt.version.TorchVersion)  # (not here)
    from gt.utils._pytree import tree_flatten, tree_unflatten, tree_map, tree_leaves, LeafSpec
    import collections
    NT = collections.namedtuple("NT", "x y")
    tree = (1, None, [2, {"b": 3, "a": 4}], NT(5, (6,)))
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, None, 2, 3, 4, 5, 6]  # None is a leaf; dicts in insertion order
    assert tree_unflatten([str(x) for x in leaves], spec) == ("1", "None", ["2", {"b": "3", "a": "4"}], NT("5", ("6",)))
    assert tree_map(lambda a, b: a * b, {"p": [1, 2]}, {"p": [3, 4]}) == {"p": [3, 8]}
    assert spec.num_leaves == 7 and tree_flatten(3)[1] == LeafSpec() and tree_leaves([[1], [2, [3]]]) == [1, 2, 3]
    with pytest.raises(ValueError, match="holds 7 items"):
        tree_unflatten([1], spec)
    assert gt.version.TorchVersion("2.15.0+gt0.1.0") > "2.9" and gt.version.TorchVersion("2.15.0") < (2, 16)


def test_module_containers_keep_none_and_renumber():
    # x-transformers builds ModuleList([norm, None, None]): the Nones were dropped, so [1] was
    # the next module.
    ml = nn.ModuleList([nn.Identity(), None, nn.Linear(2, 2)])
    assert len(ml) == 3 and ml[1] is None and isinstance(ml[2], nn.Linear)
    a, b, c = ml
    assert b is None and len(list(ml.parameters())) == 2
    ml.append(None)
    ml.insert(0, nn.ReLU())
    assert [type(m).__name__ for m in ml] == ["ReLU", "Identity", "NoneType", "Linear", "NoneType"]
    del ml[1]
    assert list(ml._modules) == ["0", "1", "2", "3"] and ml.pop(0).__class__ is nn.ReLU and len(ml) == 3
    ml += [nn.Tanh()]
    assert len(ml) == 4 and len(ml + ml) == 8
    s = nn.Sequential(collections.OrderedDict(a=nn.ReLU(), b=nn.Tanh(), c=nn.Identity()))
    del s[0]  # renumbered, named ones too, as PyTorch's
    assert list(s._modules) == ["0", "1"] and isinstance(s[0], nn.Tanh)
    s.insert(1, nn.Linear(2, 2))
    s.extend([nn.ReLU()])
    assert [type(m).__name__ for m in s] == ["Tanh", "Linear", "Identity", "ReLU"]
    with pytest.raises(TypeError, match="is not a Module subclass"):
        nn.ModuleList([3])
    d = nn.ModuleDict({"x": None, "y": nn.ReLU()})
    assert d["x"] is None and list(d) == ["x", "y"]

    class Att(nn.Module):
        def __init__(self):
            super().__init__()
            self.wo = nn.Linear(2, 2)
            self.kv_cache = None
            self.register_buffer("scale", None)

    m = Att()
    m.kv_cache = nn.Identity()
    m.kv_cache = None  # the slot stays and prints, as PyTorch's
    assert "(kv_cache): None" in repr(m) and [n for n, _ in m.named_children()] == ["wo"]
    assert list(m.state_dict()) == ["wo.weight", "wo.bias"]
    result = Att().load_state_dict(m.state_dict())  # (strict: None entries are not expected)
    assert result.missing_keys == [] and result.unexpected_keys == []
    # parameters(), buffers(), modules(), children(), named_children() are iterators too
    bn = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert next(bn.buffers()).shape == (2,) and next(bn.modules()) is bn and isinstance(next(bn.children()), nn.Linear)
    assert next(bn.named_children())[0] == "0" and next(bn.parameters()).shape == (2, 2)
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, shared)
    assert len(list(twice.modules())) == 2 and len(list(twice.named_modules(remove_duplicate=False))) == 3
    assert list(twice.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]  # (under each name)
    result = nn.Sequential(shared, shared).load_state_dict(twice.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []


def test_state_dict_and_load_state_dict_hooks():
    # gpt-fast's Attention merges wq/wk/wv of a checkpoint into wqkv in a load pre-hook.
    calls = []

    class Att(nn.Module):
        def __init__(self):
            super().__init__()
            self.wqkv = nn.Linear(2, 6, bias=False)
            self._register_load_state_dict_pre_hook(self.load_hook)

        def load_hook(self, state_dict, prefix, *args):
            calls.append(prefix)
            if prefix + "wq.weight" in state_dict:
                parts = [state_dict.pop(prefix + f"w{k}.weight") for k in "qkv"]
                state_dict[prefix + "wqkv.weight"] = gt.cat(parts)

    model = nn.Sequential(Att())
    given = {f"0.w{k}.weight": gt.full((2, 2), float(i + 1)) for i, k in enumerate("qkv")}
    model.load_state_dict(given)
    assert calls == ["0."] and len(given) == 3  # (the hooks change a copy)
    np.testing.assert_array_equal(model[0].wqkv.weight.numpy()[:, 0], [1, 1, 2, 2, 3, 3])
    seen = []
    model.register_load_state_dict_post_hook(lambda m, keys: (seen.append(list(keys.missing_keys)),
                                                              keys.missing_keys.clear()))
    model.load_state_dict({})  # the post-hook forgives the missing key before strict checks
    assert seen == [["0.wqkv.weight"]]
    saved = []
    model[0].register_state_dict_pre_hook(lambda m, prefix, keep_vars: saved.append(prefix))
    model[0]._register_state_dict_hook(lambda m, sd, prefix, meta: sd.update({prefix + "extra": gt.ones(1)}))
    model._register_state_dict_hook(lambda m, sd, prefix, meta: {"top." + k: v for k, v in sd.items()})
    sd = model.state_dict()
    assert saved == ["0."] and list(sd) == ["top.0.wqkv.weight", "top.0.extra"]
    kept = model.state_dict(keep_vars=True)
    assert kept["top.0.wqkv.weight"] is model[0].wqkv.weight and not sd["top.0.wqkv.weight"].requires_grad
    assert list(nn.Linear(2, 2).state_dict(prefix="enc.")) == ["enc.weight", "enc.bias"]


def test_softmax_dtype_int_alias_and_asarray():
    x = gt.tensor([[1.0, 2.0, 3.0]], dtype=gt.float64)
    for y in (F.softmax(x, dim=-1, dtype=gt.float32), x.softmax(-1, dtype=gt.float32), gt.softmax(x, -1, gt.float32),
              F.log_softmax(x, -1, dtype=gt.float32).exp(), F.softmin(-x, -1, dtype=gt.float32)):
        assert y.dtype == gt.float32
        np.testing.assert_allclose(y.numpy(), [[0.09003057, 0.24472847, 0.66524096]], rtol=1e-6)
    cube = gt.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(cube)  # PyTorch's legacy choice for 3-d input: dim 0
    np.testing.assert_allclose(y.numpy().sum(0), np.ones((3, 4)), rtol=1e-12)
    assert gt.int is gt.int32 and gt.tensor([1, 2], dtype=gt.int).dtype == gt.int32
    a = gt.ones(2, requires_grad=True)
    assert gt.asarray(a) is a and gt.as_tensor(a) is a and gt.as_tensor(a, dtype=gt.float64).grad_fn is not None
    assert gt.asarray(a, copy=True) is not a and gt.asarray([1, 2]).dtype == gt.int64
    assert gt.asarray(3.0).item() == 3.0 and gt.asarray([1.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="copy=False"):
        gt.asarray(a, dtype=gt.float64, copy=False)


def test_optimizer_group_of_one_tensor_and_small_tensor_methods():
    # d2l: SGD([{'params': net.weight, 'weight_decay': wd}, {'params': net.bias}]) -- the
    # single tensor was iterated row by row, and the copies were updated instead of it.
    net = nn.Linear(3, 1)
    with gt.no_grad():
        net.weight.copy_(gt.tensor([[0.1, -0.2, 0.3]]))
        net.bias.fill_(0.5)
    opt = gt.optim.SGD([{"params": net.weight, "weight_decay": 3.0}, {"params": net.bias}], lr=0.01)
    x, y = gt.arange(6.0).reshape(2, 3), gt.tensor([[1.0], [2.0]])
    ((net(x) - y) ** 2).mean().backward()
    opt.step()
    # d/dw mean((Xw + b - y)^2) = 2/N X^T r, r the residuals; weight decay adds 3 w to w's alone
    r = np.arange(6.0).reshape(2, 3) @ np.array([0.1, -0.2, 0.3]) + 0.5 - np.array([1.0, 2.0])
    gw = 2 / 2 * np.arange(6.0).reshape(2, 3).T @ r + 3.0 * np.array([0.1, -0.2, 0.3])
    np.testing.assert_allclose(net.weight.numpy()[0], np.array([0.1, -0.2, 0.3]) - 0.01 * gw, rtol=1e-5)
    np.testing.assert_allclose(net.bias.numpy(), [0.5 - 0.01 * r.sum()], rtol=1e-5)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        gt.optim.SGD(net.weight, lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        gt.optim.SGD([{"params": [net.weight]}, {"params": [net.weight]}], lr=0.1)
    w = gt.normal(0, 0.01, (3, 1), requires_grad=True)
    assert w.shape == (3, 1) and w.requires_grad and w.is_leaf
    x = gt.arange(6.0).reshape(3, 2)
    assert reversed(x).tolist() == [[4.0, 5.0], [2.0, 3.0], [0.0, 1.0]] and isinstance(reversed(x), gt.Tensor)
    assert x.swapaxes(0, 1).shape == x.swapdims(0, 1).shape == gt.swapdims(x, 0, 1).shape == (2, 3)
    gru = nn.GRU(4, 8, 2)
    assert gru._flat_weights_names == [f"{k}_l{i}" for i in range(2) for k in ("weight_ih", "weight_hh", "bias_ih",
                                                                            "bias_hh")]
    assert gru._flat_weights[1] is gru.weight_hh_l0 and gru.all_weights[1][0] is gru.weight_ih_l1


def test_cat_skips_legacy_empty_tensors_and_contains():
    # transformers' DynamicCache concatenates its empty (0,) start with the first keys
    x = gt.ones(2, 3, 4)
    for d in (0, -1, 2):
        y = gt.cat([gt.tensor([]), x], dim=d)
        assert y.shape == (2, 3, 4) and y.sum().item() == 24
    assert gt.cat([gt.tensor([]), gt.ones(2, dtype=gt.int64)]).dtype == gt.float32  # (the empty one's dtype counts)
    y = gt.cat([x])
    y.add_(1)  # a new tensor, not x
    assert x.sum().item() == 24
    m = gt.tensor([[3, 4], [5, 0]])
    assert 0 in m and 4 in m and 7 not in m and gt.tensor(5) in m


def test_init_eye_dirac_and_sparse():
    w = gt.empty(3, 4)
    gt.nn.init.eye_(w)
    assert w.tolist() == np.eye(3, 4).tolist()
    c = gt.empty(4, 2, 3, 3)
    gt.nn.init.dirac_(c, groups=2)  # each group passes its first in channels through the centre tap
    want = np.zeros((4, 2, 3, 3))
    for o, i in ((0, 0), (1, 1), (2, 0), (3, 1)):
        want[o, i, 1, 1] = 1
    assert c.numpy().tolist() == want.tolist()
    s = gt.empty(10, 3)
    gt.nn.init.sparse_(s, 0.3)
    assert (s == 0).sum(0).tolist() == [3, 3, 3]
    with pytest.raises(ValueError, match="2 dimensions"):
        gt.nn.init.eye_(gt.empty(2, 2, 2))


def test_legacy_tensor_types_are_classes():
    # transformers annotates `labels: torch.LongTensor | None` (evaluated when the function is
    # defined) and older code tests isinstance(x, torch.cuda.FloatTensor)-style types.
    x = gt.FloatTensor([1, 2])
    assert isinstance(x, gt.FloatTensor) and not isinstance(x, gt.LongTensor) and type(x) is gt.Tensor
    assert isinstance(gt.LongTensor(3), gt.LongTensor) and gt.ByteTensor([1]).dtype == gt.uint8
    assert str(gt.FloatTensor | None) == "gt.FloatTensor | None"
    assert x.type(gt.DoubleTensor).dtype == gt.float64


def test_what_timm_and_transformers_import():
    # `import timm` and `import transformers` stopped at these, one after another
    import importlib
    from typing import Final
    assert gt.jit.Final is Final and importlib.import_module("gt.jit.annotations").List is not None
    assert gt.nn.init._calculate_fan_in_and_fan_out(gt.empty(4, 3, 2)) == (6, 8)
    assert importlib.import_module("gt.hub").HASH_REGEX.search("resnet-5c106cde.pth").group(1) == "5c106cde"
    assert importlib.import_module("gt.optim.optimizer").Optimizer is gt.optim.Optimizer
    from gt.utils.data import Dataset, Sampler
    assert Sampler[int] is Sampler and Dataset[int] is Dataset
    assert gt.fx.wrap(len) is len
    with pytest.raises(NotImplementedError, match="does not trace"):
        gt.fx.symbolic_trace(nn.Linear(2, 2))
    assert gt.is_floating_point(gt.ones(1)) and not gt.is_complex(gt.ones(1)) and not gt.ones(1).is_complex()
    x = gt.tensor([[1, 2], [3, 4]])
    assert gt.isin(x, [2, 3]).tolist() == [[False, True], [True, False]] and x.isin(gt.tensor([4]), invert=True).sum() == 3
    assert not gt.is_autocast_enabled()
    with gt.autocast("cpu"):
        assert gt.is_autocast_enabled("cpu") and not gt.is_autocast_enabled() and gt.get_autocast_dtype("cpu") == gt.bfloat16
    # shapes by keyword (DiT's unpatchify: x.reshape(shape=...))
    y = gt.arange(6.0)
    assert y.reshape(shape=(2, 3)).shape == y.view(size=(3, 2)).shape[::-1] == (2, 3)
    assert y.expand(size=(2, 6)).shape == (2, 6) and y.repeat(repeats=(2,)).shape == (12,)
    assert y.permute(dims=(0,)).shape == (6,) and y.new_zeros(size=(2,)).shape == (2,)
    with pytest.raises(TypeError, match="unexpected keyword argument 'shap'"):
        y.reshape(shap=(2, 3))

    class M(nn.Module):  # nn.Buffer (PyTorch 2.5): a buffer by assignment
        def __init__(self):
            super().__init__()
            self.a = nn.Buffer(gt.ones(2))
            self.b = nn.Buffer(gt.zeros(1), persistent=False)

    m = M()
    assert list(m.state_dict()) == ["a"] and [n for n, _ in m.named_buffers()] == ["a", "b"]
    g1, g2 = gt.Generator().manual_seed(3), gt.Generator().manual_seed(3)
    assert (nn.init.kaiming_uniform_(gt.empty(3, 3), generator=g1) == nn.init.kaiming_uniform_(gt.empty(3, 3),
                                                                                               generator=g2)).all()
    start, end = gt.cuda.Event(enable_timing=True), gt.cuda.Event(enable_timing=True)
    start.record()
    with gt.cuda.stream(gt.cuda.Stream()):
        z = gt.ones(8, 8) @ gt.ones(8, 8)
    end.record()
    assert start.elapsed_time(end) >= 0 and z.sum().item() == 512
    with pytest.raises(NotImplementedError, match="CUDA graphs"):
        gt.cuda.CUDAGraph()


def test_conv_bn_fusion_and_vision_ops():
    from gt.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    bn(conv(gt.randn(2, 3, 5, 5)))  # running statistics that are not 0 and 1
    conv.eval(), bn.eval()
    x = gt.randn(2, 3, 5, 5)
    np.testing.assert_allclose(fuse_conv_bn_eval(conv, bn)(x).numpy(), bn(conv(x)).numpy(), atol=1e-5)
    lin, bn1 = nn.Linear(3, 4), nn.BatchNorm1d(4)
    bn1(lin(gt.randn(6, 3)))
    lin.eval(), bn1.eval()
    x = gt.randn(5, 3)
    np.testing.assert_allclose(fuse_linear_bn_eval(lin, bn1)(x).numpy(), bn1(lin(x)).numpy(), atol=1e-5)
    import importlib
    ops = importlib.import_module("gt.vision.ops")
    boxes = gt.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 9, 9]])
    scores = gt.tensor([0.9, 0.8, 0.7, 0.95])
    assert ops.nms(boxes, scores, 0.5).tolist() == [3, 2]  # 0 and 1 overlap 3 by IoU 0.81 and 0.56
    assert ops.batched_nms(boxes, scores, gt.tensor([0, 1, 0, 0]), 0.5).tolist() == [3, 1, 2]
    np.testing.assert_allclose(ops.box_iou(boxes, boxes)[0].numpy(), [1.0, 81 / 119, 0.0, 0.81], rtol=1e-6)
    assert ops.box_convert(boxes, "xyxy", "cxcywh")[0].tolist() == [5.0, 5.0, 10.0, 10.0]
    frozen = nn.Sequential(ops.misc.FrozenBatchNorm2d(4))
    assert frozen.load_state_dict(nn.Sequential(nn.BatchNorm2d(4)).state_dict()).missing_keys == []
    assert repr(frozen[0]) == "FrozenBatchNorm2d(4, eps=1e-05)" and not list(frozen.parameters())


def test_pytorch_keyword_names_take_along_dim_bools_and_float8_names():
    # transformers calls ops with PyTorch's keyword names, broadcasts take_along_dim in beam
    # search, multiplies bool masks, and names float8 dtypes in class bodies
    x = gt.tensor([[1.0, -2.0], [3.0, 4.0]])
    i = gt.tensor([[1], [0]])
    assert gt.sum(input=x, dim=1).tolist() == [-1.0, 7.0] and gt.pow(input=x, exponent=2)[0, 1].item() == 4.0
    assert gt.where(condition=x > 0, input=x, other=gt.zeros(2, 2)).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert gt.full(size=(2,), fill_value=7.0).tolist() == [7.0, 7.0] and x.pow(exponent=2)[1, 0].item() == 9.0
    assert gt.add(input=x, other=x, alpha=2)[0, 0].item() == 3.0 and x.sub(other=x).abs().sum().item() == 0
    assert x.where(x > 0, other=gt.zeros(2, 2)).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert gt.matmul(input=x, other=x).shape == (2, 2) and gt.take_along_dim(input=x, indices=i, dim=1).tolist() == \
        [[-2.0], [3.0]]
    beams = gt.arange(20.0).reshape(2, 2, 5)
    picked = gt.take_along_dim(beams, gt.tensor([[[1], [0], [1]], [[0], [0], [1]]]), dim=1)  # broadcast on axis 2
    assert picked.shape == (2, 3, 5) and picked[0, 0].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert gt.take_along_dim(x, gt.tensor([3, 0])).tolist() == [4.0, 1.0]  # (dim=None: flattened)
    a, b = gt.tensor([True, False, True]), gt.tensor([True, True, False])
    assert (a * b).tolist() == [True, False, False] and (a + b).tolist() == [True, True, True] and (a * b).dtype == gt.bool
    assert gt.finfo(gt.float8_e4m3fn).max == 448.0 and gt.iinfo(gt.uint32).max == 2 ** 32 - 1
    with pytest.raises(TypeError, match="GT has no tensors of this dtype"):
        gt.zeros(2, dtype=gt.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="FlexAttention"):
        importlib.import_module("gt.nn.attention.flex_attention").create_block_mask(None, 1, 1, 4, 4)
    with pytest.raises(NotImplementedError, match="pack/unpack"):
        with gt.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
    with gt.autograd.graph.save_on_cpu():
        assert (x * 2).sum().item() == 12.0
    from gt.distributions import constraints
    assert constraints.positive_definite.check(gt.eye(3)).item() and not constraints.positive_definite.check(-gt.eye(3)).item()


def test_custom_ops_through_torch_library():
    @gt.library.custom_op("gttest::scale", mutates_args=())
    def scale(x, s: float):
        return x * s

    x = gt.ones(3, requires_grad=True)
    scale(x, 2.0).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]  # the gradient of the ops it runs

    def setup_context(ctx, inputs, output):
        ctx.s = inputs[1]

    gt.library.register_autograd("gttest::scale", lambda ctx, g: (g * ctx.s * 10, None), setup_context=setup_context)
    x.grad = None
    gt.ops.gttest.scale(x, 2.0).sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]  # the registered backward


def test_data_ptr_of_views_and_checkpoints_of_0d_tensors(tmp_path):
    # transformers finds a tied weight's end by w.view(-1)[-1].data_ptr(); safetensors keeps 0-d shapes
    w = gt.nn.Parameter(gt.randn(4, 3))
    assert w.view(-1).data_ptr() == w.data_ptr() and w[1].data_ptr() - w.data_ptr() == 12
    assert w.view(-1)[-1].data_ptr() + w.element_size() - w.data_ptr() == w.numel() * w.element_size()
    assert w.detach().data_ptr() == w.data_ptr() and gt.randn(2).data_ptr() != w.data_ptr()
    from gt import _safetensors_torch as st
    bn = gt.nn.BatchNorm1d(3)
    path = str(tmp_path / "bn.safetensors")
    st.save_file(bn.state_dict(), path)
    loaded = st.load_file(path)
    assert loaded["num_batches_tracked"].shape == ()
    state = dict(loaded, num_batches_tracked=gt.tensor([5]))  # a 0-d entry saved as 1-d loads, as PyTorch's
    bn.load_state_dict(state)
    assert bn.num_batches_tracked.shape == () and bn.num_batches_tracked.item() == 5


def test_a_custom_op_with_autograd_takes_keyword_arguments():
    # transformers' MoE grouped_mm fallback calls its custom op with a keyword argument
    @gt.library.custom_op("gt_test_kw::scale", mutates_args=())
    def scale(x: gt.Tensor, s: gt.Tensor) -> gt.Tensor:
        return x * s

    def setup(ctx, inputs, output):
        ctx.s = inputs[1]

    gt.library.register_autograd("gt_test_kw::scale", lambda ctx, g: (g * ctx.s, None), setup_context=setup)
    x = gt.ones(3, requires_grad=True)
    y = gt.ops.gt_test_kw.scale(x, s=gt.tensor(3.0))
    y.sum().backward()
    assert y.tolist() == [3.0, 3.0, 3.0] and x.grad.tolist() == [3.0, 3.0, 3.0]


def test_roi_align_is_torchvisions():
    # expected values: torchvision 0.29's roi_align on the same input (printed there); the sample
    # rules (outside -> 0, clamped edges, adaptive sampling counts) follow its roi_align_kernel
    from gt.vision.ops import RoIAlign, roi_align
    x = gt.arange(2 * 1 * 4 * 5, dtype=gt.float64).reshape(2, 1, 4, 5).requires_grad_()
    boxes = gt.tensor([[0, 0.5, 0.5, 3.5, 2.5], [1, -1.0, -1.0, 2.0, 6.0]], dtype=gt.float64)
    y = roi_align(x, boxes, (2, 2), 1.0, -1, False)
    np.testing.assert_allclose(y.detach().numpy().ravel(), [6.25, 7.75, 11.25, 12.75, 24.515625, 25.703125, 17.453125,
                                                              18.046875],
                               rtol=1e-12)
    y.sum().backward()
    assert x.grad.shape == (2, 1, 4, 5) and abs(x.grad.sum().item() - 7.0) < 1e-9  # (a bin's weights sum to 1, less its samples off the map)
    same = roi_align(x, [boxes[:1, 1:], boxes[1:, 1:]], 2)
    np.testing.assert_allclose(same.detach().numpy(), y.detach().numpy(), rtol=1e-12)
    assert RoIAlign(2, 1.0, -1)(x, boxes).shape == (2, 1, 2, 2)
    ly = gt.nn.CrossMapLRN2d(3, alpha=0.01, beta=0.75, k=2.0)(gt.ones(1, 4, 1, 1))
    # PyTorch's running sum (its values printed there): channel 2 sums channels 0..3, channel 3 drops only 1
    np.testing.assert_allclose(ly.numpy().ravel(), (2 + 0.01 / 3 * np.array([2, 3, 4, 3])) ** -0.75, rtol=1e-6)


def test_view_as_another_dtype_reinterprets_the_bytes():
    x = gt.tensor([1.5, -2.0, 3.25])
    assert x.view(gt.int32).tolist() == np.array([1.5, -2.0, 3.25], np.float32).view(np.int32).tolist()
    assert x.view(gt.uint8).shape == (12,) and x.view(dtype=gt.float16).shape == (6,)
    assert x.view(3, 1).shape == (3, 1)  # (still a reshape)
    # schedulefree's ScheduleFreeWrapper swaps two tensors with XOR through uint8 views: writes reach x
    y = gt.tensor([0.1, 0.2, 0.3])
    x.view(gt.uint8).bitwise_xor_(y.view(gt.uint8))
    y.view(gt.uint8).bitwise_xor_(x.view(gt.uint8))
    x.view(gt.uint8).bitwise_xor_(y.view(gt.uint8))
    np.testing.assert_array_equal(x.numpy(), np.array([0.1, 0.2, 0.3], np.float32))
    np.testing.assert_array_equal(y.numpy(), np.array([1.5, -2.0, 3.25], np.float32))
    with pytest.raises(RuntimeError, match="cannot be 0"):
        gt.tensor(1.0).view(gt.uint8)
    with pytest.raises(RuntimeError, match="divisible"):
        gt.ones(3, dtype=gt.uint8).view(gt.int32)


def test_setitem_with_ints_beside_slices_and_index_tensors_places_as_pytorch():
    # PyTorch selects the ints' axes first: x[:, 0, :, idx, 1] is (2, 4, 3), as reading it gives
    # (torch-struct's AlignmentCRF; the ints were index arrays by NumPy's rule, and the values went
    # to the wrong places or raised)
    x = gt.zeros(2, 3, 4, 5, 6)
    idx = gt.tensor([0, 2, 4])
    v = gt.arange(24.0).view(2, 4, 3)
    x[:, 0, :, idx, 1] = v
    assert x[:, 0, :, idx, 1].tolist() == v.tolist() and x.sum().item() == 276.0
    want = np.zeros((2, 3, 4, 5, 6))
    for i, j in enumerate([0, 2, 4]):
        want[:, 0, :, j, 1] = v.numpy()[:, :, i]
    np.testing.assert_array_equal(x.numpy(), want)
    w = gt.ones(3, 2, 4, requires_grad=True)
    y = w * 1.0
    y[0, :, gt.tensor([1, 3])] = gt.zeros(2, 2)
    y.sum().backward()
    assert w.grad[0].tolist() == [[1, 0, 1, 0], [1, 0, 1, 0]] and w.grad[1].sum().item() == 8

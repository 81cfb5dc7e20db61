"""gt.save / gt.load of any object holding tensors, optimizer and scheduler state dicts, and
pickle / copy.deepcopy of tensors and modules (issue 24): a checkpointed run resumes bit for bit."""
import copy
import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import gt
from gt import serialization
import gt.nn as nn
import gt.nn.functional as F
from conftest import ROOT, check


def make_run(seed=0):
    gt.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = gt.optim.Adam(model.parameters(), lr=0.05, weight_decay=0.01)
    sched = gt.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def train(model, opt, sched, steps, start):
    rng = np.random.default_rng(start)  # the data of step i does not depend on the process
    losses = []
    for _ in range(steps):
        x = gt.tensor(rng.standard_normal((8, 6)).astype(np.float32))
        y = gt.tensor(rng.integers(0, 3, 8))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("to_file", [True, False], ids=["path", "file-object"])
def test_a_checkpoint_resumes_training_bit_for_bit(tmp_path, to_file):
    model, opt, sched = make_run()
    train(model, opt, sched, 3, start=0)
    ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "epoch": 3,
            "note": ["any", ("nested", 1.5)]}
    target = str(tmp_path / "ckpt.pt") if to_file else io.BytesIO()
    gt.save(ckpt, target)
    expected = train(model, opt, sched, 4, start=3)
    expected_weights = model[0].weight.numpy()

    model2, opt2, sched2 = make_run(seed=7)  # other initial values: everything must come from the file
    if not to_file:
        target.seek(0)
    loaded = gt.load(target, map_location="cpu")
    assert loaded["epoch"] == 3 and loaded["note"] == ["any", ("nested", 1.5)]
    model2.load_state_dict(loaded["model"])
    opt2.load_state_dict(loaded["opt"])
    sched2.load_state_dict(loaded["sched"])
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"] * 4  # 2 halvings later for `opt`
    assert train(model2, opt2, sched2, 4, start=3) == expected
    assert np.array_equal(model2[0].weight.numpy(), expected_weights)


def test_optimizer_state_dict_is_torch_optims_layout():
    model, opt, _ = make_run()
    train(model, opt, gt.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0), 1, start=0)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1, 2, 3] and sd["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"} and sd["state"][0]["step"] == 1
    # PyTorch's step is a 0-d float32 tensor: a state dict gives it so, and takes it (from a
    # PyTorch checkpoint) or a number back, the optimizer counting on from it.
    step = sd["state"][0]["step"]
    assert isinstance(step, gt.Tensor) and step.shape == () and step.dtype == gt.float32
    for saved in (step, 1, np.float32(1.0)):
        twin_model, twin_opt, _ = make_run()
        twin_opt.load_state_dict({**sd, "state": {i: {**v, "step": saved} for i, v in sd["state"].items()}})
        counted = twin_opt.state[twin_opt.param_groups[0]["params"][0]]["step"]
        assert type(counted) is int and counted == 1
    assert sd["param_groups"][0]["lr"] == 0.05 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    other = gt.optim.Adam(nn.Linear(6, 16).parameters(), lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        other.load_state_dict(sd)
    extra = nn.Linear(2, 2)
    opt.add_param_group({"params": extra.parameters(), "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [extra.weight]})
    # state of another shape than its parameter's (Adafactor's row/column moments) loads, cast to
    # the parameter's dtype, as PyTorch's
    w = nn.Parameter(gt.ones(3, 2))

    class Factored(gt.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

    f = Factored([w])
    f.load_state_dict({"state": {0: {"row": np.arange(3.0), "step": 2}}, "param_groups": [{"lr": 0.1, "params": [0]}]})
    row = f.state[w]["row"]
    assert row.shape == (3,) and row.dtype == gt.float32 and row.tolist() == [0.0, 1.0, 2.0]
    # an optimizer written outside GT keeps its state as it stored it: an int step stays an int, a
    # tensor one a tensor (SophiaG checks), a buffer named like a GT count ("mu") stays a tensor
    class Counted(gt.optim.Optimizer):
        def __init__(self, params, as_tensor):
            super().__init__(params, {"lr": 0.1})
            self.as_tensor = as_tensor

        @gt.no_grad()
        def step(self):
            for p in self.param_groups[0]["params"]:
                st = self.state[p]
                if not st:
                    st["step"], st["mu"] = (gt.tensor(0.0) if self.as_tensor else 0), gt.zeros_like(p)
                st["step"] += 1
                st["mu"] += p.grad
    for as_tensor in (False, True):
        w = nn.Parameter(gt.ones(3))
        w.grad = gt.ones(3)
        c = Counted([w], as_tensor)
        c.step()
        c.step()
        saved = c.state_dict()["state"][0]
        assert isinstance(saved["step"], gt.Tensor) == as_tensor and float(saved["step"]) == 2
        again = Counted([w], as_tensor)
        again.load_state_dict(c.state_dict())
        st = again.state[w]
        assert isinstance(st["step"], gt.Tensor) == as_tensor and st["mu"].tolist() == [2.0, 2.0, 2.0]
    # a function is saved as None, as PyTorch's (the code that made the scheduler rebuilds it)
    assert gt.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0).state_dict()["lr_lambdas"] == [None] * len(opt.param_groups)


def test_pickle_and_deepcopy_of_tensors_and_modules():
    for dtype in (gt.float32, gt.float64, gt.bfloat16, gt.int64, gt.bool):
        t = gt.tensor([[1, 0], [3, 4]], dtype=dtype)
        for copied in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
            assert copied.dtype == dtype and copied.shape == (2, 2) and copied.id != t.id
            assert np.array_equal(copied.numpy(), t.numpy())
    w = gt.ones(3, requires_grad=True)
    assert copy.deepcopy(w).requires_grad
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    twin = copy.deepcopy(model)
    assert isinstance(twin[0].weight, nn.Parameter) and twin[0].weight.requires_grad
    x = gt.randn(2, 3)
    assert np.array_equal(twin(x).numpy(), model(x).numpy())
    with gt.no_grad():
        twin[0].weight -= 1.0  # the copy's values are its own
    assert not np.array_equal(twin(x).numpy(), model(x).numpy())
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again(x).numpy(), model(x).numpy())


def test_save_and_load_of_single_tensors_lists_and_whole_modules(tmp_path):
    path = tmp_path / "t.pt"
    gt.save(gt.arange(5), path)
    check(gt.load(path), np.arange(5))
    gt.save([gt.ones(2), {"k": gt.zeros(1)}, np.float32(2.5), np.arange(3)], path)
    a, b, c, d = gt.load(path)
    check(a, [1, 1])
    check(b["k"], [0])
    assert c == 2.5 and d.tolist() == [0, 1, 2]
    model = nn.Linear(2, 2)
    gt.save(model, path)
    # Unpickling can run code: a weights-only load (the default, as torch.load) refuses classes.
    with pytest.raises(pickle.UnpicklingError, match="does not unpickle torch.nn.modules.linear.Linear"):
        gt.load(path)
    whole = gt.load(path, weights_only=False)
    assert isinstance(whole, nn.Linear) and np.array_equal(whole.weight.numpy(), model.weight.numpy())
    # GT's classes, functions and dtypes are written by PyTorch's names, so that PyTorch's
    # torch.load(weights_only=False) reads a whole GT model (and GT reads PyTorch's)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.TransformerEncoderLayer(4, 2, 8, activation="gelu"))
    model.kind = gt.float64
    gt.save(model, path)
    import zipfile
    pkl = next(zipfile.ZipFile(path).read(n) for n in zipfile.ZipFile(path).namelist() if n.endswith("data.pkl"))
    for name in (b"torch.nn.modules.container\nSequential", b"torch.nn.modules.conv\nConv2d",
                 b"torch.nn.modules.transformer\nTransformerEncoderLayer", b"torch.nn.functional\ngelu",
                 b"torch\nfloat64"):
        assert name in pkl
    assert b"gt.nn" not in pkl and b"gt.dtypes" not in pkl
    whole = gt.load(path, weights_only=False)
    assert whole.kind is gt.float64 and whole[1].activation is nn.functional.gelu
    # an LSTM also carries the parameter lists PyTorch's LSTM.forward reads
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    gt.save(lstm, path)
    pkl = next(zipfile.ZipFile(path).read(n) for n in zipfile.ZipFile(path).namelist() if n.endswith("data.pkl"))
    assert b"_flat_weights_names" in pkl and b"_all_weights" in pkl
    back = gt.load(path, weights_only=False)
    assert back._flat_weights_names == list(lstm._parameters) and len(back._all_weights) == 4
    assert back._flat_weights[0] is back.weight_ih_l0
    assert np.array_equal(whole[0].weight.numpy(), model[0].weight.numpy())
    with pytest.raises(TypeError, match="save other objects to a .pt file"):
        gt.save([gt.ones(1)], tmp_path / "x.npz")
    with pytest.raises(RuntimeError, match="device type"):
        gt.load(path, map_location="gpu")


def test_safe_globals_allow_named_classes_in_a_weights_only_load(tmp_path):
    path = tmp_path / "m.pt"
    model = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.1))
    gt.save(model, path)
    # torch.nn.modules.<file>.<Class>, as scripts list them (pytorch/examples' word_language_model).
    allowed = [nn.modules.container.Sequential, nn.modules.linear.Linear, nn.modules.dropout.Dropout]
    with serialization.safe_globals(allowed):
        whole = gt.load(path)
    assert np.array_equal(whole[0].weight.numpy(), model[0].weight.numpy())
    with pytest.raises(pickle.UnpicklingError, match="Sequential"):  # the block's allowance ended
        gt.load(path)
    with serialization.safe_globals(allowed[1:]):  # Sequential not among them
        with pytest.raises(pickle.UnpicklingError, match="Sequential"):
            gt.load(path)
    serialization.add_safe_globals(allowed)
    try:
        assert isinstance(gt.load(path), nn.Sequential)
        assert serialization.get_safe_globals() == allowed
    finally:
        serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        gt.load(path)


FAILING_LOAD = '''
import io, numpy as np, gt
from gt import serialization


def test_a_refused_load():
    buf = io.BytesIO()
    gt.save([gt.ones(2), np.arange(3)], buf)
    # Refuse NumPy arrays: the tensor before the array is made, and the unpickler's memo keeps it.
    serialization._SAFE.difference_update({k for k in serialization._SAFE if k[0].startswith("numpy")})
    buf.seek(0)
    gt.load(buf)
'''


def test_a_tensor_that_outlives_the_session_does_not_abort_the_exit(tmp_path):
    # pytest keeps a failed test's traceback (here, a tensor in the unpickler's memo) until the
    # interpreter exits; dropping it then once made _C's static dtype table drop the last
    # reference to a gt.dtype after finalization: "Fatal Python error: PyThreadState_Get".
    test = tmp_path / "test_refused.py"
    test.write_text(FAILING_LOAD)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(test)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and "1 failed" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    assert "Fatal Python error" not in out.stderr, out.stderr[-3000:]


def test_a_file_torch_save_wrote_loads():
    # test/python/data/torch_checkpoint.pt: written by PyTorch 2.15's torch.save (a zip of
    # data.pkl and one file per storage): a state dict, numbers, a list, every common dtype,
    # two views of one storage (a transpose and a row) and a Parameter.
    data = os.path.join(ROOT, "test", "python", "data")
    ckpt = gt.load(os.path.join(data, "torch_checkpoint.pt"))
    want = np.load(os.path.join(data, "torch_checkpoint_expected.npz"))
    assert ckpt["epoch"] == 7 and ckpt["lr"] == [0.1, 0.01]
    assert list(ckpt["model"]) == ["weight", "bias"] and list(ckpt["bn"])[-1] == "num_batches_tracked"
    np.testing.assert_array_equal(ckpt["model"]["weight"].numpy(), want["model.weight"])
    np.testing.assert_array_equal(ckpt["model"]["bias"].numpy(), want["model.bias"])
    dtypes = {"f64": gt.float64, "i64": gt.int64, "bf16": gt.bfloat16, "f16": gt.float16, "bool": gt.bool,
              "u8": gt.uint8, "transposed": gt.float32, "row": gt.float32, "scalar": gt.float32}
    for name, dtype in dtypes.items():
        assert ckpt[name].dtype == dtype, name
        got = ckpt[name].float().numpy() if name == "bf16" else ckpt[name].numpy()
        np.testing.assert_array_equal(got, want[name], err_msg=name)
    assert ckpt["scalar"].shape == () and ckpt["transposed"].shape == (4, 3)
    assert isinstance(ckpt["param"], nn.Parameter) and ckpt["param"].requires_grad
    m = nn.Linear(3, 2)
    m.load_state_dict(ckpt["model"])
    np.testing.assert_array_equal(m.weight.numpy(), want["model.weight"])


class _RunsCode:
    def __reduce__(self):
        return (os.getcwd, ())


def test_a_torch_save_file_naming_other_code_is_refused_unless_trusted(tmp_path):
    import zipfile
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("evil/data.pkl", pickle.dumps({"w": _RunsCode()}, protocol=2))
        z.writestr("evil/version", "3\n")
    with pytest.raises(pickle.UnpicklingError, match="does not unpickle posix.getcwd"):
        gt.load(path)
    assert gt.load(path, weights_only=False) == {"w": os.getcwd()}


def test_a_torch_save_file_whose_view_reaches_past_its_storage_is_refused(tmp_path):
    # A weights-only load must be safe for a file from anywhere: a tensor's size, stride and
    # offset are checked against its storage before NumPy's as_strided reads it.
    import zipfile
    data = os.path.join(ROOT, "test", "python", "data", "torch_checkpoint.pt")
    with zipfile.ZipFile(data) as z:
        members = {n: z.read(n) for n in z.namelist()}
    pkl = next(n for n in members if n.endswith("/data.pkl"))
    # the scalar tensor: size () stride () -> claim size (1000,) stride (1,) at its 1-element storage
    text = members[pkl]
    evil = tmp_path / "evil.pt"
    with zipfile.ZipFile(evil, "w") as z:
        for n, b in members.items():
            if n.startswith(pkl.split("/")[0] + "/data/"):
                b = b[:4]  # every storage cut to one element
            z.writestr(n, text if n == pkl else b)
    with pytest.raises(pickle.UnpicklingError, match="reaches past its storage"):
        gt.load(evil)


def test_gt_save_writes_torch_saves_zip_format(tmp_path):
    # PyTorch's torch.load reads what gt.save writes (checked with PyTorch 2.15: a state dict, an
    # optimizer's, bfloat16, Parameters, mmap=True); here the format itself: archive/data.pkl
    # pickled at protocol 2 naming only torch._utils / torch storages / builtins, one record per
    # tensor holding its little-endian bytes, 64-byte aligned.
    import pickletools
    import zipfile
    path = tmp_path / "ck.pt"
    w = nn.Parameter(gt.tensor([[1.0, 2.0], [3.0, 4.0]]))
    gt.save({"w": w, "b": gt.tensor([1, 2], dtype=gt.int32), "size": gt.ones(2, 3).size(), "epoch": 3}, path)
    raw = path.read_bytes()
    z = zipfile.ZipFile(path)
    names = z.namelist()
    assert names[:2] == ["archive/data.pkl", "archive/byteorder"] and "archive/version" in names
    assert z.read("archive/byteorder") == b"little"
    pkl = z.read("archive/data.pkl")
    assert pkl[:2] == b"\x80\x02"  # protocol 2, as torch.save
    globals_ = {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}
    assert globals_ == {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter",
                        "torch.FloatStorage", "torch.IntStorage", "torch.Size"}
    data = sorted(n for n in names if n.startswith("archive/data/"))
    assert [np.frombuffer(z.read(n), dtype) .tolist() for n, dtype in zip(data, (np.float32, np.int32))] == \
        [[1.0, 2.0, 3.0, 4.0], [1, 2]]
    for info in z.infolist():
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        assert raw[start:start + info.file_size] == z.read(info.filename) and start % 64 == 0
    back = gt.load(path)
    assert isinstance(back["w"], nn.Parameter) and back["size"] == (2, 3) and back["epoch"] == 3
    check(back["w"], [[1, 2], [3, 4]])

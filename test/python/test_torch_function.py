"""The __torch_function__ protocol (gt.overrides): Tensor subclasses keep their class through
ops, their overrides see every call, TorchFunctionMode sees calls while entered. Expected
values are PyTorch 2.15's (run under torch, the same checks pass)."""
import numpy as np
import pytest

import gt
import gt.nn.functional as F
from gt.overrides import TorchFunctionMode, handle_torch_function, has_torch_function


class Meta(gt.Tensor):
    """A MONAI/fastai-style subclass: results keep the first argument's `meta`."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        ret = super().__torch_function__(func, types, args, kwargs or {})
        src = next((a for a in args if isinstance(a, Meta)), None)
        if isinstance(ret, Meta) and src is not None:
            ret.meta = dict(getattr(src, "meta", {}))
        return ret


def meta(values):
    m = gt.tensor(values).as_subclass(Meta)
    m.meta = {"spacing": 2}
    return m


def test_ops_on_a_subclass_return_the_subclass_with_its_metadata():
    x = meta([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    y = (x * 2).sum(0)
    assert type(y) is Meta and y.meta == {"spacing": 2} and y.tolist() == [6.0, 10.0, 14.0]
    for out in (x[0], gt.relu(x), F.relu(x), x.t(), gt.stack([x, x]), x + gt.ones(2, 3), gt.ones(2, 3) + x,
                x.max(0).values, gt.cat([gt.zeros(1, 3), x])):
        assert type(out) is Meta
    assert [type(t) for t in x.unbind(0)] == [Meta, Meta]
    assert type(x.max(0)).__name__ == "max"
    assert type(x.sum().item()) is float and type(x.shape) is gt.Size
    assert repr(x) == "Meta([[0., 1., 2.],\n      [3., 4., 5.]])"


def test_gradients_flow_through_subclass_ops():
    x = meta([1.0, 2.0, 3.0])
    w = gt.ones(3, requires_grad=True)
    out = (x * w).sum()
    assert type(out) is Meta
    out.backward()
    assert type(w.grad) is gt.Tensor and w.grad.tolist() == [1.0, 2.0, 3.0]


def test_parameter_and_disabled_subclasses_give_plain_tensors():
    class Plain(gt.Tensor):
        __torch_function__ = gt._C._disabled_torch_function_impl

    p = gt.nn.Parameter(gt.ones(2))
    assert type(p * 2) is gt.Tensor
    assert type(gt.ones(2).as_subclass(Plain) + 1) is gt.Tensor
    assert repr(gt.ones(1).as_subclass(Plain)) == "Plain([1.])"


def test_a_subclass_goes_before_its_base_and_unrelated_classes_raise():
    class Sub(Meta):
        pass

    class Other(gt.Tensor):
        pass

    s, m = gt.ones(2).as_subclass(Sub), gt.ones(2).as_subclass(Meta)
    assert type(s + m) is Sub and type(m + s) is Sub
    with pytest.raises(TypeError, match="unsupported operand"):
        gt.ones(2).as_subclass(Other) + m
    with pytest.raises(TypeError, match="all __torch_function__ handlers returned NotImplemented"):
        gt.add(gt.ones(2).as_subclass(Other), m)


def test_an_override_sees_the_public_function():
    seen = []

    class Logged(gt.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    x = gt.ones(2, 2).as_subclass(Logged)
    x[0]
    x + 1
    gt.exp(x)
    F.softmax(x, dim=0)
    assert seen == [gt.Tensor.__getitem__, gt.Tensor.add, gt.exp, F.softmax]


def test_as_subclass_writes_through_to_its_base():
    base = gt.arange(4.0)
    view = base.as_subclass(Meta)
    view[0] = 100.0
    assert base.tolist() == [100.0, 1.0, 2.0, 3.0]


def test_a_mode_sees_every_call_but_not_its_own():
    calls = []

    class Count(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return func(*args, **(kwargs or {}))

    with Count():
        a = gt.ones(2)
        b = a + a
        c = F.relu(b)
    assert calls == ["ones", "add", "relu"]
    d = c * 2  # outside: not seen
    assert calls == ["ones", "add", "relu"] and d.tolist() == [4.0, 4.0]


def test_a_mode_can_replace_results():
    class Zeros(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return gt.zeros_like(out) if func is gt.exp else out

    with Zeros():
        assert gt.exp(gt.ones(3)).tolist() == [0.0, 0.0, 0.0]
    assert np.allclose(gt.exp(gt.ones(1)).numpy(), np.e)


def test_disable_and_a_library_function_using_handle_torch_function():
    x = meta([1.0, 2.0])
    with gt._C.DisableTorchFunctionSubclass():
        assert type(x + 1) is gt.Tensor
    assert type(x + 1) is Meta

    def scale(t, factor=2.0):  # a library function written as PyTorch's are
        if has_torch_function((t,)):
            return handle_torch_function(scale, (t,), t, factor=factor)
        return t * factor

    out = scale(x)
    assert type(out) is Meta and out.meta == {"spacing": 2} and out.tolist() == [2.0, 4.0]
    assert not has_torch_function((gt.ones(1),))


def test_tensors_print_as_tensor_under_as_torch():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", "-c",
                          "import torch\nclass M(torch.Tensor): pass\nprint(torch.ones(2)); print(torch.ones(1).as_subclass(M))\n"
                          "print(torch.__name__)"],  # (pyro checks torch.__name__ before patching torch's names)
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == ["tensor([1., 1.])", "M([1.])", "torch"], out.stderr


def test_modules_keep_a_subclass_and_library_additions_to_tensor_do_not_dispatch():
    seen = []

    class Logged(gt.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)

    x = gt.ones(1, 2, 5, 5).as_subclass(Logged)
    for m, call in ((gt.nn.Conv2d(2, 3, 3), "conv2d"), (gt.nn.ConvTranspose2d(2, 3, 3), "conv_transpose2d"),
                    (gt.nn.Flatten(), "flatten")):
        seen.clear()
        assert type(m(x)) is Logged and seen == [call], (m, seen)
    seq = gt.ones(4, 1, 2).as_subclass(Logged)
    out, (h, c) = gt.nn.LSTM(2, 3)(seq)
    assert type(out) is Logged and type(h) is Logged
    q = gt.ones(1, 4, 6).as_subclass(Logged)
    assert type(gt.nn.MultiheadAttention(6, 2, batch_first=True)(q, q, q)[0]) is Logged

    # a library's own method on torch.Tensor added before the first subclass (fastai's) calls torch's
    # functions itself: it is not wrapped (it recursed forever when it was)
    import subprocess
    import sys
    code = ("import gt\n"
            "def my_meta(self): return self.as_subclass(gt.Tensor)\n"
            "gt.Tensor.my_meta = my_meta\n"
            "class Img(gt.Tensor): pass\n"
            "x = gt.ones(2).as_subclass(Img)\n"
            "print(type(x.my_meta()).__name__, type(x.as_subclass(gt.Tensor)).__name__, type(x.clone()).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["Tensor", "Tensor", "Img"], out.stderr[-2000:]


def test_save_and_load_keep_a_subclass_and_its_attributes(tmp_path):
    """gt.save writes a subclass (or a tensor with attributes of its own) as PyTorch's
    Tensor.__reduce_ex__ does (_rebuild_from_type_v2), so gt.load and torch.load give it back."""
    x = meta([1.0, 2.0])
    y = gt.ones(2)
    y.tag = "t"
    gt.save({"x": x, "y": y, "plain": gt.zeros(1)}, tmp_path / "m.pt")
    back = gt.load(tmp_path / "m.pt", weights_only=False)
    assert type(back["x"]) is Meta and back["x"].meta == {"spacing": 2} and back["x"].tolist() == [1.0, 2.0]
    assert type(back["y"]) is gt.Tensor and back["y"].tag == "t" and type(back["plain"]) is gt.Tensor
    with pytest.raises(Exception, match="Meta"):  # a weights-only load allows only the classes you name
        gt.load(tmp_path / "m.pt")
    with gt.serialization.safe_globals([Meta]):
        assert type(gt.load(tmp_path / "m.pt")["x"]) is Meta


def test_subclass_new_may_take_arguments_of_its_own():
    """fastai's TensorBBox(x, img_size=...): Python calls Tensor.__init__ with __new__'s arguments,
    which (as PyTorch's) ignores them for a tensor __new__ made."""
    class Box(gt.Tensor):
        def __new__(cls, x, img_size=None):
            out = gt.as_tensor(x).as_subclass(cls)
            out.img_size = img_size
            return out
    b = Box([[1.0, 2.0, 3.0, 4.0]], img_size=(8, 8))
    assert type(b) is Box and b.img_size == (8, 8) and (b * 2).tolist() == [[2.0, 4.0, 6.0, 8.0]]
    with pytest.raises(TypeError):
        gt.Tensor([1.0], img_size=3)

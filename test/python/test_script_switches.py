"""What training scripts pass that changes nothing on GT (memory formats, optimizer
implementation switches) is accepted; maximize=True ascends."""
import inspect

import numpy as np
import pytest

import gt


def test_memory_formats_are_accepted_everywhere_pytorch_takes_one():
    x = gt.ones(2, 3, 4, 4)
    assert repr(gt.channels_last) == "gt.channels_last" and isinstance(gt.preserve_format, gt.memory_format)
    assert x.to(memory_format=gt.channels_last) is x and x.contiguous(memory_format=gt.channels_last) is x
    assert x.is_contiguous(memory_format=gt.channels_last)
    assert gt.zeros_like(x, memory_format=gt.preserve_format).shape == x.shape
    assert gt.empty(2, 3, memory_format=gt.contiguous_format).shape == (2, 3)
    assert x.clone(memory_format=gt.channels_last).numpy().sum() == 96
    m = gt.nn.Conv2d(3, 4, 3)
    assert m.to(memory_format=gt.channels_last) is m and m.to(gt.float64, memory_format=gt.channels_last_3d) is m
    assert m.weight.dtype == gt.float64


OPTIMIZERS = [(gt.optim.SGD, {"lr": 0.1}), (gt.optim.Adam, {}), (gt.optim.AdamW, {"weight_decay": 0.0}), (gt.optim.RMSprop, {}),
              (gt.optim.Adagrad, {}), (gt.optim.Adadelta, {})]


@pytest.mark.parametrize("cls,kwargs", OPTIMIZERS)
def test_optimizers_take_pytorchs_implementation_switches(cls, kwargs):
    assert {"foreach", "maximize", "capturable", "differentiable", "fused"} <= set(inspect.signature(cls).parameters)
    p = gt.tensor([1.0, -2.0], requires_grad=True)
    opt = cls([p], foreach=False, fused=None, capturable=False, differentiable=False, **kwargs)
    (p * p).sum().backward()
    opt.step()
    group = opt.param_groups[0]
    assert group["foreach"] is False and group["maximize"] is False
    restored = cls([gt.tensor([0.0, 0.0], requires_grad=True)], **kwargs)
    restored.load_state_dict(opt.state_dict())
    assert restored.param_groups[0]["foreach"] is False


@pytest.mark.parametrize("cls,kwargs", OPTIMIZERS)
def test_maximize_ascends_the_gradient(cls, kwargs):
    start = np.array([1.0, -2.0])
    moved = []
    for maximize in (False, True):
        p = gt.tensor(start, requires_grad=True)
        opt = cls([p], maximize=maximize, **kwargs)
        (p * p).sum().backward()
        g = p.grad
        opt.step()
        assert p.grad is g and np.array_equal(g.numpy(), 2 * start)  # .grad given back unchanged
        moved.append(p.detach().numpy() - start)
    descent, ascent = moved
    assert np.all(np.sign(descent) == -np.sign(start)) and np.all(np.sign(ascent) == np.sign(start))
    np.testing.assert_allclose(ascent, -descent, rtol=1e-12)  # no weight decay: the mirror image

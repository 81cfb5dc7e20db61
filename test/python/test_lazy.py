"""Lazy modules (torch.nn.LazyLinear, LazyConv*, LazyBatchNorm*...): sizes from the first input."""
import math

import numpy as np
import pytest

import gt
import gt.nn as nn


def test_lazy_linear_takes_in_features_from_the_first_input_and_keeps_its_parameters():
    gt.manual_seed(0)
    m = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(3))
    assert isinstance(m[0].weight, nn.UninitializedParameter)
    assert isinstance(m[0].weight, nn.parameter.UninitializedParameter)
    assert m[0].has_uninitialized_params()
    params = list(m.parameters())
    opt = gt.optim.SGD(params, lr=0.1)  # made before the sizes are known, as scripts do
    y = m(gt.randn(4, 5))
    assert y.shape == (4, 3)
    assert type(m[0]) is nn.Linear and type(m[2]) is nn.Linear
    assert (m[0].in_features, m[2].in_features) == (5, 8)
    assert [p.shape for p in m.parameters()] == [(8, 5), (8,), (3, 8), (3,)]
    assert all(type(p) is nn.Parameter for p in m.parameters())
    assert all(a is b for a, b in zip(params, m.parameters()))  # the same objects, now with values
    w = m[0].weight.numpy()
    assert np.abs(w).max() <= 1 / math.sqrt(5) and w.std() > 0  # PyTorch's initialization bounds
    y.sum().backward()
    before = m[0].weight.numpy().copy()
    opt.step()
    assert not np.allclose(before, m[0].weight.numpy())


def test_lazy_conv_and_norm_match_the_regular_modules():
    gt.manual_seed(1)
    lazy = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                         nn.LazyConvTranspose2d(2, 2, stride=2), nn.Identity())
    x = gt.randn(2, 3, 5, 5)
    y = lazy(x)
    assert y.shape == (2, 2, 10, 10)
    assert [type(m).__name__ for m in lazy] == ["Conv2d", "BatchNorm2d", "ReLU", "ConvTranspose2d", "Identity"]
    assert (lazy[0].in_channels, lazy[1].num_features, lazy[3].in_channels) == (3, 4, 4)
    assert lazy[1].running_mean.shape == (4,) and lazy[1].weight.numpy().tolist() == [1.0] * 4
    regular = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                            nn.ConvTranspose2d(4, 2, 2, stride=2), nn.Identity())
    regular.load_state_dict(lazy.state_dict())
    regular.eval(), lazy.eval()
    np.testing.assert_allclose(lazy(x).numpy(), regular(x).numpy(), rtol=1e-6)
    # unbatched input (C, L) and batch norm over (N, C)
    c = nn.LazyConv1d(2, 3)
    assert c(gt.randn(6, 10)).shape == (2, 8) and c.in_channels == 6
    b = nn.LazyBatchNorm1d()
    assert b(gt.randn(8, 7)).shape == (8, 7) and b.num_features == 7


def test_a_checkpoint_loads_into_a_lazy_model_before_its_first_call():
    gt.manual_seed(2)
    trained = nn.Sequential(nn.LazyLinear(6), nn.LazyBatchNorm1d(), nn.LazyLinear(2))
    x = gt.randn(5, 4)
    trained(x)
    trained.eval()
    fresh = nn.Sequential(nn.LazyLinear(6), nn.LazyBatchNorm1d(), nn.LazyLinear(2))
    fresh.load_state_dict(trained.state_dict())  # the checkpoint's shapes materialize the parameters
    assert not fresh[0].has_uninitialized_params()
    fresh.eval()
    np.testing.assert_allclose(fresh(x).numpy(), trained(x).numpy(), rtol=1e-6)
    assert type(fresh[0]) is nn.Linear and fresh[0].in_features == 4 and fresh[1].num_features == 6


def test_lazy_conv_refuses_channels_that_groups_do_not_divide():
    with pytest.raises(ValueError, match=r"in_channels \(3\) must be divisible by groups \(2\)"):
        nn.LazyConv2d(4, 3, groups=2)(gt.randn(1, 3, 5, 5))
    assert repr(nn.LazyLinear(3).weight) == "<UninitializedParameter>"

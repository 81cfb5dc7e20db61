"""gt.nn.utils.parametrize / parametrizations (weight_norm, spectral_norm), the original
nn.utils.weight_norm, parameters_to_vector, and gt.special: values against NumPy, gradients
against finite differences, PyTorch's state_dict keys."""
import math

import numpy as np
import pytest

import gt
import gt.nn as nn
from gt.nn.utils import parametrizations as P, parametrize

rng = np.random.default_rng(0)


def test_weight_norm_is_g_v_over_the_norm_of_v_with_pytorchs_keys_and_gradients():
    m = nn.Linear(4, 3).double()
    w0 = m.weight.numpy().copy()
    P.weight_norm(m)
    assert type(m).__name__ == "ParametrizedLinear" and parametrize.is_parametrized(m, "weight")
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    np.testing.assert_allclose(m.weight.numpy(), w0, rtol=1e-12)  # right_inverse: the same weight
    g = m.parametrizations.weight.original0.numpy()
    np.testing.assert_allclose(g, np.linalg.norm(w0, axis=1, keepdims=True), rtol=1e-12)
    x = rng.standard_normal((5, 4))

    def loss(g, v):  # sum of tanh(x @ W^T + b), W = g v / ||v|| (per output row)
        w = g * v / np.linalg.norm(v, axis=1, keepdims=True)
        return np.tanh(x @ w.T + m.bias.numpy()).sum()
    m(gt.tensor(x)).tanh().sum().backward()
    for i, o in enumerate((m.parametrizations.weight.original0, m.parametrizations.weight.original1)):
        args = [m.parametrizations.weight.original0.numpy(), m.parametrizations.weight.original1.numpy()]
        want = np.zeros_like(args[i])
        for idx in np.ndindex(*args[i].shape):
            hi, lo = [a.copy() for a in args], [a.copy() for a in args]
            hi[i][idx] += 1e-6
            lo[i][idx] -= 1e-6
            want[idx] = (loss(*hi) - loss(*lo)) / 2e-6
        np.testing.assert_allclose(o.grad.numpy(), want, rtol=1e-5, atol=1e-8)
    # Removing it leaves the parametrized value as a plain parameter, and the class as it was.
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.numpy(), w0, rtol=1e-12)


def test_spectral_norm_divides_by_the_largest_singular_value_and_updates_only_in_training():
    m = nn.Conv2d(3, 6, 3)
    # a weight with a clear spectral gap (3 against 1): 10 power iterations converge whatever
    # the random start (a random weight's gap can be 0.97, and then they do not)
    rng = np.random.default_rng(0)
    q1, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    q2, _ = np.linalg.qr(rng.standard_normal((27, 6)))
    with gt.no_grad():
        m.weight.copy_(gt.tensor((q1 @ np.diag([3.0, 1, 0.9, 0.5, 0.2, 0.1]) @ q2.T).reshape(6, 3, 3, 3),
                                 dtype=gt.float32))
    P.spectral_norm(m)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                                      "parametrizations.weight.original"]
    original = m.parametrizations.weight.original.numpy().reshape(6, -1)
    for _ in range(10):
        w = m.weight.numpy().reshape(6, -1)  # each read in training mode runs a power iteration
    sigma = np.linalg.svd(original, compute_uv=False)[0]
    np.testing.assert_allclose(w, original / sigma, rtol=1e-4)
    m.eval()
    u = m.parametrizations.weight[0]._u.numpy().copy()
    m(gt.randn(1, 3, 5, 5))
    np.testing.assert_array_equal(m.parametrizations.weight[0]._u.numpy(), u)
    # The state dict loads into a fresh parametrized module and gives the same weight.
    fresh = P.spectral_norm(nn.Conv2d(3, 6, 3))
    fresh.load_state_dict(m.state_dict())
    fresh.eval()
    np.testing.assert_allclose(fresh.weight.numpy(), m.weight.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        P.spectral_norm(nn.Linear(2, 2), name="kernel")


def test_register_parametrization_chains_caches_and_sets_through_right_inverse():
    class Symmetric(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

        def right_inverse(self, a):
            return a.triu()

    class Scale(nn.Module):
        def forward(self, x):
            return 2.0 * x

        def right_inverse(self, y):
            return 0.5 * y
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "weight", Scale())
    w = m.weight.numpy()
    np.testing.assert_allclose(w, w.T)
    a = rng.standard_normal((3, 3)).astype(np.float32)
    a = a + a.T
    m.weight = gt.tensor(a)  # through each right_inverse, last first
    np.testing.assert_allclose(m.weight.numpy(), a, rtol=1e-6)
    with parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(m, "nothing", Scale())


def test_original_weight_norm_and_parameters_as_one_vector():
    m = nn.Linear(4, 3)
    w0 = m.weight.numpy().copy()
    nn.utils.weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    x = gt.randn(2, 4)
    m(x).sum().backward()
    assert m.weight_g.grad.shape == (3, 1) and m.weight_v.grad.shape == (3, 4)
    with gt.no_grad():
        m.weight_g.copy_(2 * m.weight_g)
    m(x)  # the pre-hook recomputes the weight
    np.testing.assert_allclose(m.weight.numpy(), 2 * w0, rtol=1e-5)
    nn.utils.remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.numpy(), 2 * w0, rtol=1e-5)
    # (the weight is registered again, after the bias: PyTorch's order after remove_weight_norm)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    v = nn.utils.parameters_to_vector(m.parameters())
    np.testing.assert_allclose(v.numpy(), np.concatenate([m.bias.numpy(), 2 * w0.ravel()]), rtol=1e-5)
    nn.utils.vector_to_parameters(gt.arange(15.0), m.parameters())
    np.testing.assert_array_equal(m.bias.numpy(), [0, 1, 2])
    np.testing.assert_array_equal(m.weight.numpy(), np.arange(3.0, 15.0).reshape(3, 4))
    with pytest.raises(ValueError, match="15"):
        nn.utils.vector_to_parameters(gt.arange(14.0), m.parameters())


def test_special_functions_match_their_definitions():
    x = np.array([-2.0, -0.5, 0.0, 0.3, 1.5])
    t = gt.tensor(x, dtype=gt.float64)
    S = gt.special
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(S.expit(t).numpy(), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(S.logit(S.expit(t)).numpy(), x, atol=1e-12)
    np.testing.assert_allclose(S.ndtr(t).numpy(), 0.5 * (1 + erf(x / math.sqrt(2))), rtol=1e-12)
    np.testing.assert_allclose(S.log_ndtr(t).numpy(), np.log(0.5 * (1 + erf(x / math.sqrt(2)))), rtol=1e-12)
    np.testing.assert_allclose(S.xlog1py(t, t.abs()).numpy(), x * np.log1p(np.abs(x)), atol=1e-12)
    np.testing.assert_allclose(S.entr(t).numpy(), np.where(x > 0, -x * np.log(np.where(x > 0, x, 1)),
                                                           np.where(x == 0, 0, -np.inf)))
    np.testing.assert_allclose(S.sinc(t).numpy(), np.sinc(x), atol=1e-12)
    np.testing.assert_allclose(S.log_softmax(t, 0).numpy(), x - np.log(np.exp(x).sum()), rtol=1e-12)
    np.testing.assert_allclose(S.softmax(t, 0, dtype=gt.float32).numpy(), np.exp(x) / np.exp(x).sum(), rtol=1e-6)
    assert not hasattr(S, "airy_ai")  # not provided: missing, not wrong


def test_registering_evaluates_the_parametrization_and_refuses_a_new_shape_or_dtype():
    # as PyTorch's: the parametrizations tutorial's Noisy module prints at registration, and a
    # parametrization that changes the tensor's shape is refused (unless unsafe=True)
    import gt.nn.utils.parametrize as P
    calls = []

    class Noisy(gt.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X

    layer = gt.nn.Linear(4, 4)
    P.register_parametrization(layer, "weight", Noisy())
    assert calls == [1]

    class Half(gt.nn.Module):
        def forward(self, X):
            return X[:2]

    class Double(gt.nn.Module):
        def forward(self, X):
            return X.double()

    for bad, what in ((Half(), "shape"), (Double(), "dtype")):
        fresh = gt.nn.Linear(4, 4)
        weight = fresh.weight
        with pytest.raises(ValueError, match=f"may not change the {what} of the tensor"):
            P.register_parametrization(fresh, "weight", bad)
        assert fresh.weight is weight and not P.is_parametrized(fresh)  # left as it was
        with pytest.raises(ValueError, match=f"may not change the {what}"):
            P.register_parametrization(layer, "weight", bad)  # appended to a list: checked too
    assert P.register_parametrization(gt.nn.Linear(4, 4), "weight", Half(), unsafe=True).weight.shape == (2, 4)


def test_weight_norm_without_a_dim_normalizes_the_whole_tensor_and_functional_call_leaves_originals():
    # PyTorch's norm_except_dim treats dim None / -1 as the whole tensor (g 0-d; it was per column);
    # functional_call with a parametrized name bypasses the parametrization for the call only (it
    # wrote the value into the originals for good)
    from gt.nn.utils import parametrizations as P
    for make in (lambda l: P.weight_norm(l, dim=None), lambda l: gt.nn.utils.weight_norm(l, dim=None)):
        lin = gt.nn.Linear(3, 2, dtype=gt.float64)
        with gt.no_grad():
            lin.weight.copy_(gt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=gt.float64))
        make(lin)
        g = lin.parametrizations.weight.original0 if hasattr(lin, "parametrizations") else lin.weight_g
        assert g.shape == () and abs(g.item() - math.sqrt(91)) < 1e-12
    lin = gt.nn.Linear(3, 2)
    with gt.no_grad():
        lin.weight.copy_(gt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        lin.bias.zero_()
    P.weight_norm(lin)
    x = gt.ones(1, 3)
    assert gt.func.functional_call(lin, {"weight": gt.full((2, 3), 2.0)}, (x,)).tolist() == [[6.0, 6.0]]
    np.testing.assert_allclose(lin(x).detach().numpy(), [[6.0, 15.0]], rtol=1e-6)


def test_a_right_inverse_that_is_not_implemented_is_the_identity():
    class Double(gt.nn.Module):
        def forward(self, w):
            return w * 2

        def right_inverse(self, w):
            raise NotImplementedError
    lin = gt.nn.Linear(2, 2)
    before = lin.weight.detach().clone()
    gt.nn.utils.parametrize.register_parametrization(lin, "weight", Double())
    np.testing.assert_allclose(lin.parametrizations.weight.original.detach().numpy(), before.numpy())
    np.testing.assert_allclose(lin.weight.detach().numpy(), 2 * before.numpy())


def test_orthogonal_init_of_float64_is_orthogonal_to_float64_precision():
    w = gt.empty(30, 50, dtype=gt.float64)
    gt.nn.init.orthogonal_(w)
    q = w.numpy()
    assert np.abs(q @ q.T - np.eye(30)).max() < 1e-12

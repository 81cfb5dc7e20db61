"""gt.autograd.forward_ad (dual tensors; tangents by the double-backward trick) and the
functorch module, against closed forms in float64."""
import numpy as np
import pytest

import gt
import gt.autograd.forward_ad as fwAD

RNG = np.random.default_rng(1)
P, T = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))


def t64(a):
    return gt.tensor(a, dtype=gt.float64)


def test_a_dual_carries_its_tangent_through_ops_within_its_level():
    primal, tangent, plain = t64(P), t64(T), t64(RNG.standard_normal((3, 4)))
    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        assert fwAD.unpack_dual(x).tangent is tangent
        assert fwAD.unpack_dual(plain).tangent is None  # no dual behind it
        y = x ** 2 + plain ** 2 + (x * plain).sin()
        jvp = fwAD.unpack_dual(y).tangent
        np.testing.assert_allclose(jvp.numpy(), 2 * P * T + np.cos(P * plain.numpy()) * plain.numpy() * T,
                                   rtol=1e-12)
        assert fwAD.unpack_dual(y).tangent is jvp  # computed once while y lives
        np.testing.assert_allclose(fwAD.unpack_dual(y).primal.numpy(), y.numpy())
    assert fwAD.unpack_dual(y).tangent is None  # the level is closed


def test_tangents_of_several_duals_add_up_and_levels_nest():
    a, b = t64(P), t64(RNG.standard_normal((3, 4)))
    ta, tb = t64(T), t64(np.ones((3, 4)))
    with fwAD.dual_level():
        x = fwAD.make_dual(a, ta)
        with fwAD.dual_level():
            y = fwAD.make_dual(b, tb)
            z = x * y
            np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), P * 1.0, rtol=1e-12)  # y's only
        z = x * (b + 1)
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), T * (b.numpy() + 1), rtol=1e-12)


def test_a_module_with_dual_parameters_gives_its_directional_derivative():
    model = gt.nn.Linear(4, 3).double()
    inp = t64(RNG.standard_normal((5, 4)))
    tangents = {name: gt.rand_like(p) for name, p in model.named_parameters()}
    with fwAD.dual_level():
        for name, p in list(model.named_parameters()):
            delattr(model, name)
            setattr(model, name, fwAD.make_dual(p, tangents[name]))
        jvp = fwAD.unpack_dual(model(inp)).tangent
    want = inp.numpy() @ tangents["weight"].numpy().T + tangents["bias"].numpy()
    np.testing.assert_allclose(jvp.numpy(), want, rtol=1e-12)


class Exp(gt.autograd.Function):  # forward and jvp only, as the PyTorch tutorial's Fn
    @staticmethod
    def forward(ctx, x):
        ctx.result = x.exp()
        return ctx.result

    @staticmethod
    def jvp(ctx, t):
        return t * ctx.result


class WrongExp(Exp):
    @staticmethod
    def jvp(ctx, t):
        return t * 2


def test_a_custom_function_jvp_gives_its_output_tangent_once():
    primal, tangent = t64(P), t64(T)
    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        y = Exp.apply(x) + 3 * x  # two paths from x: through jvp and through the tape
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), T * np.exp(P) + 3 * T, rtol=1e-12)
    x = t64(P[0]).requires_grad_(True)
    assert gt.autograd.gradcheck(Exp.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(gt.autograd.GradcheckError, match="forward AD"):
        gt.autograd.gradcheck(WrongExp.apply, (x,), check_forward_ad=True, check_backward_ad=False)


def test_make_dual_errors_as_pytorch():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(t64(P), t64(T))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(t64(P), t64(T.T))
        with pytest.raises(RuntimeError, match="floating point"):
            fwAD.make_dual(gt.ones(3, dtype=gt.int64), gt.ones(3, dtype=gt.int64))


def test_functorch_make_functional_with_buffers_and_jvp():
    import gt.functorch as ft
    model = gt.nn.Sequential(gt.nn.Linear(4, 3), gt.nn.BatchNorm1d(3)).double().eval()
    inp = t64(RNG.standard_normal((5, 4)))
    func, params, buffers = ft.make_functional_with_buffers(model)
    assert len(params) == 4 and len(buffers) == 3
    np.testing.assert_allclose(func(params, buffers, inp).numpy(), model(inp).detach().numpy())
    zero = tuple(gt.zeros_like(p) for p in params)
    tangents = (gt.ones_like(params[0]),) + zero[1:]
    _, jvp = ft.jvp(lambda ps: func(ps, buffers, inp), (params,), (tangents,))
    rv = buffers[1].numpy()  # eval: (x W^T + b - mean) / sqrt(var + eps) * gamma + beta
    want = inp.numpy().sum(1, keepdims=True) * np.ones(3) / np.sqrt(rv + 1e-5) * params[2].detach().numpy()
    np.testing.assert_allclose(jvp.numpy(), want, rtol=1e-10)
    f2, p2 = ft.make_functional(model, disable_autograd_tracking=True)
    assert not any(p.requires_grad for p in p2)

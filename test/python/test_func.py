"""gt.func (torch.func) and gt.autograd.functional (torch.autograd.functional) against NumPy:
closed-form derivatives and central differences in float64."""
import numpy as np
import pytest

import gt
import gt.autograd.functional as AF
from gt.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, stack_module_state, vjp,
                     vmap)

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 4))
X = RNG.standard_normal(4)


def f_np(x):
    return np.tanh(W @ x)


def f(x):
    return (gt.tensor(W) @ x).tanh()


def numeric_jacobian(fn, x, eps=1e-6):
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        cols.append((fn(x + d) - fn(x - d)) / (2 * eps))
    return np.stack(cols, axis=-1)


def test_jacrev_jacfwd_and_autograd_jacobian_match_central_differences():
    want = numeric_jacobian(f_np, X)
    x = gt.tensor(X)
    for jac in (jacrev(f)(x), jacfwd(f)(x), AF.jacobian(f, x), AF.jacobian(f, x, strategy="forward-mode")):
        assert jac.shape == (3, 4)
        np.testing.assert_allclose(jac.numpy(), want, rtol=1e-6, atol=1e-8)
    assert not x.requires_grad  # the input is differentiated as a fresh leaf


def test_jacfwd_columns_match_jacrev_rows_for_many_outputs_arguments_and_shapes():
    # jacfwd takes one backward pass per input element (of the recorded J^T u), jacrev one per
    # output element: the same Jacobian, with outputs and arguments of several shapes.
    A = RNG.standard_normal((2, 3))
    a, b = gt.tensor(A), gt.tensor(X)

    def g(a, b):
        return {"prod": a.sin() * b[:3], "const": gt.ones(2, dtype=gt.float64), "sq": (b * b).sum()}

    fwd, rev = jacfwd(g, argnums=(0, 1))(a, b), jacrev(g, argnums=(0, 1))(a, b)
    for key, shape in (("prod", (2, 3)), ("const", (2,)), ("sq", ())):
        for j, arg_shape in enumerate(((2, 3), (4,))):
            assert fwd[key][j].shape == shape + arg_shape
            np.testing.assert_allclose(fwd[key][j].numpy(), rev[key][j].numpy(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(fwd["prod"][1].numpy()[1, 2], [0, 0, np.sin(A[1, 2]), 0], rtol=1e-12)
    assert not fwd["const"][0].numpy().any()
    np.testing.assert_allclose(fwd["sq"][1].numpy(), 2 * X, rtol=1e-12)
    jac, aux = jacfwd(lambda x: (f(x), "aux"), has_aux=True)(gt.tensor(X))
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(f_np, X), rtol=1e-6, atol=1e-8)
    assert aux == "aux"


def test_jacfwd_falls_back_to_rows_when_gradients_cannot_be_differentiated():
    class Cube(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        @gt.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    class NumpyCube(gt.autograd.Function):  # a backward outside autograd, not marked
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return gt.tensor(g.numpy() * 3 * x.numpy() ** 2)

    x = gt.tensor(X)
    for cube in (Cube, NumpyCube):
        np.testing.assert_allclose(jacfwd(cube.apply)(x).numpy(), np.diag(3 * X * X), rtol=1e-12)
    # As in PyTorch: differentiating a once_differentiable backward's gradient raises.
    x = gt.tensor(X, requires_grad=True)
    (g,) = gt.autograd.grad(Cube.apply(x), x, gt.ones(4, dtype=gt.float64, requires_grad=True), create_graph=True)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        g.sum().backward()


def test_hessian_of_a_vector_function_is_jacfwd_of_jacrev():
    Wt = gt.tensor(W)
    h = hessian(f)(gt.tensor(X))  # (3, 4, 4): d2 tanh(W x)_i / dx dx = -2 t (1 - t^2) W_i W_i^T
    t = np.tanh(W @ X)
    want = (-2 * t * (1 - t * t))[:, None, None] * W[:, :, None] * W[:, None, :]
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-10, atol=1e-12)
    assert Wt.grad is None


def test_grad_of_a_scalar_function_and_its_value():
    x = gt.tensor(X)
    g, value = grad_and_value(lambda x: (x.sin() * x).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.cos(X) * X + np.sin(X), rtol=1e-12)
    assert value.item() == pytest.approx(float((np.sin(X) * X).sum()))
    assert not g.requires_grad and not value.requires_grad


def test_grad_argnums_and_has_aux():
    a, b = gt.tensor(2.0, dtype=gt.float64), gt.tensor(3.0, dtype=gt.float64)
    ga, gb = grad(lambda a, b: a * a * b, argnums=(0, 1))(a, b)
    assert (ga.item(), gb.item()) == (12.0, 4.0)
    g, aux = grad(lambda a, b: (a * b, "note"), argnums=1, has_aux=True)(a, b)
    assert (g.item(), aux) == (2.0, "note")
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        grad(lambda x: x * 2)(gt.tensor(X))
    with pytest.raises(RuntimeError, match="only 2 positional inputs"):
        grad(lambda a, b: a * b, argnums=2)(a, b)


def test_nested_transforms_give_higher_derivatives():
    x = gt.tensor(1.5, dtype=gt.float64)
    # d3/dx3 x^4 = 24 x
    third = grad(grad(grad(lambda t: t * t * t * t)))(x)
    assert third.item() == pytest.approx(36.0)
    h = hessian(lambda v: (v * v * v).sum() + (v[0] * v[1]))(gt.tensor([1.0, 2.0], dtype=gt.float64))
    np.testing.assert_allclose(h.numpy(), [[6.0, 1.0], [1.0, 12.0]])
    np.testing.assert_allclose(AF.hessian(lambda v: (v * v * v).sum(), gt.tensor(X)).numpy(), np.diag(6 * X))
    np.testing.assert_allclose(AF.hessian(lambda v: (v * v * v).sum() + v[0] * v[1], gt.tensor(X),
                                          outer_jacobian_strategy="forward-mode").numpy(),
                               np.diag(6 * X) + np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0] * 4, [0] * 4]), rtol=1e-12)


def test_vjp_and_jvp_are_products_with_the_jacobian():
    J = numeric_jacobian(f_np, X)
    u, v = RNG.standard_normal(3), RNG.standard_normal(4)
    out, vjp_fn = vjp(f, gt.tensor(X))
    np.testing.assert_allclose(out.numpy(), f_np(X), rtol=1e-12)
    (vj,) = vjp_fn(gt.tensor(u))
    np.testing.assert_allclose(vj.numpy(), u @ J, rtol=1e-6)
    out, jv = jvp(f, (gt.tensor(X),), (gt.tensor(v),))
    np.testing.assert_allclose(jv.numpy(), J @ v, rtol=1e-6)
    np.testing.assert_allclose(AF.vjp(f, gt.tensor(X), gt.tensor(u))[1].numpy(), u @ J, rtol=1e-6)
    np.testing.assert_allclose(AF.jvp(f, gt.tensor(X), gt.tensor(v))[1].numpy(), J @ v, rtol=1e-6)
    hv = AF.hvp(lambda x: (x * x * x).sum(), gt.tensor(X), gt.tensor(v))[1]
    np.testing.assert_allclose(hv.numpy(), 6 * X * v, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Entry 0 in v has invalid size"):
        AF.vjp(f, gt.tensor(X), gt.ones(4, dtype=gt.float64))
    with pytest.raises(RuntimeError, match="same shapes"):
        jvp(f, (gt.tensor(X),), (gt.ones(3, dtype=gt.float64),))


def test_autograd_functional_tuples_and_strict():
    a, b = gt.tensor([1.0, 2.0], dtype=gt.float64), gt.tensor([3.0], dtype=gt.float64)
    (ja, jb), = [AF.jacobian(lambda a, b: a * b, (a, b))]
    np.testing.assert_allclose(ja.numpy(), np.diag([3.0, 3.0]))
    np.testing.assert_allclose(jb.numpy(), [[1.0], [2.0]])
    # An output that does not depend on an input: zeros, or an error with strict.
    _, (ga, gb) = AF.vjp(lambda a, b: (a * 2).sum(), (a, b))
    assert gb.numpy().tolist() == [0.0]
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: (a * 2).sum(), (a, b), strict=True)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda a: a, [1.0, 2.0])


def test_create_graph_lets_the_result_be_differentiated_again():
    x = gt.tensor(X, requires_grad=True)
    _, g = AF.vjp(lambda t: (t * t * t).sum(), x, create_graph=True)
    (gg,) = gt.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * X, rtol=1e-12)


def test_vmap_maps_over_the_given_dimensions():
    a = RNG.standard_normal((5, 3))
    b = RNG.standard_normal((3, 2))
    out = vmap(lambda r, m: r @ m, in_dims=(0, None))(gt.tensor(a), gt.tensor(b))
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)
    out = vmap(lambda c: c.sum(), in_dims=1)(gt.tensor(a))
    np.testing.assert_allclose(out.numpy(), a.sum(0), rtol=1e-12)
    out = vmap(lambda r: r * 2, out_dims=1)(gt.tensor(a))
    np.testing.assert_allclose(out.numpy(), (a * 2).T, rtol=1e-12)
    # per-example gradients: vmap(grad(loss)) over a batch
    w = gt.tensor(RNG.standard_normal(3))
    per = vmap(grad(lambda w, x: ((x * w).sum()) ** 2), in_dims=(None, 0))(w, gt.tensor(a))
    want = 2 * (a @ w.numpy())[:, None] * a
    np.testing.assert_allclose(per.numpy(), want, rtol=1e-10)
    # dicts and tuples as inputs and outputs
    out = vmap(lambda d: (d["x"] + 1, {"y": d["x"] * 2}))({"x": gt.tensor(a)})
    np.testing.assert_allclose(out[1]["y"].numpy(), a * 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda p, q: p + q)(gt.ones(2, 3), gt.ones(3, 3))
    with pytest.raises(ValueError, match="at least one input must be mapped"):
        vmap(lambda p: p, in_dims=None)(gt.ones(2))
    with pytest.raises(NotImplementedError, match="randomness='same'"):
        vmap(lambda p: p, randomness="same")


def test_functional_call_swaps_parameters_for_one_call_only():
    gt.manual_seed(0)
    m = gt.nn.Sequential(gt.nn.Linear(3, 2), gt.nn.ReLU(), gt.nn.Linear(2, 1))
    x = gt.ones(4, 3)
    before = m(x).numpy()
    params = {k: gt.ones_like(v) for k, v in m.named_parameters()}
    out = functional_call(m, params, (x,))
    np.testing.assert_allclose(out.numpy(), np.full((4, 1), 9.0))  # 3 -> 4 per unit -> 2*4 + 1
    np.testing.assert_allclose(m(x).numpy(), before)  # the module is as it was
    assert all(isinstance(p, gt.nn.Parameter) for p in m.parameters())
    # gradients flow to the given tensors, not to the module's
    p = {k: v.detach().requires_grad_(True) for k, v in m.named_parameters()}
    functional_call(m, p, x).sum().backward()
    assert p["0.weight"].grad is not None and m[0].weight.grad is None
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(m, {"0.weight": gt.ones(2, 3)}, (x,), strict=True)


def test_functional_call_ties_shared_weights():
    class Tied(gt.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = gt.nn.Linear(2, 2, bias=False)
            self.b = gt.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    m = Tied()
    out = functional_call(m, {"a.weight": gt.eye(2) * 2}, (gt.ones(1, 2),))
    assert out.numpy().tolist() == [[4.0, 4.0]]  # b used the same replacement
    out = functional_call(m, {"a.weight": gt.eye(2) * 2}, (gt.ones(1, 2),), tie_weights=False)
    assert out.numpy().tolist() != [[4.0, 4.0]]
    with pytest.raises(ValueError, match="which are tied"):
        functional_call(m, {"a.weight": gt.eye(2), "b.weight": gt.eye(2) * 3}, (gt.ones(1, 2),))


def test_an_ensemble_with_stack_module_state_and_vmap():
    gt.manual_seed(1)
    models = [gt.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad
    x = gt.tensor(RNG.standard_normal((5, 3)).astype(np.float32))
    out = vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(params, buffers, x)
    want = np.stack([m(x).numpy() for m in models])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_pytorch_import_paths(tmp_path):
    # `import torch.func`, `torch.autograd.functional`, `torch.nn.utils.stateless`, `torch.vmap`
    # under gt.as_torch, as scripts write them.
    import subprocess
    import sys
    script = tmp_path / "uses_func.py"
    script.write_text(
        "import torch\n"
        "import torch.autograd.functional as AF\n"
        "from torch.func import functional_call, grad\n"
        "from torch.nn.utils.stateless import functional_call as fc\n"
        "import torch.autograd.forward_ad as fwAD, functorch\n"
        "from torch.autograd.function import once_differentiable\n"
        "assert fc is functional_call and torch.vmap is torch.func.vmap and functorch.vmap is torch.vmap\n"
        "x = torch.tensor([1.0, 2.0])\n"
        "print(AF.jacobian(lambda t: t * t, x).tolist(), grad(lambda t: (t * t).sum())(x).tolist())\n")
    p = subprocess.run([sys.executable, "-m", "gt.as_torch", str(script)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "[[2.0, 0.0], [0.0, 4.0]] [2.0, 4.0]"

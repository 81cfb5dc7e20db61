"""torch.autograd's user-facing API on GT (issue 24): autograd.grad (with create_graph for a
second derivative), custom autograd.Function, tensor hooks, retain_grad, and module forward and
backward hooks. References are closed-form derivatives in NumPy float64."""
import numpy as np
import pytest

import gt

nn = gt.nn
rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4)).astype(np.float32)


def leaf(a=A):
    return gt.tensor(a, requires_grad=True)


def test_grad_returns_gradients_without_touching_dot_grad():
    x, w = leaf(), leaf(rng.standard_normal((4, 2)).astype(np.float32))
    y = ((x @ w) ** 2).sum()
    gx, gw = gt.autograd.grad(y, [x, w])
    xw = A.astype(np.float64) @ w.detach().numpy()
    np.testing.assert_allclose(gx.numpy(), 2 * xw @ w.detach().numpy().T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), A.T @ (2 * xw), rtol=1e-5, atol=1e-5)
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


def test_second_derivative_with_create_graph():
    x = leaf()
    (g,) = gt.autograd.grad((x * x * x).sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), 3 * A.astype(np.float64) ** 2, rtol=1e-5)
    (g2,) = gt.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), 6 * A.astype(np.float64), rtol=1e-5, atol=1e-6)
    # a gradient penalty: backward through a gradient into .grad
    x = leaf()
    (g,) = gt.autograd.grad(gt.sin(x).sum(), x, create_graph=True)
    (g * g).sum().backward()  # d/dx cos(x)^2 = -2 sin(x) cos(x)
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(2 * A.astype(np.float64)), rtol=1e-4, atol=1e-5)


def test_grad_outputs_unused_inputs_and_errors():
    x, unused = leaf(), leaf()
    y = x * 2
    (g,) = gt.autograd.grad(y, x, grad_outputs=gt.ones(3, 4) * 3)
    np.testing.assert_allclose(g.numpy(), np.full((3, 4), 6.0))
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        gt.autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = gt.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None
    _, gz = gt.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert gz.numpy().sum() == 0
    with pytest.raises(RuntimeError, match="does not require grad"):
        gt.autograd.grad((x * 2).sum(), gt.ones(2))
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        gt.autograd.grad(x * 2, x)
    y = (x * 2).sum()
    gt.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        gt.autograd.grad(y, x)
    # after backward released the graph, grad_fn keeps its name (print(loss) after backward)
    assert y.grad_fn.name() == "SumBackward0" and repr(y).endswith("grad_fn=<SumBackward0>)")

    class Twice(gt.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    z = Twice.apply(x)
    z.sum().backward()
    assert z.grad_fn.name() == "TwiceBackward"
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.sum().backward()


def test_a_second_backward_may_pass_through_views_and_cat():
    """PyTorch releases saved tensors, not nodes: cat, slices and views save none, so a second
    backward through them needs no retain_graph (sentence-transformers' Cached* losses: one
    torch.cat of the embeddings, a backward per chunk). A node that saved tensors still raises."""
    a = gt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = gt.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
    docs = gt.cat([a, b])
    flat = docs.reshape(8)
    for i in range(2):
        (docs[i:i + 1] @ docs.T).sum().backward()
        (flat[::2] * 3.0).sum().backward()
    # sum(docs[i] @ docs.T) = docs[i] . S (S the sum of docs' rows): its gradient is S for row i and
    # docs[i] for every row; the strided view adds 3 to column 0, twice
    rows = np.concatenate([a.detach().numpy(), b.detach().numpy()])
    want_a = rows.sum(0) + rows[:2].sum(0) + 6.0 * (np.arange(4).reshape(2, 2) % 2 == 0)
    np.testing.assert_allclose(a.grad.numpy(), want_a, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), rows[:2].sum(0) + 6.0 * (np.arange(4).reshape(2, 2) % 2 == 0),
                               rtol=1e-6)
    y = a * b
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()  # (mul saved a and b)


def test_tensor_hooks_and_retain_grad():
    x = leaf()
    h = gt.exp(x)
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    seen = []
    handle = h.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    (h * 3).sum().backward()
    np.testing.assert_allclose(seen[0], np.full((3, 4), 3.0))
    np.testing.assert_allclose(h.grad.numpy(), np.full((3, 4), 6.0))  # the hook's result, as PyTorch
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.exp(A.astype(np.float64)), rtol=1e-5)
    handle.remove()
    x2 = leaf()
    leaf_seen = []
    x2.register_hook(lambda g: leaf_seen.append(1))
    y = gt.exp(x2)
    y.register_hook(lambda g: leaf_seen.append(2))
    y.sum().backward()
    assert leaf_seen == [2, 1]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        gt.ones(2).register_hook(lambda g: g)
    assert x.grad_fn is None and h.grad_fn is not None


class Cube(gt.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


class SplitSigns(gt.autograd.Function):
    """Two outputs: relu(x) and relu(-x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gt.relu(x), gt.relu(-x)

    @staticmethod
    def backward(ctx, g_pos, g_neg):
        (x,) = ctx.saved_tensors
        return gt.where(x > 0, g_pos, -g_neg)


def test_custom_function_forward_backward_and_checks():
    x = leaf()
    y = Cube.apply(x, 2.0)
    np.testing.assert_allclose(y.detach().numpy(), 2 * A.astype(np.float64) ** 3, rtol=1e-5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * A.astype(np.float64) ** 2, rtol=1e-5)
    x = leaf()
    pos, neg = SplitSigns.apply(x)
    (pos * 2 + neg * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(A > 0, 2.0, -5.0))
    with gt.no_grad():
        assert not Cube.apply(leaf(), 1.0).requires_grad

    class Wrong(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="incorrect number of gradients \\(expected 1, got 2\\)"):
        Wrong.apply(leaf()).sum().backward()

    class ExtraNones(Wrong):  # trailing Nones beyond the inputs are allowed, as in PyTorch
        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = leaf()
    ExtraNones.apply(x).sum().backward()
    assert x.grad.numpy().tolist() == np.full(x.shape, 2.0).tolist()

    class BadShape(Wrong):
        @staticmethod
        def backward(ctx, g):
            return g.sum(0)

    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        BadShape.apply(leaf()).sum().backward()


def test_module_forward_and_backward_hooks():
    m = nn.Linear(4, 2)
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", args[0].shape)))
    m.register_forward_hook(lambda mod, args, out: calls.append(("fwd", out.shape)))
    m.register_full_backward_hook(lambda mod, gi, go: calls.append(
        ("bwd", [None if g is None else g.shape for g in gi], go[0].shape)))
    m(leaf()).sum().backward()
    m(gt.tensor(A)).sum().backward()
    assert calls == [("pre", (3, 4)), ("fwd", (3, 2)), ("bwd", [(3, 4)], (3, 2)),
                     ("pre", (3, 4)), ("fwd", (3, 2)), ("bwd", [None], (3, 2))]
    pre.remove()
    calls.clear()
    m(gt.tensor(A))
    assert calls == [("fwd", (3, 2))]
    # hooks may replace: the input, the output, the input's gradient
    m2 = nn.Identity()
    m2.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m2.register_forward_hook(lambda mod, args, out: out + 1)
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
    x = leaf()
    y = m2(x)
    np.testing.assert_allclose(y.detach().numpy(), 2 * A + 1, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 20.0))


def _np_softmax_grad(x, w):
    """d/dx sum(w * softmax(x, -1)) in float64: y * (w - sum(w * y))."""
    y = np.exp(x - x.max(-1, keepdims=True))
    y /= y.sum(-1, keepdims=True)
    return y * (w - (w * y).sum(-1, keepdims=True))


def _np_layer_norm_grads(x, gamma, beta, w, eps=1e-5):
    """d/dx and d/dgamma of sum(w * layer_norm(x) * gamma + beta) over the last axis, float64."""
    d = x - x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt((d * d).mean(-1, keepdims=True) + eps)
    xhat = d * rstd
    gh = w * gamma
    gx = rstd * (gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True))
    return gx, (w * xhat).sum(0)


def _numeric_grad(f, a, eps=1e-6):
    """d f / d a by central differences (float64)."""
    out = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (f(hi) - f(lo)) / (2 * eps)
    return out


@pytest.mark.parametrize("dim", [-1, 0])
def test_second_derivative_of_softmax(dim):
    # softmax's backward is written in terms of its output (gt._functions._Softmax); its own
    # gradient flows through that output, so a gradient of the gradient is right.
    x0 = rng.standard_normal((3, 5))
    w = rng.standard_normal((3, 5))
    v = rng.standard_normal((3, 5))
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    (g,) = gt.autograd.grad((gt.tensor(w.astype(np.float32)) * x.softmax(dim)).sum(), x, create_graph=True)
    mv = lambda a: np.moveaxis(a, dim, -1)
    np.testing.assert_allclose(g.detach().numpy(), np.moveaxis(_np_softmax_grad(mv(x0), mv(w)), -1, dim),
                               rtol=1e-4, atol=1e-5)
    (h,) = gt.autograd.grad((g * gt.tensor(v.astype(np.float32))).sum(), x)
    expected = _numeric_grad(lambda a: (v * np.moveaxis(_np_softmax_grad(mv(a), mv(w)), -1, dim)).sum(), x0)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-3, atol=1e-4)


def _np_cross_entropy(x, t, w, ignore, reduction):
    """PyTorch's cross_entropy of logits x (N, C) and classes t (N,) in float64: -sum_n w[t_n]
    log_softmax(x)[n, t_n] over rows whose t_n != ignore, divided by their summed weights for
    'mean'."""
    logp = x - x.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    keep = t != ignore
    rows = np.arange(len(t))[keep]
    weights = w[t[keep]]
    loss = -(logp[rows, t[keep]] * weights).sum()
    return loss / weights.sum() if reduction == "mean" else loss


@pytest.mark.parametrize("reduction,weighted", [("mean", False), ("mean", True), ("sum", True)])
def test_cross_entropy_derivatives(reduction, weighted):
    # cross_entropy with class indices is one Function (gt.nn.functional._CrossEntropy) whose
    # backward is the closed form (softmax(x) - one_hot(t)) * w[t] * g / sum(w); with
    # create_graph it differentiates the recomputed composite.
    x0 = rng.standard_normal((6, 4))
    t0 = np.array([0, 3, 1, 1, 2, 3])
    w0 = rng.random(4) + 0.5 if weighted else np.ones(4)
    v = rng.standard_normal((6, 4))
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    weight = gt.tensor(w0.astype(np.float32)) if weighted else None
    loss = gt.nn.functional.cross_entropy(x, gt.tensor(t0), weight=weight, ignore_index=2, reduction=reduction)
    f = lambda a: _np_cross_entropy(a, t0, w0, 2, reduction)
    np.testing.assert_allclose(loss.item(), f(x0), rtol=1e-5)
    (g,) = gt.autograd.grad(loss, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _numeric_grad(f, x0), rtol=1e-4, atol=1e-5)
    assert not g.detach().numpy()[4].any()  # the ignored row (t = 2) gets nothing
    (h,) = gt.autograd.grad((g * gt.tensor(v.astype(np.float32))).sum(), x)
    gradient = lambda a: (v * _numeric_grad(f, a, 1e-5)).sum()
    np.testing.assert_allclose(h.numpy(), _numeric_grad(gradient, x0, 1e-4), rtol=2e-3, atol=2e-4)
    # backward() (no create_graph) takes the closed form
    x.grad = None
    gt.nn.functional.cross_entropy(x, gt.tensor(t0), weight=weight, ignore_index=2, reduction=reduction).backward()
    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(f, x0), rtol=1e-4, atol=1e-5)


def test_cross_entropy_over_spatial_axes_matches_rows():
    # (N, C, d) logits go through the same Function as (N*d, C) rows
    x0 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    t0 = rng.integers(0, 3, (2, 4))
    x = gt.tensor(x0, requires_grad=True)
    loss = gt.nn.functional.cross_entropy(x, gt.tensor(t0))
    loss.backward()
    rows = np.moveaxis(x0, 1, -1).reshape(-1, 3).astype(np.float64)
    f = lambda a: _np_cross_entropy(a, t0.reshape(-1), np.ones(3), -100, "mean")
    np.testing.assert_allclose(loss.item(), f(rows), rtol=1e-5)
    expected = np.moveaxis(_numeric_grad(f, rows).reshape(2, 4, 3), -1, 1)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-5)


def test_log_softmax_first_and_second_derivatives():
    # log_softmax's backward is g - exp(y) * sum(g) from its output y (gt._functions._LogSoftmax)
    x0, w, v = (rng.standard_normal((3, 5)) for _ in range(3))
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    f = lambda a: (w * (a - a.max(1, keepdims=True) - np.log(np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)))).sum()
    (g,) = gt.autograd.grad((gt.tensor(w.astype(np.float32)) * gt.log_softmax(x, 1)).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _numeric_grad(f, x0), rtol=1e-4, atol=1e-5)
    (h,) = gt.autograd.grad((g * gt.tensor(v.astype(np.float32))).sum(), x)
    gradient = lambda a: (v * _numeric_grad(f, a, 1e-5)).sum()
    np.testing.assert_allclose(h.numpy(), _numeric_grad(gradient, x0, 1e-4), rtol=2e-3, atol=2e-4)


def test_second_derivative_of_layer_norm():
    # layer_norm's backward is the closed form from xhat and rstd (gt.nn.functional._LayerNorm);
    # with create_graph it differentiates the recomputed composite instead, so a gradient
    # penalty through it reaches both x and the weight.
    x0, w, v = (rng.standard_normal((4, 6)) for _ in range(3))
    gamma0, beta0 = rng.standard_normal(6), rng.standard_normal(6)
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    gamma = gt.tensor(gamma0.astype(np.float32), requires_grad=True)
    beta = gt.tensor(beta0.astype(np.float32), requires_grad=True)
    y = gt.nn.functional.layer_norm(x, (6,), gamma, beta)
    gx, gg = gt.autograd.grad((gt.tensor(w.astype(np.float32)) * y).sum(), [x, gamma], create_graph=True)
    ex, eg = _np_layer_norm_grads(x0, gamma0, beta0, w)
    np.testing.assert_allclose(gx.detach().numpy(), ex, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gg.detach().numpy(), eg, rtol=1e-4, atol=1e-4)
    hx, hg = gt.autograd.grad((gx * gt.tensor(v.astype(np.float32))).sum(), [x, gamma])
    s = lambda a, g: (v * _np_layer_norm_grads(a, g, beta0, w)[0]).sum()
    np.testing.assert_allclose(hx.numpy(), _numeric_grad(lambda a: s(a, gamma0), x0), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(hg.numpy(), _numeric_grad(lambda g: s(x0, g), gamma0), rtol=1e-3, atol=1e-3)


def test_layer_norm_first_derivatives_without_weight_or_bias():
    x0, w = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 5))
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    (gt.tensor(w.astype(np.float32)) * gt.nn.functional.layer_norm(x, (5,))).sum().backward()
    ex, _ = _np_layer_norm_grads(x0, np.ones(5), np.zeros(5), w)
    np.testing.assert_allclose(x.grad.numpy(), ex, rtol=1e-4, atol=1e-4)
    # over the last two axes, with a [3, 5] weight and bias
    gamma = gt.tensor(rng.standard_normal((3, 5)).astype(np.float32), requires_grad=True)
    beta = gt.tensor(rng.standard_normal((3, 5)).astype(np.float32), requires_grad=True)
    x.grad = None
    (gt.tensor(w.astype(np.float32)) * gt.nn.functional.layer_norm(x, (3, 5), gamma, beta)).sum().backward()
    flat = x0.reshape(2, 15)
    ex, eg = _np_layer_norm_grads(flat, gamma.detach().numpy().reshape(15).astype(np.float64), 0, w.reshape(2, 15))
    np.testing.assert_allclose(x.grad.numpy(), ex.reshape(2, 3, 5), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gamma.grad.numpy(), eg.reshape(3, 5), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(beta.grad.numpy(), w.sum(0), rtol=1e-5, atol=1e-5)


def test_batch_norm_derivatives_in_training():
    # batch_norm standardizes over (N, H, W) with the same closed-form backward; a second
    # derivative differentiates the recomputed composite.
    x0, w = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal((4, 3, 2, 2))
    gamma0 = rng.standard_normal(3)
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    gamma = gt.tensor(gamma0.astype(np.float32), requires_grad=True)
    mean, var = gt.zeros(3), gt.ones(3)
    y = gt.nn.functional.batch_norm(x, mean, var, gamma, None, training=True)
    gx, gg = gt.autograd.grad((gt.tensor(w.astype(np.float32)) * y).sum(), [x, gamma], create_graph=True)
    to_rows = lambda a: a.transpose(1, 0, 2, 3).reshape(3, -1)  # (C, N*H*W): a row per channel

    def grads(a, g):  # d/dx and d/dgamma of sum(w * batch_norm(a) * gamma), float64
        ex, eg = _np_layer_norm_grads(to_rows(a), 1.0, 0.0, to_rows(w) * g[:, None])
        d = to_rows(a) - to_rows(a).mean(1, keepdims=True)
        xhat = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5)
        return ex.reshape(3, 4, 2, 2).transpose(1, 0, 2, 3), (to_rows(w) * xhat).sum(1)

    ex, eg = grads(x0, gamma0)
    np.testing.assert_allclose(gx.detach().numpy(), ex, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gg.detach().numpy(), eg, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean.numpy(), 0.1 * x0.mean((0, 2, 3)), rtol=1e-5, atol=1e-6)  # running stats
    v = rng.standard_normal(x0.shape)
    (hx,) = gt.autograd.grad((gx * gt.tensor(v.astype(np.float32))).sum(), x)
    np.testing.assert_allclose(hx.numpy(), _numeric_grad(lambda a: (v * grads(a, gamma0)[0]).sum(), x0),
                               rtol=1e-3, atol=1e-3)


def test_batch_norm_first_derivatives_closed_form():
    # the Function's own backward (no create_graph), over (N, H, W), against NumPy
    x0, w = rng.standard_normal((5, 3, 2, 3)), rng.standard_normal((5, 3, 2, 3))
    gamma0, beta0 = rng.standard_normal(3), rng.standard_normal(3)
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    gamma = gt.tensor(gamma0.astype(np.float32), requires_grad=True)
    beta = gt.tensor(beta0.astype(np.float32), requires_grad=True)
    y = gt.nn.functional.batch_norm(x, None, None, gamma, beta, training=True)
    (gt.tensor(w.astype(np.float32)) * y).sum().backward()
    rows = lambda a: a.transpose(1, 0, 2, 3).reshape(3, -1)
    ex, eg = _np_layer_norm_grads(rows(x0), 1.0, 0.0, rows(w) * gamma0[:, None])
    d = rows(x0) - rows(x0).mean(1, keepdims=True)
    xhat = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(x.grad.numpy(), ex.reshape(3, 5, 2, 3).transpose(1, 0, 2, 3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gamma.grad.numpy(), (rows(w) * xhat).sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(beta.grad.numpy(), rows(w).sum(1), rtol=1e-4, atol=1e-4)


def test_a_function_output_is_freed_when_dropped_without_the_cyclic_collector():
    # The node of a custom Function's output refers to no output (a saved output comes back as
    # backward's `y`), so dropping the output frees it, and its tensor on the worker, at once.
    import gc
    import weakref

    class Exp(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = leaf()
    gc.disable()
    try:
        y = Exp.apply(x)
        probe = weakref.ref(y)
        s = gt.softmax(x, -1)
        probe_softmax = weakref.ref(s)
        del y, s
        assert probe() is None and probe_softmax() is None
    finally:
        gc.enable()
    Exp.apply(x).sum().backward()  # the saved output still reaches backward
    np.testing.assert_allclose(x.grad.numpy(), np.exp(A.astype(np.float64)), rtol=1e-5)


def test_cross_entropy_class_weights_that_require_grad_get_their_gradient():
    # the closed form covers constant weights; weights that require grad take the composite
    x0 = rng.standard_normal((5, 3))
    t0 = np.array([0, 2, 1, 2, 0])
    w0 = rng.random(3) + 0.5
    x = gt.tensor(x0.astype(np.float32), requires_grad=True)
    w = gt.tensor(w0.astype(np.float32), requires_grad=True)
    gt.nn.functional.cross_entropy(x, gt.tensor(t0), weight=w).backward()
    f = lambda a: _np_cross_entropy(x0, t0, a, -100, "mean")
    np.testing.assert_allclose(w.grad.numpy(), _numeric_grad(f, w0), rtol=1e-4, atol=1e-5)


def test_a_function_saving_one_output_differentiates_through_another():
    # backward of output 1 reads saved output 0 (alive, several elements) through a weak
    # reference; it once took the reference's truth value and raised
    class Pair(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2.0, x * 3.0
            ctx.save_for_backward(a)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            (a,) = ctx.saved_tensors
            return ga * 2.0 + gb * 3.0 + a * 0.0

    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b = Pair.apply(x)
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])
    assert a.shape == (3,)


def _ops_since(marker):
    """The ops (not frees) the session recorded after tensor `marker`: (op, location)."""
    return [(e["op"], e["location"]) for e in gt.debug.get_tape() if e["op"] != "free" and e["id"] > marker.id]


@pytest.mark.parametrize("create_graph", [False, True])
def test_gradient_ops_carry_the_line_of_the_op_they_differentiate(create_graph):
    import inspect
    here = inspect.currentframe()
    x, w = leaf(), leaf(rng.standard_normal((4, 2)).astype(np.float32))
    h = x @ w; line_h = f"{__file__}:{here.f_lineno}"  # noqa: E702
    y = (h.tanh() * 3.0).sum(); line_y = f"{__file__}:{here.f_lineno}"  # noqa: E702
    h.register_hook(lambda g: g * 2.0); line_hook = f"{__file__}:{here.f_lineno}"  # noqa: E702
    seed = gt.ones(())
    gx, gw = gt.autograd.grad(y, [x, w], grad_outputs=seed, create_graph=create_graph)
    ops = _ops_since(seed)
    where = {}
    for op, location in ops:
        where.setdefault(location, []).append(op)
    assert set(where) == {line_h, line_y, line_hook}, ops
    assert [op for op in where[line_hook] if op != "full"] == ["mul"]  # the hook's op (and its 2.0), at its line
    assert "matmul" in where[line_h] and "matmul" not in where[line_y]  # x @ w's gradients
    assert "mul" in where[line_y] and "sum" not in where[line_h]
    d = 3 * 2 * (1 - np.tanh(A.astype(np.float64) @ w.detach().numpy()) ** 2)
    np.testing.assert_allclose(gw.detach().numpy(), A.T @ d, rtol=1e-5, atol=1e-5)
    # After the backward pass, ops carry the user's line again.
    z = x + 1.0
    assert gt.debug.get_tape()[-1]["location"] == f"{__file__}:{here.f_lineno - 1}"
    del z


def test_the_direct_and_recorded_formulas_give_the_same_gradients():
    """A plain backward pass records the formulas' ops straight from the client core;
    create_graph issues them through gt's Python ops (which record them). Same values."""
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)

    def grads(create_graph):
        x, w = leaf(a), leaf(b)
        h = (x @ w).transpose(1, 2)                      # batched matmul, one shared weight
        m = h.amax(dim=-1, keepdim=True) + h.mean(dim=1, keepdim=True) * 0.5
        s = gt.cat([m[:, :2], (m[:, 2:] ** 2)], dim=1)   # slices, pow, concat
        z = (gt.where(s > 0, s.sigmoid(), -s) + 1.0).rsqrt().sum() + x.abs().sum() / x.numel()
        return [g.detach().numpy() for g in gt.autograd.grad(z, [x, w], create_graph=create_graph)]

    for plain, recorded in zip(grads(False), grads(True)):
        np.testing.assert_allclose(plain, recorded, rtol=1e-6, atol=1e-6)


def test_a_recorded_result_is_the_tensor_its_constructor_makes():
    """gt._C.record fills gt.Tensor's and autograd.Node's slots itself (no __init__ runs): the
    same attributes as gt.Tensor(handle, shape, dtype) and Node(...) set, nothing more."""
    missing = object()
    x = leaf()
    y = x * 2.0
    made = gt.Tensor(y._h, y.shape, y.dtype)
    for name in gt.Tensor.__slots__:
        if name in ("__weakref__", "requires_grad", "_node"):
            continue
        assert getattr(y, name, missing) is getattr(made, name, missing) or \
            getattr(y, name, missing) == getattr(made, name, missing), name
    assert y.requires_grad and not made.requires_grad
    node = y._node
    assert node.inputs[0] is x and node.attrs == {} and node.signal == gt._runtime.current_signal()
    assert node.backward is gt.autograd.formulas["mul"]
    with gt.no_grad():
        z = x * 2.0
    assert not z.requires_grad and z._node is None
    assert not (gt.tensor([1, 2]) + 1).requires_grad  # an integer result records nothing


def test_grad_mode_is_per_thread():
    import threading
    x = leaf()
    seen = {}

    def other():
        seen["enabled"] = gt.is_grad_enabled()
        with gt.no_grad():
            seen["inside"] = (x * 2.0).requires_grad
            barrier.wait()  # the main thread records while this one is in no_grad
            barrier.wait()

    barrier = threading.Barrier(2)
    t = threading.Thread(target=other)
    t.start()
    barrier.wait()
    recorded = (x * 2.0).requires_grad
    barrier.wait()
    t.join()
    assert seen == {"enabled": True, "inside": False} and recorded


def test_the_backward_pass_takes_any_sequence_of_inputs_and_refuses_non_tensor_roots():
    # gt's nodes hold tuples; the client core's backward pass copies any other sequence.
    x = leaf()
    y = x * 2.0
    z = gt.Tensor(y._h, y.shape, y.dtype)
    z.requires_grad = True
    z._node = gt.autograd.Node(lambda g, r, inputs, attrs: (g * 3.0,), [x], None, (None, None))
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(A.shape, 3.0))
    with pytest.raises(TypeError):
        gt.autograd._run([object()], [gt.ones(())], False, False, None)


# In-place writes to tensors with history. An op recorded before the write read the state
# before it: its gradient must reach that state's history, and use that state's values. The
# expected gradients are PyTorch's (closed forms of x = ones(3)).
def _inplace_case(write):
    x = gt.ones(3, requires_grad=True)
    y = x * 3
    z = y * 2  # recorded before the write: reads y = 3x
    write(y)
    (y.sum() + z.sum()).backward()
    return x.grad.numpy()


def test_an_in_place_op_leaves_earlier_readers_their_state():
    # y.mul_(2): y = 6x; z = 6x; d/dx = 12 (GT gave 18: z's gradient went through the mul_)
    np.testing.assert_allclose(_inplace_case(lambda y: y.mul_(2)), [12, 12, 12])
    # y[1:] = y[1:] * 2: y = (3x, 6x, 6x), z = 6x
    np.testing.assert_allclose(_inplace_case(lambda y: y.__setitem__(slice(1, None), y[1:] * 2)), [9, 12, 12])
    # y[0].add_(1) through the view y[0]
    np.testing.assert_allclose(_inplace_case(lambda y: y[0].add_(1)), [9, 9, 9])
    # y[1:] = y[1:] * y[1:] (PyTorch refuses: a saved view was modified): y = (3x, 9x^2, 9x^2)
    np.testing.assert_allclose(_inplace_case(lambda y: y.__setitem__(slice(1, None), y[1:] * y[1:])), [9, 24, 24])


def test_an_in_place_add_of_a_function_of_itself():
    # y += y * y with y = x: d/dx (x + x^2) = 1 + 2x; GT gave 1 (PyTorch refuses: y is saved)
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y += y * y
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 5])
    # the formula of an op recorded before the write reads the values before it: w's
    # gradient in z = y * w is y's old value
    x, w = gt.tensor([2.0], requires_grad=True), gt.tensor([5.0], requires_grad=True)
    y = x * 1
    z = y * w
    y.mul_(10)
    z.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2])
    np.testing.assert_allclose(x.grad.numpy(), [5])


def test_writes_to_a_non_leaf_record_history():
    x = gt.ones(3, requires_grad=True)
    h = x * 2
    h[0] = 0.0  # PyTorch's CopySlices: the written entry has no gradient
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 2, 2])
    assert h.grad_fn is not None
    w = gt.zeros(3)
    w.add_(gt.ones(3, requires_grad=True))  # x.add_(w): x joins w's history
    assert w.requires_grad and w.grad_fn is not None
    # integer-index writes on a tensor with history record it (the written rows get no gradient)
    y = x * 2
    y[[0, 2]] = 1.0
    (g,) = gt.autograd.grad(y.sum(), x)
    assert g.numpy().tolist() == [0.0, 2.0, 0.0]
    # a view of a leaf that requires grad: PyTorch's error, before anything changes
    p = gt.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        p[0].add_(1)
    assert p.detach().numpy().tolist() == [0, 0, 0]


def test_double_backward_through_a_function_that_saves_its_dropped_outputs():
    # custom_function_double_backward_tutorial's Sinh: three outputs, two of them saved and
    # dropped at once (sinh(x) = Sinh.apply(x)[0]); PyTorch's saved outputs keep their graph,
    # so the first derivative (create_graph) is differentiable again
    class Sinh(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx, expnegx = gt.exp(x), gt.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, grad_exp, grad_negexp):
            expx, expnegx = ctx.saved_tensors
            return grad_out * (expx + expnegx) / 2 + grad_exp * expx - grad_negexp * expnegx

    x = gt.tensor([0.5, 1.0], dtype=gt.float64, requires_grad=True)
    (g,) = gt.autograd.grad(Sinh.apply(x)[0].sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), np.cosh([0.5, 1.0]))
    (g2,) = gt.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), np.sinh([0.5, 1.0]))
    assert gt.autograd.gradgradcheck(lambda a: Sinh.apply(a)[0], (x,))


def test_functions_leave_no_reference_cycles():
    # A node's backward function that referred to itself (a cycle) kept each step's saved
    # tensors until Python's cyclic collector ran: their frees came at random points, the
    # dispatcher's plan cache missed a quarter of char_gpt's steps, and the step took 10 % more.
    import gc

    class Sinh(gt.autograd.Function):  # saves outputs, as the double-backward case above
        @staticmethod
        def forward(ctx, x):
            e = gt.exp(x)
            ctx.save_for_backward(e)
            return e - 1.0 / e, e

        @staticmethod
        def backward(ctx, g, ge):
            (e,) = ctx.saved_tensors
            return g * (e + 1.0 / e) + ge * e

    x = gt.randn(3, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            (x.log_softmax(0).sum() + Sinh.apply(x)[0].sum()).backward()
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_grad_with_respect_to_a_non_leaf_leaves_its_graph():
    # autograd.grad(out, x) for a non-leaf x ran (and freed) x's own node though nothing above
    # x was wanted, so a second grad with respect to x raised "backward through the graph a
    # second time" (gradcheck of the double-backward tutorial's x = tensor(1.).clone())
    x = gt.tensor(2.0, requires_grad=True).clone()
    (g1,) = gt.autograd.grad(x * x, x)
    (g2,) = gt.autograd.grad(x * 3, x)
    assert g1.item() == 4.0 and g2.item() == 3.0
    assert gt.autograd.gradgradcheck(lambda a: a.exp(), (gt.tensor(1.0, dtype=gt.float64, requires_grad=True).clone(),))


def test_variable_and_accumulate_grad_as_pytorch():
    from gt.autograd import Variable
    x = Variable(gt.ones(2), requires_grad=True)
    assert x.requires_grad and isinstance(x, Variable) and not isinstance(3, Variable)
    (acc, _), _ = (x * 2).grad_fn.next_functions
    assert acc.next_functions == ()  # the autograd tutorial walks next_functions to the leaves
    # a new leaf on the values: the argument is left as it is (pytorch-grad-cam's FullGrad wraps
    # the user's input), and a non-leaf's is detached
    data = gt.ones(2)
    v = Variable(data, requires_grad=True)
    assert v is not data and not data.requires_grad and v.is_leaf
    y = v * 2
    w = Variable(y)
    assert not w.requires_grad and w.grad_fn is None and w.tolist() == [2.0, 2.0]


def test_writing_with_integer_indices_records_the_gradient():
    # vit-pytorch's MAE: tokens[batch_range, idx] = values, into a plain tensor and into one with
    # history; the gradient reaches the values and the rows not replaced.
    src = gt.arange(6.0).reshape(1, 3, 2).requires_grad_()
    buf = gt.zeros(1, 4, 2)
    buf[gt.arange(1)[:, None], gt.tensor([[2, 0, 3]])] = src * 2
    assert buf.requires_grad
    (buf * gt.arange(8.0).reshape(1, 4, 2)).sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), 2 * np.array([[[4, 5], [0, 1], [6, 7]]]))
    base = gt.ones(1, 4, 2, requires_grad=True)
    ones = gt.ones(1, 2, 2, requires_grad=True)
    x = base * 1.0
    x[gt.arange(1)[:, None], gt.tensor([[1, 3]])] = ones * 3
    x.sum().backward()
    assert ones.grad.numpy().tolist() == [[[3.0, 3.0], [3.0, 3.0]]]
    assert base.grad.numpy()[0, :, 0].tolist() == [1.0, 0.0, 1.0, 0.0]  # replaced rows get none
    with pytest.raises(RuntimeError, match="leaf Variable"):
        base[gt.tensor([0])] = 1.0


def test_a_broadcast_operands_gradient_sums_long_runs_precisely():
    # The client core's gradient of a broadcast operand (a bias) sums N x H x W elements: in
    # float64 from 4096 on, as gt.sum's (4M elements of 0.1 in float32 lost ~1 % before).
    n = 1 << 22
    b = gt.zeros(1, requires_grad=True)
    ((gt.zeros(n) + b) * 0.1).sum().backward()
    assert b.grad.dtype == gt.float32 and abs(b.grad.item() / (0.1 * n) - 1) < 1e-6
    conv = gt.nn.Conv2d(3, 4, 3, padding=1)
    (conv(gt.ones(64, 3, 64, 64)) * 0.1).sum().backward()
    np.testing.assert_allclose(conv.bias.grad.numpy(), 0.1 * 64 * 64 * 64, rtol=1e-6)


def test_grad_through_a_released_graph_says_so():
    # dreamer: a second autograd.grad through y's released graph named the input "not used"
    th = gt.tensor([1.0, 2.0], requires_grad=True)
    y = gt.tanh(th) * 3
    gt.autograd.grad(y.sum(), th)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        gt.autograd.grad((y * 2).sum(), th)
    with pytest.raises(RuntimeError, match="not have been used"):
        gt.autograd.grad((th * 2).sum(), gt.ones(1, requires_grad=True))

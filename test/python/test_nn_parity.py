"""torch.nn behaviour found different from PyTorch 2.15 by running public code families side
by side (issue 24: bentrevett's seq2seq notebooks, the Annotated Transformer, aladdinpersson's
GANs, speech models); expected values are PyTorch's, or finite differences."""
import warnings

import numpy as np
import pytest

import gt
import gt.nn as nn
import gt.nn.functional as F


def test_cross_entropy_with_every_target_ignored_has_a_zero_gradient():
    # PyTorch: the loss is NaN (0 / 0) and the gradient zero, so a step leaves the model finite
    x = gt.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]], requires_grad=True)
    for kwargs in ({}, {"label_smoothing": 0.1}, {"weight": gt.tensor([1.0, 2.0, 3.0])}):
        x.grad = None
        loss = F.cross_entropy(x, gt.tensor([1, 1]), ignore_index=1, **kwargs)
        loss.backward()
        assert np.isnan(loss.item()) and np.all(x.grad.numpy() == 0), kwargs
    x.grad = None
    loss = F.cross_entropy(x, gt.tensor([1, 2]), ignore_index=1)
    loss.backward()
    assert loss.item() == pytest.approx(1.9643688201904297, rel=1e-6)
    assert np.allclose(x.grad.numpy(), [[0, 0, 0], [0.62853, 0.23122, -0.85976]], atol=1e-5)


def test_embedding_from_pretrained():
    w = gt.arange(12, dtype=gt.float32).reshape(4, 3)
    e = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    assert repr(e) == "Embedding(4, 3, padding_idx=0)" and e.weight.requires_grad
    assert e(gt.tensor([0, 2])).tolist() == [[0.0, 1.0, 2.0], [6.0, 7.0, 8.0]]
    assert not nn.Embedding.from_pretrained(w).weight.requires_grad
    bag = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    assert bag(gt.tensor([[0, 2]])).tolist() == [[6.0, 8.0, 10.0]] and not bag.weight.requires_grad
    with pytest.raises((ValueError, AssertionError), match="2-dimensional"):  # (PyTorch's: an assert)
        nn.Embedding.from_pretrained(gt.ones(3))


def test_clipping_scales_gradients_in_place():
    lin = nn.Linear(4, 3)
    with gt.no_grad():
        lin.weight.copy_(gt.arange(12.0).reshape(3, 4) / 10)
        lin.bias.copy_(gt.tensor([0.1, -0.2, 0.3]))
    lin(gt.arange(8.0).reshape(2, 4)).pow(2).sum().backward()
    g = lin.weight.grad
    total = nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
    assert total.item() == pytest.approx(623.1027, rel=1e-6)
    assert g is lin.weight.grad and g.norm().item() == pytest.approx(0.99442, rel=1e-4)  # the held tensor too
    grads = [p.grad for p in lin.parameters()]
    assert nn.utils.get_total_norm(grads).item() == pytest.approx(1.0, rel=1e-5)
    nn.utils.clip_grads_with_norm_(lin.parameters(), 0.5, nn.utils.get_total_norm(grads))
    assert g.norm().item() == pytest.approx(0.49721, rel=1e-4)
    nn.utils.clip_grad_value_(lin.parameters(), 0.01)
    assert g.abs().max().item() == pytest.approx(0.01)
    assert nn.utils.get_total_norm([gt.ones(3), gt.ones(2, dtype=gt.float64)], 3).item() == pytest.approx(5 ** (1 / 3))


def test_a_1x1_convolution_with_padding():
    rng = np.random.default_rng(0)
    for n in (1, 2):
        x = gt.tensor(rng.standard_normal((1, 2) + (5,) * n).astype(np.float32))
        w = gt.tensor(rng.standard_normal((3, 2) + (1,) * n).astype(np.float32), requires_grad=True)
        y = getattr(F, f"conv{n}d")(x, w, padding=2)
        assert y.shape == (1, 3) + (9,) * n
        inner = (slice(None), slice(None)) + (slice(2, 7),) * n
        expected = np.einsum("oc,nc...->no...", w.detach().numpy().reshape(3, 2), x.numpy())
        assert np.allclose(y.detach().numpy()[inner], expected, atol=1e-5) and np.abs(y.detach().numpy()).sum() \
            == pytest.approx(np.abs(expected).sum(), rel=1e-5)  # the border is zero
        y.sum().backward()
        assert np.allclose(w.grad.numpy().reshape(3, 2), np.tile(x.numpy().sum(axis=tuple(range(2, 2 + n)))[0], (3, 1)))


def test_lstm_second_derivatives_match_finite_differences():
    # a gradient penalty through nn.LSTM: d/dx of ||d(out^2)/dx||^2, against central differences
    gt.set_default_dtype(gt.float64)
    try:
        m = nn.LSTM(2, 3)
        with gt.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(gt.sin(gt.arange(p.numel(), dtype=gt.float64) * 0.7 + i).reshape(p.shape) * 0.5)
        x0 = gt.tensor([[[0.3, -0.2]], [[0.5, 0.1]], [[-0.4, 0.6]]])

        def penalty(x):
            x = x.clone().requires_grad_(True)
            gx, = gt.autograd.grad(m(x)[0].pow(2).sum(), x, create_graph=True)
            return gx.pow(2).sum(), x

        pen, x = penalty(x0)
        pen.backward()
        w_grad = m.weight_hh_l0.grad.numpy().copy()
        fd = []
        for k in range(6):
            d = np.zeros(6)
            d[k] = 1e-6
            d = gt.tensor(d.reshape(x0.shape))
            fd.append((penalty(x0 + d)[0].item() - penalty(x0 - d)[0].item()) / 2e-6)
        assert np.allclose(x.grad.numpy().ravel(), fd, atol=1e-8)
        # and the recurrent weight's, the same way
        w0 = m.weight_hh_l0.detach().clone()
        with gt.no_grad():
            m.weight_hh_l0[0, 0] += 1e-6
        up = penalty(x0)[0].item()
        with gt.no_grad():
            m.weight_hh_l0.copy_(w0)
            m.weight_hh_l0[0, 0] -= 1e-6
        down = penalty(x0)[0].item()
        assert w_grad[0, 0] == pytest.approx((up - down) / 2e-6, abs=1e-8)
    finally:
        gt.set_default_dtype(gt.float32)


def test_cuda_autocast_without_gpu_workers_is_off_as_pytorchs():
    if gt.cuda.is_available():
        pytest.skip("the session has GPU workers")
    lin = nn.Linear(4, 3)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with gt.autocast("cuda"):
            y = lin(gt.ones(1, 4))
            assert not gt.is_autocast_enabled("cuda")
    assert y.dtype == gt.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gt.cuda.amp.autocast():
            assert F.conv2d(gt.ones(1, 1, 3, 3), gt.ones(1, 1, 3, 3)).dtype == gt.float32


def test_autograd_grad_with_batched_grad_outputs():
    # torch.autograd.grad(..., is_grads_batched=True): a Jacobian's rows at once (zuko's CNF trace)
    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    jac, = gt.autograd.grad(x ** 2, x, gt.eye(3), is_grads_batched=True)
    assert jac.tolist() == [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]]
    w = gt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    gw, gx = gt.autograd.grad((w * x[:2]).sum(1), (w, x), gt.eye(2), is_grads_batched=True)
    assert gw.tolist() == [[[1.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 2.0]]]
    assert gx.tolist() == [[1.0, 2.0, 0.0], [3.0, 4.0, 0.0]]


def test_recurrent_layers_print_and_warn_as_pytorchs():
    assert repr(nn.GRU(3, 4, bias=False)) == "GRU(3, 4, bias=False)"
    assert repr(nn.LSTM(3, 4, num_layers=2, dropout=0.2, bidirectional=True, batch_first=True, proj_size=2)) == \
        "LSTM(3, 4, proj_size=2, num_layers=2, batch_first=True, dropout=0.2, bidirectional=True)"
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.5)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        nn.GRU(2, 3)(gt.zeros(4, 1, 5))
    with pytest.warns(UserWarning, match="'mean' divides the total loss by both the batch size"):
        nn.KLDivLoss(reduction="mean")(gt.zeros(2, 3), gt.ones(2, 3) / 3)


def test_higher_order_derivatives_of_digamma_and_lgamma():
    x = gt.tensor([0.5, 1.0, 3.0], dtype=gt.float64, requires_grad=True)
    g1, = gt.autograd.grad(gt.digamma(x).sum(), x, create_graph=True)
    g2, = gt.autograd.grad(g1.sum(), x)
    polygamma2 = [-16.828796644234316, -2.404113806319188, -0.15411380631918856]  # (scipy.special.polygamma(2, x))
    assert np.allclose(g2.numpy(), polygamma2, rtol=1e-12)
    l1, = gt.autograd.grad(gt.lgamma(x).sum(), x, create_graph=True)
    l2, = gt.autograd.grad(l1.sum(), x, create_graph=True)
    l3, = gt.autograd.grad(l2.sum(), x)
    assert np.allclose(l3.numpy(), polygamma2, rtol=1e-12)


def test_rms_norm_default_eps_follows_the_dtype():
    x = gt.tensor([[1e-3, -2e-3, 1e-3]], dtype=gt.float64)
    expected = x.numpy() / np.sqrt((x.numpy() ** 2).mean() + np.finfo(np.float64).eps)
    assert np.allclose(F.rms_norm(x, (3,)).numpy(), expected, rtol=1e-14)
    assert np.allclose(nn.RMSNorm(3, dtype=gt.float64)(x).detach().numpy(), expected, rtol=1e-14)


def test_full_backward_hooks_on_modules_returning_their_input():
    for m in (nn.Identity(), nn.Dropout(0.5).eval(), nn.Flatten()):
        seen = []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi[0].tolist(), go[0].tolist())))
        x = gt.ones(1, 3, requires_grad=True)
        (m(x) * gt.tensor([1.0, 2.0, 3.0])).sum().backward()
        assert x.grad.tolist() == [[1.0, 2.0, 3.0]] and seen == [([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])], type(m)


def test_adagrad_state_exists_before_the_first_step():
    p = nn.Parameter(gt.ones(3))
    opt = gt.optim.Adagrad([p], initial_accumulator_value=0.5)
    assert opt.state[p]["step"] == 0 and opt.state[p]["sum"].tolist() == [0.5, 0.5, 0.5]
    p.grad = gt.ones(3)
    opt.step()
    assert opt.state[p]["step"] == 1 and opt.state[p]["sum"].tolist() == [1.5, 1.5, 1.5]


def test_rnn_flat_weights_can_be_assigned():
    # the `higher` library swaps in non-leaf weights this way
    rnn = nn.GRU(2, 3)
    rnn._flat_weights = [gt.zeros_like(w) for w in rnn._flat_weights]
    out, h = rnn(gt.ones(4, 1, 2))
    assert np.all(h.detach().numpy() == 0) and len(list(rnn.parameters())) == 4


def test_pdist():
    x = gt.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    d = gt.pdist(x)
    assert d.tolist() == [5.0, 0.0, 5.0] and F.pdist(x, p=1).tolist() == [7.0, 0.0, 7.0]
    d.sum().backward()
    assert np.allclose(x.grad.numpy(), [[-0.6, -0.8], [1.2, 1.6], [-0.6, -0.8]])
    assert F.pdist(gt.ones(1, 3)).shape == (0,)


def test_an_in_place_write_under_no_grad_keeps_the_history():
    # PyTorch: the gradient passes through the write (TabNet's sparsemax does `input -= max` in forward)
    w = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w * 1.0
    with gt.no_grad():
        h -= 1.0
        h.clamp_(max=1.5)
    assert h.requires_grad and h.grad_fn is not None and h.tolist() == [0.0, 1.0, 1.5]
    (h * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]

    class Shift(gt.autograd.Function):  # forward writes its input (runs under no_grad)
        @staticmethod
        def forward(ctx, x):
            x -= x.max()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Triple(gt.autograd.Function):  # PyTorch's in-place pattern with mark_dirty
        @staticmethod
        def forward(ctx, x):
            x.mul_(3.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    for fn, values, grad in ((Shift, [-4.0, -2.0, 0.0], [2.0, 2.0, 2.0]), (Triple, [3.0, 6.0, 9.0], [3.0, 3.0, 3.0])):
        w = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = fn.apply(w * 1.0)
        y.sum().backward()
        assert y.tolist() == values and w.grad.tolist() == grad, fn


def test_an_overwrite_in_place_gives_the_old_values_a_zero_gradient():
    # PyTorch records FillBackward/ZeroBackward: the overwritten values pass no gradient, the tensor
    # stays a non-leaf (labml's LabelSmoothingLoss: clone -> fill_ -> scatter_ raised "a leaf
    # Variable ..."; zero_() passed the gradient through unchanged)
    for overwrite in (lambda b: b.zero_(), lambda b: b.fill_(0.0), lambda b: b.copy_(gt.zeros(2)),
                      lambda b: b.normal_(), lambda b: b.uniform_()):
        c = gt.tensor([1.0, 2.0], requires_grad=True)
        buf = (c * 3).clone()
        overwrite(buf)
        assert buf.requires_grad and not buf.is_leaf
        buf[0] = c[1] * 5  # (a later in-place op works on it)
        buf.sum().backward()
        assert c.grad.tolist() == [0.0, 5.0]
    w = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.zero_()
    with gt.no_grad():
        w.zero_()
    assert w.tolist() == [0.0, 0.0]


def test_detach_in_place_keeps_the_graph_of_earlier_results():
    # pykeen resets its regularizer with term.detach_().zero_() after adding it to the loss: the
    # loss's gradient through the term must stay (it was cut: silently wrong embeddings)
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    for reset in (lambda t: t.detach_(), lambda t: t.detach_().zero_()):
        w.grad = None
        t = w * w
        r = 0.5 * t
        reset(t)
        assert t.is_leaf and not t.requires_grad
        r.sum().backward()
        assert w.grad.tolist() == [1.0, 2.0]


def test_clone_after_an_in_place_op_differentiates_the_values_it_copied():
    # dreamer's ContDist.sample clips in place, then static_scan clones: the clone's gradient left
    # out the write (actor gradients 70% off). Expected values: PyTorch's.
    th = gt.tensor([2.0, 0.5, -3.0], requires_grad=True)
    out = th * 1.5
    out *= (1.0 / gt.clip(gt.abs(out), min=1.0)).detach()
    (g,) = gt.autograd.grad(out.clone().sum(), th)
    np.testing.assert_allclose(g.numpy(), [0.5, 1.5, 1 / 3], rtol=1e-6)
    out = th * 1.5
    out.add_(th * th)
    (g,) = gt.autograd.grad(out.clone().sum(), th)
    np.testing.assert_allclose(g.numpy(), [5.5, 2.5, -4.5], rtol=1e-6)
    before = th * 1.5
    copy = before.clone()  # a clone made before the write still differentiates the old values
    before.mul_(2.0)
    (g,) = gt.autograd.grad(copy.sum(), th)
    np.testing.assert_allclose(g.numpy(), [1.5, 1.5, 1.5], rtol=1e-6)


def test_state_dict_entries_share_the_modules_values_and_parameters_is_walked_once():
    # ultralytics' ModelEMA updates ema.state_dict() entries in place (they were copies: the EMA
    # never moved); dreamer walks one parameters() twice (the second loop, a weight decay, runs
    # in PyTorch over an exhausted generator: never)
    model = gt.nn.Sequential(gt.nn.Linear(2, 3), gt.nn.BatchNorm1d(3))
    sd = model.state_dict()
    sd["0.bias"].zero_()
    sd["1.running_mean"].add_(2.0)
    assert model[0].bias.tolist() == [0.0, 0.0, 0.0] and model[1].running_mean.tolist() == [2.0, 2.0, 2.0]
    assert not sd["0.weight"].requires_grad and model[0].weight.requires_grad
    params = model.parameters()
    assert next(params) is model[0].weight
    assert len(list(params)) == 3 and list(params) == []  # (the rest once, then nothing)
    both = model[0].parameters() + model[1].parameters()  # (the original GT's idiom)
    assert len(both) == 4


def test_writes_through_data_views_reach_the_tensor_and_keep_its_history():
    # torch-struct: x.data[0].fill_(...) on a .data nobody keeps (the write was lost), and two
    # masked_fill_ on views of v.data (v a view with history: v's gradient became None)
    x = gt.zeros(2, 2)
    x.data[0].fill_(1.0)
    x.data[:, 1].add_(1.0)
    assert x.tolist() == [[1.0, 2.0], [0.0, 1.0]]
    w = gt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = gt.zeros(2, 4)
    b[0] = w * 1
    v = b.view(2, 2, 2)
    d = v.data
    mask = gt.tensor([False, True]).view(2, 1)
    d[0].masked_fill_(mask, -5.0)
    d[1].masked_fill_(mask, 0.0)
    assert v.flatten().tolist() == [1.0, 2.0, -5.0, -5.0, 0.0, 0.0, 0.0, 0.0]
    (g,) = gt.autograd.grad(v.sum(), w)
    assert g.tolist() == [1.0, 1.0, 1.0, 1.0]  # (.data writes change values, never the graph)

"""nn.MultiheadAttention and the Transformer layers (issue 24) against NumPy float64 forms of
Vaswani et al. 2017 as PyTorch computes them, with PyTorch's parameter names; plus
ParameterList / ParameterDict and gt.compile."""
import numpy as np
import pytest

import gt

nn = gt.nn
rng = np.random.default_rng(0)


def params(module):
    return {k: v.numpy().astype(np.float64) for k, v in module.state_dict().items()}


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mha_ref(p, q, k, v, heads, mask=None, prefix=""):
    """(L, N, E) inputs -> (output (L, N, E), weights (N, heads, L, S)); a bool mask is True where
    attention is not allowed, a float one is added."""
    E = q.shape[-1]
    D = E // heads
    W, b = p[prefix + "in_proj_weight"], p[prefix + "in_proj_bias"]

    def split(x, i):  # (T, N, E) -> (N, heads, T, D)
        y = x @ W[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E]
        return y.reshape(x.shape[0], x.shape[1], heads, D).transpose(1, 2, 0, 3)

    qh, kh, vh = split(q, 0), split(k, 1), split(v, 2)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(D)
    if mask is not None:
        s = np.where(mask, -np.inf, s) if mask.dtype == bool else s + mask
    w = softmax(s)
    out = (w @ vh).transpose(2, 0, 1, 3).reshape(q.shape)
    return out @ p[prefix + "out_proj.weight"].T + p[prefix + "out_proj.bias"], w


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b


def test_multihead_attention_matches_the_formula():
    E, H, L, S, N = 16, 4, 5, 7, 2
    m = nn.MultiheadAttention(E, H)
    assert sorted(m.state_dict()) == ["in_proj_bias", "in_proj_weight", "out_proj.bias", "out_proj.weight"]
    p = params(m)
    q, kv = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E))
    pad = np.zeros((N, S), bool)
    pad[1, 5:] = True
    bias = rng.standard_normal((L, S))
    out, w = m(gt.tensor(q, dtype=gt.float32), gt.tensor(kv, dtype=gt.float32), gt.tensor(kv, dtype=gt.float32),
               key_padding_mask=gt.tensor(pad), attn_mask=gt.tensor(bias, dtype=gt.float32))
    want, want_w = mha_ref(p, q, kv, kv, H, bias[None, None] + np.where(pad, -np.inf, 0)[:, None, None, :])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.numpy(), want_w.mean(1), rtol=1e-4, atol=1e-6)
    assert w.numpy()[1, :, 5:].max() == 0  # padded keys get no weight
    # batch_first, causal, per-head weights; unbatched input
    bf = nn.MultiheadAttention(E, H, batch_first=True)
    p = params(bf)
    x = rng.standard_normal((N, L, E))
    out, w = bf(*(gt.tensor(x, dtype=gt.float32),) * 3, is_causal=True, average_attn_weights=False)
    causal = np.triu(np.ones((L, L), bool), 1)
    want, want_w = mha_ref(p, x.transpose(1, 0, 2), x.transpose(1, 0, 2), x.transpose(1, 0, 2), H, causal)
    np.testing.assert_allclose(out.numpy(), want.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-4, atol=1e-6)
    single, none = bf(*(gt.tensor(x[0], dtype=gt.float32),) * 3, need_weights=False)
    assert none is None and single.shape == (L, E)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(10, 3)


def test_multihead_attention_kdim_vdim_bias_kv_and_zero_attn():
    # PyTorch's F.multi_head_attention_forward: separate q/k/v projections for kdim/vdim, then
    # bias_k / bias_v appended to the projected keys and values, then a zero key and value per
    # head; the masks get a column that allows each added position.
    E, H, L, S, N, kd, vd = 8, 2, 3, 5, 2, 6, 4
    m = nn.MultiheadAttention(E, H, add_bias_kv=True, add_zero_attn=True, kdim=kd, vdim=vd, dtype=gt.float64)
    assert list(m.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                                    "bias_v", "out_proj.weight", "out_proj.bias"]
    assert m.in_proj_weight is None and m.bias_k.shape == (1, 1, E)
    p = params(m)
    q, k, v = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, kd)), rng.standard_normal((S, N, vd))
    mask = rng.standard_normal((L, S)) > 1.0
    out, w = m(gt.tensor(q), gt.tensor(k), gt.tensor(v), attn_mask=gt.tensor(mask), average_attn_weights=False)
    b = p["in_proj_bias"]
    qp = q @ p["q_proj_weight"].T + b[:E]
    kp = np.concatenate([k @ p["k_proj_weight"].T + b[E:2 * E], np.broadcast_to(p["bias_k"], (1, N, E)),
                         np.zeros((1, N, E))])
    vp = np.concatenate([v @ p["v_proj_weight"].T + b[2 * E:], np.broadcast_to(p["bias_v"], (1, N, E)),
                         np.zeros((1, N, E))])
    split = lambda x: x.reshape(x.shape[0], N, H, E // H).transpose(1, 2, 0, 3)
    s = split(qp) @ split(kp).transpose(0, 1, 3, 2) / np.sqrt(E // H)
    want_w = softmax(np.where(np.concatenate([mask, np.zeros((L, 2), bool)], 1), -np.inf, s))
    want = (want_w @ split(vp)).transpose(2, 0, 1, 3).reshape(L, N, E) @ p["out_proj.weight"].T + p["out_proj.bias"]
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    assert w.shape == (N, H, L, S + 2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_the_formula_and_trains(norm_first):
    E, H, F, L, N = 16, 4, 32, 6, 2
    layer = nn.TransformerEncoderLayer(E, H, F, dropout=0.0, norm_first=norm_first).eval()
    p = params(layer)
    x = rng.standard_normal((L, N, E))
    mask = nn.Transformer.generate_square_subsequent_mask(L)
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((L, L), -np.inf), 1))
    y = layer(gt.tensor(x, dtype=gt.float32), src_mask=mask).numpy()

    def sa(h):
        return mha_ref(p, h, h, h, H, mask.numpy().astype(np.float64), "self_attn.")[0]

    def ff(h):
        return np.maximum(h @ p["linear1.weight"].T + p["linear1.bias"], 0) @ p["linear2.weight"].T + p["linear2.bias"]

    n1 = lambda h: layer_norm(h, p["norm1.weight"], p["norm1.bias"])  # noqa: E731
    n2 = lambda h: layer_norm(h, p["norm2.weight"], p["norm2.bias"])  # noqa: E731
    if norm_first:
        h = x + sa(n1(x))
        want = h + ff(n2(h))
    else:
        h = n1(x + sa(x))
        want = n2(h + ff(h))
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    xt = gt.tensor(x, dtype=gt.float32, requires_grad=True)
    layer.train()(xt).sum().backward()
    assert xt.grad.shape == x.shape and layer.self_attn.in_proj_weight.grad is not None


def test_transformer_stacks_have_pytorchs_parameter_names():
    model = nn.Transformer(16, 4, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=32, dropout=0.0)
    keys = set(model.state_dict())
    for k in ("encoder.layers.1.self_attn.in_proj_weight", "encoder.norm.weight", "decoder.layers.0.multihead_attn."
              "out_proj.bias", "decoder.layers.0.norm3.bias", "decoder.norm.bias"):
        assert k in keys
    a, b = model.encoder.layers[0].linear1.weight.numpy(), model.encoder.layers[1].linear1.weight.numpy()
    assert not np.array_equal(a, b)  # the copies are re-initialised (xavier), not shared
    src, tgt = gt.randn(7, 2, 16), gt.randn(5, 2, 16)
    out = model(src, tgt, tgt_mask=nn.Transformer.generate_square_subsequent_mask(5))
    assert out.shape == (5, 2, 16)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, activation="gelu"), 2)
    assert enc(gt.randn(2, 7, 16), src_key_padding_mask=gt.tensor(np.eye(2, 7, dtype=bool))).shape == (2, 7, 16)


def test_parameter_list_and_dict_register_their_parameters():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(gt.ones(2)), gt.zeros(3)])
            self.pd = nn.ParameterDict({"scale": gt.ones(1)})

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["ps.0", "ps.1", "pd.scale"]
    assert all(p.requires_grad for p in m.parameters())  # plain tensors become Parameters
    m.ps.append(gt.ones(4))
    m.pd["shift"] = gt.zeros(1)
    assert len(m.ps) == 3 and list(m.pd.keys()) == ["scale", "shift"] and "shift" in m.pd
    assert sorted(m.state_dict()) == ["pd.scale", "pd.shift", "ps.0", "ps.1", "ps.2"]
    opt = gt.optim.SGD(m.parameters(), lr=0.5)
    (m.ps[0].sum() + m.pd["scale"].sum() * 2).backward()
    opt.step()
    np.testing.assert_allclose(m.pd["scale"].numpy(), [0.0])
    with pytest.raises(TypeError, match="hold tensors"):
        m.ps.append(3)


def test_compile_returns_the_model_and_makes_its_regions_hot_at_once():
    # A region seen once is not hot (GT_HOT_AFTER is 2); under gt.compile it is, the first time.
    # Two models of one structure with sizes no other test uses: called once each, plain and
    # compiled, the compiled one marks more regions hot (all of its own; the plain one only
    # those whose structure and sizes some earlier test happened to make too).
    def fresh(width):
        return nn.Sequential(nn.Linear(7, width), nn.GELU(), nn.Linear(width, 13), nn.Tanh())

    x = gt.randn(19, 7)

    def hot_after_one_call(model):
        before = gt.debug.stats()["regions_marked_hot"]
        y = model(x).numpy()
        return gt.debug.stats()["regions_marked_hot"] - before, y

    plain_hot, _ = hot_after_one_call(fresh(37))
    model = fresh(41)
    compiled = gt.compile(model)
    # an OptimizedModule holding the model as _orig_mod, as torch.compile's
    from gt import _dynamo
    assert isinstance(compiled, _dynamo.eval_frame.OptimizedModule) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True] * len(list(model.parameters()))
    model.block_size = 8  # attributes the wrapper does not have are the model's
    assert compiled.block_size == 8 and repr(compiled).startswith("OptimizedModule(\n  (_orig_mod): Sequential(")
    compiled.eval()
    assert not model.training
    compiled.train()
    compiled_hot, y = hot_after_one_call(compiled)
    assert compiled_hot >= 2 and compiled_hot > plain_hot
    with gt.no_grad():
        reference = gt.tanh(model[2](gt.nn.functional.gelu(model[0](x))))
    np.testing.assert_allclose(reference.numpy(), y, rtol=1e-5, atol=1e-6)
    f = gt.compile(lambda a: (a * 2 + 1).exp().sum())
    assert f(gt.ones(3)).item() == pytest.approx(3 * np.exp(3), rel=1e-6)
    assert gt.compile(disable=True)(model) is model


def test_scaled_dot_product_attention_takes_dropout_p():
    q = gt.randn(2, 3, 5, 4)
    plain = gt.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.0, is_causal=True)
    gt.manual_seed(1)
    dropped = gt.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5, is_causal=True)
    assert dropped.shape == plain.shape and not np.allclose(dropped.numpy(), plain.numpy())
    # the first query sees only itself: its weight 1 is dropped (0) or scaled to 2
    first = dropped.numpy()[:, :, 0] / plain.numpy()[:, :, 0]
    assert set(np.round(first.ravel(), 4)) <= {0.0, 2.0}


def test_transformer_encoder_warns_as_pytorchs_about_nested_tensors():
    # PyTorch's warning, printed by word_language_model and the transformer tutorial (GT has no
    # nested tensors; use_nested_tensor says what PyTorch's would)
    import warnings
    with pytest.warns(UserWarning, match=r"because encoder_layer.self_attn.batch_first was not True\(use batch_first"):
        enc = gt.nn.TransformerEncoder(gt.nn.TransformerEncoderLayer(8, 2, 16), 2)
    assert enc.use_nested_tensor is False
    with pytest.warns(UserWarning, match="because encoder_layer.norm_first was True"):
        gt.nn.TransformerEncoder(gt.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = gt.nn.TransformerEncoder(gt.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
        gt.nn.TransformerEncoder(gt.nn.TransformerEncoderLayer(8, 2, 16), 1, enable_nested_tensor=False)
    assert enc.use_nested_tensor is True

"""nn.RNN, LSTM, GRU and their cells (issue 24) against NumPy float64 forms of their equations
(PyTorch's gate order and parameter names), gradients by central differences, and errors."""
import numpy as np
import pytest

import gt
from test_api import check_grad

nn = gt.nn
rng = np.random.default_rng(0)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def params(m):
    return {k: v.numpy().astype(np.float64) for k, v in m.state_dict().items()}


def lstm_ref(p, x, h, c, suffix="_l0", reverse=False):
    out = [None] * len(x)
    for t in (range(len(x) - 1, -1, -1) if reverse else range(len(x))):
        g = x[t] @ p["weight_ih" + suffix].T + p["bias_ih" + suffix] + h @ p["weight_hh" + suffix].T + p["bias_hh" + suffix]
        i, f, gg, o = np.split(g, 4, -1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
        out[t] = h
    return np.stack(out), h, c


def gru_ref(p, x, h, suffix="_l0"):
    out = []
    for t in range(len(x)):
        gi = x[t] @ p["weight_ih" + suffix].T + p["bias_ih" + suffix]
        gh = h @ p["weight_hh" + suffix].T + p["bias_hh" + suffix]
        (ir, iz, inn), (hr, hz, hn) = np.split(gi, 3, -1), np.split(gh, 3, -1)
        r, z = sigmoid(ir + hr), sigmoid(iz + hz)
        h = (1 - z) * np.tanh(inn + r * hn) + z * h
        out.append(h)
    return np.stack(out), h


def test_lstm_two_layers_bidirectional_matches_the_equations():
    m = nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    names = list(m.state_dict())
    assert names[:8] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
                         "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse"]
    assert m.weight_ih_l1.shape == (20, 10) and np.abs(m.weight_hh_l0.numpy()).max() <= 1 / np.sqrt(5)
    p = params(m)
    x = rng.standard_normal((6, 3, 4))
    h0, c0 = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 3, 5))
    out, (h, c) = m(gt.tensor(x, dtype=gt.float32), (gt.tensor(h0, dtype=gt.float32), gt.tensor(c0, dtype=gt.float32)))
    fw, hf, cf = lstm_ref(p, x, h0[0], c0[0])
    bw, hb, cb = lstm_ref(p, x, h0[1], c0[1], "_l0_reverse", reverse=True)
    layer1 = np.concatenate([fw, bw], -1)
    fw2, hf2, cf2 = lstm_ref(p, layer1, h0[2], c0[2], "_l1")
    bw2, hb2, cb2 = lstm_ref(p, layer1, h0[3], c0[3], "_l1_reverse", reverse=True)
    np.testing.assert_allclose(out.numpy(), np.concatenate([fw2, bw2], -1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), np.stack([hf, hb, hf2, hb2]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), np.stack([cf, cb, cf2, cb2]), rtol=1e-4, atol=1e-5)


def test_lstm_gradients_match_central_differences():
    # The LSTM's backward is written by hand (nn/rnn.py _LSTMLayer): every gradient (input,
    # h0, c0, each weight and bias, both directions, two layers) against the equations'
    # central differences, from a loss that reads the output, h_n and c_n.
    m = nn.LSTM(3, 2, num_layers=2, bidirectional=True).double()
    p = params(m)
    x = rng.standard_normal((4, 2, 3))
    h0, c0 = rng.standard_normal((4, 2, 2)), rng.standard_normal((4, 2, 2))
    w_out, w_h, w_c = rng.standard_normal((4, 2, 4)), rng.standard_normal((4, 2, 2)), rng.standard_normal((4, 2, 2))

    def loss(p, x, h0, c0):
        fw, hf, cf = lstm_ref(p, x, h0[0], c0[0])
        bw, hb, cb = lstm_ref(p, x, h0[1], c0[1], "_l0_reverse", reverse=True)
        layer1 = np.concatenate([fw, bw], -1)
        fw2, hf2, cf2 = lstm_ref(p, layer1, h0[2], c0[2], "_l1")
        bw2, hb2, cb2 = lstm_ref(p, layer1, h0[3], c0[3], "_l1_reverse", reverse=True)
        return ((w_out * np.concatenate([fw2, bw2], -1)).sum() + (w_h * np.stack([hf, hb, hf2, hb2])).sum()
                + (w_c * np.stack([cf, cb, cf2, cb2])).sum())

    xt, ht, ct = (gt.tensor(a, requires_grad=True) for a in (x, h0, c0))
    out, (h, c) = m(xt, (ht, ct))
    ((out * gt.tensor(w_out)).sum() + (h * gt.tensor(w_h)).sum() + (c * gt.tensor(w_c)).sum()).backward()

    def numeric(which, key=None, eps=1e-6):
        args = {"p": {k: v.copy() for k, v in p.items()}, "x": x.copy(), "h0": h0.copy(), "c0": c0.copy()}
        target = args["p"][key] if which == "p" else args[which]
        grad = np.zeros_like(target)
        for i in np.ndindex(target.shape):
            old = target[i]
            target[i] = old + eps
            up = loss(**args)
            target[i] = old - eps
            down = loss(**args)
            target[i] = old
            grad[i] = (up - down) / (2 * eps)
        return grad

    for name, t in (("x", xt), ("h0", ht), ("c0", ct)):
        np.testing.assert_allclose(t.grad.numpy(), numeric(name), rtol=1e-5, atol=1e-7, err_msg=name)
    for key, param in m.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), numeric("p", key), rtol=1e-5, atol=1e-7, err_msg=key)


def test_gru_batch_first_and_unbatched():
    m = nn.GRU(3, 4, batch_first=True)
    p = params(m)
    x = rng.standard_normal((2, 5, 3))
    out, h = m(gt.tensor(x, dtype=gt.float32))
    want, wh = gru_ref(p, x.transpose(1, 0, 2), np.zeros((2, 4)))
    np.testing.assert_allclose(out.numpy(), want.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), wh[None], rtol=1e-4, atol=1e-5)
    single, h1 = m(gt.tensor(x[0], dtype=gt.float32))
    assert single.shape == (5, 4) and h1.shape == (1, 4)
    cell = nn.GRUCell(3, 4)
    cp = {k.replace("_ih", "_ih_l0").replace("_hh", "_hh_l0"): v for k, v in params(cell).items()}
    np.testing.assert_allclose(cell(gt.tensor(x[:, 0], dtype=gt.float32)).numpy(),
                               gru_ref(cp, x[:, :1].transpose(1, 0, 2), np.zeros((2, 4)))[1], rtol=1e-4, atol=1e-5)


def test_rnn_gradients_and_errors():
    rnn = nn.RNN(3, 4, nonlinearity="tanh").double()
    x = rng.standard_normal((4, 2, 3))
    p = params(rnn)

    def ref(a):
        h, outs = np.zeros((2, 4)), []
        for t in range(4):
            h = np.tanh(a[t] @ p["weight_ih_l0"].T + p["bias_ih_l0"] + h @ p["weight_hh_l0"].T + p["bias_hh_l0"])
            outs.append(h)
        return np.stack(outs) ** 2

    check_grad(lambda t: rnn(t)[0] ** 2, ref, x)
    lstm = nn.LSTM(3, 4)
    lstm(gt.randn(4, 2, 3))[0].sum().backward()
    assert all(q.grad is not None for q in lstm.parameters())
    with pytest.raises(RuntimeError, match="input_size. Expected 3, got 5"):
        lstm(gt.randn(4, 2, 5))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        nn.GRU(3, 4)(gt.randn(4, 2, 3), gt.zeros(2, 2, 4))
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")


def test_lstm_with_projections_matches_the_equations():
    # LSTMP (Sak et al. 2014): h_t = W_hr (o * tanh(c_t)), of size proj_size, fed back and up.
    m = nn.LSTM(4, 6, num_layers=2, proj_size=3)
    assert list(m.state_dict())[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert m.weight_hh_l0.shape == (24, 3) and m.weight_ih_l1.shape == (24, 3) and m.weight_hr_l1.shape == (3, 6)
    p = params(m)
    x = rng.standard_normal((5, 2, 4))
    h0, c0 = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 2, 6))

    def layer(inp, h, c, k):
        out = []
        for t in range(len(inp)):
            g = inp[t] @ p[f"weight_ih_l{k}"].T + p[f"bias_ih_l{k}"] + h @ p[f"weight_hh_l{k}"].T + p[f"bias_hh_l{k}"]
            i, f, gg, o = np.split(g, 4, -1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
            h = (sigmoid(o) * np.tanh(c)) @ p[f"weight_hr_l{k}"].T
            out.append(h)
        return np.stack(out), h, c

    f32 = lambda a: gt.tensor(a, dtype=gt.float32)  # noqa: E731
    out, (h, c) = m(f32(x), (f32(h0), f32(c0)))
    y0, h_a, c_a = layer(x, h0[0], c0[0], 0)
    y1, h_b, c_b = layer(y0, h0[1], c0[1], 1)
    assert out.shape == (5, 2, 3) and h.shape == (2, 2, 3) and c.shape == (2, 2, 6)
    np.testing.assert_allclose(out.numpy(), y1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), np.stack([h_a, h_b]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), np.stack([c_a, c_b]), rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert m.weight_hr_l0.grad is not None and m.weight_hr_l0.grad.shape == (3, 6)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size"):
        m(f32(x), (f32(h0), f32(h0)))


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_packed_sequences_run_each_sequence_to_its_own_length(mode):
    from gt.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    gt.manual_seed(0)
    m = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    lengths = [2, 5, 3]
    x = rng.standard_normal((3, 5, 3)).astype(np.float32)
    packed = pack_padded_sequence(gt.tensor(x), lengths, batch_first=True, enforce_sorted=False)
    out, hidden = m(packed)
    h_n = hidden[0] if mode == "LSTM" else hidden
    padded, got_lengths = pad_packed_sequence(out, batch_first=True)
    assert got_lengths.tolist() == lengths and padded.shape == (3, 5, 8)
    for b, n in enumerate(lengths):  # each sequence alone, unpadded
        alone, hidden_alone = m(gt.tensor(x[b:b + 1, :n]))
        h_alone = hidden_alone[0] if mode == "LSTM" else hidden_alone
        np.testing.assert_allclose(padded.numpy()[b, :n], alone.numpy()[0], rtol=1e-5, atol=1e-6)
        assert np.all(padded.numpy()[b, n:] == 0)
        np.testing.assert_allclose(h_n.numpy()[:, b], h_alone.numpy()[:, 0], rtol=1e-5, atol=1e-6)
    padded.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_pack_and_pad_round_trip_and_errors():
    from gt.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    p = pack_padded_sequence(gt.tensor(x), [4, 2, 1])
    assert p.batch_sizes.tolist() == [3, 2, 1, 1] and p.sorted_indices is None
    np.testing.assert_array_equal(p.data.numpy(), np.concatenate([x[0], x[1, :2], x[2, :1], x[3, :1]]))
    q = pack_padded_sequence(gt.tensor(x), [1, 4, 2], enforce_sorted=False)  # as PyTorch's
    assert q.sorted_indices.tolist() == [1, 2, 0] and q.unsorted_indices.tolist() == [2, 0, 1]
    padded, lengths = pad_packed_sequence(q, total_length=6)
    assert lengths.tolist() == [1, 4, 2] and padded.shape == (6, 3, 2)
    np.testing.assert_array_equal(padded.numpy()[:2, 2], x[:2, 2])
    assert np.all(padded.numpy()[2:, 2] == 0) and np.all(padded.numpy()[1:, 0] == 0)
    seqs = [gt.ones(2, 1), gt.ones(3, 1) * 2]
    assert [s.tolist() for s in unpack_sequence(pack_sequence(seqs, enforce_sorted=False))] == [[[1.0]] * 2, [[2.0]] * 3]
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_padded_sequence(gt.tensor(x), [1, 4, 2])
    with pytest.raises(RuntimeError, match="greater than 0"):
        pack_padded_sequence(gt.tensor(x), [4, 0, 1])
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(p, total_length=2)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_an_rnn_unpickled_from_pytorchs_state_runs(kind):
    # PyTorch's pickled RNNs name their parameters by layer and direction as `_all_weights`
    # (GT's own pickles carry `_flat_names`); an LSTM torch.save'd by PyTorch failed on its first
    # forward with "'LSTM' object has no attribute '_flat_names'" (word_language_model's generate.py).
    m = getattr(gt.nn, kind)(4, 5, num_layers=2, bidirectional=True)
    x = gt.randn(3, 2, 4)
    for names in ("_all_weights", None):
        state = dict(m.__dict__)
        flat = state.pop("_flat_names")
        if names:
            state[names] = [tuple(n) for n in flat]
        twin = type(m).__new__(type(m))
        twin.__setstate__(state)
        assert twin._flat_names == flat
        np.testing.assert_array_equal(twin(x)[0].numpy(), m(x)[0].numpy())

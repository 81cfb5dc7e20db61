"""nn.Module, layers, losses and optimizers: a tiny regression and a tiny classifier converge."""
import numpy as np
import pytest

import gt
import gt.nn as nn
import gt.nn.functional as F
from conftest import check


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def test_module_registers_parameters():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(p.requires_grad for p in m.parameters())
    assert m.fc1.weight.shape == (16, 3)
    seq = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
    assert len(seq.parameters()) == 4 and len(seq) == 3


def test_linear_matches_numpy():
    lin = nn.Linear(4, 3)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    w, b = lin.weight.numpy().astype(np.float64), lin.bias.numpy().astype(np.float64)
    check(lin(gt.tensor(x)), x @ w.T + b, atol=1e-5)


@pytest.mark.parametrize("shape", [(4,), (5, 4), (2, 3, 4), (2, 2, 3, 4)], ids=["1d", "2d", "3d", "4d"])
@pytest.mark.parametrize("needs", ["both", "x", "weight"])
def test_linear_gradients_for_every_input_rank(shape, needs):
    # F.linear's own backward: weight's gradient is one product over all of x's rows.
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal(shape), rng.standard_normal((3, 4)), rng.standard_normal(3)
    tx = gt.tensor(x, dtype=gt.float64, requires_grad=needs in ("both", "x"))
    tw = gt.tensor(w, dtype=gt.float64, requires_grad=needs in ("both", "weight"))
    tb = gt.tensor(b, dtype=gt.float64, requires_grad=True)
    y = F.linear(tx, tw, tb)
    ((y * y).sum()).backward()
    ref = x @ w.T + b
    g = 2 * ref
    check(y, ref, atol=1e-10)
    check(tb.grad, g.reshape(-1, 3).sum(0), atol=1e-9)
    if tx.requires_grad:
        check(tx.grad, g @ w, atol=1e-9)
    else:
        assert tx.grad is None
    if tw.requires_grad:
        check(tw.grad, g.reshape(-1, 3).T @ x.reshape(-1, 4), atol=1e-9)
    else:
        assert tw.grad is None
    with gt.no_grad():  # nothing recorded
        assert not F.linear(tx, tw, tb).requires_grad


@pytest.mark.parametrize("make_opt", [lambda p: gt.optim.SGD(p, lr=0.05, momentum=0.9),
                                      lambda p: gt.optim.Adam(p, lr=0.02)], ids=["sgd-momentum", "adam"])
def test_regression_converges(make_opt):
    gt.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    model = TwoLayer()
    opt = make_opt(model.parameters())
    xt, yt = gt.tensor(x), gt.tensor(y)
    first = None
    for _ in range(150):
        loss = F.mse_loss(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    last = F.mse_loss(model(xt), yt).item()
    assert last < 0.05 * first, (first, last)


def test_cross_entropy_matches_numpy_and_trains():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 3, 1, 1, 2, 0])
    l64 = logits.astype(np.float64)
    logp = l64 - np.log(np.exp(l64).sum(1, keepdims=True))
    check(F.cross_entropy(gt.tensor(logits), gt.tensor(y)), -logp[np.arange(6), y].mean(), atol=1e-6)
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(gt.tensor(logits), gt.tensor(y.astype(np.float32)))


def test_zero_grad_and_parameters_update():
    m = nn.Linear(2, 1)
    before = m.weight.numpy()
    opt = gt.optim.SGD(m.parameters(), lr=0.1)
    m(gt.ones(1, 2)).sum().backward()
    assert m.weight.grad is not None
    opt.step()
    check(m.weight, before - 0.1 * np.ones((1, 2)), atol=1e-6)
    opt.zero_grad()
    assert m.weight.grad is None


def _reference_step(kind, hp, p, g, st):
    """torch.optim's update of one float64 parameter, in NumPy (the formulas in gt.optim's
    docstrings); `st` is the parameter's state."""
    if kind == "sgd":
        g = g + hp.get("weight_decay", 0) * p
        if hp.get("momentum"):
            buf = st.get("buf")
            buf = g if buf is None else hp["momentum"] * buf + (1 - hp.get("dampening", 0)) * g
            st["buf"] = buf
            g = g + hp["momentum"] * buf if hp.get("nesterov") else buf
        return p - hp["lr"] * g
    if kind == "rmsprop":
        g = g + hp.get("weight_decay", 0) * p
        a, eps, mom = hp.get("alpha", 0.99), hp.get("eps", 1e-8), hp.get("momentum", 0)
        v = st["v"] = a * st.get("v", 0) + (1 - a) * g * g
        if hp.get("centered"):
            ga = st["ga"] = a * st.get("ga", 0) + (1 - a) * g
            v = v - ga * ga
        d = np.sqrt(v) + eps
        if mom:
            buf = st["buf"] = mom * st.get("buf", 0) + g / d
            return p - hp["lr"] * buf
        return p - hp["lr"] * g / d
    if kind == "adagrad":
        g = g + hp.get("weight_decay", 0) * p
        t = st["t"] = st.get("t", 0) + 1
        acc = st["sum"] = st.get("sum", hp.get("initial_accumulator_value", 0)) + g * g
        clr = hp["lr"] / (1 + (t - 1) * hp.get("lr_decay", 0))
        return p - clr * g / (np.sqrt(acc) + hp.get("eps", 1e-10))
    if kind == "adadelta":
        g = g + hp.get("weight_decay", 0) * p
        rho, eps = hp.get("rho", 0.9), hp.get("eps", 1e-6)
        v = st["v"] = rho * st.get("v", 0) + (1 - rho) * g * g
        delta = np.sqrt(st.get("u", 0) + eps) / np.sqrt(v + eps) * g
        st["u"] = rho * st.get("u", 0) + (1 - rho) * delta * delta
        return p - hp.get("lr", 1.0) * delta
    if kind == "rprop":  # Riedmiller & Braun 1993
        (minus, plus), (lo, hi) = hp.get("etas", (0.5, 1.2)), hp.get("step_sizes", (1e-6, 50))
        agree = g * st.get("prev", 0)
        size = st["size"] = np.clip(st.get("size", hp["lr"]) * np.where(agree > 0, plus, np.where(agree < 0, minus, 1)), lo, hi)
        g = st["prev"] = np.where(agree < 0, 0, g)
        return p - np.sign(g) * size
    if kind == "asgd":  # Polyak & Juditsky 1992
        g = g + hp.get("weight_decay", 0) * p
        t = st["t"] = st.get("t", 0) + 1
        eta, mu, lambd = st.get("eta", hp["lr"]), st.get("mu", 1.0), hp.get("lambd", 1e-4)
        p = p * (1 - lambd * eta) - eta * g
        st["ax"] = p if mu == 1 else st["ax"] + mu * (p - st["ax"])
        st["eta"] = hp["lr"] / (1 + lambd * hp["lr"] * t) ** hp.get("alpha", 0.75)
        st["mu"] = 1 / max(1, t - hp.get("t0", 1e6))
        return p
    b1, b2 = hp.get("betas", (0.9, 0.999))
    wd, lr = hp.get("weight_decay", 0.01 if kind == "adamw" else 0.0), hp["lr"]
    if kind == "adamw" or hp.get("decoupled_weight_decay"):
        p = p - lr * wd * p
    else:
        g = g + wd * p
    t = st["t"] = st.get("t", 0) + 1
    if kind == "adamax":  # Kingma & Ba 2015, section 7.1
        m = st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
        u = st["u"] = np.maximum(b2 * st.get("u", 0), np.abs(g) + hp.get("eps", 1e-8))
        return p - lr / (1 - b1 ** t) * m / u
    if kind == "nadam":  # Dozat 2016
        psi = hp.get("momentum_decay", 4e-3)
        mu, mu_next = b1 * (1 - 0.5 * 0.96 ** (t * psi)), b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        prod = st["prod"] = st.get("prod", 1.0) * mu
        m = st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
        v = st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
        d = np.sqrt(v / (1 - b2 ** t)) + 1e-8
        return p - lr * (1 - mu) / (1 - prod) * g / d - lr * mu_next / (1 - prod * mu_next) * m / d
    if kind == "radam":  # Liu et al. 2020, Algorithm 2
        m = st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
        v = st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
        rho_inf = 2 / (1 - b2) - 1
        rho = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        m_hat = m / (1 - b1 ** t)
        if rho <= 5:
            return p - lr * m_hat
        r = np.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        return p - lr * m_hat * r * np.sqrt(1 - b2 ** t) / (np.sqrt(v) + 1e-8)
    m = st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
    v = st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
    if hp.get("amsgrad"):  # Reddi et al. 2018: the running maximum of v
        v = st["vmax"] = np.maximum(st.get("vmax", 0), v)
    return p - lr / (1 - b1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + 1e-8)


@pytest.mark.parametrize("kind,hp", [
    ("sgd", dict(lr=0.1)), ("sgd", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("sgd", dict(lr=0.1, momentum=0.9, dampening=0.2)), ("sgd", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("adam", dict(lr=0.01)), ("adam", dict(lr=0.01, weight_decay=0.1, betas=(0.8, 0.99))), ("adamw", dict(lr=0.01)),
    ("adam", dict(lr=0.01, amsgrad=True)), ("adamw", dict(lr=0.01, amsgrad=True)),
    ("rmsprop", dict(lr=0.01)), ("rmsprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.01)),
    ("adadelta", dict(lr=1.0)), ("adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("adamax", dict(lr=0.01)), ("adamax", dict(lr=0.01, weight_decay=0.1)),
    ("nadam", dict(lr=0.01)), ("nadam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("radam", dict(lr=0.01, weight_decay=0.1)), ("radam", dict(lr=0.01, betas=(0.9, 0.6))),
    ("rprop", dict(lr=0.01)), ("asgd", dict(lr=0.01, t0=2, lambd=0.1, weight_decay=0.1)),
], ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items()))
@pytest.mark.parametrize("set_to_none", [True, False], ids=["grads_dropped", "grads_zeroed"])
def test_optimizers_match_torch_optims_formulas(kind, hp, set_to_none):
    # Updates are foreach ops over a group's parameters (gt._tensor._foreach); each parameter
    # still gets torch.optim's per-parameter update. `late` has no gradient in the first two
    # steps (skipped, then its first moments start late) and `none` never has one.
    rng = np.random.default_rng(1)
    init = {n: rng.standard_normal(s) for n, s in (("w", (3, 4)), ("b", (4,)), ("late", (2,)), ("none", (2,)))}
    params = {n: gt.tensor(a, dtype=gt.float64, requires_grad=True) for n, a in init.items()}
    make = {"sgd": gt.optim.SGD, "adam": gt.optim.Adam, "adamw": gt.optim.AdamW, "rmsprop": gt.optim.RMSprop,
            "adagrad": gt.optim.Adagrad, "adadelta": gt.optim.Adadelta, "adamax": gt.optim.Adamax,
            "nadam": gt.optim.NAdam, "radam": gt.optim.RAdam, "rprop": gt.optim.Rprop, "asgd": gt.optim.ASGD}[kind]
    opt = make(list(params.values()), **hp)
    want, states = dict(init), {n: {} for n in init}
    for step in range(4):
        x = rng.standard_normal((5, 3))
        y = gt.tensor(x) @ params["w"] + params["b"]
        loss = (y * y).sum() + ((params["late"] ** 2).sum() * 3.0 if step >= 2 else 0.0)
        opt.zero_grad(set_to_none=set_to_none)  # (zeroed in place: no state may alias a gradient, as SGD's
        loss.backward()                          # first momentum buffer once did)
        opt.step()
        yy = x @ want["w"] + want["b"]
        grads = {"w": x.T @ (2 * yy), "b": (2 * yy).sum(0), "late": 6 * want["late"] if step >= 2 else None}
        for n, g in grads.items():
            if g is not None:
                want[n] = _reference_step(kind, hp, want[n], g, states[n])
    for n, p in params.items():
        check(p, want[n], atol=1e-10)
    # state is keyed by the parameter, as torch.optim's (scripts read opt.state[p]["exp_avg"])
    if kind == "adagrad":  # (PyTorch's Adagrad makes every parameter's state when it is made)
        assert opt.state[params["none"]]["step"] == 0
    else:
        assert not opt.state.get(params["none"])
    if kind != "sgd" or hp.get("momentum"):
        assert opt.state[params["w"]] and params["w"] in opt.state
    if kind == "asgd":
        check(opt.state[params["w"]]["ax"], states["w"]["ax"], atol=1e-10)


def test_foreach_ops_check_their_lists():
    a, b = [gt.ones(2), gt.ones(3)], [gt.ones(2)]
    with pytest.raises(ValueError, match="foreach over lists of 1 and 2 elements"):
        gt._tensor._foreach("add", a, b)
    with pytest.raises(gt.ShapeError):
        gt._tensor._foreach("add", a, [gt.ones(2), gt.ones(4)])
    out = gt._tensor._foreach("mul", a, [2.0, 3.0])
    check(out[0], [2.0, 2.0])
    check(out[1], [3.0, 3.0, 3.0])
    assert gt._tensor._foreach("add", [], 1.0) == []


def test_each_optimizer_step_is_one_batch_the_plan_cache_recognizes():
    # A loop that never reads a value back: each step() ends a batch, so every step after the
    # first few is the same batch again (a plan cache hit), for gt's optimizers and for a
    # subclass of gt.optim.Optimizer alike.
    class PlainSGD(gt.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, dict(lr=lr))

        def step(self):
            with gt.no_grad():
                for p in self.params:
                    if p.grad is not None:
                        p -= 0.01 * p.grad

    gt.manual_seed(0)
    x, y = gt.randn(32, 8), gt.randn(32, 4)
    for make_opt in (lambda p: gt.optim.Adam(p, lr=1e-3), lambda p: PlainSGD(p, lr=0.01)):
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        opt = make_opt(model.parameters())

        def step():
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        # The client's cache of scalar tensors makes room when it passes 4096 (dropping those no
        # op used since it last did, all of them if every one was): the frees and re-made
        # constants join whatever step is being issued, a batch the plan cache has not seen, and
        # each Adam step adds its bias corrections. Earlier tests in this session nearly filled
        # it; empty it now, so that it cannot make room during the counted steps.
        from gt import _tensor
        _tensor._scalars.clear()
        _tensor._scalars_used = set()
        for _ in range(3):
            step()
        before = gt.debug.stats()
        for _ in range(10):
            step()
        after = gt.debug.stats()
        hits = after["dispatcher_plan_cache_hits"] - before["dispatcher_plan_cache_hits"]
        misses = after["dispatcher_plan_cache_misses"] - before["dispatcher_plan_cache_misses"]
        # New at most: the frees left after the last step(), and (when the session first ran
        # this step as a known program at new sizes, a direct plan) its promotion to the passes.
        assert hits >= 9 and misses <= 2 and hits + misses >= 10, (hits, misses)


def test_non_persistent_buffers_submodule_access_and_load_result():
    class M(gt.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = gt.nn.Linear(2, 3)
            self.register_buffer("kept", gt.ones(2))
            self.register_buffer("scratch", gt.zeros(4), persistent=False)

    m = M()
    assert sorted(m.state_dict()) == ["inner.bias", "inner.weight", "kept"]
    assert len(m.buffers()) == 2  # both are buffers (moved by .to())
    result = m.load_state_dict(m.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == [] and tuple(result) == ([], [])
    assert m.get_submodule("inner") is m.inner and m.get_submodule("") is m
    assert m.get_parameter("inner.weight") is m.inner.weight and m.get_buffer("kept") is m.kept
    with pytest.raises(AttributeError, match="no attribute `nope`"):
        m.get_submodule("nope")
    m.register_module("extra", gt.nn.ReLU())
    assert "extra" in dict(m.named_children())


def _rosenbrock(p):
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2


def test_lbfgs_follows_torchs_iterates_and_converges_with_strong_wolfe():
    # torch.optim.LBFGS (PyTorch 2.15, float64) on Rosenbrock from (-1.5, 2) with lr=0.1 and no
    # line search: the parameters after each of three step(closure) calls of 20 iterations.
    torch_iterates = [[-1.4043758711403123, 1.990984189901701], [-0.5929776891606293, 0.05270172336971457],
                      [-0.7554142666140178, 0.511121603087909]]
    p = gt.tensor([-1.5, 2.0], dtype=gt.float64, requires_grad=True)
    opt = gt.optim.LBFGS([p], lr=0.1, max_iter=20)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(p)
        loss.backward()
        return loss

    for want in torch_iterates:
        opt.step(closure)
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-9, atol=1e-12)
    assert opt.state[p]["func_evals"] == 60  # as PyTorch counts
    # With the strong Wolfe line search (lr=1): PyTorch's iterates and closure calls, reaching
    # the minimum (1, 1).
    torch_iterates = [([-0.08511855589860293, -0.028757058413769698], 25),
                      ([0.9995835472529905, 0.9991550319577943], 50), ([0.9999979943196398, 0.9999973438921637], 53)]
    p = gt.tensor([-1.5, 2.0], dtype=gt.float64, requires_grad=True)
    opt = gt.optim.LBFGS([p], lr=1, max_iter=20, line_search_fn="strong_wolfe")
    for want, evals in torch_iterates:
        opt.step(closure)
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-6, atol=1e-9)
        assert opt.state[p]["func_evals"] == evals
    assert float(_rosenbrock(p).item()) < 1e-9
    with pytest.raises(RuntimeError, match="closure"):
        opt.step(None)
    with pytest.raises(ValueError, match="line_search_fn"):
        gt.optim.LBFGS([p], line_search_fn="backtracking")


def test_a_full_plan_cache_keeps_the_plans_a_loop_reuses():
    # 300 one-off batches (more than the 256 plans a session's cache keeps) between the steps
    # of a loop: when the cache makes room it drops the plans nothing reused, not the step's.
    x = gt.ones(5)

    def step():
        return (x * 2 + 1).sum().item()

    def one_off(k):  # k multiplications: a batch of a structure seen once
        y = gt.ones(5)
        for _ in range(k):
            y = y * 1.5
        return y.sum().item()

    for _ in range(3):
        step()
    one_off(1), step(), one_off(2), step()
    before = gt.debug.stats()
    for k in range(3, 303):
        one_off(k)
        step()
    after = gt.debug.stats()
    hits = after["dispatcher_plan_cache_hits"] - before["dispatcher_plan_cache_hits"]
    misses = after["dispatcher_plan_cache_misses"] - before["dispatcher_plan_cache_misses"]
    # Every step hit (clearing the whole cache cost one a miss: 299 hits), every one-off missed;
    # the batch of frees trailing the last read is one more, a hit or a miss.
    assert hits >= 300 and 300 <= misses <= 301 and hits + misses <= 601, (hits, misses)


def test_embedding_max_norm_and_scale_grad_by_freq():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 3)) * 2
    idx = np.array([[1, 2, 1], [4, 1, 0]])
    # max_norm: the rows idx names (0, 1, 2, 4) scaled in place to norm max_norm if above it
    e = nn.Embedding(6, 3, max_norm=1.0, _weight=gt.tensor(w))
    y = e(gt.tensor(idx))
    want = w.copy()
    for r in (0, 1, 2, 4):
        n = np.linalg.norm(w[r])
        if n > 1.0:
            want[r] = w[r] * (1.0 / (n + 1e-7))
    check(e.weight, want, atol=1e-12)
    check(y, want[idx], atol=1e-12)
    assert repr(e) == "Embedding(6, 3, max_norm=1.0)"
    # scale_grad_by_freq: a row's gradient divided by how often idx names it
    e = nn.Embedding(6, 3, scale_grad_by_freq=True, sparse=True, _weight=gt.tensor(w))
    g = rng.standard_normal((2, 3, 3))
    (e(gt.tensor(idx)) * gt.tensor(g)).sum().backward()
    want = np.zeros((6, 3))
    counts = np.bincount(idx.reshape(-1), minlength=6)
    for pos, r in np.ndenumerate(idx):
        want[r] += g[pos] / counts[r]
    check(e.weight.grad, want, atol=1e-12)
    frozen = nn.Embedding(6, 3, _weight=gt.tensor(w), _freeze=True)
    assert not frozen.weight.requires_grad


def test_zero_grad_set_to_none_false_zeroes_the_gradients_that_exist():
    m = nn.Linear(2, 2)
    opt = gt.optim.SGD(m.parameters(), lr=0.1)
    m.weight.requires_grad_(True)
    (m(gt.ones(1, 2)).sum()).backward()
    g = m.weight.grad
    for owner in (opt, m):
        owner.zero_grad(set_to_none=False)
        assert m.weight.grad is g and g.tolist() == [[0.0, 0.0], [0.0, 0.0]] and m.bias.grad.tolist() == [0.0, 0.0]
    fresh = nn.Linear(2, 2)
    fresh.zero_grad(set_to_none=False)
    assert fresh.weight.grad is None  # (a parameter without a gradient keeps None, as PyTorch's)
    opt.zero_grad()
    assert m.weight.grad is None

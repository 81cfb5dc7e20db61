"""gt.optim.lr_scheduler against the closed forms PyTorch documents for each schedule (no
timing, no torch import: the expected values are computed here from those formulas)."""
import math

import numpy as np
import pytest

import gt

S = gt.optim.lr_scheduler


def lrs(opt, sched, n, key="lr", metrics=None):
    out = []
    for i in range(n):
        g = opt.param_groups[0]
        out.append(g[key][0] if key == "betas" else g[key])
        sched.step(metrics[i]) if metrics else sched.step()
    return out


def sgd(lr=0.1):
    return gt.optim.SGD([gt.nn.Parameter(gt.zeros(2))], lr=lr, momentum=0.9)


def test_multistep_exponential_constant_and_linear_follow_their_formulas():
    opt = sgd()
    assert lrs(opt, S.MultiStepLR(opt, [5, 2], gamma=0.5), 8) == pytest.approx(
        [0.1 * 0.5 ** sum(e >= m for m in (2, 5)) for e in range(8)])
    opt = sgd()
    assert lrs(opt, S.ExponentialLR(opt, 0.9), 5) == pytest.approx([0.1 * 0.9 ** e for e in range(5)])
    opt = sgd()
    assert lrs(opt, S.ConstantLR(opt, factor=0.5, total_iters=3), 5) == pytest.approx([0.05] * 3 + [0.1] * 2)
    opt = sgd()
    assert lrs(opt, S.LinearLR(opt, start_factor=0.25, total_iters=4), 6) == pytest.approx(
        [0.1 * (0.25 + 0.75 * min(e, 4) / 4) for e in range(6)])


def test_sequential_lr_starts_each_schedule_at_its_own_epoch_zero():
    opt = sgd()
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = S.CosineAnnealingLR(opt, T_max=5)
    got = lrs(opt, S.SequentialLR(opt, [warm, cos], milestones=[3]), 9)
    want = [0.1 * (0.1 + 0.9 * e / 3) for e in range(3)] + [0.1 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(6)]
    assert got == pytest.approx(want)
    with pytest.raises(ValueError, match="one milestone fewer"):
        S.SequentialLR(opt, [warm, cos], milestones=[3, 4])


def test_one_cycle_rises_to_max_lr_then_anneals_and_cycles_beta1_the_other_way():
    opt = gt.optim.Adam([gt.nn.Parameter(gt.zeros(2))], lr=0.1)
    total, peak = 10, 0.3 * 10 - 1  # the last step of the rise
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=total)
    got_lr = lrs(opt, sched, total)

    def cos(a, b, pct):
        return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)

    lo, end = 1.0 / 25, 1.0 / 25 / 1e4
    want = [cos(lo, 1.0, s / peak) if s <= peak else cos(1.0, end, (s - peak) / (total - 1 - peak)) for s in range(total)]
    assert got_lr == pytest.approx(want)
    assert max(got_lr) == pytest.approx(1.0) and got_lr[-1] == pytest.approx(end)
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        sched.step()

    opt = gt.optim.Adam([gt.nn.Parameter(gt.zeros(2))], lr=0.1)
    betas = lrs(opt, S.OneCycleLR(opt, max_lr=1.0, total_steps=total), total, key="betas")
    assert betas[0] == pytest.approx(0.95) and min(betas) == pytest.approx(0.85) and betas[2] == pytest.approx(0.85)

    opt = sgd()
    three = lrs(opt, S.OneCycleLR(opt, 1.0, total_steps=12, three_phase=True, anneal_strategy="linear"), 12)
    up = 0.3 * 12 - 1
    assert three[0] == pytest.approx(lo) and three[int(up) + 1] < 1.0 and three[-1] == pytest.approx(end)
    assert three[1] == pytest.approx(lo + (1.0 - lo) / up)  # linear
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(sgd(), 1.0)


def test_reduce_lr_on_plateau_waits_patience_epochs_then_cooldown():
    opt = sgd()
    sched = S.ReduceLROnPlateau(opt, patience=1, cooldown=1)
    metrics = [5, 4, 4, 4, 4, 4, 3, 3, 3, 3]
    # 5 and 4 improve; the next two 4s are two bad epochs (more than patience 1): the 4th step
    # cuts the lr. One cooldown epoch, one bad epoch, 3 improves, two bad ones cut it again.
    assert lrs(opt, sched, 10, metrics=metrics) == pytest.approx([0.1] * 4 + [0.01] * 5 + [0.001])
    assert sched.get_last_lr() == pytest.approx([0.001])
    max_mode = S.ReduceLROnPlateau(sgd(), mode="max", patience=0, min_lr=0.05)
    max_mode.step(gt.tensor(1.0))  # a 0-d tensor is a metric too
    max_mode.step(0.5)
    max_mode.step(0.5)
    assert max_mode.get_last_lr() == pytest.approx([0.05])  # floored at min_lr
    with pytest.raises(ValueError, match="Factor"):
        S.ReduceLROnPlateau(sgd(), factor=1.5)


def test_new_schedulers_round_trip_their_state():
    opt = sgd()
    sched = S.SequentialLR(opt, [S.ExponentialLR(opt, 0.5), S.MultiStepLR(opt, [2])], milestones=[2])
    for _ in range(3):
        sched.step()
    state = sched.state_dict()
    opt2 = sgd()
    again = S.SequentialLR(opt2, [S.ExponentialLR(opt2, 0.5), S.MultiStepLR(opt2, [2])], milestones=[2])
    again.load_state_dict(state)
    sched.step(), again.step()
    assert opt2.param_groups[0]["lr"] == pytest.approx(opt.param_groups[0]["lr"])
    assert again.last_epoch == sched.last_epoch == 4
def test_swa_utils_average_anneal_and_recompute_batchnorm():
    from gt.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
    model = gt.nn.Sequential(gt.nn.Linear(2, 2), gt.nn.BatchNorm1d(2))
    swa, ema = AveragedModel(model), AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.5))
    seen = []
    for k in range(3):
        with gt.no_grad():
            model[0].weight.fill_(float(k + 1))
        seen.append(float(k + 1))
        swa.update_parameters(model)
        ema.update_parameters(model)
    np.testing.assert_allclose(swa.module[0].weight.numpy(), np.full((2, 2), np.mean(seen)), rtol=1e-6)
    np.testing.assert_allclose(ema.module[0].weight.numpy(), np.full((2, 2), (1 * 0.5 + 2 * 0.5) * 0.5 + 3 * 0.5))
    assert swa.n_averaged.item() == 3 and swa(gt.ones(4, 2)).shape == (4, 2)
    # SWALR: PyTorch 2.15's schedule for these settings (cos over 4 steps, from 0.5 to 0.05)
    opt = gt.optim.SGD(model.parameters(), lr=0.5)
    sched = SWALR(opt, swa_lr=0.05, anneal_epochs=4)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(5):
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs, [0.5, 0.434099, 0.275, 0.115901, 0.05, 0.05], atol=1e-6)
    with pytest.raises(ValueError, match="anneal_strategy"):
        SWALR(opt, swa_lr=0.05, anneal_strategy="step")
    # update_bn: BatchNorm's running statistics become the averages over the loader's batches
    data = [gt.tensor(np.arange(8, dtype=np.float32).reshape(4, 2) + 10 * i) for i in range(3)]
    swa.eval()
    update_bn([(x, 0) for x in data], swa)
    bn = swa.module[1]
    feats = [swa.module[0](x).numpy() for x in data]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([f.mean(0) for f in feats], 0), rtol=1e-5)
    assert bn.momentum == 0.1 and not swa.training


def test_polynomial_multiplicative_warm_restarts_and_cyclic_follow_their_formulas():
    opt = sgd()
    assert lrs(opt, S.PolynomialLR(opt, total_iters=4, power=2.0), 6) == pytest.approx(
        [0.1 * (1 - min(e, 4) / 4) ** 2 for e in range(6)])
    opt = sgd()
    assert lrs(opt, S.MultiplicativeLR(opt, lambda e: 0.9), 4) == pytest.approx([0.1 * 0.9 ** e for e in range(4)])
    # SGDR: periods 2, 4, 8 (T_mult 2); each restarts at base_lr
    opt = sgd()
    starts = [0, 2, 6]
    want = []
    for e in range(10):
        k = max(i for i, s in enumerate(starts) if s <= e)
        t_cur, t_i = e - starts[k], 2 * 2 ** k
        want.append(0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * t_cur / t_i)) / 2)
    assert lrs(opt, S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01), 10) == pytest.approx(want)
    opt = sgd()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=4)
    sched.step(5.5)  # fractional epochs: 1.5 epochs into the second period
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * (1 + math.cos(math.pi * 1.5 / 4)) / 2)
    # CyclicLR: up 0.01 -> 0.1 in 4 steps, down in 4; triangular2 halves the second cycle's height;
    # momentum cycles the other way between 0.9 and 0.8
    opt = sgd()
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="triangular2")
    tri = [0, 0.25, 0.5, 0.75, 1, 0.75, 0.5, 0.25]
    assert lrs(opt, sched, 16) == pytest.approx([0.01 + 0.09 * h * (1 if e < 8 else 0.5) for e, h in
                                                 enumerate(tri + tri)])
    opt = sgd()
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4)
    assert lrs(opt, sched, 8, key="momentum") == pytest.approx([0.9 - 0.1 * h for h in tri])
    with pytest.raises(ValueError, match="must support momentum"):
        S.CyclicLR(gt.optim.Adagrad([gt.nn.Parameter(gt.zeros(1))]), 0.01, 0.1)


def test_scheduler_state_and_param_group_keys_read_as_pytorchs():
    opt = sgd()
    sched = S.CosineAnnealingLR(opt, T_max=10)
    opt.step()
    sched.step()
    state = sched.state_dict()
    assert state["_step_count"] == 2 and state["_last_lr"] == sched.get_last_lr() == [opt.param_groups[0]["lr"]]
    assert list(opt.state_dict()["param_groups"][0]) == ["lr", "momentum", "dampening", "weight_decay", "nesterov",
                                                         "maximize", "foreach", "differentiable", "fused",
                                                         "initial_lr", "params"]


def test_chained_scheduler_multiplies_the_factors():
    opt = sgd()
    chained = S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=3), S.ExponentialLR(opt, gamma=0.9)])
    assert lrs(opt, chained, 6) == pytest.approx([0.1 * (0.1 if e < 3 else 1.0) * 0.9 ** e for e in range(6)])
    assert chained.get_last_lr() == [opt.param_groups[0]["lr"]]
    with pytest.raises(ValueError, match="same optimizer"):
        S.ChainedScheduler([S.StepLR(sgd(), 2), S.StepLR(sgd(), 2)])


def test_decays_are_pytorchs_recursive_forms_to_the_last_bit():
    # PyTorch computes each lr from the group's current one: 0.1 * 0.7 * 0.7 * 0.7, not
    # 0.1 * 0.7 ** 3 (they differ in the last bit), and a script's own change to lr carries on
    p = gt.nn.Parameter(gt.zeros(1))
    opt = gt.optim.SGD([p], lr=0.1)
    s = gt.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7)
    lrs = []
    for _ in range(9):
        opt.step()
        s.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[-1] == ((0.1 * 0.7) * 0.7) * 0.7 and lrs[-1] != 0.1 * 0.7 ** 3
    opt = gt.optim.SGD([p], lr=0.1)
    s = gt.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    s.step()
    opt.param_groups[0]["lr"] *= 0.5  # (a manual change: the schedule continues from it)
    s.step()
    assert opt.param_groups[0]["lr"] == 0.1 * 0.9 * 0.5 * 0.9 and s.get_last_lr() == [opt.param_groups[0]["lr"]]
    opt = gt.optim.SGD([p], lr=1.0)
    s = gt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    expected = 1.0
    for t in range(1, 6):
        s.step()
        if t == 5:  # past T_max: PyTorch's step that starts the next half period
            expected = expected + (1 - math.cos(math.pi / 4)) / 2
        else:
            expected = (1 + math.cos(math.pi * t / 4)) / (1 + math.cos(math.pi * (t - 1) / 4)) * expected
        assert opt.param_groups[0]["lr"] == expected
    with pytest.warns(UserWarning, match="get_last_lr"):  # get_lr() outside step(), as PyTorch warns
        s.get_lr()
    state = s.state_dict()
    assert state["_is_initial"] is False and state["_get_lr_called_within_step"] is False
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(2)  # the deprecated form: the closed form of epoch 2
    assert opt.param_groups[0]["lr"] == (1 + math.cos(math.pi * 2 / 4)) / 2


def test_chained_scheduler_steps_each_scheduler():
    p = gt.nn.Parameter(gt.zeros(1))
    opt = gt.optim.SGD([p], lr=1.0)
    L = gt.optim.lr_scheduler
    chain = L.ChainedScheduler([L.ConstantLR(opt, factor=0.5, total_iters=2), L.ExponentialLR(opt, gamma=0.9)])
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(3):
        chain.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == [0.5, 0.5 * 0.9, 0.5 * 0.9 * (1 / 0.5) * 0.9, 0.5 * 0.9 * (1 / 0.5) * 0.9 * 0.9]
    with pytest.raises(ValueError, match="same optimizer"):
        L.ChainedScheduler([L.ExponentialLR(opt, 0.9), L.ExponentialLR(gt.optim.SGD([p], lr=1.0), 0.9)])

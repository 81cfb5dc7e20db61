"""gt.optim.swa_utils: torch.optim.swa_utils' stochastic weight averaging and EMA of a model.

    swa_model = AveragedModel(model)                    # running mean of the weights (SWA)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    scheduler = SWALR(optimizer, swa_lr=0.05)
    ...
    swa_model.update_parameters(model)                  # after each epoch (or step, for EMA)
    update_bn(train_loader, swa_model)                  # BatchNorm statistics for the averaged weights

Izmailov et al., "Averaging Weights Leads to Wider Optima and Better Generalization", UAI 2018:
SWA averages the weights a constant or cyclic learning rate visits (a running mean, updated in
place); the exponential moving average replaces the mean with avg = decay * avg + (1 - decay) * p.
"""
import copy
import itertools
import math

from .. import _functions as _T
from .. import dtypes as _dt
from ..autograd import no_grad
from ..nn.modules import Module
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn"]


def get_ema_avg_fn(decay=0.999):
    """avg_fn(averaged, current, num_averaged) for an exponential moving average."""
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """avg_fn(averaged, current, num_averaged) for the running mean (SWA)."""
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    """multi_avg_fn(averaged_list, current_list, num_averaged) for an exponential moving average,
    updating the averaged tensors in place."""
    def ema_update(ema_param_list, current_param_list, _num_averaged):
        for e, p in zip(ema_param_list, current_param_list):
            if e.dtype.is_floating_point:
                e.lerp_(p, 1 - decay)
            else:  # (an integer buffer, BatchNorm's num_batches_tracked: truncated, as PyTorch's)
                e.copy_(e * decay + p * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """multi_avg_fn for the running mean (SWA), in place."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged.item() if hasattr(num_averaged, "item") else num_averaged)
        for a, p in zip(averaged_param_list, current_param_list):
            if a.dtype.is_floating_point:
                a.lerp_(p, 1.0 / (n + 1))
            else:  # (an integer buffer: the running mean truncated, as PyTorch's)
                a.copy_(a + (p - a) / (n + 1))
    return swa_update


class AveragedModel(Module):
    """A copy of `model` (copy.deepcopy) whose parameters (and, with use_buffers=True, buffers)
    are the average of the models update_parameters has seen: the running mean by default,
    `avg_fn(averaged, current, num_averaged)` or `multi_avg_fn(averaged_list, current_list,
    num_averaged)` otherwise. The first update copies. forward calls the copy. `n_averaged` is an
    int64 buffer counting the updates. `device` is accepted (see gt.device)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _T.zeros((), dtype=_dt.int64))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers
        self._updates = 0  # n_averaged on the client (no wait to read it)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _pairs(self, model):
        mine = itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers \
            else self.module.parameters()
        theirs = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()
        return [(a, b) for a, b in zip(mine, theirs)]

    def update_parameters(self, model):
        """Folds `model`'s current parameters into the average (the first call copies them)."""
        with no_grad():
            pairs = [(a, b.detach()) for a, b in self._pairs(model)]  # (integer buffers too, as PyTorch's)
            if self._updates == 0:
                for a, b in pairs:
                    a.copy_(b)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn([a for a, _ in pairs], [b for _, b in pairs], self.n_averaged)
            elif self.avg_fn is not None:
                for a, b in pairs:
                    a.copy_(self.avg_fn(a, b, self.n_averaged))
            else:
                get_swa_multi_avg_fn()([a for a, _ in pairs], [b for _, b in pairs], self._updates)
            if not self.use_buffers:  # the buffers follow the model (update_bn recomputes BatchNorm's)
                for a, b in zip(self.module.buffers(), model.buffers()):
                    a.copy_(b.detach())
            self._updates += 1
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """Recomputes the running statistics of `model`'s BatchNorm layers over one pass of `loader`
    (a cumulative average: momentum None during the pass), in training mode, then restores each
    layer's momentum and the model's mode. Batches may be tensors or sequences whose first item is
    the input. Does nothing for a model without BatchNorm."""
    from ..nn.modules import _BatchNorm
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    with no_grad():
        for batch in loader:
            x = batch[0] if isinstance(batch, (list, tuple)) else batch
            model(x.to(device) if device is not None else x)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate from its value to `swa_lr` over `anneal_epochs` steps
    ("cos": (1 - cos(pi t)) / 2 of the way at t = step / anneal_epochs, or "linear": t), then keeps
    swa_lr. `swa_lr` is a number or one per group. Raises ValueError for a bad strategy or epochs."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(optimizer.param_groups)
        if len(swa_lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have length {len(optimizer.param_groups)}, got {len(swa_lrs)}")
        for group, lr in zip(optimizer.param_groups, swa_lrs):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs, self.anneal_strategy = anneal_epochs, anneal_strategy
        super().__init__(optimizer, last_epoch)

    def _alpha(self, t):
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    def get_lr(self):
        step = self.last_epoch if self.anneal_epochs else max(1, self.last_epoch)
        prev_t = max(0.0, min(1.0, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self._alpha(prev_t)
        t = max(0.0, min(1.0, step / max(1, self.anneal_epochs)))
        alpha = self._alpha(t)
        out = []
        for group in self.optimizer.param_groups:
            swa_lr, lr = group["swa_lr"], group["lr"]
            # the lr the annealing started from, recovered from the current one (PyTorch's formula)
            start = swa_lr if prev_alpha == 1 else (lr - prev_alpha * swa_lr) / (1 - prev_alpha)
            out.append(swa_lr * alpha + start * (1 - alpha))
        return out

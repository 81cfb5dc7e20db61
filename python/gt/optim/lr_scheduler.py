"""Learning-rate schedules (torch.optim.lr_scheduler): each sets group['lr'] of its optimizer
from the initial learning rates and the epoch count; call step() once per epoch (or step)."""
import bisect
import math


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        """The rates the last step() set (PyTorch's _last_lr)."""
        return list(getattr(self, "_last_lr", [g["lr"] for g in self.optimizer.param_groups]))

    def _set_lrs(self, lrs):
        """Sets each group's lr; counts the step and keeps the rates, as PyTorch's
        (_step_count, _last_lr: in state_dict too)."""
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr
        self._step_count = getattr(self, "_step_count", 0) + 1
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self):
        """The scheduler's attributes but its optimizer (and, as PyTorch, functions: a lambda's
        schedule is rebuilt from the code that made the scheduler)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)
                and not (isinstance(v, list) and v and all(callable(x) for x in v))}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def step(self, epoch=None):
        """Moves to the next epoch (or to `epoch`, PyTorch's deprecated form: the schedules
        here are closed forms of the epoch) and sets each group's lr."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        self._set_lrs(self.get_lr())


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(LambdaLR):
    """lr = the previous epoch's lr * lr_lambda(epoch) (from epoch 1 on), as PyTorch's."""

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch <= 0:
            return [g["lr"] for g in groups]
        return [g["lr"] * f(self.last_epoch) for g, f in zip(groups, self.lr_lambdas)]


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power: a polynomial decay
    to 0 over total_iters epochs."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        f = (1.0 - min(self.last_epoch, self.total_iters) / self.total_iters) ** self.power
        return [base * f for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter 2017): lr = eta_min + (base_lr - eta_min) (1 + cos(pi T_cur /
    T_i)) / 2, T_cur the epochs since the last restart, the first period T_0 epochs and each
    next one T_mult times longer. step(epoch) takes fractional epochs (step(epoch + i / iters)
    within an epoch), as PyTorch's."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017), as PyTorch's: lr goes from base_lr up to max_lr
    over step_size_up steps and back over step_size_down (default the same), the height scaled
    per cycle by mode 'triangular' (1), 'triangular2' (halved each cycle) or 'exp_range'
    (gamma ** step), or by scale_fn(x) with scale_mode 'cycle' or 'iterations'. With
    cycle_momentum, momentum (or Adam's beta1) cycles the other way between max_momentum and
    base_momentum. Call step() after every batch. base_lr sets the groups' lr at the start."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        groups = optimizer.param_groups

        def per_group(name, value):
            values = list(value) if isinstance(value, (list, tuple)) else [value] * len(groups)
            if len(values) != len(groups):
                raise ValueError(f"expected {len(groups)} values for {name}, got {len(values)}")
            return values
        base_lrs = per_group("base_lr", base_lr)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, groups):
                g["lr"] = lr
        self.max_lrs = per_group("max_lr", max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size, self.step_ratio = up + down, up / (up + down)
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        if scale_fn is None:
            self._scale_fn = {"triangular": lambda x: 1.0, "triangular2": lambda x: 1 / (2.0 ** (x - 1)),
                              "exp_range": lambda x: gamma ** x}[mode]
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        else:
            self._scale_fn, self.scale_mode = scale_fn, scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = per_group("base_momentum", base_momentum)
            self.max_momentums = per_group("max_momentum", max_momentum)
            if last_epoch == -1:
                for m, g in zip(self.max_momentums, groups):
                    self._set_momentum(g, m)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _set_momentum(self, group, m):
        if self.use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def scale_fn(self, x):
        return self._scale_fn(x)

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base + (top - base) * scale * self.scale_fn(at) for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for g, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(g, high - (high - low) * scale * self.scale_fn(at))
        return lrs


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2 (Loshchilov & Hutter
    2017, without restarts; the closed form)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (number of milestones <= epoch)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** bisect.bisect_right(self.milestones, self.last_epoch) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first total_iters epochs, then base_lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if not 0 <= factor <= 1:
            raise ValueError(f"Constant multiplicative factor expected to be between 0 and 1, got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        f = self.factor if self.last_epoch < self.total_iters else 1.0
        return [base * f for base in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = base_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) /
    total_iters): a linear warm-up (or decay) over total_iters epochs, then constant."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1, "
                             f"and the ending one between 0 and 1; got {start_factor} and {end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t = min(self.last_epoch, self.total_iters) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * t) for base in self.base_lrs]


class ChainedScheduler(LRScheduler):
    """Several schedulers of one optimizer stepped together, their factors multiplied (a
    ConstantLR warm-up times an ExponentialLR decay), as PyTorch's: each group's lr is base_lr
    times the product over the schedulers of their lr / base_lr. PyTorch's recursive forms give
    the same for the schedules that scale base_lr (Step, MultiStep, Exponential, Constant,
    Linear, Lambda, Polynomial, and cosine annealing to eta_min 0 up to T_max; past T_max
    PyTorch's cosine adds a step that the other factors do not scale)."""

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        if any(s.optimizer is not optimizer for s in schedulers):
            raise ValueError("ChainedScheduler expects all schedulers to belong to the same optimizer")
        self.optimizer, self._schedulers = optimizer, schedulers
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self._set_lrs(self.get_lr())

    def get_lr(self):
        lrs = list(self.base_lrs)
        for s in self._schedulers:
            lrs = [lr * (own / base if base else 1.0) for lr, own, base in zip(lrs, s.get_lr(), self.base_lrs)]
        return lrs

    @property
    def last_epoch(self):
        return self._schedulers[0].last_epoch

    def step(self):
        for s in self._schedulers:
            s.last_epoch += 1
        self._set_lrs(self.get_lr())

    def state_dict(self):
        return {"_schedulers": [s.state_dict() for s in self._schedulers], "_last_lr": self.get_last_lr()}

    def load_state_dict(self, state_dict):
        for s, st in zip(self._schedulers, state_dict["_schedulers"]):
            s.load_state_dict(st)
        self._last_lr = list(state_dict.get("_last_lr", self.get_last_lr()))


class SequentialLR(LRScheduler):
    """schedulers[i] from epoch milestones[i - 1] on, each started from its own epoch 0 (a
    warm-up LinearLR, then a CosineAnnealingLR). milestones: len(schedulers) - 1 increasing epochs."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("SequentialLR expects one milestone fewer than schedulers, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        if any(s.optimizer is not optimizer for s in schedulers):
            raise ValueError("SequentialLR expects every scheduler to belong to the same optimizer")
        self.optimizer, self._schedulers, self._milestones = optimizer, list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        for g in optimizer.param_groups:  # undo the step each scheduler took when it was made
            g["lr"] = g["initial_lr"]
        for s in self._schedulers:
            s.last_epoch -= 1
        self._schedulers[0].step()
        self.base_lrs = self._schedulers[0].base_lrs

    def step(self):
        self.last_epoch += 1
        i = bisect.bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s.last_epoch = -1  # this scheduler starts now, at its epoch 0
        s.step()

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        for s, st in zip(self._schedulers, state.pop("_schedulers")):
            s.load_state_dict(st)
        self.__dict__.update(state)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin 2018, "Super-Convergence"), as torch.optim.lr_scheduler.
    OneCycleLR: from max_lr / div_factor up to max_lr over the first pct_start of total_steps,
    then down to max_lr / div_factor / final_div_factor (three_phase: back to the start first),
    each phase a cosine (anneal_strategy='cos') or a line ('linear'); momentum (SGD's momentum,
    Adam's beta1) cycles the other way between max_momentum and base_momentum. Call step()
    after every batch; total_steps = epochs * steps_per_epoch when not given. Stepping past
    total_steps raises ValueError."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.total_steps, self.cycle_momentum = total_steps, cycle_momentum
        self._anneal = self._cos if anneal_strategy == "cos" else self._linear
        up = float(pct_start * total_steps) - 1
        if three_phase:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * up, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                            (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        if len(max_lrs) != len(groups):
            raise ValueError(f"expected {len(groups)} values for max_lr, got {len(max_lrs)}")
        if cycle_momentum and not all("momentum" in g or "betas" in g for g in groups):
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
        for g, m in zip(groups, max_lrs):
            g["initial_lr"], g["max_lr"] = m / div_factor, m
            g["min_lr"] = g["initial_lr"] / final_div_factor
            if cycle_momentum:
                g["max_momentum"], g["base_momentum"] = max_momentum, base_momentum
                self._set_momentum(g, max_momentum)
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start, end, pct):
        return (end - start) * pct + start

    @staticmethod
    def _set_momentum(group, m):
        if "betas" in group:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(g[lr0], g[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(g, self._anneal(g[m0], g[m1], pct))
                    break
                start = end
        return lrs


class ReduceLROnPlateau:
    """lr = max(lr * factor, min_lr) when the metric passed to step(metric) has not improved for
    more than patience epochs (mode 'min': fallen below best * (1 - threshold), 'rel', or best -
    threshold, 'abs'; 'max' the other way), then cooldown epochs without counting. As
    torch.optim.lr_scheduler.ReduceLROnPlateau; changes smaller than eps are skipped."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        n = len(optimizer.param_groups)
        self.min_lrs = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr] * n
        if len(self.min_lrs) != n:
            raise ValueError(f"expected {n} min_lrs, got {len(self.min_lrs)}")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = threshold, threshold_mode, cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def _better(self, a):
        if self.mode == "min":
            return a < (self.best * (1 - self.threshold) if self.threshold_mode == "rel" else self.best - self.threshold)
        return a > (self.best * (1 + self.threshold) if self.threshold_mode == "rel" else self.best + self.threshold)

    def step(self, metrics):
        current = float(metrics)  # a 0-d tensor or a number
        self.last_epoch += 1
        if self._better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, floor in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(g["lr"] * self.factor, floor)
                if g["lr"] - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

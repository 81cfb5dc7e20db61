"""gt.optim: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and
LBFGS with torch.optim's API (param groups with PyTorch's keys, zero_grad, step, state_dict).

Updates run under no_grad and rebind each parameter (`p -= ...`), so a step leaks no worker
memory; every scalar (learning rate, bias corrections) is a fill value, so the update of a
parameter compiles once and replays as one fused kernel.

Every optimizer's `step()` (a subclass's too) ends by sending what was issued since the last
send (`gt._runtime.flush`, which does not wait for it to run). A training step is then one batch
with the same structure each time, which the dispatcher's plan cache recognizes; without it a
loop that reads nothing back is cut every 2048 instructions, anywhere in a step, and every batch
looks new to the dispatcher (capture and passes again: benchmarks/overhead.py's 60000-image
MLP epoch took 3.8-4.0 s instead of 2.2 s).

The updates are written with foreach ops (gt._tensor._foreach, as PyTorch's optimizers use
torch._foreach_*): each line of an update is one call into the client core for all of a
group's parameters, not one Python call per parameter. The instructions, and so the results,
are those of the per-parameter formulas in the docstrings; the client's time for a char_gpt
AdamW step (28 parameters, 420 instructions) went from 1.1-2.0 to about 0.6 ms.

PyTorch's implementation switches `foreach=`, `fused=`, `capturable=` and `differentiable=` are
accepted and kept in each param group (GT has the one implementation above; the worker fuses
each update into a kernel whichever is asked); `maximize=True` ascends the gradient.
"""
import collections
import functools
import inspect
import math

import numpy as np

from .. import _complex
from .. import _functions as T
from .. import _runtime
from .. import dtypes as _dt
from .._tensor import _foreach
from ..autograd import no_grad, enable_grad, _zero_grads
from . import lr_scheduler, swa_utils  # noqa: E402


def _ends_a_batch(step):
    """A subclass's step() made to end by sending its batch of instructions; a step() without
    a closure parameter takes one anyway (`opt.step(closure)`, as every PyTorch optimizer),
    calls it with grad enabled first and returns its loss."""
    takes_closure = len(inspect.signature(step).parameters) > 1

    @functools.wraps(step)
    def step_then_send(self, *args, **kwargs):
        loss = None
        if not takes_closure:
            closure = args[0] if args else kwargs.pop("closure", None)
            args = ()
            if closure is not None:
                with enable_grad():
                    loss = closure()
        # A complex parameter is stepped as its real and imaginary parts, two real parameters
        # (as PyTorch's optimizers step torch.view_as_real(p)): the step sees the parts.
        expanded = _expand_complex(self.param_groups)
        # maximize=True (a group's): the step sees each gradient negated (gradient ascent, as
        # PyTorch's optimizers negate it first); the parameters' .grad are given back unchanged.
        flipped = [p for g in self.param_groups if g.get("maximize") for p in g["params"] if p.grad is not None]
        grads = [p.grad for p in flipped]
        for p in flipped:
            p.grad = -p.grad
        try:
            out = step(self, *args, **kwargs)
        finally:
            for p, g in zip(flipped, grads):
                p.grad = g
            for group, params in expanded:
                group["params"] = params
        _runtime.flush()
        return out if takes_closure else loss
    step_then_send._ends_a_batch = True
    return step_then_send


def _expand_complex(groups):
    """Replaces each complex parameter in `groups` by its two parts (in place); returns
    [(group, its parameter list before)] to put back."""
    expanded = []
    for group in groups:
        params = group["params"]
        if any(_complex.is_complex_tensor(p) for p in params):
            expanded.append((group, params))
            group["params"] = [q for p in params for q in ((p.real, p.imag) if _complex.is_complex_tensor(p) else (p,))]
    return expanded


def _joined(real, imag):
    """A complex parameter's state (as PyTorch's: complex buffers) from its parts' states."""
    return {k: _complex.ComplexTensor(v, imag[k]) if isinstance(v, T.Tensor) and k in imag else v
            for k, v in real.items()}


# The order of a parameter group's keys in PyTorch 2.15's optimizers (after "params").
_KEY_ORDER = {
    "SGD": "lr momentum dampening weight_decay nesterov maximize foreach differentiable fused",
    "Adam": "lr betas eps weight_decay amsgrad maximize foreach capturable differentiable fused decoupled_weight_decay",
    "AdamW": "lr betas eps weight_decay amsgrad maximize foreach capturable differentiable fused decoupled_weight_decay",
    "RMSprop": "lr momentum alpha eps centered weight_decay capturable foreach maximize differentiable",
    "Adagrad": "lr lr_decay eps weight_decay initial_accumulator_value foreach maximize differentiable fused",
    "Adamax": "lr betas eps weight_decay foreach maximize differentiable capturable",
    "NAdam": "lr betas eps weight_decay momentum_decay decoupled_weight_decay maximize foreach capturable differentiable",
    "RAdam": "lr betas eps weight_decay maximize foreach capturable decoupled_weight_decay differentiable",
    "Adadelta": "lr rho eps weight_decay maximize capturable foreach differentiable",
    "ASGD": "lr lambd alpha t0 weight_decay foreach maximize differentiable capturable",
    "Rprop": "lr etas step_sizes foreach maximize differentiable capturable",
}


class Optimizer:
    """Holds `param_groups`: a list of dicts with 'params' and the hyper-parameters (a group
    may override the defaults). `state[p]` holds per-parameter buffers. A subclass's `step()`
    ends by sending the step's instructions (see the module's docstring)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ends_a_batch", False):
            cls.step = _ends_a_batch(step)

    def __init__(self, params, defaults):
        if isinstance(params, T.Tensor):  # (iterating it would give copies of its rows)
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {params.type()}")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = dict(defaults)
        self.param_groups = []
        for g in groups:
            self.add_param_group(g)
        self.state = collections.defaultdict(dict)  # parameter -> its buffers, as torch.optim

    @property
    def params(self):
        return [p for g in self.param_groups for p in g["params"]]

    def __repr__(self):
        """PyTorch's listing: each parameter group's hyper-parameters, sorted by name."""
        out = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"  # (a blank line between groups, as PyTorch's)
            for key in sorted(k for k in group if k != "params"):
                out += f"    {key}: {group[key]}\n"
        return out + ")"

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's gradient (.grad None), or with set_to_none=False zeroes the
        gradients that exist (a parameter without one keeps None), as PyTorch's."""
        _zero_grads(self.params, set_to_none)

    def _ordered(self, group):
        """`group` with its keys in PyTorch's order for this optimizer (params first): printed
        state dicts and param_groups[0].keys() read as PyTorch's."""
        order = ["params"] + _KEY_ORDER.get(type(self).__name__, "").split()
        return {k: group[k] for k in sorted(group, key=lambda k: order.index(k) if k in order else len(order))}

    def add_param_group(self, param_group):
        """Adds a group of parameters (a dict with 'params' and any hyper-parameters, the
        defaults for the rest), as torch.optim. Raises ValueError for a parameter already in a
        group."""
        group = dict(self.defaults)
        group.update(param_group)
        params = param_group["params"]
        group["params"] = [params] if isinstance(params, T.Tensor) else list(params)  # (one Tensor: the group's one)
        seen = {id(p) for p in self.params}
        for p in group["params"]:
            if not isinstance(p, T.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(self._ordered(group))

    def state_dict(self):
        """The optimizer's state as torch.optim's: {"state": {index: {name: value}}, "param_groups":
        [hyper-parameters with "params": [index, ...]]}, parameters numbered in group order.
        The per-parameter buffers are the optimizer's tensors (gt.save fetches them)."""
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        real_of = {id(p.real): p for g in self.param_groups for p in g["params"] if _complex.is_complex_tensor(p)}
        state = {}
        for key, value in self.state.items():
            if id(key) in real_of:  # a complex parameter's state is its parts' (see step_then_send)
                p = real_of[id(key)]
                key, value = p, _joined(value, self.state.get(p.imag, {}))
            if id(key) in index:
                state[index[id(key)]] = {k: _saved(k, v) for k, v in value.items()} if self._counts_are_numbers() \
                    else dict(value)
        return {"state": state, "param_groups": groups}

    def _counts_are_numbers(self):
        """Whether this optimizer steps with GT's own step(), which keeps its counts (_COUNTS) as
        Python numbers: its state_dict gives them as PyTorch's tensors and takes either back. An
        optimizer written outside GT (a subclass with its own step) keeps its state as it stored
        it, as PyTorch's."""
        return str(getattr(type(self).step, "__module__", "")).startswith("gt.")

    def load_state_dict(self, state_dict):
        """Restores what state_dict() gave (from this optimizer or another over parameters of
        the same shapes, in the same order). Raises ValueError when the groups or their sizes
        differ, as torch.optim."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        by_index = {}
        for saved, group in zip(groups, self.param_groups):
            by_index.update(zip(saved["params"], group["params"]))
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = collections.defaultdict(dict)  # parameter -> its buffers, as torch.optim
        for i, values in state_dict["state"].items():
            p = by_index[int(i)]
            if self._counts_are_numbers():
                values = {k: _count(k, v) if k in _COUNTS else _like(v, p) for k, v in values.items()}
            else:  # (PyTorch's _process_value_according_to_param_policy: a step tensor as it is)
                values = {k: v if k == "step" else _like(v, p) for k, v in values.items()}
            if _complex.is_complex_tensor(p):  # its parts' states (see step_then_send)
                for part, which in ((p.real, "real"), (p.imag, "imag")):
                    self.state[part] = {k: getattr(v, which) if _complex.is_complex_tensor(v) else v
                                        for k, v in values.items()}
            else:
                self.state[p] = values

    def _state(self, p):
        return self.state[p]

    def _groups(self):
        """Each param group with those of its parameters that have a gradient (a group without
        any is skipped), for a step."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                yield group, params

    def _step_states(self, params, buffers):
        """Each parameter's state with its step count advanced and the named buffers (name ->
        initial value) made, filled with that value in the parameter's shape, if missing."""
        states = [self._state(p) for p in params]
        for st, p in zip(states, params):
            st["step"] = st.get("step", 0) + 1
            for name, value in buffers.items():
                if name not in st:
                    st[name] = T.full_like(p, value)
        return states

    def step(self):
        raise NotImplementedError


# Per-parameter numbers the optimizers keep as Python numbers (their arithmetic is the client's)
# and PyTorch keeps as 0-d float32 tensors: a state_dict gives them as PyTorch's, and a loaded
# one (GT's or PyTorch's) may hold either.
_COUNTS = ("step", "mu_product", "eta", "mu")


def _saved(key, value):
    if key in _COUNTS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return T.tensor(float(value), dtype=_dt.float32)
    return value


def _count(key, value):
    if isinstance(value, (T.Tensor, np.ndarray, np.generic)):
        value = value.item()
    return int(value) if key == "step" and float(value).is_integer() else value


def _like(value, p):
    """A saved state value for parameter p: a tensor (a NumPy array made one) in p's dtype when
    p is floating point, of whatever shape it has (Adafactor's row and column moments are not
    p's), anything else (a step count) as it is, as PyTorch's
    _process_value_according_to_param_policy."""
    if isinstance(value, (T.Tensor, np.ndarray)):
        t = value if isinstance(value, T.Tensor) else T.tensor(value)
        return t if t.dtype == p.dtype or not p.dtype.is_floating_point else t.to(p.dtype)
    return value


def _assign_all(params, values):
    """params[i] now holds values[i] (as `p -= ...` rebinds p's tensor in place)."""
    for p, value in zip(params, values):
        p._assign(value)


def _check_lr(lr):
    if lr < 0:
        raise ValueError(f"Invalid learning rate: {lr}")


class SGD(Optimizer):
    """Stochastic gradient descent as torch.optim.SGD: g += weight_decay * p; with momentum,
    buf = momentum * buf + (1 - dampening) * g (buf = g at the first step), and g = buf, or
    g + momentum * buf with nesterov (Sutskever et al. 2013); p -= lr * g."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _check_lr(lr)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        # (capturable is accepted and not kept: PyTorch's SGD has no such group entry)
        super().__init__(params, dict(foreach=foreach, maximize=maximize, differentiable=differentiable, fused=fused, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov))

    def step(self):
        with no_grad():
            for group in self.param_groups:
                lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
                params = [p for p in group["params"] if p.grad is not None]
                grads = [p.grad for p in params]
                if not params:
                    continue
                if wd:
                    grads = _foreach("add", grads, _foreach("mul", params, wd))
                if momentum:
                    states = [self._state(p) for p in params]
                    bufs = [st.get("momentum_buffer") for st in states]
                    old = [i for i, b in enumerate(bufs) if b is not None]  # (buf = g at the first step)
                    updated = _foreach("add", _foreach("mul", [bufs[i] for i in old], momentum),
                                       _foreach("mul", [grads[i] for i in old], 1 - group["dampening"]))
                    bufs = [g.detach() for g in grads]  # (a tensor of its own, as PyTorch's clone: zeroing
                    # or scaling p.grad in place later must not change the buffer)
                    for i, b in zip(old, updated):
                        bufs[i] = b
                    for st, b in zip(states, bufs):
                        st["momentum_buffer"] = b
                    grads = _foreach("add", grads, _foreach("mul", bufs, momentum)) if group["nesterov"] else bufs
                _assign_all(params, _foreach("sub", params, _foreach("mul", grads, lr)))


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, Algorithm 1) as torch.optim.Adam: g += weight_decay * p (L2;
    with decoupled_weight_decay, p -= lr * weight_decay * p first, as AdamW);
    m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr / (1-b1^t) * m / (sqrt(v / (1-b2^t)) + eps).
    amsgrad (Reddi et al. 2018) divides by the running maximum of v instead of v."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr(lr)
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        super().__init__(params, dict(foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable, fused=fused, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def step(self):
        with no_grad():
            for group in self.param_groups:
                lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
                params = [p for p in group["params"] if p.grad is not None]
                grads = [p.grad for p in params]
                if not params:
                    continue
                grads = _decay(params, grads, group)
                states = [self._state(p) for p in params]
                steps = []
                for st in states:
                    st["step"] = st.get("step", 0) + 1
                    steps.append(st["step"])
                # m = g (1-b1) and v = g^2 (1-b2) at a parameter's first step, else the moving averages.
                first = [i for i, st in enumerate(states) if st.get("exp_avg") is None]
                later = [i for i, st in enumerate(states) if st.get("exp_avg") is not None]
                g1, g2 = [grads[i] for i in first], [grads[i] for i in later]
                new_m = _foreach("mul", g1, 1 - b1) + _foreach(
                    "add", _foreach("mul", [states[i]["exp_avg"] for i in later], b1), _foreach("mul", g2, 1 - b1))
                new_v = _foreach("mul", _foreach("mul", g1, g1), 1 - b2) + _foreach(
                    "add", _foreach("mul", [states[i]["exp_avg_sq"] for i in later], b2),
                    _foreach("mul", _foreach("mul", g2, g2), 1 - b2))
                for i, m, v in zip(first + later, new_m, new_v):
                    states[i]["exp_avg"], states[i]["exp_avg_sq"] = m, v
                m = [states[i]["exp_avg"] for i in range(len(params))]
                v = [states[i]["exp_avg_sq"] for i in range(len(params))]
                if group.get("amsgrad"):
                    v = [st["max_exp_avg_sq"] if "max_exp_avg_sq" in st else T.zeros_like(vi) for st, vi in zip(states, v)]
                    v = _foreach("maximum", v, [st["exp_avg_sq"] for st in states])
                    for st, vi in zip(states, v):
                        st["max_exp_avg_sq"] = vi
                step_size = [lr / (1 - b1 ** t) for t in steps]
                root_c2 = [math.sqrt(1 - b2 ** t) for t in steps]
                denominator = _foreach("add", _foreach("div", _foreach("sqrt", v), root_c2), eps)
                _assign_all(params, _foreach("sub", params, _foreach("div", _foreach("mul", step_size, m), denominator)))


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019): p -= lr * weight_decay * p
    before the Adam update (default weight_decay 0.01, as PyTorch)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


def _decay(params, grads, group):
    """Weight decay: with the group's decoupled_weight_decay, p -= lr * weight_decay * p (p is
    rebound) and the gradients are returned as they are; else g + weight_decay * p (L2)."""
    wd = group["weight_decay"]
    if wd and group.get("decoupled_weight_decay"):
        _assign_all(params, _foreach("sub", params, _foreach("mul", params, group["lr"] * wd)))
    elif wd:
        grads = _foreach("add", grads, _foreach("mul", params, wd))
    return grads


def _grads_with_decay(params, wd):
    grads = [p.grad for p in params]
    return _foreach("add", grads, _foreach("mul", params, wd)) if wd else grads


class RMSprop(Optimizer):
    """RMSprop (Hinton, Coursera lecture 6e) as torch.optim.RMSprop: g += weight_decay * p;
    v = alpha v + (1 - alpha) g^2 (v starts at 0); with centered, ga = alpha ga + (1 - alpha) g
    and the denominator is sqrt(v - ga^2) + eps, else sqrt(v) + eps; with momentum,
    buf = momentum buf + g / denominator and p -= lr buf, else p -= lr g / denominator."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _check_lr(lr)
        if alpha < 0 or eps < 0 or momentum < 0:
            raise ValueError(f"Invalid alpha, eps or momentum: {alpha}, {eps}, {momentum}")
        super().__init__(params, dict(foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
                grads = _grads_with_decay(params, group["weight_decay"])
                buffers = ["square_avg"] + ["momentum_buffer"] * bool(momentum) + ["grad_avg"] * group["centered"]
                states = self._step_states(params, {name: 0.0 for name in buffers})
                v = _foreach("add", _foreach("mul", [st["square_avg"] for st in states], alpha),
                             _foreach("mul", _foreach("mul", grads, grads), 1 - alpha))
                for st, vi in zip(states, v):
                    st["square_avg"] = vi
                if group["centered"]:
                    ga = _foreach("add", _foreach("mul", [st["grad_avg"] for st in states], alpha),
                                  _foreach("mul", grads, 1 - alpha))
                    for st, gi in zip(states, ga):
                        st["grad_avg"] = gi
                    v = _foreach("sub", v, _foreach("mul", ga, ga))
                denominator = _foreach("add", _foreach("sqrt", v), eps)
                if momentum:
                    buf = _foreach("add", _foreach("mul", [st["momentum_buffer"] for st in states], momentum),
                                   _foreach("div", grads, denominator))
                    for st, b in zip(states, buf):
                        st["momentum_buffer"] = b
                    _assign_all(params, _foreach("sub", params, _foreach("mul", buf, lr)))
                else:
                    _assign_all(params, _foreach("sub", params, _foreach("div", _foreach("mul", grads, lr), denominator)))


class Adagrad(Optimizer):
    """Adagrad (Duchi et al. 2011) as torch.optim.Adagrad: g += weight_decay * p;
    clr = lr / (1 + (t - 1) lr_decay); sum += g^2 (starting at initial_accumulator_value);
    p -= clr g / (sqrt(sum) + eps)."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _check_lr(lr)
        if lr_decay < 0 or initial_accumulator_value < 0 or eps < 0:
            raise ValueError(f"Invalid lr_decay, initial_accumulator_value or eps: {lr_decay}, "
                             f"{initial_accumulator_value}, {eps}")
        super().__init__(params, dict(foreach=foreach, maximize=maximize, differentiable=differentiable, fused=fused, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps))
        for group in self.param_groups:  # (made now, as PyTorch's: `higher` and saved states read them)
            for p in group["params"]:
                self._state(p).update(step=0.0, sum=T.full_like(p, group["initial_accumulator_value"]))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                grads = _grads_with_decay(params, group["weight_decay"])
                states = self._step_states(params, {"sum": group["initial_accumulator_value"]})
                sums = _foreach("add", [st["sum"] for st in states], _foreach("mul", grads, grads))
                for st, si in zip(states, sums):
                    st["sum"] = si
                clr = [group["lr"] / (1 + (st["step"] - 1) * group["lr_decay"]) for st in states]
                denominator = _foreach("add", _foreach("sqrt", sums), group["eps"])
                _assign_all(params, _foreach("sub", params, _foreach("div", _foreach("mul", grads, clr), denominator)))


class Adadelta(Optimizer):
    """Adadelta (Zeiler 2012) as torch.optim.Adadelta: g += weight_decay * p;
    v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) delta^2; p -= lr delta (v and u start at 0)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                rho, eps = group["rho"], group["eps"]
                grads = _grads_with_decay(params, group["weight_decay"])
                states = self._step_states(params, {"square_avg": 0.0, "acc_delta": 0.0})
                v = _foreach("add", _foreach("mul", [st["square_avg"] for st in states], rho),
                             _foreach("mul", _foreach("mul", grads, grads), 1 - rho))
                u = [st["acc_delta"] for st in states]
                delta = _foreach("mul", _foreach("div", _foreach("sqrt", _foreach("add", u, eps)),
                                                 _foreach("sqrt", _foreach("add", v, eps))), grads)
                u = _foreach("add", _foreach("mul", u, rho), _foreach("mul", _foreach("mul", delta, delta), 1 - rho))
                for st, vi, ui in zip(states, v, u):
                    st["square_avg"], st["acc_delta"] = vi, ui
                _assign_all(params, _foreach("sub", params, _foreach("mul", delta, group["lr"])))


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameters: {betas}")


def _moments(states, grads, b1, b2):
    """m = b1 m + (1-b1) g and v = b2 v + (1-b2) g^2 into each state's exp_avg / exp_avg_sq
    (both start at 0); returns (m, v)."""
    m = _foreach("add", _foreach("mul", [st["exp_avg"] for st in states], b1), _foreach("mul", grads, 1 - b1))
    v = _foreach("add", _foreach("mul", [st["exp_avg_sq"] for st in states], b2),
                 _foreach("mul", _foreach("mul", grads, grads), 1 - b2))
    for st, mi, vi in zip(states, m, v):
        st["exp_avg"], st["exp_avg_sq"] = mi, vi
    return m, v


class Adamax(Optimizer):
    """Adamax (Kingma & Ba 2015, section 7.1) as torch.optim.Adamax: g += weight_decay * p;
    m = b1 m + (1-b1) g; u = max(b2 u, |g| + eps); p -= lr / (1 - b1^t) * m / u (m, u start at 0)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *, maximize=False,
                 differentiable=False, capturable=False):
        _check_lr(lr)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                (b1, b2), eps = group["betas"], group["eps"]
                grads = _grads_with_decay(params, group["weight_decay"])
                states = self._step_states(params, {"exp_avg": 0.0, "exp_inf": 0.0})
                m = _foreach("add", _foreach("mul", [st["exp_avg"] for st in states], b1), _foreach("mul", grads, 1 - b1))
                u = _foreach("maximum", _foreach("mul", [st["exp_inf"] for st in states], b2),
                             _foreach("add", _foreach("abs", grads), eps))
                for st, mi, ui in zip(states, m, u):
                    st["exp_avg"], st["exp_inf"] = mi, ui
                clr = [group["lr"] / (1 - b1 ** st["step"]) for st in states]
                _assign_all(params, _foreach("sub", params, _foreach("div", _foreach("mul", m, clr), u)))


class NAdam(Optimizer):
    """NAdam (Dozat 2016, "Incorporating Nesterov Momentum into Adam") as torch.optim.NAdam:
    weight decay as Adam's (L2, or decoupled); mu_t = b1 (1 - 0.5 * 0.96^(t momentum_decay)),
    mu_prod = mu_1 ... mu_t; m, v as Adam's; denom = sqrt(v / (1 - b2^t)) + eps;
    p -= lr (1 - mu_t) / (1 - mu_prod) g / denom + lr mu_{t+1} / (1 - mu_prod mu_{t+1}) m / denom."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_betas(betas)
        if momentum_decay < 0:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                lr, (b1, b2), eps, psi = group["lr"], group["betas"], group["eps"], group["momentum_decay"]
                grads = _decay(params, [p.grad for p in params], group)
                states = self._step_states(params, {"exp_avg": 0.0, "exp_avg_sq": 0.0})
                m, v = _moments(states, grads, b1, b2)
                g_scale, m_scale, root_c2 = [], [], []
                for st in states:
                    t = st["step"]
                    mu, mu_next = b1 * (1 - 0.5 * 0.96 ** (t * psi)), b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
                    st["mu_product"] = st.get("mu_product", 1.0) * mu
                    g_scale.append(lr * (1 - mu) / (1 - st["mu_product"]))
                    m_scale.append(lr * mu_next / (1 - st["mu_product"] * mu_next))
                    root_c2.append(math.sqrt(1 - b2 ** t))
                denom = _foreach("add", _foreach("div", _foreach("sqrt", v), root_c2), eps)
                update = _foreach("add", _foreach("mul", grads, g_scale), _foreach("mul", m, m_scale))
                _assign_all(params, _foreach("sub", params, _foreach("div", update, denom)))


class RAdam(Optimizer):
    """RAdam (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate and Beyond",
    Algorithm 2) as torch.optim.RAdam: weight decay as Adam's; m, v as Adam's;
    rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 t b2^t / (1 - b2^t); m_hat = m / (1 - b1^t);
    if rho_t > 5: r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)) and
    p -= lr m_hat r sqrt(1 - b2^t) / (sqrt(v) + eps); else p -= lr m_hat."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
                grads = _decay(params, [p.grad for p in params], group)
                states = self._step_states(params, {"exp_avg": 0.0, "exp_avg_sq": 0.0})
                m, v = _moments(states, grads, b1, b2)
                rho_inf = 2 / (1 - b2) - 1
                new = []
                for p, st, mi, vi in zip(params, states, m, v):
                    t = st["step"]
                    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
                    rho_t = rho_inf - 2 * t * b2 ** t / c2
                    if rho_t > 5:
                        r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                        new.append(p - mi * (lr * r * math.sqrt(c2) / c1) / (T.sqrt(vi) + eps))
                    else:
                        new.append(p - mi * (lr / c1))
                _assign_all(params, new)


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun 1993) as torch.optim.Rprop: where g and the previous step's
    gradient have the same sign the element's step size grows by etas[1], where they differ it
    shrinks by etas[0] and g counts as 0 this step; step sizes (starting at lr) stay within
    step_sizes; p -= sign(g) * step size."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                (minus, plus), (lo, hi) = group["etas"], group["step_sizes"]
                states = self._step_states(params, {"prev": 0.0, "step_size": group["lr"]})
                new = []
                for p, st in zip(params, states):
                    g = p.grad
                    agree = g * st["prev"]
                    factor = T.where(agree > 0, plus, T.where(agree < 0, minus, 1.0))
                    st["step_size"] = T.clamp(st["step_size"] * factor, lo, hi)
                    g = T.where(agree < 0, 0.0, g)
                    st["prev"] = g
                    new.append(p - T.sign(g) * st["step_size"])
                _assign_all(params, new)


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky 1992) as torch.optim.ASGD: g += weight_decay * p;
    p = p (1 - lambd eta) - eta g; ax = p while mu = 1, then ax += mu (p - ax);
    eta = lr / (1 + lambd lr t)^alpha and mu = 1 / max(1, t - t0) for the next step (eta starts
    at lr, mu at 1). `ax` (state) is the averaged parameter."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
                 differentiable=False, capturable=False):
        _check_lr(lr)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self):
        with no_grad():
            for group, params in self._groups():
                lr, lambd = group["lr"], group["lambd"]
                grads = _grads_with_decay(params, group["weight_decay"])
                states = self._step_states(params, {"ax": 0.0})
                new = []
                for p, g, st in zip(params, grads, states):
                    eta, mu = st.get("eta", lr), st.get("mu", 1.0)
                    p = p * (1 - lambd * eta) - g * eta
                    st["ax"] = st["ax"] + (p - st["ax"]) * mu if mu != 1 else p
                    st["eta"] = lr / (1 + lambd * lr * st["step"]) ** group["alpha"]
                    st["mu"] = 1 / max(1, st["step"] - group["t0"])
                    new.append(p)
                _assign_all(params, new)


def _dot(a, b):
    """The dot product of two flat vectors, a 0-d tensor."""
    return T.sum(a * b)


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to
    `bounds` (default: the interval); the bisection point where the cubic has no minimum
    (Nocedal & Wright, Numerical Optimization, 2nd ed., eq. 3.59). Python floats."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    square = d1 * d1 - g1 * g2
    if square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(square)
    x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2)) if x1 <= x2 else \
        x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class LBFGS(Optimizer):
    """Limited-memory BFGS (Liu & Nocedal 1989; the two-loop recursion of Nocedal & Wright,
    Numerical Optimization, algorithm 7.4) as torch.optim.LBFGS: one parameter group,
    `step(closure)` where closure() recomputes the loss (zero_grad, forward, backward) and
    returns it; up to max_iter iterations per step (max_eval closure calls, default
    max_iter * 5 / 4), keeping history_size curvature pairs; stops when the largest gradient
    component is <= tolerance_grad or a step or loss change is <= tolerance_change. Step size:
    lr (the first iteration min(1, 1 / |g|_1) * lr), or line_search_fn="strong_wolfe" (the
    strong Wolfe conditions, c1 = 1e-4, c2 = 0.9, by cubic interpolation: Nocedal & Wright
    algorithms 3.5 and 3.6). The parameters are one flat vector inside (their concatenation);
    comparisons with the tolerances read values back (a wait each), as PyTorch's do."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        _check_lr(lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        # (detach: a new tensor object even where cat and reshape give their operand back, so
        # that rebinding a parameter or its gradient later does not change it)
        return T.cat([T.reshape(p.grad, -1) if p.grad is not None else T.zeros(p.numel(), dtype=p.dtype)
                      for p in self._params], 0).detach()

    def _add(self, t, d):
        """p += t * d for each parameter's slice of the flat direction d."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p._assign(p + T.reshape(T.narrow(d, 0, offset, n), p.shape) * t)
            offset += n

    def _flat_params(self):
        return T.cat([T.reshape(p, -1) for p in self._params], 0).detach()

    def _set_params(self, flat):
        offset = 0
        for p in self._params:
            n = p.numel()
            p._assign(T.reshape(T.narrow(flat, 0, offset, n), p.shape))
            offset += n

    def _evaluate(self, closure, x, t, d):
        """Loss (a float) and flat gradient at x + t d; the parameters are put back to x."""
        with no_grad():
            self._set_params(x)
            self._add(t, d)
        from ..autograd import enable_grad
        with enable_grad():
            loss = float(closure())
        g = self._flat_grad()
        with no_grad():
            self._set_params(x)
        return loss, g

    def _strong_wolfe(self, closure, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
        """Step t along d satisfying the strong Wolfe conditions (bracketing, then zoom by cubic
        interpolation). Returns (f_new, g_new, t, evaluations)."""
        d_norm = float(T.max(T.abs(d)).item())
        f_new, g_new = self._evaluate(closure, x, t, d)
        evals, gtd_new = 1, float(_dot(g_new, d).item())
        t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
        done, bracket = False, None
        for _ in range(max_ls):
            if f_new > f + c1 * t * gtd or (evals > 2 and f_new >= f_prev):
                bracket = [(t_prev, f_prev, g_prev, gtd_prev), (t, f_new, g_new, gtd_new)]
                break
            if abs(gtd_new) <= -c2 * gtd:
                return f_new, g_new, t, evals
            if gtd_new >= 0:
                bracket = [(t_prev, f_prev, g_prev, gtd_prev), (t, f_new, g_new, gtd_new)]
                break
            lo, hi = t + 0.01 * (t - t_prev), t * 10
            t_next = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(lo, hi))
            t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
            t = t_next
            f_new, g_new = self._evaluate(closure, x, t, d)
            evals += 1
            gtd_new = float(_dot(g_new, d).item())
        else:
            return f_new, g_new, t, evals
        # zoom: shrink the bracket until the strong Wolfe conditions hold
        for _ in range(max_ls - evals + 1):
            (t0, f0, g0, gtd0), (t1, f1, g1, gtd1) = bracket
            low, high = (0, 1) if f0 <= f1 else (1, 0)
            if abs(t1 - t0) * d_norm < tolerance_change:
                break
            t = _cubic_minimum(t0, f0, gtd0, t1, f1, gtd1)
            width = max(t0, t1) - min(t0, t1)
            if min(max(t0, t1) - t, t - min(t0, t1)) < 0.1 * width:  # too close to an end: move in
                t = max(t0, t1) - 0.1 * width if abs(t - max(t0, t1)) < abs(t - min(t0, t1)) else min(t0, t1) + 0.1 * width
            f_new, g_new = self._evaluate(closure, x, t, d)
            evals += 1
            gtd_new = float(_dot(g_new, d).item())
            point = (t, f_new, g_new, gtd_new)
            if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
                bracket[high] = point
            else:
                if abs(gtd_new) <= -c2 * gtd:
                    done = True
                elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                    bracket[high] = bracket[low]
                bracket[low] = point
            if done:
                break
        t, f_new, g_new, _ = bracket[0] if bracket[0][1] <= bracket[1][1] else bracket[1]
        return f_new, g_new, t, evals

    def step(self, closure):
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that recomputes the loss (closure() -> loss)")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change, history = group["tolerance_grad"], group["tolerance_change"], group["history_size"]
        state = self.state[self.param_groups[0]["params"][0]]  # (PyTorch's key: the first parameter)
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        from ..autograd import enable_grad
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        with no_grad():
            g = self._flat_grad()
            if float(T.max(T.abs(g)).item()) <= tol_grad:
                return orig_loss
            d, t = state.get("d"), state.get("t")
            dirs, steps, ro = state.get("old_dirs", []), state.get("old_stps", []), state.get("ro", [])
            h_diag, g_prev, loss_prev = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d, dirs, steps, ro, h_diag = -g, [], [], [], 1.0
                else:
                    y, s = g - g_prev, d * t
                    ys = _dot(y, s)
                    if float(ys.item()) > 1e-10:  # a curvature pair that keeps H positive definite
                        if len(dirs) == history:
                            dirs.pop(0), steps.pop(0), ro.pop(0)
                        dirs.append(y), steps.append(s), ro.append(1.0 / ys)
                        h_diag = ys / _dot(y, y)
                    q, alphas = -g, [None] * len(dirs)
                    for i in range(len(dirs) - 1, -1, -1):  # two-loop recursion
                        alphas[i] = _dot(steps[i], q) * ro[i]
                        q = q - dirs[i] * alphas[i]
                    d = r = q * h_diag
                    for i in range(len(dirs)):
                        beta = _dot(dirs[i], r) * ro[i]
                        r = r + steps[i] * (alphas[i] - beta)
                    d = r
                g_prev, loss_prev = g, loss
                t = min(1.0, 1.0 / float(T.sum(T.abs(g)).item())) * lr if state["n_iter"] == 1 else lr
                gtd = float(_dot(g, d).item())
                if gtd > -tol_change:  # not a descent direction
                    break
                used = 0
                if group["line_search_fn"] == "strong_wolfe":
                    x = self._flat_params()
                    loss, g, t, used = self._strong_wolfe(closure, x, t, d, loss, g, gtd, tolerance_change=tol_change)
                    self._add(t, d)
                    done = float(T.max(T.abs(g)).item()) <= tol_grad
                else:
                    self._add(t, d)
                    done = False
                    if n_iter != max_iter:
                        with enable_grad():
                            loss = float(closure())
                        g = self._flat_grad()
                        done = float(T.max(T.abs(g)).item()) <= tol_grad
                        used = 1
                evals += used
                state["func_evals"] += used
                if n_iter == max_iter or evals >= max_eval or done:
                    break
                if float(T.max(T.abs(d * t)).item()) <= tol_change or abs(loss - loss_prev) < tol_change:
                    break
            state.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag, prev_flat_grad=g_prev,
                         prev_loss=loss_prev)
        return orig_loss

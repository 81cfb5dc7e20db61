"""gt.amp: mixed precision with torch.amp's API: `autocast` and `GradScaler`.

    scaler = gt.amp.GradScaler()
    with gt.autocast(device_type="cuda", dtype=gt.bfloat16):
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

Inside `autocast`, matrix products (`matmul`, `@`, `mm`, `bmm`, `F.linear`, and so the layers and
convolutions built on them) cast float32/float64 operands to the autocast dtype and give their
result in it; the ops on PyTorch's float32 lists for the autocast's device type (the losses,
and on "cuda" also softmax, normalizations, sums, exp/log/pow...: _CPU, _CUDA below) cast
float16/bfloat16 operands to float32; every other op follows ordinary type promotion (a float32
bias added to a bfloat16 product gives float32). The gradients flow back through the casts to
float32 parameters. GT's kernels compute float16 and bfloat16 in float32 and round once per op, so on
CPU workers autocast saves memory and traffic, not arithmetic.
"""
import contextlib
import functools
import warnings

from . import _tensor
from . import dtypes as _dt


class autocast(contextlib.ContextDecorator):
    """Context manager (or decorator): matrix products inside compute in `dtype` (default
    float16 for device_type "cuda", bfloat16 otherwise); enabled=False turns an enclosing
    autocast off, as does device_type "cuda" when the session has no GPU workers (with
    PyTorch's warning). cache_enabled is accepted."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if dtype is None:
            dtype = _dt.float16 if device_type == "cuda" else _dt.bfloat16
        dtype = _dt.resolve(dtype)
        if enabled and dtype not in (_dt.float16, _dt.bfloat16):  # PyTorch's warning, and no autocast
            where = "CUDA" if device_type == "cuda" else "CPU"
            warnings.warn(f"In {where} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{where} Autocast only supports dtype of torch.float16, torch.bfloat16 currently.",
                          stacklevel=2)
            enabled = False
        if enabled and device_type == "cuda":
            from . import cuda
            if not cuda.is_available():  # PyTorch's warning, and float32 (as GradScaler turns itself off)
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                              stacklevel=2)
                enabled = False
        self.device_type, self.dtype, self.enabled = device_type, dtype, bool(enabled)
        self._saved = []

    def __enter__(self):
        self._saved.append((_tensor._autocast_dtype, _autocast_device[0]))
        _tensor._autocast_dtype = self.dtype if self.enabled and self.dtype != _dt.float32 else None
        _autocast_device[0] = "cuda" if self.device_type == "cuda" else "cpu"
        return self

    def __exit__(self, *exc):
        _tensor._autocast_dtype, _autocast_device[0] = self._saved.pop()
        return False


_autocast_device = ["cpu"]  # the active autocast's device type: which ops run in float32


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """Decorator of a custom autograd.Function's forward, as torch.amp.custom_fwd: with
    cast_inputs (a dtype), inside an enabled autocast the floating-point tensor arguments are
    cast to it and the forward runs with autocast off; otherwise the forward runs as it is (its
    backward, under custom_bwd, sees the same autocast state)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        ctx = args[0] if args else None
        state = (_tensor._autocast_dtype, _autocast_device[0])
        if ctx is not None:
            try:
                ctx._gt_autocast = state
            except AttributeError:
                pass
        if cast_inputs is None or _tensor._autocast_dtype is None:
            return fwd(*args, **kwargs)
        dtype = _dt.resolve(cast_inputs)
        cast = [_apply(a, lambda t: t.to(dtype) if t.dtype.is_floating_point else t) for a in args]
        with autocast(device_type, enabled=False):
            return fwd(*cast, **{k: _apply(v, lambda t: t.to(dtype) if t.dtype.is_floating_point else t)
                                 for k, v in kwargs.items()})
    return forward


def custom_bwd(bwd=None, *, device_type="cuda"):
    """Decorator of a custom autograd.Function's backward, as torch.amp.custom_bwd: it runs in the
    autocast state its forward (under custom_fwd) ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx, *grads):
        saved = (_tensor._autocast_dtype, _autocast_device[0])
        _tensor._autocast_dtype, _autocast_device[0] = getattr(ctx, "_gt_autocast", saved)
        try:
            return bwd(ctx, *grads)
        finally:
            _tensor._autocast_dtype, _autocast_device[0] = saved
    return backward

# Ops autocast runs in float32, their float16/bfloat16 operands cast up, as PyTorch's lists
# ("CPU Ops that can autocast to float32" and "CUDA Ops that can autocast to float32" in
# https://pytorch.org/docs/stable/amp.html): the losses on both, and on CUDA also the
# reductions, normalizations and the functions whose range or precision a half type lacks.
_LOSSES = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "poisson_nll_loss", "cosine_embedding_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "ctc_loss"]
_CPU = [("F", n) for n in _LOSSES] + [(o, n) for o in ("gt", "Tensor") for n in ("prod", "cdist", "trace")] + \
    [("F", n) for n in ("avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "grid_sample")]
_CUDA = [("F", n) for n in _LOSSES] + [(o, n) for o in ("gt", "Tensor") for n in (
    "prod", "cdist", "dist", "cumsum", "cumprod", "sum", "norm", "renorm", "exp", "expm1", "log", "log1p", "log2", "log10",
    "pow", "rsqrt", "reciprocal", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "softmax", "log_softmax")] + \
    [("Tensor", n) for n in ("__pow__", "__rpow__", "__rtruediv__")] + [("F", n) for n in (
        "softmax", "log_softmax", "softmin", "layer_norm", "group_norm", "normalize", "softplus", "cosine_similarity",
        "pdist")]


def _float32_op(fn, device):
    @functools.wraps(fn)
    def in_float32(*args, **kwargs):
        if _tensor._autocast_dtype is None or _autocast_device[0] != device:
            return fn(*args, **kwargs)
        return fn(*_apply(args, _up), **{k: _apply(v, _up) for k, v in kwargs.items()})
    return in_float32


def _up(t):
    return t.float() if t.dtype in (_dt.float16, _dt.bfloat16) else t


def _install():
    """Wraps the float32 ops of both lists wherever GT binds them (an op on both lists gets
    both wrappers, each acting under its own device type)."""
    import gt
    from . import _rebind
    owners = {"gt": gt, "F": gt.nn.functional, "Tensor": _tensor.Tensor}
    for device, ops in (("cpu", _CPU), ("cuda", _CUDA)):
        _rebind.rebind([(owner, name, device) for owner, name in ops], _float32_op, owners)


def is_autocast_available(device_type):
    return True


def is_autocast_enabled(device_type="cuda"):
    """Whether an autocast for `device_type` ("cuda" without one, as PyTorch's legacy form;
    "cpu") is active, as torch.is_autocast_enabled."""
    if _tensor._autocast_dtype is None:
        return False
    return _autocast_device[0] == ("cuda" if device_type == "cuda" else "cpu")


def get_autocast_dtype(device_type):
    """The active autocast's dtype, else its default for device_type (float16 on "cuda",
    bfloat16 otherwise), as torch.get_autocast_dtype."""
    if is_autocast_enabled(device_type):
        return _tensor._autocast_dtype
    return _dt.float16 if device_type == "cuda" else _dt.bfloat16


def _apply(value, fn):
    """fn on every tensor in a tensor, list, tuple or dict (nested)."""
    if isinstance(value, _tensor.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_apply(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _apply(v, fn) for k, v in value.items()}
    return value


class GradScaler:
    """Loss scaling for float16 training (Micikevicius et al. 2018), as torch.amp.GradScaler:
    scale(loss) multiplies by the scale; step(optimizer) divides the gradients by it
    (unscale_, if you have not), reads whether any is inf or NaN (a wait, as PyTorch's does)
    and skips the optimizer's step if so; update() halves the scale (backoff_factor) after a
    skipped step and doubles it (growth_factor) after growth_interval steps without one. With
    enabled=False every method passes through, and a "cuda" scaler (the default) disables
    itself with PyTorch's warning when the session's workers are not GPUs (so nanoGPT's CPU run
    does not wait on every step); GradScaler("cpu") scales on any worker. The scale is a
    Python float."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if growth_factor <= 1.0 or not 0.0 < backoff_factor < 1.0:
            raise ValueError("GradScaler: growth_factor must be > 1 and backoff_factor in (0, 1)")
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda":
            from . import cuda
            if not cuda.is_available():  # as PyTorch: nothing to scale for (and no wait per step)
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
                self._enabled = False
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval, self._growth_tracker = int(growth_interval), 0
        self._per_optimizer = {}  # id(optimizer) -> {"unscaled": bool, "found_inf": Tensor or bool, "stepped": bool}

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples/dicts of them) times the scale."""
        if not self._enabled:
            return outputs
        return _apply(outputs, lambda t: t * self._scale)

    def unscale_(self, optimizer):
        """Divides the gradients of optimizer's parameters by the scale (in place, once per
        step) and notes whether any is inf or NaN. Raises RuntimeError when called twice
        before update()."""
        if not self._enabled:
            return
        state = self._per_optimizer.setdefault(id(optimizer), {})
        if state.get("unscaled"):
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        from .autograd import no_grad
        inv = 1.0 / self._scale
        bad = None
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad = p.grad * inv
                    nonfinite = _nonfinite_count(p.grad)
                    bad = nonfinite if bad is None else bad + nonfinite
        state["unscaled"] = True
        state["found_inf"] = bad

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless a gradient is inf or NaN; returns what it
        returns (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._per_optimizer.setdefault(id(optimizer), {})
        if not state.get("unscaled"):
            self.unscale_(optimizer)
        bad = state.get("found_inf")
        found = bad is not None and float(bad.item()) > 0
        state["stepped"], state["skipped"] = True, found
        return None if found else optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Adjusts the scale after the step(s) since the last update (or sets new_scale)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, _tensor.Tensor) else new_scale)
        elif any(s.get("skipped") for s in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._per_optimizer:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _nonfinite_count(t):
    """A 0-d float32 tensor: how many elements of t are inf or NaN."""
    from . import _functions as T
    return T.sum(T.cast(T.logical_not(T.isfinite(t)), _dt.float32))


__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype", "custom_fwd",
           "custom_bwd"]

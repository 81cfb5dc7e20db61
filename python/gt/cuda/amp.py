"""gt.cuda.amp: torch.cuda.amp, PyTorch's older spelling of torch.amp with device "cuda".

    from torch.cuda.amp import autocast, GradScaler   # under gt.as_torch
    scaler = GradScaler()
    with autocast():
        loss = model(x)

Both are gt.amp's (see there: on CPU workers a "cuda" GradScaler disables itself, as PyTorch's).
"""
import warnings

from .. import amp as _amp


def autocast(enabled=True, dtype=None, cache_enabled=None):
    """gt.amp.autocast("cuda", dtype (default float16), enabled, cache_enabled), with PyTorch's
    FutureWarning (torch.cuda.amp.autocast is deprecated)."""
    warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` "
                  "instead.", FutureWarning, stacklevel=2)
    return _amp.autocast("cuda", dtype or "float16", enabled, cache_enabled)


def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
    """gt.amp.GradScaler("cuda", ...), with PyTorch's FutureWarning (torch.cuda.amp.GradScaler is
    deprecated)."""
    warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', "
                  "args...)` instead.", FutureWarning, stacklevel=2)
    return _amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """gt.amp.custom_fwd(device_type="cuda"), with PyTorch's FutureWarning."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use `torch.amp.custom_fwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """gt.amp.custom_bwd(device_type="cuda"), with PyTorch's FutureWarning."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use `torch.amp.custom_bwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _amp.custom_bwd(bwd, device_type="cuda")


__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]

"""torch.cpu.amp: `autocast(enabled, dtype=bfloat16, cache_enabled)`, gt.amp.autocast("cpu", ...)."""
import warnings

from .. import amp as _amp


def autocast(enabled=True, dtype=None, cache_enabled=True):
    """gt.amp.autocast("cpu", dtype (default bfloat16), enabled, cache_enabled), with PyTorch's
    FutureWarning (torch.cpu.amp.autocast is deprecated)."""
    warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` "
                  "instead.", FutureWarning, stacklevel=2)
    return _amp.autocast("cpu", dtype or "bfloat16", enabled, cache_enabled)


__all__ = ["autocast"]

"""torch.cpu.amp: `autocast(enabled, dtype=bfloat16, cache_enabled)`, gt.amp.autocast("cpu", ...)."""
from .. import amp as _amp


def autocast(enabled=True, dtype=None, cache_enabled=True):
    """gt.amp.autocast("cpu", dtype (default bfloat16), enabled, cache_enabled)."""
    return _amp.autocast("cpu", dtype or "bfloat16", enabled, cache_enabled)


__all__ = ["autocast"]

"""gt.cuda: what PyTorch scripts ask torch.cuda, answered for the session's workers.

GT runs every tensor on its session's workers; these say whether they are GPUs (see gt.device):

    device = "cuda" if gt.cuda.is_available() else "cpu"
"""
from .. import _device


def is_available():
    """Whether the session's workers are GPUs (before an auto-started session opens: whether
    GT_DEVICE asks for CUDA workers; with GT_SERVER, the dispatcher is asked once)."""
    return _device.session_device_type() == "cuda"


def device_count():
    """How many of the session's workers are GPUs."""
    return _device.cuda_worker_count()


def current_device():
    """0: a session's GPUs are its workers', not this process's to choose among."""
    return 0


def get_device_name(device=None):
    """'GT worker (cuda)': the GPUs are the workers', whatever their model."""
    return "GT worker (cuda)"


def synchronize(device=None):
    """Waits until every op issued so far has run (gt.synchronize)."""
    from .. import synchronize as _sync
    _sync()


def manual_seed(seed):
    """gt.manual_seed: one seed stream serves every worker, GPU or not."""
    from .._tensor import manual_seed as _seed
    _seed(seed)


manual_seed_all = manual_seed


def is_bf16_supported():
    """True: every GT worker computes bfloat16 (in float32, rounded once per op)."""
    return True


def empty_cache():
    """Nothing to do on the client: workers keep their own caches."""


def memory_allocated(device=None):
    """Bytes the session's tensors hold on its GPU workers now (0 when they are not GPUs, as
    PyTorch without CUDA): gt.debug.stats()'s live_bytes, which waits for the work issued."""
    return int(_stats("live_bytes"))


def max_memory_allocated(device=None):
    """The most bytes the session's tensors held on its GPU workers at once since the session
    opened (gt.debug.stats()'s peak_bytes; 0 when the workers are not GPUs)."""
    return int(_stats("peak_bytes"))


memory_reserved, max_memory_reserved = memory_allocated, max_memory_allocated


def reset_peak_memory_stats(device=None):
    """Accepted; the workers' peak counts from the session's start and is not reset."""


def _stats(key):
    if not is_available():
        return 0
    from .. import debug
    return debug.stats().get(key, 0)


from . import amp  # noqa: E402  (torch.cuda.amp)


__all__ = ["amp", "is_available", "device_count", "current_device", "get_device_name", "synchronize", "manual_seed",
           "manual_seed_all", "is_bf16_supported", "empty_cache", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats"]

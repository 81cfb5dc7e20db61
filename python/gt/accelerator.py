"""gt.accelerator: torch.accelerator's questions, answered for the session's workers (GT's
one accelerator kind is CUDA; see gt.cuda and gt.device).

    device = gt.accelerator.current_accelerator() if gt.accelerator.is_available() else gt.device("cpu")
"""
from . import cuda as _cuda
from ._device import device as _device


def is_available():
    """Whether the session's workers are GPUs (gt.cuda.is_available)."""
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """gt.device("cuda") when the session's workers are GPUs; else None (or, with
    check_available=False, as PyTorch, still None: GT has no other accelerator kind)."""
    return _device("cuda") if _cuda.is_available() else None


def device_count():
    """How many of the session's workers are GPUs."""
    return _cuda.device_count()


def current_device_index():
    """0: a session's GPUs are its workers', not this process's to choose among."""
    return 0


def synchronize(device=None):
    """Waits until every op issued so far has run (gt.synchronize)."""
    _cuda.synchronize()

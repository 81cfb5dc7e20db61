"""torch.cpu: `is_available()` (True), `device_count()` (1), `current_device()` ("cpu"),
`synchronize()` (waits for the session's workers, as gt.synchronize), and `torch.cpu.amp`
(`autocast`, PyTorch's older spelling of torch.amp.autocast("cpu"), default bfloat16)."""
from . import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    from .. import synchronize as _synchronize
    _synchronize()

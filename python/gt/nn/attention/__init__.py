"""torch.nn.attention: SDPBackend and sdpa_kernel, for scripts that pick an attention backend.

GT has one scaled_dot_product_attention (gt.nn.functional): its ops, which the worker fuses
and compiles like any hot region. sdpa_kernel(backends) records which backends the script
allows (sdpa_kernel.current() reads them) and changes nothing else; SDPBackend.ERROR, or an
empty list, raises ValueError as PyTorch does.
"""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_allowed = [tuple(b for b in SDPBackend if b != SDPBackend.ERROR)]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, scaled_dot_product_attention may use `backends` (an SDPBackend or a
    list of them). GT runs its one implementation whichever are listed."""
    backends = [backends] if isinstance(backends, SDPBackend) else list(backends)
    if not backends or any(not isinstance(b, SDPBackend) for b in backends):
        raise ValueError("sdpa_kernel: expected an SDPBackend or a non-empty list of them, got "
                         f"{backends!r}")
    if SDPBackend.ERROR in backends:
        raise ValueError("sdpa_kernel: SDPBackend.ERROR is not a backend")
    _allowed.append(tuple(backends))
    try:
        yield
    finally:
        _allowed.pop()


def _current():
    return _allowed[-1]


sdpa_kernel.current = _current

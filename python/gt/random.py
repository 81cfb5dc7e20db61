"""gt.random: torch.random's seed functions (the same as gt's own) and fork_rng.

    with gt.random.fork_rng():       # draws inside do not move the stream outside
        noise = gt.randn(3)
"""
import contextlib

from ._compat import initial_seed, seed  # noqa: F401
from ._tensor import default_generator, get_rng_state, manual_seed, set_rng_state  # noqa: F401


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Saves gt's random state on entry and restores it on exit (one stream serves every worker,
    so `devices` and `device_type` are accepted and change nothing); enabled=False does nothing."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]

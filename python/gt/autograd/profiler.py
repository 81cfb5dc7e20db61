"""torch.autograd.profiler: the older spelling of gt.profiler's profile and record_function.

    with gt.autograd.profiler.profile() as prof:
        model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))
"""
import contextlib

from ..profiler import record_function
from ..profiler import profile as _profile
from ..profiler import _EventList as EventList  # noqa: F401 (what key_averages() returns)

__all__ = ["profile", "record_function", "EventList", "emit_nvtx", "emit_itt"]


class profile(_profile):
    """torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, record_shapes=False, ...):
    gt.profiler.profile without a schedule (enabled=False records nothing)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(enabled=enabled)


class emit_nvtx(contextlib.ContextDecorator):
    """torch.autograd.profiler.emit_nvtx: NVTX ranges for nvprof / Nsight. GT's CUDA workers name
    their kernels themselves (docs/observability.md); entering it changes nothing."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


emit_itt = emit_nvtx

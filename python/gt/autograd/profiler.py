"""torch.autograd.profiler: the older spelling of gt.profiler's profile and record_function.

    with gt.autograd.profiler.profile() as prof:
        model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))
"""
from ..profiler import record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function"]


class profile(_profile):
    """torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, record_shapes=False, ...):
    gt.profiler.profile without a schedule (enabled=False records nothing)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(enabled=enabled)

"""gt.nn.parallel: DistributedDataParallel and DataParallel as wrappers that forward to the
module they hold (`.module`), so that scripts written for them run. GT makes a model data
parallel with a sharding config (docs/sharding.md: `examples/configs/data_parallel.yaml`), not
by wrapping it; these wrappers add no communication of their own."""
import contextlib

from .modules import Module


class DistributedDataParallel(Module):
    """Holds `module` and forwards calls to it; device_ids, output_device and the other
    arguments are accepted. no_sync() is a context that does nothing (there is nothing to
    synchronize between processes)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, **kwargs):
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def no_sync(self):
        return contextlib.nullcontext()


class DataParallel(DistributedDataParallel):
    """torch.nn.DataParallel's place: forwards to `module` (see DistributedDataParallel)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__(module)


# torch.nn.parallel.distributed and .data_parallel, the files PyTorch defines them in
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402

__path__ = []  # (a package, so that `import torch.nn.parallel.distributed` finds the modules below)
for _file, _cls in (("distributed", DistributedDataParallel), ("data_parallel", DataParallel)):
    _sub = _types.ModuleType(f"{__name__}.{_file}", f"torch.nn.parallel.{_file}: {_cls.__name__}.")
    setattr(_sub, _cls.__name__, _cls)
    _sys.modules[_sub.__name__] = _sub
    globals()[_file] = _sub

"""Names of torch._C (PyTorch's C extension) that Python libraries call, added to gt._C:
`_log_api_usage_once` (PyTorch's usage logging: nothing here), `_TensorMeta` (the type of
tensor classes), `_nn._parse_to` (how Tensor.to reads its arguments) and the
__torch_function__ protocol's switches (gt.overrides)."""
import types

from . import _C
from . import _device
from . import dtypes as _dt


def _log_api_usage_once(event):
    """Nothing: GT logs no API usage."""


def _parse_to(*args, **kwargs):
    """(device, dtype, non_blocking, memory_format) from Tensor.to's arguments, as
    torch._C._nn._parse_to: a device (or its name or index), a dtype, a tensor (its device and
    dtype), by position or keyword."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    non_blocking, memory_format = kwargs.get("non_blocking", False), kwargs.get("memory_format")
    from ._tensor import Tensor
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dt.dtype):
            dtype = a
        elif isinstance(a, bool):
            non_blocking = a
        elif a is not None:
            device = a
    if device is not None and not isinstance(device, _device.device):
        device = _device.device(device)
    return device, dtype, non_blocking, memory_format


_C._log_api_usage_once = _log_api_usage_once
_C._TensorMeta = type
_C._nn = types.SimpleNamespace(_parse_to=_parse_to)


def _are_functorch_transforms_active():
    """False: no torch.func transform is tracing (gt.func runs the function eagerly)."""
    return False


def _get_tracing_state():
    """None: GT never traces with torch.jit."""
    return None


from ._tensor import _disabled_torch_function_impl  # noqa: E402
from . import overrides as _overrides  # noqa: E402

_C._disabled_torch_function_impl = _disabled_torch_function_impl
_C.DisableTorchFunctionSubclass = _overrides.DisableTorchFunctionSubclass
_C.DisableTorchFunction = _overrides.DisableTorchFunction
_C._is_torch_function_enabled = _overrides._is_torch_function_enabled
_C._is_torch_function_mode_enabled = _overrides._is_torch_function_mode_enabled
_C._are_functorch_transforms_active = _are_functorch_transforms_active
_C._get_tracing_state = _get_tracing_state

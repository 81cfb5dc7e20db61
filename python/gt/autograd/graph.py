"""torch.autograd.graph, as far as GT goes. GT's tape keeps the values a backward pass needs on
the session's workers and has no pack/unpack step to hook: `saved_tensors_hooks` raises
NotImplementedError when entered, and `save_on_cpu` (an offload of saved activations from GPU to
host memory) is accepted and offloads nothing: the results are the same, the device memory is
not saved. `Node` is GT's node type (a tensor's grad_fn)."""
from . import Node  # noqa: F401


class saved_tensors_hooks:
    """pack_hook / unpack_hook on the tensors autograd saves: not available in GT (entering
    raises NotImplementedError; see the module's docstring)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        raise NotImplementedError("torch.autograd.graph.saved_tensors_hooks: GT's autograd keeps the saved values "
                                  "on its workers and has no pack/unpack step to hook")

    def __exit__(self, *exc):
        return False


class save_on_cpu:
    """Accepted, offloading nothing (see the module's docstring): the ops inside run as
    without it."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class disable_saved_tensors_hooks:
    """A context in which saved_tensors_hooks may not be used (there are none in GT)."""

    def __init__(self, error_message=""):
        self.error_message = error_message

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def increment_version(tensor):
    """Nothing: a GT tensor's in-place write makes new values (docs/api.md), so no saved-tensor
    version check can miss it."""

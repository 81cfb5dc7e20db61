"""torch.utils.hooks: the handle a hook registration returns."""
from ..autograd import RemovableHandle  # noqa: F401


def unserializable_hook(f):
    """f itself, marked as PyTorch marks a hook that must not be pickled."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Nothing: GT pickles a tensor's values without its hooks."""

"""gt.version: torch.version's fields, for scripts that print or test them.

`__version__` is GT's (under `gt.as_torch`, the PyTorch version whose API GT follows, GT's own
after the "+": see TORCH_API); `cuda` is None (GT's client has no CUDA of its own: whether the
session's workers are GPUs is gt.cuda.is_available()); `hip` None; `git_version` "unknown";
`debug` False.
"""
import re

from . import __version__  # noqa: F401

cuda = None
hip = None
git_version = "unknown"
debug = False

TORCH_API = "2.15.0"  # the PyTorch release whose API GT follows (its tests compare against it)
TORCHVISION_API = "0.29.0"


def torchvision_version():
    """gt.vision's version: torchvision's API version under gt.as_torch, else GT's own."""
    from . import dtypes
    return TorchVersion(f"{TORCHVISION_API}+gt") if dtypes.package[0] == "torch" else "0.0.gt"


class TorchVersion(str):
    """A version string that compares as a version, as PyTorch's torch.__version__:
    "2.15.0+gt0.1.0" >= "2.2" and >= (2, 2) are True (as strings they would not be). Equality
    is a string's ("2.15.0+gt0.1.0" != "2.15.0"), as PyTorch's."""

    def _compare(self, other, op):
        if isinstance(other, (tuple, list)):
            other = tuple(int(x) for x in other)
        elif isinstance(other, str):
            other = _release(other)
        else:
            return NotImplemented
        mine = _release(self)
        width = max(len(mine), len(other))
        return op(mine + (0,) * (width - len(mine)), other + (0,) * (width - len(other)))

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)



def _release(text):
    """(2, 15, 0) from "2.15.0+gt0.1.0" or "2.15.0a0": the leading numbers."""
    numbers = re.match(r"^\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(x) for x in numbers.group(1).split(".")) if numbers else ()

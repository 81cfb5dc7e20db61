"""gt.version: torch.version's fields, for scripts that print or test them.

`__version__` is GT's; `cuda` is None (GT's client has no CUDA of its own: whether the session's
workers are GPUs is gt.cuda.is_available()); `hip` None; `git_version` "unknown"; `debug` False.
"""
from . import __version__  # noqa: F401

cuda = None
hip = None
git_version = "unknown"
debug = False

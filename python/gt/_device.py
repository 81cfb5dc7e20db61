"""gt.device, and what the session's workers are (gt.cuda.is_available, Tensor.device).

A GT tensor lives on the workers of its session, whichever device a script names: the
deployment decides what they are (GT_DEVICE for the auto-started ones, `gt-worker --device` in
a cluster). So `x.to(device)`, `x.cuda()`, `x.cpu()`, `model.to(device)` and `device=` on
creation functions and modules check the device they are given and move nothing, and
`x.device` / `gt.cuda.is_available()` say what the session's workers are: a script that picks
`"cuda" if torch.cuda.is_available() else "cpu"` then runs unchanged on either.

The exception is the `meta` device, as PyTorch's: a meta tensor has a shape and a dtype and no
values anywhere (the client core infers its type and records nothing; see
gt._C.Client.set_meta). Creation functions make one for `device="meta"` or inside `with
gt.device("meta"):`, `*_like` functions and every op with a meta operand make one too (an op
mixing meta and ordinary tensors gives a meta tensor, where PyTorch raises unless the ordinary
one is 0-d), `x.to("meta")` / `module.to("meta")` make meta copies, and `module.to_empty(device=)`
gives a meta module ordinary (zero) tensors. Reading a meta tensor's values raises as PyTorch:
`.item()` RuntimeError, `.numpy()` TypeError, `.tolist()` / `.cpu()` / `.to("cpu")`
NotImplementedError ("Cannot copy out of meta tensor; no data!").
"""
import os
import re

from . import _runtime

_TYPES = ("cpu", "cuda", "mps", "xpu", "meta")
_PATTERN = re.compile(r"^(?P<type>[a-z]+)(?::(?P<index>\d+))?$")


class device:
    """A device name, as torch.device: `gt.device("cuda")`, `gt.device("cuda:1")`,
    `gt.device("cuda", 1)`; `.type` and `.index` (None when not given). Compares equal to a
    device or a string of the same name. Raises RuntimeError for a name that is not a device."""
    __module__ = "gt"

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        elif not isinstance(type, str):
            raise TypeError(f"device() expected a string or an int, got {type.__class__.__name__}")
        else:
            m = _PATTERN.match(type)
            if not m or m["type"] not in _TYPES:
                raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
            if m["index"] is not None:
                if index is not None:
                    raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
                index = int(m["index"])
            type = m["type"]
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type, self.index = type, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __enter__(self):
        """`with gt.device("cuda"):` makes this the default device of creation functions inside
        the block, as gt.set_default_device: "meta" makes meta tensors (shapes and dtypes
        without values); other devices place nothing (see the module's docstring)."""
        self._previous = getattr(self, "_previous", [])
        self._previous.append(default[0])
        default[0] = self
        return self

    def __exit__(self, *exc):
        default[0] = self._previous.pop()
        return False


def is_device(x):
    """Whether `x` names a device (a gt.device, or a string like "cpu" / "cuda:0")."""
    if isinstance(x, device):
        return True
    if isinstance(x, str):
        m = _PATTERN.match(x)
        return bool(m) and m["type"] in _TYPES
    return False


def dtype_or_device(x):
    """`x`, an argument of .to() that is not a device, as a gt.dtype; for a string that names
    neither, the RuntimeError of gt.device (x.to("gpu") raises as in PyTorch)."""
    from . import dtypes
    try:
        return dtypes.resolve(x)
    except TypeError:
        if isinstance(x, str):
            device(x)
        raise


def check(x):
    """`x` as a gt.device (None stays None); raises as gt.device for anything else."""
    return None if x is None else device(x)


def is_meta(x):
    """Whether `x` (a device argument: a gt.device, a string, an int or None) names the meta device."""
    return x is not None and (x.type if isinstance(x, device) else device(x).type) == "meta"


default = [None]  # the device gt.set_default_device / `with gt.device(...)` made the default


def meta_default():
    """Whether creation functions make meta tensors now (`with gt.device("meta"):`)."""
    d = default[0]
    return d is not None and d.type == "meta"


class meta_scope:
    """`with meta_scope():` every op recorded inside makes a meta tensor (a shape and a dtype,
    no values; see gt._C.Client.set_meta); `meta_scope(False)` makes the block's tensors as usual."""

    def __init__(self, on=True):
        self.on = on

    def __enter__(self):
        self.client = _runtime.client()
        self.was = self.client.set_meta(self.on)
        return self

    def __exit__(self, *exc):
        self.client.set_meta(self.was)
        return False


def factory_device(init):
    """For a module's __init__ that takes `device=` (as nn.Linear(..., device="meta")): a meta
    device makes its parameters and buffers meta tensors (the body runs under `with
    gt.device("meta")`); other devices are checked and place nothing (see the module's docstring)."""
    import functools
    import inspect
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        d = kwargs.get("device")
        if d is None and args:
            d = signature.bind_partial(self, *args, **kwargs).arguments.get("device")
        if d is not None and is_meta(d):
            with device("meta"):
                return init(self, *args, **kwargs)
        return init(self, *args, **kwargs)
    return wrapped


_workers = {}  # id of the session's client -> "cuda" or "cpu"


def session_device_type():
    """"cuda" when the session's workers are GPUs, else "cpu". Before the session opens, with
    an auto-started runtime to come: from GT_DEVICE, without starting anything; otherwise it
    asks the dispatcher once per session (its workers' counters: a CUDA worker counts kernel
    launches)."""
    client = _runtime._client
    if client is None and not os.environ.get("GT_SERVER"):
        return "cuda" if _runtime.worker_device(0).startswith("cuda") else "cpu"
    client = _runtime.client()
    kind = _workers.get(id(client))
    if kind is None:
        stats = client.stats()
        kind = "cuda" if any("gpu_kernel_launches" in w for w in stats["by_worker"].values()) else "cpu"
        _workers.clear()
        _workers[id(client)] = kind
    return kind


def cuda_worker_count():
    """How many of the session's workers are GPUs (0 before an auto-started session opens with
    GT_DEVICE=cpu). With GPU workers it asks the dispatcher, so it waits for what was issued."""
    if session_device_type() != "cuda":
        return 0
    client = _runtime._client
    if client is None:
        return _runtime._num_workers
    return sum(1 for w in client.stats()["by_worker"].values() if "gpu_kernel_launches" in w)


def session_device():
    """The device a tensor of this session reports: cuda:0 on GPU workers, else cpu."""
    return device("cuda", 0) if session_device_type() == "cuda" else device("cpu")

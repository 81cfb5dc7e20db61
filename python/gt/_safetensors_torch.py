"""safetensors.torch for GT: under gt.as_torch, `from safetensors.torch import load_file` imports
this module (safetensors' own torch module reaches into PyTorch's storages and dtypes GT does
not have: complex64, untyped_storage, frombuffer). The same functions and file format, built
on safetensors.numpy: tensors are fetched from the workers to write them and uploaded when
read. `device` arguments are accepted and place nothing (see gt.device).

    save_file(tensors, filename, metadata=None)      load_file(filename, device="cpu") -> dict
    save(tensors, metadata=None) -> bytes             load(data) -> dict
    save_model(model, filename, metadata=None)        load_model(model, filename, strict=True)
    safe_open(filename, framework="pt", device="cpu")  (keys(), get_tensor(name), get_slice(name), metadata())

Raises ValueError for a dict whose values are not tensors, as safetensors does."""
import numpy as np
import safetensors
import safetensors.numpy

from . import _functions as T


def _arrays(tensors):
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    out = {}
    for name, t in tensors.items():
        if not isinstance(t, T.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(t)}")
        a = t.numpy()
        out[name] = np.ascontiguousarray(a).reshape(a.shape)  # (ascontiguousarray makes a 0-d array 1-d)
    return out


def _tensors(arrays):
    return {name: T.from_numpy(np.array(a)) for name, a in arrays.items()}


def save_file(tensors, filename, metadata=None):
    """Writes a dict of name -> tensor to a .safetensors file (`metadata`: str -> str)."""
    safetensors.numpy.save_file(_arrays(tensors), filename, metadata=metadata)


def save(tensors, metadata=None):
    """The .safetensors bytes of a dict of name -> tensor."""
    return safetensors.numpy.save(_arrays(tensors), metadata=metadata)


def load_file(filename, device="cpu"):
    """The dict of name -> tensor a .safetensors file holds."""
    return _tensors(safetensors.numpy.load_file(filename))


def load(data):
    """The dict of name -> tensor of .safetensors bytes."""
    return _tensors(safetensors.numpy.load(data))


def save_model(model, filename, metadata=None, force_contiguous=False):
    """model.state_dict() to a .safetensors file (tied weights, one tensor under several names,
    are written under each)."""
    save_file(dict(model.state_dict()), filename, metadata=metadata)


def load_model(model, filename, strict=True, device="cpu"):
    """Loads a .safetensors file into `model`; returns (missing, unexpected) key lists, as
    safetensors.torch.load_model. Raises RuntimeError with strict=True when either is not empty."""
    state = load_file(filename)
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if strict and (missing or unexpected):
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}: missing {missing}, "
                           f"unexpected {unexpected}")
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    return missing, unexpected


class safe_open:
    """`with safe_open(path, framework="pt") as f:` reads tensors one at a time: f.keys(),
    f.get_tensor(name), f.get_slice(name)[slices] (a part of one, read alone), f.metadata()
    (safetensors.safe_open; `backend` and other options are accepted)."""

    def __init__(self, filename, framework="pt", device="cpu", **kwargs):
        self._file = safetensors.safe_open(filename, framework="numpy")

    def __enter__(self):
        self._file.__enter__()
        return self

    def __exit__(self, *exc):
        return self._file.__exit__(*exc)

    def keys(self):
        return self._file.keys()

    def metadata(self):
        return self._file.metadata()

    def get_tensor(self, name):
        return T.from_numpy(np.array(self._file.get_tensor(name)))

    def get_slice(self, name):
        return _Slice(self._file.get_slice(name))

    def offset_keys(self):
        return sorted(self._file.keys())


class _Slice:
    """A tensor of a safetensors file not read yet: get_shape(), get_dtype(), and [slices]
    reading that part alone (a GT tensor)."""

    def __init__(self, part):
        self._part = part

    def get_shape(self):
        return self._part.get_shape()

    def get_dtype(self):
        return self._part.get_dtype()

    def __getitem__(self, key):
        return T.from_numpy(np.array(self._part[key]))


__all__ = ["save_file", "save", "load_file", "load", "save_model", "load_model", "safe_open"]


def storage_ptr(tensor):
    """An int naming the values tensor holds (Tensor.data_ptr: equal for tensors sharing them,
    such as tied weights), as safetensors.torch's, which uses it to find shared tensors."""
    return tensor.data_ptr()


def storage_size(tensor):
    """The bytes of tensor's values (GT tensors own their values: numel * element size)."""
    return tensor.numel() * tensor.element_size()

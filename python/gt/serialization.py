"""gt.save / gt.load, as torch.save / torch.load: any object holding tensors (a state_dict, a
dict with an epoch and an optimizer's state, a list, one tensor, a whole module) to a file.

    gt.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, "ckpt.pt")
    ckpt = gt.load("ckpt.pt")
    model.load_state_dict(ckpt["model"])

The format follows the file name:
- `.safetensors`: Hugging Face's safetensors (a JSON header and raw little-endian bytes), for a
  flat dict of name -> tensor;
- `.npz`: NumPy's, for a flat dict of name -> tensor;
- anything else (or a file object): Python's pickle, each tensor stored as its values, dtype and
  shape (Tensor.__reduce_ex__: the values are fetched from the workers, and uploaded again when
  loaded).
Values are stored exactly (a save/load round trip is bit for bit), bfloat16 included.

gt.load reads all three (by the file's first bytes, or its name for safetensors). Like
torch.load since PyTorch 2.6 it unpickles only tensors, numbers, strings, lists, tuples, dicts,
sets and NumPy arrays unless `weights_only=False`: unpickling can run any code a file names,
so load whole modules or other objects only from files you trust.
"""
import io
import os
import pickle
from collections import OrderedDict

import numpy as np

from . import _device
from . import _functions as T
from . import dtypes as _dt


def _arrays(state_dict, fmt):
    if not isinstance(state_dict, dict):
        raise TypeError(f"gt.save to {fmt} expects a dict of name -> tensor (a state_dict), got "
                        f"{type(state_dict).__name__}; save other objects to a .pt file")
    out = OrderedDict()
    for name, value in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"gt.save: keys must be strings, got {name!r}")
        out[name] = np.asarray(value.numpy() if isinstance(value, T.Tensor) else value, order="C")
    return out


def _from_npz(a):
    """.npz has no bfloat16: NumPy writes ml_dtypes.bfloat16 arrays as 2-byte voids ('|V2')."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        return a.view(_dt.numpy_dtype(_dt.bfloat16))
    return a


def save(obj, f):
    """Writes `obj` to `f` (a path or a binary file object): safetensors or .npz for a flat
    dict of name -> Tensor (or array) named so, else a pickle (see the module's docstring).
    Raises TypeError for a .safetensors or .npz file of anything but such a dict."""
    if hasattr(f, "write"):
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
        return
    path = os.fspath(f)
    if path.endswith(".safetensors"):
        from safetensors.numpy import save_file
        save_file(dict(_arrays(obj, ".safetensors")), path)
    elif path.endswith(".npz"):
        arrays = _arrays(obj, ".npz")
        with open(path, "wb") as out:  # a file object: np.savez must not append ".npz"
            np.savez(out, **arrays)
    else:
        with open(path, "wb") as out:
            pickle.dump(obj, out, protocol=pickle.HIGHEST_PROTOCOL)


# What a weights-only load may unpickle: containers, numbers, strings, NumPy arrays, tensors.
_SAFE = {
    ("builtins", n) for n in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str", "bytes",
                              "bytearray", "bool", "slice", "range")
} | {("collections", "OrderedDict"), ("gt._tensor", "_rebuild_tensor"), ("gt", "Tensor"), ("gt._tensor", "Tensor"),
     ("gt.nn.modules", "Parameter")} | {
    (m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")
} | {(m, "_frombuffer") for m in ("numpy.core.numeric", "numpy._core.numeric")} | {("numpy", "ndarray"), ("numpy", "dtype")}


# Objects the user allowed in weights-only loads (add_safe_globals, safe_globals), by identity.
_allowed = []


def add_safe_globals(safe_globals):
    """Allows the classes and functions in `safe_globals` (a list) in every later weights-only
    gt.load, as torch.serialization.add_safe_globals (e.g. your own model class, to load a whole
    pickled model without weights_only=False)."""
    _allowed.extend(safe_globals)


def get_safe_globals():
    """The list add_safe_globals has allowed so far."""
    return list(_allowed)


def clear_safe_globals():
    """Forgets what add_safe_globals allowed."""
    _allowed.clear()


class safe_globals:
    """`with gt.serialization.safe_globals([MyModel, nn.Linear]): gt.load(f)`: allows those
    objects in weights-only loads inside the block only (torch.serialization.safe_globals)."""

    def __init__(self, safe_globals):
        self._globals = list(safe_globals)

    def __enter__(self):
        self._before = len(_allowed)
        _allowed.extend(self._globals)

    def __exit__(self, *exc):
        del _allowed[self._before:]


class _WeightsOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        if _allowed:
            try:
                obj = super().find_class(module, name)
            except (ImportError, AttributeError):
                obj = None
            if obj is not None and any(obj is a for a in _allowed):
                return obj
        raise pickle.UnpicklingError(
            f"gt.load(weights_only=True) does not unpickle {module}.{name}: load files that hold "
            "other objects (a whole module, your own classes) with weights_only=False, and only from "
            "sources you trust, since unpickling can run code")


def load(f, map_location=None, weights_only=True, **kwargs):
    """Reads what gt.save wrote (or any .npz / .safetensors of arrays, or a pickle) from `f` (a
    path or a binary file object). A .npz or .safetensors file gives an OrderedDict of name ->
    Tensor (.npz keeps the saved order; safetensors stores names sorted). `map_location` (a
    device name, a dict or a function, as torch.load's) is accepted: tensors load onto the
    session's workers (see gt.device). Raises FileNotFoundError, and pickle.UnpicklingError for
    an object a weights-only load does not make (see the module's docstring)."""
    if isinstance(map_location, (str, _device.device)):
        _device.check(map_location)
    if hasattr(f, "read"):
        data = f.read()
    else:
        path = os.fspath(f)
        if path.endswith(".safetensors"):
            from safetensors.numpy import load_file
            return OrderedDict((k, T.from_numpy(v)) for k, v in load_file(path).items())
        with open(path, "rb") as inp:
            data = inp.read()
    if data[:4] == b"PK\x03\x04":  # a zip: .npz
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return OrderedDict((k, T.from_numpy(_from_npz(z[k]))) for k in z.files)
    unpickler = _WeightsOnly if weights_only else pickle.Unpickler
    return unpickler(io.BytesIO(data)).load()


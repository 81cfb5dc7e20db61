"""gt.save / gt.load: state dicts (name -> tensor) to a file, as NumPy .npz or safetensors.

    gt.save(model.state_dict(), "model.safetensors")   # or "model.npz"
    model.load_state_dict(gt.load("model.safetensors"))

The format follows the file name: `.safetensors` uses the safetensors library (Hugging Face's
format: a JSON header and raw little-endian bytes), anything else NumPy's .npz. Values are
stored exactly (a save/load round trip is bit for bit), bfloat16 included.
"""
import os
from collections import OrderedDict

import numpy as np

from . import _functions as T
from . import dtypes as _dt


def _arrays(state_dict):
    if not isinstance(state_dict, dict):
        raise TypeError(f"gt.save expects a dict of name -> tensor (a state_dict), got {type(state_dict).__name__}")
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


def save(state_dict, path):
    """Writes `state_dict` (str -> Tensor or array) to `path` (.safetensors or .npz)."""
    arrays = _arrays(state_dict)
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        from safetensors.numpy import save_file
        save_file(dict(arrays), path)
    else:
        with open(path, "wb") as f:  # a file object: np.savez must not append ".npz"
            np.savez(f, **arrays)


def load(path):
    """Reads a file written by gt.save (or any .npz / .safetensors of arrays) into an
    OrderedDict of name -> Tensor (.npz keeps the saved order; safetensors stores names
    sorted). Raises FileNotFoundError."""
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        from safetensors.numpy import load_file
        arrays = load_file(path)
    else:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: _from_npz(z[k]) for k in z.files}
    return OrderedDict((k, T.from_numpy(v)) for k, v in arrays.items())

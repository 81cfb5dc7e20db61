"""gt.save / gt.load, as torch.save / torch.load: any object holding tensors (a state_dict, a
dict with an epoch and an optimizer's state, a list, one tensor, a whole module) to a file.

    gt.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, "ckpt.pt")
    ckpt = gt.load("ckpt.pt")
    model.load_state_dict(ckpt["model"])

The format follows the file name:
- `.safetensors`: Hugging Face's safetensors (a JSON header and raw little-endian bytes), for a
  flat dict of name -> tensor;
- `.npz`: NumPy's, for a flat dict of name -> tensor;
- anything else (or a file object): torch.save's zip format, so that PyTorch's torch.load reads
  a state dict or checkpoint GT saved (and GT reads PyTorch's): the object pickled with each
  tensor as torch._utils._rebuild_tensor_v2 of a storage whose bytes are a record of the zip
  (the values are fetched from the workers, and uploaded again when loaded). Objects of GT's
  own classes (a whole module) are pickled by reference, which only GT can load.
Values are stored exactly (a save/load round trip is bit for bit), bfloat16 included.

gt.load reads all three (by the file's first bytes, or its name for safetensors), the zip files
torch.save writes (PyTorch 1.6 and later: their tensors become gt Tensors, their Parameters too,
views of one storage each get their own values), and the plain pickles earlier GT versions
wrote. Like
torch.load since PyTorch 2.6 it unpickles only tensors, numbers, strings, lists, tuples, dicts,
sets and NumPy arrays unless `weights_only=False`: unpickling can run any code a file names,
so load whole modules or other objects only from files you trust.
"""
import io
import os
import pickle
import sys
import types
from collections import OrderedDict

import numpy as np

from . import _complex, _device
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


class _TorchGlobal:
    """A reference to PyTorch's `module.name` in a pickle (GT does not import torch to write one)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # (pickle's save_reduce wants a callable; this one is never called)
        raise TypeError(f"{self.module}.{self.name} is PyTorch's")


class _TorchStorage:
    """One tensor's values as a torch.save storage: ARCHIVE/data/<key>."""

    def __init__(self, key, array, dtype_name):
        self.key, self.array, self.dtype_name = key, array, dtype_name  # (dtype_name: gt's, e.g. "bfloat16")


# gt dtype name -> torch's storage class, as torch.save names it
_STORAGE_OF = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
               "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
               "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
               "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}


class _TorchPickler(pickle._Pickler):
    """Pickles as torch.save does (protocol 2): a gt Tensor as
    torch._utils._rebuild_tensor_v2(storage, 0, size, stride, requires_grad, OrderedDict()), a
    Parameter as torch._utils._rebuild_parameter of that, its storage a persistent id
    ("storage", torch.<Type>Storage, key, "cpu", numel); gt.Size as a tuple."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol=2):
        super().__init__(file, protocol=protocol)
        self.storages = []

    def _save_torch_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))
        self.memoize(obj)
    dispatch[_TorchGlobal] = _save_torch_global

    def save_global(self, obj, name=None):
        """GT's nn classes and functional functions by PyTorch's names
        (torch.nn.modules.activation.ReLU, torch.nn.functional.relu), so that PyTorch's
        torch.load(weights_only=False) reads a whole GT model; anything else as pickle does."""
        import gt
        from .nn import torch_paths
        path = torch_paths.get(obj) if isinstance(obj, type) else None
        if path is None and callable(obj) and not isinstance(obj, type) and \
                str(getattr(obj, "__module__", "")).startswith("gt"):  # F.gelu, gt.tanh: by torch's names
            short = getattr(obj, "__name__", "")
            path = "torch.nn.functional" if getattr(gt.nn.functional, short, None) is obj else \
                "torch" if getattr(gt, short, None) is obj else None
        if path is None:
            return super().save_global(obj, name)
        self._save_torch_global(_TorchGlobal(path, obj.__name__))

    dispatch[types.FunctionType] = save_global  # (the base class's table holds its own save_global)

    def _save_dtype(self, obj):
        self._save_torch_global(_TorchGlobal("torch", obj.name))
    dispatch[_dt.dtype] = _save_dtype

    def persistent_id(self, obj):
        if isinstance(obj, _TorchStorage):
            return ("storage", _TorchGlobal("torch", _STORAGE_OF[obj.dtype_name]), obj.key, "cpu", obj.array.size)
        return None

    def reducer_override(self, obj):
        from ._tensor import Size
        from .nn.modules import Module, Parameter
        if isinstance(obj, Size):
            return _TorchGlobal("torch", "Size"), (tuple(obj),)
        if isinstance(obj, Module):  # with the attributes PyTorch's Module.__setstate__ does not fill in
            from .nn.rnn import _RNNBase
            rv = obj.__reduce_ex__(2)
            state = dict(rv[2] or {})
            for key in ("_backward_hooks", "_forward_hooks"):
                state.setdefault(key, OrderedDict())
            if isinstance(obj, _RNNBase):  # PyTorch's RNNs run on their parameters listed by layer and direction
                names = [n for n, p in obj._parameters.items() if p is not None]
                groups = OrderedDict()
                for n in names:
                    groups.setdefault(n.split("_l", 1)[1], []).append(n)
                state.update(_all_weights=list(groups.values()), _flat_weights_names=names,
                             _flat_weights=[obj._parameters[n] for n in names])
            return rv[:2] + (state,) + tuple(rv[3:])
        if not isinstance(obj, T.Tensor):
            return NotImplemented
        if isinstance(obj, Parameter):
            return _TorchGlobal("torch._utils", "_rebuild_parameter"), (obj.detach(), obj.requires_grad, OrderedDict())
        array = np.ascontiguousarray(obj.numpy())
        storage = _TorchStorage(str(len(self.storages)), array.reshape(-1), obj.dtype.name)
        self.storages.append(storage)
        stride = tuple(int(np.prod(obj.shape[i + 1:], dtype=np.int64)) for i in range(len(obj.shape)))
        rebuild = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
        args = (storage, 0, tuple(obj.shape), stride, obj.requires_grad, OrderedDict())
        kind = type(obj)
        own = kind is T.Tensor or kind is _complex.ComplexTensor or kind.__module__.startswith("gt")  # (GT's own)
        if own and not obj.__dict__:
            return rebuild, args
        # a subclass (MONAI's MetaTensor) or a tensor with attributes of its own: as PyTorch's
        # Tensor.__reduce_ex__, rebuilt as that type with that state
        return (_TorchGlobal("torch._tensor", "_rebuild_from_type_v2"),
                (rebuild, _TorchGlobal("torch", "Tensor") if own else kind, args, dict(obj.__dict__)))


def _pickler(pickle_module):
    """The pickler class torch.save's `pickle_module` asks for: GT's own (_TorchPickler) for the
    standard library's pickle, else one deriving from both where the module's Pickler is a
    pure-Python pickle._Pickler (dill's). Raises TypeError for other modules."""
    if pickle_module is None or pickle_module is pickle:
        return _TorchPickler
    base = getattr(pickle_module, "Pickler", None)
    if isinstance(base, type) and issubclass(base, pickle._Pickler):
        return type("_TorchPickler", (_TorchPickler, base), {"dispatch": {**base.dispatch, **_TorchPickler.dispatch}})
    if callable(getattr(pickle_module, "dumps", None)):  # cloudpickle (fastai's Learner.export)
        return _by_value_pickler(pickle_module)
    raise TypeError(f"gt.save: pickle_module={getattr(pickle_module, '__name__', pickle_module)!r} is not supported "
                    "(GT writes tensors with the standard library's pickle, a module whose Pickler derives "
                    "from pickle._Pickler, such as dill's, or one with dumps, such as cloudpickle)")


def _by_value_pickler(pickle_module):
    """GT's pickler, which hands what pickle cannot name (a lambda, a class or function defined
    in __main__ or inside a function) to `pickle_module.dumps` (cloudpickle pickles them by
    value): written as pickle.loads(those bytes), which any unpickler reads back."""
    class ByValue(_TorchPickler):
        dispatch = _TorchPickler.dispatch.copy()

        def save_global(self, obj, name=None):
            if getattr(obj, "__module__", None) != "__main__":  # (__main__'s are by value, as cloudpickle's)
                try:
                    return _TorchPickler.save_global(self, obj, name)
                except pickle.PicklingError:
                    pass
            self.save_reduce(pickle.loads, (pickle_module.dumps(obj, protocol=self.proto),), obj=obj)

        dispatch[types.FunctionType] = save_global
        dispatch[type] = save_global
    return ByValue


def _torch_zip(obj, pickle_module=None, pickle_protocol=2):
    """`obj` in torch.save's zip format (bytes): archive/data.pkl, archive/byteorder,
    archive/data/<key> per tensor, archive/version; records stored uncompressed, each one's data
    64-byte aligned as torch.save writes them (torch.load can then map the file)."""
    import zipfile
    pkl = io.BytesIO()
    pickler = _pickler(pickle_module)(pkl, protocol=pickle_protocol)
    pickler.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        def record(name, data):
            info = zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            header = 30 + len(info.filename.encode())  # local file header + name, before the data
            pad = (-(out.tell() + header + 4)) % 64
            info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad  # an extra field that aligns the data
            z.writestr(info, data)
        record("data.pkl", pkl.getvalue())
        record("byteorder", b"little")
        for storage in pickler.storages:
            a = storage.array if sys.byteorder == "little" else storage.array.byteswap()
            record(f"data/{storage.key}", a.tobytes())
        record("version", b"3\n")
    return out.getvalue()


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Writes `obj` to `f` (a path or a binary file object): safetensors or .npz for a flat
    dict of name -> Tensor (or array) named so, else torch.save's zip format (see the module's
    docstring), pickled with `pickle_protocol` (2, as torch.save's default) by the standard
    library's pickle or `pickle_module` (see _pickler). Raises TypeError for a .safetensors or
    .npz file of anything but such a dict. The legacy (non-zip) format is not written:
    _use_new_zipfile_serialization=False still writes the zip format, which torch.load reads."""
    if hasattr(f, "write"):
        f.write(_torch_zip(obj, pickle_module, pickle_protocol))
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
        data = _torch_zip(obj, pickle_module, pickle_protocol)  # (everything fetched before the file is opened)
        with open(path, "wb") as out:
            out.write(data)


# What a weights-only load may unpickle: containers, numbers, strings, NumPy arrays, tensors.
_SAFE = {
    ("builtins", n) for n in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str", "bytes",
                              "bytearray", "bool", "slice", "range")
} | {("collections", "OrderedDict"), ("gt._tensor", "_rebuild_tensor"), ("gt", "Tensor"), ("gt._tensor", "Tensor"),
     ("gt.nn.modules", "Parameter")} | {
    (m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")
} | {(m, "_frombuffer") for m in ("numpy.core.numeric", "numpy._core.numeric")} | {("numpy", "ndarray"), ("numpy", "dtype")} | {
    ("_codecs", "encode")}  # (protocol 2's bytes: encode(str, "latin1"); PyTorch's weights-only load allows it too)


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


def _gt_module(module):
    """GT's module for a pickle's module name: torch.X is gt.X (gt.save names GT's nn classes as
    PyTorch does, torch.nn.modules.linear.Linear, and PyTorch's pickles name them so too)."""
    return "gt" + module[5:] if module == "torch" or module.startswith("torch.") else module


class _WeightsOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "__builtin__":  # a protocol 2 pickle's name for builtins (torch.save's protocol)
            module = "builtins"
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        if _allowed:
            try:
                obj = super().find_class(_gt_module(module), name)
            except (ImportError, AttributeError):
                obj = None
            if obj is not None and any(obj is a for a in _allowed):
                return obj
        raise pickle.UnpicklingError(
            f"gt.load(weights_only=True) does not unpickle {module}.{name}: load files that hold "
            "other objects (a whole module, your own classes) with weights_only=False, and only from "
            "sources you trust, since unpickling can run code")


# torch.save's zip format (torch/serialization.py's _save): ARCHIVE/data.pkl pickles the object
# with each tensor as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...), its
# storage a persistent id ("storage", torch.<Type>Storage, key, location, numel) whose bytes
# are ARCHIVE/data/<key>, little-endian unless ARCHIVE/byteorder says "big".
_TORCH_STORAGES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": _dt.numpy_dtype(_dt.bfloat16), "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128,
}
_TORCH_DTYPES = {"float32": np.float32, "float": np.float32, "float64": np.float64, "double": np.float64,
                 "float16": np.float16, "half": np.float16, "bfloat16": _dt.numpy_dtype(_dt.bfloat16),
                 "int64": np.int64, "long": np.int64, "int32": np.int32, "int": np.int32, "int16": np.int16,
                 "int8": np.int8, "uint8": np.uint8, "bool": np.bool_, "complex64": np.complex64,
                 "cfloat": np.complex64, "complex128": np.complex128, "cdouble": np.complex128}


class _TorchStorageType:
    """torch.<Type>Storage or a torch dtype in a torch.save pickle: the NumPy dtype it stands for."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, np.dtype(dtype)


def _rebuild_torch_tensor(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    """torch._utils._rebuild_tensor_v2: the view (offset, size, stride, in elements) of a storage,
    copied out (a GT tensor owns its values)."""
    itemsize = storage.dtype.itemsize
    size, stride, offset = tuple(int(s) for s in size), tuple(int(s) for s in stride), int(offset)
    if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size + stride):
        raise pickle.UnpicklingError(f"gt.load: a tensor of size {size}, stride {stride}, offset {offset}")
    if any(s == 0 for s in size):
        return T.from_numpy(np.zeros(size, storage.dtype))
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))  # as_strided checks nothing: a file must not
    if last >= len(storage):                                         # make it read past its storage
        raise pickle.UnpicklingError(f"gt.load: a tensor of size {size}, stride {stride} at offset {offset} reaches "
                                     f"past its storage of {len(storage)} elements")
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size, strides=tuple(s * itemsize for s in stride))
    return T.from_numpy(np.array(view, order="C"), requires_grad=bool(requires_grad))  # (a copy)


def _rebuild_torch_tensor_v3(storage, offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    """torch._utils._rebuild_tensor_v3: as v2, the storage untyped and the dtype given."""
    if isinstance(dtype, _dt.dtype):
        dtype = _TorchStorageType(dtype.name, _dt.numpy_dtype(dtype))
    return _rebuild_torch_tensor(storage.view(dtype.dtype) if isinstance(dtype, _TorchStorageType) else storage,
                                 offset, size, stride)


def _rebuild_from_type(func, new_type, args, state):
    """torch._tensor._rebuild_from_type_v2: func(*args) as a `new_type` (a Tensor subclass) with
    `state` (its __dict__, or (__dict__, slots)), through the class's __setstate__ if it has one."""
    ret = func(*args)
    if type(ret) is not new_type:
        ret = ret.as_subclass(new_type)
    if getattr(new_type, "__setstate__", None) is not getattr(T.Tensor, "__setstate__", None):
        ret.__setstate__(state)
    elif state:
        attributes, slots = state if isinstance(state, tuple) else (state, None)
        ret.__dict__.update(attributes or {})
        for name, value in (slots or {}).items():
            setattr(ret, name, value)
    return ret


def _rebuild_torch_parameter(data, requires_grad=True, backward_hooks=None, *state):
    from .nn.modules import Parameter
    return Parameter(data, requires_grad=requires_grad)


class _TorchUnpickler(_WeightsOnly):
    """torch.save's data.pkl: its tensors rebuilt from the archive's storages (as gt Tensors);
    otherwise the weights-only rules (or none, with weights_only=False)."""

    _TORCH = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_torch_tensor,
              ("torch._utils", "_rebuild_tensor_v3"): _rebuild_torch_tensor_v3,
              ("torch._utils", "_rebuild_parameter"): _rebuild_torch_parameter,
              ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_torch_parameter,
              ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type,
              ("torch", "Size"): tuple, ("torch", "Tensor"): T.Tensor, ("torch._tensor", "Tensor"): T.Tensor}

    def __init__(self, data, read_record, weights_only):
        super().__init__(data)
        self._read_record, self._weights_only, self._storages = read_record, weights_only, {}

    def find_class(self, module, name):
        if (module, name) in self._TORCH:
            return self._TORCH[(module, name)]
        if module == "torch" and name in _TORCH_STORAGES:
            return _TorchStorageType(name, _TORCH_STORAGES[name])
        if module == "torch" and name in _TORCH_DTYPES:  # a torch dtype: GT's of that name
            return _dt.resolve(np.dtype(_TORCH_DTYPES[name])) if name != "bfloat16" else _dt.bfloat16
        if module == "torch.storage" and name == "UntypedStorage":
            return _TorchStorageType(name, np.uint8)
        if not self._weights_only:
            # (past _WeightsOnly's check to pickle's own; not through the name pickle.Unpickler,
            # which Lightning's pl_legacy_patch rebinds to a class this one is not)
            return super(_WeightsOnly, self).find_class(_gt_module(module), name)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"gt.load: a torch.save file names an unknown persistent object {pid!r}")
        _, kind, key, _location, numel = pid
        if key not in self._storages:
            dtype = kind.dtype if isinstance(kind, _TorchStorageType) else np.dtype(np.uint8)
            self._storages[key] = np.frombuffer(self._read_record(f"data/{key}"), dtype=dtype)
        return self._storages[key]


def _load_torch_zip(data, weights_only):
    """The object in a torch.save zip archive (bytes): see _TorchUnpickler."""
    import zipfile
    z = zipfile.ZipFile(io.BytesIO(data))
    pkl = [n for n in z.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pkl:
        return None
    prefix = pkl[0][:-len("data.pkl")]
    names = set(z.namelist())
    big = prefix + "byteorder" in names and z.read(prefix + "byteorder").strip() == b"big"

    unpickler = _TorchUnpickler(io.BytesIO(z.read(pkl[0])), lambda name: z.read(prefix + name), weights_only)
    if big:  # a big-endian machine's file: swap each storage as it is read
        original = unpickler.persistent_load

        def swapped(pid):
            return original(pid).byteswap()
        unpickler.persistent_load = swapped
    return unpickler.load()


def load(f, map_location=None, weights_only=True, **kwargs):
    """Reads what gt.save wrote (or any .npz / .safetensors of arrays, or a pickle) from `f` (a
    path or a binary file object). A .npz or .safetensors file gives an OrderedDict of name ->
    Tensor (.npz keeps the saved order; safetensors stores names sorted). `map_location` (a
    device name, a dict or a function, as torch.load's) is accepted: tensors load onto the
    session's workers (see gt.device). `pickle_module` and `mmap` are accepted (GT reads with
    the standard library's unpickler, into memory). Raises FileNotFoundError, and
    pickle.UnpicklingError for an object a weights-only load does not make (see the module's
    docstring)."""
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
    if data[:4] == b"PK\x03\x04":  # a zip: torch.save's, or .npz
        torch_saved = _load_torch_zip(data, weights_only)
        if torch_saved is not None:
            return torch_saved
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return OrderedDict((k, T.from_numpy(_from_npz(z[k]))) for k in z.files)
    unpickler = _WeightsOnly if weights_only else pickle.Unpickler
    return unpickler(io.BytesIO(data)).load()


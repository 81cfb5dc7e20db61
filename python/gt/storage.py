"""torch.UntypedStorage / torch.TypedStorage and Tensor.untyped_storage() / storage(): what
libraries read of a tensor's memory (safetensors and accelerate find tensors that share it by
`data_ptr()` and `nbytes()`). A GT tensor's values live on the workers, so a storage here is a
description, not memory: data_ptr() is the tensor's (equal for tensors sharing values), nbytes()
its size; the bytes themselves are read with .numpy()."""


class UntypedStorage:
    """The memory behind a tensor, as a size and an identity (see the module's docstring)."""

    def __init__(self, *args, tensor=None, **kwargs):
        if tensor is None:
            raise NotImplementedError("torch.UntypedStorage(...): GT has no host storages; make a tensor instead")
        self._tensor = tensor

    def data_ptr(self):
        return self._tensor.data_ptr()

    def nbytes(self):
        return self._tensor.numel() * self._tensor.element_size()

    def size(self):
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._tensor.device

    def __repr__(self):
        return f"<GT storage of {self.nbytes()} bytes>"


class TypedStorage(UntypedStorage):
    """Tensor.storage(): the same, counted in elements of the tensor's dtype."""

    @property
    def dtype(self):
        return self._tensor.dtype

    def size(self):
        return self._tensor.numel()

    def __len__(self):
        return self._tensor.numel()

    def element_size(self):
        return self._tensor.element_size()

    def untyped(self):
        return UntypedStorage(tensor=self._tensor)


class PyTorchFileReader:
    """torch.PyTorchFileReader (torch.save's zip reader): exists for annotations; making one
    raises NotImplementedError (gt.load reads those files)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.PyTorchFileReader: GT reads torch.save files with gt.load")


class PyTorchFileWriter:
    """torch.PyTorchFileWriter (see PyTorchFileReader; gt.save writes those files)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.PyTorchFileWriter: GT writes torch.save files with gt.save")


def _install(tensor_class):
    tensor_class.untyped_storage = lambda self: UntypedStorage(tensor=self)
    tensor_class.storage = lambda self: TypedStorage(tensor=self)

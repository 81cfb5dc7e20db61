"""gt.onnx: importable, so scripts that `import torch.onnx` for an optional export run; GT
cannot export ONNX, and export() says so."""


def export(model, args=(), f=None, *rest, **kwargs):
    """Raises NotImplementedError: GT has no ONNX exporter (its programs are MLIR; save the
    weights with gt.save and export from PyTorch if you need ONNX)."""
    raise NotImplementedError("gt.onnx.export: GT cannot export ONNX models (save the weights with gt.save "
                              "and export them from PyTorch)")


def is_in_onnx_export():
    """False: GT never exports."""
    return False


# torch.onnx.operators: the two shape helpers fairseq's sinusoidal positional embedding calls
# (ONNX-traceable spellings of x.shape and reshape; plain ops here).
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402

__path__ = []  # (a package, so that `import torch.onnx.operators` finds the module below)
operators = _types.ModuleType(f"{__name__}.operators", "torch.onnx.operators: shape_as_tensor, reshape_from_tensor_shape.")


def shape_as_tensor(x):
    """x's shape as an int64 tensor (torch.onnx.operators.shape_as_tensor)."""
    from . import tensor, int64
    return tensor(list(x.shape), dtype=int64)


def reshape_from_tensor_shape(x, shape):
    """x reshaped to the sizes in `shape` (a tensor or a sequence of ints)."""
    return x.reshape([int(s) for s in (shape.tolist() if hasattr(shape, "tolist") else shape)])


operators.shape_as_tensor, operators.reshape_from_tensor_shape = shape_as_tensor, reshape_from_tensor_shape
_sys.modules[operators.__name__] = operators

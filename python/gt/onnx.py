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

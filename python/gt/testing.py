"""gt.testing: assert_close, as torch.testing.assert_close."""
import numpy as np

from . import dtypes as _dt
from ._tensor import Tensor

# PyTorch's default tolerances by dtype (torch/testing/_comparison.py).
_TOLERANCES = {_dt.float16: (1e-3, 1e-5), _dt.bfloat16: (1.6e-2, 1e-5), _dt.float32: (1.3e-6, 1e-5),
               _dt.float64: (1e-7, 1e-7)}


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True, msg=None, **kwargs):
    """Raises AssertionError unless actual and expected (tensors, arrays or numbers) have the
    same shape (and dtype, with check_dtype) and |actual - expected| <= atol + rtol * |expected|
    elementwise; integer and bool tensors must be equal. Default tolerances are PyTorch's for
    the dtype; rtol and atol are given together or not at all (ValueError otherwise)."""
    if (rtol is None) != (atol is None):
        raise ValueError("assert_close: rtol and atol must both be given or both be left out")
    if isinstance(actual, Tensor) and isinstance(expected, Tensor) and check_dtype and actual.dtype != expected.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
    dtype = actual.dtype if isinstance(actual, Tensor) else None
    a = actual.detach().numpy() if isinstance(actual, Tensor) else np.asarray(actual)
    e = expected.detach().numpy() if isinstance(expected, Tensor) else np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.")
    if rtol is None:
        rtol, atol = _TOLERANCES.get(dtype, (0.0, 0.0)) if dtype is not None else (
            (1.3e-6, 1e-5) if a.dtype.kind == "f" else (0.0, 0.0))
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind == "V" else a, e, rtol=rtol, atol=atol,
                               equal_nan=equal_nan, err_msg=msg or "")

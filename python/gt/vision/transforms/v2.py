"""torchvision.transforms.v2 for GT: the same transforms as gt.vision.transforms (they take PIL
images, NumPy images and gt Tensors), plus v2's ToImage and ToDtype. Bounding boxes and masks
(tv_tensors) are not provided."""
import sys

from . import *  # noqa: F401,F403
from . import (Compose, Lambda, ToTensor, PILToTensor, ToPILImage, Normalize, InterpolationMode,  # noqa: F401
               Resize, CenterCrop, Pad, RandomCrop, RandomHorizontalFlip, RandomVerticalFlip, RandomResizedCrop,
               Grayscale, ConvertImageDtype, _Printed, _as_array, functional)
from ... import _functions as T
from ... import dtypes as _dt

__path__ = []  # (a package, so that `import torchvision.transforms.v2.functional` finds the module below)
sys.modules[__name__ + ".functional"] = functional


class ToImage(_Printed):
    """A PIL image or a NumPy image (H, W[, C]) as a gt Tensor (C, H, W) of its own dtype
    (unscaled, as PILToTensor); a tensor passes through."""

    def __call__(self, pic):
        if isinstance(pic, T.Tensor):
            return pic
        import numpy as np
        return T.tensor(np.ascontiguousarray(_as_array(pic).transpose(2, 0, 1)))


class ToDtype(_Printed):
    """A tensor in `dtype`; with scale=True, uint8 values become floats in [0, 1] (divided by
    255), as v2.ToDtype."""

    def __init__(self, dtype, scale=False):
        self.dtype, self.scale = _dt.resolve(dtype), scale

    def __call__(self, image):
        out = T.cast(image, self.dtype)
        if self.scale and image.dtype == _dt.uint8 and self.dtype.is_floating_point:
            out = out / 255.0
        return out


class ToPureTensor(_Printed):
    """The tensor itself (GT has no tv_tensors subclasses to strip)."""

    def __call__(self, x):
        return x

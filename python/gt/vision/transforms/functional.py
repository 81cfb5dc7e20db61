"""torchvision.transforms.functional for GT: the transforms as functions of one image (a PIL
image, or a gt Tensor (..., C, H, W); NumPy arrays where the transform takes them), for
augmentation code that draws its own parameters:

    import torchvision.transforms.functional as TF
    if random.random() < 0.5:
        image, mask = TF.hflip(image), TF.hflip(mask)
    image = TF.normalize(TF.to_tensor(image), mean, std)

Each is the transform class of the same name applied once (see gt.vision.transforms); the
color, rotation and affine functions are not provided (AttributeError).
"""
import numpy as np

from ... import _functions as T
from ... import dtypes as _dt
from . import (CenterCrop, ConvertImageDtype, InterpolationMode, Normalize, Pad, PILToTensor, Resize,  # noqa: F401
               ToPILImage, ToTensor, _crop, _flip, _is_pil, _size)


def to_tensor(pic):
    """A PIL image or NumPy array (H, W, C) as a tensor (C, H, W); uint8 scaled to [0, 1]."""
    return ToTensor()(pic)


def pil_to_tensor(pic):
    """A PIL image as a tensor (C, H, W) of its own dtype, unscaled."""
    return PILToTensor()(pic)


def to_pil_image(pic, mode=None):
    """A tensor (C, H, W) (floats in [0, 1] scaled by 255) or NumPy (H, W, C) as a PIL image."""
    return ToPILImage(mode)(pic)


def normalize(tensor, mean, std, inplace=False):
    """(x - mean) / std per channel of a tensor (..., C, H, W); inplace writes it into tensor."""
    out = Normalize(mean, std)(tensor)
    if inplace and isinstance(tensor, T.Tensor):
        tensor.copy_(out)
        return tensor
    return out


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """img resized to size (h, w), or its shorter side to size (an int), as transforms.Resize."""
    return Resize(size, interpolation, max_size, antialias)(img)


def center_crop(img, output_size):
    """The central output_size (h, w) region (an int: square), padded with zeros if larger."""
    return CenterCrop(output_size)(img)


def crop(img, top, left, height, width):
    """The region [top, top + height) x [left, left + width)."""
    return _crop(img, top, left, height, width)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """crop, then resize to size."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    """img mirrored left-right."""
    return _flip(img, "w")


def vflip(img):
    """img flipped top-bottom."""
    return _flip(img, "h")


def pad(img, padding, fill=0, padding_mode="constant"):
    """`padding` pixels around img, as transforms.Pad."""
    return Pad(padding, fill, padding_mode)(img)


def rgb_to_grayscale(img, num_output_channels=1):
    """Luma 0.2989 R + 0.587 G + 0.114 B (ITU-R 601-2) of an RGB image: a PIL image by Pillow,
    a tensor (..., 3, H, W) as torchvision's (num_output_channels 1 or 3)."""
    if _is_pil(img):
        gray = img.convert("L")
        return gray if num_output_channels == 1 else gray.convert("RGB")
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    r, g, b = T.unbind(img, -3)
    gray = T.unsqueeze(0.2989 * r + 0.587 * g + 0.114 * b, -3)
    if not img.dtype.is_floating_point:
        gray = T.cast(T.clamp(gray, 0, 255), img.dtype)
    return T.expand(gray, *img.shape[:-3], 3, *img.shape[-2:]) if num_output_channels == 3 else gray


def convert_image_dtype(image, dtype=_dt.float32):
    """A tensor in dtype: uint8 -> float scales to [0, 1], as transforms.ConvertImageDtype."""
    return ConvertImageDtype(dtype)(image)


def get_dimensions(img):
    """[channels, height, width]."""
    if _is_pil(img):
        return [len(img.getbands()), img.size[1], img.size[0]]
    if isinstance(img, np.ndarray):
        return [img.shape[2] if img.ndim == 3 else 1, img.shape[0], img.shape[1]]
    return [img.shape[-3] if img.ndim >= 3 else 1, img.shape[-2], img.shape[-1]]


def get_image_size(img):
    """[width, height]."""
    h, w = _size(img)
    return [w, h]


def get_image_num_channels(img):
    return get_dimensions(img)[0]

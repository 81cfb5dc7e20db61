"""torchvision.transforms.functional for GT: the transforms as functions of one image (a PIL
image, or a gt Tensor (..., C, H, W); NumPy arrays where the transform takes them), for
augmentation code that draws its own parameters:

    import torchvision.transforms.functional as TF
    if random.random() < 0.5:
        image, mask = TF.hflip(image), TF.hflip(mask)
    image = TF.normalize(TF.to_tensor(image), mean, std)

Each is the transform class of the same name applied once (see gt.vision.transforms); the
color adjustments (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue) and
gaussian_blur are torchvision's formulas on tensors and Pillow's ImageEnhance on PIL images;
the rotation and affine functions are not provided (AttributeError).
"""
import numpy as np

import gt

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


# ---- color adjustments (torchvision's tensor formulas; PIL images by Pillow as torchvision) ----

def _channels(img):
    return get_dimensions(img)[0]


def _check_channels(img, allowed, name):
    c = _channels(img)
    if c not in allowed:
        raise TypeError(f"{name}: input image tensor permitted channel values are {list(allowed)}, but found {c}")
    return c


def _blend(img1, img2, ratio):
    """ratio * img1 + (1 - ratio) * img2 clamped to [0, 1] (floats) or [0, 255] (uint8, then
    truncated back to uint8), img2 a tensor broadcasting against img1 or a number."""
    ratio = float(ratio)
    floating = img1.dtype.is_floating_point
    out = gt.clamp(ratio * img1 + (1.0 - ratio) * img2, 0, 1.0 if floating else 255.0)
    return out if floating else out.to(img1.dtype)


def _enhance(img, kind, factor):
    from PIL import ImageEnhance
    return getattr(ImageEnhance, kind)(img).enhance(factor)


def adjust_brightness(img, brightness_factor):
    """img * brightness_factor (>= 0; 0 gives black, 1 the original), clamped to the dtype's range.
    A tensor (..., 1 or 3, H, W) float in [0, 1] or uint8, or a PIL image."""
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    if _is_pil(img):
        return _enhance(img, "Brightness", brightness_factor)
    _check_channels(img, (1, 3), "adjust_brightness")
    return _blend(img, 0.0, brightness_factor)


def adjust_contrast(img, contrast_factor):
    """Blend of img with the mean of its grayscale (one number per image), contrast_factor >= 0
    (0 gives a gray image, 1 the original). A tensor (..., 1 or 3, H, W) or a PIL image."""
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    if _is_pil(img):
        return _enhance(img, "Contrast", contrast_factor)
    c = _check_channels(img, (1, 3), "adjust_contrast")
    dtype = img.dtype if img.dtype.is_floating_point else _dt.float32
    gray = rgb_to_grayscale(img) if c == 3 else img
    mean = gt.mean(gray.to(dtype), dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def adjust_saturation(img, saturation_factor):
    """Blend of img with its grayscale, saturation_factor >= 0 (0 gives grayscale, 1 the
    original, 2 doubles the saturation). A tensor (..., 1 or 3, H, W) (1 channel: unchanged) or a
    PIL image."""
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    if _is_pil(img):
        return _enhance(img, "Color", saturation_factor)
    if _check_channels(img, (1, 3), "adjust_saturation") == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def _rgb2hsv(img):
    """(..., 3, H, W) RGB floats in [0, 1] as HSV, every component in [0, 1] (torchvision's formulas)."""
    r, g, b = gt.unbind(img, -3)
    maxc = gt.maximum(gt.maximum(r, g), b)
    minc = gt.minimum(gt.minimum(r, g), b)
    gray = maxc == minc  # no hue, no saturation: divide by 1 instead of 0
    cr = maxc - minc
    ones = gt.ones_like(maxc)
    s = cr / gt.where(gray, ones, maxc)
    cr_div = gt.where(gray, ones, cr)
    rc, gc, bc = (maxc - r) / cr_div, (maxc - g) / cr_div, (maxc - b) / cr_div
    is_r = maxc == r
    is_g = gt.logical_and(maxc == g, maxc != r)
    is_b = gt.logical_and(maxc != g, maxc != r)
    h = is_r.to(img.dtype) * (bc - gc) + is_g.to(img.dtype) * (2.0 + rc - bc) + \
        is_b.to(img.dtype) * (4.0 + gc - rc)
    h = gt.fmod(h / 6.0 + 1.0, 1.0)
    return gt.stack([h, s, maxc], -3)


def _hsv2rgb(img):
    """(..., 3, H, W) HSV in [0, 1] as RGB (torchvision's formulas: sector i = floor(6h) mod 6)."""
    h, s, v = gt.unbind(img, -3)
    h6 = h * 6.0
    i = gt.floor(h6)
    f = h6 - i
    p = gt.clamp(v * (1.0 - s), 0.0, 1.0)
    q = gt.clamp(v * (1.0 - s * f), 0.0, 1.0)
    t = gt.clamp(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    i = i.to(_dt.int32) % 6
    rows = ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))  # R, G, B for sectors 0..5
    out = []
    for row in rows:
        x = row[5]
        for k in range(4, -1, -1):
            x = gt.where(i == k, row[k], x)
        out.append(x)
    return gt.stack(out, -3)


def adjust_hue(img, hue_factor):
    """img with its hue shifted by hue_factor in [-0.5, 0.5] (a fraction of the color wheel), via
    HSV in float32 (uint8 converted to [0, 1] and back as convert_image_dtype, as torchvision). A
    tensor (..., 1 or 3, H, W) (1 channel: unchanged) or a PIL image (hue channel shifted in
    uint8 with wraparound, as torchvision)."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if _is_pil(img):
        if img.mode in {"L", "1", "I", "F"}:
            return img
        mode = img.mode
        h, s, v = img.convert("HSV").split()
        a = np.array(h, dtype=np.uint8)
        with np.errstate(over="ignore"):
            a += np.array(hue_factor * 255).astype(np.uint8)
        from PIL import Image
        return Image.merge("HSV", (Image.fromarray(a, "L"), s, v)).convert(mode)
    if _check_channels(img, (1, 3), "adjust_hue") == 1:
        return img
    orig = img.dtype
    x = img.to(_dt.float32) / 255.0 if not orig.is_floating_point else img.to(_dt.float32)
    h, s, v = gt.unbind(_rgb2hsv(x), -3)
    h = (h + float(hue_factor)) % 1.0
    rgb = _hsv2rgb(gt.stack([h, s, v], -3))
    if orig.is_floating_point:
        return rgb.to(orig)
    return (rgb * (255.0 + 1.0 - 1e-3)).to(orig)  # convert_image_dtype's float -> uint8


def _gaussian_kernel1d(size, sigma):
    """exp(-x^2 / (2 sigma^2)) at x = -(size-1)/2 .. (size-1)/2, normalized to sum 1 (float32)."""
    half = (size - 1) * 0.5
    x = np.linspace(-half, half, size, dtype=np.float32)
    pdf = np.exp(np.float32(-0.5) * (x / np.float32(sigma)) ** 2)
    return pdf / pdf.sum()


def gaussian_blur(img, kernel_size, sigma=None):
    """img convolved with a Gaussian of `kernel_size` (an odd int, or (kx, ky)) and `sigma` (a
    number or (sx, sy); None: 0.3 * ((k - 1) * 0.5 - 1) + 0.8 per axis), reflect-padded so the
    size is kept. A tensor (..., C, H, W) (uint8 blurred in float32 and rounded back) or a PIL image."""
    ks = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(ks) == 1:
        ks = [ks[0], ks[0]]
    if len(ks) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(ks)}")
    if any(not isinstance(k, int) or k <= 0 or k % 2 == 0 for k in ks):
        raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sig = [k * 0.15 + 0.35 for k in ks]
    else:
        sig = [float(sigma)] * 2 if isinstance(sigma, (int, float)) else [float(s) for s in sigma]
        if len(sig) == 1:
            sig = [sig[0], sig[0]]
        if len(sig) != 2:
            raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sig)}")
    if any(s <= 0 for s in sig):
        raise ValueError(f"sigma should have positive values. Got {sigma}")
    if _is_pil(img):
        return to_pil_image(gaussian_blur(pil_to_tensor(img), ks, sig), mode=img.mode)
    from ...nn import functional as F
    dtype = img.dtype if img.dtype.is_floating_point else _dt.float32
    kx, ky = _gaussian_kernel1d(ks[0], sig[0]), _gaussian_kernel1d(ks[1], sig[1])
    k2 = (ky[:, None] * kx[None, :]).astype(np.float32)
    shape = tuple(img.shape)
    c = shape[-3]
    x = gt.reshape(img.to(dtype), -1, c, shape[-2], shape[-1])
    weight = gt.tensor(np.ascontiguousarray(np.broadcast_to(k2, (c, 1, ks[1], ks[0]))), dtype=dtype)
    x = F.pad(x, (ks[0] // 2, ks[0] // 2, ks[1] // 2, ks[1] // 2), mode="reflect")
    y = F.conv2d(x, weight, groups=c)
    if not img.dtype.is_floating_point:
        y = gt.clamp(gt.round(y), 0, 255).to(img.dtype)
    return gt.reshape(y, *shape)

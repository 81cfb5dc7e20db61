"""torchvision.io for GT: images read from and written to files (PNG, JPEG, and whatever else
Pillow reads), as uint8 tensors (C, H, W) like torchvision's. Pillow decodes; the values are
uploaded as one tensor."""
import enum

import numpy as np

from .. import _functions as T
from .. import dtypes as _dt

__all__ = ["ImageReadMode", "decode_image", "read_image", "read_file", "write_png", "write_jpeg", "encode_png",
           "encode_jpeg"]


class ImageReadMode(enum.Enum):
    """How read_image converts the image: UNCHANGED (its own channels), GRAY, GRAY_ALPHA, RGB, RGB_ALPHA."""
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


_PIL_MODES = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
              ImageReadMode.RGB_ALPHA: "RGBA"}


def _image(img, mode):
    if mode in ("RGB", "GRAY", "RGBA", "GRAY_ALPHA", "UNCHANGED"):
        mode = {"RGBA": ImageReadMode.RGB_ALPHA}.get(mode, ImageReadMode[mode])
    if mode is not ImageReadMode.UNCHANGED:
        img = img.convert(_PIL_MODES[mode])
    elif img.mode not in ("L", "LA", "RGB", "RGBA"):
        img = img.convert("RGBA" if "A" in img.mode else "RGB")
    a = np.asarray(img, dtype=np.uint8)
    a = a[:, :, None] if a.ndim == 2 else a
    return T.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


def read_file(path):
    """The file's bytes as a 1-D uint8 tensor."""
    with open(path, "rb") as f:
        return T.from_numpy(np.frombuffer(f.read(), dtype=np.uint8).copy())


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """An image (a path, or a 1-D uint8 tensor of the file's bytes) as uint8 (C, H, W)."""
    import io
    from PIL import Image, ImageOps
    if isinstance(input, T.Tensor):
        input = io.BytesIO(input.numpy().tobytes())
    with Image.open(input) as img:
        img = ImageOps.exif_transpose(img) if apply_exif_orientation else img
        return _image(img, mode)


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """The image file at `path` as a uint8 tensor (C, H, W): C is 1 (gray), 2, 3 (RGB) or 4
    (RGBA), as the file has it unless `mode` converts it."""
    return decode_image(str(path), mode, apply_exif_orientation)


def _pil(input):
    from PIL import Image
    if input.dtype != _dt.uint8:
        raise TypeError(f"expected a uint8 tensor, got {input.dtype}")
    a = input.numpy()
    if a.ndim != 3 or a.shape[0] not in (1, 3):
        raise ValueError(f"expected an image tensor (1 or 3, H, W), got shape {list(a.shape)}")
    a = a.transpose(1, 2, 0)
    return Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a)


def encode_png(input, compression_level=6):
    """The PNG file of a uint8 image (C, H, W) as a 1-D uint8 tensor."""
    import io
    buf = io.BytesIO()
    _pil(input).save(buf, format="PNG", compress_level=compression_level)
    return T.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_jpeg(input, quality=75):
    """The JPEG file of a uint8 image (C, H, W) as a 1-D uint8 tensor."""
    import io
    buf = io.BytesIO()
    _pil(input).save(buf, format="JPEG", quality=quality)
    return T.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def write_png(input, filename, compression_level=6):
    """Writes a uint8 image (C, H, W) to `filename` as PNG."""
    _pil(input).save(filename, format="PNG", compress_level=compression_level)


def write_jpeg(input, filename, quality=75):
    """Writes a uint8 image (C, H, W) to `filename` as JPEG."""
    _pil(input).save(filename, format="JPEG", quality=quality)

"""torchvision.transforms for GT: image transforms on PIL images (and, for the geometric
ones, NumPy arrays (H, W[, C]) and gt Tensors (..., H, W)), ToTensor to a gt Tensor, and
Normalize on gt Tensors. Random ones draw from Python's `random` module (see gt.vision), except
ColorJitter, RandomGrayscale, GaussianBlur and RandomApply, which draw from gt's generator
(gt.manual_seed) as torchvision's draw from torch's."""
import enum
import numbers
import random

import numpy as np

from ... import _functions as T
from ... import dtypes as _dt


def _pil():
    from PIL import Image
    return Image


def _is_pil(x):
    try:
        return isinstance(x, _pil().Image)
    except ImportError:  # pragma: no cover (Pillow is a GT dependency)
        return False


def _size(img):
    """(height, width) of a PIL image, a NumPy image (H, W[, C]) or a gt Tensor (..., H, W)."""
    if _is_pil(img):
        return img.size[1], img.size[0]
    if isinstance(img, np.ndarray):
        return img.shape[0], img.shape[1]
    return tuple(img.shape[-2:])


def _pair(size):
    return (size, size) if isinstance(size, numbers.Number) else tuple(size)


class Compose:
    """Applies `transforms` in order. ToTensor directly followed by Normalize runs as one step
    on the client (the same float32 arithmetic, one upload per image instead of an upload and
    two ops on the workers)."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        i, ts = 0, self.transforms
        while i < len(ts):
            if type(ts[i]) is ToTensor and i + 1 < len(ts) and type(ts[i + 1]) is Normalize:
                img = ts[i + 1].on_host(ts[i].array(img))
                i += 2
                continue
            img = ts[i](img)
            i += 1
        return img

    def __repr__(self):
        return "Compose(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"  # (torchvision's)


class _Printed:
    """A transform that prints as torchvision's: Name(field=value, ...) of `_printed` fields."""
    _printed = ()

    def __repr__(self):
        fields = ", ".join(f"{name}={_field(getattr(self, attr))}" for name, attr in self._printed)
        return f"{type(self).__name__}({fields})"


def _field(value):
    return getattr(value, "value", value)  # an InterpolationMode prints as its name


class Lambda(_Printed):
    """Applies a user function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


def _as_array(pic):
    """A PIL image or a NumPy array (H, W[, C]) as a NumPy (H, W, C) array."""
    a = np.asarray(pic)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3:
        raise TypeError(f"pic should be 2 or 3 dimensional, got {a.ndim} dimensions")
    return a


class ToTensor:
    """A PIL image or NumPy array (H, W, C) as a gt Tensor (C, H, W): uint8 values scaled to
    the default float dtype (float32 unless gt.set_default_dtype changed it) in [0, 1], other
    dtypes kept (as torchvision)."""

    def __call__(self, pic):
        return T.tensor(self.array(pic))

    @staticmethod
    def array(pic):
        """What ToTensor uploads, as NumPy (C, H, W)."""
        chw = np.ascontiguousarray(_as_array(pic).transpose(2, 0, 1))
        if chw.dtype != np.uint8:
            return chw
        f = np.float64 if _dt.default_float() is _dt.float64 else np.float32
        return chw.astype(f) / f(255.0)

    def __repr__(self):
        return "ToTensor()"


class PILToTensor(_Printed):
    """A PIL image as a gt Tensor (C, H, W) of its own dtype (uint8 for 'L' and 'RGB'), unscaled."""

    def __call__(self, pic):
        return T.tensor(np.ascontiguousarray(_as_array(pic).transpose(2, 0, 1)))


class ToPILImage:
    """A gt Tensor (C, H, W) (floats in [0, 1] are scaled by 255) or NumPy (H, W, C) as a PIL image."""

    def __init__(self, mode=None):
        self.mode = mode

    def __repr__(self):
        return "ToPILImage()" if self.mode is None else f"ToPILImage(mode={self.mode})"

    def __call__(self, pic):
        a = pic.numpy().transpose(1, 2, 0) if isinstance(pic, T.Tensor) else np.asarray(pic)
        if a.dtype.kind == "f":
            a = np.clip(np.rint(a * 255.0), 0, 255).astype(np.uint8)
        if a.ndim == 3 and a.shape[2] == 1:
            a = a[:, :, 0]
        image = _pil().fromarray(a)
        return image.convert(self.mode) if self.mode else image


class Normalize:
    """(x - mean) / std per channel of a gt Tensor (C, H, W) or (N, C, H, W), as torchvision's
    Normalize. Raises ValueError for a zero std."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace  # as given (torchvision's repr shows them)
        self._mean, self._std = list(np.atleast_1d(mean).astype(float)), list(np.atleast_1d(std).astype(float))
        if any(s == 0 for s in self._std):
            raise ValueError(f"std evaluated to zero after conversion to float, leading to division by zero: {std}")
        self._consts = None

    def __call__(self, tensor):
        if not isinstance(tensor, T.Tensor) or not tensor.dtype.is_floating_point:
            raise TypeError(f"Normalize expects a floating-point gt Tensor (use ToTensor first), got "
                            f"{getattr(tensor, 'dtype', type(tensor).__name__)}")
        if len(self._mean) == 1:  # one number for every channel: no broadcast tensor needed
            return (tensor - self._mean[0]) / self._std[0]
        c = tensor.shape[-3]
        if self._consts is None or self._consts[0].dtype != tensor.dtype:
            shape = (c, 1, 1)
            mean = T.tensor(np.broadcast_to(np.asarray(self._mean), (c,)).reshape(shape), dtype=tensor.dtype)
            std = T.tensor(np.broadcast_to(np.asarray(self._std), (c,)).reshape(shape), dtype=tensor.dtype)
            self._consts = (mean, std)
        return (tensor - self._consts[0]) / self._consts[1]

    def on_host(self, a):
        """Normalize of ToTensor's NumPy (C, H, W) `a`, computed on the client in a's dtype
        (the same IEEE operations as on the workers), uploaded as a gt Tensor."""
        if a.dtype.kind != "f":
            raise TypeError(f"Normalize expects a floating-point image (use ToTensor first), got {a.dtype}")
        c = a.shape[-3]
        mean = np.broadcast_to(np.asarray(self._mean, a.dtype), (c,)).reshape(c, 1, 1)
        std = np.broadcast_to(np.asarray(self._std, a.dtype), (c,)).reshape(c, 1, 1)
        return T.tensor(np.ascontiguousarray((a - mean) / std))

    def __repr__(self):
        return f"Normalize(mean={self.mean}, std={self.std})"


_INTERPOLATION = {"nearest": 0, "nearest-exact": 0, "bilinear": 2, "bicubic": 3, "lanczos": 1, "box": 4, "hamming": 5}


class InterpolationMode(str, enum.Enum):
    """torchvision's interpolation modes (a str enum: InterpolationMode.BILINEAR == "bilinear")."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _resample(mode):
    return _INTERPOLATION[getattr(mode, "value", mode) if not isinstance(mode, int) else
                          {0: "nearest", 2: "bilinear", 3: "bicubic"}[mode]]


class Resize(_Printed):
    """An image resized to `size` (h, w), or with its shorter side `size` keeping the aspect
    ratio (an int), by `interpolation` (bilinear by default): a PIL image by Pillow, a tensor
    (..., H, W) by nn.functional.interpolate (antialias for bilinear and bicubic, as
    torchvision's; a uint8 tensor's result rounded and clamped to 0..255). Raises TypeError
    for a NumPy array."""

    _printed = (("size", "size"), ("interpolation", "interpolation"), ("max_size", "max_size"),
                ("antialias", "antialias"))

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        self.size, self.interpolation, self.max_size = size, interpolation, max_size
        self.antialias = True if antialias is None else bool(antialias)

    def __call__(self, img):
        if not _is_pil(img) and not isinstance(img, T.Tensor):
            raise TypeError(f"Resize: expected a PIL image or a tensor, got {type(img).__name__}")
        h, w = _size(img)
        if isinstance(self.size, numbers.Number) or len(self.size) == 1:
            short = self.size if isinstance(self.size, numbers.Number) else self.size[0]
            if h <= w:
                nh, nw = short, int(short * w / h)
            else:
                nh, nw = int(short * h / w), short
            if self.max_size is not None and max(nh, nw) > self.max_size:
                scale = self.max_size / max(nh, nw)
                nh, nw = int(nh * scale), int(nw * scale)
        else:
            nh, nw = self.size
        if isinstance(img, T.Tensor):
            return _resize_tensor(img, nh, nw, self.interpolation, self.antialias)
        return img.resize((nw, nh), _resample(self.interpolation))


def _resize_tensor(img, nh, nw, interpolation, antialias):
    """A (..., H, W) tensor resized to (nh, nw) as torchvision's functional.resize of a tensor."""
    from ...nn import functional as F
    mode = getattr(interpolation, "value", interpolation)
    mode = {0: "nearest", 2: "bilinear", 3: "bicubic"}.get(mode, mode) if isinstance(mode, int) else mode
    if mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"Resize: interpolation {mode!r} is not supported for tensors (nearest, nearest-exact, "
                         f"bilinear, bicubic)")
    if tuple(img.shape[-2:]) == (nh, nw):
        return img
    lead = tuple(img.shape[:-2])
    x = T.reshape(img, -1, 1, *img.shape[-2:])
    integer = not x.dtype.is_floating_point
    if integer:
        x = T.cast(x, _dt.float32)
    smooth = mode in ("bilinear", "bicubic")
    y = F.interpolate(x, size=(nh, nw), mode=mode, align_corners=False if smooth else None,
                      antialias=antialias and smooth)
    if integer:
        from ..._shaping import round as _round
        y = T.cast(T.clamp(_round(y), 0, 255), img.dtype)
    return T.reshape(y, *lead, nh, nw)


def _crop(img, top, left, height, width):
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    return img[..., top:top + height, left:left + width] if isinstance(img, T.Tensor) else \
        img[top:top + height, left:left + width]


class CenterCrop(_Printed):
    """The central `size` (h, w) region (an int: square)."""
    _printed = (("size", "size"),)

    def __init__(self, size):
        self.size = _pair(size)

    def __call__(self, img):
        h, w = _size(img)
        th, tw = self.size
        if th > h or tw > w:
            img = Pad((max(0, (tw - w) // 2), max(0, (th - h) // 2), max(0, (tw - w + 1) // 2),
                       max(0, (th - h + 1) // 2)))(img)
            h, w = _size(img)
        return _crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


class Pad(_Printed):
    """`padding` pixels around the image: an int (all sides), (left/right, top/bottom) or
    (left, top, right, bottom); padding_mode 'constant' (with `fill`), 'edge', 'reflect' or
    'symmetric'."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"Padding mode should be either constant, edge, reflect or symmetric, got {padding_mode}")
        self._given = padding  # (printed as given, as torchvision's)
        p = (padding,) * 4 if isinstance(padding, numbers.Number) else tuple(padding)
        self.padding = p * 2 if len(p) == 2 else p
        if len(self.padding) != 4:
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(p)} element tuple")
        self.fill, self.padding_mode = fill, padding_mode

    _printed = (("padding", "_given"), ("fill", "fill"), ("padding_mode", "padding_mode"))

    def __call__(self, img):
        left, top, right, bottom = self.padding
        if isinstance(img, T.Tensor):
            from ...nn import functional as F
            return F.pad(img, (left, right, top, bottom), mode="replicate" if self.padding_mode == "edge" else
                         self.padding_mode, value=self.fill)
        a = np.asarray(img)
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (a.ndim - 2)
        kw = {"constant_values": self.fill} if self.padding_mode == "constant" else {}
        out = np.pad(a, widths, mode=self.padding_mode, **kw)
        return _pil().fromarray(out) if _is_pil(img) else out


class RandomCrop(_Printed):
    """A random `size` (h, w) region, after `padding` (as Pad) when given; pad_if_needed pads
    an image smaller than size."""

    _printed = (("size", "size"), ("padding", "padding"))

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size, self.padding, self.pad_if_needed = _pair(size), padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def __call__(self, img):
        if self.padding is not None:
            img = Pad(self.padding, self.fill, self.padding_mode)(img)
        h, w = _size(img)
        th, tw = self.size
        if self.pad_if_needed and (h < th or w < tw):
            img = Pad((max(0, tw - w), max(0, th - h)), self.fill, self.padding_mode)(img)
            h, w = _size(img)
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        return _crop(img, random.randint(0, h - th), random.randint(0, w - tw), th, tw)


def _flip(img, axis):
    if _is_pil(img):
        Image = _pil()
        return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT if axis == "w" else Image.Transpose.FLIP_TOP_BOTTOM)
    if isinstance(img, T.Tensor):
        return T.flip(img, [-1 if axis == "w" else -2])
    return np.ascontiguousarray(img[:, ::-1] if axis == "w" else img[::-1])


class RandomHorizontalFlip(_Printed):
    """The image mirrored left-right with probability p."""
    _printed = (("p", "p"),)
    _axis = "w"

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        return _flip(img, self._axis) if random.random() < self.p else img


class RandomVerticalFlip(RandomHorizontalFlip):
    """The image flipped top-bottom with probability p."""
    _axis = "h"


class RandomResizedCrop(_Printed):
    """A random region of `scale` times the area and aspect ratio in `ratio` (log-uniform),
    resized to `size` (Szegedy et al. 2015, Inception's crop; torchvision's algorithm, 10 tries
    then a central crop). PIL images."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        self.size, self.scale, self.ratio, self.interpolation = _pair(size), scale, ratio, interpolation
        self.antialias = antialias

    def __repr__(self):
        ratio = tuple(round(r, 4) for r in self.ratio)
        return (f"RandomResizedCrop(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, ratio={ratio}, "
                f"interpolation={_field(self.interpolation)}, antialias={self.antialias})")

    def __call__(self, img):
        import math
        h, w = _size(img)
        area = h * w
        for _ in range(10):
            target = area * random.uniform(*self.scale)
            aspect = math.exp(random.uniform(math.log(self.ratio[0]), math.log(self.ratio[1])))
            cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
            if 0 < cw <= w and 0 < ch <= h:
                top, left = random.randint(0, h - ch), random.randint(0, w - cw)
                break
        else:
            in_ratio = w / h
            if in_ratio < min(self.ratio):
                cw, ch = w, int(round(w / min(self.ratio)))
            elif in_ratio > max(self.ratio):
                ch, cw = h, int(round(h * max(self.ratio)))
            else:
                cw, ch = w, h
            top, left = (h - ch) // 2, (w - cw) // 2
        return Resize(self.size, self.interpolation)(_crop(img, top, left, ch, cw))


class Grayscale(_Printed):
    """A PIL image in grayscale (ITU-R 601-2 luma, PIL's 'L'), with 1 or 3 output channels."""
    _printed = (("num_output_channels", "num_output_channels"),)

    def __init__(self, num_output_channels=1):
        self.num_output_channels = num_output_channels

    def __call__(self, img):
        g = img.convert("L")
        return g if self.num_output_channels == 1 else g.convert("RGB")


class ConvertImageDtype(_Printed):
    """A gt Tensor in `dtype`: uint8 -> float scales to [0, 1], as torchvision."""

    def __init__(self, dtype):
        self.dtype = _dt.resolve(dtype)

    def __call__(self, image):
        out = T.cast(image, self.dtype)
        return out / 255.0 if image.dtype == _dt.uint8 and self.dtype.is_floating_point else out



# ---- color and blur transforms, random wrappers (torchvision's parameters and reprs) ----

def _uniform(lo, hi):
    """One float drawn uniformly from [lo, hi) by gt's generator (torch.empty(1).uniform_ in torchvision)."""
    import gt
    return float(gt.empty(1).uniform_(lo, hi).item())


def _rand():
    import gt
    return float(gt.rand(1).item())


class ColorJitter:
    """Random brightness, contrast, saturation and hue changes, applied in a random order (a
    permutation of the four drawn by gt.randperm(4), then each factor uniformly from its range).
    brightness, contrast, saturation: a number b >= 0 (factor in [max(0, 1 - b), 1 + b]) or
    (min, max) with 0 <= min <= max; hue: h in [0, 0.5] (factor in [-h, h]) or (min, max) within
    [-0.5, 0.5]. A range of only the identity factor is None (skipped). Tensors (..., 1 or 3, H,
    W) float in [0, 1] or uint8, and PIL images (see functional.adjust_*)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order, b, c, s, h): a permutation of 0..3 (brightness, contrast, saturation, hue)
        and a factor for each range (None where the range is None)."""
        import gt
        order = gt.randperm(4)
        factors = [None if r is None else _uniform(r[0], r[1]) for r in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def __call__(self, img):
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        steps = ((functional.adjust_brightness, b), (functional.adjust_contrast, c),
                 (functional.adjust_saturation, s), (functional.adjust_hue, h))
        for i in order.tolist():
            fn, factor = steps[i]
            if factor is not None:
                img = fn(img, factor)
        return img

    def __repr__(self):
        return (f"{type(self).__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomGrayscale(_Printed):
    """The image in grayscale with probability p (gt.rand(1) < p), keeping its channel count
    (functional.rgb_to_grayscale: tensors (..., 3, H, W) and PIL images)."""
    _printed = (("p", "p"),)

    def __init__(self, p=0.1):
        self.p = p

    def __call__(self, img):
        channels = functional.get_dimensions(img)[0]
        if _rand() < self.p:
            return functional.rgb_to_grayscale(img, num_output_channels=channels)
        return img


class GaussianBlur:
    """functional.gaussian_blur with `kernel_size` (odd, an int or (kx, ky)) and a sigma drawn
    uniformly from `sigma` ((min, max) with 0 < min <= max, or one number > 0) by gt's generator,
    the same for both axes."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        self.kernel_size = tuple(_pair(kernel_size)) if not isinstance(kernel_size, (list, tuple)) or \
            len(kernel_size) != 1 else (kernel_size[0], kernel_size[0])
        if len(self.kernel_size) != 2:
            raise ValueError("Please provide only two dimensions (h, w) for size.")
        for k in self.kernel_size:
            if k <= 0 or k % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, (list, tuple)) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        """The sigma to blur with, uniform in [sigma_min, sigma_max]."""
        return _uniform(sigma_min, sigma_max)

    def __call__(self, img):
        s = self.get_params(self.sigma[0], self.sigma[1])
        return functional.gaussian_blur(img, self.kernel_size, [s, s])

    def __repr__(self):
        return f"{type(self).__name__}(kernel_size={self.kernel_size}, sigma={self.sigma})"


class RandomApply:
    """`transforms` (a list, applied in order) with probability p (skipped when p < gt.rand(1))."""

    def __init__(self, transforms, p=0.5):
        self.transforms, self.p = transforms, p

    def __call__(self, img):
        if self.p < _rand():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return f"{type(self).__name__}(\n    p={self.p}" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class _RandomTransforms:
    def __init__(self, transforms):
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __repr__(self):
        return f"{type(self).__name__}(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomChoice(_RandomTransforms):
    """One of `transforms`, picked by Python's random.choices with weights p (None: uniform)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, (list, tuple)):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        t = random.choices(self.transforms, weights=self.p)[0]
        return t(*args)

    def __repr__(self):
        return f"{super().__repr__()}(p={self.p})"


class RandomOrder(_RandomTransforms):
    """`transforms` applied in an order shuffled by Python's random.shuffle."""

    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img


from . import functional  # noqa: E402,F401  (torchvision.transforms.functional)

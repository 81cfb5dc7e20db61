"""torchvision.utils for GT: make_grid and save_image."""
import math

import numpy as np

from .. import _functions as T


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """A batch of images (B, C, H, W) (or a list of (C, H, W)) laid out as one image
    (C, rows * (H + padding) + padding, nrow * (W + padding) + padding), as torchvision's: a
    single channel is repeated to 3; normalize shifts and scales into [0, 1] by value_range
    (the min and max by default; per image with scale_each); a single image is returned (C, H,
    W) without padding. Runs on the client (reads the values) and returns a gt Tensor."""
    a = np.stack([t.numpy() for t in tensor]) if isinstance(tensor, (list, tuple)) else tensor.numpy()
    a = a if a.dtype.kind == "f" else a.astype(np.float32)  # (float64 stays float64, as torchvision's)
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        a = a[None] if a.shape[0] in (1, 3) else a[:, None]
    if a.shape[1] == 1:
        a = np.repeat(a, 3, axis=1)
    if normalize:
        def norm(x):
            lo, hi = value_range if value_range is not None else (float(x.min()), float(x.max()))
            return (np.clip(x, lo, hi) - lo) / max(hi - lo, 1e-5)
        a = np.stack([norm(x) for x in a]) if scale_each else norm(a)
    b, c, h, w = a.shape
    if b == 1:  # one image comes back as it is, without padding (torchvision's make_grid)
        return T.tensor(a[0])
    cols = min(nrow, b)
    rows = int(math.ceil(b / cols))
    grid = np.full((c, rows * (h + padding) + padding, cols * (w + padding) + padding), pad_value, a.dtype)
    for i in range(b):
        r, k = divmod(i, cols)
        top, left = r * (h + padding) + padding, k * (w + padding) + padding
        grid[:, top:top + h, left:left + w] = a[i]
    return T.tensor(grid)


def save_image(tensor, fp, format=None, **kwargs):
    """Writes a batch (B, C, H, W) or one image (C, H, W) of values in [0, 1] to `fp` (a path
    or file) as an image (PNG by the name), through make_grid(**kwargs) and Pillow."""
    from PIL import Image
    grid = make_grid(tensor, **kwargs).numpy()
    pixels = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    Image.fromarray(pixels).save(fp, format=format)

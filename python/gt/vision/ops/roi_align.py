"""torchvision.ops.roi_align for GT: Mask R-CNN's RoIAlign (He et al. 2017, "Mask R-CNN", sec.
3): each box's region of the (N, C, H, W) feature map pooled to a fixed (C, PH, PW) grid, every
bin the mean of bilinearly interpolated samples at regularly spaced points inside it.

The sampling points and their interpolation weights are worked out on the client from the boxes
(a wait: it reads them, as torchvision's kernels do on the CPU), with torchvision's rules
(roi_align_kernel.cpp): a sample more than one pixel outside the map is 0, one at a negative
coordinate is clamped to 0, one past the last row or column takes that row or column; then the
result is one gather of the feature rows and one index_add, so the gradient reaches `input`
(none reaches `boxes`, as in torchvision)."""
import math

import numpy as np

from ... import _functions as T
from ... import dtypes as _dt
from ...nn.modules import Module


def _boxes_as_rois(boxes):
    """(K, 5) rows (batch index, x1, y1, x2, y2) as a NumPy array: `boxes` is that tensor, or a
    list of (L_i, 4) tensors, one per image."""
    if isinstance(boxes, (list, tuple)):
        rows = [np.concatenate([np.full((len(b), 1), i, dtype=np.float64), np.asarray(b.numpy(), np.float64)], 1)
                for i, b in enumerate(boxes)]
        return np.concatenate(rows, 0) if rows else np.zeros((0, 5))
    rois = np.asarray(boxes.numpy(), np.float64)
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ValueError(f"roi_align: boxes must be a (K, 5) tensor or a list of (L, 4) tensors, got shape "
                         f"{list(boxes.shape)}")
    return rois


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """RoIAlign of input (N, C, H, W) over `boxes` ((K, 5) with the batch index first, or a list
    of (L_i, 4) per image, x1 y1 x2 y2 in input coordinates before `spatial_scale`) ->
    (K, C, PH, PW), output_size an int or (PH, PW). sampling_ratio > 0 samples that many points
    per bin and axis, else ceil(box size / bins); aligned=True shifts the box by half a pixel (the
    pixel-exact alignment of Detectron2), else boxes are at least 1x1. As
    torchvision.ops.roi_align. Raises ValueError for input that is not 4-D."""
    if input.ndim != 4:
        raise ValueError(f"roi_align: expected 4-D (N, C, H, W) input, got {input.ndim}-D")
    PH, PW = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    N, C, H, W = input.shape
    rois = _boxes_as_rois(boxes)
    K = len(rois)
    if K == 0:
        return T.zeros((0, C, PH, PW), dtype=input.dtype)
    offset = 0.5 if aligned else 0.0
    rows, cols, weights = [], [], []
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        start_w, start_h = x1 * spatial_scale - offset, y1 * spatial_scale - offset
        width, height = x2 * spatial_scale - offset - start_w, y2 * spatial_scale - offset - start_h
        if not aligned:
            width, height = max(width, 1.0), max(height, 1.0)
        bin_h, bin_w = height / PH, width / PW
        gh = sampling_ratio if sampling_ratio > 0 else max(math.ceil(height / PH), 0)
        gw = sampling_ratio if sampling_ratio > 0 else max(math.ceil(width / PW), 0)
        count = max(gh * gw, 1)
        ph, pw, iy, ix = np.meshgrid(np.arange(PH), np.arange(PW), np.arange(gh), np.arange(gw), indexing="ij")
        y = start_h + ph * bin_h + (iy + 0.5) * bin_h / gh
        x = start_w + pw * bin_w + (ix + 0.5) * bin_w / gw
        row = (k * PH + ph) * PW + pw
        y, x, row = y.ravel(), x.ravel(), row.ravel()
        inside = (y >= -1.0) & (y <= H) & (x >= -1.0) & (x <= W)
        y, x, row = np.maximum(y[inside], 0.0), np.maximum(x[inside], 0.0), row[inside]
        y_low, x_low = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
        y_end, x_end = y_low >= H - 1, x_low >= W - 1
        y_low, x_low = np.where(y_end, H - 1, y_low), np.where(x_end, W - 1, x_low)
        y, x = np.where(y_end, y_low, y), np.where(x_end, x_low, x)
        y_high, x_high = np.where(y_end, y_low, y_low + 1), np.where(x_end, x_low, x_low + 1)
        ly, lx = y - y_low, x - x_low
        base = int(b) * H * W
        for yy, xx, w in ((y_low, x_low, (1 - ly) * (1 - lx)), (y_low, x_high, (1 - ly) * lx),
                          (y_high, x_low, ly * (1 - lx)), (y_high, x_high, ly * lx)):
            rows.append(row)
            cols.append(base + yy * W + xx)
            weights.append(w / count)
    rows, cols, weights = np.concatenate(rows), np.concatenate(cols), np.concatenate(weights)
    features = T.reshape(T.permute(input, 0, 2, 3, 1), N * H * W, C)  # one row per pixel
    picked = T.index_select(features, 0, T.tensor(cols)) * T.unsqueeze(
        T.tensor(weights.astype(_dt.numpy_dtype(input.dtype))), 1)
    from ... import index_add
    pooled = index_add(T.zeros((K * PH * PW, C), dtype=input.dtype), 0, T.tensor(rows), picked)
    return T.permute(T.reshape(pooled, K, PH, PW, C), 0, 3, 1, 2)


class RoIAlign(Module):
    """See roi_align."""

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"RoIAlign(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")

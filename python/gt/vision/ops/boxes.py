"""torchvision.ops.boxes for GT: boxes are (N, 4) tensors, (x1, y1, x2, y2) unless said."""
import numpy as np

from ... import _functions as T


def box_area(boxes):
    """(x2 - x1) * (y2 - y1) of each box: (N,)."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    """Intersection over union of every pair: (N, M) for (N, 4) and (M, 4) boxes."""
    lt = T.maximum(T.unsqueeze(boxes1[:, :2], 1), boxes2[:, :2])
    rb = T.minimum(T.unsqueeze(boxes1[:, 2:], 1), boxes2[:, 2:])
    wh = T.clamp(rb - lt, min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = T.unsqueeze(box_area(boxes1), 1) + box_area(boxes2) - inter
    return inter / union


def box_convert(boxes, in_fmt, out_fmt):
    """Boxes between the formats 'xyxy', 'xywh' (corner, size) and 'cxcywh' (centre, size).
    Raises ValueError for another format."""
    formats = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in formats or out_fmt not in formats:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt and out_fmt (formats: {formats})")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = T.unbind(boxes, -1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - c / 2, b - d / 2, a + c / 2, b + d / 2
    if out_fmt == "xywh":
        return T.stack([a, b, c - a, d - b], -1)
    if out_fmt == "cxcywh":
        return T.stack([(a + c) / 2, (b + d) / 2, c - a, d - b], -1)
    return T.stack([a, b, c, d], -1)


def nms(boxes, scores, iou_threshold):
    """Non-maximum suppression: the indices (int64) of the boxes kept, by decreasing score; a
    box is dropped when its IoU with a kept, higher-scoring one exceeds iou_threshold. Runs on
    the client (reads boxes and scores)."""
    b = boxes.numpy().astype(np.float64)
    order = np.argsort(-scores.numpy(), kind="stable")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.clip(np.minimum(b[i, 2], b[rest, 2]) - np.maximum(b[i, 0], b[rest, 0]), 0, None)
        h = np.clip(np.minimum(b[i, 3], b[rest, 3]) - np.maximum(b[i, 1], b[rest, 1]), 0, None)
        inter = w * h
        iou = inter / (area[i] + area[rest] - inter)
        order = rest[~(iou > iou_threshold)]
    return T.tensor(np.asarray(keep, np.int64))


def batched_nms(boxes, scores, idxs, iou_threshold):
    """nms within each category of idxs (boxes of different categories never suppress each
    other): the kept indices by decreasing score."""
    if boxes.numel() == 0:
        return T.tensor(np.zeros(0, np.int64))
    offsets = T.cast(idxs, boxes.dtype) * (T.max(boxes) + 1)
    return nms(boxes + T.unsqueeze(offsets, 1), scores, iou_threshold)


def remove_small_boxes(boxes, min_size):
    """Indices of the boxes whose sides are both at least min_size (reads them on the client)."""
    b = boxes.numpy()
    return T.tensor(np.nonzero(((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size))[0].astype(np.int64))

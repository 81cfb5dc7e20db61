"""torchvision.ops for GT: the box utilities (box_area, box_iou, box_convert, nms,
batched_nms), roi_align / RoIAlign, stochastic depth, sigmoid_focal_loss and
misc.FrozenBatchNorm2d. nms and roi_align read the boxes on the client (a wait, as nms
synchronizes in torchvision on a GPU); the rest are GT ops with gradients. Not provided:
roi_pool, deform_conv2d and the other detection kernels."""
from . import boxes, misc  # noqa: F401
from .boxes import batched_nms, box_area, box_convert, box_iou, nms, remove_small_boxes  # noqa: F401
from .misc import FrozenBatchNorm2d, StochasticDepth, sigmoid_focal_loss, stochastic_depth  # noqa: F401
from .roi_align import RoIAlign, roi_align  # noqa: F401 (the function, as torchvision.ops.roi_align)

"""torchvision.ops for GT: the box utilities (box_area, box_iou, box_convert, nms,
batched_nms), stochastic depth, sigmoid_focal_loss and misc.FrozenBatchNorm2d. nms reads the
boxes and scores on the client (a wait, as it synchronizes in torchvision on a GPU); the rest
are GT ops with gradients. Not provided: roi_align, roi_pool, deform_conv2d and the other
detection kernels."""
from . import boxes, misc  # noqa: F401
from .boxes import batched_nms, box_area, box_convert, box_iou, nms, remove_small_boxes  # noqa: F401
from .misc import FrozenBatchNorm2d, StochasticDepth, sigmoid_focal_loss, stochastic_depth  # noqa: F401

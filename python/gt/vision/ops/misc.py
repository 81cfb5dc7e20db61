"""torchvision.ops.misc and the small layers of torchvision.ops for GT."""
from ... import _functions as T
from ...nn import functional as F
from ...nn.modules import Module


class FrozenBatchNorm2d(Module):
    """Batch norm with fixed statistics and affine parameters, all buffers (nothing trains):
    y = (x - running_mean) / sqrt(running_var + eps) * weight + bias per channel of (N, C, H, W)."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", T.ones(num_features))
        self.register_buffer("bias", T.zeros(num_features))
        self.register_buffer("running_mean", T.zeros(num_features))
        self.register_buffer("running_var", T.ones(num_features))
        # a BatchNorm2d's state dict loads (its num_batches_tracked is dropped), as torchvision's
        self._register_load_state_dict_pre_hook(
            lambda state_dict, prefix, *args: state_dict.pop(prefix + "num_batches_tracked", None))

    def forward(self, x):
        scale = self.weight * T.rsqrt(self.running_var + self.eps)
        shift = self.bias - self.running_mean * scale
        return x * T.reshape(scale, 1, -1, 1, 1) + T.reshape(shift, 1, -1, 1, 1)

    def __repr__(self):
        return f"{type(self).__name__}({self.weight.shape[0]}, eps={self.eps})"


def stochastic_depth(input, p, mode, training=True):
    """Drops whole residual branches (Huang et al. 2016): mode 'row' zeroes each sample's
    (axis 0) with probability p, 'batch' the whole batch's; survivors are scaled by 1 / (1 - p).
    Raises ValueError for p outside [0, 1] or another mode."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    shape = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    keep = T.cast(T.rand(shape, dtype=input.dtype) >= p, input.dtype)
    return input * (keep / (1.0 - p) if p < 1.0 else keep)


class StochasticDepth(Module):
    """stochastic_depth(x, p, mode, self.training) as a module."""

    def __init__(self, p, mode):
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, x):
        return stochastic_depth(x, self.p, self.mode, self.training)

    def __repr__(self):
        return f"{type(self).__name__}(p={self.p}, mode={self.mode})"


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
    """The focal loss of RetinaNet (Lin et al. 2017) on logits: BCE-with-logits times
    (1 - p_t) ** gamma, weighted by alpha for positives and 1 - alpha for negatives (alpha < 0:
    no weighting); reduction 'none', 'mean' or 'sum'."""
    p = T.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction != "none":
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction}'")
    return loss


interpolate = F.interpolate  # (torchvision.ops.misc.interpolate: nn.functional's, as in torchvision >= 0.10)

"""torch.nn.utils.fusion: a convolution or linear layer followed by a batch norm in eval mode,
folded into one layer (the batch norm's affine map of its running statistics moved into the
weight and bias): y = (W x + b - mean) * weight / sqrt(var + eps) + bias."""
import copy

from ... import _functions as T
from ...autograd import no_grad
from ..modules import Parameter


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` (ConvNd or ConvTransposeNd, transpose=True) that computes bn(conv(x))
    with bn's running statistics. Both must be in eval mode (AssertionError otherwise)."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the fused convolution: weight scaled per output channel
    (axis 0, or 1 for a transposed convolution) by bn_w / sqrt(bn_rv + bn_eps), bias
    (conv_b - bn_rm) * that + bn_b; None biases and weights count as 0 and 1."""
    with no_grad():
        conv_b_ = conv_b if conv_b is not None else T.zeros_like(bn_rm)
        bn_w_ = bn_w if bn_w is not None else T.ones_like(bn_rm)
        bn_b_ = bn_b if bn_b is not None else T.zeros_like(bn_rm)
        scale = bn_w_ * T.rsqrt(bn_rv + bn_eps)
        shape = [1, -1] + [1] * (conv_w.ndim - 2) if transpose else [-1, 1] + [1] * (conv_w.ndim - 2)
        w = (conv_w * T.reshape(scale, *shape)).to(conv_w.dtype)
        b = ((conv_b_ - bn_rm) * scale + bn_b_).to(conv_b.dtype if conv_b is not None else conv_w.dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b_.requires_grad if conv_b is not None else
                                                         conv_w.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` that computes bn(linear(x)) with bn's running statistics (both in eval
    mode; AssertionError otherwise, or when bn's features are not linear's outputs)."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    assert linear.out_features == bn.num_features or bn.num_features == 1, \
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1"
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the fused linear layer (see fuse_conv_bn_weights)."""
    with no_grad():
        linear_b_ = linear_b if linear_b is not None else T.zeros_like(bn_rm)
        scale = (bn_w if bn_w is not None else T.ones_like(bn_rm)) * T.rsqrt(bn_rv + bn_eps)
        w = linear_w * T.unsqueeze(scale, -1)
        b = (linear_b_ - bn_rm) * scale + (bn_b if bn_b is not None else T.zeros_like(bn_rm))
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_w.requires_grad)

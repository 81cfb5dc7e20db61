"""MobileNetV2 (Sandler, Howard, Zhu, Zhmoginov & Chen, "MobileNetV2: Inverted Residuals and
Linear Bottlenecks", CVPR 2018), laid out as torchvision's (module names, initialization): a
stride-2 3x3 stem, inverted residual blocks (1x1 expansion, 3x3 depthwise, linear 1x1
projection, a shortcut where the shape is kept), a 1x1 convolution to 1280 channels, global
average pooling, dropout and a linear classifier. Also Conv2dNormActivation and
_make_divisible, which torchvision keeps in torchvision.ops.misc and torchvision.models._utils.

Input (N, 3, H, W) float32 (any H, W >= 1), output (N, num_classes) logits.
"""
import gt
from gt import nn
from gt.nn import functional as F

from ._weights import build


def _make_divisible(v, divisor, min_value=None):
    """`v` rounded to the nearest multiple of `divisor` (at least `min_value`, default `divisor`),
    rounded up a step if that loses more than 10% (from TensorFlow's slim MobileNet)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Conv2dNormActivation(nn.Sequential):
    """Conv2d, then `norm_layer` (None: none), then `activation_layer` (None: none), as
    torchvision.ops.Conv2dNormActivation: children "0", "1", "2". padding None: (kernel_size - 1)
    // 2 * dilation; bias None: a bias only without a norm layer."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True, bias=None,
                 conv_layer=nn.Conv2d):
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                n = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else len(dilation)
                kernel_size = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * n
                dilation = tuple(dilation) if isinstance(dilation, (tuple, list)) else (dilation,) * n
                padding = tuple((kernel_size[i] - 1) // 2 * dilation[i] for i in range(n))
        if bias is None:
            bias = norm_layer is None
        layers = [conv_layer(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                             groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


class InvertedResidual(nn.Module):
    """1x1 expansion by `expand_ratio` (omitted at 1), 3x3 depthwise with the stride (ReLU6 after
    both), linear 1x1 projection to `oup`; plus the input where stride is 1 and inp == oup."""

    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        self.stride = stride
        if stride not in [1, 2]:
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers.extend([
            Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer,
                                 activation_layer=nn.ReLU6),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup)])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


def init_weights(model):
    """torchvision's MobileNet initialization: convolutions He-normal (fan_out), norms ones and
    zeros, linear layers N(0, 0.01) with zero bias."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)


class MobileNetV2(nn.Module):
    """width_mult scales every layer's channels (rounded to multiples of `round_nearest`; the
    last 1280 only grows); inverted_residual_setting: rows [t (expansion), c (channels), n
    (repeats), s (first stride)]; block and norm_layer replace InvertedResidual and BatchNorm2d;
    dropout before the classifier."""

    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None, round_nearest=8, block=None,
                 norm_layer=None, dropout=0.2):
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        input_channel, last_channel = 32, 1280
        if inverted_residual_setting is None:
            inverted_residual_setting = [
                # t, c, n, s
                [1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                [6, 320, 1, 1]]
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError("inverted_residual_setting should be non-empty or a 4-element list, got "
                             f"{inverted_residual_setting}")
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer, activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer,
                                             activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))

        init_weights(self)

    def _forward_impl(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(gt.flatten(x, 1))

    def forward(self, x):
        return self._forward_impl(x)


def mobilenet_v2(*, weights=None, progress=True, **kwargs):
    """MobileNetV2 (width_mult=1.0 by default), 3.5M parameters at 1000 classes."""
    return build(MobileNetV2, "mobilenet_v2", weights, {**kwargs, "progress": progress})

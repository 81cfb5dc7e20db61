"""MobileNetV3 (Howard, Sandler, Chu, Chen, Chen, Tan, Wang, Zhu, Pang, Vasudevan, Le & Adam,
"Searching for MobileNetV3", ICCV 2019), laid out as torchvision's (module names,
initialization): a stride-2 3x3 stem (Hardswish), the paper's Table 1 (Large) or Table 2
(Small) inverted residual blocks (1x1 expansion, depthwise k x k, optional squeeze-and-
excitation with a hard sigmoid, linear 1x1 projection; ReLU or Hardswish), a 1x1 convolution
to 6x the last block's channels, global average pooling and a two-layer classifier (Hardswish,
dropout). BatchNorms use eps 0.001 and momentum 0.01.

Input (N, 3, H, W) float32 (any H, W >= 1), output (N, num_classes) logits.
"""
from functools import partial

import gt
from gt import nn

from ._weights import build
from .mobilenetv2 import Conv2dNormActivation, _make_divisible, init_weights


class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation (Hu et al., CVPR 2018): the input scaled per channel by
    scale_activation(fc2(activation(fc1(global average pool)))), fc1 and fc2 1x1 convolutions."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))

    def forward(self, input):
        return self._scale(input) * input


SElayer = SqueezeExcitation


class InvertedResidualConfig:
    """One row of the paper's Tables 1 and 2; channels scaled by width_mult (multiples of 8)."""

    def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se, activation, stride, dilation,
                 width_mult):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels, width_mult):
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """The block of the paper's section 5 (children in `block`); a shortcut where stride is 1 and
    the channels are kept."""

    def __init__(self, cnf, norm_layer, se_layer=partial(SElayer, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers = []
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                           stride=stride, dilation=cnf.dilation, groups=cnf.expanded_channels,
                                           norm_layer=norm_layer, activation_layer=activation_layer))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels, _make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        return result + input if self.use_res_connect else result


class MobileNetV3(nn.Module):
    """inverted_residual_setting: a list of InvertedResidualConfig (_mobilenet_v3_conf makes the
    paper's); last_channel: the classifier's hidden width; block and norm_layer replace
    InvertedResidual and BatchNorm2d(eps=0.001, momentum=0.01); dropout in the classifier.
    Other keyword arguments (the builders' width_mult, reduced_tail, dilated) are ignored here."""

    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, block=None, norm_layer=None,
                 dropout=0.2, **kwargs):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, (list, tuple))
                and all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        firstconv_output_channels = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3, stride=2, norm_layer=norm_layer,
                                       activation_layer=nn.Hardswish)]
        layers.extend(block(cnf, norm_layer) for cnf in inverted_residual_setting)
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = 6 * lastconv_input_channels
        layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(lastconv_output_channels, last_channel), nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))

        init_weights(self)

    def _forward_impl(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(gt.flatten(x, 1))

    def forward(self, x):
        return self._forward_impl(x)


def _mobilenet_v3_conf(arch, width_mult=1.0, reduced_tail=False, dilated=False, **kwargs):
    """(inverted_residual_setting, last_channel) of "mobilenet_v3_large" or "mobilenet_v3_small".
    reduced_tail halves the last stage's channels, dilated dilates it (both for segmentation)."""
    reduce_divider = 2 if reduced_tail else 1
    dilation = 2 if dilated else 1
    bneck_conf = partial(InvertedResidualConfig, width_mult=width_mult)
    adjust_channels = partial(InvertedResidualConfig.adjust_channels, width_mult=width_mult)
    r = reduce_divider
    if arch == "mobilenet_v3_large":
        inverted_residual_setting = [
            bneck_conf(16, 3, 16, 16, False, "RE", 1, 1),
            bneck_conf(16, 3, 64, 24, False, "RE", 2, 1),  # C1
            bneck_conf(24, 3, 72, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 72, 40, True, "RE", 2, 1),  # C2
            bneck_conf(40, 5, 120, 40, True, "RE", 1, 1),
            bneck_conf(40, 5, 120, 40, True, "RE", 1, 1),
            bneck_conf(40, 3, 240, 80, False, "HS", 2, 1),  # C3
            bneck_conf(80, 3, 200, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 184, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 184, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 480, 112, True, "HS", 1, 1),
            bneck_conf(112, 3, 672, 112, True, "HS", 1, 1),
            bneck_conf(112, 5, 672, 160 // r, True, "HS", 2, dilation),  # C4
            bneck_conf(160 // r, 5, 960 // r, 160 // r, True, "HS", 1, dilation),
            bneck_conf(160 // r, 5, 960 // r, 160 // r, True, "HS", 1, dilation)]
        last_channel = adjust_channels(1280 // r)  # C5
    elif arch == "mobilenet_v3_small":
        inverted_residual_setting = [
            bneck_conf(16, 3, 16, 16, True, "RE", 2, 1),  # C1
            bneck_conf(16, 3, 72, 24, False, "RE", 2, 1),  # C2
            bneck_conf(24, 3, 88, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 96, 40, True, "HS", 2, 1),  # C3
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 120, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 144, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 288, 96 // r, True, "HS", 2, dilation),  # C4
            bneck_conf(96 // r, 5, 576 // r, 96 // r, True, "HS", 1, dilation),
            bneck_conf(96 // r, 5, 576 // r, 96 // r, True, "HS", 1, dilation)]
        last_channel = adjust_channels(1024 // r)  # C5
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return inverted_residual_setting, last_channel


def _mobilenet_v3(arch, weights, kwargs):
    return build(lambda **kw: MobileNetV3(*_mobilenet_v3_conf(arch, **kw), **kw), arch, weights, kwargs)


def mobilenet_v3_large(*, weights=None, progress=True, **kwargs):
    """MobileNetV3-Large (width_mult=1.0, reduced_tail=False, dilated=False accepted), 5.5M
    parameters at 1000 classes."""
    return _mobilenet_v3("mobilenet_v3_large", weights, {**kwargs, "progress": progress})


def mobilenet_v3_small(*, weights=None, progress=True, **kwargs):
    """MobileNetV3-Small (width_mult=1.0, reduced_tail=False, dilated=False accepted), 2.5M
    parameters at 1000 classes."""
    return _mobilenet_v3("mobilenet_v3_small", weights, {**kwargs, "progress": progress})

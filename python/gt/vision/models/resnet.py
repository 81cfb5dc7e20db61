"""ResNet, ResNeXt and Wide ResNet, laid out as torchvision's (module names, initialization).

He, Zhang, Ren & Sun, "Deep Residual Learning for Image Recognition", CVPR 2016: a 7x7 stem,
four stages of residual blocks (64, 128, 256, 512 planes; the last three halve the resolution),
global average pooling and a linear classifier. As in torchvision ("ResNet v1.5"), a
bottleneck block downsamples in its 3x3 convolution rather than its first 1x1. ResNeXt (Xie et
al., CVPR 2017) makes that 3x3 a grouped convolution; Wide ResNet (Zagoruyko & Komodakis,
BMVC 2016) widens it.

Input (N, 3, H, W) float32 (any H, W: the pooling before the classifier is adaptive), output
(N, num_classes) logits.
"""
import gt
from gt import nn

from ._weights import build


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution with padding (no bias: a BatchNorm follows)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups, bias=False,
                     dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution (no bias)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a shortcut (ResNet-18 and -34). `downsample` maps the input to
    the output's shape when the stride or the width changes."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("dilation > 1 is not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 (reduce), 3x3 (with the stride, grouped for ResNeXt), 1x1 (expand x4) and a shortcut
    (ResNet-50 and deeper)."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """`block` (BasicBlock or Bottleneck) repeated `layers[i]` times in stage i.

    zero_init_residual: the last BatchNorm of every block starts at 0, so each block starts as
    the identity (Goyal et al., "Accurate, Large Minibatch SGD", 2017). replace_stride_with_dilation:
    three booleans, for stages 2-4, that keep the resolution and dilate instead."""

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1, width_per_group=64,
                 replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes, self.dilation = 64, 1
        replace_stride_with_dilation = replace_stride_with_dilation or [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, got "
                             f"{replace_stride_with_dilation}")
        self.groups, self.base_width = groups, width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        # He et al. 2015 ("Delving Deep into Rectifiers") initialization for the convolutions.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(gt.flatten(self.avgpool(x), 1))


def _resnet(name, block, layers, weights, kwargs):
    return build(lambda **kw: ResNet(block, layers, **kw), name, weights, kwargs)


def resnet18(*, weights=None, progress=True, **kwargs):
    """ResNet-18: BasicBlock x [2, 2, 2, 2], 11.7M parameters at 1000 classes."""
    return _resnet("resnet18", BasicBlock, [2, 2, 2, 2], weights, {**kwargs, "progress": progress})


def resnet34(*, weights=None, progress=True, **kwargs):
    """ResNet-34: BasicBlock x [3, 4, 6, 3]."""
    return _resnet("resnet34", BasicBlock, [3, 4, 6, 3], weights, {**kwargs, "progress": progress})


def resnet50(*, weights=None, progress=True, **kwargs):
    """ResNet-50: Bottleneck x [3, 4, 6, 3], 25.6M parameters at 1000 classes."""
    return _resnet("resnet50", Bottleneck, [3, 4, 6, 3], weights, {**kwargs, "progress": progress})


def resnet101(*, weights=None, progress=True, **kwargs):
    """ResNet-101: Bottleneck x [3, 4, 23, 3]."""
    return _resnet("resnet101", Bottleneck, [3, 4, 23, 3], weights, {**kwargs, "progress": progress})


def resnet152(*, weights=None, progress=True, **kwargs):
    """ResNet-152: Bottleneck x [3, 8, 36, 3]."""
    return _resnet("resnet152", Bottleneck, [3, 8, 36, 3], weights, {**kwargs, "progress": progress})


def resnext50_32x4d(*, weights=None, progress=True, **kwargs):
    """ResNeXt-50 32x4d: ResNet-50 with 32 groups of width 4 in each 3x3."""
    return _resnet("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], weights,
                   {"groups": 32, "width_per_group": 4, **kwargs, "progress": progress})


def resnext101_32x8d(*, weights=None, progress=True, **kwargs):
    """ResNeXt-101 32x8d."""
    return _resnet("resnext101_32x8d", Bottleneck, [3, 4, 23, 3], weights,
                   {"groups": 32, "width_per_group": 8, **kwargs, "progress": progress})


def wide_resnet50_2(*, weights=None, progress=True, **kwargs):
    """Wide ResNet-50-2: ResNet-50 with every 3x3 twice as wide."""
    return _resnet("wide_resnet50_2", Bottleneck, [3, 4, 6, 3], weights,
                   {"width_per_group": 128, **kwargs, "progress": progress})


def wide_resnet101_2(*, weights=None, progress=True, **kwargs):
    """Wide ResNet-101-2."""
    return _resnet("wide_resnet101_2", Bottleneck, [3, 4, 23, 3], weights,
                   {"width_per_group": 128, **kwargs, "progress": progress})

"""SqueezeNet (Iandola, Han, Moskewicz, Ashraf, Dally & Keutzer, "SqueezeNet: AlexNet-level
accuracy with 50x fewer parameters and <0.5MB model size", 2016), laid out as torchvision's
(module names, initialization): `features` (a stem convolution, Fire modules, 3x3 stride-2 max
pools with ceil_mode) and `classifier` (dropout, a 1x1 convolution to num_classes, ReLU,
global average pooling). Version 1_0 is the paper's; 1_1 (from the SqueezeNet repository)
has a 3x3 stem and pools earlier, for 2.4x less computation at the same accuracy.

Input (N, 3, H, W) float32 with H, W >= 21 (1_0) or 17 (1_1), output (N, num_classes) logits.
"""
import gt
from gt import nn
from gt.nn import init

from ._weights import build


class Fire(nn.Module):
    """A 1x1 squeeze to `squeeze_planes`, then 1x1 and 3x3 expansions concatenated (ReLU after each)."""

    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return gt.cat([self.expand1x1_activation(self.expand1x1(x)),
                       self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """version "1_0" or "1_1" (ValueError otherwise); dropout before the final convolution."""

    def __init__(self, version="1_0", num_classes=1000, dropout=0.5):
        super().__init__()
        self.num_classes = num_classes
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(512, 64, 256, 256))
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")

        # The final convolution starts small (normal, std 0.01); the others Kaiming uniform; biases 0.
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    init.constant_(m.bias, 0)

    def forward(self, x):
        return gt.flatten(self.classifier(self.features(x)), 1)


def squeezenet1_0(*, weights=None, progress=True, **kwargs):
    """SqueezeNet 1.0, 1.25M parameters at 1000 classes."""
    return build(lambda **kw: SqueezeNet("1_0", **kw), "squeezenet1_0", weights, {**kwargs, "progress": progress})


def squeezenet1_1(*, weights=None, progress=True, **kwargs):
    """SqueezeNet 1.1, 1.24M parameters at 1000 classes and 2.4x less computation than 1.0."""
    return build(lambda **kw: SqueezeNet("1_1", **kw), "squeezenet1_1", weights, {**kwargs, "progress": progress})

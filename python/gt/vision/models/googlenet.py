"""GoogLeNet (Szegedy et al., "Going Deeper with Convolutions", CVPR 2015, Inception v1) with
BatchNorm after every convolution, laid out as torchvision's (module names, state dict keys,
initialization): a 7x7 stem, nine Inception blocks (3a..5b) between ceil-mode max pools,
global average pooling, dropout and a linear classifier; auxiliary classifiers aux1 (on 4a's
output) and aux2 (on 4d's) in training mode. As torchvision's, the "5x5" branch uses a 3x3
convolution (its checkpoint was trained so).

Input (N, 3, H, W) float32 with H, W >= 15. In training mode with aux_logits the output is
GoogLeNetOutputs(logits, aux_logits2, aux_logits1), each (N, num_classes); otherwise the
logits (N, num_classes).
"""
import warnings
from collections import namedtuple

import gt
from gt import nn
from gt.nn import functional as F

from . import _weights
from .inception import BasicConv2d, _imagenet_to_half_range, _init_weights

GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
GoogLeNetOutputs.__annotations__ = {"logits": gt.Tensor, "aux_logits2": gt.Tensor, "aux_logits1": gt.Tensor}
_GoogLeNetOutputs = GoogLeNetOutputs  # (torchvision's old name)

GoogLeNet_Weights = _weights._enum("GoogLeNet_Weights", {
    "IMAGENET1K_V1": _weights._weights("googlenet-1378be20.pth", 6624904, min_size=(15, 15))}, "IMAGENET1K_V1")
_weights.BY_MODEL["googlenet"] = GoogLeNet_Weights


class Inception(nn.Module):
    """Four branches concatenated: 1x1 (ch1x1), 1x1-3x3 (ch3x3red-ch3x3), 1x1-3x3
    (ch5x5red-ch5x5) and 3x3 max pool-1x1 (pool_proj); the size is kept."""

    def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(conv_block(in_channels, ch3x3red, kernel_size=1),
                                     conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1))
        self.branch3 = nn.Sequential(conv_block(in_channels, ch5x5red, kernel_size=1),
                                     conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                                     conv_block(in_channels, pool_proj, kernel_size=1))

    def _forward(self, x):
        return [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)]

    def forward(self, x):
        return gt.cat(self._forward(x), 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier: adaptive average pool to 4x4, 1x1 (128), linear 2048 -> 1024, ReLU,
    dropout, linear to num_classes."""

    def __init__(self, in_channels, num_classes, conv_block=None, dropout=0.7):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.conv = conv_block(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        x = gt.flatten(self.conv(F.adaptive_avg_pool2d(x, (4, 4))), 1)
        return self.fc2(self.dropout(F.relu(self.fc1(x), inplace=True)))


class GoogLeNet(nn.Module):
    """num_classes; aux_logits: build aux1 and aux2 (used in training mode); transform_input: map
    inputs normalized by ImageNet's mean and std to (x - 0.5) / 0.5; init_weights: truncated
    normal (std 0.01, cut at +-2) weights for convolutions and linears, BatchNorms at 1 and 0
    (None: True with a FutureWarning, as torchvision); blocks: [BasicConv2d, Inception,
    InceptionAux] to use instead; dropout before the classifier, dropout_aux in the aux heads."""

    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False, init_weights=None, blocks=None,
                 dropout=0.2, dropout_aux=0.7):
        super().__init__()
        if blocks is None:
            blocks = [BasicConv2d, Inception, InceptionAux]
        if init_weights is None:
            warnings.warn("The default weight initialization of GoogleNet will be changed in future releases of "
                          "torchvision. If you wish to keep the old behavior (which leads to long initialization times"
                          " due to scipy/scipy#11299), please set init_weights=True.", FutureWarning)
            init_weights = True
        if len(blocks) != 3:
            raise ValueError(f"blocks length should be 3 instead of {len(blocks)}")
        conv, block, aux = blocks
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.conv1 = conv(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv(64, 64, kernel_size=1)
        self.conv3 = conv(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception3a = block(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = block(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception4a = block(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = block(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = block(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = block(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = block(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        self.inception5a = block(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = block(832, 384, 192, 384, 48, 128, 128)
        if aux_logits:
            self.aux1 = aux(512, num_classes, dropout=dropout_aux)
            self.aux2 = aux(528, num_classes, dropout=dropout_aux)
        else:
            self.aux1 = None
            self.aux2 = None
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)
        if init_weights:
            _init_weights(self, lambda m: 0.01)

    def _transform_input(self, x):
        return _imagenet_to_half_range(x) if self.transform_input else x

    def _forward(self, x):
        """(logits, aux1's output, aux2's output); the aux outputs are None outside training."""
        for layer in (self.conv1, self.maxpool1, self.conv2, self.conv3, self.maxpool2, self.inception3a,
                      self.inception3b, self.maxpool3, self.inception4a):
            x = layer(x)
        aux1 = self.aux1(x) if self.aux1 is not None and self.training else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if self.aux2 is not None and self.training else None
        x = self.maxpool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        x = self.dropout(gt.flatten(self.avgpool(x), 1))
        return self.fc(x), aux1, aux2

    def eager_outputs(self, x, aux2, aux1):
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x

    def forward(self, x):
        x, aux1, aux2 = self._forward(self._transform_input(x))
        return self.eager_outputs(x, aux2, aux1)


def googlenet(*, weights=None, progress=True, **kwargs):
    """GoogLeNet, 6.6M parameters at 1000 classes (without the aux heads; 13.0M with). With
    weights (GoogLeNet_Weights): transform_input defaults to True, and the aux heads, untrained
    in the checkpoint, are dropped unless aux_logits=True was asked for."""
    pretrained = weights is not None or kwargs.get("pretrained", False)
    original_aux_logits = kwargs.get("aux_logits", False)
    if pretrained:
        kwargs.setdefault("transform_input", True)
        kwargs["aux_logits"], kwargs["init_weights"] = True, False
    model = _weights.build(lambda **kw: GoogLeNet(**kw), "googlenet", weights, {**kwargs, "progress": progress})
    if pretrained:
        if not original_aux_logits:
            model.aux_logits = False
            model.aux1 = None
            model.aux2 = None
        else:
            warnings.warn("auxiliary heads in the pretrained googlenet model are NOT pretrained, so make sure to "
                          "train them")
    return model

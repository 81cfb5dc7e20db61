"""Inception v3 (Szegedy, Vanhoucke, Ioffe, Shlens & Wojna, "Rethinking the Inception
Architecture for Computer Vision", CVPR 2016), laid out as torchvision's (module names, state
dict keys, initialization): a stem of BatchNorm'd convolutions (BasicConv2d) and max pools, the
Mixed_5b..Mixed_7c blocks (InceptionA: 35x35, B: reduction to 17x17, C: factorized 7x7, D:
reduction to 8x8, E: expanded 3x3 splits), global average pooling, dropout and a linear
classifier; an auxiliary classifier (AuxLogits) on Mixed_6e's output in training mode.

Input (N, 3, H, W) float32: H, W >= 75 in eval mode; the auxiliary head needs H, W >= 299
(Mixed_6e at 17x17). In training mode with aux_logits the output is
InceptionOutputs(logits, aux_logits), each (N, num_classes); otherwise the logits (N, num_classes).
"""
import warnings
from collections import namedtuple

import gt
from gt import nn
from gt.nn import functional as F

from . import _weights

InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
InceptionOutputs.__annotations__ = {"logits": gt.Tensor, "aux_logits": gt.Tensor}
_InceptionOutputs = InceptionOutputs  # (torchvision's old name)

Inception_V3_Weights = _weights._enum("Inception_V3_Weights", {
    "IMAGENET1K_V1": _weights._weights("inception_v3_google-0cc3c7bd.pth", 27161264, resize_size=342,
                                       crop_size=299, min_size=(75, 75))}, "IMAGENET1K_V1")
_weights.BY_MODEL["inception_v3"] = Inception_V3_Weights


class BasicConv2d(nn.Module):
    """Convolution (no bias; `kwargs` as nn.Conv2d's), BatchNorm (eps 0.001), ReLU."""

    def __init__(self, in_channels, out_channels, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


def _init_weights(model, std_of):
    """torchvision's Inception/GoogLeNet initialization: convolution and linear weights from a
    normal of std std_of(module) truncated to [-2, 2], BatchNorm weight 1 and bias 0."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, mean=0.0, std=std_of(m), a=-2, b=2)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


def _imagenet_to_half_range(x):
    """Images normalized with ImageNet's mean and std (N, 3, H, W) re-normalized to mean 0.5 and
    std 0.5 per channel (transform_input: what Google's checkpoints were trained on)."""
    chans = [gt.unsqueeze(x[:, i], 1) * (s / 0.5) + (m - 0.5) / 0.5
             for i, (m, s) in enumerate(zip((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)))]
    return gt.cat(chans, 1)


class InceptionA(nn.Module):
    """35x35 block: 1x1 (64), 1x1-5x5 (48-64), 1x1-3x3-3x3 (64-96-96) and 3x3 average pool-1x1
    (pool_features) branches, concatenated: 224 + pool_features channels, size kept."""

    def __init__(self, in_channels, pool_features, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch1x1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = conv_block(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = conv_block(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, padding=1)
        self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)

    def _forward(self, x):
        b1 = self.branch1x1(x)
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return [b1, b5, b3, bp]

    def forward(self, x):
        return gt.cat(self._forward(x), 1)


class InceptionB(nn.Module):
    """Grid reduction 35x35 -> 17x17: stride-2 3x3 (384), 1x1-3x3-stride-2 3x3 (64-96-96) and a
    stride-2 3x3 max pool, concatenated: 480 + in_channels channels."""

    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch3x3 = conv_block(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, stride=2)

    def _forward(self, x):
        b3 = self.branch3x3(x)
        bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return [b3, bd, F.max_pool2d(x, kernel_size=3, stride=2)]

    def forward(self, x):
        return gt.cat(self._forward(x), 1)


class InceptionC(nn.Module):
    """17x17 block with 7x7 convolutions factorized into 1x7 and 7x1 (channels_7x7 wide): 1x1,
    1x1-1x7-7x1, 1x1-7x1-1x7-7x1-1x7 and average pool-1x1 branches of 192 each: 768 channels."""

    def __init__(self, in_channels, channels_7x7, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        c7 = channels_7x7
        self.branch1x1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = conv_block(c7, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = conv_block(c7, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def _forward(self, x):
        b1 = self.branch1x1(x)
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        bd = x
        for layer in (self.branch7x7dbl_1, self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4,
                      self.branch7x7dbl_5):
            bd = layer(bd)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return [b1, b7, bd, bp]

    def forward(self, x):
        return gt.cat(self._forward(x), 1)


class InceptionD(nn.Module):
    """Grid reduction 17x17 -> 8x8: 1x1-stride-2 3x3 (192-320), 1x1-1x7-7x1-stride-2 3x3 (192)
    and a stride-2 max pool: 512 + in_channels channels."""

    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch3x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = conv_block(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = conv_block(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = conv_block(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = conv_block(192, 192, kernel_size=3, stride=2)

    def _forward(self, x):
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return [b3, b7, F.max_pool2d(x, kernel_size=3, stride=2)]

    def forward(self, x):
        return gt.cat(self._forward(x), 1)


class InceptionE(nn.Module):
    """8x8 block with expanded filter banks: 1x1 (320), 1x1 (384) then parallel 1x3 and 3x1
    (384 each), 1x1-3x3 (448-384) then parallel 1x3 and 3x1, average pool-1x1 (192): 2048 channels."""

    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch1x1 = conv_block(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv_block(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = conv_block(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def _forward(self, x):
        b1 = self.branch1x1(x)
        b3 = self.branch3x3_1(x)
        b3 = gt.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        bd = gt.cat([self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)], 1)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return [b1, b3, bd, bp]

    def forward(self, x):
        return gt.cat(self._forward(x), 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier on a 17x17 map: 5x5 stride-3 average pool, 1x1 (128), 5x5 (768),
    global average pool, linear. Its conv1 and fc start smaller (stddev 0.01 and 0.001)."""

    def __init__(self, in_channels, num_classes, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.conv0 = conv_block(in_channels, 128, kernel_size=1)
        self.conv1 = conv_block(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001

    def forward(self, x):
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        return self.fc(gt.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1))


class Inception3(nn.Module):
    """num_classes; aux_logits: build the auxiliary head (used in training mode); transform_input:
    map inputs normalized by ImageNet's mean and std to the (x - 0.5) / 0.5 the Google
    checkpoint expects; inception_blocks: the seven block classes [BasicConv2d, InceptionA..E,
    InceptionAux] to use instead; init_weights: truncated normal (std 0.1, or the module's
    `stddev`, cut at +-2) weights for convolutions and linears, BatchNorms at 1 and 0 (None:
    True with a FutureWarning, as torchvision); dropout before the classifier."""

    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False, inception_blocks=None,
                 init_weights=None, dropout=0.5):
        super().__init__()
        if inception_blocks is None:
            inception_blocks = [BasicConv2d, InceptionA, InceptionB, InceptionC, InceptionD, InceptionE, InceptionAux]
        if init_weights is None:
            warnings.warn("The default weight initialization of inception_v3 will be changed in future releases of "
                          "torchvision. If you wish to keep the old behavior (which leads to long initialization times"
                          " due to scipy/scipy#11299), please set init_weights=True.", FutureWarning)
            init_weights = True
        if len(inception_blocks) != 7:
            raise ValueError(f"length of inception_blocks should be 7 instead of {len(inception_blocks)}")
        conv, block_a, block_b, block_c, block_d, block_e, aux = inception_blocks
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.Conv2d_1a_3x3 = conv(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = block_a(192, pool_features=32)
        self.Mixed_5c = block_a(256, pool_features=64)
        self.Mixed_5d = block_a(288, pool_features=64)
        self.Mixed_6a = block_b(288)
        self.Mixed_6b = block_c(768, channels_7x7=128)
        self.Mixed_6c = block_c(768, channels_7x7=160)
        self.Mixed_6d = block_c(768, channels_7x7=160)
        self.Mixed_6e = block_c(768, channels_7x7=192)
        self.AuxLogits = aux(768, num_classes) if aux_logits else None
        self.Mixed_7a = block_d(768)
        self.Mixed_7b = block_e(1280)
        self.Mixed_7c = block_e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)
        if init_weights:
            _init_weights(self, lambda m: float(getattr(m, "stddev", 0.1)))

    def _transform_input(self, x):
        return _imagenet_to_half_range(x) if self.transform_input else x

    def _forward(self, x):
        for layer in (self.Conv2d_1a_3x3, self.Conv2d_2a_3x3, self.Conv2d_2b_3x3, self.maxpool1, self.Conv2d_3b_1x1,
                      self.Conv2d_4a_3x3, self.maxpool2, self.Mixed_5b, self.Mixed_5c, self.Mixed_5d, self.Mixed_6a,
                      self.Mixed_6b, self.Mixed_6c, self.Mixed_6d, self.Mixed_6e):
            x = layer(x)
        aux = self.AuxLogits(x) if self.AuxLogits is not None and self.training else None
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
        x = self.dropout(self.avgpool(x))
        return self.fc(gt.flatten(x, 1)), aux

    def eager_outputs(self, x, aux):
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x

    def forward(self, x):
        x, aux = self._forward(self._transform_input(x))
        return self.eager_outputs(x, aux)


def inception_v3(*, weights=None, progress=True, **kwargs):
    """Inception v3, 27.2M parameters at 1000 classes (with the auxiliary head). With weights
    (Inception_V3_Weights, Google's checkpoint ported by torchvision): transform_input defaults to
    True, the auxiliary head is loaded and then dropped unless aux_logits=True was asked for."""
    pretrained = weights is not None or kwargs.get("pretrained", False)
    original_aux_logits = kwargs.get("aux_logits", True)
    if pretrained:
        kwargs.setdefault("transform_input", True)
        kwargs["aux_logits"], kwargs["init_weights"] = True, False
    model = _weights.build(lambda **kw: Inception3(**kw), "inception_v3", weights, {**kwargs, "progress": progress})
    if pretrained and not original_aux_logits:
        model.aux_logits = False
        model.AuxLogits = None
    return model

"""DenseNet-BC (Huang, Liu, van der Maaten & Weinberger, "Densely Connected Convolutional
Networks", CVPR 2017), laid out as torchvision's (module names, initialization): a 7x7 stem,
four dense blocks (every layer, BatchNorm-ReLU-1x1-BatchNorm-ReLU-3x3, adds `growth_rate`
channels that all later layers of the block see), transitions between them (1x1 halving the
channels, 2x2 average pool), a last BatchNorm, ReLU, global average pooling and a linear
classifier.

Input (N, 3, H, W) float32 with H, W >= 29 (the pooling before the classifier is adaptive),
output (N, num_classes) logits.
"""
import re
from collections import OrderedDict

import gt
from gt import nn
from gt.nn import functional as F

from gt.utils.checkpoint import checkpoint as _checkpoint

from . import _weights


class _DenseLayer(nn.Module):
    """BatchNorm-ReLU-1x1 (to bn_size * growth_rate channels) on the concatenation of all earlier
    features, then BatchNorm-ReLU-3x3 (to growth_rate). memory_efficient: the first half goes
    through gt.utils.checkpoint, as torchvision's (GT keeps its values anyway)."""

    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs):
        return self.conv1(self.relu1(self.norm1(gt.cat(list(inputs), 1))))

    def any_requires_grad(self, inputs):
        return any(t.requires_grad for t in inputs)

    def call_checkpoint_bottleneck(self, inputs):
        return _checkpoint(lambda *xs: self.bn_function(xs), *inputs, use_reentrant=False)

    def forward(self, input):
        prev_features = [input] if isinstance(input, gt.Tensor) else input
        if self.memory_efficient and self.any_requires_grad(prev_features):
            bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
        else:
            bottleneck_output = self.bn_function(prev_features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    """`num_layers` dense layers (denselayer1, ...); the output concatenates the input and every
    layer's new features."""
    _version = 2

    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate, memory_efficient=False):
        super().__init__()
        for i in range(num_layers):
            self.add_module("denselayer%d" % (i + 1), _DenseLayer(
                num_input_features + i * growth_rate, growth_rate=growth_rate, bn_size=bn_size, drop_rate=drop_rate,
                memory_efficient=memory_efficient))

    def forward(self, init_features):
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return gt.cat(features, 1)


class _Transition(nn.Sequential):
    """BatchNorm-ReLU-1x1 and a 2x2 average pool, between dense blocks."""

    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """growth_rate: the channels each layer adds (k in the paper); block_config: the layers of
    the four blocks; num_init_features: the stem's channels; bn_size: the 1x1 bottleneck's width
    in multiples of growth_rate; drop_rate: dropout after each layer; memory_efficient: accepted
    as torchvision's (checkpointing, which saves no memory in GT)."""

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4, drop_rate=0,
                 num_classes=1000, memory_efficient=False):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            self.features.add_module("denseblock%d" % (i + 1), _DenseBlock(
                num_layers=num_layers, num_input_features=num_features, bn_size=bn_size, growth_rate=growth_rate,
                drop_rate=drop_rate, memory_efficient=memory_efficient))
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module("transition%d" % (i + 1), _Transition(num_features, num_features // 2))
                num_features = num_features // 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)

        # torchvision's ("official init from torch repo"): Kaiming normal (fan_in) convolutions,
        # BatchNorms at 1 and 0, linear biases at 0 (its weights keep nn.Linear's default).
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        out = F.relu(self.features(x), inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(gt.flatten(out, 1))


# torchvision's checkpoints predate the ban on "." in module names: their dense layers' keys are
# "norm.1.weight", "conv.2.weight", ..., renamed here to "norm1.weight", "conv2.weight" before loading.
_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _rename_old_keys(state_dict):
    out = OrderedDict()
    for key, value in state_dict.items():
        m = _OLD_KEY.match(key)
        out[m.group(1) + m.group(2) if m else key] = value
    return out


def _prepare(state_dict, model):
    """A torchvision DenseNet checkpoint with its old keys renamed (its missing
    num_batches_tracked the BatchNorms fill in as they load a state dict of no version)."""
    return _rename_old_keys(state_dict)


def _densenet(name, growth_rate, block_config, num_init_features, weights, kwargs):
    """_weights.build with the checkpoint prepared (_prepare) before the strict load."""
    return _weights.build(lambda **kw: DenseNet(growth_rate, block_config, num_init_features, **kw), name, weights,
                          kwargs, _prepare)


def densenet121(*, weights=None, progress=True, **kwargs):
    """DenseNet-121: k=32, blocks (6, 12, 24, 16), 64 stem channels; 8.0M parameters at 1000 classes."""
    return _densenet("densenet121", 32, (6, 12, 24, 16), 64, weights, {**kwargs, "progress": progress})


def densenet161(*, weights=None, progress=True, **kwargs):
    """DenseNet-161: k=48, blocks (6, 12, 36, 24), 96 stem channels; 28.7M parameters."""
    return _densenet("densenet161", 48, (6, 12, 36, 24), 96, weights, {**kwargs, "progress": progress})


def densenet169(*, weights=None, progress=True, **kwargs):
    """DenseNet-169: k=32, blocks (6, 12, 32, 32), 64 stem channels; 14.1M parameters."""
    return _densenet("densenet169", 32, (6, 12, 32, 32), 64, weights, {**kwargs, "progress": progress})


def densenet201(*, weights=None, progress=True, **kwargs):
    """DenseNet-201: k=32, blocks (6, 12, 48, 32), 64 stem channels; 20.0M parameters."""
    return _densenet("densenet201", 32, (6, 12, 48, 32), 64, weights, {**kwargs, "progress": progress})

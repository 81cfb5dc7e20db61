"""gt.vision.models: torchvision's classic image classifiers, built from gt.nn modules.

    from gt.vision import models
    model = models.resnet18(num_classes=10)          # torchvision.models.resnet18 under gt.as_torch
    model = models.get_model("vgg11_bn", num_classes=10)

The same architectures, module names and initialization as torchvision's, so scripts that
reach inside them (`model.fc.in_features`, `list(model.children())[:-1]`, `model.conv1 = ...`,
`models.__dict__[arch]()`) and state dicts (`layer1.0.conv1.weight`, ...) carry over:

- ResNet (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, with the
  stride of a bottleneck block on its 3x3 convolution as torchvision's "ResNet v1.5"), ResNeXt
  (Xie et al., "Aggregated Residual Transformations", CVPR 2017) and Wide ResNet (Zagoruyko &
  Komodakis, BMVC 2016): resnet18/34/50/101/152, resnext50_32x4d, resnext101_32x8d,
  wide_resnet50_2, wide_resnet101_2.
- VGG (Simonyan & Zisserman, ICLR 2015): vgg11/13/16/19 and their `_bn` forms.
- AlexNet (Krizhevsky et al., NeurIPS 2012, the one-GPU variant torchvision uses).
- DenseNet-BC (Huang et al., "Densely Connected Convolutional Networks", CVPR 2017):
  densenet121/161/169/201.
- SqueezeNet (Iandola et al., 2016): squeezenet1_0 and the lighter squeezenet1_1.
- Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
  CVPR 2016): inception_v3, with its auxiliary classifier (InceptionOutputs in training mode).
- GoogLeNet (Szegedy et al., "Going Deeper with Convolutions", CVPR 2015) with BatchNorm:
  googlenet, with its two auxiliary classifiers (GoogLeNetOutputs in training mode).
- MobileNetV2 (Sandler et al., CVPR 2018): mobilenet_v2. MobileNetV3 (Howard et al., "Searching
  for MobileNetV3", ICCV 2019): mobilenet_v3_large, mobilenet_v3_small.

Pretrained weights by torchvision's names (`weights=models.ResNet18_Weights.DEFAULT`, or
"IMAGENET1K_V1", or `pretrained=True`): torchvision's checkpoints, read from
gt.hub.get_dir()/checkpoints and downloaded there once where the machine has network (see
_weights.py); `weights.transforms()` is the preprocessing they were trained with.
"""
from .alexnet import AlexNet, alexnet
from .densenet import DenseNet, densenet121, densenet161, densenet169, densenet201
from .googlenet import GoogLeNet, GoogLeNet_Weights, GoogLeNetOutputs, googlenet
from .inception import Inception3, Inception_V3_Weights, InceptionOutputs, inception_v3
from .mobilenetv2 import MobileNetV2, mobilenet_v2
from .mobilenetv3 import MobileNetV3, mobilenet_v3_large, mobilenet_v3_small
from .resnet import (BasicBlock, Bottleneck, ResNet, resnet18, resnet34, resnet50, resnet101, resnet152,
                     resnext50_32x4d, resnext101_32x8d, wide_resnet50_2, wide_resnet101_2)
from .squeezenet import SqueezeNet, squeezenet1_0, squeezenet1_1
from .vgg import VGG, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn
from . import _weights
from ._weights import (AlexNet_Weights, ResNet18_Weights, ResNet34_Weights, ResNet50_Weights, ResNet101_Weights,
                       ResNet152_Weights, ResNeXt50_32X4D_Weights, ResNeXt101_32X8D_Weights, Wide_ResNet50_2_Weights,
                       Wide_ResNet101_2_Weights, VGG11_Weights, VGG11_BN_Weights, VGG13_Weights, VGG13_BN_Weights,
                       VGG16_Weights, VGG16_BN_Weights, VGG19_Weights, VGG19_BN_Weights, DenseNet121_Weights,
                       DenseNet161_Weights, DenseNet169_Weights, DenseNet201_Weights, SqueezeNet1_0_Weights,
                       SqueezeNet1_1_Weights, MobileNet_V2_Weights, MobileNet_V3_Large_Weights,
                       MobileNet_V3_Small_Weights, Weights, WeightsEnum)

_BUILDERS = {f.__name__: f for f in (
    alexnet, resnet18, resnet34, resnet50, resnet101, resnet152, resnext50_32x4d, resnext101_32x8d,
    wide_resnet50_2, wide_resnet101_2, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn,
    densenet121, densenet161, densenet169, densenet201, squeezenet1_0, squeezenet1_1, mobilenet_v2,
    mobilenet_v3_large, mobilenet_v3_small, inception_v3, googlenet)}


def list_models():
    """The names get_model accepts, sorted."""
    return sorted(_BUILDERS)


def get_model(name, **config):
    """The model `name` (lower case, as list_models gives) built with `config` (num_classes=...,
    weights=None). Raises ValueError for an unknown name."""
    if name.lower() not in _BUILDERS:
        raise ValueError(f"unknown model {name!r}; gt.vision.models has {', '.join(list_models())}")
    return _BUILDERS[name.lower()](**config)


def get_model_weights(name):
    """The weights enum of model `name` (a builder's name, or the builder itself): "resnet50" ->
    ResNet50_Weights. Raises ValueError for an unknown name."""
    name = getattr(name, "__name__", name)
    if name.lower() not in _weights.BY_MODEL:
        raise ValueError(f"unknown model {name!r}; gt.vision.models has {', '.join(list_models())}")
    return _weights.BY_MODEL[name.lower()]


def get_weights(name):
    """The weights named "ENUM.MEMBER": get_weights("ResNet50_Weights.IMAGENET1K_V2"). Raises
    ValueError for an unknown enum or member."""
    enum_name, _, member = name.partition(".")
    enum_cls = globals().get(enum_name)
    if not (isinstance(enum_cls, type) and issubclass(enum_cls, WeightsEnum)) or not member:
        raise ValueError(f"unknown weights {name!r}: expected ENUM.MEMBER, as 'ResNet50_Weights.IMAGENET1K_V2'")
    return enum_cls.verify(member)


__all__ = ["AlexNet", "BasicBlock", "Bottleneck", "DenseNet", "GoogLeNet", "GoogLeNetOutputs", "Inception3",
           "InceptionOutputs", "MobileNetV2", "MobileNetV3", "ResNet", "SqueezeNet",
           "VGG", "Weights", "WeightsEnum", "get_model",
           "get_model_weights", "get_weights", "list_models", *_BUILDERS,
           *(cls.__name__ for cls in _weights.BY_MODEL.values())]

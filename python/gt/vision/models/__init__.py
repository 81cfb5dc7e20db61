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

Only `weights=None`: GT's machines may have no network, and nothing is downloaded. Asking for
pretrained weights raises ValueError saying how to load a state dict instead
(`model.load_state_dict(gt.load(path))`).
"""
from .alexnet import AlexNet, alexnet
from .resnet import (BasicBlock, Bottleneck, ResNet, resnet18, resnet34, resnet50, resnet101, resnet152,
                     resnext50_32x4d, resnext101_32x8d, wide_resnet50_2, wide_resnet101_2)
from .vgg import VGG, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn

_BUILDERS = {f.__name__: f for f in (
    alexnet, resnet18, resnet34, resnet50, resnet101, resnet152, resnext50_32x4d, resnext101_32x8d,
    wide_resnet50_2, wide_resnet101_2, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn)}


def list_models():
    """The names get_model accepts, sorted."""
    return sorted(_BUILDERS)


def get_model(name, **config):
    """The model `name` (lower case, as list_models gives) built with `config` (num_classes=...,
    weights=None). Raises ValueError for an unknown name."""
    if name.lower() not in _BUILDERS:
        raise ValueError(f"unknown model {name!r}; gt.vision.models has {', '.join(list_models())}")
    return _BUILDERS[name.lower()](**config)


__all__ = ["AlexNet", "BasicBlock", "Bottleneck", "ResNet", "VGG", "get_model", "list_models", *_BUILDERS]

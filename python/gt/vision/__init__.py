"""gt.vision: the parts of torchvision that training scripts' data pipelines use, for GT.

    from gt.vision import datasets, transforms, utils

Under `python -m gt.as_torch`, `import torchvision` is this package, so pytorch/examples-style
scripts (`datasets.MNIST(..., transform=transforms.Compose([transforms.ToTensor(),
transforms.Normalize(...)]))`) run unchanged. Images are PIL images until ToTensor makes a
gt Tensor (C, H, W) of float32 in [0, 1]; random transforms draw from Python's `random`
module on the client (`random.seed` makes them repeat; torchvision draws from torch's
generator, which here would cost a device op per draw).

Datasets read the files torchvision keeps under `root` (MNIST: root/MNIST/raw/*-ubyte[.gz];
CIFAR-10: root/cifar-10-batches-py) and never download: GT's machines may have no network,
so download=True with the files missing raises RuntimeError naming the files and where
torchvision fetches them from. `models` has torchvision's ResNet, ResNeXt, Wide ResNet, VGG
and AlexNet, without pretrained weights (see gt.vision.models); io and ops are not provided.
"""
from . import datasets, io, models, ops, transforms, utils  # noqa: F401
from .. import version as _version

__version__ = _version.torchvision_version()  # (torchvision's API version under gt.as_torch)


def _is_tracing():
    """False: GT does not trace Python (torchvision asks before shape-dependent branches)."""
    return False

"""Pretrained weights as torchvision names them: `models.VGG16_Weights.IMAGENET1K_V1`,
`models.ResNet50_Weights.DEFAULT`, `weights.transforms()`, `weights.get_state_dict()`.

A builder given weights (a member, its name as a string, or the old `pretrained=True` for
DEFAULT) builds the model with the weights' 1000 ImageNet classes and loads torchvision's
checkpoint with gt.hub.load_state_dict_from_url: read from gt.hub.get_dir()/checkpoints under
the URL's file name (resnet18-f37072fd.pth), downloaded there once if the machine can reach
download.pytorch.org, its SHA-256 prefix checked as torchvision does. Without network, copy the
file there from a machine that has it (torchvision keeps it in ~/.cache/torch/hub/checkpoints).

The checkpoints are torchvision's (BSD-3-Clause), trained by the PyTorch team; the URLs, sizes
and preprocessing below are theirs. meta holds num_params and min_size (not the category names).
"""
import enum

from .. import transforms as _transforms

_BASE = "https://download.pytorch.org/models/"
_MEAN, _STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class ImageClassification:
    """torchvision's preset for its ImageNet classifiers: a PIL image resized (shorter side
    `resize_size`, bilinear), center-cropped to `crop_size`, as a float (3, H, W) tensor in [0, 1],
    normalized by `mean` and `std`. Raises TypeError for anything but a PIL image (GT resizes
    PIL images)."""

    def __init__(self, *, crop_size, resize_size=256, mean=_MEAN, std=_STD,
                 interpolation=_transforms.InterpolationMode.BILINEAR):
        self.crop_size, self.resize_size = [crop_size], [resize_size]
        self.mean, self.std, self.interpolation = list(mean), list(std), interpolation
        self._steps = _transforms.Compose([
            _transforms.Resize(resize_size, interpolation), _transforms.CenterCrop(crop_size),
            _transforms.ToTensor(), _transforms.Normalize(mean, std)])

    def __call__(self, img):
        return self._steps(img)

    def __repr__(self):
        return (f"ImageClassification(crop_size={self.crop_size}, resize_size={self.resize_size}, "
                f"mean={self.mean}, std={self.std}, interpolation={self.interpolation})")


class Weights:
    """One checkpoint: its `url`, `transforms` (a callable making the preset) and `meta`."""

    def __init__(self, url, transforms, meta):
        self.url, self.transforms, self.meta = url, transforms, meta

    def __repr__(self):
        return f"Weights(url={self.url!r})"


class WeightsEnum(enum.Enum):
    """The checkpoints of one architecture (torchvision.models.WeightsEnum); DEFAULT names the
    best. `Enum["NAME"]` and `verify("NAME")` take the name as a string."""

    @classmethod
    def verify(cls, obj):
        """`obj` as a member of this enum: None stays None; a string is a member's name (with or
        without the enum's name in front). Raises TypeError for another enum's member and
        ValueError for an unknown name."""
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            name = obj.replace(cls.__name__ + ".", "")
            if name not in cls.__members__:
                raise ValueError(f"{cls.__name__} has no weights {obj!r}; it has {', '.join(cls.__members__)}")
            return cls[name]
        raise TypeError(f"weights must be None, a {cls.__name__} or its name, got {obj!r}")

    @property
    def url(self):
        return self.value.url

    @property
    def meta(self):
        return self.value.meta

    def transforms(self):
        """The preprocessing these weights were trained with (ImageClassification)."""
        return self.value.transforms()

    def get_state_dict(self, progress=True, check_hash=True, **kwargs):
        """The checkpoint's state dict: gt.hub.load_state_dict_from_url(self.url) (cached in
        gt.hub.get_dir()/checkpoints; RuntimeError naming the URL when it is not there and
        cannot be downloaded)."""
        from ... import hub
        return hub.load_state_dict_from_url(self.url, progress=progress, check_hash=check_hash, **kwargs)


def _weights(file, num_params, resize_size=256, crop_size=224, mean=_MEAN, std=_STD, min_size=(1, 1)):
    return Weights(_BASE + file,
                   lambda: ImageClassification(crop_size=crop_size, resize_size=resize_size, mean=mean, std=std),
                   {"num_params": num_params, "min_size": min_size})


def _enum(name, members, default):
    # DEFAULT: the same Weights object under a second name, so an alias (Enum["DEFAULT"] too).
    return WeightsEnum(name, dict(members, DEFAULT=members[default]), module=__name__.rsplit(".", 1)[0])


def _v1(name, file, num_params, min_size=(32, 32)):
    """An enum with one checkpoint, IMAGENET1K_V1 (also DEFAULT)."""
    return _enum(name, {"IMAGENET1K_V1": _weights(file, num_params, min_size=min_size)}, "IMAGENET1K_V1")


def _v1_v2(name, stem, v1, v2, num_params):
    """An enum with torchvision's first checkpoint and its newer recipe's (DEFAULT, evaluated at
    232 pixels)."""
    return _enum(name, {"IMAGENET1K_V1": _weights(f"{stem}-{v1}.pth", num_params),
                        "IMAGENET1K_V2": _weights(f"{stem}-{v2}.pth", num_params, resize_size=232)}, "IMAGENET1K_V2")


AlexNet_Weights = _v1("AlexNet_Weights", "alexnet-owt-7be5be79.pth", 61100840, min_size=(63, 63))
ResNet18_Weights = _v1("ResNet18_Weights", "resnet18-f37072fd.pth", 11689512, min_size=(1, 1))
ResNet34_Weights = _v1("ResNet34_Weights", "resnet34-b627a593.pth", 21797672, min_size=(1, 1))
ResNet50_Weights = _v1_v2("ResNet50_Weights", "resnet50", "0676ba61", "11ad3fa6", 25557032)
ResNet101_Weights = _v1_v2("ResNet101_Weights", "resnet101", "63fe2227", "cd907fc2", 44549160)
ResNet152_Weights = _v1_v2("ResNet152_Weights", "resnet152", "394f9c45", "f82ba261", 60192808)
ResNeXt50_32X4D_Weights = _v1_v2("ResNeXt50_32X4D_Weights", "resnext50_32x4d", "7cdf4587", "1a0047aa", 25028904)
ResNeXt101_32X8D_Weights = _v1_v2("ResNeXt101_32X8D_Weights", "resnext101_32x8d", "8ba56ff5", "110c445d", 88791336)
Wide_ResNet50_2_Weights = _v1_v2("Wide_ResNet50_2_Weights", "wide_resnet50_2", "95faca4d", "9ba9bcbe", 68883240)
Wide_ResNet101_2_Weights = _v1_v2("Wide_ResNet101_2_Weights", "wide_resnet101_2", "32ee1156", "d733dc28", 126886696)
VGG11_Weights = _v1("VGG11_Weights", "vgg11-8a719046.pth", 132863336)
VGG11_BN_Weights = _v1("VGG11_BN_Weights", "vgg11_bn-6002323d.pth", 132868840)
VGG13_Weights = _v1("VGG13_Weights", "vgg13-19584684.pth", 133047848)
VGG13_BN_Weights = _v1("VGG13_BN_Weights", "vgg13_bn-abd245e5.pth", 133053736)
# IMAGENET1K_FEATURES: ported from amdegroot's SSD, for features only (its classifier is not trained);
# its inputs are in [0, 255] less the channel means (std 1/255).
VGG16_Weights = _enum("VGG16_Weights", {
    "IMAGENET1K_V1": _weights("vgg16-397923af.pth", 138357544, min_size=(32, 32)),
    "IMAGENET1K_FEATURES": _weights("vgg16_features-amdegroot-88682ab5.pth", 138357544, min_size=(32, 32),
                                    mean=(0.48235, 0.45882, 0.40784), std=(1 / 255, 1 / 255, 1 / 255))}, "IMAGENET1K_V1")
VGG16_BN_Weights = _v1("VGG16_BN_Weights", "vgg16_bn-6c64b313.pth", 138365992)
VGG19_Weights = _v1("VGG19_Weights", "vgg19-dcbb9e9d.pth", 143667240)
VGG19_BN_Weights = _v1("VGG19_BN_Weights", "vgg19_bn-c79401a0.pth", 143678248)
DenseNet121_Weights = _v1("DenseNet121_Weights", "densenet121-a639ec97.pth", 7978856, min_size=(29, 29))
DenseNet161_Weights = _v1("DenseNet161_Weights", "densenet161-8d451a50.pth", 28681000, min_size=(29, 29))
DenseNet169_Weights = _v1("DenseNet169_Weights", "densenet169-b2777c0a.pth", 14149480, min_size=(29, 29))
DenseNet201_Weights = _v1("DenseNet201_Weights", "densenet201-c1103571.pth", 20013928, min_size=(29, 29))
SqueezeNet1_0_Weights = _v1("SqueezeNet1_0_Weights", "squeezenet1_0-b66bff10.pth", 1248424, min_size=(21, 21))
SqueezeNet1_1_Weights = _v1("SqueezeNet1_1_Weights", "squeezenet1_1-b8a52dc0.pth", 1235496, min_size=(17, 17))
MobileNet_V2_Weights = _v1_v2("MobileNet_V2_Weights", "mobilenet_v2", "b0353104", "7ebf99e0", 3504872)
MobileNet_V3_Large_Weights = _v1_v2("MobileNet_V3_Large_Weights", "mobilenet_v3_large", "8738ca79", "5c1a4163",
                                    5483032)
MobileNet_V3_Small_Weights = _v1("MobileNet_V3_Small_Weights", "mobilenet_v3_small-047dcff4.pth", 2542856,
                                 min_size=(1, 1))


BY_MODEL = {
    "alexnet": AlexNet_Weights, "resnet18": ResNet18_Weights, "resnet34": ResNet34_Weights,
    "resnet50": ResNet50_Weights, "resnet101": ResNet101_Weights, "resnet152": ResNet152_Weights,
    "resnext50_32x4d": ResNeXt50_32X4D_Weights, "resnext101_32x8d": ResNeXt101_32X8D_Weights,
    "wide_resnet50_2": Wide_ResNet50_2_Weights, "wide_resnet101_2": Wide_ResNet101_2_Weights,
    "vgg11": VGG11_Weights, "vgg11_bn": VGG11_BN_Weights, "vgg13": VGG13_Weights, "vgg13_bn": VGG13_BN_Weights,
    "vgg16": VGG16_Weights, "vgg16_bn": VGG16_BN_Weights, "vgg19": VGG19_Weights, "vgg19_bn": VGG19_BN_Weights,
    "densenet121": DenseNet121_Weights, "densenet161": DenseNet161_Weights, "densenet169": DenseNet169_Weights,
    "densenet201": DenseNet201_Weights, "squeezenet1_0": SqueezeNet1_0_Weights, "squeezenet1_1": SqueezeNet1_1_Weights,
    "mobilenet_v2": MobileNet_V2_Weights, "mobilenet_v3_large": MobileNet_V3_Large_Weights,
    "mobilenet_v3_small": MobileNet_V3_Small_Weights}


def build(make, name, weights, kwargs, prepare=None):
    """`make(**kwargs)` with `weights` (None, a member of the model's enum, its name, or the old
    `pretrained=True` for DEFAULT) loaded into it (its state dict passed through
    `prepare(state_dict, model)` first when given). Removes `progress` and `pretrained` from
    `kwargs`. With weights, num_classes is the checkpoint's 1000 (ValueError if another is asked
    for). Raises RuntimeError naming the URL when the checkpoint is neither cached nor
    downloadable."""
    enum_cls = BY_MODEL[name]
    progress = kwargs.pop("progress", True)
    if kwargs.pop("pretrained", False):
        if weights is not None:
            raise ValueError(f"{name}: give weights= or pretrained=True, not both")
        weights = enum_cls.DEFAULT
    weights = enum_cls.verify(weights)
    if weights is None:
        return make(**kwargs)
    if kwargs.setdefault("num_classes", 1000) != 1000:
        raise ValueError(f"{name}: {weights} has 1000 classes, not num_classes={kwargs['num_classes']}; "
                         f"build it with the 1000 and replace its last layer")
    model = make(**kwargs)
    state_dict = weights.get_state_dict(progress=progress)
    model.load_state_dict(prepare(state_dict, model) if prepare is not None else state_dict)
    return model

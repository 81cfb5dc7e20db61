"""torchvision.models._utils: IntermediateLayerGetter, which detection models (DETR, Mask
R-CNN backbones) use to read a classifier's inner feature maps."""
from collections import OrderedDict

from ...nn.modules import ModuleDict


class IntermediateLayerGetter(ModuleDict):
    """The children of `model` up to the last one named in `return_layers` ({child name: output
    name}), run in order; forward(x) returns an OrderedDict {output name: that child's output}.
    Only direct children can be named (as torchvision's). Raises ValueError for a name that is
    not a child."""

    def __init__(self, model, return_layers):
        if not set(return_layers).issubset(name for name, _ in model.named_children()):
            raise ValueError("return_layers are not present in model")
        orig_return_layers = return_layers
        return_layers = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out

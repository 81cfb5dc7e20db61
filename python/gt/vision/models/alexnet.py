"""AlexNet (Krizhevsky, Sutskever & Hinton, "ImageNet Classification with Deep Convolutional
Neural Networks", NeurIPS 2012), in the one-GPU form torchvision uses (from Krizhevsky, "One
weird trick for parallelizing convolutional neural networks", 2014): 64-192-384-256-256
channels. Input (N, 3, H, W) float32 with H, W >= 63; output (N, num_classes).
"""
import gt
from gt import nn

from ._weights import build


class AlexNet(nn.Module):
    def __init__(self, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes))

    def forward(self, x):
        return self.classifier(gt.flatten(self.avgpool(self.features(x)), 1))


def alexnet(*, weights=None, progress=True, **kwargs):
    """AlexNet, 61M parameters at 1000 classes."""
    return build(AlexNet, "alexnet", weights, {**kwargs, "progress": progress})

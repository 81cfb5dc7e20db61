"""gt.backends: the switches PyTorch scripts set on torch.backends, accepted so that those lines
run (`torch.backends.cudnn.benchmark = True`, `import torch.backends.cudnn as cudnn`). None of
them changes what GT computes: GT's kernels do not depend on cuDNN's algorithm search
(`cudnn.benchmark`), give the same result on every run (`cudnn.deterministic`), and use no TF32
(`allow_tf32`); the values set are kept and read back."""
from . import cuda, cudnn, mps  # noqa: F401

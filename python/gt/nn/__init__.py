"""gt.nn: modules, parameters, initialisers and losses, as in torch.nn."""
from .modules import (Module, Parameter, Identity, Linear, Embedding, LayerNorm, Dropout, ReLU, GELU, SiLU, Sigmoid,
                      Tanh, Softmax, LogSoftmax, Flatten, CrossEntropyLoss, MSELoss, Sequential, ModuleList, ModuleDict,
                      RMSNorm, L1Loss, SmoothL1Loss, HuberLoss, NLLLoss, BCELoss, BCEWithLogitsLoss, KLDivLoss, LeakyReLU, Unflatten,
                      Conv1d, Conv2d, Conv3d, MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d,
                      AdaptiveAvgPool2d, AdaptiveMaxPool2d, ConstantPad1d, ConstantPad2d, ZeroPad2d, ReflectionPad1d,
                      ReflectionPad2d, ReplicationPad2d, Dropout2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm,
                      ParameterList, ParameterDict, ELU, CELU, SELU, Softplus, Mish, Hardtanh, ReLU6,
                      Hardsigmoid, Hardswish, LogSigmoid, Softsign, PReLU, Upsample,
                      ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, PixelShuffle, PixelUnshuffle,
                      InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, UpsamplingNearest2d, UpsamplingBilinear2d,
                      Softmin, Threshold, GLU, Hardshrink, Softshrink, Tanhshrink, Dropout1d, Dropout3d,
                      CosineSimilarity, PairwiseDistance, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d, LPPool3d,
                      ZeroPad1d, ZeroPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad1d, ReplicationPad3d,
                      CircularPad1d, CircularPad2d, CircularPad3d, MarginRankingLoss, CosineEmbeddingLoss,
                      HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, PoissonNLLLoss, TripletMarginLoss,
                      GaussianNLLLoss, Unfold, Fold, Bilinear, LPPool1d, LPPool2d, LocalResponseNorm, CrossMapLRN2d,
                      ChannelShuffle, RReLU, AlphaDropout, MultiMarginLoss, EmbeddingBag, Softmax2d, SyncBatchNorm,
                      CTCLoss, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)
from .transformer import (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
                          TransformerDecoderLayer, TransformerDecoder, Transformer)
from .rnn import RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell
from .modules import UninitializedParameter, UninitializedBuffer, Buffer
from .lazy import (LazyModuleMixin, LazyLinear, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
                   LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                   LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from . import functional, init, utils, parallel, parameter, attention
from .parallel import DataParallel
from ..optim import SGD, Adam, AdamW  # the original GT exported SGD from gt.nn


def _torch_module_paths():
    """torch.nn.modules.<file>.<Class> (e.g. torch.nn.modules.linear.Linear, which scripts name
    in torch.serialization.safe_globals lists): gt.nn.modules.linear and the others, each holding
    GT's classes of that PyTorch file."""
    import sys
    import types
    from . import modules, transformer, rnn, lazy
    files = {
        "module": "Module _IncompatibleKeys",
        "linear": "Identity Linear Bilinear LazyLinear",
        "sparse": "Embedding EmbeddingBag",
        "normalization": "LayerNorm GroupNorm RMSNorm LocalResponseNorm CrossMapLRN2d",
        "dropout": "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout _DropoutNd",
        "activation": "ReLU GELU SiLU Sigmoid Tanh Softmax LogSoftmax LeakyReLU ELU CELU SELU Softplus Mish Hardtanh "
                      "ReLU6 Hardsigmoid Hardswish LogSigmoid Softsign PReLU Softmin Threshold GLU Hardshrink "
                      "Softshrink Tanhshrink RReLU MultiheadAttention Softmax2d _Activation",
        "container": "Sequential ModuleList ModuleDict ParameterList ParameterDict",
        "flatten": "Flatten Unflatten",
        "loss": "CrossEntropyLoss MSELoss L1Loss SmoothL1Loss HuberLoss NLLLoss BCELoss BCEWithLogitsLoss KLDivLoss "
                "MarginRankingLoss CosineEmbeddingLoss HingeEmbeddingLoss SoftMarginLoss MultiLabelSoftMarginLoss "
                "PoissonNLLLoss TripletMarginLoss GaussianNLLLoss MultiMarginLoss CTCLoss _Loss _WeightedLoss",
        "conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d LazyConv2d LazyConv3d "
                "LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d _ConvNd _ConvTransposeNd",
        "pooling": "MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d "
                   "AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d LPPool2d LPPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d "
                   "_MaxPoolNd _AvgPoolNd _MaxUnpoolNd",
        "padding": "ConstantPad1d ConstantPad2d ConstantPad3d ZeroPad1d ZeroPad2d ZeroPad3d ReflectionPad1d "
                   "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d "
                   "CircularPad1d CircularPad2d CircularPad3d _PadNd _ConstantPadNd",
        "batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d "
                     "SyncBatchNorm _BatchNorm _NormBase",
        "instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
                        "LazyInstanceNorm3d _InstanceNorm",
        "lazy": "LazyModuleMixin",
        "pixelshuffle": "PixelShuffle PixelUnshuffle",
        "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d",
        "distance": "CosineSimilarity PairwiseDistance",
        "fold": "Unfold Fold",
        "channelshuffle": "ChannelShuffle",
        "transformer": "TransformerEncoderLayer TransformerEncoder TransformerDecoderLayer TransformerDecoder "
                       "Transformer",
        "rnn": "RNN LSTM GRU RNNCell LSTMCell GRUCell RNNBase RNNCellBase",
    }
    # PyTorch's private base classes (libraries import them for isinstance checks) under their names
    modules._WeightedLoss, modules._DropoutNd = modules._Loss, modules.Dropout
    rnn.RNNBase, rnn.RNNCellBase = rnn._RNNBase, rnn._CellBase
    sources = (modules, transformer, rnn, lazy)
    for file, names in files.items():
        sub = types.ModuleType(f"{__name__}.modules.{file}", f"torch.nn.modules.{file}'s classes that GT has.")
        for name in names.split():
            cls = next(getattr(m, name) for m in sources if hasattr(m, name))
            setattr(sub, name, cls)
            torch_paths.setdefault(cls, f"torch.nn.modules.{file}")
        setattr(modules, file, sub)
        sys.modules[sub.__name__] = sub
    # MultiheadAttention's output projection class in torch: a Linear.
    from .transformer import NonDynamicallyQuantizableLinear
    modules.linear.NonDynamicallyQuantizableLinear = NonDynamicallyQuantizableLinear
    torch_paths[NonDynamicallyQuantizableLinear] = "torch.nn.modules.linear"


torch_paths = {}  # GT's nn class -> the torch module PyTorch defines it in (gt.save pickles it so)
_torch_module_paths()


def _loss_takes_legacy_reduction(cls):
    """Loss modules take PyTorch's deprecated size_average= / reduce= too (see functional)."""
    init = cls.__init__

    def __init__(self, *args, size_average=None, reduce=None, **kwargs):
        if size_average is not None or reduce is not None:
            kwargs["reduction"] = functional._legacy_reduction(size_average, reduce)
        init(self, *args, **kwargs)
    __init__.__doc__, __init__.__wrapped__ = init.__doc__, init
    cls.__init__ = __init__


def _install_legacy_reduction():
    import inspect
    for value in list(globals().values()):
        if inspect.isclass(value) and issubclass(value, Module) and "__init__" in vars(value):
            params = inspect.signature(value.__init__).parameters
            if "reduction" in params and "size_average" not in params:
                _loss_takes_legacy_reduction(value)


_install_legacy_reduction()

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
                      CosineSimilarity, PairwiseDistance, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
                      ZeroPad1d, ZeroPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad1d, ReplicationPad3d,
                      CircularPad1d, CircularPad2d, CircularPad3d, MarginRankingLoss, CosineEmbeddingLoss,
                      HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, PoissonNLLLoss, TripletMarginLoss,
                      GaussianNLLLoss, Unfold, Fold, Bilinear, LPPool1d, LPPool2d, LocalResponseNorm,
                      ChannelShuffle, RReLU, AlphaDropout, MultiMarginLoss, EmbeddingBag)
from .transformer import (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
                          TransformerDecoderLayer, TransformerDecoder, Transformer)
from .rnn import RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell
from . import functional, init, utils, parallel
from .parallel import DataParallel
from ..optim import SGD, Adam, AdamW  # the original GT exported SGD from gt.nn

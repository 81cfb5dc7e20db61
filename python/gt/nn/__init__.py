"""gt.nn: modules, parameters, initialisers and losses, as in torch.nn."""
from .modules import (Module, Parameter, Identity, Linear, Embedding, LayerNorm, Dropout, ReLU, GELU, SiLU, Sigmoid,
                      Tanh, Softmax, LogSoftmax, Flatten, CrossEntropyLoss, MSELoss, Sequential, ModuleList, ModuleDict,
                      RMSNorm, L1Loss, SmoothL1Loss, HuberLoss, NLLLoss, BCELoss, BCEWithLogitsLoss, KLDivLoss)
from . import functional, init, utils
from ..optim import SGD, Adam, AdamW  # the original GT exported SGD from gt.nn

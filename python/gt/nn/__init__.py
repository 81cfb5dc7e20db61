"""gt.nn: modules, parameters and losses, as in torch.nn."""
from .modules import Module, Parameter, Linear, ReLU, Sigmoid, Tanh, Sequential
from . import functional

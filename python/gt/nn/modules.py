"""nn.Module and the layers built on it (torch.nn's API)."""
import math
from collections import OrderedDict

from .. import _tensor as T
from . import functional as F


class Parameter(T.Tensor):
    """A tensor that a Module registers as trainable (requires_grad=True)."""
    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        super().__init__(data._h, data.shape, data.dtype, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """Base class: assigning a Parameter or a Module to an attribute registers it."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call super().__init__() before assigning to a Module")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        for name, p in self._parameters.items():
            yield prefix + name, p
        for name, m in self._modules.items():
            yield from m.named_parameters(prefix + name + ".")

    def parameters(self):
        """All parameters of this module and its submodules (a list, in registration order)."""
        return [p for _, p in self.named_parameters()]

    def children(self):
        return list(self._modules.values())

    def zero_grad(self):
        for p in self.parameters():
            p.grad = None

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for m in self._modules.values():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        return OrderedDict((name, p.detach()) for name, p in self.named_parameters())

    def __repr__(self):
        lines = [f"  ({name}): {m!r}".replace("\n", "\n  ") for name, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"

    def extra_repr(self):
        return ""


class Linear(Module):
    """y = x @ weight.T + bias; weight: (out_features, in_features), bias: (out_features,).

    Initialisation: normal with std 1/sqrt(3 * in_features), the variance of PyTorch's default
    U(-1/sqrt(in), 1/sqrt(in)) (GT has no uniform sampler yet).
    """

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        std = 1.0 / math.sqrt(3.0 * in_features)
        with T._ag.no_grad():
            self.weight = Parameter(T.randn(out_features, in_features) * std)
            self.bias = Parameter(T.randn(out_features) * std) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sequential(Module):
    """Applies its modules in order."""

    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

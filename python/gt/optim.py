"""gt.optim: SGD (with momentum) and Adam, as in torch.optim. Updates run under no_grad and
rebind each parameter in place (`p -= ...`), so no worker memory is leaked per step."""
import math

from . import _tensor as T
from .autograd import no_grad


class Optimizer:
    def __init__(self, params, defaults):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = defaults
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def _gradients(self):
        """(parameter, gradient with weight decay added) for every parameter that has a grad."""
        for p in self.params:
            if p.grad is not None:
                yield p, (p.grad + self.defaults["weight_decay"] * p if self.defaults["weight_decay"] else p.grad)


class SGD(Optimizer):
    """p -= lr * (g + weight_decay * p), with heavy-ball momentum: buf = momentum * buf + g."""

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0):
        if lr <= 0:
            raise ValueError(f"invalid learning rate {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay

    def step(self):
        with no_grad():
            for p, g in self._gradients():
                if self.momentum:
                    buf = self.state.get(id(p))
                    buf = g if buf is None else buf * self.momentum + g
                    self.state[id(p)] = buf
                    g = buf
                p -= self.lr * g


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, Algorithm 1): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if lr <= 0:
            raise ValueError(f"invalid learning rate {lr}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.t = 0

    def step(self):
        b1, b2 = self.betas
        self.t += 1
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        step_size = self.lr / c1
        with no_grad():
            for p, g in self._gradients():
                m, v = self.state.get(id(p), (None, None))
                m = g * (1 - b1) if m is None else m * b1 + g * (1 - b1)
                v = g * g * (1 - b2) if v is None else v * b2 + g * g * (1 - b2)
                self.state[id(p)] = (m, v)
                p -= step_size * m / (T.sqrt(v) / math.sqrt(c2) + self.eps)

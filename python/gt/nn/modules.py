"""nn.Module and the layers built on it (torch.nn's API)."""
import math
from collections import OrderedDict

import numpy as np

from .. import _functions as T
from .. import _device
from .. import dtypes as _dt
from ..autograd import no_grad
from .. import signal as _signal
from . import functional as F
from . import init


class Parameter(T.Tensor):
    """A tensor that a Module registers as trainable (requires_grad=True). It remembers the
    signals active when it was made (gt.signal), so gt.nn.init refills it with the same layout."""
    __slots__ = ("_signals",)

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = T.zeros(0)
        super().__init__(data._h, data.shape, data.dtype, requires_grad)
        self._signals = _signal._snapshot()

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class _Parameters(list):
    """Module.parameters(): a list that `next()` also walks, as the generator PyTorch returns."""
    __slots__ = ("_at",)

    def __next__(self):
        at = getattr(self, "_at", 0)
        if at >= len(self):
            raise StopIteration
        self._at = at + 1
        return self[at]


class Module:
    """Base class: assigning a Parameter or a Module to an attribute registers it;
    register_buffer registers a tensor that is saved in state_dict but not trained."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if name == "_parameters" and isinstance(value, (list, tuple)) and "_parameters" in self.__dict__:
            # The original GT's idiom `self._parameters = a.parameters() + b.parameters()`:
            # register them (parameters already held by submodules are listed once).
            for i, p in enumerate(value):
                if isinstance(p, T.Tensor):
                    self._parameters[f"_param{i}"] = p
            return
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign to a Module before Module.__init__() call "
                                 "(call super().__init__() first)")
        if isinstance(value, Parameter):
            self._modules.pop(name, None)
            self._buffers.pop(name, None)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._parameters.pop(name, None)
            self._buffers.pop(name, None)
            self._modules[name] = value
        elif name in self._buffers and (value is None or isinstance(value, T.Tensor)):
            self._buffers[name] = value
        elif name in self._parameters and value is None:
            self._parameters[name] = None
        else:
            self._parameters.pop(name, None)
            self._modules.pop(name, None)
        object.__setattr__(self, name, value)

    def register_buffer(self, name, tensor, persistent=True):
        self._buffers[name] = tensor
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name, param):
        setattr(self, name, param)

    def add_module(self, name, module):
        setattr(self, name, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ traversal
    def named_modules(self, prefix=""):
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(prefix + ("." if prefix else "") + name)

    def modules(self):
        return [m for _, m in self.named_modules()]

    def named_children(self):
        return [(n, m) for n, m in self._modules.items() if m is not None]

    def children(self):
        return [m for _, m in self.named_children()]

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, parameter) pairs; a parameter shared by two modules appears once."""
        seen = set()
        for mname, m in (self.named_modules() if recurse else [("", self)]):
            for name, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                full = (mname + "." if mname else "") + name
                yield (prefix + "." if prefix else "") + full, p

    def parameters(self, recurse=True):
        """All parameters of this module and its submodules (in registration order): a list
        (the original GT's scripts add two: a.parameters() + b.parameters()) that is also an
        iterator, as PyTorch's generator: next(model.parameters()) is the first parameter."""
        return _Parameters(p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self):
        for mname, m in self.named_modules():
            for name, b in m._buffers.items():
                if b is not None:
                    yield (mname + "." if mname else "") + name, b

    def buffers(self):
        return [b for _, b in self.named_buffers()]

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes and gradients
    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """module.to(dtype), .to(device), .to(device, dtype), as PyTorch: casts every floating-
        point parameter and buffer to `dtype` (in place) and returns the module. A device is
        checked and moves nothing: the module's tensors stay on the session's workers (see
        gt.device)."""
        for a in args:
            if isinstance(a, T.Tensor):
                dtype = a.dtype
            elif _device.is_device(a) or (isinstance(a, int) and not isinstance(a, bool)):
                device = a
            else:
                dtype = _device.dtype_or_device(a)
        _device.check(device)
        if dtype is None:
            return self
        d = _dt.resolve(dtype)
        with no_grad():
            for p in list(self.parameters()) + list(self.buffers()):
                if p.dtype.is_floating_point:
                    new = T.cast(p, d)
                    p._h, p.dtype = new._h, new.dtype
        return self

    def float(self):
        return self.to(_dt.float32)

    def cuda(self, device=None):
        """The module itself (see gt.device and Module.to)."""
        return self.to(device) if device is not None else self

    def cpu(self):
        """The module itself (see gt.device and Module.to)."""
        return self

    def double(self):
        return self.to(_dt.float64)

    def half(self):
        """Casts floating parameters and buffers to float16 (in place); returns self."""
        return self.to(_dt.float16)

    def bfloat16(self):
        """Casts floating parameters and buffers to bfloat16 (in place); returns self."""
        return self.to(_dt.bfloat16)

    # ------------------------------------------------------------ state
    def state_dict(self):
        """name -> tensor for every parameter and persistent buffer (detached; shares values)."""
        out = OrderedDict()
        for mname, m in self.named_modules():
            for name, p in m._parameters.items():
                if p is not None:
                    out[(mname + "." if mname else "") + name] = p.detach()
            for name, b in m._buffers.items():
                if b is not None:
                    out[(mname + "." if mname else "") + name] = b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values (Tensors or NumPy arrays) into this module's parameters and buffers.

        Raises RuntimeError listing missing and unexpected keys when strict, and for a shape
        mismatch. Returns (missing_keys, unexpected_keys)."""
        own = {}
        for mname, m in self.named_modules():
            for name in list(m._parameters) + list(m._buffers):
                own[(mname + "." if mname else "") + name] = (m, name)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               f"missing keys {missing}, unexpected keys {unexpected}")
        for key, value in state_dict.items():
            if key not in own:
                continue
            m, name = own[key]
            current = getattr(m, name)
            v = value if isinstance(value, T.Tensor) else T.from_numpy(np.asarray(value))
            if current is not None and tuple(v.shape) != current.shape:
                raise RuntimeError(f"size mismatch for {key}: copying a param with shape {list(v.shape)}, "
                                   f"the shape in current model is {list(current.shape)}")
            if current is not None and v.dtype != current.dtype:
                v = T.cast(v, current.dtype)
            if name in m._parameters:
                current._h = v._h
            else:
                m._buffers[name] = v.detach()
                object.__setattr__(m, name, m._buffers[name])
        return missing, unexpected

    # ------------------------------------------------------------ printing
    def __repr__(self):
        lines = [f"  ({name}): {m!r}".replace("\n", "\n  ") for name, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"

    def extra_repr(self):
        return ""


# ---------------------------------------------------------------- layers

class Identity(Module):
    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ weight.T + bias; weight: (out_features, in_features), bias: (out_features,).

    Initialisation as PyTorch: weight ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with
    a=sqrt(5)), bias ~ U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)  # (see gt.device: the session's workers hold every tensor)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(T.zeros(out_features, in_features, dtype=dtype))
        self.bias = Parameter(T.zeros(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: integer indices (*) -> rows (*, embedding_dim); weight ~ N(0, 1)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, *, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = Parameter(T.zeros(num_embeddings, embedding_dim, dtype=dtype))
        init.normal_(self.weight)
        if padding_idx is not None:
            w = self.weight.detach()
            w[padding_idx] = 0.0
            self.weight._h = w._h

    def forward(self, x):
        return F.embedding(x, self.weight, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    """Normalizes over the last axes `normalized_shape`; weight ones, bias zeros (Ba et al. 2016)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.weight = Parameter(T.ones(self.normalized_shape, dtype=dtype)) if elementwise_affine else None
        self.bias = Parameter(T.zeros(self.normalized_shape, dtype=dtype)) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over the last axes normalized_shape) + eps) * weight (Zhang & Sennrich
    2019); weight ones; eps None is float32's machine epsilon, as torch.nn.RMSNorm."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.weight = Parameter(T.ones(self.normalized_shape, dtype=dtype)) if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    def __init__(self, p=0.5):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)


class SiLU(Module):
    def forward(self, x):
        return F.silu(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return T.flatten(x, self.start_dim, self.end_dim)


class CrossEntropyLoss(Module):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.weight, self.ignore_index, self.reduction, self.label_smoothing = weight, ignore_index, reduction, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class _Loss(Module):
    """A loss module: forward(input, target) calls its functional form with the module's options."""

    _options = ()

    def __init__(self, **options):
        super().__init__()
        for k, v in options.items():
            setattr(self, k, v)

    def forward(self, input, target):
        return type(self)._fn(input, target, **{k: getattr(self, k) for k in self._options})

    def extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in self._options if k not in ("weight", "pos_weight"))


class L1Loss(_Loss):
    _fn, _options = staticmethod(F.l1_loss), ("reduction",)

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)


class SmoothL1Loss(_Loss):
    _fn, _options = staticmethod(F.smooth_l1_loss), ("reduction", "beta")

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction=reduction, beta=beta)


class HuberLoss(_Loss):
    _fn, _options = staticmethod(F.huber_loss), ("reduction", "delta")

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction, delta=delta)


class NLLLoss(_Loss):
    _fn, _options = staticmethod(F.nll_loss), ("weight", "ignore_index", "reduction")

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction)


class BCELoss(_Loss):
    _fn, _options = staticmethod(F.binary_cross_entropy), ("weight", "reduction")

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(weight=weight, reduction=reduction)


class BCEWithLogitsLoss(_Loss):
    _fn, _options = staticmethod(F.binary_cross_entropy_with_logits), ("weight", "reduction", "pos_weight")

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(weight=weight, reduction=reduction, pos_weight=pos_weight)


class KLDivLoss(_Loss):
    _fn, _options = staticmethod(F.kl_div), ("reduction", "log_target")

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction=reduction, log_target=log_target)


class Sequential(Module):
    """Applies its modules in order."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                setattr(self, name, m)
        else:
            for i, m in enumerate(modules):
                setattr(self, str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def append(self, module):
        setattr(self, str(len(self._modules)), module)
        return self

    def __getitem__(self, i):
        items = list(self._modules.values())
        return Sequential(*items[i]) if isinstance(i, slice) else items[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleList(Module):
    """A list of modules whose parameters the parent registers."""

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module):
        setattr(self, str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i, module):
        setattr(self, list(self._modules)[i], module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of modules whose parameters the parent registers."""

    def __init__(self, modules=None):
        super().__init__()
        for name, m in (modules or {}).items():
            setattr(self, name, m)

    def __getitem__(self, name):
        return self._modules[name]

    def __setitem__(self, name, module):
        setattr(self, name, module)

    def __contains__(self, name):
        return name in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

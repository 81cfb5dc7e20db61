"""Lazy modules (torch.nn.LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*,
LazyInstanceNorm*): the input size (in_features, in_channels, num_features) is taken from the
first input, as PyTorch's.

Until then the module's parameters (and a lazy batch norm's running statistics) are
UninitializedParameter / UninitializedBuffer objects. The first call (or load_state_dict, from
the checkpoint's shapes) materializes them in place and initializes them as the regular
module does; the module then becomes that regular module (`type(m)` is Linear, Conv2d, ...),
as in PyTorch. Parameters keep their identity, so an optimizer made before the first call
trains them.
"""
from ..autograd import no_grad
from .modules import (Module, Linear, Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
                      BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
                      UninitializedParameter, UninitializedBuffer)

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

_UNINITIALIZED = (UninitializedParameter, UninitializedBuffer)


class LazyModuleMixin:
    """Before a module's first call: initialize_parameters(*args) from the input, then the
    module becomes `cls_to_become`. Raises RuntimeError if something is still uninitialized."""
    cls_to_become = None

    def has_uninitialized_params(self):
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, _UNINITIALIZED) for t in tensors)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _sizes_from_parameters(self):
        """The input size from materialized parameters (after load_state_dict)."""

    def __call__(self, *args, **kwargs):
        if self.has_uninitialized_params():
            with no_grad():
                self.initialize_parameters(*args, **kwargs)
            if self.has_uninitialized_params():
                raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        else:
            self._sizes_from_parameters()
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become
        return Module.__call__(self, *args, **kwargs)


class LazyLinear(LazyModuleMixin, Linear):
    """Linear with in_features taken from the input's last dimension on the first call."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, out_features, False, device, dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.bias = UninitializedParameter(dtype=dtype) if bias else None

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()

    def _sizes_from_parameters(self):
        self.in_features = self.weight.shape[1]


class _LazyConvMixin(LazyModuleMixin):
    _transposed = False

    def __init__(self, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, dtype,
                 output_padding=0):
        base = self.cls_to_become
        if self._transposed:
            base.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups, False, dilation,
                          padding_mode, None, dtype)
        else:
            base.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                          None, dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.bias = UninitializedParameter(dtype=dtype) if bias else None

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            self.cls_to_become.reset_parameters(self)

    def initialize_parameters(self, input, *args, **kwargs):
        # (N, C, *spatial), or (C, *spatial) unbatched
        self.in_channels = input.shape[0] if input.dim() == self._n + 1 else input.shape[1]
        if self.in_channels % self.groups:
            raise ValueError(f"in_channels ({self.in_channels}) must be divisible by groups ({self.groups})")
        if self._transposed:
            self.weight.materialize((self.in_channels, self.out_channels // self.groups) + self.kernel_size)
        else:
            self.weight.materialize((self.out_channels, self.in_channels // self.groups) + self.kernel_size)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()

    def _sizes_from_parameters(self):
        w = self.weight.shape
        self.in_channels = w[0] if self._transposed else w[1] * self.groups


def _lazy_conv(base, transposed):
    class Lazy(_LazyConvMixin, base):
        cls_to_become = base
        _transposed = transposed

        if transposed:
            def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                         dilation=1, padding_mode="zeros", device=None, dtype=None):
                _LazyConvMixin.__init__(self, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                                        padding_mode, dtype, output_padding)
        else:
            def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                         padding_mode="zeros", device=None, dtype=None):
                _LazyConvMixin.__init__(self, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                                        padding_mode, dtype)
    Lazy.__name__ = Lazy.__qualname__ = "Lazy" + base.__name__
    Lazy.__doc__ = f"{base.__name__} with in_channels taken from the input's channel axis on the first call."
    return Lazy


LazyConv1d, LazyConv2d, LazyConv3d = (_lazy_conv(b, False) for b in (Conv1d, Conv2d, Conv3d))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy_conv(b, True) for b in (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


class _LazyNormMixin(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        self.cls_to_become.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype)
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)

    def initialize_parameters(self, input, *args, **kwargs):
        # (N, C, *spatial); an instance norm's unbatched input is (C, *spatial)
        unbatched = getattr(self, "_n", None) is not None and input.dim() == self._n + 1
        self.num_features = input.shape[0] if unbatched or input.dim() == 1 else input.shape[1]
        for name, value in (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0)):
            t = getattr(self, name, None)
            if isinstance(t, _UNINITIALIZED):
                t.materialize((self.num_features,))
                t.fill_(value)

    def _sizes_from_parameters(self):
        t = self.weight if self.weight is not None else getattr(self, "running_mean", None)
        if t is not None:
            self.num_features = t.shape[0]


def _lazy_norm(base):
    class Lazy(_LazyNormMixin, base):
        cls_to_become = base

        # (PyTorch's lazy instance norms, too, default to affine=True, track_running_stats=True.)
        def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
            _LazyNormMixin.__init__(self, eps, momentum, affine, track_running_stats, device, dtype)
    Lazy.__name__ = Lazy.__qualname__ = "Lazy" + base.__name__
    Lazy.__doc__ = f"{base.__name__} with num_features taken from the input's channel axis on the first call."
    return Lazy


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (_lazy_norm(b) for b in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy_norm(b) for b in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d))

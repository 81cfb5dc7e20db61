"""gt.nn.utils: gradient clipping, parameters as one vector and weight normalization
and the original spectral normalization (torch.nn.utils); gt.nn.utils.rnn: padding and packing variable-length sequences;
gt.nn.utils.parametrize and gt.nn.utils.parametrizations: tensors computed from others
(weight_norm, spectral_norm); gt.nn.utils.prune: masks that zero out entries of a tensor."""
import math

from ... import _C
from ... import _functions as T
from ..._tensor import _foreach
from ...dtypes import float32, float64
from ...autograd import no_grad
from .. import modules as _nn
from . import rnn  # noqa: F401 (torch.nn.utils.rnn)
from . import fusion, parametrize, parametrizations, prune  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales every gradient in place by min(1, max_norm / (total_norm + 1e-6)), where
    total_norm is the norm of all gradients together (torch.nn.utils.clip_grad_norm_: what
    get_total_norm and clip_grads_with_norm_ do in turn); returns total_norm (a 0-d tensor;
    nothing waits for it). `parameters`: a Tensor or an iterable of them (a generator too).
    error_if_nonfinite=True reads the norm (a wait) and raises RuntimeError, scaling nothing,
    when it is inf or NaN. `foreach` is accepted and changes nothing."""
    parameters = [parameters] if isinstance(parameters, T.Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return T.zeros(())
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of order `norm_type` of all `tensors` together (a Tensor or an iterable of
    them), a 0-d tensor, as torch.nn.utils.get_total_norm. The 2-norm of float32 tensors is
    computed as PyTorch's foreach path does: one call into the client core per line for all of
    them, not a Python call per tensor; other norms accumulate float64 tensors in float64,
    others in float32. error_if_nonfinite=True reads the norm (a wait) and raises
    RuntimeError when it is inf or NaN."""
    tensors = [tensors] if isinstance(tensors, T.Tensor) else list(tensors)
    if not tensors:
        return T.zeros(())
    with no_grad():
        if norm_type == 2.0 and all(g.dtype == float32 for g in tensors):
            squares = _foreach("mul", tensors, tensors)
            by_rank = {}
            for sq in squares:
                by_rank.setdefault(sq.ndim, []).append(sq)
            sums = []
            for rank, group in by_rank.items():
                sums += _foreach("sum", group, axes=_C.normalize_axes([], rank), keepdims=False)
            total = T.sqrt(T.sum(T.stack(sums)))
        elif norm_type == float("inf"):
            total = tensors[0].abs().amax()
            for g in tensors[1:]:
                total = T.maximum(total, g.abs().amax())
        else:
            total = None
            for g in tensors:
                s = T.sum(T.pow(T.abs(g if g.dtype == float64 else g.float()), norm_type))
                total = s if total is None else total + s
            total = T.pow(total, 1.0 / norm_type)
        _check_finite(total, norm_type, error_if_nonfinite)
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients of `parameters` in place by min(1, max_norm / (total_norm + 1e-6)),
    as torch.nn.utils.clip_grads_with_norm_ (total_norm: get_total_norm's result, a 0-d tensor
    or a number). A tensor held as `g = p.grad` sees the scaling too."""
    parameters = [parameters] if isinstance(parameters, T.Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = T.clamp(max_norm / (total_norm + 1e-6), max=1.0)
        if all(g.dtype == float32 for g in grads):
            scaled = _foreach("mul", grads, coef)
        else:
            scaled = [g * T.cast(coef, g.dtype) for g in grads]
        for g, new in zip(grads, scaled):
            g._assign(new)


def _check_finite(total, norm_type, error_if_nonfinite):
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient in place to [-clip_value, clip_value] elementwise, as torch.nn.utils."""
    if isinstance(parameters, T.Tensor):
        parameters = [parameters]
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad._assign(T.clamp(p.grad, -clip_value, clip_value))


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """clip_grad_norm_, under PyTorch's deprecated name (with its warning)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def convert_conv2d_weight_memory_format(module, memory_format):
    """module, as it is: GT tensors have one layout (memory formats are accepted and ignored)."""
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """module, as it is (see convert_conv2d_weight_memory_format)."""
    return module


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs), as torch.nn.utils.skip_init (which leaves the parameters
    uninitialized to save the time: GT initializes them as usual; `device` is taken as the
    class takes it). Raises RuntimeError for a class without a `device` argument, as PyTorch's."""
    import inspect
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)


def parameters_to_vector(parameters):
    """Every tensor of `parameters` flattened and joined into one 1-D tensor (in order)."""
    return T.cat([T.reshape(p, -1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of the 1-D tensor `vec` into `parameters` (each reshaped to its
    parameter's shape), as torch.nn.utils.vector_to_parameters. Raises TypeError for a vec that
    is not a tensor, ValueError when the sizes do not add up."""
    if not isinstance(vec, T.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.numel() != total:
        raise ValueError(f"vector_to_parameters: the vector has {vec.numel()} elements, the parameters {total}")
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(T.reshape(vec[start:start + n], *p.shape))
            start += n


def weight_norm(module, name="weight", dim=0):
    """The original weight normalization (torch.nn.utils.weight_norm, deprecated there in favour
    of parametrizations.weight_norm): `module.<name>` becomes `<name>_g * <name>_v / ||<name>_v||`
    (the norm over every axis but `dim`), recomputed before each forward from the parameters
    `<name>_g` and `<name>_v` (Salimans & Kingma 2016). Returns module."""
    from .parametrizations import _norm_except_dim
    weight = module._parameters.pop(name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter with name '{name}'")
    module.__dict__.pop(name, None)
    dim = -1 if dim is None else dim
    with no_grad():
        setattr(module, name + "_g", _nn.Parameter(_norm_except_dim(weight, dim).detach()))
        setattr(module, name + "_v", _nn.Parameter(weight.detach()))

    def compute(m, args=None):
        v = getattr(m, name + "_v")
        object.__setattr__(m, name, v * (getattr(m, name + "_g") / _norm_except_dim(v, dim)))
    compute(module)
    module.__dict__.setdefault("_gt_weight_norm", {})[name] = (module.register_forward_pre_hook(compute), dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undoes weight_norm: `module.<name>` becomes a plain parameter holding g * v / ||v||.
    Raises ValueError if weight_norm was not applied to it."""
    from .parametrizations import _norm_except_dim
    hooks = module.__dict__.get("_gt_weight_norm", {})
    if name not in hooks:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    handle, dim = hooks.pop(name)
    handle.remove()
    with no_grad():
        v = getattr(module, name + "_v")
        value = v * (getattr(module, name + "_g") / _norm_except_dim(v, dim))
    for suffix in ("_g", "_v"):
        module._parameters.pop(name + suffix, None)
        module.__dict__.pop(name + suffix, None)
    module.__dict__.pop(name, None)
    setattr(module, name, _nn.Parameter(value.detach()))
    return module


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """The original spectral normalization (torch.nn.utils.spectral_norm; Miyato et al. 2018,
    "Spectral Normalization for GANs"): the parameter `<name>_orig` and the buffers `<name>_u`,
    `<name>_v` (unit vectors of N(0, 1) draws) replace `module.<name>`, which a forward pre-hook
    sets to `<name>_orig / sigma` before each forward, sigma = u . (W v) for W the weight as a
    matrix (axis `dim` first: 1 for transposed convolutions by default, else 0); in training mode
    the hook first runs n_power_iterations of v = normalize(W^T u), u = normalize(W v), as
    PyTorch's, writing the buffers. The state dict holds weight_orig, weight_u and weight_v, as
    PyTorch's. Returns module; ValueError if `name` is not a parameter of it."""
    from ..functional import normalize
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter with name '{name}'")
    if name in module.__dict__.get("_gt_spectral_norm", {}):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0

    def matrix(w):
        if dim != 0:
            w = T.permute(w, dim, *[d for d in range(w.ndim) if d != dim])
        return T.reshape(w, w.shape[0], -1)

    with no_grad():
        h, w = matrix(weight).shape
        u = normalize(T.randn(h, dtype=weight.dtype), dim=0, eps=eps)
        v = normalize(T.randn(w, dtype=weight.dtype), dim=0, eps=eps)
    del module._parameters[name]
    module.__dict__.pop(name, None)
    setattr(module, name + "_orig", weight)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)

    def compute(m, do_power_iteration):
        w_orig = getattr(m, name + "_orig")
        mat = matrix(w_orig)
        u, v = getattr(m, name + "_u"), getattr(m, name + "_v")
        if do_power_iteration:
            with no_grad():
                for _ in range(n_power_iterations):
                    v = normalize(T.matmul(mat.detach().mT, u), dim=0, eps=eps)
                    u = normalize(T.matmul(mat.detach(), v), dim=0, eps=eps)
                setattr(m, name + "_u", u)
                setattr(m, name + "_v", v)
        sigma = T.sum(u.detach() * T.matmul(mat, v.detach()))
        return w_orig / sigma

    def hook(m, args=None):
        object.__setattr__(m, name, compute(m, m.training))

    object.__setattr__(module, name, weight.detach())
    handle = module.register_forward_pre_hook(hook)
    module.__dict__.setdefault("_gt_spectral_norm", {})[name] = (handle, compute)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undoes spectral_norm: `module.<name>` becomes a parameter holding <name>_orig / sigma.
    Raises ValueError if spectral_norm was not applied to it."""
    hooks = module.__dict__.get("_gt_spectral_norm", {})
    if name not in hooks:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    handle, compute = hooks.pop(name)
    handle.remove()
    with no_grad():
        value = compute(module, False)
    module._parameters.pop(name + "_orig", None)
    module.__dict__.pop(name + "_orig", None)
    for suffix in ("_u", "_v"):
        module._buffers.pop(name + suffix, None)
        module.__dict__.pop(name + suffix, None)
    module.__dict__.pop(name, None)
    setattr(module, name, _nn.Parameter(value.detach()))
    return module


# torch.nn.utils.weight_norm is also a module's name (sbi imports `torch.nn.utils.weight_norm`):
# registered here, so that importing it leaves this package's weight_norm the function, as PyTorch's
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402
_sys.modules[__name__ + ".weight_norm"] = _types.ModuleType(
    __name__ + ".weight_norm", "torch.nn.utils.weight_norm: weight_norm and remove_weight_norm (gt.nn.utils).")
_sys.modules[__name__ + ".weight_norm"].weight_norm = weight_norm
_sys.modules[__name__ + ".weight_norm"].remove_weight_norm = remove_weight_norm

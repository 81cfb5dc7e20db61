"""gt.nn.functional: stateless layers and losses, with torch.nn.functional's names and rules.

Shapes use PyTorch's letters: N batch, C classes, D features, (*) any extra axes.
"""
import functools
import inspect
import itertools
import math
import warnings

import numpy as np

from .. import _C, _device, _runtime, _tensor
from .. import autograd as _ag
from .. import _functions as T
from .. import dtypes as _dt


def _takes_inplace(fn):
    """`fn(input, ...)` with PyTorch's `inplace=False` argument (by keyword or as the last
    positional one: `F.relu(x, True)`, `F.dropout(x, 0.5, True, True)`). With inplace=True the
    input tensor is rebound to the result and returned (GT's in-place form, Tensor._in_place:
    a tensor's values never change, the Python object takes the new ones), so code that keeps
    using `x` sees what PyTorch's would."""
    positional = len(inspect.signature(fn).parameters)  # input and fn's own

    @functools.wraps(fn)
    def with_inplace(input, *args, inplace=False, **kwargs):
        if len(args) == positional:
            *args, inplace = args
        if inplace:
            return input._in_place(fn, *args, **kwargs)
        return fn(input, *args, **kwargs)
    return with_inplace


relu = _takes_inplace(T.relu)
sigmoid = T.sigmoid
tanh = T.tanh
silu = _takes_inplace(T.silu)
gelu = T.gelu


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim (input cast to dtype first, when given); without dim,
    PyTorch's legacy choice (0 for 0-, 1- and 3-d input, else 1) with its warning."""
    if dim is None:
        from .modules import _implicit_softmax_dim
        dim = _implicit_softmax_dim("softmax", input.ndim)
    return T.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along dim (input cast to dtype first, when given); dim as softmax's."""
    if dim is None:
        from .modules import _implicit_softmax_dim
        dim = _implicit_softmax_dim("log_softmax", input.ndim)
    return T.log_softmax(input, dim, dtype)
one_hot = T.one_hot


def linear(x, weight, bias=None):
    """x (*, in) @ weight.T (in, out) + bias (out,) -> (*, out).

    The backward gives weight's gradient as one matrix product over every row of x, in weight's
    own (out, in) layout: g (N, out)^T @ x (N, in), N the product of x's leading axes (as
    PyTorch's linear). Through matmul's own formula it would be mT of x^T @ g: for a 3-D x a
    batch of small products summed afterwards, and a transposed result that every later reader
    (the optimizer's fused update) reads across rows. Inside gt.amp.autocast the operands are
    cast first, as recorded ops, so the gradients come back through the casts."""
    half = _tensor._autocast_dtype
    if half is not None:
        x = T.cast(x, half) if x.dtype in (_dt.float32, _dt.float64) else x
        weight = T.cast(weight, half) if weight.dtype in (_dt.float32, _dt.float64) else weight
        bias = _autocast_bias(bias) if bias is not None else None
    low = x.dtype
    if bias is not None and low in (_dt.float16, _dt.bfloat16) and weight.dtype == low and bias.dtype == low \
            and x.device.type == "cpu":
        # The product and the bias added in float32 and rounded once, as PyTorch's addmm (each
        # rounded to bfloat16 left 27 % of the outputs an ulp off). GPU workers keep the half
        # product (tensor cores) and round twice.
        f32 = _dt.float32
        _tensor._autocast_dtype = None  # (the float32 product is this one's, not autocast's to cast)
        try:
            return T.cast(_linear(T.cast(x, f32), T.cast(weight, f32)) + T.cast(bias, f32), low)
        finally:
            _tensor._autocast_dtype = half
    y = _linear(x, weight)
    return y + bias if bias is not None else y


def _linear(x, weight):
    """x @ weight.T with linear's own backward node (see linear)."""
    if x.dtype.is_complex or weight.dtype.is_complex:  # (its gradients come through the parts' products)
        return T.matmul(x, weight.mT)
    with _ag.no_grad():
        y = T.matmul(x, weight.T)
    if _ag.is_grad_enabled() and y.dtype.is_floating_point and (x.requires_grad or weight.requires_grad):
        y.requires_grad = True
        y._node = _ag.Node(_linear_backward, (x, weight), None, _runtime.current_signal())
    return y


# Inside gt.amp.autocast a bias is cast with the product's operands, as PyTorch's autocast casts
# every floating operand of linear and the convolutions: their result is then in the low dtype,
# not promoted back to float32 by a float32 bias.
_autocast_bias = _tensor.autocast_operand


def _linear_backward(g, y, inputs, attrs):
    x, weight = inputs
    gx = T.matmul(g, weight) if x.requires_grad else None  # (*, out) @ (out, in)
    gw = None
    if weight.requires_grad:
        rows_g = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        rows_x = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
        gw = T.matmul(rows_g.mT, rows_x)  # the .mT is free on a CPU worker: a transposed GEMM operand
    return gx, gw


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` (V, D) for integer `input` (*) -> (*, D), as torch.nn.functional.embedding.
    With padding_idx, that row gets no gradient; with max_norm, the rows `input` names whose
    norm_type-norm exceeds it are first scaled in place (no gradient) to norm max_norm (PyTorch's
    max_norm / (norm + 1e-7)); with scale_grad_by_freq, each row's gradient is divided by how
    often `input` names it. sparse=True is accepted: the gradient is dense (see gt.sparse)."""
    if not isinstance(input, T.Tensor):
        input = T.tensor(input)
    if max_norm is not None:
        with _ag.no_grad():
            used = T.gt(T.index_add_zeros((weight.shape[0],), 0, T.reshape(input, -1),
                                           T.ones(input.numel(), dtype=weight.dtype)), 0)
            norms = T.norm(weight, norm_type, 1, True)
            scaled = T.where(T.logical_and(T.unsqueeze(used, 1), norms > max_norm),
                             weight * (max_norm / (norms + 1e-7)), weight)
            weight._rebind(scaled._h)
    out = T.embedding(input, weight)
    if padding_idx is not None:
        keep = T.unsqueeze(T.ne(input, padding_idx), -1)
        out = T.where(keep, out, out.detach())
    if scale_grad_by_freq:  # the value of out, the gradient of out / (count of its index)
        flat = T.reshape(input, -1)
        counts = T.index_add_zeros((weight.shape[0],), 0, flat, T.ones(flat.shape[0], dtype=out.dtype))
        c = T.unsqueeze(T.embedding(input, T.unsqueeze(counts, 1))[..., 0], -1)
        out = out / c + (out - out / c).detach()
    return out


@_takes_inplace
def leaky_relu(x, negative_slope=0.01):
    return T.where(x > 0, x, x * negative_slope)


def _keeps_input_dtype(norm):
    """A normalization whose float16/bfloat16 input has float32 parameters (a half model whose
    norm layers stayed float32, CLIP's fp16 build) computes in float32 and gives the input's
    dtype, as PyTorch's (outside autocast, whose own casting rules then apply)."""
    @functools.wraps(norm)
    def call(input, *args, **kwargs):
        low = input.dtype
        if low in (_dt.float16, _dt.bfloat16) and _tensor._autocast_dtype is None and any(
                isinstance(a, T.Tensor) and a.dtype == _dt.float32 for a in list(args) + list(kwargs.values())):
            return T.cast(norm(T.cast(input, _dt.float32), *args, **kwargs), low)
        return norm(input, *args, **kwargs)
    return call


@_keeps_input_dtype
def _widened(x):
    """x in float32 when it is bfloat16 or float16 (else x): normalizations and attention compute
    in float32 inside, as PyTorch's kernels do, and round once at the end (a bf16 layer_norm had
    2.8x the error of PyTorch's)."""
    return T.cast(x, _dt.float32) if x.dtype in (_dt.bfloat16, _dt.float16) else x


def _narrowed(y, x):
    """y, computed from _widened(x), back in x's half type (also with float32 weights: PyTorch's
    mixed-dtype normalizations give the input's dtype)."""
    return T.cast(y, x.dtype) if x.dtype in (_dt.bfloat16, _dt.float16) and y.dtype != x.dtype else y


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) axes
    (biased variance, Ba et al. 2016)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if x.shape[x.ndim - len(normalized_shape):] != normalized_shape:
        raise _C.ShapeError(f"layer_norm: normalized_shape {list(normalized_shape)} does not match the "
                              f"last axes of input of shape {list(x.shape)}")
    for p in (weight, bias):
        if p is not None and p.dtype != x.dtype and x.dtype in (_dt.float32, _dt.float64) and \
                _tensor._autocast_dtype is None:  # (as PyTorch's, which does not promote here)
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of "
                               f"{'Float' if x.dtype == _dt.float32 else 'Double'}")
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = _Standardize.apply(_widened(x), axes, eps)[0]
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return _narrowed(y, x)


def _standardize(x, axes, eps, corrected=False):
    """(x - mean) * rstd over `axes`, rstd = 1 / sqrt(var + eps) (biased variance); returns
    that, the mean, the variance and rstd (kept dims). corrected: the mean is corrected by the
    mean of x - mean (the corrected two-pass algorithm; Chan, Golub & LeVeque, "Algorithms for
    computing the sample variance", 1983), which removes the first mean's rounding error: a
    float32 sum over a batch's N H W elements accumulates in a few lanes, each many elements
    long, and a constant channel came out 6 ulp off its value (batch norm's x - mean then
    14x PyTorch's error)."""
    mean = T.mean(x, axes, keepdim=True)
    d = x - mean
    if corrected:
        delta = T.mean(d, axes, keepdim=True)
        mean, d = mean + delta, d - delta
    var = T.mean(d * d, axes, keepdim=True)
    rstd = T.rsqrt(var + eps)
    return d * rstd, mean, var, rstd


class _Standardize(_ag.Function):
    """xhat = (x - mean) * rstd over `axes`, with the mean and the (biased) variance as
    non-differentiable outputs (batch_norm's running statistics). The backward is the closed
    form of PyTorch's native_layer_norm_backward / native_batch_norm_backward and llm.c's
    layernorm_backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), means over `axes`;
    differentiating the composite instead kept more intermediates and ran more ops both ways.
    For a second derivative (create_graph) it differentiates the composite, recomputed from the
    saved input, so that the result is itself differentiable (rstd has no graph)."""

    @staticmethod
    def forward(ctx, x, axes, eps, corrected=False):
        xhat, mean, var, rstd = _standardize(x, axes, eps, corrected)
        ctx.save_for_backward(x, xhat, rstd)
        ctx.axes, ctx.eps, ctx.corrected = axes, eps, corrected
        ctx.mark_non_differentiable(mean, var)
        ctx.set_materialize_grads(False)
        return xhat, mean, var

    @staticmethod
    def backward(ctx, g, *_):
        x, xhat, rstd = ctx.saved_tensors
        axes = ctx.axes
        if g is None:
            return None, None, None, None
        if _ag.is_grad_enabled():  # create_graph
            again = _standardize(x, axes, ctx.eps, ctx.corrected)[0]
            return _ag.grad(again, x, g, create_graph=True)[0], None, None, None
        return rstd * (g - T.mean(g, axes, keepdim=True) - xhat * T.mean(g * xhat, axes, keepdim=True)), None, None, None


@_takes_inplace
def dropout(x, p=0.5, training=True):
    """Zeroes each element with probability p and scales the rest by 1/(1-p) (Srivastava et al.
    2014); the identity when not training or p == 0."""
    return _dropout(x, p, training, x.shape)


def _dropout(x, p, training, mask_shape):
    """x with elements zeroed by a keep mask of `mask_shape` (broadcast to x), the rest scaled."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = T.rand(mask_shape, dtype=x.dtype) >= p
    return T.where(keep, x * (1.0 / (1.0 - p)), 0.0)


def _reduce(x, reduction, weight_sum=None):
    if reduction == "mean":
        if weight_sum is None:
            return T.mean(x)
        # sum / weight_sum, NaN when every target is ignored (weight_sum 0) with a zero gradient, as PyTorch's
        empty = weight_sum == 0
        return T.where(empty, math.nan, T.sum(x) / T.where(empty, 1.0, weight_sum))
    if reduction == "sum":
        return T.sum(x)
    if reduction == "none":
        return x
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _class_axis_last(input, target):
    """(N, C, d1, ...) logits -> (N*d1*..., C); target (N, d1, ...) -> (N*d1*...,)."""
    if input.ndim == 1:
        return T.unsqueeze(input, 0), T.reshape(target, 1)
    if input.ndim > 2:
        perm = (0,) + tuple(range(2, input.ndim)) + (1,)
        input = T.reshape(T.permute(input, *perm), -1, input.shape[1])
        target = T.reshape(target, -1)
    return input, target


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-input[n, target[n]] (input holds log-probabilities, (N, C) or (N, C, d...)), weighted by
    weight[target[n]]; targets equal to ignore_index count for nothing. 'mean' divides by the
    total weight of the counted targets (as PyTorch)."""
    return _nll(input, target, weight, ignore_index, reduction, 0.0)


def _check_targets(input, target, name):
    if not isinstance(target, T.Tensor):
        target = T.tensor(target)
    if target.dtype.is_floating_point or target.dtype == _dt.bool:
        raise _C.DTypeError(f"{name} expects integer class indices as target, got {target.dtype}")
    expected = input.shape[:1] + input.shape[2:] if input.ndim > 1 else ()
    if target.shape != expected:
        raise _C.ShapeError(f"{name}: target shape {list(target.shape)} does not match input shape "
                              f"{list(input.shape)} (expected {list(expected)})")
    return target


def _nll(logp, target, weight, ignore_index, reduction, label_smoothing):
    out_shape = target.shape
    logp, target = _class_axis_last(logp, target)
    C = logp.shape[-1]
    valid = T.ne(target, ignore_index)
    safe = T.where(valid, target, T.zeros((), dtype=target.dtype))
    picked = T.squeeze(T.gather(logp, 1, T.unsqueeze(safe, 1)), 1)
    w = valid.to(logp.dtype)
    if weight is not None:
        w = w * T.index_select(weight, 0, safe)
    loss = -picked * w
    if label_smoothing:
        # (1 - eps) * nll + eps * mean over classes of -logp (Szegedy et al. 2016)
        cls_w = weight if weight is not None else None
        smooth = -(T.sum(logp * cls_w, 1) if cls_w is not None else T.sum(logp, 1)) / C
        loss = (1.0 - label_smoothing) * loss + label_smoothing * smooth * valid.to(logp.dtype)
    if reduction == "none":
        return T.reshape(loss, out_shape)
    return _reduce(loss, reduction, T.sum(w) if reduction == "mean" else None)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits `input` (N, C), (C,) or (N, C, d...) against integer class
    indices `target` (N,) or (N, d...): nll_loss(log_softmax(input, 1), target), with
    ignore_index and label smoothing as PyTorch. Raises gt.DTypeError for float targets and
    gt.ShapeError when the shapes do not fit."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if isinstance(target, T.Tensor) and target.dtype.is_floating_point and target.shape == input.shape:
        return _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing)
    target = _check_targets(input, target, "cross_entropy")
    if input.ndim > 1 and reduction in ("mean", "sum") and not label_smoothing and input.dtype.is_floating_point \
            and (weight is None or not weight.requires_grad):  # (a weight that requires grad: the composite)
        rows, labels = _class_axis_last(input, target)
        return _CrossEntropy.apply(rows, labels, weight, ignore_index, reduction)
    logp = T.log_softmax(input, dim=1 if input.ndim > 1 else 0)
    return _nll(logp, target, weight, ignore_index, reduction, label_smoothing)


class _CrossEntropy(_ag.Function):
    """The mean or sum over rows of -w[t] log_softmax(x)[t] for logits x (M, C) and class
    indices t (M,) (rows whose t is ignore_index count for nothing; 'mean' divides by the
    summed weights), with the closed-form backward of PyTorch's log_softmax + nll_loss
    backward: dx = (softmax(x) - one_hot(t)) * w[t] * g / sum(w). Differentiating the
    composite instead recorded a node per op and ran about three times the ops. For a second
    derivative (create_graph) it differentiates the composite, recomputed from the saved
    logits, so that the result is itself differentiable."""

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction):
        logp = x - T._logsumexp(x, 1)  # log_softmax (its Function's bookkeeping is not needed here)
        valid = T.ne(target, ignore_index)
        safe = T.where(valid, target, T.zeros((), dtype=target.dtype))
        w = valid.to(x.dtype)
        if weight is not None:
            w = w * T.index_select(weight, 0, safe)
        loss = -T.sum(T.squeeze(T.gather(logp, 1, T.unsqueeze(safe, 1)), 1) * w)
        total = T.sum(w) if reduction == "mean" else None
        ctx.save_for_backward(x, logp, safe, w, total)
        ctx.args = (target, weight, ignore_index, reduction)
        return loss if total is None else loss / total

    @staticmethod
    def backward(ctx, g):
        x, logp, safe, w, total = ctx.saved_tensors
        if _ag.is_grad_enabled():  # create_graph
            with _ag.enable_grad():
                again = _nll(T.log_softmax(x, dim=1), *ctx.args[:3], ctx.args[3], 0.0)
            return _ag.grad(again, x, g, create_graph=True)[0], None, None, None, None
        scale = w * (g if total is None else g / T.where(total == 0, 1.0, total))  # (every target ignored: 0)
        hot = T.cast(T.one_hot(safe, x.shape[1]), x.dtype)
        return (T.exp(logp) - hot) * T.unsqueeze(scale, 1), None, None, None, None


def _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing):
    """Class probabilities as target (same shape as input, classes on axis 1): -sum_c w_c t_c
    log softmax(input)_c per element, t smoothed to t (1 - eps) + eps / C; 'mean' divides by the
    number of elements, not by weights (as PyTorch)."""
    axis = 1 if input.ndim > 1 else 0
    C = input.shape[axis]
    logp = T.log_softmax(input, dim=axis)
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / C
    terms = logp * target
    if weight is not None:
        shape = [1] * input.ndim
        shape[axis] = C
        terms = terms * T.reshape(weight, *shape)
    return _reduce(-T.sum(terms, axis), reduction)


def mse_loss(input, target, reduction="mean"):
    """mean((input - target)^2); reduction 'mean', 'sum' or 'none'."""
    d = input - target
    return _reduce(d * d, reduction)


def l1_loss(input, target, reduction="mean"):
    """mean(|input - target|); reduction 'mean', 'sum' or 'none'."""
    return _reduce(T.abs(input - target), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target; Girshick 2015,
    Fast R-CNN); beta 0 is l1_loss."""
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    a = T.abs(input - target)
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(T.where(a < beta, 0.5 * a * a / beta, a - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (Huber 1964): smooth_l1_loss * delta."""
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    a = T.abs(input - target)
    return _reduce(T.where(a < delta, 0.5 * a * a, delta * (a - 0.5 * delta)), reduction)


def kl_div(input, target, reduction="mean", log_target=False):
    """Kullback-Leibler divergence KL(target || exp(input)) pointwise, input a log-probability:
    target (log target - input), or exp(target) (target - input) with log_target. 'batchmean'
    divides the sum by the batch size input.shape[0] (the true KL divergence per example);
    'mean' by the number of elements, as PyTorch."""
    if log_target:
        loss = T.exp(target) * (target - input)
    else:
        loss = T.where(target > 0, target * (T.log(T.where(target > 0, target, T.ones_like(target))) - input),
                       T.zeros_like(input))
    if reduction == "batchmean":
        return T.sum(loss) / (input.shape[0] if input.ndim else 1)
    if reduction == "mean":
        _tensor.warn_at_user_line("reduction: 'mean' divides the total loss by both the batch size and the support "
                                  "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                                  "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                                  "major release.")
    return _reduce(loss, reduction)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p over dim, eps), as torch.nn.functional.normalize (p: a number, inf
    and -inf too; the 2-norm's gradient is 0, not nan, at a zero vector)."""
    return input / T.clamp(T.norm(input, p, dim, keepdim=True), min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 x2) / max(||x1|| ||x2||, eps) over dim."""
    n = T._l2(T.sum(x1 * x1, dim)) * T._l2(T.sum(x2 * x2, dim))
    return T.sum(x1 * x2, dim) / T.clamp(n, min=eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2 over the trailing normalized_shape axes) + eps) * weight (Zhang &
    Sennrich 2019); eps defaults to the machine epsilon of float64 for a float64 input, else of
    float32 (the precision PyTorch's kernel computes half types in)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if tuple(input.shape[input.ndim - len(normalized_shape):]) != tuple(normalized_shape):
        raise _C.ShapeError(f"rms_norm: normalized_shape {list(normalized_shape)} does not match the trailing "
                            f"axes of input shape {list(input.shape)}")
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    eps = T.finfo(_dt.float64 if input.dtype == _dt.float64 else _dt.float32).eps if eps is None else eps
    x = _widened(input)
    y = x * T.rsqrt(T.mean(x * x, axes, keepdim=True) + eps)
    y = y * weight if weight is not None else y
    return _narrowed(y, input)


class _BinaryCrossEntropy(_ag.Function):
    """Elementwise -(t log p + (1 - t) log(1 - p)), logs clamped at -100, with PyTorch's gradient
    (binary_cross_entropy_backward): g (p - t) / max(p (1 - p), 1e-12) for p, finite where p is
    exactly 0 or 1 (a saturated sigmoid), where the clamped logs' own gradient is 0 / 0; and
    g (log(1 - p) - log p) for t."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        return -(target * _clamped_log(input) + (1.0 - target) * _clamped_log(1.0 - input))

    @staticmethod
    def backward(ctx, g):
        p, t = ctx.saved_tensors
        gp = g * (p - t) / T.clamp((1.0 - p) * p, min=1e-12) if ctx.needs_input_grad[0] else None
        gt_ = g * (_clamped_log(1.0 - p) - _clamped_log(p)) if ctx.needs_input_grad[1] else None
        return gp, gt_


def _clamped_log(x):
    return T.clamp(T.log(x), min=-100.0)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p = input (N, *) and targets t of its
    shape; logs clamped at -100 and the gradient finite at p = 0 and 1, as PyTorch's (see
    _BinaryCrossEntropy)."""
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """BCE of sigmoid(input), computed stably: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    sp = T.log1p(T.exp(-T.abs(input))) + T.relu(-input)  # softplus(-x), stable
    if pos_weight is not None:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * sp
    else:
        loss = (1.0 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, computed stably; x itself where beta x > threshold (as
    PyTorch's, gradient 1 there). Gradient sigmoid(beta x), also at x = 0 (0.5)."""
    return _Softplus.apply(x, beta, threshold)


class _Softplus(_ag.Function):
    # (written out: through its stable form's abs and relu, autodiff gave 0 at x = 0)
    @staticmethod
    def forward(ctx, x, beta, threshold):
        bx = x * beta
        y = T.where(bx > threshold, x, (T.log1p(T.exp(-T.abs(bx))) + T.relu(bx)) / beta)
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        bx = x * ctx.beta
        return T.where(bx > ctx.threshold, g, g * T.sigmoid(bx)), None, None


def _masked_softmax(scores):
    """softmax(scores, -1), with 0 for a row every key of which is masked (-inf), as PyTorch's
    attention gives (plain softmax: NaN); its gradient there is 0, not NaN."""
    ok = T.amax(scores, -1, keepdim=True) > float("-inf")
    return T.where(ok, T.softmax(T.where(ok, scores, 0.0), -1), 0.0)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """nn.MultiheadAttention's computation on query (L, N, E), key (S, N, kdim), value
    (S, N, vdim) (or unbatched (L, E) ...): softmax(q k^T / sqrt(E / num_heads) + mask) v per
    head, heads joined and projected by out_proj_weight (E, E). The projections are
    in_proj_weight (3E, E), or q/k/v_proj_weight with use_separate_proj_weight; in_proj_bias
    (3E,) or None. bias_k/bias_v (1, 1, E) are appended to the keys and values, add_zero_attn
    appends a zero key and value (the masks padded with a column that allows them). A bool
    mask is True where attention is NOT allowed (attn_mask (L, S) or (N * num_heads, L, S);
    key_padding_mask (N, S)); a float mask is added to the scores. Returns (output, weights):
    weights (N, L, S) averaged over heads, or (N, num_heads, L, S), or None without
    need_weights. As torch.nn.functional.multi_head_attention_forward (static_k/static_v raise
    NotImplementedError)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k / static_v are not supported by GT")
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = T.unsqueeze(query, 1), T.unsqueeze(key, 1), T.unsqueeze(value, 1)
        if key_padding_mask is not None:
            key_padding_mask = T.unsqueeze(key_padding_mask, 0)
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise ValueError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    if use_separate_proj_weight:
        Wq, Wk, Wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        w = in_proj_weight
        Wq, Wk, Wv = T.narrow(w, 0, 0, E), T.narrow(w, 0, E, E), T.narrow(w, 0, 2 * E, E)
    kdim, vdim = Wk.shape[1], Wv.shape[1]
    if key.shape[:2] != value.shape[:2] or key.shape[1:] != (N, kdim) or value.shape[2] != vdim:
        raise ValueError(f"key {list(key.shape)} and value {list(value.shape)} must be (S, N, kdim) and "
                         f"(S, N, vdim) with N={N}, kdim={kdim}, vdim={vdim}")
    b = in_proj_bias
    bq, bk, bv = (None, None, None) if b is None else (T.narrow(b, 0, 0, E), T.narrow(b, 0, E, E),
                                                       T.narrow(b, 0, 2 * E, E))
    H = num_heads
    D = E // H
    q, k, v = linear(query, Wq, bq), linear(key, Wk, bk), linear(value, Wv, bv)  # (L or S, N, E)

    def pad(mask):  # one more key position, allowed
        if mask is None:
            return None
        extra = T.zeros(*mask.shape[:-1], 1, dtype=mask.dtype)
        return T.cat([mask, extra], -1)

    if bias_k is not None:
        k = T.cat([k, T.expand(bias_k, 1, N, E)], 0)
        v = T.cat([v, T.expand(bias_v, 1, N, E)], 0)
        attn_mask, key_padding_mask, S = pad(attn_mask), pad(key_padding_mask), S + 1
    if add_zero_attn:
        zero = T.zeros(1, N, E, dtype=k.dtype)
        k, v = T.cat([k, zero], 0), T.cat([v, zero], 0)
        attn_mask, key_padding_mask, S = pad(attn_mask), pad(key_padding_mask), S + 1

    def heads(x, length):  # (length, N, E) -> (N, H, length, D)
        return T.permute(T.reshape(x, length, N, H, D), 1, 2, 0, 3)

    q, k, v = heads(q, L), heads(k, S), heads(v, S)
    scores = T.matmul(q, T.transpose(k, -2, -1)) * (1.0 / math.sqrt(D))  # (N, H, L, S)
    if is_causal and attn_mask is None:
        attn_mask = T.triu(T.ones(L, S, dtype=_dt.bool), diagonal=1)
    if attn_mask is not None:
        mask = attn_mask if attn_mask.ndim == 2 else T.reshape(attn_mask, N, H, L, S)
        scores = T.masked_fill(scores, mask, float("-inf")) if mask.dtype == _dt.bool else scores + mask
    if key_padding_mask is not None:
        padding = T.reshape(key_padding_mask, N, 1, 1, S)
        scores = T.masked_fill(scores, padding, float("-inf")) if padding.dtype == _dt.bool else scores + padding
    weights = _masked_softmax(scores) if attn_mask is not None or key_padding_mask is not None else \
        T.softmax(scores, -1)
    dropped = dropout(weights, dropout_p, training) if dropout_p > 0 else weights
    out = T.reshape(T.permute(T.matmul(dropped, v), 2, 0, 1, 3), L, N, E)  # (L, N, E)
    out = linear(out, out_proj_weight, out_proj_bias)
    if unbatched:
        out = T.squeeze(out, 1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = T.mean(weights, 1)
    return out, (T.squeeze(weights, 0) if unbatched else weights)


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v for (..., L, E) queries and (..., S, E) keys/values
    (Vaswani et al. 2017), as torch.nn.functional.scaled_dot_product_attention: is_causal masks
    keys after each query; a bool attn_mask is True where attention is allowed, a float one is
    added; a query every key of which attn_mask masks attends to nothing (output 0, as PyTorch;
    softmax alone would give NaN); dropout_p > 0 drops attention weights (always: the function
    has no eval mode, as in PyTorch, so scripts pass 0 when not training). enable_gqa:
    grouped-query attention (Ainslie et al. 2023), keys and values (..., H_kv, S, E) with fewer
    heads than the queries' H_q, each serving H_q / H_kv consecutive query heads
    (repeat_interleave on the heads axis, as PyTorch's math backend); raises RuntimeError unless
    H_kv divides H_q."""
    if enable_gqa and q.dim() >= 3 and k.dim() >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hkv = q.shape[-3], k.shape[-3]
        if hkv == 0 or hq % hkv or v.shape[-3] != hkv:
            raise RuntimeError(f"scaled_dot_product_attention(enable_gqa=True): the number of query heads ({hq}) must "
                               f"be a multiple of the key/value heads ({hkv}, {v.shape[-3]})")
        from .. import repeat_interleave
        k, v = repeat_interleave(k, hq // hkv, dim=-3), repeat_interleave(v, hq // hkv, dim=-3)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = T.matmul(q, T.transpose(k, -2, -1)) * scale
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        import numpy as np
        mask = T.from_numpy(np.tril(np.ones((L, S), dtype=bool)))
        scores = T.masked_fill(scores, T.logical_not(mask), float("-inf"))
    if attn_mask is not None:
        scores = T.masked_fill(scores, T.logical_not(attn_mask), float("-inf")) if attn_mask.dtype == _dt.bool \
            else scores + attn_mask
        weights = _masked_softmax(scores)
    else:
        weights = T.softmax(scores, -1)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return T.matmul(weights, v)


# ---------------------------------------------------------------- padding, convolution, pooling
#
# Built from GT's ops (slice, concat, matmul, reductions), so autograd and fusion come with them.
# A float32 convolution on CPU workers is one gt.convolution op, which the worker runs with
# oneDNN (as PyTorch's CPU convolutions), its gradients gt.convolution_backward_input / _weight.
# Elsewhere (GPU workers, other dtypes) a convolution is im2col (every window of the padded input
# as a row of C * prod(kernel) values) and one matrix product with the flattened weight
# (Chellapilla et al. 2006, "High performance convolutional neural networks for document
# processing"); its gradient is the product's two GEMMs and, for the input, col2im.


def _ntuple(value, n, name):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 axes of `input`, as torch.nn.functional.pad: `pad` is
    (left, right) for the last axis, then (left, right) for the one before it, and so on. A
    negative amount crops. Modes: 'constant' (with `value`, default 0), 'reflect' (mirrors
    without repeating the edge; each amount < that axis's size), 'replicate' (repeats the edge),
    'circular' (wraps around; each amount <= the size). Raises ValueError for an odd-length or
    too long `pad`, an unknown mode, or amounts the mode cannot give."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: padding length must be even and at most 2 * input.ndim ({2 * input.ndim}), "
                         f"got {len(pad)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument")
    x = input
    for i in range(len(pad) // 2):
        x = _pad_axis(x, x.ndim - 1 - i, pad[2 * i], pad[2 * i + 1], mode, 0.0 if value is None else value)
    return x


def _pad_axis(x, d, lo, hi, mode, value):
    n = x.shape[d]
    if lo < 0 or hi < 0:  # cropping
        start, keep = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        if keep < 0:
            raise ValueError(f"pad: cropping {-lo}, {-hi} from an axis of size {n}")
        x, n = T.narrow(x, d, start, keep), keep
        lo, hi = max(lo, 0), max(hi, 0)
    if lo == 0 and hi == 0:
        return x
    if mode == "reflect" and (lo >= n or hi >= n):
        raise ValueError(f"pad: reflect padding ({lo}, {hi}) must be smaller than the axis's size {n}")
    if mode == "circular" and (lo > n or hi > n):
        raise ValueError(f"pad: circular padding ({lo}, {hi}) must be at most the axis's size {n}")
    if mode in ("replicate", "reflect", "circular") and n == 0:
        raise ValueError(f"pad: {mode} padding of an empty axis")

    def side(k, at_start):
        if k == 0:
            return None
        if mode == "constant":
            shape = list(x.shape)
            shape[d] = k
            return T.full(shape, value, dtype=x.dtype)
        if mode == "reflect":
            return T.flip(T.narrow(x, d, 1 if at_start else n - 1 - k, k), d)
        if mode == "replicate":
            edge = T.narrow(x, d, 0 if at_start else n - 1, 1)
            shape = list(x.shape)
            shape[d] = k
            return T.expand(edge, *shape)
        return T.narrow(x, d, n - k if at_start else 0, k)  # circular

    return T.cat([p for p in (side(lo, True), x, side(hi, False)) if p is not None], d)


def _windows(x, n, kernel, stride, dilation, out):
    """For (N, C, *spatial) x: one (N, C, *out) strided slice per kernel tap, taps in row-major
    order of the kernel (the order of a (O, C, *kernel) weight's flattened trailing axes)."""
    import itertools
    shape = list(x.shape[:2]) + list(out)
    steps = [1, 1] + list(stride)
    return [T._slice(x, [0, 0] + [o * d for o, d in zip(offs, dilation)], steps, shape)
            for offs in itertools.product(*[range(k) for k in kernel])]


def _out_size(size, k, s, d, p_lo, p_hi, ceil_mode=False):
    span = size + p_lo + p_hi - d * (k - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // s + 1
    o = -(-span // s) + 1
    if (o - 1) * s >= size + p_lo:  # the last window must start inside the input or the left padding
        o -= 1
    return o


def _batched(input, n, name):
    if input.ndim == n + 1:
        return T.unsqueeze(input, 0), True
    if input.ndim != n + 2:
        raise _C.ShapeError(f"{name}: expected {n + 1}-D (unbatched) or {n + 2}-D (batched) input, "
                            f"got input of shape {list(input.shape)}")
    return input, False


def _same_dtypes(input, weight, bias):
    """Raises PyTorch's RuntimeError for a convolution's operands of different float dtypes (a
    float32 batch into a float64 model), rather than an error of the matmul inside."""
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != input.dtype and t.dtype.is_floating_point and input.dtype.is_floating_point:
            raise RuntimeError(f"Input type ({input.dtype}) and {what} type ({t.dtype}) should be the same")


def _conv(input, weight, bias, stride, padding, dilation, groups, n, name):
    _same_dtypes(input, weight, bias)
    x, unbatched = _batched(input, n, name)
    if weight.ndim != n + 2:
        raise _C.ShapeError(f"{name}: expected a {n + 2}-D weight (out_channels, in_channels / groups, *kernel), "
                            f"got shape {list(weight.shape)}")
    N, C = x.shape[:2]
    O, Cg = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if groups < 1 or O % groups:
        raise ValueError(f"{name}: out_channels ({O}) must be divisible by groups ({groups})")
    if C != Cg * groups:
        raise _C.ShapeError(f"{name}: given groups={groups}, weight of shape {list(weight.shape)}, expected input "
                            f"{list(input.shape)} to have {Cg * groups} channels, but got {C} channels instead")
    stride, dilation = _ntuple(stride, n, "stride"), _ntuple(dilation, n, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel, dilation)]
        else:
            raise ValueError(f"{name}: padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
    else:
        pads = [(p, p) for p in _ntuple(padding, n, "padding")]
    size = x.shape[2:]
    out = [_out_size(size[i], kernel[i], stride[i], dilation[i], *pads[i]) for i in range(n)]
    if any(o <= 0 for o in out):
        raise _C.ShapeError(f"{name}: kernel {list(kernel)} (dilation {list(dilation)}) is larger than the padded "
                            f"input {[s + lo + hi for s, (lo, hi) in zip(size, pads)]}")
    # one gt.convolution (oneDNN on the CPU worker) unless a window starts in the padding after
    # the input (a 1x1 kernel with padding: im2col reads those zeros)
    inside = all((out[i] - 1) * stride[i] < size[i] + pads[i][0] for i in range(n))
    if _library_op(x, weight) and inside:
        y = _tensor._op("convolution", x, weight, shape=(N, O, *out), padding=tuple(lo for lo, _ in pads),
                        stride=stride, dilation=dilation, groups=groups)
        if bias is not None:
            y = y + T.reshape(_autocast_bias(bias), O, *([1] * n))
        return T.squeeze(y, 0) if unbatched else y
    K, L = math.prod(kernel), math.prod(out)
    cols = _im2col(x, kernel, out, [lo for lo, _ in pads], stride, dilation)  # (N, *out, C, *kernel)
    rows = T.reshape(cols, N * L, C * K)  # channels outer, taps inner: the weight's own order
    w = T.reshape(weight, O, Cg * K)
    if groups == 1:
        y = linear(rows, w, bias)  # (N*L, O)
    else:
        Og = O // groups
        y = T.cat([linear(T.narrow(rows, 1, g * Cg * K, Cg * K), T.narrow(w, 0, g * Og, Og)) for g in range(groups)], 1)
        if bias is not None:
            y = y + _autocast_bias(bias)
    y = T.permute(T.reshape(y, N, *out, O), 0, n + 1, *range(1, n + 1))  # (N, O, *out)
    return T.squeeze(y, 0) if unbatched else y


def _library_op(*tensors):
    """Whether a convolution or max pool of these tensors goes to the worker's library as one op
    (gt.convolution, gt.max_pool, and their gradients): float32 tensors outside autocast on a
    session of CPU workers (oneDNN). GPU workers, and other dtypes, get im2col and one matrix
    product (cuBLAS there), or the maximum over the taps."""
    return (all(t.dtype == _dt.float32 for t in tensors) and _tensor._autocast_dtype is None
            and _device.session_device_type() == "cpu")


def _im2col(x, kernel, out, padding, stride, dilation):
    """x (N, C, *spatial) -> (N, *out, C, *kernel): window o's tap k along each spatial axis reads
    x at o * stride - padding + k * dilation, zero outside x (the gt.im2col op)."""
    N, C = x.shape[:2]
    return _tensor._op("im2col", x, shape=(N, *out, C, *kernel), padding=tuple(padding), stride=tuple(stride),
               dilation=tuple(dilation))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as PyTorch): input (N, C, L) or (C, L), weight
    (O, C / groups, k), bias (O,) -> (N, O, L_out), L_out = (L + 2 p - d (k - 1) - 1) // s + 1.
    padding: an int, 'valid' or 'same' (stride 1). Raises gt.ShapeError for shapes that do not
    fit, ValueError for bad groups or padding."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as PyTorch): input (N, C, H, W) or (C, H, W), weight
    (O, C / groups, kH, kW), bias (O,) -> (N, O, H_out, W_out), H_out = (H + 2 pH - dH (kH - 1)
    - 1) // sH + 1 and likewise W_out. stride, padding, dilation: an int or a pair; padding also
    'valid' or 'same' (stride 1). Computed as im2col and one matrix product (one per group).
    Raises gt.ShapeError for shapes that do not fit, ValueError for bad groups or padding."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution: input (N, C, D, H, W) or unbatched, weight (O, C / groups, kD, kH, kW);
    as conv2d with one more spatial axis."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _pool_args(n, kernel_size, stride, padding, dilation, name):
    kernel = _ntuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == () or stride == [] else _ntuple(stride, n, "stride")
    padding, dilation = _ntuple(padding, n, "padding"), _ntuple(dilation, n, "dilation")
    if any(k <= 0 for k in kernel) or any(s <= 0 for s in stride) or any(d <= 0 for d in dilation):
        raise ValueError(f"{name}: kernel_size, stride and dilation must be positive, got {kernel}, {stride}, "
                         f"{dilation}")
    if any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{name}: pad should be at most half of the kernel size, got padding {padding} for "
                         f"kernel {kernel}")
    return kernel, stride, padding, dilation


def _pool(x, n, kernel, stride, padding, dilation, ceil_mode, fill, name):
    """x (N, C, *spatial) padded with `fill` as the windows need -> (taps, out, padded x)."""
    out = [_out_size(x.shape[2 + i], kernel[i], stride[i], dilation[i], padding[i], padding[i], ceil_mode)
           for i in range(n)]
    if any(o <= 0 for o in out):
        raise _C.ShapeError(f"{name}: output size {out} is too small for input {list(x.shape)}")
    # the right padding the last window reaches (more than `padding` in ceil mode)
    his = [max(padding[i], (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - x.shape[2 + i] - padding[i])
           for i in range(n)]
    if any(padding) or any(his):
        amounts = []
        for i in reversed(range(n)):
            amounts += [padding[i], his[i]]
        x = pad(x, amounts, value=fill)
    return _windows(x, n, kernel, stride, dilation, out), out, x


class _FirstMax(_ag.Function):
    """amax(x, axes) whose gradient goes to each window's first maximum (row-major over `axes`),
    as PyTorch's max pools (amax shares a tie's gradient among the tied elements). The first
    maximum is found with elementwise ops and one min-reduction: the smallest window position
    among the elements equal to the maximum."""

    @staticmethod
    def forward(ctx, x, axes):
        y = T.amax(x, axes)
        ctx.save_for_backward(x, y)
        ctx.axes = axes
        return y

    @staticmethod
    def backward(ctx, g):
        import numpy as np
        x, y = ctx.saved_tensors
        axes = ctx.axes
        sizes = [x.shape[a] if a in axes else 1 for a in range(x.ndim)]
        window = math.prod(x.shape[a] for a in axes)
        pos = T.from_numpy(np.arange(window, dtype=np.int32).reshape(sizes))  # row-major position in the window
        kept = [1 if a in axes else x.shape[a] for a in range(x.ndim)]
        yk, gk = T.reshape(y, *kept), T.reshape(g, *kept)
        first = T.amin(T.where(x == yk, pos, window), axes, keepdim=True)
        return T.where(pos == first, gk, 0.0), None


def _max_pool(input, n, kernel_size, stride, padding, dilation, ceil_mode, return_indices, name):
    x, unbatched = _batched(input, n, name)
    kernel, stride, padding, dilation = _pool_args(n, kernel_size, stride, padding, dilation, name)
    spatial = x.shape[2:]
    simple = (kernel == stride and not any(padding) and all(d == 1 for d in dilation)
              and all(s % k == 0 for s, k in zip(spatial, kernel)))
    if simple and not return_indices:  # non-overlapping windows: one reshape and one reduction
        split = list(x.shape[:2])
        for s, k in zip(spatial, kernel):
            split += [s // k, k]
        y = _FirstMax.apply(T.reshape(x, *split), tuple(range(3, 3 + 2 * n, 2)))
        return T.squeeze(y, 0) if unbatched else y
    if not return_indices and all(d == 1 for d in dilation) and _library_op(x):  # oneDNN on the worker
        out = [_out_size(spatial[i], kernel[i], stride[i], 1, padding[i], padding[i], ceil_mode) for i in range(n)]
        if any(o <= 0 for o in out):
            raise _C.ShapeError(f"{name}: output size {out} is too small for input {list(x.shape)}")
        y = _tensor._op("max_pool", x, shape=(*x.shape[:2], *out), kernel=kernel, padding=padding, stride=stride,
                        backward=functools.partial(_max_pool_backward, name))
        return T.squeeze(y, 0) if unbatched else y
    lowest = float("-inf") if x.dtype.is_floating_point else T.iinfo(x.dtype).min
    taps, out, _ = _pool(x, n, kernel, stride, padding, dilation, ceil_mode, lowest, name)
    stacked = T.stack(taps, dim=-1)
    y = _FirstMax.apply(stacked, (stacked.ndim - 1,))
    if return_indices:
        indices = _flat_indices(T.argmax(stacked, -1), spatial, kernel, stride, padding, dilation, out)
        if unbatched:
            y, indices = T.squeeze(y, 0), T.squeeze(indices, 0)
        return y, indices
    return T.squeeze(y, 0) if unbatched else y


def _max_pool_backward(name, g, result, inputs, attrs):
    """gt.max_pool's gradient: gt.max_pool_backward (each window's gradient to its first maximum,
    as PyTorch). It has no gradient of its own: under create_graph it raises."""
    if _ag.is_grad_enabled():
        raise NotImplementedError(f"{name}: second derivatives (create_graph=True) through a max pool on CPU workers "
                                  f"are not supported")
    (x,) = inputs
    return (_tensor._op("max_pool_backward", g, x, shape=x.shape, kernel=attrs["kernel"], padding=attrs["padding"],
                        stride=attrs["stride"]),)


def _flat_indices(tap, spatial, kernel, stride, padding, dilation, out):
    """The row-major index into the unpadded spatial plane of each window's chosen tap."""
    import numpy as np
    n = len(spatial)
    flat = None
    rest = tap
    for i in reversed(range(n)):  # the tap index is row-major over the kernel: last axis fastest
        k_i = T.remainder(rest, kernel[i]) if i else rest
        rest = T.floor_divide(rest, kernel[i])
        shape = [1] * (2 + n)
        shape[2 + i] = out[i]
        start = T.from_numpy((np.arange(out[i], dtype=np.int64) * stride[i] - padding[i]).reshape(shape))
        coord = start + k_i * dilation[i]
        scale = math.prod(spatial[i + 1:])
        flat = coord * scale if flat is None else flat + coord * scale
    return flat


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding windows of (N, C, L) or (C, L) input, as torch.nn.functional.max_pool1d
    (stride defaults to kernel_size; padding counts as -inf; return_indices gives each maximum's
    index along L). The gradient: see max_pool2d."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding kH x kW windows of (N, C, H, W) or (C, H, W) input -> (N, C, H_out,
    W_out), H_out = (H + 2 pH - dH (kH - 1) - 1) // sH + 1 (rounded up with ceil_mode), as
    torch.nn.functional.max_pool2d: stride defaults to kernel_size, padding (at most half the
    kernel) counts as -inf, return_indices also gives each maximum's flat index into H * W.

    The gradient goes to each window's first maximum, as in PyTorch. On CPU workers a float32
    pool with overlapping or padded windows (dilation 1, no indices) is one gt.max_pool op
    (oneDNN), which has no second derivative (create_graph raises NotImplementedError);
    otherwise the pool is the maximum over the window's taps."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool2d")


def _avg_pool(input, n, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, name):
    import numpy as np
    x, unbatched = _batched(input, n, name)
    kernel, stride, padding, dilation = _pool_args(n, kernel_size, stride, padding, 1, name)
    if not x.dtype.is_floating_point:
        raise _C.DTypeError(f"{name} needs a floating-point input, got {x.dtype}")
    spatial = x.shape[2:]
    if all(p == 0 for p in padding) and tuple(stride) == tuple(kernel) and not ceil_mode:
        # Windows that tile the input (global pooling, avg_pool2d(x, 2)): a reshape and one
        # reduction, where the taps below would be one op per kernel position (1024 of them
        # for a 32x32 global pool, forward and backward).
        out = [spatial[i] // kernel[i] for i in range(n)]
        if any(o == 0 for o in out):
            raise _C.ShapeError(f"{name}: kernel {list(kernel)} is larger than the input {list(spatial)}")
        if any(out[i] * kernel[i] != spatial[i] for i in range(n)):
            x = x[(slice(None), slice(None)) + tuple(slice(0, out[i] * kernel[i]) for i in range(n))]
        shape = [x.shape[0], x.shape[1]]
        for i in range(n):
            shape += [out[i], kernel[i]]
        windows = T.reshape(x, *shape)
        axes = tuple(3 + 2 * i for i in range(n))
        y = T.sum(windows, axes) / divisor_override if divisor_override else T.mean(windows, axes)
        return T.squeeze(y, 0) if unbatched else y
    taps, out, _ = _pool(x, n, kernel, stride, padding, dilation, ceil_mode, 0.0, name)
    total = taps[0]
    for t in taps[1:]:
        total = total + t
    if divisor_override:
        return T.squeeze(total / divisor_override, 0) if unbatched else total / divisor_override
    # PyTorch's divisor per window: its size clipped to the padded input (count_include_pad) or
    # to the input itself; computed from the shapes alone, on the client.
    div = np.ones((), dtype=np.float64)
    for i in range(n):
        start = np.arange(out[i]) * stride[i] - padding[i]
        end = np.minimum(start + kernel[i], spatial[i] + padding[i])
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, spatial[i])
        div = np.multiply.outer(div, (end - start).astype(np.float64))
    if np.all(div == div.flat[0]):
        y = total / float(div.flat[0])
    else:
        y = total / T.from_numpy(div.astype(_dt.numpy_dtype(x.dtype)))
    return T.squeeze(y, 0) if unbatched else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of (N, C, L) or (C, L) input, as torch.nn.functional.avg_pool1d."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding kH x kW windows of (N, C, H, W) or (C, H, W) input, as
    torch.nn.functional.avg_pool2d (stride defaults to kernel_size; zero padding counted in the
    divisor unless count_include_pad=False; windows that ceil_mode adds are divided by the part
    of them inside the padded input)."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "avg_pool2d")


def _adaptive_bounds(size, out):
    """PyTorch's adaptive pooling windows: [floor(i size / out), ceil((i + 1) size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_pool(input, n, output_size, reduce, name, last_axis_first=False, return_indices=False):
    """Adaptive pooling of the last n axes by `reduce(t, axis)`. With return_indices (a max
    pool), also each maximum's position in its flattened input plane (int64), as PyTorch's."""
    x, unbatched = _batched(input, n, name)
    sizes = _ntuple(output_size, n, "output_size") if not isinstance(output_size, (tuple, list)) or \
        None not in output_size else tuple(x.shape[2 + i] if o is None else int(o) for i, o in enumerate(output_size))
    if any(o <= 0 for o in sizes):
        raise ValueError(f"{name}: output_size must be positive, got {sizes}")
    pos = None  # with return_indices: where each value of x came from in its input plane
    if return_indices:
        plane = x.shape[2:]
        pos = T.expand(T.reshape(T.arange(math.prod(plane)), 1, 1, *plane), *x.shape)

        def pooled(t, p, d):  # the max along d, and the position its first maximum came from
            m = T.max(t, d)
            return m.values, T.squeeze(T.gather(p, d, T.unsqueeze(m.indices, d)), d)
    # One axis at a time: both the mean and the max over a box are separable. A max goes from the
    # last axis to the first, each keeping its first maximum, so that a tied window's gradient
    # reaches its first maximum in row-major order, as PyTorch's.
    for i in (reversed(range(n)) if last_axis_first else range(n)):
        d, size, o = 2 + i, x.shape[2 + i], sizes[i]
        if size == o:
            continue
        if size % o == 0:
            shape = list(x.shape)
            shape[d:d + 1] = [o, size // o]
            if pos is None:
                x = reduce(T.reshape(x, *shape), d + 1)
            else:
                x, pos = pooled(T.reshape(x, *shape), T.reshape(pos, *shape), d + 1)
        elif pos is None:
            x = T.stack([reduce(T.narrow(x, d, a, b - a), d) for a, b in _adaptive_bounds(size, o)], d)
        else:
            parts = [pooled(T.narrow(x, d, a, b - a), T.narrow(pos, d, a, b - a), d) for a, b in _adaptive_bounds(size, o)]
            x, pos = T.stack([v for v, _ in parts], d), T.stack([p for _, p in parts], d)
    if pos is not None:
        return (T.squeeze(x, 0), T.squeeze(pos, 0)) if unbatched else (x, pos)
    return T.squeeze(x, 0) if unbatched else x


def adaptive_avg_pool1d(input, output_size):
    """Mean over output_size windows covering (N, C, L): window i is [floor(i L / out),
    ceil((i + 1) L / out)), as torch.nn.functional.adaptive_avg_pool1d."""
    return _adaptive_pool(input, 1, output_size, lambda t, d: T.mean(t, d), "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Mean over windows giving an (N, C, *output_size) result from (N, C, H, W) or (C, H, W)
    input; window i of an axis is [floor(i H / out), ceil((i + 1) H / out)); an output size of
    None keeps that axis. As torch.nn.functional.adaptive_avg_pool2d."""
    return _adaptive_pool(input, 2, output_size, lambda t, d: T.mean(t, d), "adaptive_avg_pool2d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over the windows of adaptive_avg_pool2d; with return_indices also (values,
    indices): each maximum's position h * W + w in its input plane (int64; the first maximum in
    row-major order, as PyTorch's), which max_unpool2d takes."""
    return _adaptive_pool(input, 2, output_size, _first_max, "adaptive_max_pool2d", last_axis_first=True,
                          return_indices=return_indices)


def _first_max(t, d):
    """The maximum along axis d, its gradient to the first maximum (amax would share it)."""
    return T.max(t, d).values


# ---------------------------------------------------------------- normalization over channels


def _channel_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _channel_affine(y, weight, bias):
    """y * weight + bias with weight and bias (C,) applied per channel (axis 1)."""
    shape = _channel_shape(y)
    if weight is not None:
        y = y * T.reshape(weight, *shape)
    if bias is not None:
        y = y + T.reshape(bias, *shape)
    return y


@_keeps_input_dtype
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalization (Ioffe & Szegedy 2015) of (N, C, *) input over every axis but C:
    (x - mean) / sqrt(var + eps) * weight + bias. Training (or no running stats) uses the
    batch's mean and biased variance and, when running_mean/running_var are given, updates them
    in place: running = (1 - momentum) running + momentum batch, with the unbiased variance, as
    PyTorch. Otherwise the running statistics normalize. Raises ValueError when training on one
    value per channel."""
    if input.ndim < 2:
        raise _C.ShapeError(f"batch_norm: expected input with at least 2 axes (N, C, *), got {list(input.shape)}")
    axes = (0,) + tuple(range(2, input.ndim))
    shape = _channel_shape(input)
    if training or running_mean is None:
        count = input.numel() // input.shape[1]
        if training and count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{input.shape}")
        y, mean, var = _Standardize.apply(input, axes, eps, True)  # (long reductions: the corrected mean)
        if training and running_mean is not None:
            with _ag.no_grad():
                m = T.reshape(mean.detach(), -1)
                v = T.reshape(var.detach(), -1) * (count / max(count - 1, 1))
                running_mean.mul_(1.0 - momentum).add_(m * momentum)
                running_var.mul_(1.0 - momentum).add_(v * momentum)
    else:
        y = (input - T.reshape(running_mean, *shape)) * T.rsqrt(T.reshape(running_var, *shape) + eps)
    return _channel_affine(y, weight, bias)


@_keeps_input_dtype
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalizes each (sample, channel) plane of (N, C, *) input over its spatial axes (Ulyanov
    et al. 2016), then weight and bias (C,) per channel. With use_input_stats (training) each
    plane's own mean and biased variance normalize it and, when running_mean/running_var (C,)
    are given, update them in place as PyTorch's: running = (1 - momentum) running + momentum
    times the mean over the batch of the planes' means (unbiased variances). Without it the
    running statistics normalize."""
    axes = tuple(range(2, input.ndim))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        shape = _channel_shape(input)
        y = (input - T.reshape(running_mean, *shape)) * T.rsqrt(T.reshape(running_var, *shape) + eps)
        return _channel_affine(y, weight, bias)
    if math.prod(input.shape[2:]) == 1:  # (one element: its own mean; normalizing gives zeros)
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    y, mean, var = _Standardize.apply(input, axes, eps)
    if running_mean is not None and running_var is not None:
        count = math.prod(input.shape[2:])
        with _ag.no_grad():
            n, c = input.shape[:2]
            m = T.mean(T.reshape(mean.detach(), n, c), 0)
            v = T.mean(T.reshape(var.detach(), n, c), 0) * (count / max(count - 1, 1))
            running_mean.mul_(1.0 - momentum).add_(m * momentum)
            running_var.mul_(1.0 - momentum).add_(v * momentum)
    return _channel_affine(y, weight, bias)


@_keeps_input_dtype
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization (Wu & He 2018) of (N, C, *) input: the channels split into num_groups
    groups, each sample's group normalized over its channels and spatial axes (biased
    variance), then weight (C,) and bias (C,) per channel. Raises ValueError when C is not
    divisible by num_groups."""
    if input.ndim < 2:
        raise _C.ShapeError(f"group_norm: expected input with at least 2 axes (N, C, *), got {list(input.shape)}")
    N, C = input.shape[:2]
    if num_groups <= 0 or C % num_groups:
        raise ValueError(f"group_norm: num_channels ({C}) must be divisible by num_groups ({num_groups})")
    g = T.reshape(_widened(input), N, num_groups, -1)
    mean = T.mean(g, -1, keepdim=True)
    d = g - mean
    y = T.reshape(d * T.rsqrt(T.mean(d * d, -1, keepdim=True) + eps), *input.shape)
    return _narrowed(_channel_affine(y, weight, bias), input)


@_takes_inplace
def dropout2d(input, p=0.5, training=True):
    """Zeroes whole channels of (N, C, H, W) input with probability p, scaling the rest by
    1 / (1 - p) (Tompson et al. 2015), as torch.nn.functional.dropout2d. As PyTorch, other
    ranks keep one draw per (N, C) entry, with a warning: 3-D input is taken as (N, C, L)
    (channel-wise 1-D dropout), and 2-D (N, C) input is dropped element by element. Raises
    RuntimeError for fewer than 2 axes."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=3)
    elif input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=3)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _dropout(input, p, training, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


# ---------------------------------------------------------------- resampling


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resizes the spatial axes of (N, C, *spatial) input (1 to 3 of them), as
    torch.nn.functional.interpolate: to `size`, or by `scale_factor` (the output size is
    floor(input size * factor)). Modes: 'nearest' (source index floor(dst * in / out)),
    'nearest-exact' (floor((dst + 0.5) * in / out)), 'linear' / 'bilinear' / 'trilinear'
    (separable linear interpolation, one axis at a time; align_corners as PyTorch, source
    coordinate (dst + 0.5) * in / out - 0.5 clamped at 0 without it), 'bicubic' (4-D input;
    Keys' cubic convolution, A = -0.75, its 4 taps clamped to the edge, as PyTorch's) and
    'area' (adaptive_avg_pool). antialias=True (bilinear or bicubic) filters as PyTorch's and
    Pillow's resampling: a triangle or cubic (A = -0.5) filter stretched by the downscaling
    factor, its weights normalized per output pixel. Each axis is index_selects with
    client-computed indices and weights (antialias: a product with a client-computed weight
    matrix), so the gradient comes with them. Raises ValueError for a bad mode, both or neither
    of size and scale_factor, or the wrong rank."""
    import numpy as np
    n = input.ndim - 2
    if n < 1 or n > 3:
        raise ValueError(f"interpolate: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got {input.ndim}-D")
    linear_modes = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
    if mode not in ("nearest", "nearest-exact", "area") and mode not in linear_modes:
        raise ValueError(f"interpolate: mode {mode!r} is not supported (nearest, nearest-exact, linear, bilinear, "
                         f"bicubic, trilinear, area)")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as "
                         "input")
    if mode in linear_modes and linear_modes[mode] != n:
        raise ValueError(f"interpolate: mode {mode!r} expects {linear_modes[mode] + 2}-D input, got {input.ndim}-D")
    if mode not in linear_modes and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    spatial = input.shape[2:]
    if size is not None:
        out = _ntuple(size, n, "size")
        scales = [s / o for s, o in zip(spatial, out)]
    else:
        factors = [float(f) for f in (scale_factor if isinstance(scale_factor, (tuple, list)) else [scale_factor] * n)]
        out = tuple(int(math.floor(s * f)) for s, f in zip(spatial, factors))
        scales = [1.0 / f if not recompute_scale_factor else s / o for f, s, o in zip(factors, spatial, out)]
    if mode == "area":
        return _adaptive_pool(input, n, out, lambda t, d: T.mean(t, d), "interpolate")
    x = input
    for i in range(n):
        axis, size_in, size_out, scale = 2 + i, spatial[i], out[i], scales[i]
        if size_in == size_out and mode in ("nearest", "nearest-exact"):
            continue
        if align_corners:
            scale = (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
        if antialias:
            x = _resample_axis(x, axis, _antialias_weights(size_in, size_out, scale, align_corners, mode))
            continue
        if mode == "bicubic":
            x = _bicubic_axis(x, axis, size_in, size_out, scale, align_corners)
            continue
        dst = np.arange(size_out, dtype=np.float64)
        if mode == "nearest":
            src = np.minimum(np.floor(dst * scale).astype(np.int64), size_in - 1)
            x = T.index_select(x, axis, T.tensor(src))
            continue
        if mode == "nearest-exact":
            src = np.minimum(np.floor((dst + 0.5) * scale).astype(np.int64), size_in - 1)
            x = T.index_select(x, axis, T.tensor(src))
            continue
        if align_corners:
            pos = dst * ((size_in - 1) / (size_out - 1)) if size_out > 1 else np.zeros_like(dst)
        else:
            pos = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
        lo = np.minimum(np.floor(pos).astype(np.int64), size_in - 1)
        hi = np.minimum(lo + 1, size_in - 1)
        w = (pos - lo).astype(_dt.numpy_dtype(x.dtype))
        shape = [1] * x.ndim
        shape[axis] = size_out
        w = T.tensor(w.reshape(shape))
        x = T.index_select(x, axis, T.tensor(lo)) * (1.0 - w) + T.index_select(x, axis, T.tensor(hi)) * w
    return x


def _bicubic_axis(x, axis, size_in, size_out, scale, align_corners):
    """Bicubic interpolation along one axis (PyTorch's upsample_bicubic2d, separably): source
    coordinate dst * scale with align_corners, else (dst + 0.5) * scale - 0.5 (not clamped),
    taps floor - 1 .. floor + 2 clamped to the axis, Keys' weights (A = -0.75)."""
    import numpy as np
    dst = np.arange(size_out, dtype=np.float64)
    pos = dst * scale if align_corners else (dst + 0.5) * scale - 0.5
    start = np.floor(pos)
    weights = _cubic_weights(pos - start)
    shape = [1] * x.ndim
    shape[axis] = size_out
    out = None
    for k in range(4):
        idx = np.clip(start.astype(np.int64) + (k - 1), 0, size_in - 1)
        w = T.tensor(weights[k].astype(_dt.numpy_dtype(x.dtype)).reshape(shape))
        v = T.index_select(x, axis, T.tensor(idx)) * w
        out = v if out is None else out + v
    return out


@functools.lru_cache(maxsize=64)  # (a transform resizes every sample between the same sizes)
def _antialias_weights(size_in, size_out, scale, align_corners, mode):
    """The (size_out, size_in) resampling matrix of PyTorch's antialiased interpolation (as
    Pillow's: a triangle filter for bilinear, cubic with A = -0.5 for bicubic, its support
    stretched by the downscaling factor, each row's weights normalized to sum 1)."""
    import numpy as np
    taps = 2 if mode == "bilinear" else 4

    def filt(d):
        d = np.abs(d)
        if mode == "bilinear":
            return np.maximum(1.0 - d, 0.0)
        a = -0.5
        return np.where(d < 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                        np.where(d < 2, (((d - 5) * d + 8) * d - 4) * a, 0.0))
    support = taps / 2 * scale if scale >= 1.0 else taps / 2
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    m = np.zeros((size_out, size_in))
    for i in range(size_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), size_in)
        w = filt((np.arange(lo, hi) - center + 0.5) * inv)
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0 else w
    m.flags.writeable = False  # (shared by the cache)
    return m


def _resample_axis(x, axis, m):
    """x with axis `axis` replaced by m (out, in) @ it: a product with a constant matrix, in
    x's dtype whatever autocast says (PyTorch's resampling is not on an autocast list)."""
    import numpy as np
    moved = T.transpose(x, axis, -1)
    y = _tensor._op("matmul", moved, T.tensor(np.ascontiguousarray(m.T).astype(_dt.numpy_dtype(x.dtype))))
    return T.transpose(y, axis, -1)


upsample = interpolate


# ---------------------------------------------------------------- more activations


@_takes_inplace
def elu(x, alpha=1.0):
    """x where x > 0, else alpha (exp(x) - 1) (Clevert et al. 2016); at 0 the gradient is the
    negative side's, alpha (as PyTorch's)."""
    return T.where(x > 0, x, alpha * (T.exp(_nonpositive(x)) - 1.0))


def _nonpositive(x):
    """min(x, 0), with all of the gradient at 0 (minimum would split it with the 0)."""
    return T.where(x > 0, 0.0, x)


@_takes_inplace
def selu(x):
    """scale * elu(x, alpha) with Klambauer et al. 2017's constants."""
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)


@_takes_inplace
def celu(x, alpha=1.0):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)); gradient 1 at 0 (as PyTorch's)."""
    return T.where(x > 0, x, alpha * (T.exp(_nonpositive(x) / alpha) - 1.0))


@_takes_inplace
def mish(x):
    """x tanh(softplus(x)) (Misra 2019)."""
    return x * T.tanh(softplus(x))


@_takes_inplace
def hardtanh(x, min_val=-1.0, max_val=1.0):
    return T.clamp(x, min_val, max_val)


@_takes_inplace
def relu6(x):
    return T.clamp(x, 0.0, 6.0)


@_takes_inplace
def hardsigmoid(x):
    """relu6(x + 3) / 6."""
    return T.clamp(x + 3.0, 0.0, 6.0) / 6.0


@_takes_inplace
def hardswish(x):
    """x relu6(x + 3) / 6 (Howard et al. 2019)."""
    return x * hardsigmoid(x)


def logsigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), computed stably (gradient sigmoid(-x))."""
    return -softplus(-x, 1.0, math.inf)


def softsign(x):
    return x / (1.0 + T.abs(x))


def prelu(x, weight):
    """x where x > 0, else weight * x; weight has one value or one per channel (axis 1)."""
    w = weight if weight.numel() == 1 or x.ndim < 2 else T.reshape(weight, weight.shape[0], *(1,) * (x.ndim - 2))
    return T.where(x > 0, x, w * x)


# ---------------------------------------------------------------- transposed convolution


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n, name):
    _same_dtypes(input, weight, bias)
    x, unbatched = _batched(input, n, name)
    if weight.ndim != n + 2:
        raise _C.ShapeError(f"{name}: expected a {n + 2}-D weight (in_channels, out_channels / groups, *kernel), "
                            f"got shape {list(weight.shape)}")
    C, Og = weight.shape[:2]
    if groups < 1 or C % groups:
        raise ValueError(f"{name}: in_channels ({C}) must be divisible by groups ({groups})")
    if x.shape[1] != C:
        raise _C.ShapeError(f"{name}: weight of shape {list(weight.shape)} expects {C} input channels, "
                            f"got input of shape {list(input.shape)}")
    kernel = tuple(weight.shape[2:])
    stride, padding = _ntuple(stride, n, "stride"), _ntuple(padding, n, "padding")
    output_padding, dilation = _ntuple(output_padding, n, "output_padding"), _ntuple(dilation, n, "dilation")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= max(s, d):
            raise ValueError(f"{name}: output padding must be smaller than either stride or dilation, got "
                             f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    # The adjoint of a convolution (stride, padding, dilation) from C_out to C_in channels whose
    # weight is this one: each input pixel's C_in values times the weight give its window's
    # C_out x prod(kernel) values (one matrix product per group), which col2im adds into the
    # output where that convolution would have read them (PyTorch's CPU algorithm).
    size = x.shape[2:]
    out = [(size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1
           for i in range(n)]
    if any(o <= 0 for o in out):
        raise _C.ShapeError(f"{name}: output size {out} is too small for input {list(input.shape)}")
    spans = [dilation[i] * (kernel[i] - 1) + 1 for i in range(n)]
    if _library_op(x, weight) and all(output_padding[i] < padding[i] + stride[i] and
                                               spans[i] + output_padding[i] > padding[i] for i in range(n)):
        # The input gradient of that convolution, which maps (N, C_out, *out) to these (N, C_in,
        # *size) windows (its shape rule holds under the condition above): one op, oneDNN's.
        y = _tensor._op("convolution_backward_input", x, weight, shape=(x.shape[0], groups * Og, *out),
                        padding=padding, stride=stride, dilation=dilation, groups=groups)
        if bias is not None:
            y = y + T.reshape(_autocast_bias(bias), groups * Og, *([1] * n))
        return T.squeeze(y, 0) if unbatched else y
    N, K, L = x.shape[0], math.prod(kernel), math.prod(size)
    rows = T.reshape(T.permute(x, 0, *range(2, n + 2), 1), N * L, C)  # (N*L, C_in)
    w = T.reshape(weight, C, Og * K)  # (C_in, C_out/groups * K)
    Cg = C // groups
    if groups == 1:
        cols = T.matmul(rows, w)
    else:
        cols = T.cat([T.matmul(T.narrow(rows, 1, g * Cg, Cg), T.narrow(w, 0, g * Cg, Cg)) for g in range(groups)], 1)
    windows = T.reshape(cols, N, *size, groups * Og, *kernel)
    y = _tensor._op("col2im", windows, shape=(N, groups * Og, *out), padding=padding, stride=stride,
                    dilation=dilation)
    if bias is not None:
        y = y + T.reshape(_autocast_bias(bias), groups * Og, *([1] * n))
    return T.squeeze(y, 0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution (the gradient of conv1d with respect to its input): input
    (N, C_in, L) or (C_in, L), weight (C_in, C_out / groups, k), bias (C_out,) -> (N, C_out,
    L_out), L_out = (L - 1) s - 2 p + d (k - 1) + output_padding + 1, as
    torch.nn.functional.conv_transpose1d. Computed as a convolution of the stride-spread input."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution ("deconvolution"): input (N, C_in, H, W) or unbatched, weight
    (C_in, C_out / groups, kH, kW) -> (N, C_out, H_out, W_out), H_out = (H - 1) sH - 2 pH +
    dH (kH - 1) + output_padding + 1 and likewise W_out, as torch.nn.functional.conv_transpose2d.
    Raises gt.ShapeError for shapes that do not fit, ValueError for bad groups or output_padding."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution: as conv_transpose2d with one more spatial axis."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d")


# ---------------------------------------------------------------- more layers scripts use


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r) (Shi et al. 2016, sub-pixel convolution)."""
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise _C.ShapeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    k = len(lead)
    x = T.reshape(input, *lead, c // (r * r), r, r, h, w)
    x = T.permute(x, *range(k), k, k + 3, k + 1, k + 4, k + 2)
    return T.reshape(x, *lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    *lead, c, hr, wr = input.shape
    if hr % r or wr % r:
        raise _C.ShapeError(f"pixel_unshuffle expects height and width divisible by {r}, got {hr} x {wr}")
    k = len(lead)
    x = T.reshape(input, *lead, c, hr // r, r, wr // r, r)
    x = T.permute(x, *range(k), k, k + 2, k + 4, k + 1, k + 3)
    return T.reshape(x, *lead, c * r * r, hr // r, wr // r)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim (input cast to dtype first, when given)."""
    if dim is None:
        from .modules import _implicit_softmax_dim
        dim = _implicit_softmax_dim("softmin", input.ndim)
    return T.softmax(-(input if dtype is None else T.cast(input, dtype)), dim)


@_takes_inplace
def threshold(input, threshold, value):
    """input where input > threshold, else value."""
    return T.where(input > threshold, input, value)


def glu(input, dim=-1):
    """a * sigmoid(b) for the halves a, b of input along dim (Dauphin et al. 2017)."""
    if input.shape[dim] % 2:
        raise _C.ShapeError(f"glu: halving dimension must be even, but dimension {dim} is size {input.shape[dim]}")
    a, b = T.chunk(input, 2, dim)
    return a * T.sigmoid(b)


def hardshrink(input, lambd=0.5):
    """input where |input| > lambd, else 0."""
    return T.where(T.abs(input) > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """input - lambd above lambd, input + lambd below -lambd, else 0."""
    return T.where(input > lambd, input - lambd, T.where(input < -lambd, input + lambd, 0.0))


def tanhshrink(input):
    """input - tanh(input)."""
    return input - T.tanh(input)


def pdist(input, p=2):
    """The p-norm distances between the rows of input (N, M), each pair i < j once in row-major
    order: (N (N - 1) / 2,), as torch.nn.functional.pdist (the gradient at a zero distance is 0)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    rows, cols = np.triu_indices(n, 1)
    if not len(rows):
        return T.zeros((0,), dtype=input.dtype)
    diff = T.index_select(input, 0, T.tensor(rows)) - T.index_select(input, 0, T.tensor(cols))
    return T.norm(diff, p, 1)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last axis, as torch.nn.functional.pairwise_distance."""
    d = T.abs(x1 - x2 + eps)
    if p == 2.0:
        return T.sqrt(T.sum(d * d, -1, keepdim=keepdim))
    return T.sum(d ** p, -1, keepdim=keepdim) ** (1.0 / p)


@_takes_inplace
def dropout1d(input, p=0.5, training=True):
    """Zeroes whole channels of (N, C, L) or (C, L) input, as torch.nn.functional.dropout1d.
    Raises RuntimeError for other ranks."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout(input, p, training, tuple(input.shape[:-1]) + (1,))


@_takes_inplace
def dropout3d(input, p=0.5, training=True):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    return _dropout(input, p, training, tuple(input.shape[:-3]) + (1, 1, 1))


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding kD x kH x kW windows of (N, C, D, H, W) input: as max_pool2d."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool3d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of (N, C, D, H, W) input: as avg_pool2d."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "avg_pool3d")


def adaptive_avg_pool3d(input, output_size):
    """adaptive_avg_pool2d with one more spatial axis."""
    return _adaptive_pool(input, 3, output_size, lambda t, d: T.mean(t, d), "adaptive_avg_pool3d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """adaptive_max_pool2d with one more spatial axis (indices: d * H * W + h * W + w)."""
    return _adaptive_pool(input, 3, output_size, _first_max, "adaptive_max_pool3d", last_axis_first=True,
                          return_indices=return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maximum over the windows of adaptive_avg_pool1d; with return_indices also (values,
    indices): each maximum's position in its row (int64; the first maximum, as PyTorch's)."""
    return _adaptive_pool(input, 1, output_size, _first_max, "adaptive_max_pool1d", return_indices=return_indices)


# ---------------------------------------------------------------- more losses


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, -target (input1 - input2) + margin), target 1 or -1."""
    return _reduce(T.clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1."""
    return _reduce(T.where(target == 1, input, 0.0) + T.where(target == -1, T.clamp(margin - input, min=0.0), 0.0),
                   reduction)


def soft_margin_loss(input, target, reduction="mean"):
    """log(1 + exp(-target input)) (target 1 or -1), computed as softplus."""
    return _reduce(softplus(-target * input), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1 (cos over
    the last axis, eps 1e-8 in the norms' product as PyTorch's kernel)."""
    cos = T.sum(input1 * input2, -1) / T.sqrt((T.sum(input1 * input1, -1) + 1e-12) * (T.sum(input2 * input2, -1) + 1e-12))
    return _reduce(T.where(target == 1, 1.0 - cos, T.clamp(cos - margin, min=0.0)), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """-mean over classes of target log sigmoid(input) + (1 - target) log sigmoid(-input) (times
    weight), per sample; then the reduction over samples."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(T.mean(loss, -1), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0), d = pairwise_distance; with swap
    the negative's distance is the smaller of d(a, n) and d(p, n) (Balntas et al. 2016)."""
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = T.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(T.clamp(d_pos - d_neg + margin, min=0.0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target input (log_input), else input - target log(input + eps); full adds
    Stirling's term target log target - target + 0.5 log(2 pi target) where target > 1."""
    loss = T.exp(input) - target * input if log_input else input - target * T.log(input + eps)
    if full:
        t = T.clamp(target, min=1.0)
        stirling = t * T.log(t) - t + 0.5 * T.log(2 * math.pi * t)
        loss = loss + T.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full);
    var has input's shape, or one fewer trailing axis, or a trailing axis of 1."""
    if var.ndim == input.ndim - 1:
        var = T.unsqueeze(var, -1)
    v = T.clamp(var, min=eps)
    loss = 0.5 * (T.log(v) + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- patches, sampling grids


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding kH x kW patches of (N, C, H, W) input as columns: (N, C kH kW, L), L the number
    of patch positions, channel-major rows (c, kh, kw) as torch.nn.functional.unfold (im2col)."""
    x, unbatched = _batched(input, 2, "unfold")
    kernel, dilation = _ntuple(kernel_size, 2, "kernel_size"), _ntuple(dilation, 2, "dilation")
    padding, stride = _ntuple(padding, 2, "padding"), _ntuple(stride, 2, "stride")
    size = x.shape[2:]
    out = [_out_size(size[i], kernel[i], stride[i], dilation[i], padding[i], padding[i]) for i in range(2)]
    if any(o <= 0 for o in out):
        raise _C.ShapeError(f"unfold: kernel {list(kernel)} is larger than the padded input "
                            f"{[size[i] + 2 * padding[i] for i in range(2)]}")
    N, C = x.shape[:2]
    cols = _im2col(x, kernel, out, padding, stride, dilation)  # (N, oH, oW, C, kH, kW)
    y = T.transpose(T.reshape(cols, N, out[0] * out[1], C * kernel[0] * kernel[1]), 1, 2)
    return T.squeeze(y, 0) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of unfold: columns (N, C kH kW, L) summed back into (N, C, H, W)
    (overlapping patches add up), as torch.nn.functional.fold."""
    cols, unbatched = (T.unsqueeze(input, 0), True) if input.ndim == 2 else (input, False)
    kernel, dilation = _ntuple(kernel_size, 2, "kernel_size"), _ntuple(dilation, 2, "dilation")
    padding, stride = _ntuple(padding, 2, "padding"), _ntuple(stride, 2, "stride")
    size = _ntuple(output_size, 2, "output_size")
    padded = [size[i] + 2 * padding[i] for i in range(2)]
    out = [_out_size(padded[i], kernel[i], stride[i], dilation[i], 0, 0) for i in range(2)]
    N, CK, L = cols.shape
    K = kernel[0] * kernel[1]
    if CK % K or L != out[0] * out[1]:
        raise _C.ShapeError(f"fold: expected input of shape (N, C * {K}, {out[0] * out[1]}), got {list(input.shape)}")
    C = CK // K
    windows = T.reshape(T.transpose(cols, 1, 2), N, out[0], out[1], C, kernel[0], kernel[1])
    y = _tensor._op("col2im", windows, shape=(N, C, size[0], size[1]), padding=padding, stride=stride,
                    dilation=dilation)
    return T.squeeze(y, 0) if unbatched else y


def affine_grid(theta, size, align_corners=False):
    """Sampling coordinates for grid_sample (Jaderberg et al. 2015, spatial transformers), as
    torch.nn.functional.affine_grid: theta maps each output point's normalized coordinates
    (x, y, 1) or (x, y, z, 1) to input coordinates. 2-D: theta (N, 2, 3), size (N, C, H, W) ->
    grid (N, H, W, 2); 3-D: theta (N, 3, 4), size (N, C, D, H, W) -> grid (N, D, H, W, 3).
    Raises ValueError for another size or a theta of the wrong shape."""
    import numpy as np
    size = tuple(size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    d = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (d, d + 1):
        raise ValueError(f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {list(size)}. "
                         f"Got {list(theta.shape)}.")
    N, spatial = size[0], size[2:]
    nd = np.float64 if theta.dtype == _dt.float64 else np.float32

    def axis(n):
        """PyTorch's linspace(-1, 1, n) in theta's dtype (the first half from -1, the second from
        1, so the points are symmetric to the last bit: a nearest-mode resample's halfway ties
        fall as PyTorch's), times (n - 1) / n without align_corners."""
        if n == 1:
            return np.zeros(1, nd)
        i = np.arange(n)
        step = nd(2.0) / nd(n - 1)
        v = np.where(i < n // 2, nd(-1.0) + step * i.astype(nd), nd(1.0) - step * (n - 1 - i).astype(nd)).astype(nd)
        return v if align_corners else (v * nd(n - 1) / nd(n)).astype(nd)

    points = list(np.meshgrid(*(axis(n) for n in spatial), indexing="ij"))  # (D,) H, W: one per spatial dim
    base = np.stack(points[::-1] + [np.ones_like(points[0])], -1).reshape(1, -1, d + 1)  # (x, y, (z,) 1)
    b = T.tensor(base.astype(_dt.numpy_dtype(theta.dtype)))
    grid = T.matmul(b, T.transpose(theta, 1, 2))  # (N, points, d)
    return T.reshape(grid, N, *spatial, d)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """input sampled at grid, as torch.nn.functional.grid_sample: 2-D input (N, C, H, W) at grid
    (N, Ho, Wo, 2) (x, y in [-1, 1]) -> (N, C, Ho, Wo); 3-D input (N, C, D, H, W) at grid
    (N, Do, Ho, Wo, 3) (x, y, z) -> (N, C, Do, Ho, Wo). mode 'bilinear' (trilinear in 3-D),
    'nearest' or, in 2-D, 'bicubic' (Keys' cubic convolution with A = -0.75, as PyTorch's),
    padding_mode 'zeros', 'border' or 'reflection' (coordinates mirrored at the edge pixels'
    centres with align_corners, else at the image's edges, as PyTorch's GridSampler.h).
    Gradients reach both input (through the gathers) and grid (through the interpolation weights
    and the coordinates' reflections). Raises ValueError for another mode or padding_mode and
    RuntimeError for input and grid that do not match or bicubic in 3-D."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    d = input.ndim - 2
    if grid.shape[-1] != d or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {d} in last dimension and the input's batch "
                           f"size, but got grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and d == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    N, C, sizes = input.shape[0], input.shape[1], tuple(input.shape[2:])  # ((D,) H, W)
    out_sizes = tuple(grid.shape[1:-1])
    M = math.prod(out_sizes)
    strides = [math.prod(sizes[k + 1:]) for k in range(d)]

    def unnormalize(g, n):
        return (g + 1) * 0.5 * (n - 1) if align_corners else ((g + 1) * n - 1) * 0.5

    def reflect(c, twice_low, twice_high):
        """c mirrored into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates)."""
        if twice_low == twice_high:
            return c * 0.0
        low, span = twice_low / 2, (twice_high - twice_low) / 2
        c = T.abs(c - low)  # (>= 0: remainder is C's fmod here)
        extra, flips = T.remainder(c, span), T.floor(c / span)
        return T.where(T.remainder(flips, 2.0) == 0, extra + low, span - extra + low)

    def source(c, n):
        """A coordinate in pixels after padding_mode (PyTorch's compute_coordinates), a NaN, an
        infinite or a huge one made -100 (outside: 0), as PyTorch's safe_downgrade_to_int_range."""
        if padding_mode == "reflection":
            c = reflect(c, 0, 2 * (n - 1)) if align_corners else reflect(c, -1, 2 * n - 1)
        if padding_mode != "zeros":  # PyTorch's clip_coordinates: NaN goes to n - 1, and the gradient
            c = T.where(c < n - 1, c, float(n - 1))  # is 0 at both edges
            c = T.where(c > 0, c, 0.0)
        return T.where(T.abs(c) < 2147483646.0, c, -100.0)  # (False for NaN too)

    flat = T.reshape(input, N, C, math.prod(sizes))

    def tap(point):
        """input at integer coordinates `point` (float tensors, one per spatial dim in input's
        order), 0 outside."""
        inside, idx = None, None
        for c, n, stride in zip(point, sizes, strides):
            ok = T.logical_and(c >= 0, c <= n - 1)
            inside = ok if inside is None else T.logical_and(inside, ok)
            part = T.clamp(c, 0, n - 1) * stride
            idx = part if idx is None else idx + part
        idx = T.expand(T.reshape(T.cast(idx, _dt.int64), N, 1, M), N, C, M)
        v = T.reshape(T.gather(flat, 2, idx), N, C, *out_sizes)
        return T.where(T.unsqueeze(inside, 1), v, 0.0)

    point = [unnormalize(grid[..., d - 1 - k], sizes[k]) for k in range(d)]  # grid's last axis is (x, y, (z))
    if mode == "bicubic":  # 4 x 4 taps around floor(x, y), each put through padding_mode itself
        y, x = point
        H, W = sizes
        x0, y0 = T.floor(x), T.floor(y)
        wx, wy = _cubic_weights(T.unsqueeze(x - x0, 1)), _cubic_weights(T.unsqueeze(y - y0, 1))
        out = None
        for i in range(4):
            row = None
            for j in range(4):
                v = wx[j] * tap([T.floor(source(y0 + (i - 1), H)), T.floor(source(x0 + (j - 1), W))])
                row = v if row is None else row + v
            out = wy[i] * row if out is None else out + wy[i] * row
        return out
    point = [source(c, n) for c, n in zip(point, sizes)]
    if mode == "nearest":
        from .._shaping import round as _round
        point = [_round(c) for c in point]
        out = tap(point)
        if grid.requires_grad and _ag.is_grad_enabled():  # grid gets a zero gradient (PyTorch's), not none
            out = out + T.unsqueeze(T.where(T.zeros((), dtype=_dt.bool), point[0], 0.0), 1)
        return out
    low = [T.floor(c) for c in point]
    frac = [T.unsqueeze(c - c0, 1) for c, c0 in zip(point, low)]
    out = None
    for corner in itertools.product((0, 1), repeat=d):  # the 2^d neighbours, weighted by their opposite volumes
        weight = None
        for bit, f in zip(corner, frac):
            w = f if bit else 1 - f
            weight = w if weight is None else weight * w
        v = weight * tap([c0 + bit for c0, bit in zip(low, corner)])
        out = v if out is None else out + v
    return out


def _cubic_weights(t, A=-0.75):
    """The four weights of Keys' cubic convolution (1981) for taps at -1, 0, 1, 2 around a
    point t in [0, 1) past the second, A = -0.75 as PyTorch's upsample_get_cubic_coefficients."""
    def near(d):  # |d| <= 1
        return ((A + 2) * d - (A + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def bilinear(input1, input2, weight, bias=None):
    """y_k = input1 weight_k input2^T + bias_k: input1 (*, in1), input2 (*, in2), weight
    (out, in1, in2) -> (*, out), as torch.nn.functional.bilinear."""
    out, in1, in2 = weight.shape
    left = T.matmul(input1, T.reshape(T.transpose(weight, 0, 1), in1, out * in2))  # (*, out in2)
    y = T.sum(T.reshape(left, *input1.shape[:-1], out, in2) * T.unsqueeze(_autocast_bias(input2), -2), -1)
    return y + _autocast_bias(bias) if bias is not None else y


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau) along dim (Jang et al. 2017); hard=True gives the
    one-hot of its argmax in the forward pass and the soft sample's gradient (straight-through)."""
    u = T.rand(logits.shape, dtype=logits.dtype)
    gumbels = -T.log(-T.log(u + eps) + eps)
    y = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y
    d = dim % y.ndim
    hot = T.cast(_onehot_like(T.argmax(y, d, keepdim=True), y, d), y.dtype)
    return hot - y.detach() + y


def _onehot_like(index, like, d):
    """True where the position along axis d equals index (broadcast over the other axes)."""
    shape = [1] * like.ndim
    shape[d] = like.shape[d]
    positions = T.reshape(T.arange(like.shape[d]), *shape)
    return T.eq(positions, index)


# ---------------------------------------------------------------- more layers (2)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), as torch.nn.functional.lp_pool1d (no padding)."""
    k = _ntuple(kernel_size, 1, "kernel_size")[0]
    s = avg_pool1d(T.pow(input, norm_type), k, stride, 0, ceil_mode)
    return T.pow(T.sign(s) * relu(T.abs(s)) * k, 1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each kH x kW window of x^p)^(1/p), as torch.nn.functional.lp_pool2d."""
    kh, kw = _ntuple(kernel_size, 2, "kernel_size")
    s = avg_pool2d(T.pow(input, norm_type), (kh, kw), stride, 0, ceil_mode)
    return T.pow(T.sign(s) * relu(T.abs(s)) * (kh * kw), 1.0 / norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each kD x kH x kW window of x^p)^(1/p), as torch.nn.functional.lp_pool3d."""
    kd, kh, kw = _ntuple(kernel_size, 3, "kernel_size")
    s = avg_pool3d(T.pow(input, norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return T.pow(T.sign(s) * relu(T.abs(s)) * (kd * kh * kw), 1.0 / norm_type)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta (Krizhevsky et al.
    2012), as torch.nn.functional.local_response_norm: (N, C, *) input, the window centred,
    zeros past the first and last channel."""
    sq = input * input
    C = input.shape[1]
    padded = pad(T.unsqueeze(sq, 1), [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2])  # (N, 1, C + size - 1, *)
    total = T.narrow(padded, 2, 0, C)
    for i in range(1, size):
        total = total + T.narrow(padded, 2, i, C)
    return input / T.pow(T.squeeze(total, 1) * (alpha / size) + k, beta)


def channel_shuffle(input, groups):
    """(N, C, *) with its channels regrouped: (groups, C / groups) transposed (Zhang et al. 2018,
    ShuffleNet)."""
    N, C = input.shape[:2]
    if C % groups:
        raise ValueError(f"channel_shuffle: {C} channels are not divisible by groups={groups}")
    rest = input.shape[2:]
    x = T.reshape(input, N, groups, C // groups, *rest)
    return T.reshape(T.transpose(x, 1, 2), N, C, *rest)


@_takes_inplace
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """Leaky ReLU with a slope drawn uniformly from [lower, upper] per element in training, the
    mean slope (lower + upper) / 2 otherwise (Xu et al. 2015)."""
    if training:
        slope = T.rand(input.shape, dtype=input.dtype) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2
    return T.where(input > 0, input, input * slope)  # (the slope's side at 0, as PyTorch)


@_takes_inplace
def alpha_dropout(input, p=0.5, training=False):
    """Dropout that keeps SELU's self-normalization (Klambauer et al. 2017): dropped values are
    set to SELU's negative saturation, then an affine map restores mean and variance."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    alpha_p = -1.7580993408473766  # -SELU's scale * alpha
    keep = T.rand(input.shape, dtype=input.dtype) >= p
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    return T.where(keep, input, alpha_p) * a + b


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i])^p / C per sample (input (N, C),
    target (N,) class indices), as torch.nn.functional.multi_margin_loss."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    N, C = input.shape
    hot = T.cast(T.one_hot(target, C), input.dtype)
    x_y = T.sum(input * hot, 1, keepdim=True)
    m = T.clamp(margin - x_y + input, min=0.0) * (1 - hot)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * T.unsqueeze(T.sum(weight * hot, 1), 1)
    return _reduce(T.sum(m, 1) / C, reduction)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows, as torch.nn.functional.embedding_bag:
    input (B, L) (B bags of L indices) or 1-D with `offsets` (bag b is input[offsets[b] :
    offsets[b + 1]], read on the client); per_sample_weights scale the rows (mode 'sum')."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights is only supported for mode='sum'")
    rows = embedding(input, weight, padding_idx)
    if per_sample_weights is not None:
        rows = rows * T.unsqueeze(per_sample_weights, -1)
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets has to be None if input is 2D")
        return {"sum": lambda r: T.sum(r, 1), "mean": lambda r: T.mean(r, 1), "max": lambda r: T.amax(r, 1)}[mode](rows)
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
    import numpy as np
    starts = [int(v) for v in (offsets.numpy() if isinstance(offsets, _tensor.Tensor) else np.asarray(offsets))]
    n = input.shape[0]
    ends = starts[1:] + [n] if not include_last_offset else starts[1:]
    if include_last_offset:
        starts = starts[:-1]
    if mode == "max":
        bags = [T.amax(T.narrow(rows, 0, s, e - s), 0) if e > s else T.zeros(weight.shape[1], dtype=weight.dtype)
                for s, e in zip(starts, ends)]
        return T.stack(bags, 0)
    bag_of = np.zeros(n, dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts, ends)):
        bag_of[s:e] = b
    from .._composites import index_add
    total = index_add(T.zeros((len(starts), weight.shape[1]), dtype=weight.dtype), 0, T.tensor(bag_of), rows)
    if mode == "sum":
        return total
    counts = np.maximum(np.array([e - s for s, e in zip(starts, ends)], dtype=np.float64), 1.0)
    return total / T.tensor(counts.reshape(-1, 1).astype(_dt.numpy_dtype(weight.dtype)))


# ---------------------------------------------------------------- max_unpool, ctc_loss

def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n, name):
    """The inverse of max_pool{n}d(return_indices=True): each value goes to the place its index
    names in its (N, C) plane (flat over the spatial axes, as the pool returns them), zeros
    elsewhere. Output spatial size (in - 1) * stride - 2 * padding + kernel_size, or output_size."""
    kernel = _ntuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None else _ntuple(stride, n, "stride")
    padding = _ntuple(padding, n, "padding")
    if input.ndim not in (n + 1, n + 2):
        raise ValueError(f"{name}: expected {n + 1}D or {n + 2}D input, got {input.ndim}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{name}: expected indices of the input's shape {list(input.shape)}, got {list(indices.shape)}")
    unbatched = input.ndim == n + 1
    if unbatched:
        input, indices = T.unsqueeze(input, 0), T.unsqueeze(indices, 0)
    spatial = input.shape[2:]
    default = [(spatial[i] - 1) * stride[i] - 2 * padding[i] + kernel[i] for i in range(n)]
    size = default if output_size is None else [int(s) for s in list(output_size)[-n:]]
    if any(not d - s < s2 < d + s for d, s, s2 in zip(default, stride, size)):
        raise ValueError(f"{name}: invalid output_size {size} (the default is {default}; it may differ by less "
                         f"than the stride {list(stride)})")
    N, C = input.shape[0], input.shape[1]
    flat = T.zeros((N, C, math.prod(size)), dtype=input.dtype)
    from .. import scatter
    out = scatter(flat, 2, T.reshape(indices, (N, C, -1)), T.reshape(input, (N, C, -1)))
    out = T.reshape(out, (N, C, *size))
    return T.squeeze(out, 0) if unbatched else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """(N, C, L_in) values and indices from max_pool1d(return_indices=True) -> (N, C, L_out)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """(N, C, H_in, W_in) values and indices from max_pool2d(return_indices=True) -> (N, C, H_out, W_out)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """(N, C, D, H, W) values and indices from max_pool3d(return_indices=True) -> (N, C, D_out, H_out, W_out)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss (Graves et al. 2006, "Connectionist Temporal
    Classification", eqs. 5-8), as torch.nn.functional.ctc_loss.

    log_probs: (T, N, C) log-probabilities over C classes (log_softmax's output), or (T, C)
    unbatched; targets: (N, S) padded class indices, or 1-D, the targets concatenated;
    input_lengths, target_lengths: (N,) ints (tensors, lists or tuples). Returns
    -log p(target | input) per element for reduction="none", its sum for "sum", and for "mean"
    the mean over the batch of each loss divided by its target length. A target no alignment
    fits (too long for its input) has an infinite loss, 0 with zero_infinity (and no gradient).

    The forward variables alpha over the extended target (a blank around every label) are
    computed with GT's ops, one step per time step in log space, so autograd differentiates
    them; impossible paths hold -1e30 instead of -inf so that no gradient is NaN. The lengths
    and targets are read on the client (a wait, as PyTorch's CPU kernel reads them). Raises
    ValueError for lengths out of range or a blank label in a target."""
    if log_probs.dtype in (_dt.float16, _dt.bfloat16):  # computed in float32 (half's range lacks -1e30), as autocast would
        return ctc_loss(T.cast(log_probs, _dt.float32), targets, input_lengths, target_lengths, blank, reduction,
                        zero_infinity).to(log_probs.dtype)

    def ints(v, what):
        a = v.numpy() if isinstance(v, _tensor.Tensor) else np.asarray(v)
        return [int(x) for x in np.asarray(a).reshape(-1)], a
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"ctc_loss: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = T.unsqueeze(log_probs, 1)
    if log_probs.ndim != 3:
        raise ValueError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {list(log_probs.shape)}")
    Tmax, N, C = log_probs.shape
    in_lens, _ = ints(input_lengths, "input_lengths")
    tg_lens, _ = ints(target_lengths, "target_lengths")
    tg = targets.numpy() if isinstance(targets, _tensor.Tensor) else np.asarray(targets)
    if unbatched and tg.ndim == 1 and len(tg_lens) == 1 and tg.shape[0] == tg_lens[0]:
        tg = tg.reshape(1, -1)
    if len(in_lens) != N or len(tg_lens) != N:
        raise ValueError(f"ctc_loss: expected {N} input and target lengths, got {len(in_lens)} and {len(tg_lens)}")
    if any(not 0 <= t <= Tmax for t in in_lens):
        raise ValueError(f"ctc_loss: input_lengths must be in [0, {Tmax}], got {in_lens}")
    if tg.ndim == 2:
        rows = [tg[i, :tg_lens[i]] for i in range(N)]
        if any(length > tg.shape[1] for length in tg_lens):
            raise ValueError(f"ctc_loss: a target length exceeds the targets' {tg.shape[1]} columns: {tg_lens}")
    else:
        if sum(tg_lens) > tg.shape[0]:
            raise ValueError(f"ctc_loss: target_lengths sum to {sum(tg_lens)}, but targets hold {tg.shape[0]}")
        starts = np.cumsum([0] + tg_lens)
        rows = [tg[starts[i]:starts[i + 1]] for i in range(N)]
    for r in rows:
        if len(r) and (r.min() < 0 or r.max() >= C or (r == blank).any()):
            raise ValueError(f"ctc_loss: target labels must be in [0, {C}) and not the blank ({blank}), got {r.tolist()}")
    S = 2 * max(tg_lens, default=0) + 1
    ext = np.full((N, S), blank, dtype=np.int64)  # blank, l1, blank, l2, ..., blank
    skip = np.zeros((N, S), dtype=bool)  # alpha(s - 2) may lead to s: a label unlike the one two back
    for i, r in enumerate(rows):
        ext[i, 1:2 * len(r):2] = r
        for s in range(3, 2 * len(r), 2):
            skip[i, s] = ext[i, s] != ext[i, s - 2]
    dt = log_probs.dtype
    NEG = -1e30
    neg_col = T.full((N, 1), NEG, dtype=dt)
    neg_cols = T.full((N, 2), NEG, dtype=dt)
    # e[t, n, s] = log_probs[t, n, ext[n, s]]
    index = T.tensor(np.broadcast_to(ext, (Tmax, N, S)).copy())
    emit = T.gather(log_probs, 2, index)
    start = np.full((N, S), NEG)
    start[:, 0] = 0.0
    start[np.array(tg_lens) > 0, 1] = 0.0
    if Tmax == 0:  # no input at all: nothing can be emitted
        loss = T.full((N,), 0.0 if zero_infinity else float("inf"), dtype=dt)
        return loss if reduction == "none" else T.sum(loss) if reduction == "sum" else T.mean(loss)
    alpha = T.tensor(start.astype(_dt.numpy_dtype(dt))) + emit[0]
    skip_t, lens = T.tensor(skip), np.array(in_lens)
    for t in range(1, Tmax):
        one = T.cat([neg_col, T.narrow(alpha, 1, 0, S - 1)], 1)
        two = T.where(skip_t, T.cat([neg_cols, T.narrow(alpha, 1, 0, S - 2)], 1) if S > 2 else alpha * 0 + NEG, NEG)
        new = T.logsumexp(T.stack([alpha, one, two], 0), 0) + emit[t]
        if (lens > t).all():
            alpha = new
        else:  # an element whose input has ended keeps its alpha at its last step
            alpha = T.where(T.tensor((lens > t).reshape(N, 1)), new, alpha)
    # -log p = -logsumexp(alpha(S_n - 1), alpha(S_n - 2)) at each element's last step
    last = np.array([2 * n for n in tg_lens], dtype=np.int64).reshape(N, 1)
    before = np.maximum(last - 1, 0)
    ends = T.cat([T.gather(alpha, 1, T.tensor(last)), T.gather(alpha, 1, T.tensor(before))], 1)
    ends = T.where(T.tensor(np.concatenate([np.ones((N, 1), bool), (last > 0)], 1)), ends, NEG)
    loss = -T.logsumexp(ends, 1)
    empty_input = T.tensor(np.array(in_lens) == 0)
    impossible = T.logical_or(loss > 1e29, empty_input)  # no alignment reached the end
    loss = T.where(impossible, 0.0 if zero_infinity else float("inf"), loss)
    if reduction == "none":
        return T.squeeze(loss, 0) if unbatched else loss
    if reduction == "sum":
        return T.sum(loss)
    per_label = T.tensor(np.maximum(np.array(tg_lens), 1).astype(_dt.numpy_dtype(dt)))
    return T.mean(loss / per_label)


# PyTorch's deprecated size_average= / reduce= of every loss (torch.nn._reduction.legacy_get_string):
# both default to True; reduce=False gives 'none', size_average=False 'sum', else 'mean'.
def _legacy_reduction(size_average, reduce):
    import warnings
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  UserWarning, stacklevel=4)
    return reduction


def _takes_legacy_reduction(fn):
    @functools.wraps(fn)
    def call(*args, size_average=None, reduce=None, **kwargs):
        if size_average is not None or reduce is not None:
            kwargs["reduction"] = _legacy_reduction(size_average, reduce)
        return fn(*args, **kwargs)
    return call


for _name, _fn in list(globals().items()):
    if not _name.startswith("_") and inspect.isfunction(_fn) and "reduction" in inspect.signature(_fn).parameters \
            and "size_average" not in inspect.signature(_fn).parameters:
        globals()[_name] = _takes_legacy_reduction(_fn)
del _name, _fn


def _in_place_form(fn):
    @functools.wraps(fn)
    def in_place(input, *args, **kwargs):
        return fn(input, *args, inplace=True, **kwargs)
    in_place.__name__ = in_place.__qualname__ = fn.__name__ + "_"
    in_place.__doc__ = f"{fn.__name__}(input, ..., inplace=True): see {fn.__name__}."
    return in_place


# PyTorch's in-place functional forms: F.relu_(x) is F.relu(x, inplace=True).
for _name in ("relu", "elu", "leaky_relu", "hardtanh", "threshold", "celu", "selu", "rrelu"):
    if _name in globals():
        globals()[_name + "_"] = _in_place_form(globals()[_name])
del _name


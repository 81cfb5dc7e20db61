"""gt.nn.functional: stateless layers and losses, with torch.nn.functional's names and rules.

Shapes use PyTorch's letters: N batch, C classes, D features, (*) any extra axes.
"""
import math

from .. import _C, _runtime
from .. import autograd as _ag
from .. import _functions as T
from .. import dtypes as _dt

relu = T.relu
sigmoid = T.sigmoid
tanh = T.tanh
silu = T.silu
gelu = T.gelu
softmax = T.softmax
log_softmax = T.log_softmax
one_hot = T.one_hot


def linear(x, weight, bias=None):
    """x (*, in) @ weight.T (in, out) + bias (out,) -> (*, out).

    The backward gives weight's gradient as one matrix product over every row of x, in weight's
    own (out, in) layout: g (N, out)^T @ x (N, in), N the product of x's leading axes (as
    PyTorch's linear). Through matmul's own formula it would be mT of x^T @ g: for a 3-D x a
    batch of small products summed afterwards, and a transposed result that every later reader
    (the optimizer's fused update) reads across rows."""
    with _ag.no_grad():
        y = T.matmul(x, weight.T)
    if _ag.is_grad_enabled() and y.dtype.is_floating_point and (x.requires_grad or weight.requires_grad):
        y.requires_grad = True
        y._node = _ag.Node(_linear_backward, (x, weight), None, _runtime.current_signal())
    return y + bias if bias is not None else y


def _linear_backward(g, y, inputs, attrs):
    x, weight = inputs
    gx = T.matmul(g, weight) if x.requires_grad else None  # (*, out) @ (out, in)
    gw = None
    if weight.requires_grad:
        rows_g = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        rows_x = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
        gw = T.matmul(rows_g.mT, rows_x)  # the .mT is free on a CPU worker: a transposed GEMM operand
    return gx, gw


def embedding(input, weight, padding_idx=None):
    """Rows of `weight` (V, D) for integer `input` (*) -> (*, D). With padding_idx, that row
    gets no gradient (as PyTorch)."""
    out = T.embedding(input, weight)
    if padding_idx is not None:
        keep = T.unsqueeze(T.ne(input if isinstance(input, T.Tensor) else T.tensor(input), padding_idx), -1)
        out = T.where(keep, out, out.detach())
    return out


def leaky_relu(x, negative_slope=0.01):
    return T.where(x > 0, x, x * negative_slope)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) axes
    (biased variance, Ba et al. 2016)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if x.shape[x.ndim - len(normalized_shape):] != normalized_shape:
        raise _C.ShapeError(f"layer_norm: normalized_shape {list(normalized_shape)} does not match the "
                              f"last axes of input of shape {list(x.shape)}")
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mu = T.mean(x, axes, keepdim=True)
    d = x - mu
    var = T.mean(d * d, axes, keepdim=True)
    y = d * T.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def dropout(x, p=0.5, training=True):
    """Zeroes each element with probability p and scales the rest by 1/(1-p) (Srivastava et al.
    2014); the identity when not training or p == 0."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = T.rand(x.shape, dtype=x.dtype) >= p
    return T.where(keep, x * (1.0 / (1.0 - p)), 0.0)


def _reduce(x, reduction, weight_sum=None):
    if reduction == "mean":
        return T.mean(x) if weight_sum is None else T.sum(x) / weight_sum
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
    logp = T.log_softmax(input, dim=1 if input.ndim > 1 else 0)
    return _nll(logp, target, weight, ignore_index, reduction, label_smoothing)


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
    return _reduce(loss, reduction)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p over dim, eps), as torch.nn.functional.normalize."""
    norm = T.sum(T.abs(input) ** p, dim, keepdim=True) ** (1.0 / p) if p != 2.0 else \
        T.sqrt(T.sum(input * input, dim, keepdim=True))
    return input / T.clamp(norm, min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 x2) / max(||x1|| ||x2||, eps) over dim."""
    n = T.sqrt(T.sum(x1 * x1, dim)) * T.sqrt(T.sum(x2 * x2, dim))
    return T.sum(x1 * x2, dim) / T.clamp(n, min=eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2 over the trailing normalized_shape axes) + eps) * weight (Zhang &
    Sennrich 2019); eps defaults to float32's machine epsilon, as PyTorch."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if tuple(input.shape[input.ndim - len(normalized_shape):]) != tuple(normalized_shape):
        raise _C.ShapeError(f"rms_norm: normalized_shape {list(normalized_shape)} does not match the trailing "
                            f"axes of input shape {list(input.shape)}")
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    eps = 1.1920928955078125e-07 if eps is None else eps
    y = input * T.rsqrt(T.mean(input * input, axes, keepdim=True) + eps)
    return y * weight if weight is not None else y


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p = input; logs clamped at -100 as PyTorch."""
    logp = T.clamp(T.log(input), min=-100.0)
    log1mp = T.clamp(T.log(1.0 - input), min=-100.0)
    loss = -(target * logp + (1.0 - target) * log1mp)
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


def softplus(x, beta=1.0):
    return (T.log1p(T.exp(-T.abs(x * beta))) + T.relu(x * beta)) / beta


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v for (..., L, E) queries and (..., S, E) keys/values
    (Vaswani et al. 2017); is_causal masks keys after each query."""
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
    return T.matmul(T.softmax(scores, -1), v)
